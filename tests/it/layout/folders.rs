//! The shape inside each folder of `src/`: the files (and sub-folders) of one folder form no
//! import cycle. An edge runs from a file to the sibling it names: `super::b`, `self::b`,
//! `crate::a::b` (from a file under `a/`), and every name inside `{…}` groups, resolved to the
//! module path it means. Two files of a folder are joined at the first place their module
//! paths part: `sim/conn/x.rs` naming `super::super::stats` is an edge `conn -> stats` in
//! `sim/`. A folder's `mod.rs` is the folder itself, not a node among its files, and what a
//! file reaches through a `mod.rs` re-export (`super::Thing`) is not seen. The binary's `cli/`
//! is read too; code compiled only for tests is left out as in the top-level graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each folder's graph: folder (`output`, `sim/conn`) → file → the siblings it imports.
type Graphs = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Cycles known to be fixed on other branches, each as (folder, its members sorted). Removed
/// at merge; a known cycle that no longer exists fails the test so the entry goes too.
const KNOWN: [(&str, &[&str]); 0] = [];

/// The module path of a source file: `src/a/b.rs` and `src/a/b/mod.rs` are `[a, b]`; the
/// crate roots are `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// Reads one path from `c[i..]` (segments joined by `::`, `{…}` groups expanded), appending
/// every full path to `out`; returns where it ended.
fn read_path(c: &[char], mut i: usize, mut segs: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        while c.get(i).is_some_and(|ch| ch.is_whitespace()) {
            i += 1;
        }
        if c.get(i) == Some(&'{') {
            i += 1;
            loop {
                while c.get(i).is_some_and(|ch| ch.is_whitespace() || *ch == ',') {
                    i += 1;
                }
                match c.get(i) {
                    None => return i,
                    Some('}') => return i + 1,
                    _ => {}
                }
                let before = i;
                i = read_path(c, i, segs.clone(), out).max(before + 1);
            }
        }
        let start = i;
        while c
            .get(i)
            .is_some_and(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
        {
            i += 1;
        }
        if i > start {
            segs.push(c[start..i].iter().collect());
        }
        if i == start || c.get(i) != Some(&':') || c.get(i + 1) != Some(&':') {
            out.push(segs);
            return i;
        }
        i += 2;
    }
}

/// The module paths a file at `module` names, resolved from the crate root.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let c: Vec<char> = code.chars().collect();
    let mut found = vec![];
    for i in 0..c.len() {
        let before = if i == 0 { ' ' } else { c[i - 1] };
        if before.is_ascii_alphanumeric() || before == '_' || before == ':' || before == '$' {
            continue;
        }
        for (prefix, up) in [("crate::", None), ("super::", Some(1)), ("self::", Some(0))] {
            let p: Vec<char> = prefix.chars().collect();
            if !c[i..].starts_with(&p) {
                continue;
            }
            let mut paths = vec![];
            read_path(&c, i + p.len(), vec![], &mut paths);
            let base: Vec<String> = match up {
                None => vec![],
                Some(n) => module[..module.len().saturating_sub(n)].to_vec(),
            };
            for segs in paths {
                let mut full = base.clone();
                for s in segs {
                    match s.as_str() {
                        "super" => {
                            full.pop();
                        }
                        "self" => {}
                        _ => full.push(s),
                    }
                }
                found.push(full);
            }
        }
    }
    found
}

/// Every folder's graph of its files.
fn graphs() -> Graphs {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    super::rust_files(&src, &mut files);
    let mut lib_code: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut test_mods = BTreeMap::new();
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let (code, mods) = super::without_test_items(&std::fs::read_to_string(file).unwrap());
        lib_code.insert(file.clone(), code);
        test_mods.insert(file.clone(), mods);
        let m = module_path(&src, file);
        for k in 0..m.len() {
            children
                .entry(m[..k].to_vec())
                .or_default()
                .insert(m[k].clone());
        }
    }
    let mut graphs = Graphs::new();
    for file in &files {
        if super::test_only(&src, file, &test_mods) {
            continue;
        }
        let from = module_path(&src, file);
        for to in named_paths(&super::code_only(&lib_code[file]), &from) {
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if shared == 0 || shared >= from.len() || shared >= to.len() {
                continue;
            }
            let folder = &from[..shared];
            if !children
                .get(folder)
                .is_some_and(|c| c.contains(&to[shared]))
            {
                continue;
            }
            graphs
                .entry(folder.join("/"))
                .or_default()
                .entry(from[shared].clone())
                .or_default()
                .insert(to[shared].clone());
        }
    }
    graphs
}

/// The cycles of a graph: its strongly connected parts of more than one node, each sorted.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for t in edges.get(&n).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|n| (n, reach(n))).collect();
    let mut parts = BTreeSet::new();
    for (n, r) in &reached {
        let part: Vec<String> = r
            .iter()
            .filter(|m| reached.get(m).is_some_and(|back| back.contains(*n)))
            .cloned()
            .collect();
        if part.len() > 1 {
            parts.insert(part);
        }
    }
    parts.into_iter().collect()
}

#[test]
fn the_parser_resolves_relative_and_grouped_paths() {
    let module: Vec<String> = ["sim", "conn", "x"].map(String::from).to_vec();
    let code = super::code_only(
        "use super::super::{stats::{bump, ThreadStats}, truth};\n\
         use self::inner::Y; let _ = crate::plan::Plan::defaults();\n\
         pub(super) fn f() { $crate::no(); super::y(); }\n",
    );
    let got: BTreeSet<String> = named_paths(&code, &module)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let want = [
        "plan::Plan::defaults",
        "sim::conn::x::inner::Y",
        "sim::conn::y",
        "sim::stats::ThreadStats",
        "sim::stats::bump",
        "sim::truth",
    ];
    assert_eq!(got, want.map(String::from).into_iter().collect());
    // Cycles are whole strongly connected parts; a chain is none.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(cycles(&g), [["a", "b", "c"].map(String::from).to_vec()]);
    g.get_mut("c").unwrap().remove("a");
    assert!(cycles(&g).is_empty());
}

#[test]
fn no_folder_has_an_import_cycle() {
    let graphs = graphs();
    let mut found = vec![];
    for (folder, edges) in &graphs {
        for (m, t) in edges {
            println!(
                "{folder}: {m} -> {}",
                t.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        found.extend(cycles(edges).into_iter().map(|c| (folder.clone(), c)));
    }
    let known: Vec<(String, Vec<String>)> = KNOWN
        .iter()
        .map(|(f, m)| (f.to_string(), m.iter().map(|s| s.to_string()).collect()))
        .collect();
    let new: Vec<_> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<_> = known.iter().filter(|k| !found.contains(k)).collect();
    assert!(
        new.is_empty(),
        "import cycles inside folders of src/: {new:?}"
    );
    assert!(
        gone.is_empty(),
        "known cycles no longer there (drop them from KNOWN): {gone:?}"
    );
}
