//! Part of the exports (… → summary → report → **export**): AIPerf's two result files.
//! `profile_export_aiperf.json` holds one block per metric — `unit`, `avg`, `min`, `max`,
//! `p1`, `p5`, `p10`, `p25`, `p50`, `p75`, `p90`, `p95`, `p99`, `std` — plus single-value
//! blocks (`request_throughput`, `benchmark_duration`, …) and the error summary;
//! `profile_export.jsonl` holds one `{"metadata", "metrics", "error"}` object per request,
//! each metric as `{"value", "unit"}`.
//!
//! Format source: AIPerf `docs/tutorials/working-with-profile-exports.md` (ai-dynamo/aiperf,
//! read as nvda-ci/aiperf at 8e6a033d in the public code corpus): its sample records and
//! the "Key Field Categories" list.
//!
//! A pooling run (embeddings, rerank, score) is written as AIPerf writes its `embeddings` and
//! `rankings` endpoint types: `request_latency` and `input_sequence_length` per request and
//! in aggregate, the request throughput, count and duration, the errors; no output-token
//! metric (AIPerf leaves out what a non-generating endpoint has not).
//!
//! Figures follow `Definitions::Aiperf`: TTFT at the first content or reasoning token,
//! `inter_token_latency` = (E2E − TTFT)/(OSL − 1) per request, `inter_chunk_latency` the
//! chunk gaps, duration from the first send to the last response. Differences that
//! remain, stated: `request_start_ns`/`request_end_ns` are on ringbench's run clock
//! (nanoseconds since the run's start), not the epoch; ids are ringbench's arrival index;
//! warm-up and never-sent requests are left out; percentiles are nearest-rank from 3-digit
//! histograms (AIPerf interpolates).

use crate::collector::definitions::Definitions;
use crate::collector::Dist;
use crate::output::{write_err, WriteError};
use crate::record::{Outcome, Record};
use crate::rt::file::PendingFile;
use crate::summary::Summary;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// AIPerf's aggregate file.
pub const JSON_FILE: &str = "profile_export_aiperf.json";
/// AIPerf's per-request file.
pub const JSONL_FILE: &str = "profile_export.jsonl";

const PERCENTILES: [(f64, &str); 9] = [
    (1.0, "p1"),
    (5.0, "p5"),
    (10.0, "p10"),
    (25.0, "p25"),
    (50.0, "p50"),
    (75.0, "p75"),
    (90.0, "p90"),
    (95.0, "p95"),
    (99.0, "p99"),
];

const MS: f64 = 1e-6;
/// Per-user throughput is kept in milli-tokens/s so the histogram holds its fraction.
const MILLI: f64 = 1e-3;

fn counted(r: &Record) -> bool {
    !r.warmup && r.outcome.was_sent()
}

/// AIPerf's two files as the records go by, each seen once: the per-request lines written
/// as they come, the aggregate's distributions folded (memory: the histograms).
pub struct Fold {
    out: std::path::PathBuf,
    pooling: bool,
    jsonl: PendingFile,
    agg: Agg,
    /// The first error writing a line; the lines stop there and `write` returns it.
    failed: Option<std::io::Error>,
}

impl Fold {
    /// The fold of the files in `out`.
    pub fn new(out: &Path, summary: &Summary) -> Result<Self, WriteError> {
        let path = out.join(JSONL_FILE);
        Ok(Fold {
            out: out.to_path_buf(),
            pooling: summary.pooling.is_some(),
            jsonl: PendingFile::create(&path, 1 << 16).map_err(write_err(&path))?,
            agg: Agg::default(),
            failed: None,
        })
    }

    /// One record of the run, in the file's order.
    pub fn add(&mut self, r: &Record) {
        if !counted(r) {
            return;
        }
        self.agg.add(r);
        if self.failed.is_none() {
            let line = jsonl_line(r, self.pooling).to_string();
            if let Err(e) = writeln!(self.jsonl.writer(), "{line}") {
                self.failed = Some(e);
            }
        }
    }

    /// Commits the per-request file and writes the aggregate one.
    pub fn write(self, summary: &Summary) -> Result<(), WriteError> {
        let lines = self.out.join(JSONL_FILE);
        if let Some(e) = self.failed {
            return Err(write_err(&lines)(e));
        }
        self.jsonl.commit().map_err(write_err(&lines))?;
        let agg = aggregate(&self.agg, summary);
        let path = self.out.join(JSON_FILE);
        let text = serde_json::to_vec_pretty(&Value::Object(agg)).unwrap_or_default();
        crate::rt::file::write_atomic(&path, &text).map_err(write_err(&path))
    }
}

/// The per-request metrics of one successful request, AIPerf's names and units; a pooling
/// answer's (`pooling`) stop at its latency.
fn request_metrics(r: &Record, pooling: bool) -> Map<String, Value> {
    let d = Definitions::Aiperf;
    let mut m = Map::new();
    let mut put = |k: &str, v: Value, unit: &str| {
        m.insert(k.into(), json!({"value": v, "unit": unit}));
    };
    let ms = |ns: u64| ns as f64 * MS;
    put("input_sequence_length", json!(r.input_tokens), "tokens");
    if let Some(v) = d.ttft_ns(r) {
        put("time_to_first_token", json!(ms(v)), "ms");
    }
    if let Some(v) = r.e2e_ns() {
        put("request_latency", json!(ms(v)), "ms");
    }
    if pooling {
        return m;
    }
    let gaps: Vec<f64> = r.itl_gaps_ns().map(ms).collect();
    if !gaps.is_empty() {
        put("inter_chunk_latency", json!(gaps), "ms");
    }
    put("output_sequence_length", json!(r.output_tokens), "tokens");
    if let Some(itl) = d.tpot_ns(r).filter(|&v| v > 0) {
        put("inter_token_latency", json!(ms(itl)), "ms");
        put(
            "output_token_throughput_per_user",
            json!(1e9 / itl as f64),
            "tokens/sec/user",
        );
    }
    m
}

fn error_of(r: &Record) -> Value {
    json!({
        "code": r.status,
        "type": r.outcome.kind_key(r.status),
        "message": format!("request ended: {}", r.outcome.name()),
    })
}

fn jsonl_line(r: &Record, pooling: bool) -> Value {
    let ok = r.outcome == Outcome::Ok;
    json!({
        "metadata": {
            "session_num": r.id,
            // What the request carried as x-request-id (AIPerf sends its own as that
            // header too); the arrival index when none of ours went out.
            "x_request_id": r.request_id.map_or_else(|| r.id.to_string(), |id| id.to_string()),
            "x_correlation_id": r.id.to_string(),
            "conversation_id": r.id.to_string(),
            "turn_index": 0,
            "request_start_ns": r.sent_ns,
            "request_ack_ns": r.head_ns,
            "request_end_ns": r.done_ns,
            "worker_id": format!("worker_{}", r.worker),
            "record_processor_id": "ringbench",
            "benchmark_phase": "profiling",
            "was_cancelled": r.outcome == Outcome::Cancelled,
            "cancellation_time_ns": if r.outcome == Outcome::Cancelled { json!(r.done_ns) } else { Value::Null },
        },
        "metrics": if ok {
            Value::Object(request_metrics(r, pooling))
        } else {
            json!({"error_isl": {"value": r.input_tokens, "unit": "tokens"}})
        },
        "error": if ok { Value::Null } else { error_of(r) },
    })
}

#[derive(Default)]
struct Agg {
    latency: Dist,
    ttft: Dist,
    itl: Dist,
    icl: Dist,
    per_user_milli: Dist,
    isl: Dist,
    osl: Dist,
    ok: u64,
    errors: u64,
    error_isl: u64,
    total_isl: u64,
    total_osl: u64,
    start_ns: Option<u64>,
    end_ns: Option<u64>,
    by_error: BTreeMap<(u16, String), u64>,
}

impl Agg {
    fn add(&mut self, r: &Record) {
        if r.outcome != Outcome::Ok {
            self.errors += 1;
            self.error_isl += r.input_tokens as u64;
            *self
                .by_error
                .entry((r.status, r.outcome.kind_key(r.status)))
                .or_insert(0) += 1;
            return;
        }
        let d = Definitions::Aiperf;
        self.ok += 1;
        self.total_isl += r.input_tokens as u64;
        self.total_osl += r.output_tokens as u64;
        if let Some(s) = r.sent_ns {
            self.start_ns = Some(self.start_ns.map_or(s, |v| v.min(s)));
        }
        if let Some(e) = r.done_ns {
            self.end_ns = Some(self.end_ns.map_or(e, |v| v.max(e)));
        }
        let rec = |d: &mut Dist, v: Option<u64>| v.into_iter().for_each(|v| d.record(v));
        rec(&mut self.latency, r.e2e_ns());
        rec(&mut self.ttft, d.ttft_ns(r));
        let itl = d.tpot_ns(r).filter(|&v| v > 0);
        rec(&mut self.itl, itl);
        rec(
            &mut self.per_user_milli,
            itl.map(|v| (1e12 / v as f64).round() as u64),
        );
        r.itl_gaps_ns().for_each(|g| self.icl.record(g));
        self.isl.record(r.input_tokens as u64);
        self.osl.record(r.output_tokens as u64);
    }
}

/// A metric block: unit, avg, min, max, p1…p99, std, each value × `scale`. An empty
/// distribution gives no block (AIPerf leaves out metrics it did not see).
fn block(d: &Dist, unit: &str, scale: f64) -> Option<Value> {
    if d.count() == 0 {
        return None;
    }
    let mut m = Map::new();
    m.insert("unit".into(), json!(unit));
    m.insert("avg".into(), json!(d.mean_ns().map(|v| v * scale)));
    for (p, key) in PERCENTILES {
        m.insert(
            key.into(),
            json!(d.percentile_ns(p).map(|v| v as f64 * scale)),
        );
    }
    m.insert("min".into(), json!(d.min_ns().map(|v| v as f64 * scale)));
    m.insert("max".into(), json!(d.max_ns().map(|v| v as f64 * scale)));
    m.insert("std".into(), json!(d.std_ns().map(|v| v * scale)));
    Some(Value::Object(m))
}

fn single(unit: &str, avg: impl Into<Value>) -> Value {
    json!({"unit": unit, "avg": avg.into()})
}

/// The metric blocks of `aggregate` (a pooling run has no output side).
fn distributions(a: &Agg, pooling: bool, m: &mut Map<String, Value>) {
    let blocks = [
        ("request_latency", block(&a.latency, "ms", MS)),
        ("time_to_first_token", block(&a.ttft, "ms", MS)),
        ("inter_token_latency", block(&a.itl, "ms", MS)),
        ("inter_chunk_latency", block(&a.icl, "ms", MS)),
        (
            "output_token_throughput_per_user",
            block(&a.per_user_milli, "tokens/sec/user", MILLI),
        ),
        (
            "output_sequence_length",
            block(&a.osl, "tokens", 1.0).filter(|_| !pooling),
        ),
        ("input_sequence_length", block(&a.isl, "tokens", 1.0)),
    ];
    for (k, b) in blocks {
        if let Some(b) = b {
            m.insert(k.into(), b);
        }
    }
}

fn aggregate(a: &Agg, summary: &Summary) -> Map<String, Value> {
    let duration_s = match (a.start_ns, a.end_ns) {
        (Some(s), Some(e)) => e.saturating_sub(s) as f64 / 1e9,
        _ => 0.0,
    };
    let per_s = |n: u64| (duration_s > 0.0).then(|| n as f64 / duration_s);
    let pooling = summary.pooling.is_some();
    let mut m = Map::new();
    distributions(a, pooling, &mut m);
    m.insert(
        "request_throughput".into(),
        single("requests/sec", per_s(a.ok)),
    );
    if !pooling {
        m.insert(
            "output_token_throughput".into(),
            single("tokens/sec", per_s(a.total_osl)),
        );
    }
    m.insert("benchmark_duration".into(), single("sec", duration_s));
    m.insert("request_count".into(), single("requests", a.ok as f64));
    m.insert("total_isl".into(), single("tokens", a.total_isl as f64));
    if !pooling {
        m.insert("total_osl".into(), single("tokens", a.total_osl as f64));
    }
    m.insert("was_cancelled".into(), json!(summary.interrupted));
    m.insert("start_time".into(), json!(summary.started_at));
    let errors: Vec<Value> = a
        .by_error
        .iter()
        .map(|((code, kind), n)| {
            json!({"error_details": {"code": code, "type": kind, "message": kind}, "count": n})
        })
        .collect();
    m.insert("error_summary".into(), json!(errors));
    let good = summary
        .throughput
        .good_fraction
        .map(|g| (g * summary.counts.tally.sent as f64).round());
    m.insert(
        "goodput".into(),
        match (good, per_s(1)) {
            (Some(g), Some(rate)) => single("requests/sec", g * rate),
            _ => Value::Null,
        },
    );
    m.insert("good_request_count".into(), json!(good));
    let (errs, isl) = (a.errors > 0).then_some((a.errors, a.error_isl)).unzip();
    m.insert("error_request_count".into(), json!(errs));
    m.insert("total_error_isl".into(), json!(isl));
    m.insert(
        "input_config".into(),
        json!({"ringbench_config": summary.config}),
    );
    m
}
