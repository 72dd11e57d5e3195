//! The simulator's `GET /metrics` (server side; the client flow never reads this module, only
//! the page over HTTP): Prometheus text exposition in vLLM's family names, types, help texts
//! and histogram bucket bounds (copied from a real vLLM 0.32 page, `tests/data/metrics/`), or
//! llama.cpp's `llamacpp:` families with `--flavor llama-cpp`. Each simulator thread is one
//! engine replica and gets its own series, labelled `engine="<thread>"` as vLLM labels its
//! data-parallel engines, beside `model_name`.
//!
//! Each replica's figures are atomics written only by its own thread (`bump`: a load and a
//! store, no locked add) and read by whichever thread serves `/metrics`; recording never
//! locks or allocates. Rendering allocates and runs only for a scrape.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::counter::bump;
use crate::plan::sim::Flavor;

/// A Prometheus histogram with fixed bounds, in nanoseconds (or tokens), one writer.
#[derive(Debug)]
pub(crate) struct PromHist {
    /// The `le` labels as vLLM prints them.
    labels: &'static [&'static str],
    /// The same bounds in the recorded unit.
    bounds: Box<[u64]>,
    /// Per bucket (not cumulative); the last is `+Inf`.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl PromHist {
    /// `labels` in seconds (`scale` 1e9: values recorded in ns) or in units (`scale` 1).
    fn new(labels: &'static [&'static str], scale: f64) -> Self {
        let bounds = labels
            .iter()
            .map(|l| (l.parse::<f64>().unwrap_or(f64::MAX) * scale).round() as u64)
            .collect();
        Self {
            labels,
            bounds,
            counts: (0..=labels.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
        }
    }

    /// Counts `v` in the first bucket whose bound it does not exceed. Owning thread only.
    #[inline]
    pub(crate) fn observe(&self, v: u64) {
        let i = self.bounds.iter().position(|&b| v <= b);
        bump(&self.counts[i.unwrap_or(self.bounds.len())], 1);
        bump(&self.sum, v);
    }

    #[cfg(test)]
    fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Relaxed)).sum()
    }
}

/// vLLM's bounds (as printed by its page) for TTFT.
const TTFT_S: &[&str] = &[
    "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75", "1.0",
    "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0",
];
/// For inter-token latency.
const ITL_S: &[&str] = &[
    "0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1.0",
    "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0",
];
/// For E2E, queue, prefill, decode and inference time.
const REQUEST_S: &[&str] = &[
    "0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0", "40.0",
    "50.0", "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0",
];

/// One replica's figures.
#[derive(Debug)]
pub(crate) struct ReplicaMetrics {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    /// KV blocks held and the cache's size (0 without a cache).
    pub kv_used_blocks: AtomicU64,
    pub kv_total_blocks: AtomicU64,
    pub kv_evictions: AtomicU64,
    pub prefix_queries: AtomicU64,
    pub prefix_hits: AtomicU64,
    /// Images looked up in the multimodal cache, and those it held.
    pub mm_queries: AtomicU64,
    pub mm_hits: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    /// Completions that ended by `max_tokens` (every simulated one that finishes).
    pub finished_length: AtomicU64,
    /// Completions whose connection failed or closed before the end.
    pub finished_abort: AtomicU64,
    /// Refused for a full waiting queue (429).
    pub rejected: AtomicU64,
    pub ttft: PromHist,
    pub itl: PromHist,
    pub e2e: PromHist,
    pub queue: PromHist,
    pub prefill: PromHist,
    pub decode: PromHist,
    pub inference: PromHist,
}

impl Default for ReplicaMetrics {
    fn default() -> Self {
        let secs = |l| PromHist::new(l, 1e9);
        Self {
            running: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            kv_used_blocks: AtomicU64::new(0),
            kv_total_blocks: AtomicU64::new(0),
            kv_evictions: AtomicU64::new(0),
            prefix_queries: AtomicU64::new(0),
            prefix_hits: AtomicU64::new(0),
            mm_queries: AtomicU64::new(0),
            mm_hits: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            generation_tokens: AtomicU64::new(0),
            finished_length: AtomicU64::new(0),
            finished_abort: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            ttft: secs(TTFT_S),
            itl: secs(ITL_S),
            e2e: secs(REQUEST_S),
            queue: secs(REQUEST_S),
            prefill: secs(REQUEST_S),
            decode: secs(REQUEST_S),
            inference: secs(REQUEST_S),
        }
    }
}

/// How one family is read off a replica.
enum Value {
    Gauge(fn(&ReplicaMetrics) -> f64),
    /// A share in [0, 1]: averaged, not summed, when replicas are summed.
    Share(fn(&ReplicaMetrics) -> f64),
    Counter(fn(&ReplicaMetrics) -> u64),
    /// A counter of seconds: a histogram's sum.
    Seconds(fn(&ReplicaMetrics) -> &PromHist),
    /// Counted by `finished_reason`.
    Finished,
    Hist(fn(&ReplicaMetrics) -> &PromHist),
}

/// One family of the page: name (without `_total` for counters), help, how to read it.
struct Family {
    name: &'static str,
    help: &'static str,
    value: Value,
}

fn kv_usage(m: &ReplicaMetrics) -> f64 {
    match m.kv_total_blocks.load(Relaxed) {
        0 => 0.0,
        t => m.kv_used_blocks.load(Relaxed) as f64 / t as f64,
    }
}

fn load(a: &AtomicU64) -> u64 {
    a.load(Relaxed)
}

/// vLLM's families (names and help texts as its page has them), in its order.
const VLLM: &[Family] = &[
    Family {
        name: "vllm:num_requests_running",
        help: "Number of requests in model execution batches.",
        value: Value::Gauge(|m| load(&m.running) as f64),
    },
    Family {
        name: "vllm:num_requests_waiting",
        help: "Number of requests waiting to be processed.",
        value: Value::Gauge(|m| load(&m.waiting) as f64),
    },
    Family {
        name: "vllm:kv_cache_usage_perc",
        help: "KV-cache usage. 1 means 100 percent usage.",
        value: Value::Share(kv_usage),
    },
    Family {
        name: "vllm:prefix_cache_queries",
        help: "Prefix cache queries, in terms of number of queried tokens.",
        value: Value::Counter(|m| load(&m.prefix_queries)),
    },
    Family {
        name: "vllm:prefix_cache_hits",
        help: "Prefix cache hits, in terms of number of cached tokens.",
        value: Value::Counter(|m| load(&m.prefix_hits)),
    },
    Family {
        name: "vllm:mm_cache_queries",
        help: "Multi-modal cache queries, in terms of number of queried items.",
        value: Value::Counter(|m| load(&m.mm_queries)),
    },
    Family {
        name: "vllm:mm_cache_hits",
        help: "Multi-modal cache hits, in terms of number of cached items.",
        value: Value::Counter(|m| load(&m.mm_hits)),
    },
    Family {
        name: "vllm:num_preemptions",
        help: "Cumulative number of preemption from the engine.",
        value: Value::Counter(|_| 0),
    },
    Family {
        name: "vllm:prompt_tokens",
        help: "Number of prefill tokens processed.",
        value: Value::Counter(|m| load(&m.prompt_tokens)),
    },
    Family {
        name: "vllm:generation_tokens",
        help: "Number of generation tokens processed.",
        value: Value::Counter(|m| load(&m.generation_tokens)),
    },
    Family {
        name: "vllm:request_success",
        help: "Count of successfully processed requests.",
        value: Value::Finished,
    },
    Family {
        name: "vllm:time_to_first_token_seconds",
        help: "Histogram of time to first token in seconds.",
        value: Value::Hist(|m| &m.ttft),
    },
    Family {
        name: "vllm:inter_token_latency_seconds",
        help: "Histogram of inter-token latency in seconds.",
        value: Value::Hist(|m| &m.itl),
    },
    Family {
        name: "vllm:e2e_request_latency_seconds",
        help: "Histogram of e2e request latency in seconds.",
        value: Value::Hist(|m| &m.e2e),
    },
    Family {
        name: "vllm:request_queue_time_seconds",
        help: "Histogram of time spent in WAITING phase for request.",
        value: Value::Hist(|m| &m.queue),
    },
    Family {
        name: "vllm:request_inference_time_seconds",
        help: "Histogram of time spent in RUNNING phase for request.",
        value: Value::Hist(|m| &m.inference),
    },
    Family {
        name: "vllm:request_prefill_time_seconds",
        help: "Histogram of time spent in PREFILL phase for request.",
        value: Value::Hist(|m| &m.prefill),
    },
    Family {
        name: "vllm:request_decode_time_seconds",
        help: "Histogram of time spent in DECODE phase for request.",
        value: Value::Hist(|m| &m.decode),
    },
    Family {
        name: "ringbench_sim:kv_cache_evictions",
        help: "Cached KV blocks the simulator evicted to make room (not a vLLM family).",
        value: Value::Counter(|m| load(&m.kv_evictions)),
    },
    Family {
        name: "ringbench_sim:queue_full_rejections",
        help: "Requests answered 429 for a full waiting queue (not a vLLM family).",
        value: Value::Counter(|m| load(&m.rejected)),
    },
];

/// llama.cpp `llama-server --metrics` families (tools/server/server.cpp), in its order. Its
/// page has no labels: one server is one engine, so replicas are summed.
const LLAMA_CPP: &[Family] = &[
    Family {
        name: "llamacpp:prompt_tokens",
        help: "Number of prompt tokens processed.",
        value: Value::Counter(|m| load(&m.prompt_tokens) - load(&m.prefix_hits)),
    },
    Family {
        name: "llamacpp:prompt_seconds",
        help: "Prompt process time",
        value: Value::Seconds(|m| &m.prefill),
    },
    Family {
        name: "llamacpp:tokens_predicted",
        help: "Number of generation tokens processed.",
        value: Value::Counter(|m| load(&m.generation_tokens)),
    },
    Family {
        name: "llamacpp:tokens_predicted_seconds",
        help: "Predict process time",
        value: Value::Seconds(|m| &m.decode),
    },
    Family {
        name: "llamacpp:kv_cache_usage_ratio",
        help: "KV-cache usage. 1 means 100 percent usage.",
        value: Value::Share(kv_usage),
    },
    Family {
        name: "llamacpp:requests_processing",
        help: "Number of requests processing.",
        value: Value::Gauge(|m| load(&m.running) as f64),
    },
    Family {
        name: "llamacpp:requests_deferred",
        help: "Number of requests deferred.",
        value: Value::Gauge(|m| load(&m.waiting) as f64),
    },
];

/// The whole page for `replicas`: per replica and family one series labelled as vLLM labels
/// its engines (`engine`, then any family label, then `model_name`: its alphabetical order),
/// or, for llama.cpp, one unlabelled series summed over replicas.
pub(crate) fn render(out: &mut Vec<u8>, flavor: Flavor, model: &str, replicas: &[&ReplicaMetrics]) {
    let mut page = String::with_capacity(16 * 1024);
    let model = model.replace('\\', "\\\\").replace('"', "\\\"");
    let families = match flavor {
        Flavor::Vllm => VLLM,
        Flavor::LlamaCpp => LLAMA_CPP,
    };
    for f in families {
        let (kind, full) = match f.value {
            Value::Gauge(_) | Value::Share(_) => ("gauge", f.name.to_string()),
            Value::Counter(_) | Value::Seconds(_) | Value::Finished => {
                ("counter", format!("{}_total", f.name))
            }
            Value::Hist(_) => ("histogram", f.name.to_string()),
        };
        let _ = writeln!(page, "# HELP {full} {}", f.help);
        let _ = writeln!(page, "# TYPE {full} {kind}");
        match flavor {
            Flavor::Vllm => {
                for (i, m) in replicas.iter().enumerate() {
                    let labels = Labels {
                        engine: i,
                        model: &model,
                    };
                    series(&mut page, &full, &labels, &f.value, m);
                }
            }
            Flavor::LlamaCpp => summed(&mut page, &full, &f.value, replicas),
        }
    }
    out.extend_from_slice(page.as_bytes());
}

/// One replica's labels; `with` adds a family label in its sorted place.
struct Labels<'a> {
    engine: usize,
    model: &'a str,
}

impl Labels<'_> {
    fn with(&self, extra: &str) -> String {
        format!(
            "{{engine=\"{}\",{extra}model_name=\"{}\"}}",
            self.engine, self.model
        )
    }
}

fn series(page: &mut String, name: &str, l: &Labels, value: &Value, m: &ReplicaMetrics) {
    let plain = l.with("");
    match value {
        Value::Gauge(g) | Value::Share(g) => {
            let _ = writeln!(page, "{name}{plain} {:?}", g(m));
        }
        Value::Counter(c) => {
            let _ = writeln!(page, "{name}{plain} {:?}", c(m) as f64);
        }
        Value::Seconds(h) => {
            let _ = writeln!(page, "{name}{plain} {:?}", load(&h(m).sum) as f64 / 1e9);
        }
        Value::Finished => {
            let reasons = [
                ("stop", 0),
                ("length", load(&m.finished_length)),
                ("abort", load(&m.finished_abort)),
            ];
            for (reason, n) in reasons {
                let labels = l.with(&format!("finished_reason=\"{reason}\","));
                let _ = writeln!(page, "{name}{labels} {:?}", n as f64);
            }
        }
        Value::Hist(h) => {
            let h = h(m);
            let mut seen = 0u64;
            for (i, le) in h.labels.iter().chain(["+Inf"].iter()).enumerate() {
                seen += h.counts[i].load(Relaxed);
                let labels = l.with(&format!("le=\"{le}\","));
                let _ = writeln!(page, "{name}_bucket{labels} {:?}", seen as f64);
            }
            let _ = writeln!(page, "{name}_count{plain} {:?}", seen as f64);
            let sum = load(&h.sum) as f64 / 1e9;
            let _ = writeln!(page, "{name}_sum{plain} {sum:?}");
        }
    }
}

/// One unlabelled series: counts summed over replicas, shares averaged.
fn summed(page: &mut String, name: &str, value: &Value, replicas: &[&ReplicaMetrics]) {
    let n = replicas.len().max(1) as f64;
    let v: f64 = match value {
        Value::Gauge(g) => replicas.iter().map(|m| g(m)).sum(),
        Value::Share(g) => replicas.iter().map(|m| g(m)).sum::<f64>() / n,
        Value::Counter(c) => replicas.iter().map(|m| c(m) as f64).sum(),
        Value::Seconds(h) => replicas.iter().map(|m| load(&h(m).sum) as f64 / 1e9).sum(),
        Value::Finished | Value::Hist(_) => return,
    };
    let _ = writeln!(page, "{name} {v}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_take_values_up_to_and_including_their_bound() {
        let h = PromHist::new(TTFT_S, 1e9);
        h.observe(1_000_000); // exactly 1 ms: the first bucket
        h.observe(1_000_001);
        h.observe(5_000_000_000_000); // beyond 2560 s
        assert_eq!(h.counts[0].load(Relaxed), 1);
        assert_eq!(h.counts[1].load(Relaxed), 1);
        assert_eq!(h.counts[TTFT_S.len()].load(Relaxed), 1);
        assert_eq!(h.count(), 3);
        assert_eq!(h.sum.load(Relaxed), 5_000_002_000_001);
    }

    #[test]
    fn the_page_has_one_series_per_replica_with_cumulative_buckets() {
        let (a, b) = (ReplicaMetrics::default(), ReplicaMetrics::default());
        a.ttft.observe(30_000_000);
        a.ttft.observe(30_000_000);
        b.ttft.observe(3_000_000);
        bump(&b.running, 3);
        bump(&a.mm_queries, 5);
        bump(&a.mm_hits, 4);
        let mut out = vec![];
        render(&mut out, Flavor::Vllm, "m\"x", &[&a, &b]);
        let page = String::from_utf8(out).unwrap();
        let l = "model_name=\"m\\\"x\"";
        for line in [
            "# TYPE vllm:num_requests_running gauge".to_string(),
            format!("vllm:num_requests_running{{engine=\"1\",{l}}} 3.0"),
            "# TYPE vllm:prefix_cache_hits_total counter".to_string(),
            "# TYPE vllm:mm_cache_queries_total counter".to_string(),
            format!("vllm:mm_cache_queries_total{{engine=\"0\",{l}}} 5.0"),
            format!("vllm:mm_cache_hits_total{{engine=\"0\",{l}}} 4.0"),
            format!("vllm:mm_cache_hits_total{{engine=\"1\",{l}}} 0.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.02\",{l}}} 0.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.04\",{l}}} 2.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"+Inf\",{l}}} 2.0"),
            format!("vllm:time_to_first_token_seconds_bucket{{engine=\"1\",le=\"0.005\",{l}}} 1.0"),
            format!("vllm:time_to_first_token_seconds_count{{engine=\"0\",{l}}} 2.0"),
            format!("vllm:time_to_first_token_seconds_sum{{engine=\"0\",{l}}} 0.06"),
            format!(
                "vllm:request_success_total{{engine=\"0\",finished_reason=\"length\",{l}}} 0.0"
            ),
        ] {
            assert!(page.lines().any(|p| p == line), "missing {line}\n{page}");
        }
        let mut out = vec![];
        render(&mut out, Flavor::LlamaCpp, "m", &[&a, &b]);
        let page = String::from_utf8(out).unwrap();
        assert!(
            page.contains("\nllamacpp:requests_processing 3\n"),
            "{page}"
        );
        assert!(
            page.contains("# TYPE llamacpp:prompt_tokens_total counter\n"),
            "{page}"
        );
    }
}
