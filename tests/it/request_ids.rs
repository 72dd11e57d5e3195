//! Request ids end to end: every request carries `x-request-id: <run id>-<id>` unless told
//! not to, `requests.jsonl` keeps it and what the server echoed, and the run id is the one in
//! `summary.json`. Against the in-process simulator with its echo on (vLLM's
//! `--enable-request-id-headers`), on loopback, bounded by request count.

use crate::support::common::{lock, out_dir, output, read_json, read_jsonl, ringbench, sim_plan};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// `(request_id, server_request_id)` of every record, in id order.
fn ids(dir: &Path) -> Vec<(Value, Value)> {
    let mut lines = read_jsonl(&dir.join("requests.jsonl"));
    lines.sort_by_key(|l| l["id"].as_u64().unwrap());
    lines
        .iter()
        .map(|l| (l["request_id"].clone(), l["server_request_id"].clone()))
        .collect()
}

#[test]
fn every_request_carries_its_own_id_and_the_echo_is_kept() {
    let _g = lock();
    let dir = out_dir("echo");
    let ran = output(&mut ringbench([
        "run",
        "--request-count",
        "40",
        "--concurrency",
        "4",
        "--run-id",
        "exp_1.a-b",
        "--sim-enable-request-id-headers",
        "--no-server-metrics",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(ran.status.success(), "{}", ran.stderr);
    assert_eq!(
        read_json(&dir.join("summary.json"))["config"]["run_id"],
        "exp_1.a-b"
    );
    let ids = ids(&dir);
    assert_eq!(ids.len(), 40);
    for (n, (sent, echoed)) in ids.iter().enumerate() {
        assert_eq!(sent, &Value::from(format!("exp_1.a-b-{n}")));
        assert_eq!(echoed, sent, "the simulator echoes what it got");
    }
}

#[test]
fn a_run_draws_its_own_id_and_without_ids_the_server_makes_its_own() {
    let _g = lock();
    let dir = out_dir("drawn");
    let mut p = sim_plan();
    p.stop.request_count = Some(20);
    p.sim.as_mut().unwrap().request_id_headers = true;
    p.server_metrics.enabled = false;
    p.out_dir = Some(dir.clone());
    let first = ringbench::run(&p).unwrap();
    let run_id = first.config["run_id"].as_str().unwrap().to_string();
    assert_eq!(run_id.len(), 8, "8 hex digits: {run_id}");
    assert!(run_id.bytes().all(|b| b.is_ascii_hexdigit()));
    for (n, (sent, echoed)) in ids(&dir).iter().enumerate() {
        assert_eq!(sent, &Value::from(format!("{run_id}-{n}")));
        assert_eq!(echoed, sent);
    }
    let second = ringbench::run(&p).unwrap();
    assert_ne!(
        second.config["run_id"].as_str().unwrap(),
        run_id,
        "a new id per run"
    );

    p.request_id = false;
    ringbench::run(&p).unwrap();
    let made: Vec<_> = ids(&dir)
        .into_iter()
        .map(|(sent, echoed)| {
            assert_eq!(sent, Value::Null, "none of ours went out");
            echoed.as_str().expect("the server's own id").to_string()
        })
        .collect();
    assert_eq!(made.iter().collect::<HashSet<_>>().len(), 20, "{made:?}");

    p.request_id = true;
    p.headers = vec![("X-Request-Id".into(), "mine".into())];
    ringbench::run(&p).unwrap();
    for (sent, echoed) in ids(&dir) {
        assert_eq!(
            (sent, echoed),
            (Value::Null, Value::from("mine")),
            "the user's wins"
        );
    }

    p.headers.clear();
    p.sim.as_mut().unwrap().request_id_headers = false;
    ringbench::run(&p).unwrap();
    for (sent, echoed) in ids(&dir) {
        assert!(sent.is_string());
        assert_eq!(echoed, Value::Null, "nothing echoed");
    }
}

#[test]
fn a_bad_run_id_is_refused_naming_the_flag() {
    let ran = output(&mut ringbench(["run", "--run-id", "has space", "--quiet"]));
    assert_eq!(ran.status.code(), Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("--run-id has space"), "{}", ran.stderr);
    let long = "x".repeat(24);
    let ran = output(&mut ringbench(["run", "--run-id", &long, "--quiet"]));
    assert_eq!(ran.status.code(), Some(2));
    assert!(ran.stderr.contains("1 to 23 bytes"), "{}", ran.stderr);
}
