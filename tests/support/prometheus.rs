//! [`PrometheusServer`]: a real Prometheus (Debian's `prometheus`, 2.42) for tests, on a free
//! loopback port with its own configuration and TSDB in a temporary directory, scraping the given
//! targets every second; and [`promtool`], its checker. Never the Debian service: the binary runs
//! as the test's child and is killed on drop (and with the test process).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::wait::wait_until;
use super::zk::server::{free_port, spawn_dying_with_process};

/// Where Debian installs the server.
const PROMETHEUS: &str = "/usr/bin/prometheus";
/// And its checker.
const PROMTOOL: &str = "/usr/bin/promtool";
/// How long the server may take to become ready on a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The fix to print when Prometheus is missing (tests `require!(Peer::Prometheus)` first).
const INSTALL_HINT: &str =
    "run `scripts/test`, which installs the Debian `prometheus` package (promtool included)";

/// The sum of the samples of `metric` in a `/metrics` text whose labels contain every one of
/// `labels`.
pub fn sample_sum(scrape: &str, metric: &str, labels: &[&str]) -> f64 {
    scrape
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A Prometheus server process. Killed on drop.
#[derive(Debug)]
pub struct PrometheusServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Mutex<Option<Child>>,
    http: reqwest::Client,
}

impl PrometheusServer {
    /// Starts a server scraping `targets` (job `shardcron`, every second) and waits until it is
    /// ready. Panics, saying how to fix it, when Prometheus is not installed.
    pub async fn start(targets: &[SocketAddr]) -> PrometheusServer {
        assert!(
            Path::new(PROMETHEUS).exists(),
            "{PROMETHEUS} is missing; {INSTALL_HINT}"
        );
        let dir = tempfile::Builder::new()
            .prefix("shardcron-prometheus-")
            .tempdir()
            .expect("creating the Prometheus directory");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: shardcron\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("writing prometheus.yml");
        let port = free_port();
        let log =
            std::fs::File::create(dir.path().join("prometheus.log")).expect("creating the log");
        let mut cmd = Command::new(PROMETHEUS);
        cmd.arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = spawn_dying_with_process(cmd)
            .unwrap_or_else(|e| panic!("cannot run {PROMETHEUS} ({e}); {INSTALL_HINT}"));
        let server = PrometheusServer {
            port,
            dir,
            child: Mutex::new(Some(child)),
            http: reqwest::Client::new(),
        };
        server.wait_ready().await;
        server
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    async fn wait_ready(&self) {
        let check = async || {
            let ready = self
                .http
                .get(format!("{}/-/ready", self.url()))
                .send()
                .await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "prometheus exited with {status} before it was ready:\n{}",
                    self.log()
                );
            }
            Err(format!("not ready; its log:\n{}", self.log()))
        };
        wait_until(check, "prometheus to be ready", START_TIMEOUT).await;
    }

    /// The `data.result` of an instant query through the HTTP API (`/api/v1/query`).
    pub async fn query(&self, promql: &str) -> Vec<Value> {
        let body = self
            .http
            .get(format!("{}/api/v1/query", self.url()))
            .query(&[("query", promql)])
            .send()
            .await
            .expect("the query API answers")
            .text()
            .await
            .expect("the query API's body");
        let answer: Value = serde_json::from_str(&body).expect("the query API answers JSON");
        assert_eq!(answer["status"], "success", "{promql}: {answer}");
        answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Asks `promql` until `pred` holds over its result, failing with `what` (and the last
    /// result) after `within`. The server changes its answers only as it scrapes, so this asks.
    pub async fn wait_query(
        &self,
        what: &str,
        promql: &str,
        within: Duration,
        pred: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let check = async || {
            let result = self.query(promql).await;
            if pred(&result) {
                Ok(result)
            } else {
                Err(format!(
                    "{promql} answers {result:#?}\nprometheus log:\n{}",
                    self.log()
                ))
            }
        };
        wait_until(check, what, within).await
    }

    /// Kills the server and waits for it to exit.
    pub fn stop(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `promtool` with `args`, `stdin` fed to it; returns whether it passed and its output.
pub fn promtool(args: &[&str], stdin: &str) -> (bool, String) {
    use std::io::Write;
    assert!(
        Path::new(PROMTOOL).exists(),
        "{PROMTOOL} is missing; {INSTALL_HINT}"
    );
    let mut child = Command::new(PROMTOOL)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {PROMTOOL} ({e}); {INSTALL_HINT}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .expect("feeding promtool");
    let out = child.wait_with_output().expect("promtool ends");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

impl PrometheusServer {
    /// Waits up to `within` until `metric` summed per job is `want` (sorted by job name).
    pub async fn wait_per_job(
        &self,
        metric: &str,
        want: &[(String, f64)],
        within: Duration,
    ) -> Vec<Value> {
        let promql = format!("sum by (job_name) ({metric})");
        let what = format!("{metric} per job {want:?}");
        (self.wait_query(&what, &promql, within, |r| by_label(r, "job_name") == want)).await
    }
}

/// The instant vector `result` as (label value of `label`, sample value) pairs, sorted.
pub fn by_label(result: &[Value], label: &str) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = result
        .iter()
        .map(|r| {
            let key = r["metric"][label].as_str().unwrap_or_default().to_owned();
            let value = r["value"][1]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN);
            (key, value)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
