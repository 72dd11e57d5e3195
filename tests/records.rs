//! Records in, figures out: `ringbench report` against a real run's files, other tools'
//! definitions against exact arithmetic on hand-built records, and the exports against
//! samples made from each tool's documented format. One simulator run (bounded: 300
//! requests on loopback) is shared by every test that needs real files.

use ringbench::collector::definitions::{Definitions, ToolView};
use ringbench::collector::replay::{self, Overrides};
use ringbench::plan::{Plan, Slo, SloMetric};
use ringbench::record::{EventStamp, OslSource, Outcome, Record};
use ringbench::summary::Summary;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MS: u64 = 1_000_000;

/// The shared run: closed loop, 4 users, 2 tokens per chunk, warm-up, an SLO.
fn run_dir() -> &'static Path {
    static DIR: OnceLock<(PathBuf, Summary)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ringbench-records-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cpus = ringbench::cli::online_cpus();
        let mut p = Plan::defaults();
        p.cpus = vec![cpus[0]];
        let sim = p.sim.as_mut().unwrap();
        sim.cpus = vec![cpus[cpus.len() - 1]];
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
        let s = ringbench::run::run(&p, |_, _| {}).expect("the run completes");
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
    let again = replay::recompute(dir, &Overrides::default()).unwrap();
    assert_eq!(summary_text(&again), written);
    // The run really had what the comparison should cover.
    assert_eq!(again.counts.ok, 300);
    assert_eq!(again.counts.warmup, 5);
    assert!(again.throughput.goodput_requests_per_s.is_some());
    assert!(again.latency_ms.itl.count > 0);
}

#[test]
fn report_overrides_change_only_what_they_name() {
    let dir = run_dir();
    let base = replay::recompute(dir, &Overrides::default()).unwrap();
    let o = Overrides {
        percentiles: Some(vec![25.0, 99.99]),
        goodput: Some(vec![Slo {
            metric: SloMetric::E2e,
            max_ms: 0.000_001,
        }]),
    };
    let s = replay::recompute(dir, &o).unwrap();
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
    let dir = std::env::temp_dir().join(format!("ringbench-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(run_dir().join("run.json"), dir.join("run.json")).unwrap();
    let good = std::fs::read_to_string(run_dir().join("requests.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    let bad = first.replace("\"outcome\":\"ok\"", "\"outcome\":\"great\"");
    std::fs::write(dir.join("requests.jsonl"), format!("{first}\n{bad}\n")).unwrap();
    let err = replay::recompute(&dir, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("requests.jsonl:2") && err.contains("great"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn ev(at_ms: u64, tokens: u32, output: bool, reasoning: bool) -> EventStamp {
    EventStamp {
        at_ns: at_ms * MS,
        tokens,
        output,
        reasoning,
        ..Default::default()
    }
}

/// Sent at 0. A role-only chunk at 2 ms, reasoning (1 token) at 10 ms, content of 2 tokens
/// at 20 ms, content of 1 token at 26 ms, a usage chunk at 27 ms; done at 28 ms; the
/// server's usage says 4 tokens.
fn reasoning_request() -> Record {
    Record {
        outcome: Outcome::Ok,
        status: 200,
        intended_ns: 0,
        sent_ns: Some(0),
        head_ns: Some(MS),
        first_token_ns: Some(10 * MS),
        first_output_ns: Some(20 * MS),
        last_token_ns: Some(26 * MS),
        done_ns: Some(28 * MS),
        input_tokens: 7,
        output_tokens: 4,
        output_source: OslSource::Usage,
        usage_completion_tokens: Some(4),
        events: vec![
            ev(2, 0, false, false),
            ev(10, 1, false, true),
            ev(20, 2, true, false),
            ev(26, 1, true, false),
            ev(27, 0, false, false),
        ],
        ..Default::default()
    }
}

fn figures(d: Definitions) -> ringbench::collector::definitions::ToolFigures {
    let mut v = ToolView::new(d, true);
    v.add(&reasoning_request());
    v.finish(&[50.0])
}

/// `a` ms over `n` in whole nanoseconds (per-request figures are integer ns), in ms.
fn q(a_ms: u64, n: u64) -> f64 {
    (a_ms * MS / n) as f64 / 1e6
}

fn ms(v: Option<f64>) -> f64 {
    v.expect("a value")
}

#[test]
fn each_tool_definition_follows_its_table_row() {
    // ringbench: TTFT 10 (reasoning counts); TPOT (26 − 10)/3; ITL gaps 10 and 6.
    let r = figures(Definitions::Ringbench);
    assert_eq!(ms(r.ttft_ms.mean), 10.0);
    assert_eq!(ms(r.tpot_ms.mean), q(16, 3));
    assert_eq!((r.itl_ms.count, ms(r.itl_ms.mean)), (2, 8.0));
    // vLLM: TTFT at the role chunk (2); ITL over 2→10→20→26: 8, 10, 6; TPOT (28 − 2)/3.
    let v = figures(Definitions::Vllm);
    assert_eq!(ms(v.ttft_ms.mean), 2.0);
    assert_eq!((v.itl_ms.count, ms(v.itl_ms.mean)), (3, 8.0));
    assert_eq!((ms(v.itl_ms.min), ms(v.itl_ms.max)), (6.0, 10.0));
    assert_eq!(ms(v.tpot_ms.mean), q(26, 3));
    // AIPerf: TTFT 10; ITL = TPOT = (28 − 10)/3 = 6, one sample per request.
    let a = figures(Definitions::Aiperf);
    assert_eq!(ms(a.ttft_ms.mean), 10.0);
    assert_eq!((a.itl_ms.count, ms(a.itl_ms.mean)), (1, 6.0));
    assert_eq!(ms(a.tpot_ms.mean), 6.0);
    // SGLang: TTFT at the first text (20); ITL 20→26 = 6; TPOT (28 − 20)/3.
    let s = figures(Definitions::Sglang);
    assert_eq!(ms(s.ttft_ms.mean), 20.0);
    assert_eq!((s.itl_ms.count, ms(s.itl_ms.mean)), (1, 6.0));
    assert_eq!(ms(s.tpot_ms.mean), q(8, 3));
    // GuideLLM: ITL (26 − 10)/3; TPOT (26 − 0)/4, TTFT included.
    let g = figures(Definitions::Guidellm);
    assert_eq!(ms(g.itl_ms.mean), q(16, 3));
    assert_eq!(ms(g.tpot_ms.mean), 6.5);
    // inference-perf: TTFT 20 (reasoning excluded); per-token ITL after the first content
    // chunk: 6 for the 26 ms chunk's one token; TPOT (26 − 10)/3.
    let i = figures(Definitions::InferencePerf);
    assert_eq!(ms(i.ttft_ms.mean), 20.0);
    assert_eq!((i.itl_ms.count, ms(i.itl_ms.mean)), (1, 6.0));
    assert_eq!(ms(i.tpot_ms.mean), q(16, 3));
    // Duration: vLLM from dispatch (0) to 28 ms; everyone agrees here.
    for f in [&r, &v, &a, &s, &g, &i] {
        assert_eq!(f.duration_s, 0.028);
        assert_eq!(f.e2e_ms.mean, Some(28.0));
    }
}

#[test]
fn definitions_skip_warmup_and_failures() {
    let mut v = ToolView::new(Definitions::Vllm, true);
    let mut warm = reasoning_request();
    warm.warmup = true;
    v.add(&warm);
    let mut failed = reasoning_request();
    failed.outcome = Outcome::Timeout;
    v.add(&failed);
    let f = v.finish(&[]);
    assert_eq!((f.ttft_ms.count, f.e2e_ms.count), (0, 0));
    assert_eq!(f.requests_per_s, None);
}
