//! The docs a newcomer reads: every relative link of `README.md` and `docs/*.md` resolves (the
//! file, and its `#anchor` by GitHub's rules for heading anchors), and every flag of
//! `ringbench run --help` is written somewhere in `docs/` or the README. Links inside code
//! (fenced blocks, inline spans) are text, not links, and are not checked; `http(s)://` links
//! are not fetched.

use crate::support::common::{output, ringbench};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every `docs/*.md`, sorted.
fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "md"));
    files.sort();
    files.insert(0, root.join("README.md"));
    files
}

/// The text with fenced code blocks emptied (their lines kept blank) and inline code spans
/// removed: what is left is what Markdown renders as prose, links and headings.
fn prose(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            out.push('\n');
            continue;
        }
        if !fence {
            out.push_str(&without_code_spans(line));
        }
        out.push('\n');
    }
    out
}

/// A line without its inline code spans (a run of N backticks up to the next run of N).
fn without_code_spans(line: &str) -> String {
    let c: Vec<char> = line.chars().collect();
    let run = |i: usize| c[i..].iter().take_while(|&&ch| ch == '`').count();
    let (mut out, mut i) = (String::new(), 0);
    while i < c.len() {
        if c[i] != '`' {
            out.push(c[i]);
            i += 1;
            continue;
        }
        let n = run(i);
        let mut j = i + n;
        while j < c.len() && !(c[j] == '`' && run(j) == n) {
            j += if c[j] == '`' { run(j) } else { 1 };
        }
        if j >= c.len() {
            out.extend(&c[i..i + n]); // no closing run: literal backticks
            i += n;
        } else {
            i = j + n;
        }
    }
    out
}

/// Every link target of the prose: inline `[text](target)` and `![alt](target)`, and
/// reference definitions `[label]: target`.
fn link_targets(md: &str) -> Vec<String> {
    let text = prose(md);
    let mut targets = vec![];
    for (at, _) in text.match_indices("](") {
        let rest = &text[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(['<', '>']).to_string());
    }
    for line in text.lines() {
        let t = line.trim_start();
        if let Some((label, target)) = t.strip_prefix('[').and_then(|r| r.split_once("]:")) {
            if !label.contains(']') {
                targets.push(target.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    }
    targets
}

/// GitHub's anchor of a heading: its rendered text lowercased, every character that is not
/// a letter, a digit, `_`, `-` or a space dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](url)` renders as `text`.
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    text.push_str(rest);
    text.chars()
        .filter_map(|ch| match ch {
            ' ' => Some('-'),
            '_' | '-' => Some(ch),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors a Markdown file's headings get on GitHub (a repeated one gets `-1`, `-2`, …).
fn anchors(md: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    let mut fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fence || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// Every relative link of `files` that does not resolve, as `file: target (why)`. Links
/// may not leave `root`.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let root = root.canonicalize().unwrap();
    let mut broken = vec![];
    for file in files {
        let md = std::fs::read_to_string(file).unwrap();
        let full = file.canonicalize().unwrap();
        let name = full
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        for target in link_targets(&md) {
            let external = ["http://", "https://", "mailto:"];
            if external.iter().any(|s| target.starts_with(s)) {
                continue;
            }
            if let Some(why) = unresolved(&root, file, &md, &target) {
                broken.push(format!("{name}: {target} ({why})"));
            }
        }
    }
    broken.sort();
    broken.dedup();
    broken
}

/// Why `target`, a link in `file` (whose text is `md`), does not resolve; `None` when it does.
fn unresolved(root: &Path, file: &Path, md: &str, target: &str) -> Option<String> {
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    if target.is_empty() {
        return Some("empty target".into());
    }
    let dest = if path.is_empty() {
        file.to_path_buf()
    } else {
        let p = file.parent().unwrap().join(path);
        match p.canonicalize() {
            Ok(p) if p.starts_with(root) => p,
            Ok(_) => return Some("outside the repository".into()),
            Err(_) => return Some("no such file".into()),
        }
    };
    if anchor.is_empty() {
        return None;
    }
    if dest.extension().is_none_or(|e| e != "md") {
        return Some("an anchor into a file that is not Markdown".into());
    }
    let text = if path.is_empty() {
        md.to_string()
    } else {
        std::fs::read_to_string(&dest).unwrap_or_default()
    };
    (!anchors(&text).contains(anchor)).then(|| "no heading has this anchor".into())
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let root = root();
    let files = doc_files(&root);
    assert!(files.len() >= 7, "README.md and docs/*.md: {files:?}");
    let broken = broken_links(&root, &files);
    assert!(
        broken.is_empty(),
        "broken links ({}):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_missing_file_a_missing_anchor_and_ignores_code() {
    let dir = std::env::temp_dir().join(format!("ringbench-docs-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    let readme = "# Top\n\n## Two words (`--x`)\n\n[a](docs/a.md#part-one) [b](docs/gone.md) \
                  [c](#two-words---x) [d](#nowhere) [e](docs/a.md#part-two)\n\
                  `[f](docs/not-a-link.md)`\n```\n[g](fenced.md)\n```\n[h]: docs/a.md#top\n";
    std::fs::write(dir.join("README.md"), readme).unwrap();
    std::fs::write(
        dir.join("docs/a.md"),
        "# Part one\n\n[up](../README.md#top)\n",
    )
    .unwrap();
    let mut broken = broken_links(&dir, &doc_files(&dir));
    broken.sort();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        broken,
        [
            "README.md: #nowhere (no heading has this anchor)",
            "README.md: docs/a.md#part-two (no heading has this anchor)",
            "README.md: docs/a.md#top (no heading has this anchor)",
            "README.md: docs/gone.md (no such file)",
        ]
    );
}

#[test]
fn github_anchors_drop_punctuation_and_number_repeats() {
    assert_eq!(
        slug("Kernel receive timestamps (`--no-rx-timestamps`)"),
        "kernel-receive-timestamps---no-rx-timestamps"
    );
    assert_eq!(
        slug("Drop-in for `vllm bench serve` and `aiperf profile` lines"),
        "drop-in-for-vllm-bench-serve-and-aiperf-profile-lines"
    );
    assert_eq!(slug("The server's own metrics"), "the-servers-own-metrics");
    assert_eq!(slug("See [the guide](docs/guide.md)"), "see-the-guide");
    let a = anchors("# Output\n## Output\n```\n# Output\n```\n### Output_ns µs\n");
    let want = ["output", "output-1", "output_ns-µs"];
    assert_eq!(a, want.iter().map(|s| s.to_string()).collect());
}

/// The long flag names `run --help` lists (each option line's first `--name`).
fn run_flags() -> Vec<String> {
    let out = output(ringbench(["run", "--help"]).env("COLUMNS", "100"));
    assert!(out.status.success(), "{}", out.stderr);
    let mut flags = vec![];
    for line in out.stdout.lines() {
        let indent = line.len() - line.trim_start().len();
        if !(1..=6).contains(&indent) || !line.trim_start().starts_with('-') {
            continue;
        }
        if let Some(at) = line.find("--") {
            let name: String = line[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            flags.push(format!("--{name}"));
        }
    }
    flags
}

/// The flags of `flags` that `text` never writes (as `--name` not followed by more of a name).
fn undocumented(flags: &[String], text: &str) -> Vec<String> {
    let written = |flag: &str| {
        text.match_indices(flag).any(|(at, _)| {
            let next = text[at + flag.len()..].chars().next();
            !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    flags.iter().filter(|f| !written(f)).cloned().collect()
}

#[test]
fn every_flag_of_run_help_is_in_the_docs() {
    let root = root();
    let text: String = doc_files(&root)
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let flags = run_flags();
    assert!(flags.len() > 100, "{flags:?}");
    assert!(
        flags.iter().any(|f| f == "--sim-arrivals-kept"),
        "{flags:?}"
    );
    let missing = undocumented(&flags, &text);
    assert!(
        missing.is_empty(),
        "flags of `ringbench run --help` that no page of docs/ nor the README names: {missing:?}"
    );
}

#[test]
fn a_flag_named_only_as_a_longer_flags_prefix_is_undocumented() {
    let flags = ["--turns".to_string(), "--users".to_string()];
    let text = "give `--turns-max 4` and `--users`, or --users.";
    assert_eq!(undocumented(&flags, text), ["--turns"]);
}
