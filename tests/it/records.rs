//! Records in, figures out, through the public API: `ringbench report` (`report::recompute`)
//! against a real run's files reproduces its `summary.json` byte for byte, changes only what
//! an override names, and names the file and line of a broken record. One simulator run
//! (bounded: 300 requests on loopback, under the one lock) is shared by the tests. Other
//! tools' definitions and the exports, from hand-built records, are unit tests beside the
//! collector (`src/collector/replay_tests.rs`).

use crate::support::common::{cpu_pair, lock, made_dir, out_dir};
use ringbench::plan::{Plan, Slo, SloMetric};
use ringbench::report::{self, Overrides};
use ringbench::summary::Summary;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The shared run: closed loop, 4 users, 2 tokens per chunk, warm-up, an SLO.
fn run_dir() -> &'static Path {
    static DIR: OnceLock<(PathBuf, Summary)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let _g = lock();
        let dir = out_dir("run");
        let (client_cpu, sim_cpu) = cpu_pair();
        let mut p = Plan::defaults();
        p.cpus = vec![client_cpu];
        let sim = p.sim.as_mut().unwrap();
        sim.cpus = vec![sim_cpu];
        sim.itl_ms = 0.2;
        sim.tokens_per_chunk = 2;
        p.load = ringbench::plan::Load::Closed { concurrency: 4 };
        p.stop.request_count = Some(300);
        p.warmup_requests = 5;
        p.goodput = vec![Slo {
            metric: SloMetric::E2e,
            max_ms: 50.0,
        }];
        p.out_dir = Some(dir.clone());
        let s = ringbench::run(&p).expect("the run completes");
        (dir, s)
    })
    .0
}

fn summary_text(s: &Summary) -> String {
    serde_json::to_string_pretty(s).unwrap() + "\n"
}

#[test]
fn report_with_no_options_reproduces_summary_json_byte_for_byte() {
    let dir = run_dir();
    let written = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let again = report::recompute(dir, &Overrides::default()).unwrap();
    assert_eq!(summary_text(&again), written);
    // The run really had what the comparison should cover.
    assert_eq!(again.counts.tally.ok, 300);
    assert_eq!(again.counts.warmup, 5);
    assert!(again.throughput.goodput_requests_per_s.is_some());
    assert!(again.latency_ms.itl.count > 0);
}

#[test]
fn report_overrides_change_only_what_they_name() {
    let dir = run_dir();
    let base = report::recompute(dir, &Overrides::default()).unwrap();
    let o = Overrides {
        percentiles: Some(vec![25.0, 99.99]),
        goodput: Some(vec![Slo {
            metric: SloMetric::E2e,
            max_ms: 0.000_001,
        }]),
    };
    let s = report::recompute(dir, &o).unwrap();
    assert!(s.latency_ms.ttft.extra.contains_key("p25"));
    assert!(s.latency_ms.ttft.is_small("p99_99"));
    assert_eq!(s.config["percentiles"], serde_json::json!([25.0, 99.99]));
    // Nothing meets a 1 ns end-to-end bound.
    assert_eq!(s.throughput.goodput_requests_per_s, Some(0.0));
    assert_eq!(s.throughput.good_fraction, Some(0.0));
    assert_eq!(s.latency_ms.ttft.p50, base.latency_ms.ttft.p50);
    assert_eq!(s.duration_s, base.duration_s);
    assert_eq!(s.counts, base.counts);
}

#[test]
fn a_broken_line_is_named_with_file_and_line() {
    let dir = made_dir("broken");
    std::fs::copy(run_dir().join("run.json"), dir.join("run.json")).unwrap();
    let good = std::fs::read_to_string(run_dir().join("requests.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    let bad = first.replace("\"outcome\":\"ok\"", "\"outcome\":\"great\"");
    std::fs::write(dir.join("requests.jsonl"), format!("{first}\n{bad}\n")).unwrap();
    let err = report::recompute(&dir, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("requests.jsonl:2") && err.contains("great"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
