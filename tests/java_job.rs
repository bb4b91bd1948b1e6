//! Jobs shared with Java ElasticJob instances, on the embedded registry: the job root names the
//! Java class when a job declares it, another type is refused with how to declare it, and a config
//! a Java 3.0.x instance could not load is never written.

use support::cluster;

use std::sync::Arc;
use std::time::Duration;

use cluster::{instance, origin, Recorder};
use shardcron::clock::TokioClock;
use shardcron::config::JobConfig;
use shardcron::node::NodeBuilder;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::Connector;
use shardcron::{JobSpec, JobType};

fn builder(conn: Arc<dyn Connector>, n: u32) -> NodeBuilder {
    NodeBuilder::new(conn)
        .instance_id(instance(n))
        .clock(Arc::new(TokioClock::starting_at(origin())))
}

/// A spec of `config` named for its job, whose runs `rec` records.
fn recorded(config: JobConfig, rec: &Recorder) -> JobSpec {
    JobSpec {
        job_type: JobType::Named(config.job_name.clone()),
        config: Arc::new(config),
        handler: rec.handler(Duration::ZERO),
    }
}

fn orders() -> JobConfig {
    JobConfig::new("orders", 2)
        .cron("0/2 * * * * ?")
        .time_zone("GMT+08:00")
}

#[tokio::test(start_paused = true)]
async fn a_declared_java_job_shares_the_root_and_another_type_is_told_how_to_declare_it() {
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("java"));
    let rec = Recorder::default();
    tracing::info!("--- a node runs `orders` as the Java job com.acme.OrdersJob");
    let java_like = builder(conn.clone(), 1).start().await.unwrap();
    java_like
        .add_job(recorded(orders(), &rec).shared_with_java("com.acme.OrdersJob"))
        .await
        .expect("the first node registers the job");
    let admin = conn.connect().await.unwrap();
    let (root, _) = admin.get("/orders").await.unwrap();
    assert_eq!(&*root, b"com.acme.OrdersJob".as_slice());

    tracing::info!("--- a node that does not declare the class is refused, with the fix");
    let plain = builder(conn.clone(), 2).start().await.unwrap();
    let refused = plain
        .add_job(recorded(orders(), &rec))
        .await
        .expect_err("another type is refused");
    let message = refused.to_string();
    assert!(
        message.contains("\"com.acme.OrdersJob\"")
            && message.contains("javaClass: com.acme.OrdersJob")
            && message.contains("shared_with_java"),
        "{message}"
    );

    plain.shutdown().await;

    tracing::info!("--- a node declaring the class joins the job (NodeBuilder::java_job)");
    let declared = builder(conn.clone(), 3)
        .java_job(orders(), "com.acme.OrdersJob", rec.handler(Duration::ZERO))
        .start()
        .await
        .expect("the declared job's node starts");
    rec.wait_until(
        "a run on the node that declared the class",
        Duration::from_secs(60),
        |log| log.iter().any(|e| e.instance == instance(3)),
    )
    .await;
    declared.shutdown().await;
    java_like.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_config_a_java_instance_cannot_load_is_refused_unless_the_job_is_shardcron_only() {
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("zones"));
    let rec = Recorder::default();
    let node = builder(conn.clone(), 1).start().await.unwrap();
    let iana = |name: &str| {
        JobConfig::new(name, 2)
            .cron("0/2 * * * * ?")
            .time_zone("Asia/Shanghai")
    };
    let refused = node
        .add_job(recorded(iana("berlin"), &rec))
        .await
        .expect_err("an IANA zone is not written for Java to choke on");
    let message = refused.to_string();
    assert!(
        message.contains("timeZone") && message.contains("shardcron.only"),
        "{message}"
    );
    let admin = conn.connect().await.unwrap();
    assert!(admin.exists("/berlin/config").await.unwrap().is_none());

    node.add_job(recorded(
        iana("shanghai").prop("shardcron.only", "true"),
        &rec,
    ))
    .await
    .expect("a shardcron-only job may use an IANA zone");
    let (config, _) = admin.get("/shanghai/config").await.unwrap();
    let text = String::from_utf8_lossy(&config);
    assert!(text.contains("timeZone: Asia/Shanghai"), "{text}");
    node.shutdown().await;
}
