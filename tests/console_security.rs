//! The console's security against the running console: the host names it answers, its headers,
//! tokens kept out of URLs, the two roles, the login cookie behind the event stream, secrets never
//! shown (API, stream) nor lost by an edit, and the audit log of a config edit on SQLite and on a
//! real PostgreSQL server (plus `shardcronctl`'s own audit rows against a real ZooKeeper).

#[macro_use]
extern crate support;

use support::console::start_console;
use support::example_bin::run_ctl_blocking;
use support::Peer;

use support::example_bin;
use support::postgres;
use support::zk;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shardcron::console::{Console, ConsoleOptions};
use shardcron::history::{AuditQuery, History};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::{Connector, CreateMode, Registry};
use shardcron::secret::Secret;

const WITHIN: Duration = Duration::from_secs(30);
const OPERATOR: &str = "op-token-1";
const VIEWER: &str = "view-token-1";
const PASSWORD: &str = "hunter2-secret";
const ROBOT: &str = "robot-token-42";

/// The config stored for job `mail`: a password prop and a webhook whose query holds a token.
fn stored_config() -> String {
    format!(
        "jobName: mail\nshardingTotalCount: 2\ncron: 0 0 1 * * ?\n\
         props:\n  email.password: {PASSWORD}\n  email.host: smtp.example\n  \
         dingtalk.webhook: https://oapi.example/robot/send?access_token={ROBOT}\n"
    )
}

/// Creates job `mail` (and its config) on `session`.
async fn create_job(session: &dyn Registry) {
    session
        .create("/mail", b"mail.handler", CreateMode::Persistent)
        .await
        .unwrap();
    session
        .create(
            "/mail/config",
            stored_config().as_bytes(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
}

/// A console on the embedded registry with both tokens, job `mail`, and `history` if given.
async fn console(history: Option<String>) -> (Console, String, Arc<dyn Registry>) {
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("sec"));
    let session: Arc<dyn Registry> = Arc::new(server.connector("sec").open());
    create_job(session.as_ref()).await;
    let (console, base) = start_console(
        conn,
        ConsoleOptions {
            token: Some(Secret::new(OPERATOR.into())),
            viewer_token: Some(Secret::new(VIEWER.into())),
            allowed_hosts: vec!["console.example".into()],
            history,
            ..ConsoleOptions::loopback("sec")
        },
    )
    .await;
    (console, base, session)
}

/// A JSON body (reqwest is built without its `json` feature).
trait JsonBody {
    fn json_body(self, value: &Value) -> Self;
}

impl JsonBody for reqwest::RequestBuilder {
    fn json_body(self, value: &Value) -> Self {
        self.header("Content-Type", "application/json")
            .body(value.to_string())
    }
}

/// Job `mail`'s config as the console shows it to the operator (`yaml`, `version`).
async fn shown_config(http: &reqwest::Client, base: &str) -> Value {
    let text = text_as(http, &format!("{base}/api/jobs/mail/config"), OPERATOR).await;
    serde_json::from_str(&text).unwrap()
}

/// The body of a GET of `url` with `token`.
async fn text_as(http: &reqwest::Client, url: &str, token: &str) -> String {
    let answer = http.get(url).bearer_auth(token).send().await.unwrap();
    answer.text().await.unwrap()
}

/// Saves `yaml` over `version` of job `mail`'s config, with `token`.
async fn save_config(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    yaml: &str,
    version: Value,
) -> reqwest::Response {
    http.put(format!("{base}/api/jobs/mail/config"))
        .bearer_auth(token)
        .json_body(&json!({ "yaml": yaml, "version": version }))
        .send()
        .await
        .unwrap()
}

/// Asserts a save answered 200, showing the answer otherwise.
async fn assert_saved(saved: reqwest::Response) {
    let status = saved.status().as_u16();
    assert_eq!(status, 200, "{}", saved.text().await.unwrap());
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(WITHIN).build().unwrap()
}

#[tokio::test]
async fn a_request_with_a_foreign_host_is_refused_by_the_running_console() {
    let (console, base, _session) = console(None).await;
    let http = http();
    for path in ["/", "/app.js", "/api/overview", "/api/events", "/api/login"] {
        let answer = http
            .get(format!("{base}{path}"))
            .header("Host", "evil.example")
            .bearer_auth(OPERATOR)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 421, "{path} under a foreign Host");
    }
    let rebound = http
        .get(format!("{base}/api/overview"))
        .header(
            "Host",
            format!("evil.example:{}", console.local_addr().port()),
        )
        .bearer_auth(OPERATOR)
        .send()
        .await
        .unwrap();
    assert_eq!(
        rebound.status().as_u16(),
        421,
        "a rebound name on the console's port"
    );
    for host in [
        format!("localhost:{}", console.local_addr().port()),
        console.local_addr().to_string(),
        "console.example".to_owned(),
    ] {
        let answer = http
            .get(format!("{base}/api/overview"))
            .header("Host", host.as_str())
            .bearer_auth(VIEWER)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 200, "Host {host}");
    }
    console.stop().await;
}

#[tokio::test]
async fn every_answer_forbids_framing_sniffing_and_referrers() {
    let (console, base, _session) = console(None).await;
    let http = http();
    for (path, token) in [
        ("/", None),
        ("/api/overview", Some(VIEWER)),
        ("/api/overview", None),
    ] {
        let mut request = http.get(format!("{base}{path}"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let answer = request.send().await.unwrap();
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let csp = header("content-security-policy");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
    }
    console.stop().await;
}

#[tokio::test]
async fn a_token_in_a_query_string_is_refused() {
    let (console, base, _session) = console(None).await;
    let http = http();
    for path in [
        format!("/api/events?token={OPERATOR}"),
        format!("/api/overview?token={OPERATOR}"),
        format!("/api/jobs/mail?job=mail&TOKEN={VIEWER}"),
    ] {
        let answer = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(answer.status().as_u16(), 400, "{path}");
        let body = answer.text().await.unwrap();
        assert!(body.contains("never accepted in a URL"), "{body}");
    }
    console.stop().await;
}

#[tokio::test]
async fn a_viewer_token_reads_and_is_refused_a_write_which_the_operator_token_may_do() {
    let (console, base, _session) = console(None).await;
    let http = http();
    let read = http
        .get(format!("{base}/api/jobs/mail"))
        .bearer_auth(VIEWER)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status().as_u16(), 200);
    // The workflow view is a read like the others: the viewer may, nobody without a token.
    for (token, status) in [(Some(VIEWER), 200), (None, 401)] {
        let mut request = http.get(format!("{base}/api/workflow"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(
            answer.status().as_u16(),
            status,
            "/api/workflow as {token:?}"
        );
    }
    let write = |token: &'static str| {
        http.post(format!("{base}/api/jobs/mail/disable"))
            .bearer_auth(token)
            .json_body(&json!({ "item": 1 }))
            .send()
    };
    let refused = write(VIEWER).await.unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    assert!(refused.text().await.unwrap().contains("viewer"));
    let done = write(OPERATOR).await.unwrap();
    assert_eq!(
        done.status().as_u16(),
        200,
        "{}",
        done.text().await.unwrap()
    );
    let nobody = http
        .get(format!("{base}/api/overview"))
        .send()
        .await
        .unwrap();
    assert_eq!(nobody.status().as_u16(), 401);
    let wrong = http
        .get(format!("{base}/api/overview"))
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    console.stop().await;
}

/// The first `event:` block of an event stream (its name and data).
async fn first_event(mut response: reqwest::Response) -> (String, String) {
    let mut buffer = String::new();
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let block = &buffer[..end];
            let name = block
                .lines()
                .find_map(|l| l.strip_prefix("event:"))
                .map(|n| n.trim().to_owned());
            if let Some(name) = name {
                let data = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                return (name, data);
            }
            buffer.drain(..end + 2);
            continue;
        }
        let chunk = tokio::time::timeout(WITHIN, response.chunk())
            .await
            .expect("an event within 30 s")
            .expect("the stream reads")
            .expect("the stream stays open");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn the_stream_authenticates_by_a_login_cookie_that_never_holds_the_token() {
    let (console, base, _session) = console(None).await;
    let http = http();
    let login = http
        .post(format!("{base}/api/login"))
        .bearer_auth(VIEWER)
        .json_body(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status().as_u16(), 200);
    let cookie = login
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("the login sets a cookie")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(VIEWER),
        "the cookie holds a session id, not the token"
    );
    let session = cookie.split(';').next().unwrap().to_owned();
    let answer: Value = serde_json::from_str(&login.text().await.unwrap()).unwrap();
    assert_eq!(answer["role"], "viewer");

    let stream = http
        .get(format!("{base}/api/events?job=mail"))
        .header("Cookie", session.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let (name, _) = first_event(stream).await;
    assert_eq!(name, "job");
    let refused = http.get(format!("{base}/api/events")).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 401, "no cookie, no token");
    let forged = http
        .get(format!("{base}/api/events"))
        .header("Cookie", "shardcron_session=00ff")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 401, "an unknown session");
    let write = http
        .post(format!("{base}/api/jobs/mail/trigger"))
        .header("Cookie", session.as_str())
        .json_body(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        write.status().as_u16(),
        403,
        "the viewer's session cannot write"
    );

    let logout = http
        .post(format!("{base}/api/logout"))
        .header("Cookie", session.as_str())
        .json_body(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status().as_u16(), 200);
    let after = http
        .get(format!("{base}/api/overview"))
        .header("Cookie", session.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(after.status().as_u16(), 401, "the session ended");
    let wrong_login = http
        .post(format!("{base}/api/login"))
        .bearer_auth("guess")
        .json_body(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_login.status().as_u16(), 401);
    console.stop().await;
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(
        !text.contains(PASSWORD) && !text.contains(ROBOT),
        "{what} shows a secret: {text}"
    );
}

#[tokio::test]
async fn no_secret_value_reaches_the_console_api_or_its_stream_and_an_edit_keeps_them() {
    let (console, base, session) = console(None).await;
    let http = http();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .bearer_auth(OPERATOR)
            .send()
    };
    let job = get("/api/jobs/mail").await.unwrap().text().await.unwrap();
    assert_no_secret("the job", &job);
    assert!(job.contains("***") && job.contains("smtp.example"), "{job}");
    let config = shown_config(&http, &base).await;
    let shown = config["yaml"].as_str().unwrap().to_owned();
    assert_no_secret("the config editor", &shown);
    let overview = get("/api/overview").await.unwrap().text().await.unwrap();
    assert_no_secret("the overview", &overview);
    let stream = get("/api/events?job=mail").await.unwrap();
    let (_, data) = first_event(stream).await;
    assert_no_secret("the event stream", &data);
    assert!(data.contains("smtp.example"), "{data}");

    tracing::info!("--- saving the shown config with another cron keeps both secrets");
    let edited = shown.replace("0 0 1 * * ?", "0 0 2 * * ?");
    let saved = save_config(&http, &base, OPERATOR, &edited, json!(config["version"])).await;
    assert_saved(saved).await;
    let (data, _) = session.get("/mail/config").await.unwrap();
    let stored = String::from_utf8_lossy(&data);
    assert!(stored.contains("0 0 2 * * ?"), "{stored}");
    assert!(
        stored.contains(PASSWORD) && stored.contains(ROBOT),
        "{stored}"
    );
    console.stop().await;
}

/// Edits job `mail`'s cron through the console as the operator, then reads the audit log both
/// through the console and straight from `target`.
async fn a_config_edit_is_audited_with_its_secret_redacted(target: String) {
    let (console, base, _session) = console(Some(target.clone())).await;
    let http = http();
    let config = shown_config(&http, &base).await;
    let edited = config["yaml"]
        .as_str()
        .unwrap()
        .replace("0 0 1 * * ?", "0 30 1 * * ?")
        .replace("smtp.example", "smtp2.example");
    let saved = save_config(&http, &base, OPERATOR, &edited, json!(config["version"])).await;
    assert_saved(saved).await;
    let refused = save_config(&http, &base, VIEWER, &edited, json!(99)).await;
    assert_eq!(refused.status().as_u16(), 403);

    let shown = text_as(&http, &format!("{base}/api/audit?job=mail"), VIEWER).await;
    assert_no_secret("the audit tab", &shown);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    let rows = shown["records"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        1,
        "one write, the viewer's was refused before it: {shown:#}"
    );
    let row = &rows[0];
    assert_eq!(row["operation"], "config-set");
    assert_eq!(row["jobName"], "mail");
    assert_eq!(row["actor"], "operator");
    assert_eq!(row["role"], "operator");
    assert_eq!(row["via"], "console");
    assert_eq!(row["outcome"], "ok");
    let before = row["configBefore"].as_str().unwrap();
    let after = row["configAfter"].as_str().unwrap();
    assert!(
        before.contains("0 0 1 * * ?") && before.contains("smtp.example"),
        "{before}"
    );
    assert!(
        after.contains("0 30 1 * * ?") && after.contains("smtp2.example"),
        "{after}"
    );
    assert!(before.contains("***") && after.contains("***"), "{after}");

    console.stop().await;
    let history = History::open(&target).await.unwrap();
    let rows = history.audits(&AuditQuery::default()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_no_secret("the audit table", &format!("{rows:?}"));
    history.close().await;
}

#[tokio::test]
async fn the_audit_rows_of_a_config_edit_have_the_secret_redacted_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db").display().to_string();
    a_config_edit_is_audited_with_its_secret_redacted(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_rows_of_a_config_edit_have_the_secret_redacted_on_postgresql() {
    let bin = require!(Peer::PostgreSql);
    let server = tokio::task::spawn_blocking(move || postgres::PgServer::start(&bin))
        .await
        .unwrap();
    a_config_edit_is_audited_with_its_secret_redacted(server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shardcronctl_config_set_keeps_unchanged_secrets_and_is_audited_as_the_os_user() {
    require!(Peer::ZooKeeper);
    let ns = format!("console-sec-{}", std::process::id());
    let conn = ZkConnector::new(zk::backend().config(&ns));
    let session = conn.connect().await.expect("ZooKeeper session");
    create_job(session.as_ref()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db").display().to_string();
    let ctl = |args: &[&str]| {
        std::process::Command::new(example_bin::ctl_binary())
            .args(["--zk", &zk::server().connect_string(), "--namespace", &ns])
            .args(args)
            .env("USER", "alice")
            .env_remove("SHARDCRON_AUDIT_DB")
            .output()
            .unwrap()
    };
    let got = ctl(&["config", "get", "mail"]);
    let shown = String::from_utf8_lossy(&got.stdout).into_owned();
    assert_eq!(
        got.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_no_secret("config get", &shown);
    let file = dir.path().join("mail.yaml");
    std::fs::write(&file, shown.replace("0 0 1 * * ?", "0 0 3 * * ?")).unwrap();
    let set = ctl(&[
        "--audit-db",
        &db,
        "config",
        "set",
        "mail",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        set.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let (data, _) = session.get("/mail/config").await.unwrap();
    let stored = String::from_utf8_lossy(&data);
    assert!(
        stored.contains("0 0 3 * * ?") && stored.contains(PASSWORD) && stored.contains(ROBOT),
        "{stored}"
    );

    let audit = ctl(&["audit", "--db", &db, "--job", "mail"]);
    let text = String::from_utf8_lossy(&audit.stdout);
    assert_eq!(
        audit.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    assert!(
        text.contains("config-set") && text.contains("alice") && text.contains("shardcronctl"),
        "{text}"
    );
    assert!(
        text.contains("- cron: 0 0 1 * * ?") && text.contains("+ cron: 0 0 3 * * ?"),
        "{text}"
    );
    assert_no_secret("shardcronctl audit", &text);
    let json = ctl(&["--json", "audit", "--db", &db]);
    let rows: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(rows[0]["actor"], "alice");
    assert_eq!(rows[0]["role"], Value::Null);
    session.delete_recursive("/mail").await.unwrap();
    session.close().await;
}

#[test]
fn shardcronctl_console_takes_tokens_from_files_or_the_environment_never_argv() {
    let in_argv = ["--zk", "127.0.0.1:1", "console", "--token", "s3cret"];
    run_ctl_blocking(&in_argv, &[]).refused_naming(2, &["--token", "ps"]);
    let listen = ["--zk", "127.0.0.1:1", "console", "--listen", "0.0.0.0:0"];
    let missing_file = [&listen[..], &["--token-file", "/nonexistent/token"]].concat();
    run_ctl_blocking(&missing_file, &[]).refused_naming(2, &["--token-file"]);
}
