//! Every node round-trips through its path; paths outside the layout are refused.

use super::*;

/// Every variant once, with its path for job `orders`.
fn every_node() -> Vec<(JobNode, &'static str)> {
    use JobNode::*;
    let id = || InstanceId::parse("192.0.2.2@-@9526").unwrap();
    let i = ShardItem(12);
    vec![
        (Root, "/orders"),
        (Config, "/orders/config"),
        (Servers, "/orders/servers"),
        (Server("192.0.2.2".into()), "/orders/servers/192.0.2.2"),
        (Instances, "/orders/instances"),
        (Instance(id()), "/orders/instances/192.0.2.2@-@9526"),
        (Trigger, "/orders/trigger"),
        (TriggerInstance(id()), "/orders/trigger/192.0.2.2@-@9526"),
        (Sharding, "/orders/sharding"),
        (ShardingItem(ShardItem(0)), "/orders/sharding/0"),
        (ShardingInstance(i), "/orders/sharding/12/instance"),
        (ShardingRunning(i), "/orders/sharding/12/running"),
        (ShardingMisfire(i), "/orders/sharding/12/misfire"),
        (ShardingDisabled(i), "/orders/sharding/12/disabled"),
        (ShardingFailover(i), "/orders/sharding/12/failover"),
        (ShardingFailovering(i), "/orders/sharding/12/failovering"),
        (Leader, "/orders/leader"),
        (LeaderElection, "/orders/leader/election"),
        (LeaderElectionInstance, "/orders/leader/election/instance"),
        (LeaderSharding, "/orders/leader/sharding"),
        (LeaderShardingNecessary, "/orders/leader/sharding/necessary"),
        (
            LeaderShardingProcessing,
            "/orders/leader/sharding/processing",
        ),
        (LeaderFailover, "/orders/leader/failover"),
        (LeaderFailoverItems, "/orders/leader/failover/items"),
        (LeaderFailoverItem(i), "/orders/leader/failover/items/12"),
        (SystemTime, "/orders/systemTime"),
        (SystemTimeCurrent, "/orders/systemTime/current"),
        (Guarantee, "/orders/guarantee"),
        (GuaranteeStarted, "/orders/guarantee/started"),
        (GuaranteeStartedItem(i), "/orders/guarantee/started/12"),
        (GuaranteeCompleted, "/orders/guarantee/completed"),
        (GuaranteeCompletedItem(i), "/orders/guarantee/completed/12"),
        (Extensions, "/orders/shardcron"),
        (Fired, "/orders/shardcron/fired"),
        (FiredItem(i), "/orders/shardcron/fired/12"),
        (TriggerParams, "/orders/shardcron/trigger"),
        (
            TriggerParamsFor(id()),
            "/orders/shardcron/trigger/192.0.2.2@-@9526",
        ),
        (Backfill, "/orders/shardcron/backfill"),
        (BackfillItem(i), "/orders/shardcron/backfill/12"),
        (Adoptable, "/orders/adoptable"),
        (Workflow, "/orders/shardcron/workflow"),
        (
            WorkflowRecord("1767225600000@12".into()),
            "/orders/shardcron/workflow/1767225600000@12",
        ),
        (Downstream, "/orders/shardcron/downstream"),
        (
            DownstreamJob(JobName::new("report").unwrap()),
            "/orders/shardcron/downstream/report",
        ),
    ]
}

/// A number per variant; being exhaustive, it stops compiling when a variant is added, which
/// is the reminder to add it to [`every_node`].
fn variant_index(node: &JobNode) -> usize {
    use JobNode::*;
    match node {
        Root => 0,
        Config => 1,
        Servers => 2,
        Server(_) => 3,
        Instances => 4,
        Instance(_) => 5,
        Trigger => 6,
        TriggerInstance(_) => 7,
        Sharding => 8,
        ShardingItem(_) => 9,
        ShardingInstance(_) => 10,
        ShardingRunning(_) => 11,
        ShardingMisfire(_) => 12,
        ShardingDisabled(_) => 13,
        ShardingFailover(_) => 14,
        ShardingFailovering(_) => 15,
        Leader => 16,
        LeaderElection => 17,
        LeaderElectionInstance => 18,
        LeaderSharding => 19,
        LeaderShardingNecessary => 20,
        LeaderShardingProcessing => 21,
        LeaderFailover => 22,
        LeaderFailoverItems => 23,
        LeaderFailoverItem(_) => 24,
        SystemTime => 25,
        SystemTimeCurrent => 26,
        Guarantee => 27,
        GuaranteeStarted => 28,
        GuaranteeStartedItem(_) => 29,
        GuaranteeCompleted => 30,
        GuaranteeCompletedItem(_) => 31,
        Extensions => 32,
        Fired => 33,
        FiredItem(_) => 34,
        TriggerParams => 35,
        TriggerParamsFor(_) => 36,
        Backfill => 37,
        BackfillItem(_) => 38,
        Adoptable => 39,
        Workflow => 40,
        WorkflowRecord(_) => 41,
        Downstream => 42,
        DownstreamJob(_) => 43,
    }
}

#[test]
fn every_node_has_its_contract_path_and_parses_back_to_itself() {
    let job = JobName::new("orders").unwrap();
    let nodes = every_node();
    let mut indices: Vec<usize> = nodes.iter().map(|(node, _)| variant_index(node)).collect();
    indices.sort_unstable();
    assert_eq!(indices, (0..=43).collect::<Vec<_>>(), "each variant once");
    for (node, path) in nodes {
        assert_eq!(node.to_path(&job), path, "{node:?}");
        assert_eq!(JobNode::parse(path), Ok((job.clone(), node)), "{path}");
    }
}

#[test]
fn paths_outside_the_layout_are_refused_with_the_step_that_failed() {
    let table: &[(&str, &str)] = &[
        ("", "not absolute"),
        ("orders/config", "not absolute"),
        ("/", "unrecognised"),
        ("/orders/", "unrecognised"),
        ("/orders//config", "unrecognised"),
        ("/orders/config/", "unrecognised"),
        ("/orders/Config", "unrecognised"),
        ("/orders/shardcron/workflow/12", "unrecognised"),
        ("/orders/shardcron/workflow/12@x", "unrecognised"),
        ("/orders/shardcron/workflow/x1@start", "unrecognised"),
        ("/orders/leader/election/latch", "unrecognised"),
        (
            "/orders/leader/election/latch/_c_1f-latch-0000000001",
            "unrecognised",
        ),
        ("/orders/sharding/0/owner", "unrecognised"),
        ("/orders/sharding/0/running/x", "unrecognised"),
        ("/orders/servers/192.0.2.2/x", "unrecognised"),
        ("/orders/leader/failover/items/1/x", "unrecognised"),
        ("/a\tb/config", "job name"),
        ("/zookeeper/quota", "job name"),
        ("//config", "job name"),
        ("/orders/servers/", "server ip"),
        ("/orders/instances/192.0.2.2", "instance id"),
        ("/orders/trigger/@-@1", "instance id"),
        ("/orders/sharding/01", "shard item"),
        ("/orders/sharding/-1/running", "shard item"),
        ("/orders/sharding/latch", "shard item"),
        ("/orders/leader/failover/items/x", "shard item"),
    ];
    for &(path, expected) in table {
        let step = match JobNode::parse(path) {
            Ok(parsed) => panic!("{path:?} parsed as {parsed:?}"),
            Err(PathError::NotAbsolute { .. }) => "not absolute",
            Err(PathError::Unrecognised { .. }) => "unrecognised",
            Err(PathError::BadJobName { .. }) => "job name",
            Err(PathError::BadServerIp { .. }) => "server ip",
            Err(PathError::BadInstanceId { .. }) => "instance id",
            Err(PathError::BadShardItem { .. }) => "shard item",
        };
        assert_eq!(step, expected, "{path:?}");
    }
}

#[test]
fn a_server_node_refuses_an_ip_that_is_not_one_segment() {
    assert_eq!(
        JobNode::server("10.0.0.1"),
        Ok(JobNode::Server("10.0.0.1".into()))
    );
    for bad in ["", "10.0.0.1/x"] {
        assert_eq!(
            JobNode::server(bad),
            Err(PathError::BadServerIp { ip: bad.into() })
        );
    }
}

#[test]
fn job_names_elasticjob_allows_round_trip_through_paths() {
    for name in ["my job", "orders:eu#1", "日次 集計", "a.b", "x=1&y?"] {
        let job = JobName::new(name).unwrap();
        for node in [
            JobNode::Root,
            JobNode::Config,
            JobNode::ShardingItem(ShardItem(3)),
        ] {
            let path = node.to_path(&job);
            assert_eq!(
                JobNode::parse(&path).unwrap(),
                (job.clone(), node),
                "{path}"
            );
        }
    }
}
