//! Part of the summary (types only): the `server` block of `summary.json`, what the server's
//! own metrics said over the measured window. `scrape::window` fills it from the scrapes (or a
//! Prometheus query fills it the same way); this file computes nothing, imports nothing of the
//! crate and never prints.
//!
//! The maps are keyed by concept (`scrape::Concept::key`: `running`, `kv_cache_usage`,
//! `ttft`, …); a concept the server does not export, or that the window holds too few scrapes
//! of, is absent, never a made-up 0. Gauges are in their own unit (requests; KV-cache usage a
//! share from 0 to 1), counters in theirs (tokens, events), histogram figures in milliseconds.
//!
//! ```json
//! "server": {
//!   "source": "scrape", "urls": ["http://127.0.0.1:8000/metrics"], "engine": "vllm",
//!   "window_s": 60.2, "scrapes_ok": 61, "scrapes_failed": 1, "failures_by_kind": {"timeout": 1},
//!   "gauges": {"running": {"samples": 61, "min": 0, "mean": 7.9, "p50": 8, "p90": 8, "max": 8}},
//!   "counters": {"generation_tokens": {"delta": 48000, "per_s": 797.3, "resets": 0}},
//!   "histograms": {"ttft": {"count": 3000, "sum_ms": 91234.5, "mean_ms": 30.4,
//!                           "p50_ms": 28.1, "p90_ms": 55.0, "p99_ms": 79.6}},
//!   "ntpot_ms": {"queue": 0.8, "prefill": 1.9, "decode": 10.2, "total": 12.9},
//!   "raw_families_kept": 54, "prometheus": null
//! }
//! ```
//!
//! Read from a Prometheus server (`--prometheus`), the block is the same with `source`
//! `"prometheus"`, `urls` the server's, and `prometheus` saying how: `{"url": …, "selector":
//! "{pod=~\"vllm-.*\"}", "step_s": 1.0, "targets": ["{instance=\"10.0.0.7:8000\",job=\"vllm\"}"]}`;
//! `scrapes_ok` then counts the points read (one per step and target) and `scrapes_failed`
//! the queries that failed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where the server's figures came from (`source`).
pub mod source {
    /// The server's own `/metrics` pages, scraped beside the run.
    pub const SCRAPE: &str = "scrape";
    /// A Prometheus server's query API over the run's window.
    pub const PROMETHEUS: &str = "prometheus";
}

/// The `server` block: the server's own metrics over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    /// `source::SCRAPE` or `source::PROMETHEUS`.
    pub source: String,
    /// The URLs scraped (or the Prometheus server's), in the order given.
    pub urls: Vec<String>,
    /// The engine its families are (`vllm`, `sglang`, `tgi`, `llama.cpp`); `null` when no
    /// known engine's.
    pub engine: Option<String>,
    /// The window's length, seconds (its ends are the phase boundaries of the run).
    pub window_s: f64,
    /// Scrapes started within the window that succeeded.
    pub scrapes_ok: u64,
    /// Scrapes started within the window that failed.
    pub scrapes_failed: u64,
    /// `scrapes_failed` by kind (`timeout`, `connect`, `reset`, `http_500`, `not_prometheus`,
    /// …).
    pub failures_by_kind: BTreeMap<String, u64>,
    /// Gauge concepts over the window's scrapes.
    pub gauges: BTreeMap<String, GaugeStats>,
    /// Counter concepts: what they rose by over the window.
    pub counters: BTreeMap<String, CounterStats>,
    /// Histogram concepts: the observations made within the window.
    pub histograms: BTreeMap<String, HistogramStats>,
    /// The server's time per output token, decomposed; `null` without a generation-token
    /// count or any of the three parts.
    pub ntpot_ms: Option<NtpotMs>,
    /// Families of no concept kept raw in `server_metrics.jsonl` (on the window's last page).
    pub raw_families_kept: u64,
    /// How the figures were read from a Prometheus server; `null` when scraped directly.
    #[serde(default)]
    pub prometheus: Option<PrometheusSource>,
    /// The client's figure less the server's, where both exist: `ttft_p50_ms`, `ttft_p99_ms`,
    /// `e2e_p50_ms`, `e2e_p99_ms` (what the network, the server's HTTP front end and the
    /// client add; the server's from bucket interpolation), `prompt_tokens` and
    /// `generation_tokens` (the client's totals less the server's counter deltas).
    #[serde(default)]
    pub client_minus_server: BTreeMap<String, f64>,
}

/// Where a Prometheus-read block came from (`--prometheus`, `--prometheus-selector`,
/// `--server-metrics-interval`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrometheusSource {
    /// The Prometheus server's base URL.
    pub url: String,
    /// The label matchers merged into every query; `null`: none.
    pub selector: Option<String>,
    /// The range queries' step, seconds.
    pub step_s: f64,
    /// The targets (Prometheus's `job` and `instance` labels) whose series were read, each
    /// summed as one scraped page would be.
    pub targets: Vec<String>,
}

/// A gauge over the scrapes of the window (with several URLs, summed per round; a share
/// averaged). Percentiles are nearest-rank over the scrapes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GaugeStats {
    /// Scrapes (rounds) it was read on.
    pub samples: u64,
    /// Smallest value.
    pub min: Option<f64>,
    /// Arithmetic mean over the scrapes (not time-weighted: scrapes are evenly spaced).
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// Largest value.
    pub max: Option<f64>,
}

/// A counter's rise over the window: from the first scrape at or after its start to the last
/// at or before its end, with resets handled as Prometheus's `increase` does (a drop means the
/// counter restarted from 0), not extrapolated to the window's edges.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterStats {
    /// What it rose by, in its unit (tokens, events).
    pub delta: f64,
    /// `delta` over the time between the two scrapes, per second; `null` when they coincide.
    pub per_s: Option<f64>,
    /// Drops seen (server restarts).
    pub resets: u64,
}

/// A histogram's observations within the window: the difference of its cumulative buckets
/// between the window's first and last scrape. Percentiles are interpolated linearly inside
/// the bucket they fall in, as Prometheus's `histogram_quantile` does, so they are only as
/// fine as the engine's buckets; one that falls in the `+Inf` bucket is the highest finite
/// bound (a floor) and is named in `capped`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramStats {
    /// Observations; `null` when the engine exports only the sum (llama.cpp's seconds).
    pub count: Option<u64>,
    /// Their sum, ms; `null` when the page has no `_sum`.
    pub sum_ms: Option<f64>,
    /// `sum_ms / count`.
    pub mean_ms: Option<f64>,
    /// Median, ms.
    pub p50_ms: Option<f64>,
    /// 90th percentile, ms.
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Configured percentiles beyond these three (`p95_ms`, `p99_9_ms`, …).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Option<f64>>,
    /// Keys of percentiles that fell in the `+Inf` bucket (their value is a floor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capped: Vec<String>,
    /// Keys of percentiles from too few observations to mean much.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub small_sample: Vec<String>,
    /// Keys of percentiles that came from a bucket wider than a quarter of their value
    /// (`scrape::window::COARSE_WIDTH_FRACTION`): where the interpolation put them inside it,
    /// a guess, not a measurement (all of vLLM's queue times under its first bound, 300 ms,
    /// read as p50 150 ms; a 20–40 ms TTFT bucket as 30 ms). Their bounds are in `ranges`,
    /// no `client_minus_server` is computed from them, and `mean_ms` is exact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coarse: Vec<String>,
    /// For each key of `coarse`, the bucket the percentile fell in: what is known of it
    /// (`{"p50_ms": {"low_ms": 20, "high_ms": 40}}`: between 20 and 40 ms).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ranges: BTreeMap<String, BucketRange>,
}

/// The bucket a coarse percentile fell in, ms: above `low_ms`, at or below `high_ms`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BucketRange {
    /// The bucket's lower bound (the previous bucket's `le`; 0 for the first).
    pub low_ms: f64,
    /// Its upper bound (`le`).
    pub high_ms: f64,
}

impl HistogramStats {
    /// Stores a percentile under its key; the fixed ones go to their fields.
    pub fn set(&mut self, key: String, value: Option<f64>) {
        match key.as_str() {
            "p50_ms" => self.p50_ms = value,
            "p90_ms" => self.p90_ms = value,
            "p99_ms" => self.p99_ms = value,
            _ => {
                self.extra.insert(key, value);
            }
        }
    }

    /// A percentile by its key (`p99_ms`, `p99_9_ms`).
    pub fn get(&self, key: &str) -> Option<f64> {
        match key {
            "p50_ms" => self.p50_ms,
            "p90_ms" => self.p90_ms,
            "p99_ms" => self.p99_ms,
            other => self.extra.get(other).copied().flatten(),
        }
    }
}

/// NTPOT as the measurement-bias paper defines it, from the server's own histograms:
/// (queue + prefill + decode time) / output tokens, each part's sum over the window divided by
/// the generation-token count of the same window (a ratio of sums, so token-weighted, not a
/// mean of per-request ratios). Milliseconds per output token.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NtpotMs {
    /// Waiting before being scheduled.
    pub queue: Option<f64>,
    /// Prefill.
    pub prefill: Option<f64>,
    /// Decode.
    pub decode: Option<f64>,
    /// The three together; `null` unless all three are known.
    pub total: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_percentiles_flatten_and_read_back() {
        let mut h = HistogramStats {
            count: Some(10),
            ..Default::default()
        };
        h.set("p99_ms".into(), Some(3.0));
        h.set("p99_9_ms".into(), Some(4.0));
        h.capped.push("p99_9_ms".into());
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["p99_9_ms"], 4.0);
        assert_eq!(v["p99_ms"], 3.0);
        assert!(v.get("small_sample").is_none());
        let back: HistogramStats = serde_json::from_value(v).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.get("p99_9_ms"), Some(4.0));
    }

    #[test]
    fn an_empty_block_serializes_with_every_key() {
        let v = serde_json::to_value(ServerSummary::default()).unwrap();
        for key in [
            "source",
            "urls",
            "engine",
            "window_s",
            "scrapes_ok",
            "scrapes_failed",
            "failures_by_kind",
            "gauges",
            "counters",
            "histograms",
            "ntpot_ms",
            "raw_families_kept",
            "prometheus",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
    }
}
