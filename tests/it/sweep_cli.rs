//! `sweep` and `search` through the binary, for what only the binary decides: exit 4 when
//! the client's own overhead made a point invalid (0 with `--allow-invalid`), and SIGINT
//! mid-sweep (the point running stops, later ones never start, the files are written with
//! what was measured, exit 130). Every run uses the binary's built-in simulator on
//! loopback and lasts a few seconds; runs are serialized with the one lock, as in `e2e`.

use crate::support::common::{self, leftovers, lock, out_dir, output, read_json, signal};
use crate::support::common::{wait_within, Ran};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn ringbench(args: &[&str], dir: &Path) -> Ran {
    output(common::ringbench(args).arg("--out").arg(dir))
}

/// `--max-lag` is in ms and must be above 0: a nanosecond bound no real send meets, so
/// every open-loop run is invalid ("scheduling lag p99 … above the … bound (--max-lag)").
const IMPOSSIBLE_LAG: [&str; 2] = ["--max-lag", "0.000001"];

/// Short open-loop points: 60 requests after 5 warm-up ones, 2 tokens each.
const SHORT: [&str; 9] = [
    "--request-count",
    "60",
    "--warmup-requests",
    "5",
    "--output-tokens",
    "2",
    "--cooldown",
    "0s",
    "--quiet",
];

#[test]
fn sweep_with_an_invalid_point_exits_4_and_marks_it_unless_allowed() {
    let _g = lock();
    let dir = out_dir("sweep-invalid");
    let mut args = vec![
        "sweep",
        "--request-rate",
        "100,200",
        "--slo",
        "e2e:p50<1000ms",
    ];
    args.extend(SHORT);
    args.extend(IMPOSSIBLE_LAG);
    let out = ringbench(&args, &dir);
    let stderr = &out.stderr;
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("--max-lag"),
        "the reason is printed: {stderr}"
    );
    assert!(stderr.contains("invalid (client overhead) at loads [100.0, 200.0]"));
    let s = read_json(&dir.join("sweep.json"));
    for p in s["points"].as_array().unwrap() {
        assert_eq!(p["valid"], false, "{}", p["load"]);
        let why = p["invalid_reasons"][0].as_str().unwrap();
        assert!(
            why.starts_with("repeat 1: ") && why.contains("--max-lag"),
            "{why}"
        );
        // The SLO held, but an invalid point does not pass.
        assert_eq!(p["slos"][0]["pass"], true);
        assert_eq!(p["pass"], false);
    }
    assert!(s["analysis"]["knee"].is_null());
    // report.html says it in the console's words (it once said FAIL or pass).
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<td class=\"fail\">INVALID</td>").count(), 2);
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert!(
        csv.lines().nth(1).unwrap().ends_with(",false,false"),
        "{csv}"
    );

    // --allow-invalid applies to every point: exit 0, the points still marked.
    args.push("--allow-invalid");
    let out = ringbench(&args, &dir);
    let stderr = &out.stderr;
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let s = read_json(&dir.join("sweep.json"));
    for p in s["points"].as_array().unwrap() {
        assert_eq!(
            (&p["valid"], &p["pass"]),
            (&Value::Bool(false), &Value::Bool(true))
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_with_invalid_probes_exits_4_counting_them_as_failing_unless_allowed() {
    let _g = lock();
    let dir = out_dir("search-invalid");
    let mut args = vec!["search", "--request-rate", "100", "--slo", "e2e:p50<1000ms"];
    args.extend(["--max-iterations", "2"]);
    args.extend(SHORT);
    args.extend(IMPOSSIBLE_LAG);
    let out = ringbench(&args, &dir);
    let stderr = &out.stderr;
    // Every probe invalid, so none passes: 4 comes before 3 (no passing load).
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("probe 1 load 100 invalid") && stderr.contains("--max-lag"));
    let s = read_json(&dir.join("search.json"));
    assert!(s["answer"].is_null());
    let probes = s["probes"].as_array().unwrap();
    assert!(!probes.is_empty());
    for p in probes {
        assert_eq!(
            (&p["valid"], &p["pass_smoothed"]),
            (&Value::Bool(false), &Value::Bool(false))
        );
        assert!(p["invalid_reasons"][0]
            .as_str()
            .unwrap()
            .contains("--max-lag"));
    }
    // Allowed, the same figures pass: 100 then 200 req/s, and the iterations end it.
    args.push("--allow-invalid");
    let out = ringbench(&args, &dir);
    let stderr = &out.stderr;
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let s = read_json(&dir.join("search.json"));
    assert_eq!(s["answer"], 200.0);
    assert_eq!(s["probes"][1]["valid"], false);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts the binary with stdout piped; its lines arrive on the channel as printed.
fn spawn_with_lines(args: &[&str], dir: &Path) -> (Child, mpsc::Receiver<String>) {
    let mut child = common::ringbench(args)
        .arg("--out")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

fn wait_for_line(rx: &mpsc::Receiver<String>, starts: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.starts_with(starts) => return l,
            Ok(_) => {}
            Err(e) => panic!("no line starting '{starts}': {e}"),
        }
    }
}

fn sigint_and_wait(child: &mut Child, limit: Duration) -> (i32, Duration) {
    signal(child, libc::SIGINT);
    let t0 = Instant::now();
    let code = wait_within(child, limit);
    (code, t0.elapsed())
}

/// No temporary name left in `dir` or any folder under it.
fn no_leftovers(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        assert_eq!(leftovers(&d), Vec::<PathBuf>::new());
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
}

/// Closed-loop points of 2 s each (5 ms per request): SIGINT half a second into the second.
const TWO_SECOND_POINTS: [&str; 12] = [
    "--duration",
    "2s",
    "--sim-ttft-ms",
    "5",
    "--output-tokens",
    "2",
    "--cooldown",
    "0s",
    "--grace",
    "200ms",
    "--slo",
    "ttft:p95<1000ms",
];

#[test]
fn sigint_mid_sweep_keeps_what_was_measured_and_exits_130() {
    let _g = lock();
    let dir = out_dir("sweep-sigint");
    let mut args = vec!["sweep", "--concurrency", "1,2,4", "--quiet"];
    args.extend(TWO_SECOND_POINTS);
    let (mut child, lines) = spawn_with_lines(&args, &dir);
    wait_for_line(&lines, "load        1 ");
    std::thread::sleep(Duration::from_millis(500));
    let (code, took) = sigint_and_wait(&mut child, Duration::from_secs(10));
    assert_eq!(code, 130);
    // The grace (200 ms) and the files, not the 1.5 s left of the point nor the third one.
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let s = read_json(&dir.join("sweep.json"));
    assert_eq!(s["interrupted"], true);
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "the third point never started");
    let (first, second) = (&points[0], &points[1]);
    assert_eq!(
        (&first["load"], &first["interrupted"]),
        (&1.0.into(), &false.into())
    );
    assert_eq!(first["pass"], true);
    assert!(first["runs"][0]["counts"]["ok"].as_u64().unwrap() > 100);
    assert_eq!(
        (&second["load"], &second["interrupted"]),
        (&2.0.into(), &true.into())
    );
    assert_eq!(second["runs"][0]["interrupted"], true);
    assert_eq!(second["pass"], false, "a cut point decides nothing");
    // The crossing ignores the cut point: every counted point passed.
    assert_eq!(s["analysis"]["highest_pass"], 1.0);
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.lines().nth(2).unwrap().ends_with(",true"), "{csv}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("Interrupted"));
    assert!(!dir.join("points/c4-1").exists());
    read_json(&dir.join("points/c2-1/summary.json"));
    no_leftovers(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_mid_search_writes_the_history_and_exits_130() {
    let _g = lock();
    let dir = out_dir("search-sigint");
    let mut args = vec!["search", "--concurrency", "1", "--quiet"];
    args.extend(TWO_SECOND_POINTS);
    let (mut child, lines) = spawn_with_lines(&args, &dir);
    wait_for_line(&lines, "probe  1 ");
    std::thread::sleep(Duration::from_millis(500));
    let (code, _) = sigint_and_wait(&mut child, Duration::from_secs(10));
    assert_eq!(code, 130);
    let s = read_json(&dir.join("search.json"));
    assert_eq!(s["interrupted"], true);
    assert!(s["stop_reason"].as_str().unwrap().contains("interrupted"));
    let probes = s["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2);
    assert_eq!(probes[0]["interrupted"], false);
    assert_eq!(probes[1]["interrupted"], true);
    // Only the whole probe (1 user, passed) decides: the bracket has no failing end.
    assert_eq!(s["bracket"], serde_json::json!([1.0, null]));
    no_leftovers(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}
