//! Stage 8 of the flow (… → record → collector → **summary** → report): the one result type
//! of a run. `Summary` serializes to exactly the `summary.json` that
//! `schema/summary.schema.json` describes (top-level keys fixed; nested objects may gain keys,
//! never lose or rename them). This module holds
//! types, key naming and the rules that read a finished summary (exit code, small-sample
//! marking); it never sees a `Record`, never computes a figure from raw data and never prints.
//!
//! Units are in the key names (`latency_ms`, `duration_s`, `_per_s`). A figure that cannot be
//! computed (no samples, zero duration, no SLO given) is `null`, never a made-up 0.

pub mod apis;
pub mod endpoints;
pub mod errors;
pub mod figure;
pub mod metric;
pub mod network;
pub mod series;
pub mod served;
pub mod server;
pub mod session;
pub mod shard;
pub mod stages;
pub mod study;
pub mod upload;
pub mod workers;
pub mod workload;

pub use metric::{Latency, Metric};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped when a key changes meaning or disappears (adding keys does not bump it).
pub const SCHEMA_VERSION: u32 = 1;

/// The percentiles every stats object carries whatever `--percentiles` says, so that
/// consumers can rely on the keys of `schema/summary.schema.json`.
pub const FIXED_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// How a command ends, as its process exit status: the one list of exit codes
/// (`docs/guide.md`, "The verdict and exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Ran, and every check passed.
    Ok,
    /// An error before or during the run (cannot connect, cannot write, …).
    Error,
    /// A flag or an input that cannot be used as given.
    Usage,
    /// The run finished but a gate failed: an SLO (`sweep`, `search`) or `--max-failed`.
    Gate,
    /// The run finished but the client's own overhead made its figures untrustworthy.
    Invalid,
    /// The run finished and no measured request succeeded: there is nothing to report.
    NoneSucceeded,
    /// A signal stopped it; the figures cover what ran until then.
    Interrupted,
}

impl Exit {
    /// The process exit status.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Error => 1,
            Exit::Usage => 2,
            Exit::Gate => 3,
            Exit::Invalid => 4,
            Exit::NoneSucceeded => 5,
            // 128 + SIGINT, as shells report an interrupted command.
            Exit::Interrupted => 130,
        }
    }

    /// How a sweep or a search ends, in a run's precedence: interrupted; a point's run
    /// invalid (the client's overhead) and not allowed — before the gate, since an invalid
    /// point never passes, so its SLO verdict may be the client's doing; the SLO gate failed
    /// (sweep: SLOs given and no point met them all; search: not even the lowest load
    /// passes); else ok.
    pub fn of_study(interrupted: bool, invalid: bool, gate_failed: bool) -> Exit {
        if interrupted {
            Exit::Interrupted
        } else if invalid {
            Exit::Invalid
        } else if gate_failed {
            Exit::Gate
        } else {
            Exit::Ok
        }
    }

    /// How a finished run ends, first match wins: interrupted; nothing measured succeeded;
    /// the client's overhead made it invalid (unless `allow_invalid`); more failures than
    /// `max_failed_percent` of what was sent; else ok.
    pub fn of_run(facts: &Verdict, interrupted: bool, valid: bool, allow_invalid: bool) -> Exit {
        if interrupted {
            Exit::Interrupted
        } else if facts.none_succeeded {
            Exit::NoneSucceeded
        } else if !valid && !allow_invalid {
            Exit::Invalid
        } else if facts.gate_failed() {
            Exit::Gate
        } else {
            Exit::Ok
        }
    }
}

/// What a CI job needs to trust a run's exit status: the status itself and why (`verdict`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The exit status of the run as it ended (`Exit::code`, without `--allow-invalid`).
    pub exit_code: u8,
    /// Why the status is not 0, first the one that decided it; empty when it is 0.
    pub reasons: Vec<String>,
    /// No measured request succeeded (none sent, or every one failed or was cancelled).
    pub none_succeeded: bool,
    /// Failed / sent over measured requests, percent (`null` when none was sent).
    pub failed_percent: Option<f64>,
    /// `--max-failed`: a failure share above it fails the gate (`null`: no such gate).
    pub max_failed_percent: Option<f64>,
}

impl Verdict {
    /// More failed than `--max-failed` allows.
    pub fn gate_failed(&self) -> bool {
        match (self.failed_percent, self.max_failed_percent) {
            (Some(f), Some(max)) => f > max,
            _ => false,
        }
    }
}

/// The result of one run (or of `ringbench report`): what `summary.json` holds, key for key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `SCHEMA_VERSION` of the ringbench that wrote it.
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: Tool,
    /// RFC 3339 wall clock of the start; the only wall-clock time in the summary.
    pub started_at: String,
    /// The machine the client ran on.
    pub host: Host,
    /// The resolved `Plan`, serialized (secrets already redacted by `Plan`'s serializer).
    pub config: serde_json::Value,
    /// How many requests were scheduled, sent and how each ended.
    pub counts: Counts,
    /// Last `done_ns` − first `sent_ns` over measured requests.
    pub duration_s: f64,
    /// Rates over `duration_s`, per second.
    pub throughput: Throughput,
    /// The load the plan asked for.
    pub target: TargetLoad,
    /// The load the client actually offered.
    pub achieved: Achieved,
    /// The per-request distributions (TTFT, TPOT, ITL, E2E, …), in milliseconds.
    pub latency_ms: Latency,
    /// Input and output token totals.
    pub tokens: Tokens,
    /// What the client itself cost, and whether the run is valid.
    pub overhead: Overhead,
    /// Facts a reader should know about the figures (OSL mismatch, clamped or out-of-order stamps,
    /// a log that could not be written, …); they do not change the exit status.
    pub warnings: Vec<String>,
    /// The run was stopped early (signal); figures cover what happened until then.
    pub interrupted: bool,
    /// Throughput, in-flight requests and TTFT/ITL percentiles per interval of the run.
    #[serde(default)]
    pub timeseries: series::TimeSeries,
    /// Input/output lengths asked (realized percentiles), their method, shared prefixes.
    #[serde(default)]
    pub workload: Option<workload::WorkloadStats>,
    /// How the run ends (exit status) and why.
    #[serde(default)]
    pub verdict: Verdict,
    /// What the server's own metrics said over the measured window (`--server-metrics`);
    /// `null` when they were not scraped.
    #[serde(default)]
    pub server: Option<server::ServerSummary>,
    /// Chunk gaps above `--stall-ms` (a reading-speed budget); `null` for `--no-stream` or
    /// without a measured success.
    #[serde(default)]
    pub stalls: Option<Stalls>,
    /// `--stages`: each stage's counts, achieved rate and latencies from its own records;
    /// `null` for a run without stages.
    #[serde(default)]
    pub stages: Option<Vec<stages::StageSummary>>,
    /// Which part of a run spread over hosts this is (`--shard I/N`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shard::ShardInfo>,
    /// How the run's stamps map to wall-clock time, and the kernel's clock-sync estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<shard::ClockSync>,
    /// The shards a merged run is made of (`ringbench merge`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<shard::MergeInfo>,
    /// Conversations (`--turns`): how they ended and the figures per turn index; `null` for
    /// a run of independent requests.
    #[serde(default)]
    pub sessions: Option<session::Sessions>,
    /// The requests the client aborted on purpose (`--cancel-rate`) and what they had
    /// received; `null` without `--cancel-rate`.
    #[serde(default)]
    pub cancellations: Option<Cancellations>,
    /// With several `--url`s: each server's counts, throughput and latencies, in `--url`'s
    /// order; `null` with one server.
    #[serde(default)]
    pub endpoints: Option<Vec<endpoints::EndpointRow>>,
    /// The tool calls the answers made: with `--tools`, or when any answer called one;
    /// `null` otherwise.
    #[serde(default)]
    pub tools: Option<apis::ToolCalls>,
    /// A pooling endpoint's run (embeddings, rerank, score): the inputs answered and the
    /// answers' sizes; `null` for a generating endpoint.
    #[serde(default)]
    pub pooling: Option<apis::Pooling>,
    /// The measured failures grouped by kind, HTTP status and the server's message, the
    /// `errors::MAX_ERROR_GROUPS` most frequent first; empty when none failed.
    #[serde(default)]
    pub errors: Vec<errors::ErrorGroup>,
    /// What the measured successful requests carried (body bytes, images, audio) and at what
    /// rate; their upload time is `latency_ms.upload`. `null` in summaries written before it
    /// existed.
    #[serde(default)]
    pub upload: Option<upload::Upload>,
    /// What the server said about itself before the run (model, context window, version);
    /// `null` in summaries written before it existed, and in a merge of shards that disagree.
    #[serde(default)]
    pub served: Option<served::Served>,
    /// The run's connections as the client's kernel saw them (`TCP_INFO` at each close:
    /// round trips, retransmits) and their connect times; `null` in summaries written before
    /// it existed and for a run that opened no connection.
    #[serde(default)]
    pub network: Option<network::Network>,
}

/// `summary.json`'s `cancellations`: requests the client aborted mid-answer, as a closed
/// browser tab does, and what they had received when cut. They are in `counts.cancelled`
/// (and `counts.cancelled_by_client`), never in `failed` nor in the latency figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cancellations {
    /// The share asked (`--cancel-rate`).
    pub rate: f64,
    /// When they were cut (`--cancel-after`: `500ms`, `tokens:N`).
    pub after: String,
    /// Measured requests aborted.
    pub cancelled_by_client: u64,
    /// Of the measured requests sent, percent.
    pub percent_of_sent: Option<f64>,
    /// Output tokens they had received, mean.
    pub output_tokens_mean: Option<f64>,
    /// Their prompt tokens, summed: work the server did for them, which
    /// `client_minus_server` adds to the client's side.
    pub input_tokens_total: u64,
    /// The output tokens they received, summed (added to the client's side likewise).
    pub output_tokens_total: u64,
    /// Of them, those that had received a first token.
    pub with_first_token: u64,
    /// Their TTFT, ms (of those with a first token).
    pub ttft_ms: Stats,
    /// From their send to the cut, ms.
    pub held_ms: Stats,
}

/// The program that wrote a summary (`tool` in `summary.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The crate's name, `ringbench`.
    pub name: String,
    /// The crate's version (`CARGO_PKG_VERSION`).
    pub version: String,
}

impl Tool {
    /// This build of ringbench.
    pub fn this() -> Self {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The machine the client ran on (`host` in `summary.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Online CPUs of the host (not only those the workers were pinned to).
    pub cpus: usize,
    /// Kernel release (`uname -r`), or "unknown".
    pub kernel: String,
}

impl Host {
    /// Reads this machine's online CPU count and kernel release.
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

/// Requests by how they ended: the one tally behind the run's `counts`, each stage's, each
/// server's (`endpoints`), each turn's (`sessions.per_turn`) and the live progress line.
/// `sent = ok + failed + cancelled`; `not_sent` apart. Filled by `Tally::add(outcome)`
/// (`record::Outcome`'s list says which bucket each outcome lands in).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Handed to the kernel, whatever the outcome. (`sessions.per_turn` named it `requests`
    /// before it shared this tally.)
    #[serde(alias = "requests")]
    pub sent: u64,
    /// Ended with a complete 2xx response.
    pub ok: u64,
    /// Ended in a failure of any kind.
    pub failed: u64,
    /// Sent, then abandoned: because the run was stopped, or by the client on purpose.
    pub cancelled: u64,
    /// Scheduled but never sent (the run stopped first).
    #[serde(default)]
    pub not_sent: u64,
}

/// Request counts. All but `warmup` are over measured requests only:
/// `scheduled = sent + not_sent` and `sent = ok + failed + cancelled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Measured arrivals of the schedule: the run's scheduled total minus `warmup`.
    pub scheduled: u64,
    /// Sent, ok, failed (see `failed_by_kind`), cancelled (`cancelled_by_client` is part of
    /// it) and not sent.
    #[serde(flatten)]
    pub tally: Tally,
    /// Aborted by the client on purpose (`--cancel-rate`): not failures (`cancellations`).
    #[serde(default)]
    pub cancelled_by_client: u64,
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

/// Rates over `duration_s` (`throughput` in `summary.json`); `null` when the duration is 0.
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
    /// Pooling endpoints: Σ inputs the successful answers held (embeddings, documents
    /// scored, pairs scored) / duration; `null` for a generating endpoint.
    #[serde(default)]
    pub inputs_per_s: Option<f64>,
    /// Σ ISL of successful requests by the client's count / duration.
    #[serde(default)]
    pub input_tokens_per_s: Option<f64>,
    /// Σ the server's `usage.prompt_tokens` / duration; `null` unless every successful
    /// request reported it (a partial sum would understate the rate).
    #[serde(default)]
    pub server_input_tokens_per_s: Option<f64>,
}

/// The load the plan asked for (`target` in `summary.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetLoad {
    /// Open loop only.
    pub request_rate: Option<f64>,
    /// Closed loop: virtual users; open loop: `--max-concurrency`, if any.
    pub concurrency: Option<u32>,
}

/// The load the client actually offered (`achieved` in `summary.json`).
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
    /// Samples in the distribution.
    pub count: u64,
    /// Arithmetic mean; `null` without samples.
    pub mean: Option<f64>,
    /// Population standard deviation (numpy's default, as vLLM reports it).
    pub std: Option<f64>,
    /// Smallest sample; `null` without samples.
    pub min: Option<f64>,
    /// Largest sample; `null` without samples.
    pub max: Option<f64>,
    /// 50th percentile (median); `null` without samples.
    pub p50: Option<f64>,
    /// 90th percentile; `null` without samples.
    pub p90: Option<f64>,
    /// 95th percentile; `null` without samples.
    pub p95: Option<f64>,
    /// 99th percentile; `null` without samples.
    pub p99: Option<f64>,
    /// 99.9th percentile; `null` without samples.
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

    /// Whether the percentile `key` (`p99_9`) is marked in `small_sample`.
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
/// samples, which gives docs/metrics.md's rule (p99 < 100, p99.9 < 1000) and extends it to every
/// configured percentile (p99.99 < 10 000, p90 < 10). p100 is the maximum, never marked.
pub fn is_small_sample(p: f64, count: u64) -> bool {
    if p >= 100.0 {
        return false;
    }
    let needed = (100.0 / (100.0 - p)).round();
    (count as f64) < needed
}

/// Token totals of the run (`tokens` in `summary.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Σ ISL of measured successful requests: the client's own count, known before the run
    /// (what `vllm bench serve` reports as its total input tokens, and what the token
    /// throughputs use). Exact or approximate as `input_source` says; never the server's.
    pub input_total: u64,
    /// How many successful requests had their ISL from each source.
    #[serde(default)]
    pub input_source: InputSourceCounts,
    /// Σ the server's `usage.prompt_tokens` over measured successful requests that reported
    /// it; `null` when none did.
    #[serde(default)]
    pub input_total_server: Option<u64>,
    /// Measured successful requests that reported `usage.prompt_tokens`.
    #[serde(default)]
    pub input_server_reports: u64,
    /// `input_total_server` / the client's ISL over the same reporting requests; `null` when
    /// none reported. Above 1 by the chat template and special tokens with an exact client
    /// count; far from 1, a different tokenizer (or the approximation).
    #[serde(default)]
    pub input_server_ratio: Option<f64>,
    /// Σ OSL of measured successful requests.
    pub output_total: u64,
    /// How many successful requests took their OSL from each source.
    pub output_source: OutputSource,
}

/// Measured successful requests by where their ISL came from (`tokens.input_source`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InputSourceCounts {
    /// Counted by the client tokenizer (`--tokenizer`): exact, chat template excluded.
    pub tokenizer: u64,
    /// The client's approximation: one token per synthetic word, one per 4 bytes of text.
    pub approximate: u64,
}

/// Measured successful requests by where their OSL came from (`tokens.output_source`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputSource {
    /// From the server's `usage.completion_tokens`.
    pub usage: u64,
    /// From the client tokenizer's count of the generated text (`--tokenizer`).
    pub tokenizer: u64,
    /// From the number of token-bearing events (a lower bound when the server batches tokens).
    pub events: u64,
}

/// Who made an invalid run invalid (`Overhead::invalid_cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidCause {
    /// Other threads or processes held a late worker's CPU (`host_wait_percent` at or above
    /// `InvalidCause::HOST_WAIT_PERCENT`): the machine, not the client.
    HostContention,
    /// A worker was busy nearly all of its wall time: the client could not keep up.
    ClientSaturation,
    /// The run broke a bound and neither figure explains it.
    Unattributed,
}

impl InvalidCause {
    /// A worker runnable but not running for at least this share of its wall time was held
    /// back by the host (its sends were late for want of the CPU, not for the client's work).
    pub const HOST_WAIT_PERCENT: f64 = 5.0;
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
    /// Σ worker CPU time / Σ `requests` of `workers` (warm-up included), ns.
    pub cpu_ns_per_request: Option<f64>,
    /// Σ worker CPU time / Σ `events` of `workers` (warm-up included), ns.
    pub cpu_ns_per_event: Option<f64>,
    /// As `cpu_ns_per_request` with the pacer's idle polling left out: the CPU the work took.
    #[serde(default)]
    pub busy_cpu_ns_per_request: Option<f64>,
    /// As `cpu_ns_per_event` with the pacer's idle polling left out, ns.
    #[serde(default)]
    pub busy_cpu_ns_per_event: Option<f64>,
    /// SSE events completed per socket read with data, over all workers.
    pub events_per_read_mean: Option<f64>,
    /// Bytes per socket read with data, over all workers.
    pub bytes_per_read_mean: Option<f64>,
    /// `io_uring` or `epoll`.
    pub io_driver: String,
    /// Records that found the collector channel full (kept and sent later), all workers.
    pub channel_full: u64,
    /// One entry per worker, in worker order.
    pub workers: Vec<WorkerOverhead>,
    /// The in-process simulator's own report, when the run used one.
    pub sim: Option<serde_json::Value>,
    /// The client's own overhead leaves the figures trustworthy: `invalid_reasons` is empty.
    pub valid: bool,
    /// Each bound the client broke (achieved rate, scheduling lag, a saturated worker, a full
    /// collector channel, kernel backlog drops on the client's CPUs), with its value; empty when
    /// valid.
    pub invalid_reasons: Vec<String>,
    /// Who made an invalid run invalid: the host (another program held a worker's CPU), the
    /// client (a worker saturated), or neither shown (`unattributed`); `null` when valid.
    #[serde(default)]
    pub invalid_cause: Option<InvalidCause>,
    /// The highest share of a worker's wall time it was runnable but not running (another
    /// thread or process held its CPU), percent; `null` when the kernel does not say.
    #[serde(default)]
    pub host_wait_percent_max: Option<f64>,
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
    pub kernel_net: Option<NetDelta>,
}

/// What one worker did, counted as it ran (the worker's own tally, and these keys of each
/// `overhead.workers` entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerCounts {
    /// Requests it handed to the kernel.
    pub requests: u64,
    /// Socket reads that returned data.
    pub reads: u64,
    /// SSE events those reads completed.
    pub events: u64,
    /// Bytes those reads returned.
    pub bytes: u64,
    /// Connections opened.
    pub connections_opened: u64,
    /// Of `connections_opened`, those opened to retry a request whose kept-alive connection was
    /// found closed.
    pub reconnects: u64,
    /// Records that found the collector channel full (kept by the worker, sent later).
    pub channel_full: u64,
    /// Event vectors allocated because none came back from the collector in time (the first
    /// requests and bursts past the preallocated ones).
    pub event_vecs_allocated: u64,
    /// Arrivals that found every lane busy at the in-flight cap and waited.
    pub cap_waits: u64,
    /// Arrivals that needed a new lane while the most connections were being opened.
    pub connect_waits: u64,
    /// Records whose generated text (kept with `--tokenizer` or `--turns`) passed the
    /// per-record bound (4 MiB): none of their text was kept.
    pub texts_cut: u64,
}

/// One worker's overhead (an entry of `overhead.workers`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerOverhead {
    /// The worker's index, from 0.
    pub worker: u16,
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Its CPU time / its wall time, percent; `null` when it had no wall time.
    pub cpu_percent: Option<f64>,
    /// p99 of how late its periodic probe timer fired, ms; `null` without probes.
    pub loop_lag_p99_ms: Option<f64>,
    /// Its counts, flattened into this object.
    #[serde(flatten)]
    pub counts: WorkerCounts,
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
    /// Share of its wall time the worker was runnable but not running: another thread or
    /// process held its CPU (the kernel's `schedstat`), percent; `null` when unknown.
    #[serde(default)]
    pub host_wait_percent: Option<f64>,
    /// Times the kernel switched the worker out while it still wanted its CPU.
    #[serde(default)]
    pub involuntary_switches: u64,
    /// The spin budget at the end of the run, µs (learned under `--pacer-spin-us auto`).
    #[serde(default)]
    pub pacer_spin_budget_us: Option<f64>,
    /// The worker as the M/G/1 queue the measurement-bias literature models a client by;
    /// `null` when it served no work item.
    #[serde(default)]
    pub queue: Option<QueueModel>,
}

/// Stalls against a reading-speed budget (`summary.json`'s `stalls`): of the chunk gaps of
/// measured successful streamed requests (the ITL samples), those above `--stall-ms`, and
/// the requests that had at least one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stalls {
    /// The bound, ms (`--stall-ms`).
    pub stall_ms: f64,
    /// Chunk gaps counted.
    pub gaps: u64,
    /// Of them, those above the bound.
    pub gaps_above: u64,
    /// `gaps_above` / `gaps`, percent; `null` without gaps.
    pub gaps_above_percent: Option<f64>,
    /// Measured successful requests.
    pub requests: u64,
    /// Of them, those with at least one stall.
    pub requests_with_stall: u64,
    /// `requests_with_stall` / `requests`, percent.
    pub requests_with_stall_percent: f64,
    /// Stalls per request: mean and most.
    pub per_request_mean: f64,
    /// The most stalls one request had.
    pub per_request_max: u64,
}

/// One worker as an M/G/1 queue: its customers are work items (socket reads that returned
/// data, and request sends), its server is its core. From what was measured: the arrival
/// rate of items λ, the service time's mean E\[S\] (busy CPU time per item: `busy_percent`'s
/// time, so the kernel's share is in it) and its coefficient of variation (from the runtime
/// passes: each pass's busy time, first item's stamp to the pass's end, shared evenly among
/// its items), the utilisation ρ = λ·E\[S\], and the mean queueing delay Pollaczek–Khinchine
/// predicts, Wq = ρ·E\[S\]·(1 + c²) / (2(1 − ρ)), beside the measured loop lag. As ρ → 1, Wq
/// grows without bound: the verdict warns past `RHO_WARN` before the lag shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueModel {
    /// Work items per second of the worker's wall time (λ).
    pub items_per_s: f64,
    /// Mean service time per item, µs (E\[S\]).
    pub service_mean_us: f64,
    /// Coefficient of variation of the service time (c); `null` without a pass sampled.
    pub service_cv: Option<f64>,
    /// Utilisation λ·E\[S\], 0..1 (`busy_percent` / 100).
    pub rho: f64,
    /// Pollaczek–Khinchine mean queueing delay, µs; `null` when ρ ≥ 1 (unbounded).
    pub predicted_wait_us: Option<f64>,
    /// Measured beside it: the mean of the loop-lag probe, µs; `null` without probes.
    pub loop_lag_mean_us: Option<f64>,
    /// Runtime passes that served items.
    pub passes: u64,
    /// Items per such pass; `null` without one.
    pub items_per_pass_mean: Option<f64>,
}

impl QueueModel {
    /// Utilisation above which the verdict warns: Wq is then 1.17 × E\[S\] × (1 + c²) and
    /// rises steeply (4.5 × E\[S\] × (1 + c²) at 0.9).
    pub const RHO_WARN: f64 = 0.7;
}

impl Summary {
    /// The exit status of this run: `verdict.exit_code`, or with `allow_invalid` the status it
    /// would have had if the client's overhead had not made it invalid.
    pub fn exit(&self, allow_invalid: bool) -> Exit {
        Exit::of_run(
            &self.verdict,
            self.interrupted,
            self.overhead.valid,
            allow_invalid,
        )
    }
}

/// What changed during a run, as the summary reports it (`overhead.kernel_net`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetDelta {
    /// Backlog drops on the CPUs the workers ran on.
    pub backlog_drops_client_cpus: Option<u64>,
    /// Backlog drops on every CPU of the host.
    pub backlog_drops_all_cpus: Option<u64>,
    /// TCP segments retransmitted (`RetransSegs` of `/proc/net/snmp`), host-wide; `null` when
    /// unreadable.
    pub tcp_retransmitted_segments: Option<u64>,
    /// TCP retransmit timeouts (`TCPTimeouts` of `/proc/net/netstat`), host-wide; `null` when
    /// unreadable.
    pub tcp_retransmit_timeouts: Option<u64>,
    /// TCP tail loss probes sent (`TCPLossProbes` of `/proc/net/netstat`), host-wide; `null` when
    /// unreadable.
    pub tcp_loss_probes: Option<u64>,
    /// Connection requests dropped at a listening socket (`ListenDrops` of `/proc/net/netstat`),
    /// host-wide; `null` when unreadable.
    pub tcp_listen_drops: Option<u64>,
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
