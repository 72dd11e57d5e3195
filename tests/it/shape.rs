//! The shape of the code beyond its imports: every file of `src/` opens with a `//!`
//! paragraph (where it sits in the flow and what it may not do), `main.rs` stays a thin edge,
//! and no function outside the tests is longer than a reader can hold (`MAX_FN_LINES`).

use crate::layout::{literal_end, rust_files};
use std::path::{Path, PathBuf};

/// Most lines a non-test function may span, its signature and closing brace included.
const MAX_FN_LINES: usize = 80;
/// Most lines `main.rs` may have: ten commands (run, sim, calibrate, report, sweep, search,
/// merge, compare, k8s, and the dispatch), each a call into the library and its output, at about
/// twenty lines each; a command that needs more moves its work into the library or `cli`.
const MAX_MAIN_LINES: usize = 220;

fn src_files() -> Vec<PathBuf> {
    let mut files = vec![];
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    files
}

/// The source with comments, strings and char literals blanked (newlines kept, so line
/// numbers stay), so braces and keywords in them do not count.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        match literal_end(&c, i) {
            Some(end) => {
                out.extend(
                    c[i..end]
                        .iter()
                        .map(|&ch| if ch == '\n' { '\n' } else { ' ' }),
                );
                i = end;
            }
            None => {
                out.push(c[i]);
                i += 1;
            }
        }
    }
    out
}

/// `(first line, last line, name)` of every function with a body outside `#[cfg(test)]`
/// modules, 1-based.
fn functions(code: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = vec![];
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_start();
        if l.starts_with("#[cfg(test)]") {
            // Skip the item the attribute is on (a test module or a test helper).
            i = skip_item(&lines, i + 1);
            continue;
        }
        let fn_at = l.find("fn ").filter(|&k| k == 0 || l[..k].ends_with(' '));
        if let (Some(k), true) = (fn_at, l.split_whitespace().any(|w| w == "fn")) {
            let name: String = l[k + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let end = skip_item(&lines, i);
            if end > i + 1 || lines[i].contains('{') {
                found.push((i + 1, end, name));
            }
            // Nested functions are inside; keep scanning from the next line.
        }
        i += 1;
    }
    found
}

/// The index just past the item that starts at line `start` (its braces balanced, or its `;`).
fn skip_item(lines: &[&str], start: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    for (j, l) in lines.iter().enumerate().skip(start) {
        for c in l.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
            return j + 1;
        }
    }
    lines.len()
}

#[test]
fn the_scanner_blanks_strings_and_finds_functions() {
    let code = code_only(
        "fn a() {\n    let s = \"}{\";\n    let r = r#\"{\"#;\n    let c = '{';\n}\n\
         #[cfg(test)]\nmod tests {\n    fn hidden() {\n    }\n}\n\
         pub(crate) async fn b<'a>(x: &'a str) -> u8 {\n    // }\n    1\n}\n",
    );
    let fns = functions(&code);
    assert_eq!(
        fns,
        [(1, 5, "a".to_string()), (11, 14, "b".to_string())],
        "{code}"
    );
}

#[test]
fn every_source_file_says_where_it_sits() {
    for file in src_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.trim_start().starts_with("//!"),
            "{} does not open with a //! paragraph",
            file.display()
        );
    }
}

#[test]
fn no_function_outside_the_tests_is_longer_than_the_bound() {
    let mut long = vec![];
    for file in src_files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("_tests.rs") || name == "testkit.rs" {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        for (first, last, f) in functions(&code) {
            let n = last - first + 1;
            if n > MAX_FN_LINES {
                long.push(format!("{}:{first} {f}: {n} lines", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn main_is_a_thin_edge() {
    let main = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs");
    let n = std::fs::read_to_string(main).unwrap().lines().count();
    assert!(n <= MAX_MAIN_LINES, "src/main.rs has {n} lines");
}
