//! The binary's edges for `sweep`, `search` and `run`, as a shell sees them: the SLO gate's
//! exit status (3 when no point meets the SLOs; 0 otherwise), a run's verdict (5 when no
//! measured request succeeded; 3 past `--max-failed`), and a reader that closes the pipe
//! early (`| head -1`), which must end quietly with the usual status, never a panic. Each
//! command runs the built-in simulator on loopback with a few short points; the commands
//! are serialized with the one lock so they don't measure each other.

use crate::support::common::{lock, out_dir, output, read_json, ringbench, u, Ran};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

/// Short points: 30 measured requests of 2 tokens, no cooldown; a point the loaded machine
/// made invalid still counts (the gates are the subject here, not the client's verdict).
const SHORT: [&str; 7] = [
    "--allow-invalid",
    "--request-count",
    "30",
    "--output-tokens",
    "2",
    "--cooldown",
    "0s",
];

fn run(args: &[&str]) -> Ran {
    output(&mut ringbench(args))
}

#[test]
fn sweep_exits_3_when_no_point_meets_the_slos_and_0_when_one_does() {
    let _g = lock();
    let mut args = vec!["sweep", "--concurrency", "1,2", "--slo", "ttft:p95<0.001ms"];
    args.extend(SHORT);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(3), "{}", out.stderr);
    assert_eq!(out.stdout.matches("FAIL").count(), 2);
    args[4] = "ttft:p95<60000ms";
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
    // Without SLOs there is no gate.
    let mut args = vec!["sweep", "--concurrency", "1"];
    args.extend(SHORT);
    assert_eq!(run(&args).status.code(), Some(0));
}

#[test]
fn search_exits_3_when_even_the_lowest_load_fails() {
    let _g = lock();
    let mut args = vec!["search", "--concurrency", "1", "--slo", "ttft:p95<0.001ms"];
    args.extend(SHORT);
    let out = run(&args);
    let stdout = &out.stdout;
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", out.stderr);
    assert!(stdout.contains("answer: concurrency = none"), "{stdout}");
    assert!(stdout.contains("lowest load"), "{stdout}");
}

/// Reads `lines` lines of the child's stdout, closes the pipe, and waits for the child.
fn close_after(mut cmd: Command, lines: usize) -> (Option<i32>, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        for _ in 0..lines {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert!(
                !line.is_empty(),
                "the command printed fewer than {lines} lines"
            );
        }
    } // dropped: the read end of the pipe is closed
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_usual_status() {
    let _g = lock();
    // sweep | head -1: the point lines and the analysis come after the reader left.
    let mut args = vec!["sweep", "--concurrency", "1,2", "--slo", "ttft:p95<60000ms"];
    args.extend(SHORT);
    let (code, stderr) = close_after(ringbench(&args), 1);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    // search | head -1, with an SLO nothing meets: the gate's 3 still comes through.
    let mut args = vec!["search", "--concurrency", "1", "--slo", "ttft:p95<0.001ms"];
    args.extend(SHORT);
    let (code, stderr) = close_after(ringbench(&args), 1);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(3), "{stderr}");
    // run with its stdout closed before the first line.
    let (code, stderr) = close_after(
        ringbench([
            "run",
            "--request-count",
            "30",
            "--output-tokens",
            "2",
            "--allow-invalid",
        ]),
        0,
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
}

/// Every request answered HTTP 500: the run ends, and its exit status, its console and its
/// `summary.json` all say that nothing succeeded.
#[test]
fn a_run_where_no_request_succeeds_exits_5_and_says_why() {
    let _g = lock();
    let dir = out_dir("none-succeeded");
    let out = output(
        ringbench([
            "run",
            "--request-count",
            "20",
            "--sim-fault",
            "http_500:1.0",
        ])
        .args(["--quiet", "--out"])
        .arg(&dir),
    );
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stdout}{stderr}");
    let verdict = stdout
        .lines()
        .find(|l| l.starts_with("Verdict:"))
        .unwrap_or_else(|| panic!("no verdict line in:\n{stdout}"));
    assert!(verdict.contains("FAILED (exit 5)"), "{verdict}");
    assert!(stdout.contains("no measured request succeeded"), "{stdout}");
    let s = read_json(&dir.join("summary.json"));
    let v = &s["verdict"];
    assert_eq!(u(&s, "verdict.exit_code"), 5, "{v}");
    assert_eq!(v["none_succeeded"], true, "{v}");
    let first = v["reasons"][0].as_str().unwrap_or_default();
    assert!(first.starts_with("no measured request succeeded"), "{v}");
    assert_eq!(u(&s, "counts.ok"), 0, "{}", s["counts"]);
    assert_eq!(
        u(&s, "counts.failed_by_kind.http_500"),
        20,
        "{}",
        s["counts"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Half the requests answered HTTP 500 (drawn per request with a seeded generator): above a
/// 10% `--max-failed` the gate fails (exit 3), under 90% it holds (exit 0). 200 requests put
/// the share within a few points of 50% (binomial: σ ≈ 3.5 points), far from either bound.
/// `--allow-invalid`: the gate is the subject, not the client's overhead on a busy machine.
#[test]
fn max_failed_gates_the_failure_share() {
    let _g = lock();
    let run = |max_failed: &str| {
        let out = output(&mut ringbench([
            "run",
            "--request-count",
            "200",
            "--sim-fault",
            "http_500:0.5",
            "--max-failed",
            max_failed,
            "--allow-invalid",
            "--quiet",
        ]));
        (out.status.code(), out.stdout, out.stderr)
    };
    let (code, stdout, stderr) = run("10");
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    assert!(stdout.contains("above --max-failed 10%"), "{stdout}");
    let (code, stdout, stderr) = run("90");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains("above --max-failed"), "{stdout}");
}
