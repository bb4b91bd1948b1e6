//! Headless Chromium driven through chromedriver's W3C WebDriver endpoints, for the console's
//! browser test (`tests/console.rs`).
//!
//! Written over reqwest (already a dependency) rather than a WebDriver crate: the test needs a
//! dozen endpoints, plus chromedriver's browser log (`/se/log`), which the crates do not wrap.
//! Waits run inside the page (an async script that resolves when a predicate holds, re-checked on
//! every DOM change), so the test waits on the page's state rather than polling it.

use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use super::peer::which;
use super::wait::wait_until;
use tokio::process::{Child, Command};

/// The W3C key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The flags Chromium runs with: headless, and nothing that reaches the network on its own.
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
];

/// A chromedriver process and one browser session on it; [`Browser::quit`] ends both (and
/// dropping it kills chromedriver, whose browser then exits).
#[derive(Debug)]
pub struct Browser {
    http: reqwest::Client,
    session: String,
    port: u16,
    id: String,
    quit: bool,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a session with a fresh profile.
    /// Panics, naming the packages, when Chromium or chromedriver is missing (tests
    /// `require!(Peer::Chromium)` first).
    pub async fn start() -> Self {
        let driver_bin = which("chromedriver").unwrap_or_else(|| {
            panic!("chromedriver is not installed: apt-get install chromium chromium-driver (scripts/test does)")
        });
        let chromium = which("chromium").unwrap_or_else(|| {
            panic!("chromium is not installed: apt-get install chromium chromium-driver (scripts/test does)")
        });
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port for chromedriver")
            .port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("an HTTP client");
        let base = format!("http://127.0.0.1:{port}");
        // chromedriver answers /status once it listens; until then connections are refused.
        wait_until(
            async || match http.get(format!("{base}/status")).send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(r.status().to_string()),
                Err(e) => Err(e.to_string()),
            },
            &format!("chromedriver to answer on port {port}"),
            Duration::from_secs(20),
        )
        .await;
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": chromium, "args": args },
                "goog:loggingPrefs": { "browser": "ALL" },
                "unhandledPromptBehavior": "ignore",
            }}
        });
        let answer = send(
            &http,
            reqwest::Method::POST,
            &format!("{base}/session"),
            Some(capabilities),
        )
        .await;
        let id = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {answer}"))
            .to_owned();
        let browser = Self {
            http,
            session: format!("{base}/session/{id}"),
            port,
            id,
            quit: false,
            driver,
            _profile: profile,
        };
        browser
            .call(
                reqwest::Method::POST,
                "/timeouts",
                Some(json!({ "script": 30_000 })),
            )
            .await;
        browser
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        send(&self.http, method, &format!("{}{path}", self.session), body).await
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub async fn eval(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }

    /// Waits until the expression `predicate` (JavaScript, may use `document`) is truthy, and
    /// returns its value; fails naming `what` after 30 s. The predicate is re-checked on every DOM
    /// change of the page.
    pub async fn wait_for(&self, what: &str, predicate: &str) -> Value {
        let script = format!(
            r#"const done = arguments[arguments.length - 1];
            const check = () => {{ try {{ return ({predicate}); }} catch (e) {{ return null; }} }};
            const first = check();
            if (first) {{ done(first); return; }}
            const observer = new MutationObserver(() => {{
              const v = check();
              if (v) {{ observer.disconnect(); clearTimeout(timer); done(v); }}
            }});
            const timer = setTimeout(() => {{ observer.disconnect(); done(null); }}, 25000);
            observer.observe(document, {{ subtree: true, childList: true, attributes: true, characterData: true }});"#
        );
        let value = self
            .call(
                reqwest::Method::POST,
                "/execute/async",
                Some(json!({ "script": script, "args": [] })),
            )
            .await;
        if value.is_null() || value == Value::Bool(false) {
            let page = self
                .eval(
                    "return document.getElementById('main').innerText",
                    json!([]),
                )
                .await;
            panic!(
                "timed out waiting for: {what}\npage text:\n{}",
                page.as_str().unwrap_or("")
            );
        }
        value
    }

    /// Clicks the first element matching `css`. A live page may replace the element between
    /// finding and clicking it (a stale reference): then it is found again, a few times.
    pub async fn click(&self, css: &str) {
        for _ in 0..5 {
            let found = self
                .call(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({ "using": "css selector", "value": css })),
                )
                .await;
            let id = found[ELEMENT]
                .as_str()
                .unwrap_or_else(|| panic!("no element {css}: {found}"))
                .to_owned();
            let url = format!("{}/element/{id}/click", self.session);
            match try_send(&self.http, reqwest::Method::POST, &url, Some(json!({}))).await {
                Ok(_) => return,
                Err(e) if e.contains("stale element reference") => continue,
                Err(e) => panic!("{e}"),
            }
        }
        panic!("{css} went stale five times in a row");
    }

    /// Writes a PNG of the viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let encoded = self.call(reqwest::Method::GET, "/screenshot", None).await;
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().expect("a base64 screenshot"))
            .expect("the screenshot is base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the screenshot directory");
        }
        std::fs::write(path, png).expect("writing the screenshot");
    }

    /// The browser's console entries of level SEVERE (errors, uncaught exceptions, failed loads)
    /// since the last call.
    pub async fn severe_logs(&self) -> Vec<String> {
        let entries = self
            .call(
                reqwest::Method::POST,
                "/se/log",
                Some(json!({ "type": "browser" })),
            )
            .await;
        entries
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Ends the session and chromedriver (which ends Chromium).
    pub async fn quit(mut self) {
        let _ = self
            .http
            .delete(&self.session)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        self.quit = true;
        let _ = self.driver.kill().await;
    }
}

impl Drop for Browser {
    /// A test that failed before [`Browser::quit`]: end the session (which ends Chromium; killing
    /// chromedriver alone would leave it running), with a plain blocking request since no runtime
    /// may be driving this drop.
    fn drop(&mut self) {
        if self.quit {
            return;
        }
        use std::io::{Read, Write};
        let (port, id) = (self.port, self.id.clone());
        let closed = std::thread::spawn(move || {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
            stream.set_read_timeout(Some(Duration::from_secs(10)))?;
            write!(
                stream,
                "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
            // chromedriver answers once Chromium has quit; the first bytes are enough.
            let mut answer = [0u8; 512];
            stream.read(&mut answer).map(|_| ())
        })
        .join();
        if !matches!(closed, Ok(Ok(()))) {
            eprintln!("browser: could not end the WebDriver session {}", self.id);
        }
        let _ = self.driver.start_kill();
    }
}

async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Value {
    try_send(http, method, url, body)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// One WebDriver call: its `value`, or the error it answered (or why it could not be made).
async fn try_send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let mut request = http.request(method.clone(), url);
    if let Some(body) = body {
        request = request
            .header("Content-Type", "application/json")
            .body(body.to_string());
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("WebDriver {method} {url}: {e}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let answer: Value = serde_json::from_str(&text)
        .map_err(|e| format!("WebDriver {method} {url}: not JSON ({e}): {text}"))?;
    if !status.is_success() {
        return Err(format!(
            "WebDriver {method} {url} answered {status}: {answer}"
        ));
    }
    Ok(answer["value"].clone())
}
