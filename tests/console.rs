//! The web console in a real browser: headless Chromium, driven through chromedriver, loads the
//! console served against live nodes on a real ZooKeeper, reads the sharding map, disables an item
//! and sees both the map and the nodes react. Any console error of the page fails the test.
//! Screenshots of the main pages go to `target/console-screenshots/` (and, with
//! `SHARDCRON_UPDATE_SCREENSHOTS=1`, to `examples/console/screenshots/`, which README shows).
//!
//! Beside it, the console's guards without a browser: the token, forged writes, and the CLI's
//! refusal to listen off loopback without a token.

#[macro_use]
extern crate support;

use support::console::{start_console, with_history};
use support::events::recorded_history;
use support::example_bin::run_ctl_blocking;
use support::wait::{next_matching, wait_until_woken};
use support::Peer;

use support::browser;
use support::cluster;
use support::example_bin;
use support::zk;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use browser::Browser;
use chrono::Utc;
use cluster::{every_second, instance, Recorder};
use serde_json::{json, Value};
use shardcron::config::JobConfig;
use shardcron::console::{Console, ConsoleOptions};
use shardcron::events::EventBus;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::Connector;
use shardcron::secret::Secret;
use shardcron::{InstanceId, JobSpec, JobType, NodeOptions, ShardItem};

const WITHIN: Duration = Duration::from_secs(30);

/// A node running `jobs`, recording into `rec` and publishing on `bus` (which the history follows).
async fn start_node(
    conn: &Arc<dyn Connector>,
    id: InstanceId,
    jobs: &[JobConfig],
    rec: &Recorder,
    bus: &EventBus,
) -> NodeHandle {
    let mut b = NodeBuilder::new(conn.clone())
        .instance_id(id)
        .clock(rec.clock())
        .event_bus(bus.clone())
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        });
    for config in jobs {
        b = b.job_spec(JobSpec {
            config: std::sync::Arc::new(config.clone()),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::from_millis(40)),
        });
    }
    b.start().await.expect("node starts")
}

/// Where screenshots go: always under target/, and into the README's folder when asked.
fn screenshot_paths(name: &str) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("target/console-screenshots").join(name)];
    if std::env::var("SHARDCRON_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        paths.push(root.join("examples/console/screenshots").join(name));
    }
    paths
}

async fn screenshot(browser: &Browser, name: &str) {
    for path in screenshot_paths(name) {
        browser.screenshot(&path).await;
    }
}

/// Fails on any SEVERE console entry except those `expected` (substrings) allows.
async fn assert_no_console_errors(browser: &Browser, step: &str, expected: &[&str]) {
    let severe: Vec<String> = browser
        .severe_logs()
        .await
        .into_iter()
        .filter(|m| !expected.iter().any(|e| m.contains(e)))
        .collect();
    assert!(
        severe.is_empty(),
        "console errors after {step}: {severe:#?}"
    );
}

/// The map as the page shows it: (item, owner, status) per row, once every item has an owner.
const MAP: &str = r#"(() => {
  const rows = [...document.querySelectorAll('#sharding-map tbody tr')];
  if (rows.length !== 3 || rows.some((r) => !r.dataset.owner)) return null;
  return rows.map((r) => [Number(r.dataset.item), r.dataset.owner, r.dataset.status]);
})()"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_the_live_sharding_map_and_disabling_an_item_stops_it_on_the_node() {
    require!(Peer::ZooKeeper);
    require!(Peer::Chromium);
    let (dir, ns) = support::prelude("console", "map");
    let conn = zk::connector(&ns);
    let (db, _history, bus, recording) = recorded_history(dir.path()).await;
    let rec = Recorder::real_time();
    let orders = every_second("orders", 3).description("orders of the day");
    let reports = JobConfig::new("reports", 2)
        .cron("0/5 * * * * ?")
        .time_zone("GMT");
    let jobs = [orders, reports];
    let nodes = vec![
        start_node(&conn, instance(1), &jobs, &rec, &bus).await,
        start_node(&conn, instance(2), &jobs, &rec, &bus).await,
    ];
    let (console, base) = start_console(conn.clone(), with_history(&ns, &db)).await;
    let browser = Browser::start().await;

    tracing::info!("--- the jobs page lists both jobs with their next fires");
    rec.wait_until("every item of orders ran", WITHIN, |log| {
        cluster::complete_fires(log, 3).len() >= 2
    })
    .await;
    browser.goto(&format!("{base}/#/")).await;
    browser
        .wait_for(
            "both jobs listed, orders with a last outcome",
            "document.querySelector('tr[data-job=reports]') && \
             document.querySelector('tr[data-job=orders] .badge.success')",
        )
        .await;
    let next_fires = browser
        .eval(
            "return document.querySelector('tr[data-job=reports] td:nth-child(4)').innerText",
            json!([]),
        )
        .await;
    assert_eq!(
        next_fires.as_str().unwrap_or("").lines().count(),
        3,
        "three next fires of reports: {next_fires}"
    );
    screenshot(&browser, "jobs.png").await;
    assert_no_console_errors(&browser, "the jobs page", &[]).await;

    tracing::info!("--- the job page's sharding map is the registry's");
    browser.goto(&format!("{base}/#/job/orders")).await;
    let map = browser
        .wait_for("every item of orders has an owner", MAP)
        .await;
    let shown: Vec<(u32, String)> = map
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_u64().unwrap() as u32,
                r[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut registry: Vec<(u32, String)> = cluster::assignment(&nodes[0], "orders")
        .into_iter()
        .flat_map(|(owner, items)| items.into_iter().map(move |i| (i, owner.clone())))
        .collect();
    registry.sort();
    assert_eq!(shown, registry, "the map shows the registry's owners");
    let owners: std::collections::BTreeSet<&String> = shown.iter().map(|(_, o)| o).collect();
    assert_eq!(owners.len(), 2, "both instances own items: {shown:?}");
    screenshot(&browser, "job.png").await;

    tracing::info!("--- disabling item 1 from the page: the map and the node react");
    browser
        .click("button[data-action=disable-item][data-item='1']")
        .await;
    browser
        .wait_for(
            "item 1 shown disabled, its owner skipping it",
            "document.querySelector('#sharding-map tr[data-item=\"1\"]').dataset.status === 'DISABLED' && \
             document.querySelector('#sharding-map td[data-item=\"1\"][data-role=skips]')",
        )
        .await;
    // The page shows the registry, so the node has been told; a run already started may finish.
    let disabled_at = Utc::now().timestamp() + 1;
    let log = rec
        .wait_until(
            "three fires of items 0 and 2 after item 1 was disabled",
            WITHIN,
            |log| {
                let fires: std::collections::BTreeSet<i64> = log
                    .iter()
                    .filter(|e| e.job == "orders" && e.item == ShardItem(2))
                    .map(|e| e.at.timestamp())
                    .filter(|t| *t > disabled_at)
                    .collect();
                fires.len() >= 3
            },
        )
        .await;
    let late: Vec<_> = log
        .iter()
        .filter(|e| e.job == "orders" && e.item == ShardItem(1) && e.at.timestamp() > disabled_at)
        .collect();
    assert!(
        late.is_empty(),
        "item 1 ran after it was disabled: {late:#?}"
    );
    screenshot(&browser, "job-item-disabled.png").await;

    tracing::info!("--- enabling it again from the page");
    browser
        .click("button[data-action=enable-item][data-item='1']")
        .await;
    browser
        .wait_for(
            "item 1 enabled again",
            "document.querySelector('#sharding-map tr[data-item=\"1\"]').dataset.status !== 'DISABLED'",
        )
        .await;
    assert_no_console_errors(&browser, "the job page", &[]).await;

    tracing::info!(
        "--- the audit tab shows both switches, done by the anonymous loopback operator"
    );
    browser.goto(&format!("{base}/#/audit")).await;
    let who = browser
        .wait_for(
            "the disable and enable rows of orders",
            "document.querySelector('#audit tr[data-operation=disable][data-job=orders]') && \
             document.querySelector('#audit tr[data-operation=enable][data-job=orders]') && \
             document.querySelector('#audit tr[data-operation=disable] td:nth-child(2)').innerText",
        )
        .await;
    assert_eq!(who, json!("anonymous (operator)"));
    screenshot(&browser, "audit.png").await;
    browser.goto(&format!("{base}/#/job/orders")).await;
    browser
        .wait_for("every item of orders has an owner again", MAP)
        .await;

    tracing::info!("--- an invalid config is refused naming the field; the stored one is kept");
    browser
        .wait_for(
            "the config editor",
            "document.getElementById('config-yaml')",
        )
        .await;
    browser
        .eval(
            "const t = document.getElementById('config-yaml');
             t.value = t.value.replace(/shardingTotalCount: \\d+/, 'shardingTotalCount: 0');
             t.dispatchEvent(new Event('input'));",
            json!([]),
        )
        .await;
    browser.click("button[data-action=save-config]").await;
    let refusal = browser
        .wait_for(
            "the refusal naming shardingTotalCount",
            "document.querySelector('#flash.error') && document.getElementById('flash').innerText",
        )
        .await;
    assert!(
        refusal
            .as_str()
            .unwrap_or("")
            .contains("shardingTotalCount"),
        "{refusal}"
    );
    let stored = console_get(&base, "/api/jobs/orders").await;
    assert_eq!(stored["config"]["shardingTotalCount"], 3);
    // The refused PUT is logged by Chromium as a failed resource load: the one expected entry.
    assert_no_console_errors(&browser, "the refused config", &["/api/jobs/orders/config"]).await;

    tracing::info!("--- the history page charts delay and duration");
    browser.goto(&format!("{base}/#/history/orders")).await;
    let dots = browser
        .wait_for(
            "the chart's dots and the executions table",
            "document.querySelectorAll('#history tbody tr[data-execution]').length > 0 && \
             document.querySelectorAll('#chart circle.delay').length",
        )
        .await;
    assert!(dots.as_u64().unwrap_or(0) > 0, "{dots}");
    tracing::info!("--- with this hour's statistics from the rows and the retention window");
    let runs = browser
        .wait_for(
            "the statistics table with this hour's runs",
            "document.querySelector('#stats-table tbody tr[data-bucket] td:nth-child(2)') && \
             document.querySelector('#stats-table tbody tr[data-bucket] td:nth-child(2)').innerText",
        )
        .await;
    let runs: u64 = runs.as_str().and_then(|r| r.parse().ok()).unwrap_or(0);
    assert!(runs > 0, "{runs}");
    let kept = browser
        .wait_for(
            "the retention sentence",
            "document.getElementById('retention') && document.getElementById('retention').innerText",
        )
        .await;
    assert!(
        kept.as_str().unwrap_or("").contains("kept for ever"),
        "{kept}"
    );
    screenshot(&browser, "history.png").await;

    tracing::info!("--- the servers page");
    browser.goto(&format!("{base}/#/servers")).await;
    browser
        .wait_for(
            "the server of both instances",
            "document.querySelector('#servers tr[data-server=\"10.0.0.1\"]') && \
             document.querySelector('#servers tr[data-server=\"10.0.0.2\"]')",
        )
        .await;
    screenshot(&browser, "servers.png").await;
    assert_no_console_errors(&browser, "the history and servers pages", &[]).await;

    tracing::info!("--- a console with a token: the page asks for it, then follows the jobs live");
    let guarded = Console::start(
        conn.clone(),
        ConsoleOptions {
            token: Some(Secret::new("s3cret".into())),
            ..ConsoleOptions::loopback(&ns)
        },
    )
    .await
    .expect("guarded console starts");
    browser
        .goto(&format!("http://{}/#/", guarded.local_addr()))
        .await;
    browser
        .wait_for(
            "the token form",
            "!document.getElementById('token-form').hidden",
        )
        .await;
    browser
        .eval(
            "document.getElementById('token').value = 's3cret';",
            json!([]),
        )
        .await;
    browser.click("#token-form button").await;
    browser
        .wait_for(
            "the jobs, read with the token",
            "document.querySelector('tr[data-job=orders]')",
        )
        .await;
    let kept = browser
        .eval(
            "return document.cookie + '|' + JSON.stringify(sessionStorage) + '|' + JSON.stringify(localStorage)",
            json!([]),
        )
        .await;
    assert_eq!(
        kept,
        json!("|{}|{}"),
        "the page keeps no token, and its session cookie is out of the script's reach"
    );
    // The refused stream and the request that asked why are logged as failed loads.
    assert_no_console_errors(&browser, "the guarded console", &["401"]).await;
    guarded.stop().await;

    browser.quit().await;
    console.stop().await;
    for node in &nodes {
        node.shutdown().await;
    }
    recording.close().await;
}

async fn console_get(base: &str, path: &str) -> Value {
    let text = support::http::get_text(&format!("{base}{path}"), path).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
}

#[tokio::test]
async fn with_a_token_every_api_request_needs_it_and_writes_must_be_same_origin_json() {
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("guarded"));
    let options = ConsoleOptions {
        token: Some(Secret::new("s3cret".into())),
        ..ConsoleOptions::loopback("guarded")
    };
    let (console, base) = start_console(conn, options).await;
    let http = reqwest::Client::new();
    const JSON: &str = "application/json";
    const FORM: &str = "application/x-www-form-urlencoded";
    const TRIGGER: &str = "/api/jobs/orders/trigger";
    const EVIL: &str = "http://evil.example";
    /// Why, a write?, the path, the token, the content type and body, the origin, the status.
    type Case = (
        &'static str,
        bool,
        &'static str,
        Option<&'static str>,
        Option<(&'static str, &'static str)>,
        Option<&'static str>,
        u16,
    );
    #[rustfmt::skip]
    let cases: [Case; 11] = [
        ("the page itself is public", false, "/", None, None, None, 200),
        ("no token", false, "/api/overview", None, None, None, 401),
        ("a wrong token", false, "/api/overview", Some("guess"), None, None, 401),
        ("the token", false, "/api/overview", Some("s3cret"), None, None, 200),
        // A token never travels in a URL: the page's event stream carries the login cookie
        // instead (tests/console_security.rs).
        ("a token in the URL", false, "/api/events?token=s3cret", None, None, None, 400),
        ("a stream without a token", false, "/api/events", None, None, None, 401),
        ("a stream with the header", false, "/api/events", Some("s3cret"), None, None, 200),
        ("a write without a token", true, TRIGGER, None, Some((JSON, "{}")), None, 401),
        ("a cross-site form cannot write", true, TRIGGER, Some("s3cret"), Some((FORM, "x=1")), None, 403),
        ("another origin", true, TRIGGER, Some("s3cret"), Some((JSON, "{}")), Some(EVIL), 403),
        ("past the guard: the job is unknown", true, TRIGGER, Some("s3cret"), Some((JSON, "{}")), None, 404),
    ];
    for (why, write, path, token, body, origin, want) in cases {
        let url = format!("{base}{path}");
        let mut request = if write { http.post(url) } else { http.get(url) };
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some((kind, body)) = body {
            request = request.header("Content-Type", kind).body(body);
        }
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status().as_u16(), want, "{why}");
    }
    console.stop().await;
}

#[test]
fn the_cli_refuses_a_console_off_loopback_without_a_token_and_prints_completions() {
    let off_loopback = ["--zk", "127.0.0.1:1", "console", "--listen", "0.0.0.0:0"];
    run_ctl_blocking(&off_loopback, &[]).refused_naming(2, &["--listen", "token"]);

    for shell in ["bash", "zsh", "fish"] {
        let out = run_ctl_blocking(&["completions", shell], &[]);
        assert_eq!(out.code, 0, "{shell}");
        assert!(
            out.stdout.contains("shardcronctl") && out.stdout.contains("disable"),
            "{shell} completion names the program and its commands"
        );
    }
    let help = run_ctl_blocking(&["--help"], &[]);
    assert_eq!(help.code, 0);
    assert!(
        help.stdout.contains("console") && help.stdout.contains("exit codes"),
        "{}",
        help.stdout
    );
}

/// Items the Java instance ran, from its log (`<epoch ms> <item> <instanceId> java start <taskId>`).
fn java_runs(log: &std::path::Path) -> Vec<(i64, u32)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(" java start "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let ms = words.next()?.parse().ok()?;
            let item = words.next()?.parse().ok()?;
            Some((ms, item))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reads_and_operates_a_java_elasticjob_namespace() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    cluster::init_tracing();
    let ns = format!("console-java-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("items.log");
    tracing::info!(
        "--- one Java ElasticJob-Lite instance runs job `legacy` (4 items, every second)"
    );
    let mut java = tokio::process::Command::new(peer.join("run-instance"))
        .args([
            format!("zk={}", zk::server().connect_string()),
            format!("ns={ns}"),
            "job=legacy".to_owned(),
            "items=4".to_owned(),
            "cron=* * * * * ?".to_owned(),
            "description=run by Java".to_owned(),
            format!("log={}", log.display()),
        ])
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the Java peer starts");
    let conn = zk::connector(&ns);
    let (console, base) = start_console(conn, ConsoleOptions::loopback(&ns)).await;
    let mut changes = console_changes(&base).await;

    let job = changes
        .until("the Java instance owns every item of legacy", |page| {
            let items = page["items"].as_array()?;
            let live = page["instances"].as_array()?.len() == 1;
            let owned = items.len() == 4 && items.iter().all(|i| i["owner"].is_string());
            (live && owned).then(|| page.clone())
        })
        .await;
    assert_eq!(job["status"], "OK", "{job:#}");
    assert!(
        job["jobType"].as_str().unwrap_or("").contains('.'),
        "Java writes its class name: {job:#}"
    );
    assert_eq!(job["config"]["cron"], "* * * * * ?");
    assert_eq!(
        job["nextFires"].as_array().map(Vec::len),
        Some(3),
        "{job:#}"
    );
    let overview = console_get(&base, "/api/overview").await;
    assert_eq!(overview["jobs"][0]["jobName"], "legacy");
    assert_eq!(overview["jobs"][0]["description"], "run by Java");

    tracing::info!("--- disabling item 2 from the console: the Java instance skips it");
    let http = reqwest::Client::new();
    let answer = http
        .post(format!("{base}/api/jobs/legacy/disable"))
        .header("Content-Type", "application/json")
        .body(r#"{"item":2}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    changes
        .until("item 2 shown disabled", |page| {
            (page["items"][2]["status"] == "DISABLED").then_some(())
        })
        .await;
    let disabled_at = Utc::now().timestamp_millis() + 1_000;
    // Three more fires of the other items, then no run of item 2 among them.
    let check = async || {
        let runs = java_runs(&log);
        let after: Vec<(i64, u32)> = runs
            .into_iter()
            .filter(|(ms, _)| *ms > disabled_at)
            .collect();
        if after.iter().filter(|(_, item)| *item == 0).count() >= 3 {
            Ok(after)
        } else {
            Err(after)
        }
    };
    // The Java peer reports only through its log file; the console's stream ticks meanwhile.
    let wake = async || {
        changes.next().await;
    };
    let what = "the Java instance to run item 0 three times after the disable";
    let after = wait_until_woken(check, wake, what, WITHIN).await;
    assert!(
        after.iter().all(|(_, item)| *item != 2),
        "the Java instance ran item 2 after it was disabled: {after:?}"
    );
    let _ = java.kill().await;
    console.stop().await;
}

/// The console's event stream of one job, read as a client would.
struct JobStream {
    response: reqwest::Response,
    buffer: String,
}

async fn console_changes(base: &str) -> JobStream {
    let response = reqwest::get(format!("{base}/api/events?job=legacy"))
        .await
        .expect("the event stream opens");
    assert_eq!(response.status().as_u16(), 200);
    JobStream {
        response,
        buffer: String::new(),
    }
}

impl JobStream {
    /// The next `job` event's data (the page may also send keep-alive comments and errors).
    async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let data: String = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if block.lines().any(|l| l == "event: job" || l == "event:job") {
                    return serde_json::from_str(&data).expect("a job event carries JSON");
                }
                continue;
            }
            let chunk = tokio::time::timeout(WITHIN, self.response.chunk())
                .await
                .expect("the event stream sends within 30 s")
                .expect("the event stream reads")
                .expect("the event stream stays open");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Reads events until `pick` returns something, failing with `what` after [`WITHIN`].
    async fn until<T>(&mut self, what: &str, pick: impl Fn(&Value) -> Option<T>) -> T {
        let page = next_matching(
            async || Some(self.next().await),
            |page| pick(page).is_some(),
            what,
            WITHIN,
        )
        .await;
        pick(&page).expect("the page matched")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shardcronctl_console_serves_the_namespace_and_stops_on_sigterm() {
    require!(Peer::ZooKeeper);
    use tokio::io::AsyncBufReadExt;
    let ns = format!("console-cli-{}", std::process::id());
    let mut child = tokio::process::Command::new(example_bin::ctl_binary())
        .args(["--zk", &zk::server().connect_string(), "--namespace", &ns])
        .args(["console", "--listen", "127.0.0.1:0"])
        .env_remove("SHARDCRON_CONSOLE_TOKEN")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("shardcronctl console starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(WITHIN, lines.next_line())
        .await
        .expect("the console announces its address within 30 s")
        .unwrap()
        .expect("a line on stdout");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    let overview = console_get(&url, "/api/overview").await;
    assert_eq!(overview["namespace"], ns.as_str());
    assert_eq!(overview["jobs"], json!([]));
    let page = reqwest::get(format!("{url}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("/app.js"), "the page is served: {page}");

    let pid = child.id().expect("running") as i32;
    // SAFETY: signalling our own child by its pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(WITHIN, child.wait())
        .await
        .expect("the console stops within 30 s of SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Sets the New job form's fields (by `name`) and submits it.
const FILL_NEW_JOB: &str = r#"
  const [fields] = arguments;
  const form = document.getElementById('new-job');
  for (const [name, value] of Object.entries(fields)) form.elements[name].value = value;
  form.querySelector('button[data-action=create-job]').click();
  return true;"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_job_form_creates_a_job_an_adopting_node_runs_and_names_a_bad_field() {
    require!(Peer::Chromium);
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let me = InstanceId::parse("127.0.0.1@-@adopter").unwrap();
    let node = NodeBuilder::new(Arc::new(server.connector("form")))
        .instance_id(me.clone())
        .adopt("script".parse().unwrap())
        .start()
        .await
        .expect("an adopting node starts with no job");
    let (console, base) = start_console(
        Arc::new(server.connector("form")),
        ConsoleOptions::loopback("form"),
    )
    .await;
    let browser = Browser::start().await;

    tracing::info!("--- a bad cron is refused, the field named, nothing written");
    browser.goto(&format!("{base}/#/new")).await;
    browser
        .wait_for("the New job form", "document.getElementById('new-job')")
        .await;
    let bad = json!({"jobName": "nightly", "cron": "0 0 25 * * ?", "items": "2",
                     "command": "/bin/true"});
    browser.eval(FILL_NEW_JOB, json!([bad])).await;
    let refusal = browser
        .wait_for(
            "the refusal shown",
            "(() => { const f = document.getElementById('flash'); \
             return f && !f.hidden && f.className === 'error' ? f.innerText : null; })()",
        )
        .await;
    let refusal = refusal.as_str().unwrap_or_default().to_owned();
    assert!(
        refusal.contains("cron"),
        "the refusal names the field: {refusal}"
    );
    assert!(node.mirror().get("/nightly").is_none(), "nothing written");

    tracing::info!("--- a good form: the page goes to the job, the adopting node runs it");
    let good = json!({"jobName": "nightly", "cron": "* * * * * ?", "items": "2",
                      "command": "/bin/true", "timeZone": "UTC", "description": "from the form"});
    browser.eval(FILL_NEW_JOB, json!([good])).await;
    browser
        .wait_for(
            "the job's page with both items owned by the adopting node",
            "location.hash === '#/job/nightly' && (() => { \
               const rows = [...document.querySelectorAll('#sharding-map tbody tr')]; \
               return rows.length === 2 && rows.every((r) => r.dataset.owner); })()",
        )
        .await;
    let config = node
        .mirror()
        .get("/nightly/config")
        .expect("the config is written");
    let config = String::from_utf8_lossy(&config.data).into_owned();
    let config = JobConfig::from_yaml(&config).expect("a config this crate reads");
    assert_eq!(
        (config.time_zone.as_deref(), config.description.as_deref()),
        (Some("GMT"), Some("from the form")),
        "UTC stored in Java's spelling"
    );
    support::wait::wait_until(
        async || {
            node.mirror()
                .get(&format!("/nightly/instances/{me}"))
                .is_some()
        },
        "the adopting node to register the job",
        WITHIN,
    )
    .await;
    screenshot(&browser, "new-job.png").await;
    // The refused form is the one expected error (its 400).
    assert_no_console_errors(
        &browser,
        "the New job form",
        &["/api/jobs - Failed to load resource: the server responded with a status of 400"],
    )
    .await;
    browser.quit().await;
    console.stop().await;
    node.shutdown().await;
}
