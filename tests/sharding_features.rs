//! Label targeting, static sharding and namespace balance on the embedded registry, on paused time:
//! several instances in one process, observed through what the jobs' handlers record and what the
//! registry holds. (`tests/sharding_features_zk.rs` runs them as processes on a real ZooKeeper.)

use support::cluster;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cluster::{assignment, complete_fires, every_second, instance, origin, start_labelled_node};
use shardcron::clock::{SharedClock, TokioClock};
use shardcron::ShardItem;

const WITHIN: Duration = Duration::from_secs(60);

fn clock() -> SharedClock {
    Arc::new(TokioClock::starting_at(origin()))
}

#[tokio::test(start_paused = true)]
async fn a_job_with_a_label_runs_only_on_the_instances_carrying_it() {
    let (_server, conn, rec) = cluster::embedded("labels");
    let render = every_second("render", 4).label("gpu");
    let plain = every_second("plain", 3);
    tracing::info!("--- instances 1 and 3 carry gpu, 2 carries nothing");
    let mut nodes = Vec::new();
    for (n, labels) in [(1, &["gpu", "eu"][..]), (2, &[][..]), (3, &["gpu"][..])] {
        let jobs = vec![
            (render.clone(), rec.handler(Duration::ZERO)),
            (plain.clone(), rec.handler(Duration::ZERO)),
        ];
        nodes.push(start_labelled_node(conn.clone(), instance(n), jobs, clock(), labels).await);
    }
    let log = rec
        .wait_until("five complete fires of each job", WITHIN, |log| {
            let of = |job: &str| {
                log.iter()
                    .filter(|e| e.job == job)
                    .cloned()
                    .collect::<Vec<_>>()
            };
            complete_fires(&of("render"), 4).len() >= 5
                && complete_fires(&of("plain"), 3).len() >= 5
        })
        .await;
    let render_on: BTreeSet<_> = log
        .iter()
        .filter(|e| e.job == "render")
        .map(|e| e.instance.clone())
        .collect();
    assert_eq!(
        render_on,
        BTreeSet::from([instance(1), instance(3)]),
        "render never ran on 2"
    );
    let plan = assignment(&nodes[0], "plain");
    assert_eq!(
        plan.len(),
        3,
        "an unlabelled job uses every instance: {plan:?}"
    );
    let data = nodes[0]
        .mirror()
        .data(&format!("/render/instances/{}", instance(1)))
        .expect("instance node");
    assert_eq!(
        std::str::from_utf8(&data).unwrap(),
        format!(
            "jobInstanceId: {}\nlabels: gpu,eu\nserverIp: 10.0.0.1\n",
            instance(1)
        ),
        "labels in ElasticJob's JobInstance YAML"
    );
    tracing::info!("--- the gpu instances leave: nobody may run render any more");
    let mut nodes = nodes.into_iter();
    let (one, two, three) = (
        nodes.next().unwrap(),
        nodes.next().unwrap(),
        nodes.next().unwrap(),
    );
    one.shutdown().await;
    three.shutdown().await;
    let ran_before = rec.all().len();
    rec.wait_until("plain keeps running on 2 alone", WITHIN, |log| {
        let later: Vec<_> = log[ran_before..]
            .iter()
            .filter(|e| e.job == "plain")
            .cloned()
            .collect();
        complete_fires(&later, 3).len() >= 3
    })
    .await;
    assert!(
        rec.all()[ran_before..]
            .iter()
            .all(|e| e.job != "render" || e.instance != instance(2)),
        "2 carries no gpu and never takes render"
    );
    two.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn static_sharding_keeps_owners_when_an_instance_joins_and_moves_only_a_leaving_owners_items()
{
    let (_server, conn, rec) = cluster::embedded("static");
    let job = every_second("ledger", 4).static_sharding(true);
    let start = |n: u32| {
        let jobs = vec![(job.clone(), rec.handler(Duration::ZERO))];
        start_labelled_node(conn.clone(), instance(n), jobs, clock(), &[])
    };
    let one = start(1).await;
    let two = start(2).await;
    // Two instances joined one after the other: the second join is the first sharding that
    // matters only if nothing was assigned yet; wait for a plan over both.
    rec.wait_until("both instances run items", WITHIN, |log| {
        let on: BTreeSet<_> = log.iter().map(|e| e.instance.clone()).collect();
        on.len() == 2 && !complete_fires(log, 4).is_empty()
    })
    .await;
    let before = assignment(&one, "ledger");
    tracing::info!("--- instance 3 joins: nothing moves");
    let three = start(3).await;
    let joined_at = rec.all().len();
    rec.wait_until("five complete fires after the join", WITHIN, |log| {
        complete_fires(&log[joined_at..], 4).len() >= 5
    })
    .await;
    assert_eq!(
        assignment(&one, "ledger"),
        before,
        "a joining instance moves no item"
    );
    assert!(
        rec.all()[joined_at..]
            .iter()
            .all(|e| e.instance != instance(3)),
        "the newcomer runs nothing"
    );
    tracing::info!("--- instance 1 leaves: only its items move");
    let ones: Vec<u32> = before[&instance(1).to_string()].clone();
    let twos: Vec<u32> = before[&instance(2).to_string()].clone();
    one.shutdown().await;
    let left_at = rec.all().len();
    rec.wait_until("three complete fires after the leave", WITHIN, |log| {
        complete_fires(&log[left_at..], 4).len() >= 3
    })
    .await;
    let after = assignment(&two, "ledger");
    assert_eq!(
        after[&instance(2).to_string()],
        twos,
        "2 keeps exactly its items"
    );
    assert_eq!(
        after[&instance(3).to_string()],
        ones,
        "1's items went to 3, the least loaded"
    );
    assert!(!after.contains_key(&instance(1).to_string()));
    let last: BTreeMap<ShardItem, _> = rec.all()[left_at..]
        .iter()
        .map(|e| (e.item, e.instance.clone()))
        .collect();
    assert!(last.values().all(|i| *i != instance(1)));
    two.shutdown().await;
    three.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn namespace_balance_spreads_forty_one_item_jobs_ten_on_each_of_four_instances() {
    let (_server, conn, rec) = cluster::embedded("balance");
    let jobs: Vec<_> = (0..40)
        .map(|n| {
            every_second(&format!("report-{n:02}"), 1)
                .sharding_strategy("NAMESPACE_BALANCE")
                .prop("shardcron.only", "true")
        })
        .collect();
    let mut nodes = Vec::new();
    for n in 1..=4 {
        let specs = jobs
            .iter()
            .map(|j| (j.clone(), rec.handler(Duration::ZERO)))
            .collect();
        nodes.push(start_labelled_node(conn.clone(), instance(n), specs, clock(), &[]).await);
    }
    tracing::info!("--- every job runs on the settled plan");
    let settled_at = {
        rec.wait_until("all four instances run reports", WITHIN, |log| {
            log.iter()
                .map(|e| e.instance.clone())
                .collect::<BTreeSet<_>>()
                .len()
                == 4
        })
        .await;
        rec.all().len()
    };
    rec.wait_until("every job ran twice after settling", WITHIN, |log| {
        let mut runs: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &log[settled_at..] {
            *runs.entry(e.job.as_str()).or_default() += 1;
        }
        runs.len() == 40 && runs.values().all(|n| *n >= 2)
    })
    .await;
    let mut per_instance: BTreeMap<String, usize> = BTreeMap::new();
    for job in &jobs {
        for (owner, items) in assignment(&nodes[0], &job.job_name) {
            *per_instance.entry(owner).or_default() += items.len();
        }
    }
    assert_eq!(
        per_instance.values().copied().collect::<Vec<_>>(),
        [10, 10, 10, 10],
        "{per_instance:?}"
    );
    for n in &nodes {
        n.shutdown().await;
    }
}
