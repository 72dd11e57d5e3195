//! Part of the exports (… → summary → report → **export**): `vllm_result.json`, the file
//! `vllm bench serve --save-result --save-detailed` writes, with vLLM's key names, units
//! and meanings: aggregates in ms (`mean_ttft_ms`, `median_…`, `std_…`, `p{P}_…` for each
//! configured percentile, over ttft, tpot, itl and e2el), per-request lists in seconds
//! (`ttfts`, `itls`), throughputs per second, `duration` in s.
//!
//! Format source: vLLM `vllm/benchmarks/serve.py` (`benchmark()` builds `result`,
//! `process_one_metric` adds `mean_/median_/std_/p{p_word}_{metric}_ms`, `main_async` adds
//! `date`, `endpoint_type`, `backend`, `label`, `model_id`, `tokenizer_id`, `num_prompts`,
//! `request_rate`, `burstiness`, `max_concurrency`; `calculate_metrics` defines the figures
//! and `max_output_tokens_per_s` / `max_concurrent_requests`), read in the public code
//! corpus (neuralmagic/vllm at 32f5573e).
//!
//! `run --save-result` (vLLM's own spelling) writes the same object at vLLM's path (a `Fold`
//! given the `VllmResult`), with the setup keys from vLLM's arguments as given, `--metadata`, only
//! the `--percentile-metrics`, and the lists only with `--save-detailed`, as vLLM does.
//!
//! A pooling run (embeddings, rerank, score) is written as vLLM writes a pooling task's
//! (`openai-embeddings`, `vllm-rerank` backends: `calculate_metrics_for_embeddings`):
//! `completed`, `failed`, `total_input_tokens`, `request_throughput`,
//! `total_token_throughput` (input tokens / duration), the `e2el` aggregates (the one metric
//! a pooling task has, whatever `--percentile-metrics` says), and the lists `input_lens` and
//! `errors`; no output, TTFT, TPOT or ITL keys. vLLM has no backend for `/v1/score`:
//! `vllm-score` follows its pattern.
//!
//! Figures follow `Definitions::Vllm`. Differences that remain, stated: percentiles are
//! nearest-rank from our 3-significant-digit histograms (numpy interpolates between
//! samples), `generated_texts` are empty strings (ringbench does not keep response text),
//! and requests never sent or in warm-up are left out (vLLM has neither).

use crate::collector::definitions::{Definitions, ToolView};
use crate::collector::replay::read_records;
use crate::output::{write_err, WriteError};
use crate::plan::VllmResult;
use crate::record::{Outcome, Record};
use crate::rt::file::PendingFile;
use crate::summary::{Stats, Summary};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;

/// The file `write` writes.
pub const FILE_NAME: &str = "vllm_result.json";

/// The request lists of `--save-detailed`, in vLLM's order.
const LISTS: [&str; 6] = [
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
];

/// The lists of a pooling run, in vLLM's order.
const POOLING_LISTS: [&str; 2] = ["input_lens", "errors"];

/// vLLM's metrics of a pooling run.
const POOLING_METRICS: [&str; 1] = ["e2el"];

fn counted(r: &Record) -> bool {
    !r.warmup && r.outcome.was_sent()
}

/// One vLLM result file as the records go by, each seen once: vLLM's counts and view of
/// their figures, and with `--save-detailed` the request lists, each spooled to a file of
/// its own beside the result (`.NAME.KEY.part`, joined into the result by `write`), so
/// memory stays what the histograms take. `spec`: `--save-result`'s choices; `None`, every
/// metric and list.
pub struct Fold {
    path: std::path::PathBuf,
    spec: Option<VllmResult>,
    totals: Totals,
    lists: Vec<Spool>,
    /// The first error writing a list; the lists stop there and `write` returns it.
    failed: Option<std::io::Error>,
}

/// One request list as it fills: its key and its file.
struct Spool {
    key: &'static str,
    path: std::path::PathBuf,
    w: std::io::BufWriter<std::fs::File>,
    first: bool,
}

impl Fold {
    /// The fold of the result file `path` (its folder made when missing).
    pub fn new(
        path: &Path,
        summary: &Summary,
        spec: Option<&VllmResult>,
    ) -> Result<Self, WriteError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(write_err(dir))?;
        }
        let keys: &[&'static str] = match (spec.is_none_or(|s| s.detailed), &summary.pooling) {
            (false, _) => &[],
            (true, Some(_)) => &POOLING_LISTS,
            (true, None) => &LISTS,
        };
        let name = path
            .file_name()
            .map_or_else(Default::default, |n| n.to_string_lossy());
        let lists = keys
            .iter()
            .map(|&key| {
                let spool = path.with_file_name(format!(".{name}.{key}.part"));
                let file = std::fs::File::create(&spool).map_err(write_err(&spool))?;
                Ok(Spool {
                    key,
                    w: std::io::BufWriter::with_capacity(1 << 16, file),
                    path: spool,
                    first: true,
                })
            })
            .collect::<Result<_, WriteError>>()?;
        let stream = summary.config["stream"].as_bool().unwrap_or(true);
        Ok(Fold {
            path: path.to_path_buf(),
            spec: spec.cloned(),
            totals: Totals::new(stream),
            lists,
            failed: None,
        })
    }

    /// One record of the run, in the file's order.
    pub fn add(&mut self, r: &Record) {
        if !counted(r) {
            return;
        }
        self.totals.add(r);
        if self.failed.is_some() {
            return;
        }
        for l in &mut self.lists {
            let sep = if l.first { "" } else { "," };
            l.first = false;
            if let Err(e) = write!(l.w, "{sep}{}", list_item(l.key, r)) {
                self.failed = Some(e);
                return;
            }
        }
    }

    /// The first send of a successful request: the origin of vLLM's per-second peaks
    /// (`peaks`), known once every record has been added.
    pub fn first_sent(&self) -> Option<u64> {
        self.totals.first_sent
    }

    /// Writes the result file: the aggregates, with `peaks` (`peaks(records, first_sent)`),
    /// then the spooled lists; the spools go.
    pub fn write(mut self, summary: &Summary, peaks: (f64, u64)) -> Result<(), WriteError> {
        for l in &mut self.lists {
            if let Err(e) = l.w.flush() {
                self.failed.get_or_insert(e);
            }
        }
        let path = self.path.as_path();
        let written = self.write_file(summary, peaks);
        for l in &self.lists {
            let _ = std::fs::remove_file(&l.path);
        }
        written.map_err(write_err(path))
    }

    fn write_file(&self, summary: &Summary, peaks: (f64, u64)) -> std::io::Result<()> {
        if let Some(e) = &self.failed {
            return Err(std::io::Error::new(e.kind(), e.to_string()));
        }
        let head = aggregates(&self.totals, summary, self.spec.as_ref(), peaks);
        let mut file = PendingFile::create(&self.path, 1 << 16)?;
        let w = file.writer();
        let mut body = serde_json::to_string(&Value::Object(head)).unwrap_or_default();
        let detailed = !self.lists.is_empty();
        if detailed {
            body.pop(); // the closing brace: the lists follow
        }
        w.write_all(body.as_bytes())?;
        for l in &self.lists {
            write!(w, ",\"{}\":[", l.key)?;
            std::io::copy(&mut std::fs::File::open(&l.path)?, w)?;
            w.write_all(b"]")?;
        }
        if detailed {
            w.write_all(b"}")?;
        }
        w.write_all(b"\n")?;
        file.commit()
    }
}

/// One request's entry in one of the lists (vLLM: 0 / [] / "" for a failed request).
fn list_item(key: &str, r: &Record) -> Value {
    let ok = r.outcome == Outcome::Ok;
    let s = |ns: u64| ns as f64 / 1e9;
    match key {
        "input_lens" => json!(r.input_tokens),
        "output_lens" => json!(if ok { r.output_tokens } else { 0 }),
        "ttfts" => json!(Definitions::Vllm.ttft_ns(r).filter(|_| ok).map_or(0.0, s)),
        "itls" => {
            let mut gaps = Vec::new();
            if ok {
                let last = r.events.iter().rposition(|e| e.carries_token());
                let evs = last.map_or(&r.events[..0], |l| &r.events[..=l]);
                gaps = evs.windows(2).map(|w| s(w[1].at_ns - w[0].at_ns)).collect();
            }
            json!(gaps)
        }
        "generated_texts" => json!(""),
        _ => json!(if ok {
            String::new()
        } else {
            r.outcome.kind_key(r.status)
        }),
    }
}

/// vLLM's counts over the records, and its view of their figures.
struct Totals {
    view: ToolView,
    completed: u64,
    failed: u64,
    input: u64,
    output: u64,
    first_sent: Option<u64>,
}

impl Totals {
    fn new(stream: bool) -> Self {
        Totals {
            view: ToolView::new(Definitions::Vllm, stream),
            completed: 0,
            failed: 0,
            input: 0,
            output: 0,
            first_sent: None,
        }
    }

    /// One counted record.
    fn add(&mut self, r: &Record) {
        self.view.add(r);
        if r.outcome == Outcome::Ok {
            self.completed += 1;
            self.input += r.input_tokens as u64;
            self.output += r.output_tokens as u64;
            if let Some(s) = r.sent_ns {
                self.first_sent = Some(self.first_sent.map_or(s, |f| f.min(s)));
            }
        } else {
            self.failed += 1;
        }
    }
}

/// vLLM's peaks (`max_output_tokens_per_s`, `max_concurrent_requests`): per whole second
/// since `first_sent`, the first successful send. The one figure a first read cannot give —
/// its seconds start at a send only the whole file tells — so it reads the records again,
/// for the successful ones' stamps alone.
pub fn peaks(records: &Path, first_sent: Option<u64>) -> Result<(f64, u64), WriteError> {
    let mut peaks = Peaks {
        origin_ns: first_sent.unwrap_or(0),
        chunks: Vec::new(),
        active: Vec::new(),
    };
    read_records(records, |r| {
        if counted(r) && r.outcome == Outcome::Ok {
            peaks.add(r);
        }
    })?;
    Ok(peaks.max())
}

/// The keys that describe the run's setup, as `vllm bench serve` writes them: from vLLM's
/// own arguments when `--save-result` gave them, else from the run's config.
fn setup_keys(m: &mut Map<String, Value>, summary: &Summary, spec: Option<&VllmResult>) {
    let cfg = &summary.config;
    let backend = match cfg["endpoint"].as_str().unwrap_or("chat") {
        "chat" => "openai-chat",
        "embeddings" => "openai-embeddings",
        "rerank" | "tei-rerank" => "vllm-rerank",
        "score" => "vllm-score",
        _ => "openai",
    };
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("date", json!(vllm_date(&summary.started_at)));
    let rate = summary.target.request_rate;
    let burstiness = cfg["load"]["arrival"]["burstiness"].as_f64().unwrap_or(1.0);
    let Some(s) = spec else {
        put("endpoint_type", json!(backend));
        put("backend", json!(backend));
        put("label", Value::Null);
        put("model_id", cfg["model"].clone());
        put("tokenizer_id", cfg["model"].clone());
        put("num_prompts", json!(summary.counts.scheduled));
        put("request_rate", rate.map_or(json!("inf"), |r| json!(r)));
        put("burstiness", json!(burstiness));
        put("max_concurrency", json!(summary.target.concurrency));
        return;
    };
    put("endpoint_type", json!(s.backend));
    put("backend", json!(s.backend));
    put("label", json!(s.label));
    put("model_id", json!(s.model_id));
    put("tokenizer_id", json!(s.tokenizer_id));
    put(
        "num_prompts",
        json!(s.num_prompts.unwrap_or(summary.counts.scheduled)),
    );
    for (k, v) in &s.metadata {
        put(k, json!(v));
    }
    put(
        "request_rate",
        s.request_rate.map_or(json!("inf"), |r| json!(r)),
    );
    put("burstiness", json!(s.burstiness));
    put("max_concurrency", json!(s.max_concurrency));
}

/// Everything but the lists: setup keys, totals, throughputs, peaks and the four metrics.
fn aggregates(
    t: &Totals,
    summary: &Summary,
    spec: Option<&VllmResult>,
    peaks: (f64, u64),
) -> Map<String, Value> {
    let percentiles = summary_percentiles(summary);
    let f = t.view.finish(&percentiles);
    let per_s = |n: f64| (f.duration_s > 0.0).then(|| n / f.duration_s);
    let mut m = Map::new();
    setup_keys(&mut m, summary, spec);
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("duration", json!(f.duration_s));
    put("completed", json!(t.completed));
    put("failed", json!(t.failed));
    put("total_input_tokens", json!(t.input));
    if summary.pooling.is_some() {
        put("request_throughput", json!(per_s(t.completed as f64)));
        put("total_token_throughput", json!(per_s(t.input as f64)));
        for name in POOLING_METRICS {
            metric_keys(&mut m, name, &f.e2e_ms, &percentiles);
        }
        return m;
    }
    put("total_output_tokens", json!(t.output));
    put("request_throughput", json!(per_s(t.completed as f64)));
    let good = summary.throughput.good_fraction;
    let good = good.map(|g| g * summary.counts.tally.sent as f64);
    put("request_goodput", json!(good.and_then(per_s)));
    put("output_throughput", json!(per_s(t.output as f64)));
    put(
        "total_token_throughput",
        json!(per_s((t.input + t.output) as f64)),
    );
    let (tok, conc) = peaks;
    put("max_output_tokens_per_s", json!(tok));
    put("max_concurrent_requests", json!(conc));
    let chosen = |name: &str| spec.is_none_or(|s| s.metrics.iter().any(|m| m == name));
    for (name, st) in [
        ("ttft", &f.ttft_ms),
        ("tpot", &f.tpot_ms),
        ("itl", &f.itl_ms),
        ("e2el", &f.e2e_ms),
    ] {
        if chosen(name) {
            metric_keys(&mut m, name, st, &percentiles);
        }
    }
    m
}

fn summary_percentiles(summary: &Summary) -> Vec<f64> {
    summary.config["percentiles"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_else(|| vec![99.0])
}

/// `mean_/median_/std_/p{P}_{name}_ms`; vLLM writes 0 for an empty list (`np.mean(0)`).
fn metric_keys(m: &mut Map<String, Value>, name: &str, st: &Stats, percentiles: &[f64]) {
    let v = |x: Option<f64>| json!(x.unwrap_or(0.0));
    m.insert(format!("mean_{name}_ms"), v(st.mean));
    m.insert(format!("median_{name}_ms"), v(st.p50));
    m.insert(format!("std_{name}_ms"), v(st.std));
    for &p in percentiles {
        let word = if p.fract() == 0.0 {
            format!("{}", p as u64)
        } else {
            format!("{p}")
        };
        let key = crate::summary::percentile_key(p);
        m.insert(format!("p{word}_{name}_ms"), v(st.get(&key)));
    }
}

/// `20261129-150000` from an RFC 3339 start (vLLM's `%Y%m%d-%H%M%S`).
fn vllm_date(rfc3339: &str) -> String {
    let digits: String = rfc3339.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 14 {
        return rfc3339.to_string();
    }
    format!("{}-{}", &digits[..8], &digits[8..14])
}

/// vLLM's peak figures: chunks with `choices` per whole second since the first request's
/// start, and requests active in each second (start to end, inclusive). Indexed by second,
/// so memory follows the run's length in seconds, not its requests.
struct Peaks {
    origin_ns: u64,
    chunks: Vec<u64>,
    active: Vec<u64>,
}

impl Peaks {
    fn slot(v: &mut Vec<u64>, i: usize) -> &mut u64 {
        if v.len() <= i {
            v.resize(i + 1, 0);
        }
        &mut v[i]
    }

    fn add(&mut self, r: &Record) {
        let sec = |ns: u64| (ns.saturating_sub(self.origin_ns) / 1_000_000_000) as usize;
        let (Some(sent), Some(done)) = (r.sent_ns, r.done_ns) else {
            return;
        };
        let last = r.events.iter().rposition(|e| e.carries_token());
        for e in last.map_or(&r.events[..0], |l| &r.events[..=l]) {
            *Self::slot(&mut self.chunks, sec(e.at_ns)) += 1;
        }
        for s in sec(sent)..=sec(done) {
            *Self::slot(&mut self.active, s) += 1;
        }
    }

    /// (max chunks in one second, max requests active in one second).
    fn max(&self) -> (f64, u64) {
        let top = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
        (top(&self.chunks) as f64, top(&self.active))
    }
}
