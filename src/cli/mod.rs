//! Stage 0 of the flow (**cli** → plan → schedule → …): raw flags, as the user typed them,
//! turned into a validated `Plan`. Every check a flag needs happens here, before anything is
//! sent; a bad flag yields a `UsageError` that names the flag and the fix (exit code 2).
//! Flag names follow `vllm bench serve` and AIPerf where the meaning is the same.

pub mod study_args;
pub mod workload_args;

use crate::plan::{
    Arrival, Endpoint, IoDriver, Load, Plan, SimSettings, Slo, SloMetric, Stop, Target,
    DEFAULT_PERCENTILES,
};
use crate::sim::fault::{check_faults, FaultConfig, FaultSpec};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ringbench",
    version,
    about = "Load generator for LLM inference servers that measures its own overhead"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One benchmark. With no --url it starts the built-in simulator and benchmarks it.
    Run(Box<RunArgs>),
    /// The null-server simulator, in the foreground until stopped.
    Sim(SimArgs),
    /// The client's own floor: rising rates against the in-process simulator.
    Calibrate(CalibrateArgs),
    /// Recompute a run's summary from its requests.jsonl (other percentiles, SLOs, tools).
    Report(ReportArgs),
    /// A run per load point, then the curve, the knee and the SLO crossing.
    ///
    /// Exit status: 0 when the sweep ran (points failing the SLOs above a passing one are
    /// its answer); 3 when --slo was given and no point met every SLO; 1 on an error; 2 on
    /// bad usage.
    Sweep(Box<crate::cli::study_args::SweepArgs>),
    /// The highest concurrency (or rate) that meets the SLOs, found adaptively.
    ///
    /// Exit status: 0 when a passing load was found (converged or not: the last line says
    /// which); 3 when even the lowest load probed fails the SLOs; 1 on an error; 2 on bad
    /// usage.
    Search(Box<crate::cli::study_args::SearchArgs>),
    /// Two runs or sweeps side by side.
    Compare(crate::cli::study_args::CompareArgs),
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Rates to try, rising (req/s, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub rates: Option<Vec<f64>>,
    /// Length of each point.
    #[arg(long, value_parser = parse_duration_ns, default_value = "10s")]
    pub duration: u64,
    #[arg(long, default_value_t = 16)]
    pub output_tokens: u32,
    #[arg(long, default_value_t = 128)]
    pub input_tokens: u32,
    /// Client CPUs (default: the first).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Simulator CPUs (default: another CPU than the client's where there is one).
    #[arg(long)]
    pub sim_cpus: Option<String>,
    #[arg(long, value_enum, default_value = "auto")]
    pub io_driver: IoDriver,
    /// Scheduling-lag p99 bound for a rate to count as held (ms).
    #[arg(long, default_value_t = 1.0)]
    pub max_lag: f64,
    /// Stop after this many rates in a row are not held.
    #[arg(long, default_value_t = 2)]
    pub stop_after: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write calibrate.json here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl CalibrateArgs {
    pub fn to_config(&self) -> Result<crate::study::calibrate::CalibrateConfig, UsageError> {
        let rates = self
            .rates
            .clone()
            .unwrap_or_else(|| crate::study::calibrate::CalibrateConfig::DEFAULT_RATES.to_vec());
        if rates.is_empty() || rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return usage("--rates: give rates above 0, like 1000,5000,10000");
        }
        if !(self.max_lag.is_finite() && self.max_lag > 0.0) {
            return usage("--max-lag: must be a number of ms above 0");
        }
        let online = online_cpus();
        let client = match &self.cpus {
            Some(s) => parse_cpus("--cpus", s)?,
            None => vec![online[0]],
        };
        let sim = match &self.sim_cpus {
            Some(s) => parse_cpus("--sim-cpus", s)?,
            None => vec![*online
                .iter()
                .find(|c| !client.contains(c))
                .unwrap_or(&online[0])],
        };
        Ok(crate::study::calibrate::CalibrateConfig {
            rates,
            duration_ns: self.duration,
            output_tokens: self.output_tokens.max(1),
            input_tokens: self.input_tokens,
            client_cpus: client,
            sim_cpus: sim,
            io_driver: self.io_driver,
            max_lag_ms: self.max_lag,
            failures_to_stop: self.stop_after.max(1),
            seed: self.seed,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    Poisson,
    Constant,
    Gamma,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("open_loop").args(["request_rate", "trace"]).multiple(true)))]
pub struct RunArgs {
    /// Base URL of the server (http://host:port); none: benchmark the built-in simulator.
    #[arg(long)]
    pub url: Option<String>,
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint: Endpoint,
    /// Model name sent in the body (default: first of GET /v1/models).
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// Closed loop: N virtual users.
    #[arg(long, conflicts_with = "request_rate")]
    pub concurrency: Option<u32>,
    /// Open loop: requests per second.
    #[arg(long)]
    pub request_rate: Option<f64>,
    #[arg(long, value_enum, default_value = "poisson", requires = "request_rate")]
    pub arrival: ArrivalArg,
    /// Gamma shape for --arrival gamma (1 = Poisson, < 1 burstier).
    #[arg(long)]
    pub burstiness: Option<f64>,
    /// Cap on in-flight requests in open loop (--request-rate or --trace).
    #[arg(long, requires = "open_loop")]
    pub max_concurrency: Option<u32>,
    /// Measured requests to send (warm-up comes on top).
    #[arg(long)]
    pub request_count: Option<u64>,
    /// How long to send, like 30s, 2m, 500ms.
    #[arg(long, value_parser = parse_duration_ns)]
    pub duration: Option<u64>,
    #[arg(long, default_value_t = 0)]
    pub warmup_requests: u64,
    #[arg(long, value_parser = parse_duration_ns)]
    pub warmup_duration: Option<u64>,
    #[arg(long, default_value_t = 128)]
    pub input_tokens: u32,
    /// max_tokens of every request [default: 16, or the dataset's own output lengths].
    #[arg(long)]
    pub output_tokens: Option<u32>,
    /// Per-request SLOs KEY:MS (ttft, tpot, itl, e2e, ntpot), as vLLM's --goodput.
    #[arg(long, num_args = 1.., value_name = "KEY:MS")]
    pub goodput: Vec<String>,
    /// Percentiles every output carries, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub percentiles: Option<Vec<f64>>,
    /// Non-streaming requests (only E2E-type metrics).
    #[arg(long)]
    pub no_stream: bool,
    /// Do not ask for stream_options.include_usage.
    #[arg(long)]
    pub no_usage: bool,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// CPUs the workers are pinned to, one worker each (e.g. 0 or 0,1 or 0-3).
    #[arg(long)]
    pub cpus: Option<String>,
    #[arg(long, value_enum, default_value = "auto")]
    pub io_driver: IoDriver,
    #[arg(long, value_parser = parse_duration_ns, default_value = "600s")]
    pub request_timeout: u64,
    #[arg(long, value_parser = parse_duration_ns, default_value = "10s")]
    pub connect_timeout: u64,
    /// Scheduling-lag p99 above this (ms) marks the run invalid.
    #[arg(long, default_value_t = 1.0)]
    pub max_lag: f64,
    /// Exit 0 even when the client's own overhead made the run invalid.
    #[arg(long)]
    pub allow_invalid: bool,
    /// Write summary.json, requests.jsonl and the exports here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Extra header K:V on every request (repeatable); secret-looking values are never written out.
    #[arg(long = "header", value_name = "K:V")]
    pub headers: Vec<String>,
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Built-in simulator (no --url): time to first token, ms.
    #[arg(long, default_value_t = 0.0)]
    pub sim_ttft_ms: f64,
    /// Built-in simulator: inter-token delay, ms.
    #[arg(long, default_value_t = 0.0)]
    pub sim_itl_ms: f64,
    #[arg(long, default_value_t = 1)]
    pub sim_tokens_per_chunk: u32,
    /// Built-in simulator's CPUs (default: the CPUs the workers do not use).
    #[arg(long)]
    pub sim_cpus: Option<String>,
    /// No live progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Built-in simulator: inject a fault KIND with probability PROB per request (repeatable).
    #[arg(long = "sim-fault", value_name = "KIND:PROB", value_parser = parse_fault)]
    pub sim_faults: Vec<FaultSpec>,
    /// Built-in simulator: how long stall_head/stall_mid faults send nothing, ms.
    #[arg(long, default_value_t = 5_000)]
    pub sim_fault_stall_ms: u64,
    /// On SIGINT/SIGTERM: stop sending, give in-flight requests this long, cancel the rest.
    /// A second signal ends at once.
    #[arg(long, value_parser = parse_duration_ns, default_value = "5s")]
    pub grace: u64,
    /// Run even if another ringbench is benchmarking the same endpoint on this host.
    #[arg(long)]
    pub allow_concurrent: bool,
    /// Exports --out writes: vllm, aiperf, csv, all or none (comma-separated; default all).
    #[arg(long, value_delimiter = ',')]
    pub export: Option<Vec<String>>,
    /// Built-in simulator's load model: extra TTFT ms per other request in flight (0 = off).
    #[arg(long, default_value_t = 0.0)]
    pub sim_ttft_per_inflight_ms: f64,
    /// Built-in simulator's load model: extra ITL ms per other request in flight (0 = off).
    #[arg(long, default_value_t = 0.0)]
    pub sim_itl_per_inflight_ms: f64,
    /// https: trust this CA certificate (PEM) instead of the system roots.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// https: do not verify the server's certificate (said in the report).
    #[arg(long)]
    pub insecure: bool,
    /// Hugging Face tokenizer.json (local file): exact-length prompts and exact input counts.
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<PathBuf>,
    /// Input length distribution: fixed:N, uniform:MEAN:RATIO, normal:MEAN:SD[:MAX],
    /// lognormal:MEDIAN:P99[:MAX] [default: fixed at --input-tokens].
    #[arg(long, value_name = "SPEC")]
    pub input_dist: Option<String>,
    /// Output length (max_tokens) distribution, same syntax as --input-dist.
    #[arg(long, value_name = "SPEC")]
    pub output_dist: Option<String>,
    /// Uniform lengths in [N·(1−R), N·(1+R)] around --input-tokens and --output-tokens (vLLM's).
    #[arg(long, value_name = "R", conflicts_with_all = ["input_dist", "output_dist"])]
    pub random_range_ratio: Option<f64>,
    /// Prompts from a file (see --dataset-format).
    #[arg(long, value_name = "PATH")]
    pub dataset: Option<PathBuf>,
    /// sharegpt (JSON), jsonl (prompt or messages, optional output_tokens) or logs
    /// (prompt_tokens, completion_tokens) [default: sharegpt for .json, else jsonl].
    #[arg(long, value_enum, requires = "dataset")]
    pub dataset_format: Option<crate::prepare::dataset::DatasetKind>,
    /// Order items are taken in: sequential, random (with replacement) or shuffle; seeded.
    #[arg(long, value_enum, default_value = "sequential", requires = "dataset")]
    pub dataset_sampling: crate::prepare::dataset::Sampling,
    /// Send ignore_eos: true (vLLM/SGLang), so answers run to max_tokens.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Send min_tokens N (clamped to each request's max_tokens).
    #[arg(long, value_name = "N")]
    pub min_tokens: Option<u32>,
    #[arg(long, value_name = "T")]
    pub temperature: Option<f64>,
    /// A JSON object merged into every request body last (its keys win).
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// Shared system prefixes: G groups (needs --prefix-tokens).
    #[arg(long, value_name = "G", requires = "prefix_tokens")]
    pub prefix_groups: Option<u32>,
    /// Tokens in each shared prefix (needs --prefix-groups).
    #[arg(long, value_name = "P", requires = "prefix_groups")]
    pub prefix_tokens: Option<u32>,
    /// Zipf exponent of group popularity (default: groups equally likely).
    #[arg(long, value_name = "S", requires = "prefix_groups")]
    pub prefix_zipf: Option<f64>,
    /// Replay a timestamped trace (Mooncake JSONL: timestamp ms, input_length,
    /// output_length, optional hash_ids): every line sent at its recorded time.
    #[arg(long, value_name = "FILE", conflicts_with_all = TRACE_CONFLICTS)]
    pub trace: Option<PathBuf>,
    /// Tokens per hash_ids entry in the trace (Mooncake: 512).
    #[arg(long, value_name = "N", default_value_t = crate::prepare::trace::DEFAULT_BLOCK_SIZE, requires = "trace")]
    pub trace_block_size: u32,
    /// Replay X times faster than recorded (gaps divided by X).
    #[arg(long, value_name = "X", default_value_t = 1.0, requires = "trace")]
    pub replay_speedup: f64,
    /// Report the kernel → user delay of every read from the kernel's software receive
    /// stamps (SO_TIMESTAMPING; plain http:// only). Costs a syscall per read.
    #[arg(long)]
    pub rx_timestamps: bool,
    /// Spin (through the event loop, which keeps serving reads) for this long before each
    /// send instead of sleeping to it: `auto` learns it from the timer's lateness; 0 never
    /// spins (less CPU, later sends).
    #[arg(long, value_name = "auto|US", default_value = "auto", value_parser = parse_spin_us)]
    pub pacer_spin_us: SpinUs,
}

/// `--pacer-spin-us`: `None` is auto; otherwise ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinUs(pub Option<u64>);

fn parse_spin_us(s: &str) -> Result<SpinUs, String> {
    if s == "auto" {
        return Ok(SpinUs(None));
    }
    let max_us = crate::worker::MAX_SPIN_NS / 1000;
    match s.parse::<u64>() {
        Ok(us) if us <= max_us => Ok(SpinUs(Some(us * 1000))),
        _ => Err(format!(
            "`{s}` is not `auto` or a whole number of microseconds from 0 to {max_us}"
        )),
    }
}

/// What a trace decides itself (times, count, lengths, prompts): flags that would too.
const TRACE_CONFLICTS: [&str; 17] = [
    "request_rate",
    "concurrency",
    "arrival",
    "burstiness",
    "request_count",
    "duration",
    "input_tokens",
    "output_tokens",
    "input_dist",
    "output_dist",
    "random_range_ratio",
    "dataset",
    "dataset_format",
    "dataset_sampling",
    "prefix_groups",
    "prefix_tokens",
    "prefix_zipf",
];

/// `max_tokens` when neither a flag nor a dataset sets it (OpenAI's own default).
pub const DEFAULT_OUTPUT_TOKENS: u32 = 16;

#[derive(Debug, Args)]
pub struct SimArgs {
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// 0 picks a free port.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    #[arg(long)]
    pub cpus: Option<String>,
    #[arg(long, default_value_t = 0.0)]
    pub ttft_ms: f64,
    #[arg(long, default_value_t = 0.0)]
    pub itl_ms: f64,
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u32,
    #[arg(long, default_value = "ringbench-sim")]
    pub model: String,
    #[arg(long, value_enum, default_value = "auto")]
    pub io_driver: IoDriver,
    /// Inject a fault KIND with probability PROB per request (per connection for refuse);
    /// repeatable. Kinds: refuse, reset_before_head, reset_mid_stream, http_500, http_503,
    /// http_429, error_event, stall_head, stall_mid, bad_json, truncated_chunk, bad_utf8,
    /// oversized_event, slow_head, close_after_response.
    #[arg(long = "fault", value_name = "KIND:PROB", value_parser = parse_fault)]
    pub faults: Vec<FaultSpec>,
    /// Seed of the fault draws (same seed, same faults on a one-thread simulator).
    #[arg(long, default_value_t = 0)]
    pub fault_seed: u64,
    /// How long stall_head/stall_mid send nothing, ms.
    #[arg(long, default_value_t = 5_000)]
    pub fault_stall_ms: u64,
    /// How long slow_head takes to trickle the head out, ms.
    #[arg(long, default_value_t = 200)]
    pub fault_slow_head_ms: u64,
    /// Load model: extra TTFT ms per other request in flight (0 = off).
    #[arg(long, default_value_t = 0.0)]
    pub ttft_per_inflight_ms: f64,
    /// Load model: extra ITL ms per other request in flight (0 = off).
    #[arg(long, default_value_t = 0.0)]
    pub itl_per_inflight_ms: f64,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Every D (like 100ms; at least 1ms), print the counters so far as one JSON line on
    /// stdout, after the `listening on` line: {"mono_ns": N, "stats": {...}}. For outside
    /// tools that want the server's own count of what it received (tools/compare-peers).
    #[arg(long, value_name = "D", value_parser = parse_stats_interval_ns)]
    pub stats_interval: Option<u64>,
}

/// `--stats-interval`: a duration of at least 1 ms (a shorter one would only burn the CPU the
/// simulator shares with its listener thread).
fn parse_stats_interval_ns(s: &str) -> Result<u64, String> {
    match parse_duration_ns(s)? {
        ns if ns >= 1_000_000 => Ok(ns),
        _ => Err(format!("'{s}' is under 1ms; use 1ms or more")),
    }
}

impl SimArgs {
    /// The fault settings, checked as a whole (each kind once, probabilities summing to ≤ 1).
    pub fn fault_config(&self) -> Result<FaultConfig, UsageError> {
        check_faults(&self.faults).map_err(UsageError)?;
        Ok(FaultConfig {
            faults: self.faults.clone(),
            seed: self.fault_seed,
            stall_ms: self.fault_stall_ms,
            slow_head_ms: self.fault_slow_head_ms,
        })
    }
}

fn parse_fault(s: &str) -> Result<FaultSpec, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A `ringbench run --out` folder (requests.jsonl and run.json).
    pub dir: PathBuf,
    /// Percentiles every output carries, comma-separated (default: the run's).
    #[arg(long, value_delimiter = ',')]
    pub percentiles: Option<Vec<f64>>,
    /// Per-request SLOs KEY:MS (ttft, tpot, itl, e2e, ntpot); default: the run's.
    #[arg(long, num_args = 1.., value_name = "KEY:MS")]
    pub goodput: Option<Vec<String>>,
    /// Also compute TTFT/ITL/TPOT/duration/throughput as these tools define them.
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1..)]
    pub definitions: Vec<crate::collector::definitions::Definitions>,
    /// Write summary.json and the exports here (the same files a run writes).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Which exports --out writes (comma-separated; default all).
    #[arg(long, value_delimiter = ',')]
    pub export: Option<Vec<String>>,
}

impl ReportArgs {
    pub fn overrides(&self) -> Result<crate::collector::replay::Overrides, UsageError> {
        let percentiles = self
            .percentiles
            .as_deref()
            .map(check_percentiles)
            .transpose()?;
        let goodput = self
            .goodput
            .as_ref()
            .map(|g| {
                g.iter()
                    .map(|s| parse_slo(s))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        Ok(crate::collector::replay::Overrides {
            percentiles,
            goodput,
        })
    }
}

/// A flag that cannot be used as given: the message names it and says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// `30s`, `2m`, `500ms`, `1h`, `1.5s`; a bare number is seconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (like 30s, 2m, 500ms)"))?;
    let scale = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use ms, s, m or h)")),
    };
    if !value.is_finite() {
        return Err(format!("'{s}' is not a finite duration"));
    }
    Ok((value * scale).round() as u64)
}

/// `0`, `0,1`, `0-3`, `0-1,4`.
pub fn parse_cpus(flag: &str, s: &str) -> Result<Vec<usize>, UsageError> {
    let bad = || {
        UsageError(format!(
            "{flag} '{s}': expected CPU numbers like 0 or 0,1 or 0-3"
        ))
    };
    let mut cpus = vec![];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    let online = online_cpus();
    if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
        return usage(format!(
            "{flag}: CPU {c} is not available here (available: {online:?})"
        ));
    }
    Ok(cpus)
}

/// The CPUs this process may run on.
pub fn online_cpus() -> Vec<usize> {
    match core_affinity::get_core_ids() {
        Some(ids) if !ids.is_empty() => ids.into_iter().map(|c| c.id).collect(),
        _ => vec![0],
    }
}

fn parse_slo(s: &str) -> Result<Slo, UsageError> {
    let bad = |why: &str| UsageError(format!("--goodput '{s}': {why} (like ttft:500 tpot:50)"));
    let (k, v) = s.split_once(':').ok_or_else(|| bad("expected KEY:MS"))?;
    let metric = match k.trim().to_ascii_lowercase().as_str() {
        "ttft" => SloMetric::Ttft,
        "tpot" => SloMetric::Tpot,
        "itl" => SloMetric::Itl,
        "e2e" | "e2el" => SloMetric::E2e,
        "ntpot" => SloMetric::Ntpot,
        _ => return Err(bad("unknown key; use ttft, tpot, itl, e2e or ntpot")),
    };
    let max_ms: f64 = v
        .trim()
        .trim_end_matches("ms")
        .parse()
        .map_err(|_| bad("not a number of ms"))?;
    if !(max_ms.is_finite() && max_ms > 0.0) {
        return Err(bad("the bound must be above 0"));
    }
    Ok(Slo { metric, max_ms })
}

pub fn parse_target(url: &str) -> Result<Target, UsageError> {
    let (https, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return usage(format!("--url '{url}': needs a scheme, like http://{url}"));
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return usage("--url: put credentials in --api-key or --header, not in the URL");
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            let port = p
                .parse()
                .map_err(|_| UsageError(format!("--url '{url}': bad port '{p}'")))?;
            (h.trim_matches(|c| c == '[' || c == ']').to_string(), port)
        }
        _ => (authority.to_string(), if https { 443 } else { 80 }),
    };
    if host.is_empty() {
        return usage(format!("--url '{url}': no host"));
    }
    let base_path = path
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_string();
    Ok(Target {
        url: url.to_string(),
        https,
        host,
        port,
        base_path,
    })
}

fn parse_header(s: &str) -> Result<(String, String), UsageError> {
    match s.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() && !k.contains(char::is_whitespace) => {
            Ok((k.trim().to_string(), v.trim().to_string()))
        }
        _ => usage("--header: expected NAME:VALUE, like --header X-Team:infra"),
    }
}

fn load_of(a: &RunArgs) -> Result<Load, UsageError> {
    if a.trace.is_some() {
        return crate::cli::workload_args::trace_load_of(a);
    }
    if let Some(rate) = a.request_rate {
        if !(rate.is_finite() && rate > 0.0) {
            return usage(format!("--request-rate {rate}: must be a number above 0"));
        }
        let arrival = match (a.arrival, a.burstiness) {
            (ArrivalArg::Gamma, Some(k)) if k.is_finite() && k > 0.0 => {
                Arrival::Gamma { burstiness: k }
            }
            (ArrivalArg::Gamma, Some(k)) => {
                return usage(format!("--burstiness {k}: must be above 0 (1 is Poisson)"))
            }
            (ArrivalArg::Gamma, None) => {
                return usage("--arrival gamma needs --burstiness K (1 is Poisson)")
            }
            (_, Some(_)) => return usage("--burstiness only applies to --arrival gamma"),
            (ArrivalArg::Poisson, None) => Arrival::Poisson,
            (ArrivalArg::Constant, None) => Arrival::Constant,
        };
        if a.max_concurrency == Some(0) {
            return usage("--max-concurrency 0: must be at least 1");
        }
        return Ok(Load::Open {
            request_rate: rate,
            arrival,
            max_concurrency: a.max_concurrency,
        });
    }
    match a.concurrency {
        Some(0) => usage("--concurrency 0: must be at least 1"),
        Some(c) => Ok(Load::Closed { concurrency: c }),
        None => Ok(Load::Closed { concurrency: 1 }),
    }
}

fn percentiles_of(a: &RunArgs) -> Result<Vec<f64>, UsageError> {
    let Some(ps) = &a.percentiles else {
        return Ok(DEFAULT_PERCENTILES.to_vec());
    };
    check_percentiles(ps)
}

/// `--export` (run and report): the formats to write; all when not given.
pub fn exports_of(
    list: Option<&[String]>,
) -> Result<Vec<crate::output::export::ExportKind>, UsageError> {
    match list {
        None => Ok(crate::output::export::ALL.to_vec()),
        Some(items) => crate::output::export::parse_list(items).map_err(UsageError),
    }
}

fn check_percentiles(ps: &[f64]) -> Result<Vec<f64>, UsageError> {
    if let Some(p) = ps
        .iter()
        .find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0))
    {
        return usage(format!(
            "--percentiles: {p} is not a percentile (use values in (0, 100], like 50,99,99.9)"
        ));
    }
    Ok(ps.to_vec())
}

/// Splits CPUs between client workers and the in-process simulator: different cores where
/// the machine has them, so the simulator's work never lands on the client's core.
fn cpus_of(a: &RunArgs) -> Result<(Vec<usize>, Vec<usize>), UsageError> {
    let online = online_cpus();
    let client = match &a.cpus {
        Some(s) => parse_cpus("--cpus", s)?,
        None => vec![online[0]],
    };
    let sim = match &a.sim_cpus {
        Some(s) => parse_cpus("--sim-cpus", s)?,
        None => {
            let rest: Vec<usize> = online
                .iter()
                .copied()
                .filter(|c| !client.contains(c))
                .collect();
            if rest.is_empty() {
                vec![online[online.len() - 1]]
            } else {
                vec![rest[0]]
            }
        }
    };
    Ok((client, sim))
}

impl RunArgs {
    pub fn to_plan(&self) -> Result<Plan, UsageError> {
        let target = self.url.as_deref().map(parse_target).transpose()?;
        let load = load_of(self)?;
        if self.request_count == Some(0) {
            return usage("--request-count 0: must be at least 1");
        }
        if self.duration == Some(0) {
            return usage("--duration 0: must be above 0, like 30s");
        }
        let stop = match (self.request_count, self.duration) {
            (None, None) => Stop {
                request_count: Some(100),
                duration_ns: None,
            },
            (c, d) => Stop {
                request_count: c,
                duration_ns: d,
            },
        };
        // A trace sends each of its lines once (warm-up ones included).
        let stop = match &load {
            Load::Trace(t) => crate::cli::workload_args::trace_stop(t, self.warmup_requests)?,
            _ => stop,
        };
        let output_tokens = self.output_tokens.unwrap_or(DEFAULT_OUTPUT_TOKENS);
        if output_tokens == 0 {
            return usage("--output-tokens 0: must be at least 1");
        }
        if !(self.max_lag.is_finite() && self.max_lag > 0.0) {
            return usage("--max-lag: must be a number of ms above 0");
        }
        if target.is_none()
            && (self.sim_ttft_ms < 0.0 || self.sim_itl_ms < 0.0 || self.sim_tokens_per_chunk == 0)
        {
            return usage("--sim-ttft-ms/--sim-itl-ms must be ≥ 0 and --sim-tokens-per-chunk ≥ 1");
        }
        if target.is_none()
            && !(self.sim_ttft_per_inflight_ms >= 0.0 && self.sim_itl_per_inflight_ms >= 0.0)
        {
            return usage("--sim-ttft-per-inflight-ms/--sim-itl-per-inflight-ms must be ≥ 0");
        }
        let (cpus, sim_cpus) = cpus_of(self)?;
        let sim = target.is_none().then_some(SimSettings {
            ttft_ms: self.sim_ttft_ms,
            itl_ms: self.sim_itl_ms,
            tokens_per_chunk: self.sim_tokens_per_chunk,
            cpus: sim_cpus,
            faults: FaultConfig {
                faults: self.sim_faults.clone(),
                seed: self.seed,
                stall_ms: self.sim_fault_stall_ms,
                ..FaultConfig::default()
            },
            ttft_per_inflight_ms: self.sim_ttft_per_inflight_ms,
            itl_per_inflight_ms: self.sim_itl_per_inflight_ms,
        });
        check_faults(&self.sim_faults)
            .map_err(|e| UsageError(e.replace("--fault", "--sim-fault")))?;
        if target.is_some() && !self.sim_faults.is_empty() {
            return usage("--sim-fault applies to the built-in simulator only (drop --url)");
        }
        if target.is_some()
            && (self.sim_ttft_ms != 0.0
                || self.sim_itl_ms != 0.0
                || self.sim_tokens_per_chunk != 1
                || self.sim_cpus.is_some())
        {
            return usage(
                "--sim-ttft-ms/--sim-itl-ms/--sim-tokens-per-chunk/--sim-cpus configure the \
                 built-in simulator, which does not run with --url (drop one or the other)",
            );
        }
        if let Some(out) = &self.out {
            if out.exists() && !out.is_dir() {
                return usage(format!(
                    "--out {}: is a file; give a folder (it is created if missing)",
                    out.display()
                ));
            }
        }
        let https = target.as_ref().is_some_and(|t| t.https);
        if (self.cacert.is_some() || self.insecure) && !https {
            return usage("--cacert/--insecure apply to https:// URLs only");
        }
        if let Some(ca) = &self.cacert {
            if !ca.is_file() {
                return usage(format!(
                    "--cacert {}: no such file (give the CA certificate as a PEM file)",
                    ca.display()
                ));
            }
        }
        if self.input_tokens == 0 {
            return usage("--input-tokens 0: must be at least 1");
        }
        let goodput = self
            .goodput
            .iter()
            .map(|s| parse_slo(s))
            .collect::<Result<_, _>>()?;
        let headers = self
            .headers
            .iter()
            .map(|s| parse_header(s))
            .collect::<Result<_, _>>()?;
        if self.request_timeout == 0 || self.connect_timeout == 0 {
            return usage("--request-timeout/--connect-timeout must be above 0");
        }
        Ok(Plan {
            target,
            sim,
            endpoint: self.endpoint,
            model: self.model.clone(),
            load,
            stop,
            warmup_requests: self.warmup_requests,
            warmup_duration_ns: self.warmup_duration.unwrap_or(0),
            input_tokens: self.input_tokens,
            output_tokens,
            stream: !self.no_stream,
            include_usage: !self.no_usage,
            seed: self.seed,
            cpus,
            io_driver: self.io_driver,
            request_timeout_ns: self.request_timeout,
            connect_timeout_ns: self.connect_timeout,
            headers,
            api_key: self.api_key.clone().filter(|k| !k.is_empty()),
            percentiles: percentiles_of(self)?,
            goodput,
            max_lag_ms: self.max_lag,
            out_dir: self.out.clone(),
            progress: !self.quiet,
            grace_ns: self.grace,
            allow_concurrent: self.allow_concurrent,
            exports: exports_of(self.export.as_deref())?,
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            workload: crate::cli::workload_args::workload_of(self)?,
            rx_timestamps: self.rx_timestamps,
            pacer_spin_ns: self.pacer_spin_us.0,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `ringbench run ARGS…` to a plan, or the usage error's text (other modules' flag
    /// tests use it too).
    pub(crate) fn plan(args: &[&str]) -> Result<Plan, String> {
        let mut argv = vec!["ringbench", "run"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        run.to_plan().map_err(|e| e.0)
    }

    #[test]
    fn pacer_spin_is_auto_by_default_and_bounded() {
        assert_eq!(plan(&[]).unwrap().pacer_spin_ns, None);
        assert_eq!(
            plan(&["--pacer-spin-us", "40"]).unwrap().pacer_spin_ns,
            Some(40_000)
        );
        assert_eq!(
            plan(&["--pacer-spin-us", "0"]).unwrap().pacer_spin_ns,
            Some(0)
        );
        for bad in ["201", "-1", "1.5", "fast"] {
            let e = plan(&[&format!("--pacer-spin-us={bad}")]).unwrap_err();
            assert!(e.contains("--pacer-spin-us"), "{bad}: {e}");
        }
    }

    #[test]
    fn open_loop_flags_resolve() {
        let p = plan(&[
            "--url",
            "http://127.0.0.1:8000",
            "--request-rate",
            "1000",
            "--duration",
            "5s",
            "--output-tokens",
            "16",
        ])
        .unwrap();
        assert_eq!(
            p.load,
            Load::Open {
                request_rate: 1000.0,
                arrival: Arrival::Poisson,
                max_concurrency: None
            }
        );
        assert_eq!(
            p.stop,
            Stop {
                request_count: None,
                duration_ns: Some(5_000_000_000)
            }
        );
        let t = p.target.unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.https),
            ("127.0.0.1", 8000, false)
        );
        assert!(p.sim.is_none());
    }

    #[test]
    fn gamma_needs_burstiness_and_defaults_are_closed_loop() {
        let p = plan(&[
            "--request-rate",
            "10",
            "--arrival",
            "gamma",
            "--burstiness",
            "0.5",
        ])
        .unwrap();
        assert!(
            matches!(p.load, Load::Open { arrival: Arrival::Gamma { burstiness } , .. } if burstiness == 0.5)
        );
        assert!(plan(&["--request-rate", "10", "--arrival", "gamma"])
            .unwrap_err()
            .contains("--burstiness"));
        let p = plan(&[]).unwrap();
        assert_eq!(p.load, Load::Closed { concurrency: 1 });
        assert_eq!(p.stop.request_count, Some(100));
        assert!(p.sim.is_some());
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_fix() {
        let cases: &[(&[&str], &str)] = &[
            (&["--url", "127.0.0.1:8000"], "needs a scheme"),
            (&["--request-rate", "0"], "--request-rate"),
            (&["--request-rate", "NaN"], "--request-rate"),
            (&["--percentiles", "50,101"], "--percentiles"),
            (&["--goodput", "ttft=5"], "--goodput"),
            (&["--goodput", "foo:5"], "unknown key"),
            (&["--duration", "5 parsecs"], "unknown unit"),
            (&["--cpus", "9999"], "--cpus"),
            (&["--concurrency", "0"], "--concurrency"),
            (&["--header", "novalue"], "--header"),
            (&["--export", "vllm,excel"], "--export"),
            (
                &["--url", "http://h:1", "--sim-itl-ms", "5"],
                "built-in simulator",
            ),
            (
                &["--url", "http://h:1", "--sim-fault", "http_500:0.1"],
                "--sim-fault",
            ),
            (
                &["--sim-fault", "http_500:0.7", "--sim-fault", "bad_json:0.7"],
                "--sim-fault",
            ),
            (&["--out", "/dev/null"], "--out"),
            (&["--input-tokens", "0"], "--input-tokens"),
            (&["--url", "http://h:1", "--insecure"], "https://"),
            (
                &["--url", "https://h", "--cacert", "/no/such.pem"],
                "/no/such.pem",
            ),
            (&["--url", "http://"], "no host"),
            (&["--url", "http://h:99999"], "bad port"),
            (&["--url", "ftp://h"], "needs a scheme"),
        ];
        for (args, want) in cases {
            let err = plan(args).unwrap_err();
            assert!(err.contains(want), "{args:?}: {err}");
        }
        assert!(plan(&["--concurrency", "4", "--request-rate", "5"]).is_err());
        // Malformed values and unknown flags are clap's errors (exit code 2 as well).
        for bad in [
            &["--sim-fault", "nope:0.1"][..],
            &["--sim-fault", "http_500"],
            &["--grace", "soon"],
            &["--request-rate", "fast"],
            &["--no-such-flag"],
        ] {
            assert!(plan(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations_and_cpu_lists_parse() {
        assert_eq!(parse_duration_ns("30s"), Ok(30_000_000_000));
        assert_eq!(parse_duration_ns("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("1.5"), Ok(1_500_000_000));
        assert_eq!(parse_cpus("--cpus", "0").unwrap(), vec![0]);
    }

    #[test]
    fn slos_parse_like_vllm() {
        let p = plan(&["--goodput", "ttft:500", "tpot:50"]).unwrap();
        assert_eq!(
            p.goodput,
            vec![
                Slo {
                    metric: SloMetric::Ttft,
                    max_ms: 500.0
                },
                Slo {
                    metric: SloMetric::Tpot,
                    max_ms: 50.0
                },
            ]
        );
    }
}
