//! Triggers with parameters and backfills on the embedded registry: what they write, and what
//! they refuse (the cluster's reaction is tested on ZooKeeper in `tests/catch_up_and_triggers.rs`).

use chrono::{DateTime, Duration, DurationRound, Utc};

use super::tests::seeded;
use super::*;
use crate::decide::backfill::Request;
use crate::decide::trigger_params::TriggerParams;
use crate::types::InstanceId;

fn job() -> JobName {
    JobName::new("orders").unwrap()
}

fn params_path() -> String {
    let me = InstanceId::parse("10.0.0.1@-@1").unwrap();
    format!("/orders/shardcron/trigger/{me}")
}

#[tokio::test]
async fn a_trigger_with_parameters_writes_them_beside_the_plain_trigger_and_a_plain_one_clears_them(
) {
    let (ops, session) = seeded(b"recorded").await;
    let params = TriggerParams {
        job_parameter: Some("date=2026-11-25".into()),
        items: Some([0, 2].into()),
        workflow_run: None,
    };
    ops.trigger_with(&job(), &params).await.unwrap();
    let (data, _) = session.get(&params_path()).await.unwrap();
    assert_eq!(TriggerParams::parse(&data), Ok(params));
    assert!(session
        .exists("/orders/trigger/10.0.0.1@-@1")
        .await
        .unwrap()
        .is_some());
    // A Java instance never takes the parameters: the next plain trigger deletes them.
    ops.trigger(&job()).await.unwrap();
    assert!(session.exists(&params_path()).await.unwrap().is_none());
}

#[tokio::test]
async fn a_trigger_naming_an_item_past_the_job_or_no_item_is_refused_before_writing() {
    let (ops, session) = seeded(b"recorded").await;
    let past = TriggerParams {
        job_parameter: None,
        items: Some([3].into()),
        workflow_run: None,
    };
    let err = ops.trigger_with(&job(), &past).await.unwrap_err();
    assert!(matches!(err, OpsError::UnknownItem { .. }), "{err}");
    let none = TriggerParams {
        job_parameter: None,
        items: Some(Default::default()),
        workflow_run: None,
    };
    let err = ops.trigger_with(&job(), &none).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::BadInput, "{err}");
    assert!(session.exists("/orders/trigger").await.unwrap().is_none());
}

fn hours_ago(n: i64) -> DateTime<Utc> {
    Utc::now().duration_trunc(Duration::hours(1)).unwrap() - Duration::hours(n)
}

#[tokio::test]
async fn a_backfill_lists_its_instants_writes_its_request_and_refuses_bad_ranges() {
    let (ops, session) = seeded(b"recorded").await;
    // The job fires every 5 s: a minute is twelve instants (both ends included: thirteen).
    let (from, to) = (hours_ago(2), hours_ago(2) + Duration::minutes(1));
    let dry = ops.backfill(&job(), from, to, true).await.unwrap();
    assert_eq!(dry.instants.len(), 13);
    assert_eq!(dry.id, None);
    assert!(session.exists("/orders/shardcron").await.unwrap().is_none());
    let refused = [
        (to, from, "before"),
        (hours_ago(3), hours_ago(1), "more than 1000"),
        (
            hours_ago(1),
            Utc::now() + Duration::hours(1),
            "in the future",
        ),
    ];
    for (f, t, why) in refused {
        let err = ops.backfill(&job(), f, t, false).await.unwrap_err();
        assert!(err.to_string().contains(why), "{err} should say {why}");
        assert_eq!(err.class(), ErrorClass::BadInput);
    }
    let planned = ops.backfill(&job(), from, to, false).await.unwrap();
    let (data, _) = session.get("/orders/shardcron/backfill").await.unwrap();
    let request = Request::parse(&data).unwrap();
    assert_eq!(Some(request.id), planned.id);
    assert_eq!(request.instants, dry.instants);

    // Under way: another is refused until it is cancelled.
    let again = ops.backfill(&job(), from, to, false).await.unwrap_err();
    assert!(
        matches!(again, OpsError::BackfillUnderWay { left: 39, .. }),
        "{again}"
    );
    assert!(ops.cancel_backfill(&job()).await.unwrap());
    assert!(!ops.cancel_backfill(&job()).await.unwrap());
    ops.backfill(&job(), from, to, false).await.unwrap();
}
