//! The `actors/` import graph, read from the code, is the graph ARCHITECTURE.md draws (section
//! "The import graph of `actors/`"), and it has no circle: an actor module imports the actors it
//! spawns and the shared modules below them, never its parent or a sibling (they talk through the
//! messages in `actors/mail`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use support::imports::{circle, module_imports};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of `actors/` as the code has it: `super::x`, `crate::actors::x`, and the two modules
/// the crate re-exports (`crate::node`, `crate::embed`), counted only when `x` is a module of
/// `actors/` (inside `actors/mail/`, `super::X` names mail's own items).
fn computed() -> Graph {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("actors");
    let mut graph = module_imports(&dir, "super");
    for (prefix, only) in [("crate::actors", None), ("crate", Some(["node", "embed"]))] {
        for (module, imports) in module_imports(&dir, prefix) {
            let kept = imports
                .into_iter()
                .filter(|m| only.is_none_or(|only| only.contains(&m.as_str())));
            graph.entry(module).or_default().extend(kept);
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for imports in graph.values_mut() {
        imports.retain(|m| modules.contains(m));
    }
    graph.remove("mod");
    graph
}

/// The graph as ARCHITECTURE.md draws it: the lines `module → a, b` (or `→ (nothing)`) of the
/// first code block after the section's heading.
fn drawn() -> Graph {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("ARCHITECTURE.md is readable");
    let heading = "### The import graph of `actors/`";
    let section = text
        .split_once(heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no heading {heading:?}"))
        .1;
    let block = section
        .split("```")
        .nth(1)
        .expect("the section has a code block");
    let mut graph = Graph::new();
    for line in block.lines().filter(|l| l.contains('→')) {
        let (module, imports) = line.split_once('→').expect("checked");
        let imports = imports
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty() && *m != "(nothing)")
            .map(str::to_owned)
            .collect();
        graph.insert(module.trim().to_owned(), imports);
    }
    graph
}

#[test]
fn the_actors_import_graph_is_the_one_architecture_md_draws() {
    let (code, page) = (computed(), drawn());
    let show = |g: &Graph| {
        g.iter()
            .map(|(m, i)| format!("{m} → {}", i.iter().cloned().collect::<Vec<_>>().join(", ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        code,
        page,
        "the code's graph (left) differs from ARCHITECTURE.md's (right); the code's:\n{}",
        show(&code)
    );
}

#[test]
fn no_circle_runs_through_the_actors_imports() {
    let graph = computed();
    assert_eq!(circle(&graph), None, "a circle of imports in actors/");
    assert!(graph.len() > 10, "the graph was read: {graph:?}");
}

#[test]
fn a_circle_is_found_where_there_is_one() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .into_iter()
        .map(|(m, i)| (m.to_owned(), BTreeSet::from([i.to_owned()])))
        .collect();
    let found = circle(&graph).expect("a circle");
    assert_eq!(found.first(), found.last());
    assert_eq!(found.len(), 4);
}
