//! Interruption end to end, through the binary: SIGINT mid-run stops scheduling, lets
//! in-flight requests finish within `--grace`, cancels the rest, and leaves a partial
//! summary marked `interrupted` beside a `requests.jsonl` of whole lines; a second signal
//! ends the process at once and still leaves only valid files. Runs are serialized.

use crate::support::common::{leftovers, lock, out_dir, read_json, ringbench, signal};
use crate::support::common::{wait_within, within_attempts};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A 20 s open-loop run whose requests each take 2 s (20 tokens, 100 ms apart).
fn start(dir: &Path, grace: &str) -> Child {
    ringbench(["run", "--request-rate", "40", "--duration", "20s"])
        .args(["--output-tokens", "20", "--sim-itl-ms", "100", "--quiet"])
        .args(["--grace", grace, "--out"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Every line parses as one JSON object; returns them.
fn jsonl(dir: &Path) -> Vec<Value> {
    lines_of(&dir.join("requests.jsonl"))
}

fn lines_of(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "a cut line");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {e}: {l}")))
        .collect()
}

/// Starts a run in `dir` with `grace`, signals it `signals` (the first after `after`, each
/// next 100 ms later) and waits for its end: the time from the last signal to the exit,
/// which must be under `limit` (`Err` with it otherwise; a loaded machine can slow an exit).
fn interrupted(
    dir: &Path,
    grace: &str,
    after: Duration,
    signals: &[libc::c_int],
    limit: Duration,
) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    let mut child = start(dir, grace);
    std::thread::sleep(after);
    let mut t0 = Instant::now();
    for (k, &sig) in signals.iter().enumerate() {
        if k > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        signal(&child, sig);
        t0 = Instant::now();
    }
    let code = wait_within(&mut child, Duration::from_secs(10));
    let took = t0.elapsed();
    assert_eq!(code, 130);
    match took < limit {
        true => Ok(()),
        false => Err(format!("the exit took {took:?} (bound {limit:?})")),
    }
}

#[test]
fn sigint_stops_waits_the_grace_cancels_and_writes_an_interrupted_summary() {
    let _g = lock();
    let dir = out_dir("sigint");
    // Grace 300 ms, then cancel: the 2 s requests in flight cannot have finished.
    within_attempts(3, "an exit soon after the grace", |_| {
        let after = Duration::from_millis(1500);
        interrupted(
            &dir,
            "300ms",
            after,
            &[libc::SIGINT],
            Duration::from_secs(3),
        )
    });
    let s = read_json(&dir.join("summary.json"));
    let c = &s["counts"];
    let n = |k: &str| c[k].as_u64().unwrap();
    assert_eq!(s["interrupted"], Value::Bool(true));
    assert!(n("cancelled") > 0, "{c}");
    assert!(n("not_sent") > 0, "{c}");
    assert_eq!(n("sent"), n("ok") + n("failed") + n("cancelled"), "{c}");
    assert_eq!(n("scheduled"), n("sent") + n("not_sent"), "{c}");
    assert_eq!(n("failed"), 0, "{c}");
    let lines = jsonl(&dir);
    assert_eq!(
        lines.len() as u64,
        n("scheduled"),
        "one line per scheduled request"
    );
    let cancelled = lines.iter().filter(|l| l["outcome"] == "cancelled").count();
    assert_eq!(cancelled as u64, n("cancelled"));
    // Every file was renamed into place: no temporary name is left, and each parses.
    assert_eq!(leftovers(&dir), Vec::<PathBuf>::new());
    for name in ["run.json", "vllm_result.json", "profile_export_aiperf.json"] {
        read_json(&dir.join(name));
    }
    lines_of(&dir.join("profile_export.jsonl"));
    // The interval log is whole; no request finished (2 s each, cut at 1.8 s), so it holds
    // the header and no interval.
    let hlog = std::fs::read_to_string(dir.join("e2e.hlog")).unwrap();
    assert!(hlog.starts_with('#') && hlog.ends_with('\n'), "{hlog}");
    let intervals = hlog.lines().filter(|l| l.starts_with("Tag=e2e,")).count();
    assert_eq!(intervals as u64, n("ok").min(1), "{hlog}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_long_grace_lets_in_flight_requests_finish() {
    let _g = lock();
    let dir = out_dir("grace");
    let mut child = start(&dir, "10s");
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGTERM);
    assert_eq!(wait_within(&mut child, Duration::from_secs(10)), 130);
    let s = read_json(&dir.join("summary.json"));
    let c = &s["counts"];
    assert_eq!(c["cancelled"], 0, "{c}");
    assert!(c["ok"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(c["sent"], c["ok"], "{c}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_signal_quits_at_once_leaving_valid_files() {
    let _g = lock();
    let dir = out_dir("twice");
    // At once: well before the 10 s grace, and before the 2 s requests in flight could end.
    within_attempts(3, "an exit at once on the second signal", |_| {
        let (after, twice) = (Duration::from_millis(3500), [libc::SIGINT; 2]);
        interrupted(&dir, "10s", after, &twice, Duration::from_secs(1))
    });
    // Killed outright, the log never got its final name; under its temporary name it was
    // flushed about once a second and holds the first seconds' records, whole.
    assert!(!dir.join("requests.jsonl").exists());
    let left = leftovers(&dir);
    let tmp = left
        .iter()
        .find(|p| p.to_string_lossy().contains(".requests.jsonl.tmp."))
        .unwrap_or_else(|| panic!("no temporary log among {left:?}"));
    let lines = lines_of(tmp);
    assert!(
        !lines.is_empty(),
        "what was measured before the flush survives"
    );
    if let Ok(bytes) = std::fs::read(dir.join("summary.json")) {
        serde_json::from_slice::<Value>(&bytes).expect("summary.json is whole or absent");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
