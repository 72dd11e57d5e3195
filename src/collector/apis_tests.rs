//! The figures of the APIs beyond plain generation against exact arithmetic: hand-built
//! records of a pooling run (items, bytes, stamps) and of a run with tools (tool calls) go
//! in, and `throughput`, `pooling`, `tools`, `failed_by_kind` come out as worked by hand in
//! the comments; then the same records written to `requests.jsonl` give the same summary
//! through `ringbench report`, and the exports write what vLLM and AIPerf write for a pooling
//! run.

use super::{replay, Collector, RunFacts};
use crate::output::console;
use crate::plan::{Endpoint, Plan, Tool};
use crate::record::{Outcome, Record};
use crate::run::testkit::out_dir;
use crate::summary::Summary;
use std::path::{Path, PathBuf};

const MS: u64 = 1_000_000;

fn assert_exact(got: Option<f64>, want: f64) {
    let got = got.unwrap_or_else(|| panic!("expected {want}, got null"));
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "got {got}, want {want}"
    );
}

fn facts(scheduled: u64) -> RunFacts {
    RunFacts {
        started_at: "2026-12-03T10:00:00Z".into(),
        io_driver: "epoll".into(),
        scheduled,
        ..Default::default()
    }
}

/// A finished request of one body (no stream): sent at `sent_ms`, head 1 ms later, done at
/// `done_ms`.
fn answered(id: u64, sent_ms: u64, done_ms: u64) -> Record {
    Record {
        id,
        outcome: Outcome::Ok,
        status: 200,
        intended_ns: sent_ms * MS,
        sent_ns: Some(sent_ms * MS),
        head_ns: Some((sent_ms + 1) * MS),
        done_ns: Some(done_ms * MS),
        input_tokens: 10,
        reads: 1,
        ..Default::default()
    }
}

/// A pooling answer of `items` inputs and `bytes` bytes; 16 client tokens per input, the
/// server's count 17 per input.
fn pooled(id: u64, sent_ms: u64, done_ms: u64, items: u32, bytes: u64) -> Record {
    Record {
        items,
        bytes,
        input_tokens: 16 * items,
        usage_prompt_tokens: Some(17 * items),
        ..answered(id, sent_ms, done_ms)
    }
}

fn embeddings_plan() -> Plan {
    let mut plan = Plan::defaults();
    plan.endpoint = Endpoint::Embeddings;
    plan.api.batch_size = 8;
    plan
}

/// Three answers of 8 embeddings each — sent 0, 10, 20 ms, done 10, 20, 40 ms, of 1000,
/// 2000, 3000 bytes — and a timeout sent at 30 ms, ended at 35 ms. Duration: 0 → 40 ms.
fn pooling_records() -> Vec<Record> {
    let mut timeout = answered(3, 30, 35);
    timeout.outcome = Outcome::Timeout;
    timeout.status = 0;
    vec![
        pooled(0, 0, 10, 8, 1_000),
        pooled(1, 10, 20, 8, 2_000),
        pooled(2, 20, 40, 8, 3_000),
        timeout,
    ]
}

fn run(plan: &Plan, records: &[Record]) -> Summary {
    let mut c = Collector::new(plan, None).unwrap();
    records.iter().for_each(|r| c.add(r));
    c.finish(facts(records.len() as u64)).unwrap()
}

/// The run written to a folder (`requests.jsonl`, `run.json`) and its summary.
fn run_in(name: &str, plan: &Plan, records: &[Record]) -> (PathBuf, Summary) {
    let dir = out_dir(name);
    let mut c = Collector::new(plan, Some(&dir)).unwrap();
    records.iter().for_each(|r| c.add(r));
    let s = c.finish(facts(records.len() as u64)).unwrap();
    (dir, s)
}

fn console_text(s: &Summary) -> String {
    let mut out = Vec::new();
    console::print_console(s, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn pooling_figures_are_exact() {
    let s = run(&embeddings_plan(), &pooling_records());
    assert_eq!((s.counts.tally.ok, s.counts.tally.failed), (3, 1));
    assert_eq!(s.duration_s, 0.04);
    let t = &s.throughput;
    // 24 inputs answered (the timeout's 0 left out) over 40 ms.
    assert_exact(t.inputs_per_s, 600.0);
    // Client: 3 × 128 tokens; server: 3 × 136; over 40 ms.
    assert_exact(t.input_tokens_per_s, 9_600.0);
    assert_exact(t.server_input_tokens_per_s, 10_200.0);
    assert_exact(t.requests_per_s, 75.0);
    let p = s.pooling.as_ref().expect("a pooling block");
    assert_eq!(p.endpoint, "embeddings");
    assert_eq!(p.inputs, 24);
    assert_exact(p.inputs_per_request_mean, 8.0);
    // Bytes of the three answers: 1000, 2000, 3000 (the histogram holds them exactly).
    let b = &p.response_bytes;
    assert_eq!(b.count, 3);
    assert_exact(b.mean, 2_000.0);
    assert_exact(b.min, 1_000.0);
    assert_exact(b.max, 3_000.0);
    assert_exact(b.p50, 2_000.0);
    assert_exact(b.p99, 3_000.0);
    assert_exact(b.std, (2_000_000.0f64 / 3.0).sqrt());
    assert!(b.is_small("p99"));
    // Not streamed: E2E-type latencies only (E2E 10, 10, 20 ms), no stream figure.
    assert_eq!(s.latency_ms.e2e.count, 3);
    assert_exact(s.latency_ms.e2e.mean, 40.0 / 3.0);
    assert_eq!(s.latency_ms.ttfb.count, 3);
    assert_eq!(s.latency_ms.ttft.count, 0);
    assert!(s.stalls.is_none(), "no chunk gaps to judge");
    assert!(s.tools.is_none());
}

#[test]
fn the_servers_input_rate_needs_every_answer_to_report_it() {
    let mut records = pooling_records();
    records[1].usage_prompt_tokens = None;
    let s = run(&embeddings_plan(), &records);
    assert_eq!(s.throughput.server_input_tokens_per_s, None);
    assert_exact(s.throughput.input_tokens_per_s, 9_600.0);
    // A generating run has no inputs rate and no pooling block.
    let gen = run(&Plan::defaults(), &[answered(0, 0, 10)]);
    assert_eq!(gen.throughput.inputs_per_s, None);
    assert!(gen.pooling.is_none());
    assert_exact(gen.throughput.input_tokens_per_s, 1_000.0);
}

#[test]
fn a_pooling_console_says_not_streamed_once_and_shows_its_own_figures() {
    let text = console_text(&run(&embeddings_plan(), &pooling_records()));
    assert_eq!(text.matches("not streamed").count(), 1, "{text}");
    for line in [
        "Streaming:                               not streamed (embeddings answers one body",
        "--------------Pooling (embeddings)---------------",
        "Inputs answered:                         24",
        "Inputs per request (mean):               8.00",
        "Input throughput (inputs/s):             600.00",
        "Input token throughput (tok/s):          9600.00 (client) · 10200.00 (server)",
        "Response bytes mean / median / P99:      2000 / 2000 / 3000 *",
        "Mean E2E (ms):                           13.33",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    for absent in ["TTFT", "TPOT", "ITL", "generated tokens", "Output token"] {
        assert!(!text.contains(absent), "{absent:?} shown in\n{text}");
    }
}

fn calling(id: u64, tool_calls: u32) -> Record {
    Record {
        tool_calls,
        ..answered(id, id * 10, id * 10 + 5)
    }
}

fn tools_plan() -> Plan {
    let mut plan = Plan::defaults();
    plan.api.tools = vec![Tool {
        name: "weather".into(),
        description: None,
        parameters: serde_json::json!({"type": "object"}),
    }];
    plan
}

/// Four answers with 0, 1, 3 and 0 tool calls; a warm-up answer with 5 and a reset one
/// with 2, both left out.
fn tool_records() -> Vec<Record> {
    let mut warm = calling(4, 5);
    warm.warmup = true;
    let mut reset = calling(5, 2);
    reset.outcome = Outcome::ResetMidStream;
    vec![
        calling(0, 0),
        calling(1, 1),
        calling(2, 3),
        calling(3, 0),
        warm,
        reset,
    ]
}

#[test]
fn tool_call_figures_are_exact() {
    let s = run(&tools_plan(), &tool_records());
    let t = s.tools.as_ref().expect("a tools block");
    assert_eq!((t.responses, t.with_calls, t.calls), (4, 2, 4));
    assert_exact(t.with_calls_fraction, 0.5);
    assert_exact(t.calls_per_response_mean, 1.0);
    assert_exact(t.calls_per_calling_response_mean, 2.0);
    let text = console_text(&s);
    for line in [
        "-------------------Tool calls-------------------",
        "Responses with a tool call:              2",
        "Responses with a tool call (fraction):   0.50",
        "Tool calls per calling response (mean):  2.00",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // Tools offered, none called: the block says so with zeros and nulls.
    let none = run(&tools_plan(), &[calling(0, 0)]);
    let t = none.tools.expect("offered tools show the block");
    assert_eq!((t.responses, t.calls), (1, 0));
    assert_eq!(t.calls_per_calling_response_mean, None);
    // No tools offered: no block, unless an answer called one all the same.
    assert!(run(&Plan::defaults(), &[calling(0, 0)]).tools.is_none());
    let unasked = run(&Plan::defaults(), &[calling(0, 2)]).tools.unwrap();
    assert_eq!((unasked.with_calls, unasked.calls), (1, 2));
}

#[test]
fn an_answer_in_another_apis_shape_is_a_failure_of_its_own_kind() {
    let mut wrong = answered(1, 10, 20);
    wrong.outcome = Outcome::WrongApi;
    let s = run(&Plan::defaults(), &[answered(0, 0, 10), wrong]);
    assert_eq!((s.counts.tally.ok, s.counts.tally.failed), (1, 1));
    assert_eq!(s.counts.failed_by_kind.get("wrong_api"), Some(&1));
    assert_eq!(s.latency_ms.e2e.count, 1, "kept out of the latencies");
    let text = console_text(&s);
    let line = "  answers in another API's shape:        1";
    assert!(text.contains(line), "missing {line:?} in\n{text}");
}

/// The run in `dir` recomputed from its files, as `ringbench report` does.
fn reported(dir: &Path) -> Summary {
    replay::recompute(dir, &Default::default()).unwrap()
}

fn text(s: &Summary) -> String {
    serde_json::to_string_pretty(s).unwrap()
}

#[test]
fn report_recomputes_the_pooling_and_tool_figures_exactly() {
    let (dir, ran) = run_in("pooling-report", &embeddings_plan(), &pooling_records());
    assert_eq!(text(&reported(&dir)), text(&ran));
    assert!(ran.pooling.is_some());
    std::fs::remove_dir_all(&dir).unwrap();
    let (dir, ran) = run_in("tools-report", &tools_plan(), &tool_records());
    assert_eq!(text(&reported(&dir)), text(&ran));
    assert_eq!(ran.tools.as_ref().map(|t| t.calls), Some(4));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_log_written_before_tool_calls_and_items_existed_reads_them_as_zero() {
    let (dir, ran) = run_in("old-log", &tools_plan(), &tool_records());
    let log = dir.join(crate::record::jsonl::FILE_NAME);
    let new = std::fs::read_to_string(&log).unwrap();
    let mut old = String::new();
    for line in new.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let o = v.as_object_mut().unwrap();
        assert!(o.remove("tool_calls").is_some() && o.remove("items").is_some());
        old += &(v.to_string() + "\n");
    }
    std::fs::write(&log, old).unwrap();
    let again = reported(&dir);
    let t = again.tools.expect("tools were offered");
    assert_eq!((t.responses, t.with_calls, t.calls), (4, 0, 0));
    assert_eq!(again.counts, ran.counts);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_exports_write_what_vllm_and_aiperf_write_for_a_pooling_run() {
    use crate::output::export;
    use crate::plan::ExportKind;
    let mut plan = embeddings_plan();
    plan.percentiles = vec![99.0];
    let (dir, s) = run_in("pooling-exports", &plan, &pooling_records());
    let kinds = [ExportKind::Vllm, ExportKind::Aiperf, ExportKind::Csv];
    export::write_all(&dir, &dir, &s, &kinds).unwrap();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
    };
    // vLLM's pooling result: inputs as total_input_tokens (3 × 128 over 40 ms), E2E only.
    let v = read("vllm_result.json");
    assert_eq!(v["backend"], "openai-embeddings");
    assert_eq!(
        (v["completed"].clone(), v["failed"].clone()),
        (3.into(), 1.into())
    );
    assert_eq!(v["total_input_tokens"], 384);
    assert_eq!(v["duration"], 0.04);
    assert_exact(v["total_token_throughput"].as_f64(), 9_600.0);
    assert_exact(v["request_throughput"].as_f64(), 75.0);
    assert_exact(v["mean_e2el_ms"].as_f64(), 40.0 / 3.0);
    assert_eq!(v["p99_e2el_ms"], 20.0);
    assert_eq!(v["input_lens"], serde_json::json!([128, 128, 128, 10]));
    assert_eq!(v["errors"][3], "timeout");
    for absent in [
        "total_output_tokens",
        "output_throughput",
        "mean_ttft_ms",
        "mean_tpot_ms",
        "mean_itl_ms",
        "ttfts",
        "itls",
        "output_lens",
    ] {
        assert!(
            v.get(absent).is_none(),
            "vLLM writes no {absent} for pooling"
        );
    }
    // AIPerf's embeddings shape: latency and ISL, no output-token metric.
    let a = read("profile_export_aiperf.json");
    assert_exact(a["request_latency"]["avg"].as_f64(), 40.0 / 3.0);
    assert_eq!(a["input_sequence_length"]["max"], 128.0);
    assert_eq!(a["request_count"]["avg"], 3.0);
    for absent in [
        "output_sequence_length",
        "output_token_throughput",
        "total_osl",
        "time_to_first_token",
        "inter_token_latency",
    ] {
        assert!(
            a.get(absent).is_none(),
            "AIPerf writes no {absent} for pooling"
        );
    }
    let first = std::fs::read_to_string(dir.join("profile_export.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = first["metrics"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["input_sequence_length", "request_latency"]);
    // summary.csv carries the new figures, their units from their keys.
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    for row in [
        "throughput.inputs_per_s,value,600.0,1/s,false",
        "pooling.inputs,value,24,,false",
        "pooling.response_bytes,p50,2000.0,bytes,false",
    ] {
        assert!(csv.lines().any(|l| l == row), "missing {row} in\n{csv}");
    }
    assert!(!csv.contains("\ntools."), "no tools block, no rows");
    std::fs::remove_dir_all(&dir).unwrap();
}
