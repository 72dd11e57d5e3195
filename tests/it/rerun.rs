//! `ringbench run --config DIR/summary.json`: a run made again from its own output, against
//! one simulator process that keeps its prefix cache between runs, so "the same prompts" is
//! checked on the bytes (every rerun prompt found whole in the cache) and "the same schedule"
//! on the records (the same intended send time for every id).

use crate::support::common::{
    cpu_pair, lock, out_dir, output, read_json, read_jsonl, ringbench, u,
};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;

/// (id, intended send time after request 0's, input tokens, cached tokens) of a run's
/// requests, by id: the schedule's offsets, which a run's clock origin does not move.
fn requests(dir: &Path) -> Vec<(u64, u64, u64, u64)> {
    let mut rows: Vec<_> = read_jsonl(&dir.join("requests.jsonl"))
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap_or(0);
            (
                n("id"),
                n("intended_ns"),
                n("input_tokens"),
                n("cached_tokens"),
            )
        })
        .collect();
    rows.sort();
    let first = rows.first().map_or(0, |r| r.1);
    rows.iter_mut().for_each(|r| r.1 -= first);
    rows
}

#[test]
fn a_rerun_from_summary_json_sends_the_same_schedule_and_prompts() {
    let _g = lock();
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut sim = ringbench(["sim", "--port", "0", "--cpus", &sim_cpu.to_string()])
        .args(["--kv-cache-blocks", "100000", "--block-size", "16"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the simulator starts");
    let addr = {
        use std::io::BufRead;
        let mut first = String::new();
        std::io::BufReader::new(sim.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        first.trim().trim_start_matches("listening on ").to_string()
    };
    let (first, again, other) = (out_dir("first"), out_dir("again"), out_dir("other"));
    let url = format!("http://{addr}");
    let ran = output(
        ringbench([
            "run",
            "--url",
            &url,
            "--request-rate",
            "100",
            "--duration",
            "1s",
        ])
        .args(["--input-dist", "uniform:64:0.5", "--output-tokens", "2"])
        .args([
            "--seed",
            "5",
            "--quiet",
            "--allow-invalid",
            "--no-server-metrics",
        ])
        .args(["--cpus", &client_cpu.to_string(), "--out"])
        .arg(&first),
    );
    assert!(ran.status.success(), "{}", ran.stderr);
    let summary = first.join("summary.json");
    let ran = output(
        ringbench(["run", "--config"])
            .arg(&summary)
            .arg("--out")
            .arg(&again),
    );
    assert!(ran.status.success(), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("with the same plan"),
        "stderr: {}",
        ran.stderr
    );
    // A flag on the line wins: another nonce, so other prompt bytes.
    let ran = output(
        ringbench(["run", "--config"])
            .arg(&summary)
            .args(["--prompt-nonce", "1", "--out"])
            .arg(&other),
    );
    assert!(ran.status.success(), "{}", ran.stderr);
    assert!(ran.stderr.contains("config.workload"), "{}", ran.stderr);
    let _ = sim.kill();
    let _ = sim.wait();

    let (a, b, c) = (requests(&first), requests(&again), requests(&other));
    assert!(a.len() > 50, "{} requests", a.len());
    assert_eq!(a.len(), b.len());
    let lengths: std::collections::BTreeSet<u64> = a.iter().map(|r| r.2).collect();
    assert!(lengths.len() > 5, "the lengths vary: {lengths:?}");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            (x.0, x.1, x.2),
            (y.0, y.1, y.2),
            "id, intended offset, input tokens"
        );
        // The same bytes: the simulator had every full block of the prompt cached.
        assert!(
            y.3 >= y.2 / 16 * 16 - 16,
            "id {}: {} of {} cached",
            y.0,
            y.3,
            y.2
        );
    }
    let cached_other: u64 = c.iter().map(|r| r.3).sum();
    let input_other: u64 = c.iter().map(|r| r.2).sum();
    assert!(
        cached_other * 10 < input_other,
        "another nonce sends other bytes: {cached_other} of {input_other} cached"
    );
    let (sa, sb): (Value, Value) = (read_json(&summary), read_json(&again.join("summary.json")));
    // The rerun's flags: the run's, its own --out instead, and the nonce the run drew.
    let args = |s: &Value| -> Vec<String> {
        let all = s["config"]["args"].as_array().unwrap().iter();
        all.map(|a| a.as_str().unwrap().to_string())
            .filter(|a| !a.starts_with("--out=") && !a.starts_with("--prompt-nonce="))
            .collect()
    };
    assert_eq!(args(&sa), args(&sb));
    let nonce = sa["config"]["workload"]["prompt_nonce"].as_u64().unwrap();
    let flag = format!("--prompt-nonce={nonce}");
    assert!(sb["config"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == &flag));
    assert_eq!(
        sa["config"]["workload"]["prompt_nonce"],
        sb["config"]["workload"]["prompt_nonce"]
    );
    assert_eq!(u(&sa, "counts.scheduled"), u(&sb, "counts.scheduled"));
}
