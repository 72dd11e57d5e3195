//! Records in, figures out, inside the collector: other tools' definitions (`ToolView`)
//! against exact arithmetic on hand-built records, a run folder the collector writes from
//! such records exported as each tool's documented format says (vLLM, AIPerf, CSV), the
//! per-token ITL, OSL mismatch and time series of those records, and a long run's series
//! widening its intervals. `ringbench report` against a real run's files is in
//! `tests/it/records.rs`.

use super::definitions::{Definitions, ToolFigures, ToolView};
use crate::plan::Plan;
use crate::record::{EventStamp, OslSource, Outcome, Record};
use crate::run::testkit::out_dir;
use crate::summary::Summary;
use std::path::{Path, PathBuf};

const MS: u64 = 1_000_000;

/// One JSON file, naming the file when it fails.
fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every line of a JSON-lines file, each parsed.
fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
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

fn figures(d: Definitions) -> ToolFigures {
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

/// A run folder made by the collector from hand-built records: request A (the reasoning
/// request above, sent at 0) and request B (sent at 10 ms: role chunk 11, tokens at 15, 17,
/// 19, done 20, usage says 3), and a 503 sent at 12 ms that ends at 13 ms.
fn hand_dir(name: &str, percentiles: Vec<f64>) -> (PathBuf, Summary) {
    let dir = out_dir(name);
    let mut plan = Plan::defaults();
    plan.percentiles = percentiles;
    let mut c = super::Collector::new(&plan, Some(&dir)).unwrap();
    let a = reasoning_request();
    let mut b = Record {
        id: 1,
        sent_ns: Some(10 * MS),
        intended_ns: 10 * MS,
        head_ns: Some(11 * MS),
        first_token_ns: Some(15 * MS),
        first_output_ns: Some(15 * MS),
        last_token_ns: Some(19 * MS),
        done_ns: Some(20 * MS),
        output_tokens: 3,
        usage_completion_tokens: Some(3),
        events: vec![
            ev(11, 0, false, false),
            ev(15, 1, true, false),
            ev(17, 1, true, false),
            ev(19, 1, true, false),
        ],
        ..reasoning_request()
    };
    b.input_tokens = 5;
    let failed = Record {
        id: 2,
        outcome: Outcome::HttpStatus,
        status: 503,
        intended_ns: 12 * MS,
        sent_ns: Some(12 * MS),
        head_ns: Some(13 * MS),
        done_ns: Some(13 * MS),
        input_tokens: 9,
        ..Default::default()
    };
    for r in [&a, &b, &failed] {
        c.add(r);
    }
    let facts = super::RunFacts {
        started_at: "2026-11-29T15:04:05Z".into(),
        io_driver: "epoll".into(),
        scheduled: 3,
        ..Default::default()
    };
    let s = c.finish(facts).unwrap();
    (dir, s)
}

/// Keys and value types of a `vllm bench serve --save-result --save-detailed
/// --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 99` file, as
/// `vllm/benchmarks/serve.py` builds it (`main_async` + `benchmark` + `process_one_metric`).
const VLLM_SAMPLE: &str = r#"{"date": "20250101-120000", "endpoint_type": "openai-chat",
 "backend": "openai-chat", "label": null, "model_id": "m", "tokenizer_id": "m",
 "num_prompts": 3, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 1,
 "duration": 0.028, "completed": 2, "failed": 1, "total_input_tokens": 12,
 "total_output_tokens": 7, "request_throughput": 71.4, "request_goodput": null,
 "output_throughput": 250.0, "total_token_throughput": 678.5,
 "input_lens": [7, 5, 9], "output_lens": [4, 3, 0], "ttfts": [0.002, 0.001, 0.0],
 "itls": [[0.008], [0.004], []], "generated_texts": ["", "", ""], "errors": ["", "", "x"],
 "max_output_tokens_per_s": 7.0, "max_concurrent_requests": 3,
 "mean_ttft_ms": 1.5, "median_ttft_ms": 1.5, "std_ttft_ms": 0.5, "p99_ttft_ms": 2.0,
 "mean_tpot_ms": 1.0, "median_tpot_ms": 1.0, "std_tpot_ms": 0.0, "p99_tpot_ms": 1.0,
 "mean_itl_ms": 1.0, "median_itl_ms": 1.0, "std_itl_ms": 0.0, "p99_itl_ms": 1.0,
 "mean_e2el_ms": 24.0, "median_e2el_ms": 24.0, "std_e2el_ms": 4.0, "p99_e2el_ms": 28.0}"#;

fn same_kind(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    matches!(
        (a, b),
        (Null, _)
            | (_, Null)
            | (Number(_), Number(_))
            | (String(_), String(_))
            | (Array(_), Array(_))
            | (Bool(_), Bool(_))
    ) || (a.is_string() && b.is_number()) // request_rate is "inf" or a number
}

#[test]
fn vllm_export_has_vllms_keys_units_and_figures() {
    use crate::output::export;
    use crate::plan::ExportKind;
    let (dir, s) = hand_dir("vllm", vec![99.0]);
    export::write_all(&dir, &dir, &s, &[ExportKind::Vllm]).unwrap();
    let got = read_json(&dir.join("vllm_result.json"));
    let want: serde_json::Value = serde_json::from_str(VLLM_SAMPLE).unwrap();
    for (k, v) in want.as_object().unwrap() {
        let g = got.get(k).unwrap_or_else(|| panic!("vLLM key {k} missing"));
        assert!(same_kind(v, g), "{k}: {g} is not like {v}");
    }
    // Figures, worked by hand. vLLM's TTFT is at the first chunk with choices (role-only
    // chunks count): A 2 ms, B 1 ms → mean 1.5 ms; lists are in seconds.
    assert_eq!(got["mean_ttft_ms"], 1.5);
    assert_eq!(got["ttfts"], serde_json::json!([0.002, 0.001, 0.0]));
    // ITL over chunks with choices: A 8, 10, 6; B 4, 2, 2 → mean 32/6 ms.
    assert_eq!(got["itls"][1], serde_json::json!([0.004, 0.002, 0.002]));
    assert!((got["mean_itl_ms"].as_f64().unwrap() - 32.0 / 6.0).abs() < 1e-9);
    // TPOT = (E2E − TTFT)/(OSL − 1): A (28 − 2)/3, B (10 − 1)/2.
    let tpot_a = (26 * MS / 3) as f64 / 1e6;
    assert!((got["mean_tpot_ms"].as_f64().unwrap() - (tpot_a + 4.5) / 2.0).abs() < 1e-9);
    assert_eq!(
        (got["completed"].clone(), got["failed"].clone()),
        (2.into(), 1.into())
    );
    assert_eq!(got["total_output_tokens"], 7);
    assert_eq!(got["output_lens"], serde_json::json!([4, 3, 0]));
    assert_eq!(got["errors"][2], "http_503");
    // Duration from the first dispatch (0) to the last response (28 ms).
    assert_eq!(got["duration"], 0.028);
    assert_eq!(got["date"], "20261129-150405");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keys of AIPerf's `profile_export_aiperf.json` metric blocks and one
/// `profile_export.jsonl` record, from AIPerf's `working-with-profile-exports.md`.
const AIPERF_BLOCK_KEYS: [&str; 14] = [
    "unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std",
];
const AIPERF_JSONL_SAMPLE: &str = r#"{"metadata": {"session_num": 45, "x_request_id": "a",
 "x_correlation_id": "b", "conversation_id": "c", "turn_index": 0,
 "request_start_ns": 1, "request_ack_ns": 2, "request_end_ns": 3, "worker_id": "w",
 "record_processor_id": "r", "benchmark_phase": "profiling", "was_cancelled": false,
 "cancellation_time_ns": null},
 "metrics": {"input_sequence_length": {"value": 550, "unit": "tokens"},
  "time_to_first_token": {"value": 255.9, "unit": "ms"},
  "request_latency": {"value": 297.5, "unit": "ms"},
  "inter_chunk_latency": {"value": [4.8, 5.3], "unit": "ms"},
  "output_sequence_length": {"value": 9, "unit": "tokens"},
  "inter_token_latency": {"value": 5.2, "unit": "ms"},
  "output_token_throughput_per_user": {"value": 192.1, "unit": "tokens/sec/user"}},
 "error": null}"#;

#[test]
fn aiperf_exports_have_aiperfs_shape_and_figures() {
    use crate::output::export;
    use crate::plan::ExportKind;
    let (dir, s) = hand_dir("aiperf", vec![50.0]);
    export::write_all(&dir, &dir, &s, &[ExportKind::Aiperf]).unwrap();
    let agg = read_json(&dir.join("profile_export_aiperf.json"));
    for metric in [
        "request_latency",
        "time_to_first_token",
        "inter_token_latency",
    ] {
        for k in AIPERF_BLOCK_KEYS {
            assert!(agg[metric].get(k).is_some(), "{metric}.{k} missing");
        }
    }
    // AIPerf TTFT: first content or reasoning: A 10 ms, B 5 ms.
    assert_eq!(agg["time_to_first_token"]["avg"], 7.5);
    assert_eq!(agg["time_to_first_token"]["unit"], "ms");
    // ITL = (E2E − TTFT)/(OSL − 1): A (28 − 10)/3 = 6, B (10 − 5)/2 = 2.5.
    assert_eq!(agg["inter_token_latency"]["min"], 2.5);
    assert_eq!(agg["inter_token_latency"]["max"], 6.0);
    assert_eq!(
        agg["request_count"],
        serde_json::json!({"unit": "requests", "avg": 2.0})
    );
    assert_eq!(agg["total_osl"]["avg"], 7.0);
    assert_eq!(agg["benchmark_duration"]["avg"], 0.028);
    assert_eq!(agg["error_request_count"], 1);
    assert_eq!(agg["error_summary"][0]["error_details"]["code"], 503);

    let lines = read_jsonl(&dir.join("profile_export.jsonl"));
    assert_eq!(lines.len(), 3);
    let want: serde_json::Value = serde_json::from_str(AIPERF_JSONL_SAMPLE).unwrap();
    for part in ["metadata", "metrics"] {
        for (k, v) in want[part].as_object().unwrap() {
            let g = &lines[0][part][k];
            assert!(!g.is_null() || v.is_null(), "{part}.{k} missing");
            if let Some(unit) = v.get("unit") {
                assert_eq!(&g["unit"], unit, "{part}.{k} unit");
            }
        }
    }
    assert_eq!(lines[0]["metrics"]["inter_token_latency"]["value"], 6.0);
    assert_eq!(
        lines[0]["metrics"]["output_token_throughput_per_user"]["value"],
        1000.0 / 6.0
    );
    assert_eq!(lines[2]["error"]["code"], 503);
    assert!(lines[2]["metrics"]["error_isl"].is_object());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn summary_csv_has_one_row_per_metric_and_statistic() {
    let (dir, s) = hand_dir("csv", vec![50.0, 99.0]);
    let csv = crate::output::export::csv::render(&s);
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0],
        ["metric", "statistic", "value", "unit", "small_sample"]
    );
    assert!(rows.iter().all(|r| r.len() == 5));
    let find = |m: &str, st: &str| {
        rows.iter()
            .find(|r| r[0] == m && r[1] == st)
            .unwrap_or_else(|| panic!("no row {m},{st}"))
            .clone()
    };
    // Our TTFT: A 10 ms, B 5 ms.
    assert_eq!(find("latency_ms.ttft", "mean")[2..4], ["7.5", "ms"]);
    assert_eq!(find("latency_ms.ttft", "p99")[4], "true");
    assert_eq!(find("counts.ok", "value")[2], "2");
    assert_eq!(find("counts.failed_by_kind.http_503", "value")[2], "1");
    assert_eq!(find("duration_s", "value")[3], "s");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn per_token_itl_osl_mismatch_and_time_series_from_hand_built_records() {
    let (dir, s) = hand_dir("series", vec![50.0]);
    // Per-token ITL. A: usage 4 = its events' 1 + 2 + 1, so exact: the 10 ms gap closing
    // the 2-token event gives two 5 ms samples, the 6 ms gap one. B: 2, 2 ms. All: 5 samples.
    let t = &s.latency_ms.itl_per_token;
    assert_eq!(t.count, 5);
    assert_eq!(t.mean, Some((5.0 + 5.0 + 6.0 + 2.0 + 2.0) / 5.0));
    // Both successes asked for 16 tokens (the default plan) and the server said 4 and 3.
    assert_eq!(s.counts.osl_mismatch, 2);
    assert!(s.warnings.iter().any(|w| w.contains("ignore_eos")));
    // Everything happened in the run's first second.
    let ts = &s.timeseries;
    assert_eq!(ts.interval_s, 1.0);
    assert_eq!(ts.points.len(), 1);
    let p = &ts.points[0];
    assert_eq!(
        (p.t_s, p.requests_per_s, p.output_tokens_per_s),
        (0.0, 2.0, 7.0)
    );
    // In flight: A 28 ms, B 10 ms, the 503 1 ms, over a 1 s interval.
    assert!((p.in_flight_mean - 0.039).abs() < 1e-12);
    // Chunk gaps: A 10→20→26, B 15→17→19.
    assert_eq!((p.ttft_count, p.itl_count), (2, 4));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_long_run_widens_its_intervals_instead_of_growing() {
    use super::series::{Series, MAX_POINTS};
    let mut series = Series::default();
    let sec = 1_000_000_000u64;
    // One 1 ms request at the start of every second for 600 s.
    for i in 0..600u64 {
        let mut r = reasoning_request();
        r.sent_ns = Some(i * sec);
        r.first_token_ns = Some(i * sec + MS / 2);
        r.last_token_ns = Some(i * sec + MS / 2);
        r.done_ns = Some(i * sec + MS);
        r.events = vec![ev(0, 0, false, false)];
        series.add(&r, true);
    }
    let ts = series.finish();
    assert!(ts.points.len() <= MAX_POINTS);
    assert_eq!(ts.interval_s, 4.0);
    assert_eq!(ts.points.len(), 150);
    assert!(ts.points.iter().all(|p| p.requests_per_s == 1.0));
}

/// The same run's records as `requests.jsonl` and as `requests.parquet` recompute to the
/// same summary, byte for byte, and it is the run's own: a real run against the in-process
/// simulator writes JSONL; its records are written again as Parquet (the run's writer, a
/// second folder with the run's other files); `report` reads each.
#[test]
fn parquet_and_jsonl_of_one_run_recompute_to_the_identical_summary() {
    let _serial = crate::run::testkit::lock();
    let jsonl = out_dir("same-run-jsonl");
    let mut plan = crate::run::testkit::sim_plan();
    plan.out_dir = Some(jsonl.clone());
    plan.stop.request_count = Some(300);
    if let Some(sim) = plan.sim.as_mut() {
        sim.itl_ms = 0.2;
    }
    plan.validate().unwrap();
    let live = crate::run::run(&plan).unwrap();
    let pq = crate::run::testkit::made_dir("same-run-parquet");
    // Every file of the run but its JSONL log (run.json, server_metrics.jsonl, ...).
    for f in std::fs::read_dir(&jsonl).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() && f.file_name().unwrap() != "requests.jsonl" {
            std::fs::copy(&f, pq.join(f.file_name().unwrap())).unwrap();
        }
    }
    let mut log = super::parquet::ParquetLog::create(&pq).unwrap();
    let n = super::replay::read_records(&jsonl, |r| log.append(r).unwrap()).unwrap();
    log.close().unwrap();
    assert_eq!(n, 300);
    assert!(!pq.join("requests.jsonl").exists());
    let o = super::replay::Overrides::default();
    let from_jsonl = super::replay::recompute(&jsonl, &o).unwrap();
    let from_parquet = super::replay::recompute(&pq, &o).unwrap();
    let text = |s: &Summary| serde_json::to_string(s).unwrap();
    assert_eq!(from_parquet.counts.scheduled, 300);
    assert_eq!(text(&from_jsonl), text(&from_parquet));
    assert_eq!(from_parquet.latency_ms.ttft, live.latency_ms.ttft);
    assert_eq!(from_parquet.counts, live.counts);
}

/// `--records parquet`: the collector writes `requests.parquet` (no `requests.jsonl`) in row
/// groups, and `report` recomputes the run's own summary from it.
#[test]
fn a_parquet_log_is_written_by_the_collector_and_read_by_report() {
    let dir = out_dir("parquet-collector");
    let mut plan = Plan::defaults();
    plan.records = crate::plan::RecordsFormat::Parquet;
    let mut c = super::Collector::new(&plan, Some(&dir)).unwrap();
    let rows = super::parquet::ROW_GROUP_ROWS as u64 + 10;
    for id in 0..rows {
        c.add(&Record {
            id,
            intended_ns: id * MS,
            sent_ns: Some(id * MS),
            head_ns: Some(id * MS + 100),
            first_token_ns: Some(id * MS + 200 + id % 7),
            last_token_ns: Some(id * MS + 300),
            done_ns: Some(id * MS + 400),
            output_tokens: 2,
            events: vec![ev(id, 1, true, false), ev(id, 1, true, false)],
            ..Default::default()
        });
    }
    let facts = super::RunFacts {
        started_at: "2026-11-29T15:04:05Z".into(),
        io_driver: "epoll".into(),
        scheduled: rows,
        ..Default::default()
    };
    let live = c.finish(facts).unwrap();
    assert!(!dir.join("requests.jsonl").exists());
    let file = std::fs::File::open(dir.join("requests.parquet")).unwrap();
    let meta = parquet::file::reader::FileReader::metadata(
        &parquet::file::serialized_reader::SerializedFileReader::new(file).unwrap(),
    )
    .clone();
    assert_eq!(meta.num_row_groups(), 2, "row groups of ROW_GROUP_ROWS");
    let back = super::replay::recompute(&dir, &Default::default()).unwrap();
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&live).unwrap()
    );
}
