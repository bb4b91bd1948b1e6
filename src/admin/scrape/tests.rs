//! Tests of the Prometheus side: label values escaped and read back, the gauges an empty mirror
//! renders, and which series each node's endpoint serves (its own; the process's at the oldest
//! endpoint), written whole or in pieces.

use super::*;

#[test]
fn label_values_are_escaped_for_the_text_format() {
    assert_eq!(Escaped(r#"a"b\c"#).to_string(), r#"a\"b\\c"#);
    assert_eq!(Escaped("x\ny").to_string(), "x\\ny");
}

/// What `me`'s endpoint serves of `rendered`, written to the filter in `piece`-byte writes.
fn node_series(rendered: &str, me: &InstanceId, process: bool, piece: usize) -> String {
    let mut filter = NodeSeries::new(Vec::new(), me, process);
    for chunk in rendered.as_bytes().chunks(piece) {
        filter.write_all(chunk).unwrap();
    }
    String::from_utf8(filter.finish().unwrap()).unwrap()
}

#[test]
fn an_empty_mirror_renders_zero_gauges_for_each_job() {
    let me = InstanceId::parse("10.0.0.1@-@1").unwrap();
    let mut out = Vec::new();
    render_node_gauges(
        &mut out,
        &Mirror::new(),
        &me,
        &[JobName::new("orders").unwrap()],
        None,
    )
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    for line in [
        "# TYPE shardcron_items_owned gauge",
        "shardcron_items_owned{job_name=\"orders\",instance_id=\"10.0.0.1@-@1\"} 0",
        "shardcron_leader{job_name=\"orders\",instance_id=\"10.0.0.1@-@1\"} 0",
        "shardcron_job_registered{job_name=\"orders\",instance_id=\"10.0.0.1@-@1\"} 0",
        "shardcron_session_connected{instance_id=\"10.0.0.1@-@1\"} 0",
        "shardcron_mirror_nodes{instance_id=\"10.0.0.1@-@1\"} 0",
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
    }
}

const RENDERED: &str = "\
# HELP shardcron_executions_total Item executions.
# TYPE shardcron_executions_total counter
shardcron_executions_total{instance_id=\"a@-@1\",job_name=\"orders\",item=\"0\"} 3
shardcron_executions_total{instance_id=\"b@-@2\",job_name=\"orders\",item=\"1\"} 4

# HELP shardcron_misfires_total Misfires.
# TYPE shardcron_misfires_total counter
shardcron_misfires_total{instance_id=\"b@-@2\",job_name=\"orders\"} 1

# TYPE shardcron_registry_operations_total counter
shardcron_registry_operations_total{backend=\"embedded\",kind=\"get\",outcome=\"ok\"} 9
";

#[test]
fn a_node_serves_its_own_series_and_the_oldest_endpoint_the_process_series() {
    let a = InstanceId::parse("a@-@1").unwrap();
    let first = node_series(RENDERED, &a, true, RENDERED.len());
    assert_eq!(
        first,
        "# HELP shardcron_executions_total Item executions.\n\
         # TYPE shardcron_executions_total counter\n\
         shardcron_executions_total{instance_id=\"a@-@1\",job_name=\"orders\",item=\"0\"} 3\n\
         \n\
         # TYPE shardcron_registry_operations_total counter\n\
         shardcron_registry_operations_total{backend=\"embedded\",kind=\"get\",outcome=\"ok\"} 9\n"
    );
    let b = InstanceId::parse("b@-@2").unwrap();
    let second = node_series(RENDERED, &b, false, RENDERED.len());
    assert!(second.contains("item=\"1\"} 4\n"), "{second}");
    assert!(second.contains("shardcron_misfires_total{"), "{second}");
    assert!(!second.contains("registry_operations"), "{second}");
    assert!(!second.contains("a@-@1"), "{second}");
}

#[test]
fn a_rendering_written_in_pieces_is_filtered_as_when_written_whole() {
    let a = InstanceId::parse("a@-@1").unwrap();
    let whole = node_series(RENDERED, &a, true, RENDERED.len());
    for piece in [1, 2, 7, 64] {
        assert_eq!(
            node_series(RENDERED, &a, true, piece),
            whole,
            "{piece}-byte writes"
        );
    }
    let unterminated = RENDERED.trim_end();
    assert_eq!(node_series(unterminated, &a, true, 5), whole);
}

#[test]
fn label_values_are_read_through_escapes() {
    let line = r#"m{x="a\"b,c",instance_id="q\\r",y="z"} 1"#;
    assert_eq!(label_value(line, "instance_id").as_deref(), Some("q\\r"));
    assert_eq!(label_value(line, "x").as_deref(), Some("a\"b,c"));
    assert_eq!(label_value(line, "nope"), None);
    assert_eq!(label_value("m 1", "x"), None);
    assert_eq!(label_value("m{x=\"unterminated} 1", "x"), None);
}

#[test]
fn the_process_series_pass_to_the_next_oldest_endpoint() {
    static LINE: EndpointLine = EndpointLine::new();
    let first = ProcessSeriesTurn::join_line(&LINE);
    let second = ProcessSeriesTurn::join_line(&LINE);
    let third = ProcessSeriesTurn::join_line(&LINE);
    let serving = |turns: &[&ProcessSeriesTurn]| {
        turns
            .iter()
            .map(|t| t.serves_process_series())
            .collect::<Vec<_>>()
    };
    assert_eq!(serving(&[&first, &second, &third]), [true, false, false]);
    drop(second);
    assert_eq!(serving(&[&first, &third]), [true, false]);
    drop(first);
    assert_eq!(serving(&[&third]), [true]);
    let fourth = ProcessSeriesTurn::join_line(&LINE);
    assert_eq!(serving(&[&third, &fourth]), [true, false]);
}
