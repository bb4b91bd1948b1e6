//! A module import graph read from the source: which module of a directory names which other module
//! through a path prefix (`crate::x`, `super::x`). The layout tests check it against the layers and
//! the tree that ARCHITECTURE.md draws.
//!
//! A module is a directory's top-level file (`metrics.rs` is `metrics`, `lib.rs` is `lib`) or
//! subdirectory (every file under `decide/` belongs to `decide`). A module imports `x` when its code
//! names `{prefix}::x` anywhere: in a `use` line (braced groups too, `{prefix}::{x, y::Z}`) or as a
//! path in code (`{prefix}::x::f()`). Comments, doc comments and string literals are not code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The import graph of the `.rs` files under `dir`: each module mapped to the set of other modules
/// it names through `crate_prefix` (`"crate"`, `"super"`, `"crate::actors"`). A module that imports
/// nothing maps to an empty set; a module naming itself is not an import.
pub fn module_imports(dir: &Path, crate_prefix: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    for file in files {
        let relative = file.strip_prefix(dir).expect("a file under the directory");
        let first = relative.components().next().expect("a file has a name");
        let first = first.as_os_str().to_string_lossy();
        let module = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let imports: &mut BTreeSet<String> = graph.entry(module.clone()).or_default();
        for name in named_modules(&code_only(&text), crate_prefix) {
            if name != module {
                imports.insert(name);
            }
        }
    }
    graph
}

/// A circle of imports, if there is one (as the modules on it).
pub fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        module: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut found = path[at..].to_vec();
            found.push(module.to_owned());
            return Some(found);
        }
        if !done.insert(module.to_owned()) {
            return None;
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(found) = visit(graph, next, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(graph, m, &mut Vec::new(), &mut done))
}

/// Every `.rs` file under `dir`, recursively, in a stable order.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The first segment after each `{prefix}::` in `code`; in a braced group, the first segment of
/// each member.
fn named_modules(code: &str, prefix: &str) -> Vec<String> {
    let needle = format!("{prefix}::");
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(&needle) {
        let start = from + found;
        from = start + needle.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // `mycrate::`, or `a::crate::` which is not this prefix
        }
        let rest = code[from..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let end = closing_brace(group);
            for member in split_top_level(&group[..end]) {
                names.extend(first_ident(member));
            }
        } else {
            names.extend(first_ident(rest));
        }
    }
    names
}

/// The index of the `}` closing a group whose `{` has been consumed (the end if unclosed).
fn closing_brace(group: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    group.len()
}

/// The members of a braced group, split at its top-level commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let (mut members, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                members.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    members.push(&group[start..]);
    members
}

/// The identifier `text` starts with (after whitespace), unless it is `self` or empty.
fn first_ident(text: &str) -> Option<String> {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    let ident = &text[..end];
    (!ident.is_empty() && ident != "self").then(|| ident.to_owned())
}

/// `text` with comments and the contents of string and char literals blanked out, so a path in a
/// doc comment or a message is not read as an import.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) && raw_string_start(&chars, i) {
            i = skip_raw_string(&chars, i);
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&chars, i) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether the `r` at `i` opens a raw string (`r"`, `r#"`), not an identifier ending in `r`.
fn raw_string_start(chars: &[char], i: usize) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    // `br"..."` is a raw byte string; any other letter before the `r` makes it an identifier.
    let prefix_start = if i > 0 && chars[i - 1] == 'b' {
        i - 1
    } else {
        i
    };
    let ident_before = prefix_start > 0 && is_ident(chars[prefix_start - 1]);
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    !ident_before && chars.get(j) == Some(&'"')
}

/// The index after the raw string opening at `i`.
fn skip_raw_string(chars: &[char], i: usize) -> usize {
    let mut j = i + 1;
    let mut hashes = 0;
    while chars[j] == '#' {
        hashes += 1;
        j += 1;
    }
    j += 1; // the opening quote
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return j + 1 + hashes;
        }
        j += 1;
    }
    chars.len()
}

/// Whether the `'` at `i` opens a char literal (`'a'`, `'\n'`), not a lifetime (`'a`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}
