//! The HTTP job type against a tiny HTTP/1.1 server on loopback that records what arrives and
//! answers as each test asks (or never answers).

use std::collections::BTreeMap;
use std::time::Duration;

use shardcron::job::http::{HttpJob, HttpJobError, SHARDING_CONTEXT_HEADER};
use shardcron::job::{ExecutionSource, ItemHandler, JobError, ShardingContext};
use shardcron::{InstanceId, JobName, ShardItem};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use support::http::{server, Answer, Seen};

/// A bound on every wait, so a broken job fails the test instead of hanging it.
const WITHIN: Duration = Duration::from_secs(20);

async fn next(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(WITHIN, seen.recv())
        .await
        .expect("the server saw something in time")
        .expect("the server is running")
}

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn context(item: u32) -> ShardingContext {
    ShardingContext {
        job_name: JobName::new("sync").unwrap(),
        task_id: format!("sync@-@{item}@-@READY@-@10.0.0.1@-@1@-@7"),
        sharding_total_count: 3,
        job_parameter: "full".into(),
        sharding_item: ShardItem(item),
        sharding_parameter: "Beijing".into(),
        scheduled_at: None,
        workflow_run: None,
        fencing_token: Default::default(),
        source: ExecutionSource::Normal,
        instance_id: InstanceId::parse("10.0.0.1@-@1").unwrap(),
        cancellation: CancellationToken::new(),
        resharding: Default::default(),
        props: Default::default(),
        child_lease: None,
        stop_grace: Default::default(),
        output: None,
    }
}

async fn run(job: &HttpJob, ctx: ShardingContext) -> Result<(), JobError> {
    tokio::time::timeout(WITHIN, job.run_item(ctx))
        .await
        .expect("the item ends in time")
}

#[tokio::test]
async fn a_post_delivers_its_method_body_content_type_and_sharding_context() {
    let (addr, mut seen) = server(Answer::Status(200, "ok")).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/sync?from=test")),
        ("http.method", "post"),
        ("http.data", r#"{"full":true}"#),
        ("http.content.type", "application/json"),
    ]))
    .unwrap();

    run(&job, context(1)).await.expect("a 200 succeeds");

    let Seen::Request(request) = next(&mut seen).await else {
        panic!("a request first");
    };
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/sync?from=test");
    assert_eq!(request.body, r#"{"full":true}"#);
    assert_eq!(request.headers["content-type"], "application/json");
    let header = &request.headers[&SHARDING_CONTEXT_HEADER.to_ascii_lowercase()];
    let context: serde_json::Value = serde_json::from_str(header).unwrap();
    assert_eq!(context["jobName"], "sync");
    assert_eq!(context["shardingItem"], 1);
    assert_eq!(context["shardingTotalCount"], 3);
    assert_eq!(context["shardingParameter"], "Beijing");
    assert_eq!(context["jobParameter"], "full");
}

#[tokio::test]
async fn a_get_sends_its_data_as_the_query_string_and_no_body() {
    let (addr, mut seen) = server(Answer::Status(204, "")).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/report")),
        ("http.method", "GET"),
        ("http.data", "day=monday"),
    ]))
    .unwrap();

    run(&job, context(0)).await.expect("a 204 succeeds");

    let Seen::Request(request) = next(&mut seen).await else {
        panic!("a request first");
    };
    assert_eq!(request.method, "GET");
    assert_eq!(request.target, "/report?day=monday");
    assert_eq!(request.body, "");
    assert!(!request.headers.contains_key("content-type"));
}

#[tokio::test]
async fn the_request_follows_the_runs_props_so_a_config_change_applies_live() {
    let (addr, mut seen) = server(Answer::Status(200, "ok")).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/old")),
        ("http.method", "GET"),
    ]))
    .unwrap();
    // The config as changed in the registry, handed to the run.
    let changed = props(&[
        ("http.uri", &format!("http://{addr}/new")),
        ("http.method", "POST"),
        ("http.data", "v=2"),
    ]);
    for _ in 0..2 {
        let mut ctx = context(0);
        ctx.props = std::sync::Arc::new(changed.clone());
        run(&job, ctx).await.expect("a 200 succeeds");
        let Seen::Request(request) = next(&mut seen).await else {
            panic!("a request first");
        };
        assert_eq!(
            (request.method.as_str(), request.target.as_str()),
            ("POST", "/new")
        );
        assert_eq!(request.body, "v=2");
    }
    // A broken change fails the run, naming what is wrong, and sends nothing.
    let mut ctx = context(0);
    ctx.props = std::sync::Arc::new(props(&[("http.uri", "ftp://x"), ("http.method", "GET")]));
    let err = run(&job, ctx).await.unwrap_err();
    assert!(err.to_string().contains("http.uri"), "{err}");
}

#[tokio::test]
async fn a_500_fails_the_item_naming_the_status_and_the_body() {
    let (addr, _seen) = server(Answer::Status(500, "database down")).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/sync")),
        ("http.method", "PUT"),
    ]))
    .unwrap();

    let err = run(&job, context(2)).await.unwrap_err();

    let JobError::Failed(message) = &err else {
        panic!("a failure, not {err:?}");
    };
    assert!(message.contains("500"), "{message}");
    assert!(message.contains("database down"), "{message}");
    assert!(
        message.contains(&format!("PUT http://{addr}/sync")),
        "{message}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_read_timeout() {
    let (addr, mut seen) = server(Answer::Never).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/slow")),
        ("http.method", "GET"),
        ("http.read.timeout.milliseconds", "300"),
    ]))
    .unwrap();

    let err = run(&job, context(0)).await.unwrap_err();

    assert!(err.to_string().contains("read timeout of 300 ms"), "{err}");
    assert!(matches!(next(&mut seen).await, Seen::Request(_)));
    assert!(
        matches!(next(&mut seen).await, Seen::ClientClosed),
        "the timed-out connection is closed"
    );
}

#[tokio::test]
async fn a_refused_connection_fails_the_item() {
    // A port that was free a moment ago and has no listener now.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/")),
        ("http.method", "GET"),
    ]))
    .unwrap();

    let err = run(&job, context(0)).await.unwrap_err();

    let message = err.to_string();
    assert!(message.contains("cannot connect"), "{message}");
    assert!(message.to_lowercase().contains("refused"), "{message}");
}

#[tokio::test]
async fn cancelling_the_item_aborts_the_request() {
    let (addr, mut seen) = server(Answer::Never).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/slow")),
        ("http.method", "POST"),
        ("http.read.timeout.milliseconds", "600000"),
    ]))
    .unwrap();
    let ctx = context(0);
    let cancel = ctx.cancellation.clone();
    let item = tokio::spawn(async move { job.run_item(ctx).await });

    tracing::info!("--- the request reaches the server, then the item is cancelled");
    assert!(matches!(next(&mut seen).await, Seen::Request(_)));
    cancel.cancel();

    let result = tokio::time::timeout(WITHIN, item).await.unwrap().unwrap();
    assert!(matches!(result, Err(JobError::Cancelled(_))), "{result:?}");
    assert!(
        matches!(next(&mut seen).await, Seen::ClientClosed),
        "the server sees the connection closed"
    );
}

#[test]
fn bad_props_are_refused_naming_the_prop() {
    let table: [(&[(&str, &str)], &str); 9] = [
        (&[("http.method", "GET")], "http.uri"),
        (&[("http.uri", "http://h/")], "http.method"),
        (&[("http.uri", " "), ("http.method", "GET")], "http.uri"),
        (
            &[("http.uri", "ftp://h/"), ("http.method", "GET")],
            "http.uri",
        ),
        (
            &[("http.uri", "not a uri"), ("http.method", "GET")],
            "http.uri",
        ),
        (
            &[("http.uri", "http://h/"), ("http.method", "GE T")],
            "http.method",
        ),
        (
            &[
                ("http.uri", "http://h/"),
                ("http.method", "GET"),
                ("http.connect.timeout.milliseconds", "soon"),
            ],
            "http.connect.timeout.milliseconds",
        ),
        (
            &[
                ("http.uri", "http://h/"),
                ("http.method", "GET"),
                ("http.read.timeout.milliseconds", "0"),
            ],
            "http.read.timeout.milliseconds",
        ),
        (
            &[
                ("http.uri", "http://h/"),
                ("http.method", "GET"),
                ("http.content.type", "text/plain; x=\u{1}"),
            ],
            "http.content.type",
        ),
    ];
    for (pairs, key) in table {
        let err = HttpJob::from_props(&props(pairs)).unwrap_err();
        assert!(
            err.to_string().contains(&format!("{key:?}")),
            "{pairs:?}: {err}"
        );
        assert!(!matches!(err, HttpJobError::BuildClient { .. }));
    }
}

#[test]
fn https_uris_are_accepted_and_the_defaults_are_elasticjobs() {
    let job = HttpJob::from_props(&props(&[
        ("http.uri", "https://example.com/hook"),
        ("http.method", "post"),
    ]))
    .unwrap();
    assert_eq!(job.url().scheme(), "https");
    assert_eq!(job.connect_timeout(), Duration::from_millis(3000));
    assert_eq!(job.read_timeout(), Duration::from_millis(5000));
}

#[tokio::test]
async fn an_endless_body_is_read_only_up_to_its_cap() {
    tracing::info!("--- a 200 whose body never ends: the item succeeds, the rest is left unread");
    let (addr, mut seen) = server(Answer::Endless(200)).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/endless")),
        ("http.method", "GET"),
    ]))
    .unwrap();
    run(&job, context(0)).await.expect("a 200 succeeds");
    assert!(matches!(next(&mut seen).await, Seen::Request(_)));
    assert!(
        matches!(next(&mut seen).await, Seen::ClientClosed),
        "the job closed the connection instead of reading on"
    );

    tracing::info!("--- a 500 whose body never ends fails with the start of it");
    let (addr, _seen) = server(Answer::Endless(500)).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/endless")),
        ("http.method", "GET"),
    ]))
    .unwrap();
    let err = run(&job, context(0)).await.unwrap_err().to_string();
    assert!(err.contains("500") && err.contains("xxxx"), "{err}");
}

#[tokio::test]
async fn a_body_that_trickles_forever_hits_the_total_timeout() {
    // One byte every 100 ms never trips the read timeout; the total timeout ends it.
    let (addr, mut seen) = server(Answer::Trickle).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/slow")),
        ("http.method", "GET"),
        ("shardcron.http.timeout.milliseconds", "1000"),
    ]))
    .unwrap();
    let err = run(&job, context(0)).await.unwrap_err().to_string();
    assert!(err.contains("total timeout of 1000 ms"), "{err}");
    assert!(matches!(next(&mut seen).await, Seen::Request(_)));
    assert!(matches!(next(&mut seen).await, Seen::ClientClosed));
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed_and_its_token_is_not_shown() {
    tracing::info!("--- 127.0.0.1 redirects to localhost, another host by name");
    let (other, mut other_seen) = server(Answer::Status(200, "ok")).await;
    let location: &'static str = Box::leak(
        format!("http://localhost:{}/stolen?token=s3cr3t", other.port()).into_boxed_str(),
    );
    let (addr, _seen) = server(Answer::Redirect(location)).await;
    let job = HttpJob::from_props(&props(&[
        (
            "http.uri",
            &format!("http://{addr}/start?access_token=t0k3n"),
        ),
        ("http.method", "GET"),
    ]))
    .unwrap();
    let err = run(&job, context(0)).await.unwrap_err().to_string();
    assert!(err.contains("another host"), "{err}");
    assert!(!err.contains("s3cr3t") && !err.contains("t0k3n"), "{err}");
    assert!(
        other_seen.try_recv().is_err(),
        "the other host got no request"
    );

    tracing::info!("--- with any-host the redirect is followed, without a Referer");
    let job = HttpJob::from_props(&props(&[
        (
            "http.uri",
            &format!("http://{addr}/start?access_token=t0k3n"),
        ),
        ("http.method", "GET"),
        ("shardcron.http.redirect", "any-host"),
    ]))
    .unwrap();
    run(&job, context(0))
        .await
        .expect("the redirect is followed");
    let Seen::Request(request) = next(&mut other_seen).await else {
        panic!("a request first");
    };
    assert_eq!(request.target, "/stolen?token=s3cr3t");
    assert!(!request.headers.contains_key("referer"), "{request:?}");
}

#[tokio::test]
async fn a_redirect_to_the_same_host_is_followed_without_a_referer() {
    let (target, mut target_seen) = server(Answer::Status(200, "ok")).await;
    let location: &'static str =
        Box::leak(format!("http://127.0.0.1:{}/moved", target.port()).into_boxed_str());
    let (addr, _seen) = server(Answer::Redirect(location)).await;
    let job = HttpJob::from_props(&props(&[
        ("http.uri", &format!("http://{addr}/start")),
        ("http.method", "GET"),
    ]))
    .unwrap();
    run(&job, context(0))
        .await
        .expect("the redirect is followed");
    let Seen::Request(request) = next(&mut target_seen).await else {
        panic!("a request first");
    };
    assert_eq!(request.target, "/moved");
    assert!(!request.headers.contains_key("referer"), "{request:?}");
}
