//! `create` and the removal of a job created at runtime, on the embedded registry (adopting nodes
//! are tested as processes on ZooKeeper in `tests/adopt.rs`).

use std::sync::Arc;

use super::*;
use crate::config::JobConfig;
use crate::decide::adopt::RuntimeType;
use crate::ops::RemoveMode;
use crate::paths::JobNode;
use crate::registry::embedded::EmbeddedServer;
use crate::registry::{CreateMode, Registry};

fn ops() -> (Ops, Arc<dyn Registry>) {
    let session: Arc<dyn Registry> = Arc::new(EmbeddedServer::new().connector("ops").open());
    (Ops::new(session.clone()), session)
}

fn form(name: &str) -> JobForm {
    JobForm {
        job_name: name.into(),
        job_type: "script".into(),
        cron: "0/5 * * * * ?".into(),
        items: 2,
        command: Some("/bin/echo hi".into()),
        ..JobForm::default()
    }
}

fn job(name: &str) -> JobName {
    JobName::new(name).unwrap()
}

async fn data(session: &Arc<dyn Registry>, node: JobNode, name: &str) -> Option<String> {
    let got = session.get(&node.to_path(&job(name))).await.ok()?;
    Some(String::from_utf8_lossy(&got.0).into_owned())
}

#[tokio::test]
async fn create_writes_the_type_a_java_readable_config_and_the_adoptable_record() {
    let (ops, session) = ops();
    let mut f = form("nightly");
    f.time_zone = Some("UTC".into());
    ops.create(f.to_new_job().unwrap()).await.unwrap();
    assert_eq!(
        data(&session, JobNode::Root, "nightly").await.as_deref(),
        Some("SCRIPT")
    );
    assert_eq!(
        data(&session, JobNode::Adoptable, "nightly")
            .await
            .as_deref(),
        Some("created")
    );
    let yaml = data(&session, JobNode::Config, "nightly").await.unwrap();
    let config = JobConfig::from_yaml(&yaml).unwrap();
    assert_eq!(config.props["script.command.line"], "/bin/echo hi");
    assert_eq!(config.time_zone.as_deref(), Some("GMT"), "Java's spelling");
    config.check_java_readable().unwrap();
    let http = JobForm {
        job_type: "HTTP".into(),
        command: None,
        url: Some("http://127.0.0.1:9/ping".into()),
        ..form("ping")
    };
    ops.create(http.to_new_job().unwrap()).await.unwrap();
    let yaml = data(&session, JobNode::Config, "ping").await.unwrap();
    let config = JobConfig::from_yaml(&yaml).unwrap();
    assert_eq!(config.props["http.uri"], "http://127.0.0.1:9/ping");
    assert_eq!(config.props["http.method"], "GET");
    assert_eq!(
        data(&session, JobNode::Root, "ping").await.as_deref(),
        Some("HTTP")
    );
}

#[tokio::test]
async fn create_refuses_an_existing_name_a_bad_cron_and_bad_fields_naming_them() {
    let (ops, session) = ops();
    session
        .create("/orders", b"com.acme.OrdersJob", CreateMode::Persistent)
        .await
        .unwrap();
    let exists = ops.create(form("orders").to_new_job().unwrap()).await;
    assert!(
        matches!(exists, Err(OpsError::JobExists { .. })),
        "{exists:?}"
    );
    let cases: Vec<(JobForm, &str)> = vec![
        (
            JobForm {
                cron: "0 0 25 * * ?".into(),
                ..form("a")
            },
            "cron:",
        ),
        (
            JobForm {
                items: 0,
                ..form("b")
            },
            "shardingTotalCount:",
        ),
        (
            JobForm {
                command: None,
                ..form("c")
            },
            "props.script.command.line:",
        ),
        (
            JobForm {
                time_zone: Some("Asia/Shanghai".into()),
                ..form("d")
            },
            "timeZone:",
        ),
        (
            JobForm {
                job_type: "HTTP".into(),
                command: None,
                url: Some("ftp://x".into()),
                ..form("e")
            },
            "props.http.uri:",
        ),
    ];
    for (f, field) in cases {
        let name = f.job_name.clone();
        let err = ops.create(f.to_new_job().unwrap()).await.unwrap_err();
        assert!(
            matches!(err, OpsError::InvalidConfig { .. }) && err.to_string().contains(field),
            "{name}: {err}"
        );
        assert_eq!(data(&session, JobNode::Root, &name).await, None, "{name}");
    }
    let form_cases: Vec<(JobForm, &str)> = vec![
        (
            JobForm {
                job_type: "ftp".into(),
                ..form("f")
            },
            "type:",
        ),
        (
            JobForm {
                url: Some("http://x/".into()),
                ..form("g")
            },
            "url:",
        ),
        (form("bad/name"), "jobName:"),
    ];
    for (f, field) in form_cases {
        let err = match f.to_new_job() {
            Err(e) => e,
            Ok(new) => ops.create(new).await.unwrap_err(),
        };
        assert!(
            matches!(err, OpsError::BadNewJob { .. }) && err.to_string().contains(field),
            "{}: {err}",
            f.job_name
        );
    }
}

#[tokio::test]
async fn removing_a_job_created_at_runtime_that_no_instance_runs_cleans_its_subtree() {
    let (ops, session) = ops();
    ops.create(form("nightly").to_new_job().unwrap())
        .await
        .unwrap();
    let stopped = ops
        .remove(&job("nightly"), RemoveMode::RefuseWhileRunning)
        .await
        .unwrap();
    assert!(stopped.is_empty());
    assert!(session.exists("/nightly").await.unwrap().is_none());
}

#[tokio::test(start_paused = true)]
async fn an_instance_that_does_not_adopt_the_job_keeps_todays_refusal_and_the_record() {
    let (ops, session) = ops();
    ops.create(form("nightly").to_new_job().unwrap())
        .await
        .unwrap();
    let j = job("nightly");
    let instance = crate::types::InstanceId::parse("10.0.0.1@-@1").unwrap();
    session
        .ensure_path(&JobNode::Instances.to_path(&j))
        .await
        .unwrap();
    session
        .create(
            &JobNode::Instance(instance.clone()).to_path(&j),
            b"",
            CreateMode::Ephemeral,
        )
        .await
        .unwrap();
    let err = ops
        .remove(&j, RemoveMode::RefuseWhileRunning)
        .await
        .unwrap_err();
    match err {
        OpsError::StillRunning { instances, .. } => assert_eq!(instances, vec![instance]),
        other => panic!("{other}"),
    }
    assert_eq!(
        data(&session, JobNode::Adoptable, "nightly")
            .await
            .as_deref(),
        Some("created"),
        "set back, so the adopters run it again"
    );
    ops.remove(&j, RemoveMode::Force).await.unwrap();
    assert!(session.exists("/nightly").await.unwrap().is_none());
}

#[test]
fn a_script_form_takes_the_optional_fields_under_elasticjobs_names() {
    let f = JobForm {
        item_parameters: Some("0=a,1=b".into()),
        job_parameter: Some("p".into()),
        label: Some("gpu".into()),
        description: Some("d".into()),
        failover: true,
        props: [("shardcron.timeout".to_owned(), "30s".to_owned())].into(),
        ..form("x")
    };
    let new = f.to_new_job().unwrap();
    assert_eq!(new.job_type, RuntimeType::Script);
    let c = new.config;
    assert_eq!(
        (
            c.sharding_item_parameters.as_deref(),
            c.job_parameter.as_deref(),
            c.label.as_deref(),
            c.failover
        ),
        (Some("0=a,1=b"), Some("p"), Some("gpu"), true)
    );
    assert_eq!(c.props["shardcron.timeout"], "30s");
}
