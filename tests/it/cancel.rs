//! Client-side cancellations (`--cancel-rate`, `--cancel-after`) end to end (worker → http →
//! … → collector, and the simulator's side): the seeded share aborted exactly, none counted
//! as failures, the simulator seeing each connection closed mid-stream, and the rest measured
//! as without them. Each test holds the one lock.

use crate::support::common::{lock, out_dir, output, read_jsonl, ringbench};
use ringbench::plan::{CancelAfter, CancelSpec, SimSettings};
use ringbench::sim;
use std::collections::BTreeSet;

fn ids_where(recs: &[serde_json::Value], outcome: &str) -> BTreeSet<u64> {
    recs.iter()
        .filter(|r| r["outcome"] == outcome)
        .map(|r| r["id"].as_u64().unwrap())
        .collect()
}

/// Runs 600 requests of 30 tokens (1 ms apart) through 8 users against a simulator of its
/// own, aborting as `spec` says; the records, the summary, and what the simulator counted.
fn run_with(
    spec: Option<CancelSpec>,
    name: &str,
) -> (Vec<serde_json::Value>, ringbench::Summary, sim::SimStats) {
    let sim = crate::engine::start_sim(SimSettings {
        itl_ms: 1.0,
        ..SimSettings::default()
    });
    let mut p = crate::engine::against(&sim);
    p.model = Some("m".into());
    crate::engine::closed(&mut p, 8, 600);
    p.output_tokens = 30;
    p.seed = 3;
    p.cancel = spec;
    let dir = out_dir(name);
    p.out_dir = Some(dir.clone());
    let s = ringbench::run(&p).expect("the run completes");
    // The simulator notices a closed connection at its next write: give it the stream's end.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stats = sim.stop();
    (read_jsonl(&dir.join("requests.jsonl")), s, stats)
}

#[test]
fn a_seeded_share_is_aborted_after_n_tokens_and_the_rest_measured_as_without() {
    let _l = lock();
    let spec = CancelSpec {
        rate: 0.3,
        after: CancelAfter::Tokens { n: 3 },
    };
    let (recs, s, stats) = run_with(Some(spec), "tokens");
    let cancelled = ids_where(&recs, "cancelled_by_client");
    let chosen: BTreeSet<u64> = (0..600).filter(|&id| spec.cancels(3, id)).collect();
    assert_eq!(cancelled, chosen, "exactly the seeded choice");
    let share = cancelled.len() as f64 / 600.0;
    assert!((share - 0.3).abs() <= 0.03, "30% ± 3 points: {share}");
    assert_eq!(s.counts.tally.failed, 0, "{:?}", s.counts.failed_by_kind);
    assert_eq!(s.counts.cancelled_by_client, cancelled.len() as u64);
    assert_eq!(s.counts.tally.ok + s.counts.tally.cancelled, 600);
    assert_eq!(
        stats.aborted_mid_stream,
        cancelled.len() as u64,
        "the simulator saw every aborted connection close mid-stream"
    );
    for r in recs
        .iter()
        .filter(|r| r["outcome"] == "cancelled_by_client")
    {
        let got = r["output_tokens"].as_u64().unwrap();
        assert!(
            (3..30).contains(&got),
            "cut after 3 tokens, before 30: {got}"
        );
    }
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(crate::outputs::schema_errors(&json), Vec::<String>::new());
    let c = s.cancellations.clone().expect("a cancellations block");
    assert_eq!(c.cancelled_by_client, cancelled.len() as u64);
    assert_eq!(c.with_first_token, c.cancelled_by_client);
    // The others: the same requests as a run without cancellations, measured whole.
    let (base, base_s, base_stats) = run_with(None, "none");
    let ok = ids_where(&recs, "ok");
    let all: BTreeSet<u64> = (0..600).collect();
    assert_eq!(ok, &all - &chosen);
    assert_eq!(ids_where(&base, "ok"), all);
    assert_eq!(base_stats.aborted_mid_stream, 0);
    for r in recs.iter().filter(|r| r["outcome"] == "ok") {
        assert_eq!(r["output_tokens"], 30);
    }
    let ttft = |s: &ringbench::Summary| s.latency_ms.ttft.count;
    assert_eq!(
        ttft(&s),
        ok.len() as u64,
        "the cancelled are in no latency figure"
    );
    assert_eq!(
        ttft(&base_s),
        600,
        "latency figures only from the successful requests"
    );
}

#[test]
fn a_time_cut_is_never_early_and_the_flags_name_their_fix() {
    let _l = lock();
    let spec = CancelSpec {
        rate: 0.5,
        after: CancelAfter::Time { ns: 8_000_000 },
    };
    let (recs, s, _) = run_with(Some(spec), "time");
    let cut: Vec<_> = recs
        .iter()
        .filter(|r| r["outcome"] == "cancelled_by_client")
        .collect();
    assert!(cut.len() > 200, "{}", cut.len());
    for r in &cut {
        let held = r["done_ns"].as_u64().unwrap() - r["sent_ns"].as_u64().unwrap();
        assert!(
            held >= 8_000_000,
            "cut {held} ns after the send, before 8 ms"
        );
    }
    assert_eq!(s.counts.tally.failed, 0);
    for (args, needle) in [
        (&["--cancel-rate", "0.3"][..], "--cancel-after"),
        (
            &["--cancel-rate", "1.5", "--cancel-after", "5ms"][..],
            "--cancel-rate",
        ),
        (
            &["--cancel-rate", "0.3", "--cancel-after", "tokens:0"][..],
            "tokens",
        ),
        (
            &[
                "--cancel-rate",
                "0.3",
                "--cancel-after",
                "tokens:2",
                "--no-stream",
            ][..],
            "--no-stream",
        ),
    ] {
        let ran = output(&mut ringbench(["run"].iter().chain(args)));
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(needle), "{args:?}: {}", ran.stderr);
    }
}
