//! The notifying error handlers against local peers started by each test: a tiny SMTP sink for
//! `EMAIL`, a tiny HTTP server for `WECHAT`, `DINGTALK` and `WEBHOOK`. A node on the embedded
//! registry runs a job whose items always fail; what reaches the peers is checked, DingTalk's
//! signature included, and a peer that never answers holds up no run.

use support::cluster;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use shardcron::clock::SystemClock;
use shardcron::config::JobConfig;
use shardcron::job::handlers::notify::dingtalk_sign;
use shardcron::job::handlers::HandlerRegistry;
use shardcron::job::{FnJob, JobError, ShardingContext, SharedHandler};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::InstanceId;
use support::http::{server, Answer, Received, Seen};
use support::smtp::{sink, Mail};
use support::wait::{next_matching, wait_until};
use tokio::sync::{mpsc, watch};

/// A bound on every wait, so a broken notifier fails the test instead of hanging it.
const WITHIN: Duration = Duration::from_secs(20);

fn failing() -> SharedHandler {
    Arc::new(FnJob(|_ctx: ShardingContext| async move {
        Err::<(), _>(JobError::failed("disk full"))
    }))
}

fn every_second(name: &str, items: i32, handler: &str, props: &[(&str, String)]) -> JobConfig {
    let mut config = JobConfig::new(name, items)
        .cron("* * * * * ?")
        .time_zone("GMT")
        .error_handler(handler)
        // WEBHOOK is a shardcron extension no Java 3.0.x instance could look up.
        .prop("shardcron.only", "true");
    for (k, v) in props {
        config = config.prop(*k, v.clone());
    }
    config
}

/// A node `127.0.0.1@-@{suffix}` on `server`, on the system clock, with `handlers`.
fn notify_node(server: &EmbeddedServer, handlers: &HandlerRegistry, suffix: &str) -> NodeBuilder {
    NodeBuilder::new(Arc::new(server.connector("notify")))
        .instance_id(InstanceId::new("127.0.0.1", suffix).unwrap())
        .clock(Arc::new(SystemClock))
        .handlers(handlers.clone())
}

async fn start(
    server: &EmbeddedServer,
    handlers: &HandlerRegistry,
    jobs: Vec<JobConfig>,
) -> NodeHandle {
    let mut builder = notify_node(server, handlers, "notify");
    for config in jobs {
        builder = builder.job(config, "failing", failing());
    }
    builder.start().await.expect("node starts")
}

async fn next<T: std::fmt::Debug>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    next_matching(async || rx.recv().await, |_| true, what, WITHIN).await
}

async fn next_request(rx: &mut mpsc::UnboundedReceiver<Seen>, what: &str) -> Received {
    let seen = next_matching(
        async || rx.recv().await,
        |s| matches!(s, Seen::Request(_)),
        what,
        WITHIN,
    )
    .await;
    let Seen::Request(r) = seen else {
        unreachable!("next_matching returned a request")
    };
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_item_is_emailed_through_smtp_with_elasticjobs_props() {
    cluster::init_tracing();
    let (addr, mut mails) = sink().await;
    let props = [
        ("email.host", "127.0.0.1".to_owned()),
        ("email.port", addr.port().to_string()),
        ("email.username", "ops".to_owned()),
        ("email.password", "s3cret".to_owned()),
        ("email.useSsl", "false".to_owned()),
        ("email.from", "shardcron@example.com".to_owned()),
        ("email.to", "a@example.com, b@example.com".to_owned()),
        ("email.cc", "c@example.com".to_owned()),
        ("email.bcc", "d@example.com".to_owned()),
        ("email.subject", "orders failed".to_owned()),
    ];
    let server = EmbeddedServer::new();
    let handlers = HandlerRegistry::new();
    let node = start(
        &server,
        &handlers,
        vec![every_second("mailer", 1, "EMAIL", &props)],
    )
    .await;

    let mail: Mail = next(&mut mails, "an email").await;
    assert_eq!(
        mail.auth.as_deref(),
        Some("ops:s3cret"),
        "authenticated with email.username/password"
    );
    assert_eq!(mail.from, "<shardcron@example.com>");
    for rcpt in [
        "a@example.com",
        "b@example.com",
        "c@example.com",
        "d@example.com",
    ] {
        assert!(
            mail.rcpt.contains(&format!("<{rcpt}>")),
            "{rcpt} in {:?}",
            mail.rcpt
        );
    }
    assert!(
        mail.data.contains("Subject: orders failed"),
        "{}",
        mail.data
    );
    assert!(
        mail.data.contains("To: a@example.com, b@example.com"),
        "{}",
        mail.data
    );
    assert!(
        !mail.data.contains("d@example.com"),
        "bcc stays out of the headers"
    );
    assert!(
        mail.data.contains(
            "Job 'mailer' exception occur in job processing, caused by disk full (item 0)"
        ),
        "{}",
        mail.data
    );
    // Notices are sent one after the other: once the next fire's email arrives, the first send
    // has ended and been counted.
    next(&mut mails, "the next fire's email").await;
    let sent = handlers
        .notifiers()
        .counts()
        .sent
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent >= 1, "sent {sent}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_and_webhooks_receive_their_json_and_dingtalk_urls_are_signed() {
    cluster::init_tracing();
    let (addr, mut seen) = server(Answer::Status(200, r#"{"errcode":0,"errmsg":"ok"}"#)).await;
    let url = |path: &str| format!("http://{addr}{path}");
    let jobs = vec![
        every_second(
            "wecom",
            1,
            "WECHAT",
            &[("wechat.webhook", url("/wecom?key=K"))],
        ),
        every_second(
            "ding",
            1,
            "DINGTALK",
            &[
                ("dingtalk.webhook", url("/ding?access_token=T")),
                ("dingtalk.keyword", "[ops] ".to_owned()),
                ("dingtalk.secret", "SEC123".to_owned()),
            ],
        ),
        every_second("slack", 1, "WEBHOOK", &[("webhook.url", url("/slack"))]),
    ];
    let server_ = EmbeddedServer::new();
    let handlers = HandlerRegistry::new();
    let node = start(&server_, &handlers, jobs).await;

    let mut by_path: BTreeMap<String, Received> = BTreeMap::new();
    while by_path.len() < 3 {
        let r = next_request(&mut seen, "a post from each of the three jobs").await;
        let path = r.target.split('?').next().unwrap_or_default().to_owned();
        by_path.entry(path).or_insert(r);
    }
    let json = |r: &Received| serde_json::from_str::<serde_json::Value>(&r.body).unwrap();

    let wecom = &by_path["/wecom"];
    assert_eq!(wecom.method, "POST");
    assert_eq!(wecom.target, "/wecom?key=K");
    assert!(wecom.headers["content-type"].starts_with("application/json"));
    let body = json(wecom);
    assert_eq!(body["msgtype"], "text");
    let content = body["text"]["content"].as_str().unwrap();
    assert!(
        content.starts_with("Job 'wecom' exception occur in job processing, caused by disk full"),
        "{content}"
    );

    let ding = &by_path["/ding"];
    let query: BTreeMap<&str, &str> = ding
        .target
        .split_once('?')
        .unwrap()
        .1
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    assert_eq!(query["access_token"], "T");
    let timestamp: i64 = query["timestamp"].parse().unwrap();
    let now = chrono::Utc::now().timestamp_millis();
    assert!(
        (now - timestamp).abs() < 60_000,
        "the timestamp is the sending time"
    );
    assert_eq!(query["sign"], dingtalk_sign("SEC123", timestamp));
    let content = json(ding)["text"]["content"].as_str().unwrap().to_owned();
    assert!(
        content.starts_with("[ops] Job 'ding' exception occur"),
        "keyword first: {content}"
    );

    let slack = json(&by_path["/slack"]);
    assert!(
        slack["text"]
            .as_str()
            .unwrap()
            .starts_with("Job 'slack' exception occur"),
        "{slack}"
    );
    assert_eq!(slack.as_object().unwrap().len(), 1, "only `text`: {slack}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_never_answers_holds_up_no_run_and_overflow_is_counted() {
    cluster::init_tracing();
    let (addr, _seen) = server(Answer::Never).await;
    // 100 items fail at every fire; the first notice hangs for its whole bound, the queue fills.
    let props = [
        ("webhook.url", format!("http://{addr}/hook")),
        ("webhook.readTimeoutMilliseconds", "60000".to_owned()),
    ];
    let (runs, mut seen_runs) = watch::channel(0u64);
    let runs = Arc::new(runs);
    let handler: SharedHandler = Arc::new(FnJob(move |_ctx: ShardingContext| {
        let runs = runs.clone();
        async move {
            runs.send_modify(|n| *n += 1);
            Err::<(), _>(JobError::failed("down"))
        }
    }));
    let server_ = EmbeddedServer::new();
    let handlers = HandlerRegistry::new();
    let node = notify_node(&server_, &handlers, "notify")
        .job(
            every_second("busy", 100, "WEBHOOK", &props),
            "failing",
            handler,
        )
        .start()
        .await
        .expect("node starts");

    // Four whole fires of 100 items run while the first notice still hangs.
    tokio::time::timeout(WITHIN, seen_runs.wait_for(|n| *n >= 400))
        .await
        .expect("runs went on while the webhook hangs")
        .expect("the job is running");
    let counts = handlers.notifiers().counts();
    let dropped = counts.dropped.load(std::sync::atomic::Ordering::Relaxed);
    // After three fires at least 300 notices were handed over: the queue holds 64, one is in flight.
    assert!(dropped >= 300 - 64 - 1, "dropped {dropped}");
    assert_eq!(counts.sent.load(std::sync::atomic::Ordering::Relaxed), 0);
    node.shutdown().await;
}

#[tokio::test]
async fn bad_notifier_props_refuse_the_job_naming_the_prop() {
    let server = EmbeddedServer::new();
    let handlers = HandlerRegistry::new();
    let config = every_second(
        "mailer",
        1,
        "EMAIL",
        &[
            ("email.host", "smtp.example.com".to_owned()),
            ("email.port", "smtp".to_owned()),
        ],
    );
    let err = NodeBuilder::new(Arc::new(server.connector("notify")))
        .handlers(handlers)
        .job(config, "failing", failing())
        .start()
        .await
        .expect_err("bad props are refused");
    let text = err.to_string();
    for field in [
        "props.email.port",
        "props.email.username",
        "props.email.password",
        "props.email.from",
        "props.email.to",
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
}

/// Every log line of the test's thread, for a search for secrets.
#[derive(Clone, Default)]
struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLog {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLog {
    type Writer = CapturedLog;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

// One thread: the node's tasks log through the subscriber set for this thread.
#[tokio::test(flavor = "current_thread")]
async fn a_failed_send_logs_and_notifies_no_secret() {
    let log = CapturedLog::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    tracing::info!("--- a DingTalk robot that refuses every notice, a job failing on a URL");
    let (addr, mut seen) = server(Answer::Status(500, "robot down")).await;
    let job = every_second(
        "leaky",
        1,
        "DINGTALK",
        &[
            (
                "dingtalk.webhook",
                format!("http://{addr}/robot/send?access_token=t0k3n"),
            ),
            ("dingtalk.secret", "s3cr3t".to_owned()),
        ],
    );
    let registry = EmbeddedServer::new();
    let handlers = HandlerRegistry::new();
    let node = notify_node(&registry, &handlers, "leaky")
        .job(
            job,
            "failing",
            Arc::new(FnJob(|_ctx: ShardingContext| async move {
                Err::<(), _>(JobError::failed(
                    "GET https://db.example/export?password=hunter2 answered 500",
                ))
            })),
        )
        .start()
        .await
        .expect("node starts");
    let notice = next_request(&mut seen, "the notice").await;
    tracing::info!("--- the send failed: wait for its log line");
    let check = async || {
        let text = log.text();
        if text.contains("sending the failure notice failed") {
            Ok(())
        } else {
            Err(text)
        }
    };
    wait_until(check, "the failed send logged", WITHIN).await;
    node.shutdown().await;
    let text = log.text();
    for secret in ["t0k3n", "s3cr3t", "hunter2"] {
        assert!(!text.contains(secret), "{secret} in the log:\n{text}");
        assert!(
            !notice.body.contains(secret),
            "{secret} in the notice: {}",
            notice.body
        );
    }
    assert!(
        notice.body.contains("password=***"),
        "the failure is told, redacted: {}",
        notice.body
    );
}
