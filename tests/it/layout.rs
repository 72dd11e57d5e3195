//! The shape of `src/`, checked: the top-level modules form no import cycle, and `plan` and
//! `summary` (the description of a run and its result) import nothing of the flow. The graph
//! is read from the source itself: every `crate::name` path outside comments, including the
//! names inside `use crate::{a, b::c}`, is an edge from the file's top-level module to `name`.
//! `main.rs` and `cli/` are the binary, which reaches the library as `ringbench::`, so they
//! are not part of the library's graph; nor is code compiled only for tests (`#[cfg(test)]`
//! items: the unit tests and their support, files declared `#[cfg(test)] mod name;` and what
//! is under them), which may reach any module to check the one it sits in.
//!
//! Every import also follows one order of the modules (`IMPORT_ORDER`): none imports a module
//! the order places after it. Inside each folder, the files form no cycle either (`folders.rs`).
//!
//! Run alone: `cargo test --release --test it layout:: -- --nocapture` prints the edges.

mod folders;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level entries `src/` may hold (modules plus `lib.rs` and `main.rs`). 19 since `scrape/`
/// (the server's own `/metrics`, #17): a stage of its own beside the run, which `run` and
/// `output` import and which fits under none of the others without a cycle.
const MAX_TOP_LEVEL: usize = 19;

/// Modules that describe a run or its result and may import no other module of the crate.
const LEAVES: [&str; 2] = ["plan", "summary"];

/// The library's modules in import order, written once: each may import only modules listed
/// before it, so no arrow runs back up the flow (a stage never imports one that drives it).
/// The leaves come first; then the runtime helpers and the request's way back in
/// (record ← extract ← sse ← http); the schedule and the catalog the workers read; the
/// workers; the simulator and the scraper beside them; the collector, which reads what the
/// workers send; the renderers; the run that wires them; the studies made of runs.
/// docs/architecture.md gives the same order.
const IMPORT_ORDER: [&str; 17] = [
    "plan",
    "summary",
    "rt",
    "record",
    "extract",
    "sse",
    "http",
    "schedule",
    "prepare",
    "worker",
    "sim",
    "scrape",
    "collector",
    "output",
    "run",
    "study",
    "cli",
];

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without `//` comments (doc comments included) and without string contents, so
/// that a path named in prose or a message is not an import.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_str && c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' && !(prev == '\'' && chars.get(i + 1) == Some(&'\'')) {
                in_str = !in_str;
            }
            if !in_str {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Where the literal or comment starting at `i` ends (the index after it), or `None` when
/// none starts there: strings (`"…"`, `b"…"`, raw `r#"…"#`), char literals (`'x'`, `'\n'`,
/// `'\u{7d}'`, not lifetimes) and comments (`//`, nested `/* */`).
pub(crate) fn literal_end(c: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| c.get(k).copied();
    let after_ident = i > 0 && (c[i - 1].is_ascii_alphanumeric() || c[i - 1] == '_');
    match c[i] {
        '/' if at(i + 1) == Some('/') => {
            Some((i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len()))
        }
        '/' if at(i + 1) == Some('*') => {
            let (mut depth, mut k) = (0, i);
            while k < c.len() {
                if c[k] == '/' && at(k + 1) == Some('*') {
                    (depth, k) = (depth + 1, k + 2);
                } else if c[k] == '*' && at(k + 1) == Some('/') {
                    (depth, k) = (depth - 1, k + 2);
                    if depth == 0 {
                        return Some(k);
                    }
                } else {
                    k += 1;
                }
            }
            Some(c.len())
        }
        '"' => {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            Some((k + 1).min(c.len()))
        }
        // Raw strings; `b"…"` is left to the plain string rule, one char on.
        'r' | 'b' if !after_ident => {
            let k = if c[i] == 'b' { i + 2 } else { i + 1 };
            if c[i] == 'b' && at(i + 1) != Some('r') {
                return None;
            }
            let hashes = c[k.min(c.len())..]
                .iter()
                .take_while(|&&h| h == '#')
                .count();
            if at(k + hashes) != Some('"') {
                return None;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = k + hashes + 1;
            let end = (body..c.len()).find(|&j| c[j..].starts_with(&close));
            Some(end.map_or(c.len(), |j| j + close.len()))
        }
        '\'' if at(i + 1) == Some('\\') => match at(i + 2) {
            Some('u' | 'x') => (i + 3..c.len()).find(|&j| c[j] == '\'').map(|j| j + 1),
            _ => Some((i + 4).min(c.len())),
        },
        '\'' if at(i + 2) == Some('\'') => Some(i + 3),
        _ => None,
    }
}

/// The source without its `#[cfg(test)]` items, and the names of the modules it declares
/// `#[cfg(test)] mod name;` (files of their own, compiled only for tests). An item is what
/// follows the attribute up to its `;` or through its braces, literals and comments skipped.
fn without_test_items(text: &str) -> (String, Vec<String>) {
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let c: Vec<char> = text.chars().collect();
    let (mut out, mut test_mods) = (String::with_capacity(text.len()), vec![]);
    let mut i = 0;
    while i < c.len() {
        if let Some(end) = literal_end(&c, i) {
            out.extend(&c[i..end]);
            i = end;
            continue;
        }
        if !c[i..].starts_with(&attr) {
            out.push(c[i]);
            i += 1;
            continue;
        }
        // The item: to its `;` outside any bracket, or through the braces it opens.
        let start = i + attr.len();
        let (mut k, mut depth) = (start, 0usize);
        while k < c.len() {
            if let Some(end) = literal_end(&c, k) {
                k = end;
                continue;
            }
            match c[k] {
                '{' | '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                ';' if depth == 0 => break,
                _ => {}
            }
            k += 1;
        }
        let item: String = c[start..k.min(c.len())].iter().collect();
        let words: Vec<&str> = item.split_whitespace().collect();
        if c.get(k) == Some(&';') {
            if let Some(at) = words.iter().position(|w| *w == "mod") {
                test_mods.extend(words.get(at + 1).map(|n| n.to_string()));
            }
        }
        i = k + 1;
    }
    (out, test_mods)
}

/// The top-level names a source file reaches through `crate::`.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `ringbench_crate::` or similar: not ours
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::{c, d}, e}`: the names at depth 0 of the group.
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && depth == 0 && !c.is_whitespace() => {
                        let name = ident(&group[i..]);
                        if !name.is_empty() {
                            refs.insert(name);
                        }
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                refs.insert(name);
            }
        }
    }
    refs
}

/// `src/a.rs` and `src/a/...` belong to `a`; `None` for the crate roots and the binary.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.trim_end_matches(".rs").to_string();
    match name.as_str() {
        "lib" | "main" | "cli" => None,
        _ => Some(name),
    }
}

/// The file that declares the module `file` is (`src/a/b.rs` and `src/a/b/mod.rs`: `src/a.rs`
/// or `src/a/mod.rs`; a top-level module: `src/lib.rs`), and the module's name.
fn declared_in(src: &Path, file: &Path) -> Option<(PathBuf, String)> {
    let (dir, name) = if file.file_name()? == "mod.rs" {
        let dir = file.parent()?;
        (dir.parent()?, dir.file_name()?)
    } else {
        (file.parent()?, file.file_stem()?)
    };
    let parent = if dir == src {
        src.join("lib.rs")
    } else if dir.join("mod.rs").exists() {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    };
    Some((parent, name.to_string_lossy().into_owned()))
}

/// Whether `file` is compiled only for tests: declared `#[cfg(test)] mod name;`, or under a
/// module that is. `test_mods`: each file's test-only module declarations.
fn test_only(src: &Path, file: &Path, test_mods: &BTreeMap<PathBuf, Vec<String>>) -> bool {
    if file == src.join("lib.rs") {
        return false;
    }
    let Some((parent, name)) = declared_in(src, file) else {
        return false;
    };
    test_mods.get(&parent).is_some_and(|m| m.contains(&name)) || test_only(src, &parent, test_mods)
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let mut lib_code: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut test_mods: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for file in &files {
        let (code, mods) = without_test_items(&std::fs::read_to_string(file).unwrap());
        lib_code.insert(file.clone(), code);
        test_mods.insert(file.clone(), mods);
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = top_module(&src, &file) else {
            continue;
        };
        if test_only(&src, &file, &test_mods) {
            continue;
        }
        let code = code_only(&lib_code[&file]);
        let out = edges.entry(module.clone()).or_default();
        out.extend(crate_refs(&code).into_iter().filter(|r| *r != module));
    }
    // Only edges between modules that exist (`crate::Foo` of a re-exported item at the root
    // is the root, not a module).
    let names: BTreeSet<String> = edges.keys().cloned().collect();
    for targets in edges.values_mut() {
        targets.retain(|t| names.contains(t));
    }
    edges
}

/// A cycle through `from`, if any (depth-first search).
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for t in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(t, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, edges, &mut vec![], &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_parser_of_this_test_reads_grouped_and_plain_paths() {
    let code = code_only(
        "use crate::{plan::{Plan, Load}, record, summary::Summary};\n\
         let x = crate::rt::clock::mono_ns(); // crate::sim is only named here\n\
         let s = \"crate::output\";\n",
    );
    let refs: Vec<String> = crate_refs(&code).into_iter().collect();
    assert_eq!(refs, ["plan", "record", "rt", "summary"]);
    // A cycle is found, and a chain is not one.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default();
    assert_eq!(cycle(&g), None);
    g.get_mut("c").unwrap().insert("a".into());
    assert_eq!(cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    // Code compiled only for tests is left out, and its module files are named; braces,
    // `;` and the attribute itself inside literals and comments do not end or start an item.
    let (lib, mods) = without_test_items(
        "use crate::plan;\n#[cfg(test)]\nmod unit_tests;\n\
         #[cfg(test)]\npub(crate) mod kit;\n\
         fn f() -> char { let _ = \"#[cfg(test)] {\"; '{' }\n\
         #[cfg(test)]\nmod tests {\n    use crate::output;\n    // }\n    \
         const S: &str = r#\"}\"#;\n    fn g<'a>(_: &'a str) -> char { '}' }\n}\n\
         #[cfg(test)]\nuse crate::sim;\nfn after() { crate::record::x(); }\n",
    );
    assert_eq!(mods, ["unit_tests", "kit"]);
    let refs: Vec<String> = crate_refs(&code_only(&lib)).into_iter().collect();
    assert_eq!(refs, ["plan", "record"], "{lib}");
}

#[test]
fn top_level_modules_form_no_cycle() {
    let edges = graph();
    for (m, t) in &edges {
        println!(
            "{m} -> {}",
            t.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    if let Some(c) = cycle(&edges) {
        panic!("import cycle among top-level modules: {}", c.join(" -> "));
    }
}

/// The edges that import a module `IMPORT_ORDER` places after the importer, and the modules
/// missing from it.
fn against_the_order(edges: &BTreeMap<String, BTreeSet<String>>, order: &[&str]) -> Vec<String> {
    let rank = |m: &str| order.iter().position(|o| *o == m);
    let mut wrong = vec![];
    for (m, targets) in edges {
        let Some(from) = rank(m) else {
            wrong.push(format!("{m} is not in IMPORT_ORDER"));
            continue;
        };
        for t in targets {
            match rank(t) {
                Some(to) if to < from => {}
                Some(_) => wrong.push(format!("{m} imports {t}, which the order places after it")),
                None => wrong.push(format!("{t} is not in IMPORT_ORDER")),
            }
        }
    }
    wrong
}

#[test]
fn no_module_imports_one_the_order_places_after_it() {
    let wrong = against_the_order(&graph(), &IMPORT_ORDER);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for m in IMPORT_ORDER {
        assert!(
            src.join(m).is_dir() || src.join(format!("{m}.rs")).is_file(),
            "IMPORT_ORDER names {m}, which src/ does not hold"
        );
    }
}

#[test]
fn the_order_check_sees_an_upstream_import() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges
        .entry("rt".into())
        .or_default()
        .insert("summary".into());
    assert!(against_the_order(&edges, &IMPORT_ORDER).is_empty());
    edges
        .entry("summary".into())
        .or_default()
        .insert("output".into());
    edges.entry("novel".into()).or_default();
    assert_eq!(
        against_the_order(&edges, &IMPORT_ORDER),
        [
            "novel is not in IMPORT_ORDER",
            "summary imports output, which the order places after it"
        ]
    );
}

#[test]
fn plan_and_summary_are_leaves() {
    let edges = graph();
    for leaf in LEAVES {
        let out = edges.get(leaf).expect("the module exists");
        assert!(out.is_empty(), "{leaf} imports {out:?}");
    }
}

#[test]
fn the_tree_is_small_enough_to_read() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let entries: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        entries.len() <= MAX_TOP_LEVEL,
        "{} top-level entries in src/: {entries:?}",
        entries.len()
    );
}
