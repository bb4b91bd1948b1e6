use std::sync::Mutex;

use chrono::{TimeZone, Utc};

use super::*;
use crate::job::{ExecutionSource, JobError};
use crate::types::{InstanceId, JobName, ShardItem};

fn job() -> JobName {
    JobName::new("orders").unwrap()
}

fn info() -> RunInfo {
    RunInfo {
        job_name: job(),
        task_id: "orders@-@0,1@-@NORMAL@-@192.0.2.1@-@1@-@7".into(),
        items: vec![ShardItem(0), ShardItem(1)],
        source: ExecutionSource::Normal,
        instance_id: InstanceId::parse("192.0.2.1@-@1").unwrap(),
    }
}

fn outcome() -> RunOutcome {
    let at = Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap();
    RunOutcome {
        results: vec![
            (ShardItem(0), Ok(())),
            (ShardItem(1), Err(JobError::failed("disk full"))),
        ],
        started_at: at,
        finished_at: at,
    }
}

/// Records the hooks it sees, and panics in the hooks it is told to.
#[derive(Debug, Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    panic_before: bool,
}

impl JobListener for Recorder {
    fn before_run(&self, info: &RunInfo) {
        if self.panic_before {
            panic!("listener bug in {}", info.job_name);
        }
        self.seen
            .lock()
            .unwrap()
            .push(format!("before {}", info.task_id));
    }
    fn after_run(&self, _info: &RunInfo, outcome: &RunOutcome) {
        let failed: Vec<_> = outcome.failures().map(|(item, _)| item.get()).collect();
        self.seen
            .lock()
            .unwrap()
            .push(format!("after failed={failed:?}"));
    }
}

#[derive(Debug)]
struct Panicking;

impl ErrorHandler for Panicking {
    fn handle(&self, _job: &JobName, _item: Option<ShardItem>, _error: &JobError) -> ErrorAction {
        panic!("handler bug")
    }
}

#[test]
fn built_in_error_handlers_resolve_by_name_and_return_their_action() {
    let registry = HandlerRegistry::new();
    let error = JobError::failed("boom");
    let table = [
        (Some("LOG"), "LogErrorHandler", ErrorAction::Continue),
        (Some("IGNORE"), "IgnoreErrorHandler", ErrorAction::Continue),
        (Some("THROW"), "ThrowErrorHandler", ErrorAction::Escalate),
        (None, "LogErrorHandler", ErrorAction::Continue),
        (Some(""), "LogErrorHandler", ErrorAction::Continue),
    ];
    for (name, handler_type, action) in table {
        let handler = registry.error_handler(name).unwrap();
        assert_eq!(format!("{handler:?}"), handler_type, "{name:?}");
        assert_eq!(handler.handle(&job(), Some(ShardItem(1)), &error), action);
        assert_eq!(handler.handle(&job(), None, &error), action, "{name:?}");
    }
    assert_eq!(
        registry.error_handler_names(),
        ["DINGTALK", "EMAIL", "IGNORE", "LOG", "THROW", "WEBHOOK", "WECHAT"]
    );
    assert!(registry.listener_names().is_empty());
}

#[test]
fn unknown_handler_and_listener_names_are_refused_with_the_name() {
    let mut registry = HandlerRegistry::new();
    registry
        .register_listener("audit", Arc::new(Recorder::default()))
        .unwrap();
    let err = registry.error_handler(Some("PAGER")).unwrap_err();
    assert_eq!(
        err,
        HandlerError::ResolveErrorHandler {
            name: "PAGER".into(),
            known: registry.error_handler_names(),
        }
    );
    assert!(err.to_string().contains("\"PAGER\""), "{err}");
    let err = registry
        .listeners(&["audit".into(), "metrics".into()])
        .unwrap_err();
    assert_eq!(
        err,
        HandlerError::ResolveListener {
            name: "metrics".into(),
            known: vec!["audit".into()],
        }
    );
}

#[test]
fn user_handlers_are_registered_by_name_and_taken_names_are_refused() {
    let mut registry = HandlerRegistry::new();
    registry
        .register_error_handler("PANICKY", Arc::new(Panicking))
        .unwrap();
    assert_eq!(
        registry.register_error_handler("LOG", Arc::new(Panicking)),
        Err(HandlerError::RegisterErrorHandler { name: "LOG".into() })
    );
    registry
        .register_listener("audit", Arc::new(Recorder::default()))
        .unwrap();
    assert_eq!(
        registry.register_listener("audit", Arc::new(Recorder::default())),
        Err(HandlerError::RegisterListener {
            name: "audit".into()
        })
    );
    assert!(registry.error_handler(Some("PANICKY")).is_ok());
    let listeners = registry.listeners(&["audit".into()]).unwrap();
    assert_eq!(listeners.names().collect::<Vec<_>>(), ["audit"]);
}

#[test]
fn a_panicking_listener_is_contained_and_the_others_still_run() {
    let bad = Arc::new(Recorder {
        panic_before: true,
        ..Recorder::default()
    });
    let good = Arc::new(Recorder::default());
    let listeners = Listeners::new(vec![
        ("bad".into(), bad.clone() as Arc<dyn JobListener>),
        ("good".into(), good.clone() as Arc<dyn JobListener>),
    ]);

    let panics = listeners.before_run(&info());
    assert_eq!(
        panics,
        [ListenerPanic {
            listener: "bad".into(),
            hook: Hook::BeforeRun,
            message: "listener bug in orders".into(),
        }]
    );
    assert!(listeners.after_run(&info(), &outcome()).is_empty());
    assert_eq!(
        *good.seen.lock().unwrap(),
        [
            "before orders@-@0,1@-@NORMAL@-@192.0.2.1@-@1@-@7",
            "after failed=[1]"
        ]
    );
    assert_eq!(*bad.seen.lock().unwrap(), ["after failed=[1]"]);
}

#[test]
fn a_panicking_error_handler_escalates_the_failure() {
    let action = handle_contained(&Panicking, &job(), None, &JobError::failed("boom"));
    assert_eq!(action, ErrorAction::Escalate);
    let action = handle_contained(&IgnoreErrorHandler, &job(), None, &JobError::failed("x"));
    assert_eq!(action, ErrorAction::Continue);
}

#[test]
fn run_outcome_reports_success_only_when_every_item_succeeded() {
    let mut outcome = outcome();
    assert!(!outcome.is_success());
    outcome.results.retain(|(_, r)| r.is_ok());
    assert!(outcome.is_success());
}
