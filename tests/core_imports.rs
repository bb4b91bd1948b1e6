//! The IO boundary of `src/`, checked on the source: no core module imports an adapter module, and
//! nothing under `src/` imports the engine (`actors/`). The core and adapter lists are read from
//! ARCHITECTURE.md's "## Layers" section, so the page and the code cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use support::imports::{circle, module_imports};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The modules listed on a `- **{label}**:` bullet of ARCHITECTURE.md's "## Layers" section: the
/// backticked names up to the next bullet or blank line.
fn layer(label: &str) -> BTreeSet<String> {
    let page = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("Layers\n"))
        .expect("ARCHITECTURE.md has a \"## Layers\" section");
    let opening = format!("- **{label}**:");
    let mut lines = section.lines().skip_while(|l| !l.starts_with(&opening));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("the Layers section has a `{opening}` bullet"));
    let bullet = std::iter::once(&first[opening.len()..])
        .chain(lines.take_while(|l| !l.trim().is_empty() && !l.starts_with("- ")));
    let names: BTreeSet<String> = bullet
        .flat_map(|line| line.split('`').skip(1).step_by(2).map(str::to_owned))
        .collect();
    assert!(!names.is_empty(), "the `{opening}` bullet names no module");
    names
}

/// `src/`'s import graph over its library modules (the binaries under `src/bin/` have a crate of
/// their own).
fn src_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = module_imports(&root().join("src"), "crate");
    graph.remove("bin");
    graph
}

/// What `src/lib.rs` re-exports from the engine (`pub use actors::...`), as a module of `src/`
/// would name it through `crate::`.
fn engine_names() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let mut names: BTreeSet<String> = ["actors".to_owned()].into();
    for line in lib.lines().filter(|l| l.starts_with("pub use actors::")) {
        let list = line
            .trim_start_matches("pub use actors::")
            .trim_end_matches(';');
        let list = list.trim_start_matches('{').trim_end_matches('}');
        for item in list.split(',') {
            let last = item.trim().rsplit("::").next().unwrap_or_default();
            names.insert(last.trim_matches(['{', '}']).to_owned());
        }
    }
    names
}

/// The edges `module -> import` of `graph` from the modules `from` keeps into `targets`.
fn edges_into(
    graph: BTreeMap<String, BTreeSet<String>>,
    from: impl Fn(&str) -> bool,
    targets: &BTreeSet<String>,
) -> Vec<String> {
    (graph.iter())
        .filter(|(module, _)| from(module))
        .flat_map(|(module, imports)| {
            (imports.iter())
                .filter(|i| targets.contains(*i))
                .map(move |i| format!("{module} -> {i}"))
        })
        .collect()
}

#[test]
fn every_module_of_src_is_core_or_adapter_as_architecture_md_lists_it() {
    let (core, adapters) = (layer("Core"), layer("Adapters"));
    let both: Vec<_> = core.intersection(&adapters).collect();
    assert!(both.is_empty(), "listed as core and as adapter: {both:?}");
    let modules: BTreeSet<String> = src_graph().into_keys().filter(|m| m != "lib").collect();
    let unlisted: Vec<_> = modules
        .iter()
        .filter(|m| !core.contains(*m) && !adapters.contains(*m))
        .collect();
    assert!(
        unlisted.is_empty(),
        "modules of src/ ARCHITECTURE.md's Layers does not list: {unlisted:?}"
    );
    let missing: Vec<_> = core
        .union(&adapters)
        .filter(|m| !modules.contains(*m))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's Layers lists modules src/ lacks: {missing:?}"
    );
}

#[test]
fn no_core_module_imports_an_adapter_module() {
    let (core, adapters) = (layer("Core"), layer("Adapters"));
    let crossings = edges_into(src_graph(), |module| core.contains(module), &adapters);
    assert!(
        crossings.is_empty(),
        "core modules importing adapters: {crossings:#?}"
    );
}

#[test]
fn the_core_modules_import_one_another_without_a_cycle() {
    let core = layer("Core");
    let graph = src_graph();
    // The core's own edges only: an adapter importing the core closes no circle of the core.
    let core_graph: BTreeMap<String, BTreeSet<String>> = (graph.iter())
        .filter(|(m, _)| core.contains(*m))
        .map(|(m, imports)| (m.clone(), imports.intersection(&core).cloned().collect()))
        .collect();
    let cycle = circle(&core_graph);
    assert!(
        cycle.is_none(),
        "core modules import one another in a circle: {cycle:?}"
    );
}

#[test]
fn no_module_of_src_imports_the_engine() {
    let engine = engine_names();
    let found = edges_into(src_graph(), |_| true, &engine);
    assert!(
        found.is_empty(),
        "src/ importing the engine (actors/): {found:#?}"
    );
}

#[test]
fn the_import_reader_sees_use_groups_and_paths_but_not_comments_or_strings() {
    let dir = std::env::temp_dir().join(format!("core_imports_{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let a = "use crate::{b::X, c::{self, Y}};\n// crate::d\n/// [`crate::e`]\n\
             fn f() -> &'static str { let _ = crate::g::h(); \"crate::i\" }\n\
             const C: char = '\"'; fn k() { crate::l::m(); }\n";
    std::fs::write(dir.join("a.rs"), a).unwrap();
    std::fs::write(dir.join("b/mod.rs"), "use crate::b::inner; use super::a;").unwrap();
    let graph = module_imports(&dir, "crate");
    std::fs::remove_dir_all(&dir).unwrap();
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(graph["a"], names(&["b", "c", "g", "l"]));
    assert_eq!(
        graph["b"],
        names(&[]),
        "a module naming itself imports nothing"
    );
}
