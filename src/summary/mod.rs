//! Stage 8 of the flow (… → record → collector → **summary** → report): the one result type
//! of a run. `Summary` serializes to exactly the `summary.json` of `interface.md` (top-level
//! keys fixed; nested objects may gain keys, never lose or rename them). This module holds
//! types, key naming and the rules that read a finished summary (exit code, small-sample
//! marking); it never sees a `Record`, never computes a figure from raw data and never prints.
//!
//! Units are in the key names (`latency_ms`, `duration_s`, `_per_s`). A figure that cannot be
//! computed (no samples, zero duration, no SLO given) is `null`, never a made-up 0.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped when a key changes meaning or disappears (adding keys does not bump it).
pub const SCHEMA_VERSION: u32 = 1;

/// The percentiles every stats object carries whatever `--percentiles` says, so that
/// consumers can rely on the keys of `interface.md`.
pub const FIXED_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// Exit codes of `interface.md` that a finished run can produce.
pub const EXIT_OK: i32 = 0;
pub const EXIT_OVERHEAD_INVALID: i32 = 4;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema_version: u32,
    pub tool: Tool,
    /// RFC 3339 wall clock of the start; the only wall-clock time in the summary.
    pub started_at: String,
    pub host: Host,
    /// The resolved `Plan`, serialized (secrets already redacted by `Plan`'s serializer).
    pub config: serde_json::Value,
    pub counts: Counts,
    /// Last `done_ns` − first `sent_ns` over measured requests.
    pub duration_s: f64,
    pub throughput: Throughput,
    pub target: TargetLoad,
    pub achieved: Achieved,
    pub latency_ms: Latency,
    pub tokens: Tokens,
    pub overhead: Overhead,
    pub warnings: Vec<String>,
    /// The run was stopped early (signal); figures cover what happened until then.
    pub interrupted: bool,
    /// Throughput, in-flight requests and TTFT/ITL percentiles per interval of the run.
    #[serde(default)]
    pub timeseries: crate::collector::series::TimeSeries,
    /// Input/output lengths asked (realized percentiles), their method, shared prefixes.
    #[serde(default)]
    pub workload: Option<crate::prepare::WorkloadStats>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Self {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Online CPUs of the host (not only those the workers were pinned to).
    pub cpus: usize,
    /// Kernel release (`uname -r`), or "unknown".
    pub kernel: String,
}

impl Host {
    pub fn detect() -> Self {
        // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let cpus = usize::try_from(online).unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".to_string());
        Host { cpus, kernel }
    }
}

/// Request counts. All but `warmup` are over measured requests only:
/// `scheduled = sent + not_sent` and `sent = ok + failed + cancelled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Measured arrivals of the schedule: the run's scheduled total minus `warmup`.
    pub scheduled: u64,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub not_sent: u64,
    /// Warm-up records of any outcome; excluded from every other figure.
    pub warmup: u64,
    /// `Outcome::kind_key`: `connect`, `timeout`, `http_503`, `malformed`, …
    pub failed_by_kind: BTreeMap<String, u64>,
    /// Successful requests whose server-reported OSL differs from the `max_tokens` asked
    /// (the server did not honour `ignore_eos` / `min_tokens`).
    #[serde(default)]
    pub osl_mismatch: u64,
    /// `warmup` by the rule that excluded each request: `warmup = count + duration − both`.
    #[serde(default)]
    pub warmup_by: WarmupCounts,
}

/// Warm-up records by rule. A request due within `--warmup-duration` that is also among the
/// first `--warmup-requests` is in `count`, in `duration` and in `both`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WarmupCounts {
    /// Excluded by `--warmup-requests` (the first N arrivals).
    pub count: u64,
    /// Excluded by `--warmup-duration` (due within D of the start).
    pub duration: u64,
    /// Excluded by both rules at once.
    pub both: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Successful requests / duration.
    pub requests_per_s: Option<f64>,
    /// Σ OSL of successful requests / duration.
    pub output_tokens_per_s: Option<f64>,
    /// Σ (ISL + OSL) of successful requests / duration.
    pub total_tokens_per_s: Option<f64>,
    /// Requests meeting every SLO / duration; `null` when no SLO was given.
    pub goodput_requests_per_s: Option<f64>,
    /// Σ OSL of the requests meeting every SLO / duration; `null` when no SLO was given.
    pub goodput_output_tokens_per_s: Option<f64>,
    /// Good / all measured sent (failures and cancellations included).
    pub good_fraction: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetLoad {
    /// Open loop only.
    pub request_rate: Option<f64>,
    /// Closed loop: virtual users; open loop: `--max-concurrency`, if any.
    pub concurrency: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Achieved {
    /// Arrival rate actually offered: (measured sent − 1) / (last sent − first sent).
    pub request_rate: Option<f64>,
    /// The rate the schedule set for the same requests: (measured sent − 1) / (last intended
    /// − first intended). Equals the target for constant arrivals; for Poisson it is the
    /// seeded draw's own rate, which is what `request_rate` should match.
    pub schedule_rate: Option<f64>,
    /// Little's law: Σ E2E of measured requests / duration.
    pub concurrency_mean: Option<f64>,
}

/// One distribution, in milliseconds (or the unit its parent key names). Count, mean, std,
/// min and max are exact; percentiles are nearest-rank (the ⌈p·n/100⌉-th smallest sample)
/// read from a 3-significant-digit histogram, so within 0.1% and never outside [min, max].
/// (vLLM's numpy percentiles interpolate between samples; the two agree as n grows.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: u64,
    pub mean: Option<f64>,
    /// Population standard deviation (numpy's default, as vLLM reports it).
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p99_9: Option<f64>,
    /// Configured percentiles beyond the fixed five (`p75`, `p99_99`, …).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Option<f64>>,
    /// Keys of percentiles computed from too few samples to mean much (see `is_small_sample`).
    pub small_sample: Vec<String>,
}

impl Stats {
    /// The value of a percentile by its key (`p99_9`), fixed or configured.
    pub fn get(&self, key: &str) -> Option<f64> {
        match key {
            "p50" => self.p50,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "p99_9" => self.p99_9,
            other => self.extra.get(other).copied().flatten(),
        }
    }

    /// Stores a percentile under its key; fixed keys go to their fields.
    pub fn set(&mut self, key: String, value: Option<f64>) {
        match key.as_str() {
            "p50" => self.p50 = value,
            "p90" => self.p90 = value,
            "p95" => self.p95 = value,
            "p99" => self.p99 = value,
            "p99_9" => self.p99_9 = value,
            _ => {
                self.extra.insert(key, value);
            }
        }
    }

    pub fn is_small(&self, key: &str) -> bool {
        self.small_sample.iter().any(|k| k == key)
    }
}

/// `99.9` → `"p99_9"`, `50` → `"p50"`, `99.99` → `"p99_99"`.
pub fn percentile_key(p: f64) -> String {
    format!("p{p}").replace('.', "_")
}

/// `"p99_9"` → `"P99.9"`, for people.
pub fn percentile_label(key: &str) -> String {
    key.replacen('p', "P", 1).replace('_', ".")
}

/// A percentile p needs at least one sample beyond it to mean anything: 1/(1 − p/100)
/// samples, which gives metrics.md's rule (p99 < 100, p99.9 < 1000) and extends it to every
/// configured percentile (p99.99 < 10 000, p90 < 10). p100 is the maximum, never marked.
pub fn is_small_sample(p: f64, count: u64) -> bool {
    if p >= 100.0 {
        return false;
    }
    let needed = (100.0 / (100.0 - p)).round();
    (count as f64) < needed
}

/// The distributions of `metrics.md`, in milliseconds. Latencies are over measured successful
/// requests; streaming-only ones (`ttft`, `ttfo`, `tpot`, `itl`, `ttft_from_intent`,
/// `max_stall`) are empty for `--no-stream`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub ttft: Stats,
    pub ttfo: Stats,
    pub ttfb: Stats,
    pub tpot: Stats,
    /// Every chunk gap of every successful request (vLLM's ITL list).
    pub itl: Stats,
    pub e2e: Stats,
    pub ntpot: Stats,
    pub ttft_from_intent: Stats,
    pub e2e_from_intent: Stats,
    /// Largest chunk gap of each request.
    pub max_stall: Stats,
    /// Per-token ITL: each chunk gap divided by the tokens it delivered, one sample per
    /// token (exact counts when the server streams cumulative usage, else an even split).
    #[serde(default)]
    pub itl_per_token: Stats,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Σ ISL of measured successful requests.
    pub input_total: u64,
    /// Σ OSL of measured successful requests.
    pub output_total: u64,
    /// How many successful requests took their OSL from each source.
    pub output_source: OutputSource,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputSource {
    pub usage: u64,
    pub tokenizer: u64,
    pub events: u64,
}

/// What the client itself cost, and whether that leaves the run's figures trustworthy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// `sent_ns − intended_ns` over measured sent requests.
    pub sched_lag_ms: Stats,
    /// How late each worker's periodic probe timer fired, all workers merged.
    pub loop_lag_ms: Stats,
    /// Event stamp − server's write stamp, over events the server stamped; `null` otherwise.
    pub delivery_delay_ms: Option<Stats>,
    /// Σ worker CPU / Σ worker wall time, in percent of one CPU.
    pub worker_cpu_percent: Option<f64>,
    /// The busiest worker's CPU / wall, in percent.
    pub worker_cpu_percent_max: Option<f64>,
    /// Highest share of a worker's wall time spent spinning before sends (see `workers`).
    #[serde(default)]
    pub pacer_spin_percent_max: Option<f64>,
    pub cpu_ns_per_request: Option<f64>,
    pub cpu_ns_per_event: Option<f64>,
    /// As the two above with the pacer's idle polling left out: the CPU the work took.
    #[serde(default)]
    pub busy_cpu_ns_per_request: Option<f64>,
    #[serde(default)]
    pub busy_cpu_ns_per_event: Option<f64>,
    pub events_per_read_mean: Option<f64>,
    pub bytes_per_read_mean: Option<f64>,
    /// `io_uring` or `epoll`.
    pub io_driver: String,
    /// Records that found the collector channel full (kept and sent later), all workers.
    pub channel_full: u64,
    pub workers: Vec<WorkerOverhead>,
    /// The in-process simulator's own report, when the run used one.
    pub sim: Option<serde_json::Value>,
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
    /// Per read: the kernel's software receive stamp (`SO_TIMESTAMPING`) of the newest
    /// segment the read returned → the worker's stamp of that read. `null` when not measured.
    #[serde(default)]
    pub kernel_rx_delay_ms: Option<Stats>,
    /// Why `kernel_rx_delay_ms` is `null` (flag off, TLS, the socket gave no stamps).
    #[serde(default)]
    pub kernel_rx_delay_null_reason: Option<String>,
    /// What the host's kernel dropped and retransmitted during the run (host-wide counters);
    /// `null` when they could not be read.
    #[serde(default)]
    pub kernel_net: Option<crate::rt::netcount::NetDelta>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerOverhead {
    pub worker: u16,
    pub cpu: usize,
    pub cpu_percent: Option<f64>,
    pub loop_lag_p99_ms: Option<f64>,
    pub requests: u64,
    pub reads: u64,
    pub events: u64,
    pub bytes: u64,
    pub connections_opened: u64,
    pub reconnects: u64,
    pub channel_full: u64,
    /// Share of the worker's wall time its pacer spent spinning before sends (the spin
    /// keeps serving reads, so this bounds, not equals, the CPU the spin cost).
    #[serde(default)]
    pub pacer_spin_percent: Option<f64>,
    /// Share of the worker's wall time in spin passes that served nothing: idle polling,
    /// within `cpu_percent`, which `busy_percent` leaves out.
    #[serde(default)]
    pub pacer_idle_percent: Option<f64>,
    /// `cpu_percent` less `pacer_idle_percent`: the saturation verdict's figure.
    #[serde(default)]
    pub busy_percent: Option<f64>,
    /// The spin budget at the end of the run, µs (learned under `--pacer-spin-us auto`).
    #[serde(default)]
    pub pacer_spin_budget_us: Option<f64>,
}

impl Summary {
    /// `interface.md`'s exit code for a run that finished: 4 when the client's own overhead
    /// made it invalid, else 0. (1, 2 and 3 belong to errors, usage and gates decided elsewhere.)
    pub fn exit_code(&self) -> i32 {
        if self.overhead.valid {
            EXIT_OK
        } else {
            EXIT_OVERHEAD_INVALID
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_keys_and_labels() {
        assert_eq!(percentile_key(50.0), "p50");
        assert_eq!(percentile_key(99.9), "p99_9");
        assert_eq!(percentile_key(99.99), "p99_99");
        assert_eq!(percentile_key(75.0), "p75");
        assert_eq!(percentile_label("p99_9"), "P99.9");
    }

    #[test]
    fn small_sample_rule_matches_metrics_md() {
        assert!(is_small_sample(99.0, 99));
        assert!(!is_small_sample(99.0, 100));
        assert!(is_small_sample(99.9, 999));
        assert!(!is_small_sample(99.9, 1000));
        assert!(is_small_sample(99.99, 9_999));
        assert!(!is_small_sample(50.0, 2));
        assert!(!is_small_sample(100.0, 1));
    }

    #[test]
    fn stats_extra_percentiles_flatten_beside_the_fixed_ones() {
        let mut s = Stats {
            count: 3,
            ..Default::default()
        };
        s.set("p99_9".into(), Some(2.0));
        s.set("p75".into(), Some(1.5));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["p99_9"], 2.0);
        assert_eq!(v["p75"], 1.5);
        assert_eq!(s.get("p75"), Some(1.5));
        let back: Stats = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
