//! The help as users read it, checked in under `tests/data/help/`: a change to a flag's help
//! is a change to these files, reviewed beside the code. `RINGBENCH_BLESS=1 cargo test
//! --release --test it help::` rewrites them. The width is fixed: clap wraps at the terminal's
//! width (at most 100 columns), and here no stream is a terminal and COLUMNS is 100.

use crate::support::common::{output, ringbench};
use std::path::Path;

/// The snapshot files and the command lines they hold the output of.
const SNAPSHOTS: [(&str, &[&str]); 6] = [
    ("run-h.txt", &["run", "-h"]),
    ("run-help.txt", &["run", "--help"]),
    ("sim-help.txt", &["sim", "--help"]),
    ("sweep-h.txt", &["sweep", "-h"]),
    ("calibrate-help.txt", &["calibrate", "--help"]),
    ("k8s-manifest-help.txt", &["k8s", "manifest", "--help"]),
];

#[test]
fn help_is_the_checked_in_snapshot() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/help");
    let bless = std::env::var_os("RINGBENCH_BLESS").is_some_and(|v| v == "1");
    let mut stale = vec![];
    for (file, args) in SNAPSHOTS {
        let out = output(
            ringbench(args)
                .env("COLUMNS", "100")
                .env_remove("OPENAI_API_KEY"),
        );
        assert!(out.status.success(), "{args:?}: {}", out.stderr);
        let path = dir.join(file);
        if bless {
            std::fs::write(&path, &out.stdout).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if want != out.stdout {
            let line = want
                .lines()
                .zip(out.stdout.lines())
                .position(|(a, b)| a != b)
                .map_or(want.lines().count().min(out.stdout.lines().count()), |i| i);
            stale.push(format!("{file} (first difference at line {})", line + 1));
        }
    }
    assert!(
        stale.is_empty(),
        "the help differs from tests/data/help/: {stale:?}; review the change and rerun with \
         RINGBENCH_BLESS=1 to accept it"
    );
}

#[test]
fn short_help_is_one_line_a_flag_and_hides_the_other_tools_spellings() {
    let out = output(ringbench(["run", "-h"]).env("COLUMNS", "100"));
    let flags: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .collect();
    assert!(flags.len() > 40, "{}", out.stdout);
    for heading in [
        "Target:",
        "Load:",
        "Workload:",
        "Stop and warm-up:",
        "Output:",
        "Client overhead:",
        "TLS and auth:",
        "Simulator (no --url):",
    ] {
        assert!(out.stdout.contains(&format!("\n{heading}\n")), "{heading}");
    }
    assert!(!out.stdout.contains("--base-url") && !out.stdout.contains("--artifact-dir"));
    // Every flag's line is the only one: no continuation lines under -h.
    let continued = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("      ") && !l.trim_start().starts_with('-'))
        .collect::<Vec<_>>();
    assert!(continued.is_empty(), "wrapped: {continued:#?}");
    let long = output(ringbench(["run", "--help"]).env("COLUMNS", "100"));
    for spelling in [
        "--base-url",
        "--artifact-dir",
        "vllm bench serve's spellings",
    ] {
        assert!(long.stdout.contains(spelling), "{spelling}");
    }
}
