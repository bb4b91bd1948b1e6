//! The status rules as tables over hand-built snapshots, and each operation's writes on the
//! embedded registry (the cluster's reaction is tested on ZooKeeper in `tests/ctl.rs`).

use std::sync::Arc;

use super::report::{job_detail, job_status, server_briefs};
use super::snapshot::JobSnapshot;
use super::*;
use crate::config::JobConfig;
use crate::registry::embedded::EmbeddedServer;
use crate::registry::{CreateMode, Registry};
use crate::types::{InstanceId, ShardItem};
use crate::view::{ItemView, ServerStatus};

fn id(n: u32) -> InstanceId {
    InstanceId::parse(format!("10.0.0.{n}@-@{n}")).unwrap()
}

fn job() -> JobName {
    JobName::new("orders").unwrap()
}

fn snapshot(instances: &[u32], servers: &[(u32, ServerStatus)], necessary: bool) -> JobSnapshot {
    let mut snap = JobSnapshot {
        job: Some(job()),
        config_yaml: Some(JobConfig::new("orders", 3).to_yaml().unwrap()),
        config_version: Some(0),
        ..JobSnapshot::default()
    };
    snap.view.instances = instances.iter().map(|n| id(*n)).collect();
    snap.view.servers = servers
        .iter()
        .map(|(n, s)| (format!("10.0.0.{n}"), *s))
        .collect();
    snap.view.sharding_necessary = necessary;
    snap
}

#[test]
fn job_status_follows_elasticjob_precedence() {
    use ServerStatus::{Disabled as Off, Enabled as On};
    let cases = [
        (snapshot(&[], &[(1, On)], true), JobStatus::Crashed),
        (snapshot(&[1], &[(1, Off)], true), JobStatus::Disabled),
        (
            snapshot(&[1], &[(1, Off), (2, On)], true),
            JobStatus::ShardingFlag,
        ),
        (snapshot(&[1], &[(1, Off), (2, On)], false), JobStatus::Ok),
        (snapshot(&[1], &[], false), JobStatus::Ok),
    ];
    for (i, (snap, expected)) in cases.iter().enumerate() {
        assert_eq!(job_status(snap), *expected, "case {i}");
    }
}

#[test]
fn item_status_is_disabled_then_running_then_sharding_flag_then_pending() {
    let mut snap = snapshot(&[1], &[], false);
    let owned = |o: u32| ItemView {
        owner: Some(id(o)),
        has_owner_node: true,
        ..ItemView::default()
    };
    snap.view.items = [
        (
            ShardItem(0),
            ItemView {
                disabled: true,
                running: Some(id(1).to_string()),
                ..owned(1)
            },
        ),
        (
            ShardItem(1),
            ItemView {
                running: Some(id(1).to_string()),
                misfire: true,
                ..owned(1)
            },
        ),
        (ShardItem(2), owned(2)),
        (ShardItem(4), owned(1)),
    ]
    .into();
    let detail = job_detail(&job(), &snap);
    let statuses: Vec<(u32, ItemStatus, bool)> = detail
        .items
        .iter()
        .map(|l| (l.item.0, l.status, l.misfire))
        .collect();
    assert_eq!(
        statuses,
        [
            (0, ItemStatus::Disabled, false),
            (1, ItemStatus::Running, true),
            // Owned by an instance that is gone.
            (2, ItemStatus::ShardingFlag, false),
            (4, ItemStatus::Pending, false),
        ]
    );
}

#[test]
fn servers_gather_instances_and_jobs_per_ip_and_count_disabled_ones() {
    use ServerStatus::{Disabled as Off, Enabled as On};
    let orders = snapshot(&[1, 2], &[(1, Off), (2, On)], false);
    let other = JobName::new("billing").unwrap();
    let billing = snapshot(&[1], &[(1, Off)], false);
    let briefs = server_briefs([(&job(), &orders), (&other, &billing)]);
    assert_eq!(briefs.len(), 2);
    assert_eq!(briefs[0].ip, "10.0.0.1");
    assert_eq!(briefs[0].instances, [id(1)]);
    assert_eq!(briefs[0].jobs, [other, job()]);
    assert_eq!(briefs[0].disabled_jobs, 2);
    assert_eq!(briefs[1].disabled_jobs, 0);
}

/// Creates `nodes` (path, data, mode) in order.
async fn create_all(session: &dyn Registry, nodes: &[(&str, &[u8], CreateMode)]) {
    for (path, data, mode) in nodes {
        session.create(path, data, *mode).await.unwrap();
    }
}

pub(super) async fn seeded(root: &[u8]) -> (Ops, Arc<dyn Registry>) {
    let session: Arc<dyn Registry> = Arc::new(EmbeddedServer::new().connector("ops").open());
    let yaml = JobConfig::new("orders", 3)
        .cron("0/5 * * * * ?")
        .to_yaml()
        .unwrap();
    let instance = format!("/orders/instances/{}", id(1));
    let nodes: [(&str, &[u8], CreateMode); 6] = [
        ("/orders", root, CreateMode::Persistent),
        ("/orders/config", yaml.as_bytes(), CreateMode::Persistent),
        ("/orders/instances", b"", CreateMode::Persistent),
        (&instance, b"", CreateMode::Ephemeral),
        ("/orders/servers", b"", CreateMode::Persistent),
        (
            "/orders/servers/10.0.0.1",
            b"ENABLED",
            CreateMode::Persistent,
        ),
    ];
    create_all(&*session, &nodes).await;
    (Ops::new(session.clone()), session)
}

#[tokio::test]
async fn a_config_naming_bad_fields_is_refused_and_nothing_is_written() {
    let (ops, session) = seeded(b"SCRIPT").await;
    let before = session.get("/orders/config").await.unwrap();
    let err = ops
        .config_set(
            &job(),
            "jobName: other\nshardingTotalCount: 0\ncron: nope\n",
        )
        .await
        .unwrap_err();
    let OpsError::InvalidConfig { source, .. } = &err else {
        panic!("expected InvalidConfig, got {err:?}");
    };
    assert_eq!(
        source.fields(),
        [
            "shardingTotalCount",
            "cron",
            "props.script.command.line",
            "jobName"
        ]
    );
    assert_eq!(err.class(), ErrorClass::BadInput);
    assert_eq!(session.get("/orders/config").await.unwrap(), before);
}

#[tokio::test]
async fn a_config_set_in_utc_or_a_bare_offset_is_stored_in_javas_spelling() {
    let (ops, _session) = seeded(b"recorded").await;
    for (written, stored) in [("UTC", "GMT"), ("'+08:00'", "GMT+08:00"), ("Z", "GMT")] {
        let yaml = format!("jobName: orders\nshardingTotalCount: 2\ntimeZone: {written}\n");
        ops.config_set(&job(), &yaml).await.unwrap();
        let read = ops.config_get(&job()).await.unwrap();
        let config = JobConfig::from_yaml(&read.yaml).unwrap();
        assert_eq!(config.time_zone.as_deref(), Some(stored), "{written}");
    }
    let err = ops
        .config_set(
            &job(),
            "jobName: orders\nshardingTotalCount: 2\ntimeZone: Europe/Berlin\n",
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timeZone") || format!("{err:?}").contains("timeZone"));
}

#[tokio::test]
async fn a_config_set_at_a_stale_version_is_refused_as_changed_meanwhile() {
    let (ops, _session) = seeded(b"recorded").await;
    let read = ops.config_get(&job()).await.unwrap();
    let yaml = JobConfig::new("orders", 4).to_yaml().unwrap();
    let v = ops
        .config_set_at(&job(), &yaml, read.version)
        .await
        .unwrap();
    assert_eq!(v, read.version + 1);
    let err = ops
        .config_set_at(&job(), &yaml, read.version)
        .await
        .unwrap_err();
    assert!(matches!(err, OpsError::ConfigChanged { .. }), "{err:?}");
    assert_eq!(err.class(), ErrorClass::Refused);
}

#[tokio::test]
async fn operations_on_unknown_things_name_them() {
    let (ops, _session) = seeded(b"recorded").await;
    let missing = JobName::new("missing").unwrap();
    assert!(matches!(
        ops.job(&missing).await,
        Err(OpsError::UnknownJob { .. })
    ));
    assert!(matches!(
        ops.disable(&job(), Target::Server("10.9.9.9".into())).await,
        Err(OpsError::UnknownServer { .. })
    ));
    assert!(matches!(
        ops.disable(&job(), Target::Item(ShardItem(3))).await,
        Err(OpsError::UnknownItem { total: 3, .. })
    ));
    assert!(matches!(
        ops.shutdown(&job(), ShutdownScope::Instance(id(7))).await,
        Err(OpsError::UnknownInstance { .. })
    ));
}

#[tokio::test]
async fn writes_land_on_the_layout_nodes() {
    let (ops, session) = seeded(b"recorded").await;
    assert_eq!(ops.trigger(&job()).await.unwrap(), [id(1)]);
    assert!(session
        .exists(&format!("/orders/trigger/{}", id(1)))
        .await
        .unwrap()
        .is_some());
    ops.disable(&job(), Target::AllServers).await.unwrap();
    let (data, _) = session.get("/orders/servers/10.0.0.1").await.unwrap();
    assert_eq!(data, b"DISABLED");
    assert_eq!(ops.jobs().await.unwrap()[0].status, JobStatus::Disabled);
    ops.disable(&job(), Target::Item(ShardItem(2)))
        .await
        .unwrap();
    let detail = ops.job(&job()).await.unwrap();
    assert_eq!(detail.items[2].status, ItemStatus::Disabled);
    ops.enable(&job(), Target::Item(ShardItem(2)))
        .await
        .unwrap();
    assert!(session
        .exists("/orders/sharding/2/disabled")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn remove_is_refused_while_an_instance_runs_the_job_unless_forced() {
    let (ops, session) = seeded(b"recorded").await;
    let err = ops
        .remove(&job(), RemoveMode::RefuseWhileRunning)
        .await
        .unwrap_err();
    assert!(matches!(err, OpsError::StillRunning { .. }), "{err:?}");
    assert!(session.exists("/orders").await.unwrap().is_some());
    let stopped = ops.remove(&job(), RemoveMode::Force).await.unwrap();
    assert_eq!(stopped, [id(1)]);
    assert!(session.exists("/orders").await.unwrap().is_none());
    assert!(ops.jobs().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_config_larger_than_a_zookeeper_node_is_refused_before_writing() {
    let (ops, session) = seeded(b"recorded").await;
    let before = ops.config_get(&job()).await.unwrap();
    let huge = format!(
        "jobName: orders\nshardingTotalCount: 3\ndescription: {}\n",
        "x".repeat(MAX_CONFIG_BYTES)
    );
    let err = ops.config_set(&job(), &huge).await.unwrap_err();
    assert!(matches!(err, OpsError::ConfigTooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("1 MiB"), "{err}");
    assert_eq!(err.class(), ErrorClass::BadInput);
    let (_, stat) = session.get("/orders/config").await.unwrap();
    assert_eq!(stat.version, before.version, "nothing written");
}

#[tokio::test]
async fn a_config_whose_job_name_differs_from_its_path_is_refused() {
    let (ops, _session) = seeded(b"recorded").await;
    let yaml = JobConfig::new("billing", 3).to_yaml().unwrap();
    let err = ops.config_set(&job(), &yaml).await.unwrap_err();
    assert!(err.to_string().contains("jobName"), "{err}");
    assert_eq!(err.class(), ErrorClass::BadInput);
}

#[test]
fn a_config_version_too_large_is_out_of_range_not_a_bad_number() {
    let err = parse_config_version("99999999999").unwrap_err();
    assert!(err.contains("out of range"), "{err}");
    assert!(parse_config_version("-1")
        .unwrap_err()
        .contains("out of range"));
    assert!(parse_config_version("v2")
        .unwrap_err()
        .contains("whole number"));
    assert_eq!(parse_config_version("2147483647"), Ok(i32::MAX));
}

#[tokio::test]
async fn every_root_is_listed_and_roots_that_are_not_jobs_say_why() {
    let (ops, session) = seeded(b"recorded").await;
    let yaml = JobConfig::new("orders:eu#1", 1).to_yaml().unwrap();
    let nodes: [(&str, &[u8], CreateMode); 4] = [
        ("/my job", b"", CreateMode::Persistent),
        ("/orders:eu#1", b"", CreateMode::Persistent),
        (
            "/orders:eu#1/config",
            yaml.as_bytes(),
            CreateMode::Persistent,
        ),
        ("/zookeeper", b"", CreateMode::Persistent),
    ];
    create_all(&*session, &nodes).await;
    let (jobs, not_jobs) = ops.job_roots().await.unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j.job_name.as_str()).collect();
    assert_eq!(names, ["orders", "orders:eu#1"]);
    let roots: Vec<(&str, bool)> = not_jobs
        .iter()
        .map(|n| (n.root.as_str(), n.reason.contains("config")))
        .collect();
    assert_eq!(roots, [("my job", true), ("zookeeper", false)]);
    assert_eq!(quote_name("my job"), "\"my job\"");
    assert_eq!(quote_name("orders"), "orders");
}

#[tokio::test]
async fn reading_a_mirror_reports_what_listing_the_registry_reports() {
    let session: Arc<dyn Registry> = Arc::new(EmbeddedServer::new().connector("ops").open());
    let yaml = JobConfig::new("orders", 3).to_yaml().unwrap();
    let instance = format!("/orders/instances/{}", id(1));
    let owner = id(1);
    let nodes: [(&str, &[u8], CreateMode); 10] = [
        ("/orders", b"SCRIPT", CreateMode::Persistent),
        ("/orders/config", yaml.as_bytes(), CreateMode::Persistent),
        ("/orders/servers", b"", CreateMode::Persistent),
        ("/orders/instances", b"", CreateMode::Persistent),
        ("/orders/sharding", b"", CreateMode::Persistent),
        ("/orders/sharding/1", b"", CreateMode::Persistent),
        (
            "/orders/servers/10.0.0.1",
            b"DISABLED",
            CreateMode::Persistent,
        ),
        (&instance, b"", CreateMode::Persistent),
        (
            "/orders/sharding/1/instance",
            owner.as_str().as_bytes(),
            CreateMode::Persistent,
        ),
        ("/not-a-job", b"", CreateMode::Persistent),
    ];
    create_all(&*session, &nodes).await;
    let mirror = crate::registry::mirror::Mirror::new();
    let _feed = mirror.feed(Arc::clone(&session), "/").await.unwrap();
    let listing = Ops::new(Arc::clone(&session));
    let mirrored = Ops::new(Arc::clone(&session)).reading(mirror);
    assert_eq!(
        mirrored.job(&job()).await.unwrap(),
        listing.job(&job()).await.unwrap()
    );
    assert_eq!(
        mirrored.job_roots().await.unwrap(),
        listing.job_roots().await.unwrap()
    );
    assert_eq!(
        mirrored.servers().await.unwrap(),
        listing.servers().await.unwrap()
    );
    assert_eq!(
        mirrored.config_get(&job()).await.unwrap(),
        listing.config_get(&job()).await.unwrap()
    );
    let unknown = JobName::new("nope").unwrap();
    assert!(matches!(
        mirrored.job(&unknown).await,
        Err(OpsError::UnknownJob { .. })
    ));
}
