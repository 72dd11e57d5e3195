//! Part of the CLI (the binary's first layer: raw flags → `Plan`): `ringbench run`'s flags and
//! their mapping to a `Plan`. The mapping only translates (defaults, units, which flags make
//! which load); every rule between settings is `Plan::validate`'s, called at the end, so the
//! CLI and a library user hit the same rules with the same messages.

use super::defaults;
use super::parse::{
    check_percentiles, duration_ns_in, exports_of, parse_duration_ns, parse_endpoint, parse_header,
    parse_ms, parse_slo, parse_stages, parse_target, Bare,
};
use super::sim_args::RunSimFlags;
use super::{usage, UsageError};
use clap::{Args, ValueEnum};
use ringbench::plan::workload::{
    DatasetKind, DatasetSpec, HfSpec, LengthDist, PrefixSpec, RequestOptions, WorkloadSpec,
};
use ringbench::plan::{
    Arrival, Endpoint, IoDriver, Load, Plan, RecordsFormat, ServerMetricsSpec, Stop,
};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    Poisson,
    Constant,
    Gamma,
}

use super::heading as h;

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Flags from a TOML or YAML file (keys: flag names), or a run's summary.json
    ///
    /// A file `run.toml` holding `request-rate = 50` and `goodput = ["ttft:500", "tpot:50"]`
    /// is `--request-rate 50 --goodput ttft:500 tpot:50`; a flag on the line replaces the
    /// file's value of the same flag. `--config DIR/summary.json` reruns that run: the same
    /// flags, seed and prompt nonce, so the same schedule and the same prompts (secrets were
    /// never written: give --api-key or --header again).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Benchmark the zero-delay built-in simulator: 100 requests, one user
    ///
    /// The self-check: what the client alone costs. Without --url and without any flag of
    /// load, stop or simulator, `run` instead runs the demo: the simulator at a small model's
    /// pace (TTFT 20 ms, ITL 5 ms, 128 tokens) at 50 req/s for 8 s.
    #[arg(long, conflicts_with_all = ["url", "url_file", "base_url", "host", "port"])]
    pub self_check: bool,

    /// The server, like http://host:8000; repeatable [default: the simulator]
    ///
    /// Without --url, the built-in simulator. Several servers (replicas behind one benchmark, at most 64): each request goes to one
    /// of them by --url-policy, a conversation's turns all to one; summary.json's
    /// `endpoints` breaks every figure down per server.
    #[arg(long, value_name = "URL", help_heading = h::TARGET)]
    pub url: Vec<String>,
    /// Servers from a file, one URL per line
    ///
    /// Blank lines and # comments are skipped; the file's servers come after any --url.
    #[arg(long, value_name = "FILE", help_heading = h::TARGET)]
    pub url_file: Option<PathBuf>,
    /// Several servers: round-robin, random or least-in-flight
    ///
    /// round-robin: request i of the schedule to server i mod N, exact shares. random: a
    /// seeded uniform draw per request. least-in-flight: the server with the fewest of the
    /// worker's own requests in flight (per worker: workers share nothing). With --turns the
    /// choice is per conversation.
    #[arg(long, value_name = "POLICY", hide_possible_values = true, help_heading = h::TARGET)]
    pub url_policy: Option<ringbench::plan::UrlPolicy>,
    /// chat, responses, messages, embeddings, rerank, ... [default: chat]
    ///
    /// chat, completions, responses, messages, embeddings, rerank, score, tei-rerank, or a
    /// path like /v1/responses. With vLLM's spellings on the line, vLLM's default: /v1/completions. rerank is
    /// /v1/rerank in the Jina/Cohere shape (vLLM, llama.cpp); tei-rerank is /rerank in
    /// Hugging Face TEI's.
    #[arg(long, value_name = "KIND|PATH", value_parser = parse_endpoint, help_heading = h::TARGET)]
    pub endpoint: Option<Endpoint>,
    /// Model name sent in the body [default: the first of GET /v1/models]
    #[arg(short = 'm', long, alias = "model-names", value_name = "NAME", help_heading = h::TARGET)]
    pub model: Option<String>,
    /// Non-streaming requests (only E2E-type metrics).
    #[arg(long, help_heading = h::TARGET)]
    pub no_stream: bool,
    /// Do not ask for stream_options.include_usage.
    #[arg(long, hide_short_help = true, help_heading = h::TARGET)]
    pub no_usage: bool,
    /// Longest a request may take, connect included
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = defaults::shown().request_timeout.as_str(), help_heading = h::TARGET)]
    pub request_timeout: u64,
    /// Longest the TCP connect, then the TLS handshake, may each take
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = defaults::shown().connect_timeout.as_str(), hide_short_help = true, help_heading = h::TARGET)]
    pub connect_timeout: u64,
    /// Wait up to D for the server to be ready (GET /health: 200)
    ///
    /// GET /health, or /v1/models where /health is not served, polled twice a second with
    /// a line every 5 s, before the run starts (vLLM takes minutes to load a model); past D
    /// the run ends with exit 1.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, help_heading = h::TARGET)]
    pub wait_ready: Option<u64>,
    /// Send no x-request-id: RUN-ID-N header
    ///
    /// N is the request's arrival index; requests.jsonl keeps it and any id the server
    /// echoes.
    #[arg(long, help_heading = h::TARGET)]
    pub no_request_id: bool,
    /// The run's id in every x-request-id [default: 8 random hex digits]
    ///
    /// 1 to 23 of A-Z a-z 0-9 . _ -; summary.json keeps it in config.run_id.
    #[arg(long, value_name = "ID", conflicts_with = "no_request_id", hide_short_help = true, help_heading = h::TARGET)]
    pub run_id: Option<String>,

    /// Closed loop: N users, each sending again once answered [default: 1]
    #[arg(long, value_name = "N", help_heading = h::LOAD)]
    pub concurrency: Option<u32>,
    /// Open loop: requests per second, or inf (all at once)
    ///
    /// inf is vLLM's meaning: a closed loop of --max-concurrency users, or of one user per
    /// request.
    #[arg(long, value_name = "R", help_heading = h::LOAD)]
    pub request_rate: Option<f64>,
    /// Open loop: the rate rises from 0 to --request-rate over D
    ///
    /// A linear ramp (a non-homogeneous Poisson schedule, exact and seeded), then the rate
    /// holds; --duration counts the whole run, ramp included. With --request-count alone,
    /// the count is reached on the schedule's own time line, the ramp first.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, help_heading = h::LOAD)]
    pub ramp_up: Option<u64>,
    /// Open loop in steady stages, like 200:30s,400:30s (rate:duration)
    ///
    /// One run, one seeded schedule: each stage exactly RATE × D arrivals inside its own
    /// window, one after the other. Sets the rate and the length (no --request-rate,
    /// --duration or --request-count); summary.json gets a `stages` breakdown.
    #[arg(long, value_name = "LIST", value_parser = parse_stages, help_heading = h::LOAD)]
    pub stages: Option<super::parse::StageList>,
    /// Closed loop: users start spread over D (user k of N at k·D/N)
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, help_heading = h::LOAD)]
    pub users_ramp: Option<u64>,
    /// poisson, constant or gamma [default: poisson; gamma with --burstiness]
    #[arg(long, value_enum, value_name = "KIND", hide_possible_values = true, help_heading = h::LOAD)]
    pub arrival: Option<ArrivalArg>,
    /// Gamma shape of the arrivals: 1 is Poisson, below 1 burstier (vLLM's)
    #[arg(long, value_name = "K", help_heading = h::LOAD)]
    pub burstiness: Option<f64>,
    /// Cap on requests in flight in an open loop [default: none]
    #[arg(long, value_name = "N", help_heading = h::LOAD)]
    pub max_concurrency: Option<u32>,
    /// Seeds prompts, lengths and arrivals: same seed, same run
    #[arg(long, value_name = "N", default_value_t = defaults::plan().seed, alias = "random-seed", help_heading = h::LOAD)]
    pub seed: u64,
    /// Replay a Mooncake JSONL trace, each line at its recorded time
    ///
    /// Each line: timestamp (ms), input_length, output_length, optional hash_ids. The trace
    /// sets the load, the count and the lengths.
    #[arg(long, value_name = "FILE", conflicts_with_all = TRACE_CONFLICTS, help_heading = h::LOAD)]
    pub trace: Option<PathBuf>,
    /// Tokens per hash_ids entry in the trace (Mooncake's)
    #[arg(long, value_name = "N", default_value_t = ringbench::plan::workload::DEFAULT_BLOCK_SIZE, requires = "trace", hide_short_help = true, help_heading = h::LOAD)]
    pub trace_block_size: u32,
    /// Replay X times faster than recorded (gaps divided by X)
    #[arg(long, value_name = "X", default_value_t = 1.0, requires = "trace", hide_short_help = true, help_heading = h::LOAD)]
    pub replay_speedup: f64,
    #[command(flatten)]
    pub sessions: super::session_args::SessionFlags,
    #[command(flatten)]
    pub api: super::api_args::ApiFlags,

    /// Prompt length, tokens [default: 128]
    #[arg(long, value_name = "N", help_heading = h::WORKLOAD)]
    pub input_tokens: Option<u32>,
    /// max_tokens of every request [default: 16, or the dataset's]
    #[arg(long, value_name = "N", help_heading = h::WORKLOAD)]
    pub output_tokens: Option<u32>,
    /// Prompt lengths, like lognormal:300:4000 [default: fixed]
    ///
    /// fixed:N, uniform:MEAN:RATIO, normal:MEAN:SD[:MAX], lognormal:MEDIAN:P99[:MAX].
    #[arg(long, value_name = "SPEC", help_heading = h::WORKLOAD)]
    pub input_dist: Option<String>,
    /// max_tokens distribution, as --input-dist [default: fixed]
    #[arg(long, value_name = "SPEC", help_heading = h::WORKLOAD)]
    pub output_dist: Option<String>,
    /// Uniform lengths in [N·(1−R), N·(1+R)] around both lengths (vLLM's)
    #[arg(long, value_name = "R", conflicts_with_all = ["input_dist", "output_dist"], help_heading = h::WORKLOAD)]
    pub random_range_ratio: Option<f64>,
    /// A local tokenizer.json: exact prompt lengths and token counts
    #[arg(long, value_name = "PATH", help_heading = h::WORKLOAD)]
    pub tokenizer: Option<PathBuf>,
    /// Prompts from a file (see --dataset-format)
    #[arg(long, value_name = "PATH", help_heading = h::WORKLOAD)]
    pub dataset: Option<PathBuf>,
    /// sharegpt, jsonl, logs or hf [default: by the file's extension]
    ///
    /// sharegpt (JSON), jsonl (prompt or messages, optional output_tokens, image/images),
    /// logs (prompt_tokens, completion_tokens) or hf (a Hugging Face dataset ORG/NAME in the
    /// local cache, or Parquet files; see --hf-split) [default: sharegpt for .json, hf for
    /// .parquet, else jsonl].
    #[arg(long, value_enum, value_name = "FORMAT", hide_possible_values = true, requires = "dataset", help_heading = h::WORKLOAD)]
    pub dataset_format: Option<ringbench::plan::workload::DatasetKind>,
    /// Order of the dataset's items: sequential, random or shuffle (seeded)
    #[arg(long, value_enum, value_name = "ORDER", hide_possible_values = true, default_value = "sequential", requires = "dataset", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub dataset_sampling: ringbench::plan::workload::Sampling,
    #[command(flatten)]
    pub hf: super::workload_args::HfFlags,
    #[command(flatten)]
    pub media: super::workload_args::MediaFlags,
    /// Shared system prefixes: G groups (with --prefix-tokens)
    #[arg(long, value_name = "G", requires = "prefix_tokens", help_heading = h::WORKLOAD)]
    pub prefix_groups: Option<u32>,
    /// Tokens in each shared prefix (with --prefix-groups)
    #[arg(long, value_name = "P", requires = "prefix_groups", help_heading = h::WORKLOAD)]
    pub prefix_tokens: Option<u32>,
    /// Zipf exponent of the groups' popularity [default: all alike]
    #[arg(long, value_name = "S", requires = "prefix_groups", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub prefix_zipf: Option<f64>,
    /// Let prompts repeat: no per-request salt, no per-run nonce
    ///
    /// A run longer than the 1,024 built prompts, and every rerun, then sends them again
    /// (and may meet a warm prefix cache).
    #[arg(long, help_heading = h::WORKLOAD)]
    pub no_prompt_salt: bool,
    /// The prompts' salt nonce [default: random per run]
    ///
    /// A rerun with the same nonce sends the same bytes; a new one meets a cold cache.
    #[arg(long, value_name = "N", conflicts_with = "no_prompt_salt", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub prompt_nonce: Option<u64>,
    /// Send ignore_eos: true, so answers run to max_tokens
    #[arg(long, help_heading = h::WORKLOAD)]
    pub ignore_eos: bool,
    /// Send min_tokens N (at most each request's max_tokens)
    #[arg(long, value_name = "N", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub min_tokens: Option<u32>,
    /// Sampling temperature sent in every body [default: none]
    #[arg(long, value_name = "T", help_heading = h::WORKLOAD)]
    pub temperature: Option<f64>,
    /// A JSON object merged into every body last (its keys win)
    #[arg(long, value_name = "JSON", help_heading = h::WORKLOAD)]
    pub extra_body: Option<String>,

    /// Measured requests to send, warm-up on top [default: 100]
    #[arg(long, value_name = "N", help_heading = h::STOP)]
    pub request_count: Option<u64>,
    /// How long to send, like 30s or 2m (bare: s) [default: no limit]
    // Hyphen values reach the parser, so `-5s` is told it must be positive rather than
    // being taken for a flag.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, allow_hyphen_values = true, help_heading = h::STOP)]
    pub duration: Option<u64>,
    /// The first N requests are warm-up, left out of every figure
    #[arg(long, value_name = "N", default_value_t = defaults::plan().warmup_requests, help_heading = h::STOP)]
    pub warmup_requests: u64,
    /// Requests due within D of the start are warm-up [default: none]
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, help_heading = h::STOP)]
    pub warmup_duration: Option<u64>,
    /// On SIGINT: time in-flight requests get to end (bare: s)
    ///
    /// On SIGINT or SIGTERM sending stops; requests still in flight after this are cancelled.
    /// A second signal ends at once.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = defaults::shown().grace.as_str(), help_heading = h::STOP)]
    pub grace: u64,

    /// Write summary.json, requests.jsonl, exports, report.html here
    ///
    /// Created if missing. A folder that holds another run's files (summary.json,
    /// requests.jsonl, run.json) is refused unless --overwrite is given.
    #[arg(long, value_name = "DIR", help_heading = h::OUTPUT)]
    pub out: Option<PathBuf>,
    /// Let --out replace another run's files in its folder
    ///
    /// The new run's files replace the old ones of the same name; files of the old run
    /// that this one does not write (an export not asked this time) stay.
    #[arg(long, help_heading = h::OUTPUT)]
    pub overwrite: bool,
    /// Per-request log in --out: jsonl or parquet
    ///
    /// jsonl: requests.jsonl; parquet: requests.parquet, typed columns in row groups (stamps
    /// int64 ns, events a list of structs) for pandas, polars, DuckDB; `report` and `merge`
    /// read either.
    #[arg(long, value_name = "FORMAT", default_value = "jsonl", value_parser = RecordsFormat::parse, help_heading = h::OUTPUT)]
    pub records: RecordsFormat,
    /// Serve live figures as Prometheus text on ADDR/metrics
    ///
    /// HOST:PORT, like 127.0.0.1:9464 (port 0: any free one, said on stdout). Requests by
    /// outcome, in flight, TTFT/ITL/E2E histograms, rates, scheduling lag, worker CPU, from
    /// the collector a few times a second; served until the run returns. docs/guide.md.
    #[arg(long, value_name = "ADDR", help_heading = h::OUTPUT)]
    pub metrics_listen: Option<String>,
    /// Exports --out writes: vllm, aiperf, csv, all or none [default: all]
    #[arg(long, value_delimiter = ',', value_name = "LIST", help_heading = h::OUTPUT)]
    pub export: Option<Vec<String>>,
    /// Percentiles every output carries [default: 50,90,95,99,99.9]
    #[arg(long, value_delimiter = ',', value_name = "LIST", help_heading = h::OUTPUT)]
    pub percentiles: Option<Vec<f64>>,
    /// Per-request SLOs: ttft, tpot, itl, e2e, ntpot, like ttft:500 (ms)
    ///
    /// A bound takes a unit (ttft:0.5s); a bare number is ms.
    #[arg(long, num_args = 1.., value_name = "KEY:MS", help_heading = h::OUTPUT)]
    pub goodput: Vec<String>,
    /// Exit 3 when more than PCT % of the measured requests failed
    ///
    /// Without it, the run fails (exit 5) only when no measured request succeeded.
    #[arg(long, value_name = "PCT", help_heading = h::OUTPUT)]
    pub max_failed: Option<f64>,
    /// No progress display on stderr
    #[arg(long, help_heading = h::OUTPUT)]
    pub quiet: bool,
    /// Off a terminal, one progress line every D (0: none; bare: s)
    ///
    /// On a terminal the progress bar is redrawn several times a second instead.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = defaults::PROGRESS_INTERVAL, hide_short_help = true, help_heading = h::OUTPUT)]
    pub progress_interval: u64,

    /// Scrape these /metrics URLs [default: <base>/metrics, if up]
    ///
    /// With no URL: <base>/metrics. By default <base>/metrics is probed once before the run
    /// and scraped if it answers Prometheus text.
    #[arg(long, value_name = "URL", num_args = 0.., conflicts_with = "no_server_metrics", help_heading = h::SERVER)]
    pub server_metrics: Option<Vec<String>>,
    /// Time between scrapes, 100ms to 1h (bare: s)
    #[arg(long, value_name = "D", default_value = defaults::shown().server_metrics_interval.as_str(), value_parser = parse_duration_ns, help_heading = h::SERVER)]
    pub server_metrics_interval: u64,
    /// Do not probe or scrape the server's metrics
    #[arg(long, help_heading = h::SERVER)]
    pub no_server_metrics: bool,
    /// Query this Prometheus server after the run instead of scraping
    ///
    /// Over the measured window, a step every --server-metrics-interval: for servers behind
    /// a service, where one pod's /metrics is not the whole picture.
    #[arg(long, value_name = "URL", help_heading = h::SERVER)]
    pub prometheus: Option<String>,
    /// Label matchers for every --prometheus query, like '{pod=~"vllm-.*"}'
    #[arg(long, value_name = "SEL", hide_short_help = true, help_heading = h::SERVER)]
    pub prometheus_selector: Option<String>,

    /// Workers' CPUs, one worker each: 0,1 or 0-3 or auto [default: the first]
    ///
    /// auto: every CPU this process may run on (its affinity mask: in a container, the
    /// cpuset, as a Kubernetes pod with integer CPUs gets under the static CPU manager) but
    /// one, left to the collector thread; one CPU: one worker on it.
    #[arg(long, value_name = "LIST|auto", help_heading = h::OVERHEAD)]
    pub cpus: Option<String>,
    /// The workers' I/O driver: auto, uring or epoll
    #[arg(long, value_enum, value_name = "DRIVER", hide_possible_values = true, default_value_t = defaults::plan().io_driver, help_heading = h::OVERHEAD)]
    pub io_driver: IoDriver,
    /// A chunk gap above D is a stall (bare: ms)
    ///
    /// A reading-speed budget: the `stalls` block gives the share of chunk gaps above it and
    /// how many requests had one. 250 ms is 4 tokens/s.
    #[arg(long, value_name = "D", value_parser = parse_ms, default_value = defaults::shown().stall.as_str(), help_heading = h::OUTPUT)]
    pub stall_ms: f64,
    /// Scheduling-lag p99 above D: run invalid (bare: ms)
    #[arg(long, value_name = "D", value_parser = parse_ms, default_value = defaults::shown().max_lag.as_str(), help_heading = h::OVERHEAD)]
    pub max_lag: f64,
    /// Exit 0 even when the client's overhead made the run invalid
    #[arg(long, help_heading = h::OVERHEAD)]
    pub allow_invalid: bool,
    /// Spin before each send for D (bare: µs, at most 200us), or auto
    ///
    /// The spin goes through the event loop, which keeps serving reads; 0 never spins (less
    /// CPU, later sends).
    #[arg(long, value_name = "auto|D", default_value = "auto", value_parser = parse_spin_us, hide_short_help = true, help_heading = h::OVERHEAD)]
    pub pacer_spin_us: SpinUs,
    /// Stamp reads with the client's own clock, not the kernel's receive stamps
    ///
    /// By default every read of an http:// connection carries the kernel's stamp of when its
    /// bytes arrived, and TTFT, ITL and E2E are measured from it, leaving out the client's
    /// own wake-up; the client's stamps stay beside them (ttft_user, itl_user, e2e_user).
    /// This turns that off, saving a recvmsg syscall per read.
    #[arg(long, hide_short_help = true, help_heading = h::OVERHEAD)]
    pub no_rx_timestamps: bool,
    /// Kernel receive stamps on every read: the default (undoes --no-rx-timestamps)
    #[arg(long, hide = true, overrides_with = "no_rx_timestamps")]
    pub rx_timestamps: bool,
    /// This host's shard of a run over several: I/N, or auto (with --shards)
    ///
    /// Shard I of N sends the arrivals i with i mod N = I of the schedule the same flags and
    /// --seed define (and its share of --concurrency users and of --max-concurrency); the
    /// shards' records, merged by `ringbench merge`, are the single-host run's arrivals.
    /// auto reads the index from JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it.
    #[arg(long, value_name = "I/N|auto", help_heading = h::SHARDS)]
    pub shard: Option<String>,
    /// The number of shards, with --shard auto
    #[arg(long, value_name = "N", help_heading = h::SHARDS)]
    pub shards: Option<u32>,
    /// Start the schedule at this wall-clock instant: RFC 3339 or Unix ns
    ///
    /// Every shard given the same instant starts its schedule then, on its own clock; a shard
    /// that gets there late says so and counts the lateness as scheduling lag.
    #[arg(long, value_name = "TIME", value_parser = super::parse::parse_start_at, help_heading = h::SHARDS)]
    pub start_at: Option<u64>,
    /// Run even if another ringbench here loads the same endpoint
    #[arg(long, hide_short_help = true, help_heading = h::OVERHEAD)]
    pub allow_concurrent: bool,

    /// Sent as Authorization: Bearer; never written out
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true, value_name = "KEY", help_heading = h::TLS)]
    pub api_key: Option<String>,
    /// Header K:V (or K=V) on every request, repeatable
    ///
    /// Values of secret-looking headers (authorization, *key*, *token*, cookie, ...) are never
    /// written out.
    #[arg(long = "header", value_name = "K:V", num_args = 1.., help_heading = h::TLS)]
    pub headers: Vec<String>,
    /// https: trust this CA certificate (PEM), not the system's
    ///
    /// A self-signed certificate the server presents as its own is trusted as exactly itself.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure", help_heading = h::TLS)]
    pub cacert: Option<PathBuf>,
    /// https: do not verify the server's certificate (reported)
    #[arg(long, help_heading = h::TLS)]
    pub insecure: bool,

    /// The simulator's CPUs [default: the first the workers do not use]
    #[arg(long, value_name = "LIST", help_heading = h::SIM)]
    pub sim_cpus: Option<String>,
    #[command(flatten)]
    pub sim: RunSimFlags,
    #[command(flatten)]
    pub vllm: super::compat_flags::VllmFlags,
    #[command(flatten)]
    pub aiperf: super::compat_flags::AiperfFlags,
    /// The ids of the flags given (on the line or in --config's file), filled by
    /// `cli::parse`: what `run` does with no flags depends on what was given, not on values.
    #[arg(skip)]
    pub given: std::collections::BTreeSet<String>,
    /// The flags given, as `summary.json`'s `config.args` keeps them (`config::given_args`).
    #[arg(skip)]
    pub args: Vec<String>,
    /// `--config DIR/summary.json`: that file and its `config` block.
    #[arg(skip)]
    pub rerun_of: Option<(PathBuf, serde_json::Value)>,
}

/// `--pacer-spin-us`: `None` is auto; otherwise ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinUs(pub Option<u64>);

fn parse_spin_us(s: &str) -> Result<SpinUs, String> {
    if s == "auto" {
        return Ok(SpinUs(None));
    }
    let max_us = ringbench::plan::MAX_SPIN_NS / 1000;
    match duration_ns_in(s, Bare::Us) {
        Ok(ns) if ns <= ringbench::plan::MAX_SPIN_NS => Ok(SpinUs(Some(ns))),
        _ => Err(format!(
            "`{s}` is not `auto` or a time from 0 to {max_us}us (a bare number is µs)"
        )),
    }
}

/// What a trace decides itself (times, count, lengths, prompts): flags that would too.
const TRACE_CONFLICTS: [&str; 20] = [
    "request_rate",
    "stages",
    "ramp_up",
    "users_ramp",
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

/// `ringbench run` with no `--url` and no flag of load, stop or simulator: the built-in
/// simulator at a small model's pace (`DEMO_TTFT_MS`, `DEMO_ITL_MS`, `DEMO_OUTPUT_TOKENS`), at
/// `DEMO_RATE` req/s (about 33 streams open: 50 × (20 ms + 127 × 5 ms)) for `DEMO_DURATION_NS`.
/// `--self-check` (or any such flag) keeps the zero-delay simulator and the 100-request default.
pub const DEMO_TTFT_MS: f64 = 20.0;
/// See `DEMO_TTFT_MS`.
pub const DEMO_ITL_MS: f64 = 5.0;
/// See `DEMO_TTFT_MS`.
pub const DEMO_OUTPUT_TOKENS: u32 = 128;
/// See `DEMO_TTFT_MS`.
pub const DEMO_RATE: f64 = 50.0;
/// See `DEMO_TTFT_MS`.
pub const DEMO_DURATION_NS: u64 = 8_000_000_000;

/// Flags (clap ids) that say where, how much or how fast: any of them, or any simulator flag,
/// turns the demo off.
const NOT_DEMO: [&str; 22] = [
    "self_check",
    "turns",
    "users",
    "session_rate",
    "stages",
    "ramp_up",
    "users_ramp",
    "url",
    "url_file",
    "base_url",
    "host",
    "port",
    "backend",
    "concurrency",
    "request_rate",
    "arrival",
    "burstiness",
    "max_concurrency",
    "trace",
    "request_count",
    "duration",
    "sim_cpus",
];

/// A server that refuses the connection is an error before the run (exit 1, "cannot
/// connect"), with `--model` as without it (where asking `/v1/models` finds it out first);
/// a slow or silent one is left to the run and its `--connect-timeout`.
pub fn check_reachable(plan: &ringbench::plan::Plan) -> Result<(), String> {
    use std::net::ToSocketAddrs;
    if plan.model.is_none() || plan.wait_ready_ns.is_some() {
        return Ok(());
    }
    let limit = std::time::Duration::from_nanos(plan.connect_timeout_ns);
    for t in &plan.targets {
        // One that does not resolve is the run's own error to report.
        let Some(addr) = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
        else {
            continue;
        };
        match std::net::TcpStream::connect_timeout(&addr, limit) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(format!(
                    "cannot connect to {}: {e} (check --url and that the server is up; \
                     --wait-ready waits for it)",
                    t.url
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The files that mark a folder as holding a run's results (`check_out`).
const RUN_FILES: [&str; 4] = [
    "summary.json",
    "requests.jsonl",
    "requests.parquet",
    "run.json",
];

impl RunArgs {
    /// These flags with `--users` as `--concurrency` and `--session-rate` as `--request-rate`;
    /// `None` when there is nothing to lower. With `--turns`, the request spellings are
    /// refused: a rate or a concurrency of what would be ambiguous.
    pub(super) fn sessions_lowered(&self) -> Result<Option<RunArgs>, UsageError> {
        let (args, s) = (self, &self.sessions);
        if s.turns.is_none() {
            return Ok(None);
        }
        if args.request_rate.is_some() {
            return usage(
                "with --turns the schedule starts sessions: give --session-rate R (sessions \
                 per second) instead of --request-rate",
            );
        }
        if args.concurrency.is_some() {
            return usage("with --turns, give --users N (users holding conversations) instead of --concurrency");
        }
        let mut lowered = args.clone();
        lowered.concurrency = s.users;
        lowered.request_rate = s.session_rate;
        Ok(Some(lowered))
    }

    /// No URL and no flag of load, stop or simulator given (nor a vLLM or AIPerf spelling,
    /// which bring those tools' defaults).
    pub(super) fn is_demo(&self) -> bool {
        use clap::Args;
        let sim = RunSimFlags::augment_args(clap::Command::new("sim"));
        let sim_ids: Vec<&str> = sim.get_arguments().map(|a| a.get_id().as_str()).collect();
        let given = |id: &str| self.given.contains(id);
        !(NOT_DEMO.iter().any(|id| given(id))
            || sim_ids.iter().any(|id| given(id))
            || self.vllm.given()
            || self.aiperf.given())
    }

    /// `--out DIR` (the plan's, vLLM's and AIPerf's spellings lowered), checked before
    /// anything is sent: created if missing; refused when it cannot be written, or when it
    /// holds another run's files and `--overwrite` was not given (a new run's files beside an
    /// old run's would read as one run).
    pub fn check_out(&self, out: Option<&std::path::Path>) -> Result<(), UsageError> {
        let Some(dir) = out else {
            return Ok(());
        };
        let found: Vec<&str> = RUN_FILES
            .into_iter()
            .filter(|f| dir.join(f).exists())
            .collect();
        if !found.is_empty() && !self.overwrite {
            return Err(UsageError(format!(
                "--out {}: holds another run's files ({}); give a new or empty folder, or \
                 --overwrite to replace them",
                dir.display(),
                found.join(", ")
            )));
        }
        let probe = dir.join(".ringbench-write-check");
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&probe, b""))
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| {
                UsageError(format!(
                    "--out {}: cannot write there ({e}); give a folder you can write",
                    dir.display()
                ))
            })
    }

    /// The input length asked for (`--input-tokens`, or the default).
    pub fn input_tokens(&self) -> u32 {
        self.input_tokens.unwrap_or(defaults::plan().input_tokens)
    }

    /// The servers: every `--url`, then `--url-file`'s lines.
    fn targets(&self) -> Result<Vec<ringbench::plan::Target>, UsageError> {
        let mut urls = self.url.clone();
        if let Some(path) = &self.url_file {
            urls.extend(super::parse::url_file(path)?);
        }
        urls.iter().map(|u| parse_target(u)).collect()
    }

    /// The simulator's settings, kept whenever they matter (no `--url`) or were given, so
    /// that `validate` can refuse them beside --url.
    fn sim_settings(
        &self,
        no_targets: bool,
        sim_cpus: Vec<usize>,
    ) -> Option<ringbench::plan::SimSettings> {
        (no_targets || self.sim.any_set() || self.sim_cpus.is_some()).then(|| {
            self.sim
                .settings(sim_cpus, "ringbench-sim".into(), self.seed)
        })
    }

    /// The plan of ringbench's own flags (vLLM's and AIPerf's already lowered).
    pub(super) fn plan_of(
        &self,
        vllm_result: Option<ringbench::plan::VllmResult>,
    ) -> Result<Plan, UsageError> {
        let targets = self.targets()?;
        let load = self.load()?;
        // A trace sends each of its lines once (warm-up ones included).
        let stop = match &load {
            Load::Trace(t) => super::workload_args::trace_stop(t, self.warmup_requests)?,
            _ => self.stop(),
        };
        let (cpus, sim_cpus) =
            super::parse::cpus_of(self.cpus.as_deref(), self.sim_cpus.as_deref())?;
        let sim = self.sim_settings(targets.is_empty(), sim_cpus);
        let mut plan = Plan {
            targets,
            url_policy: self.url_policy.unwrap_or_default(),
            sim,
            endpoint: self.endpoint.unwrap_or(defaults::plan().endpoint),
            api: self.api.options()?,
            model: self.model.clone(),
            load,
            stop,
            ramp_up_ns: self.ramp_up,
            stages: vec![],
            users_ramp_ns: self.users_ramp,
            warmup_requests: self.warmup_requests,
            warmup_duration_ns: self.warmup_duration.unwrap_or(0),
            input_tokens: self.input_tokens(),
            output_tokens: self.output_tokens.unwrap_or(defaults::plan().output_tokens),
            // Embeddings, rerank and score answer with one JSON body.
            stream: !self.no_stream && self.endpoint.is_none_or(|e| e.generates()),
            include_usage: !self.no_usage,
            seed: self.seed,
            cpus,
            io_driver: self.io_driver,
            request_timeout_ns: self.request_timeout,
            connect_timeout_ns: self.connect_timeout,
            wait_ready_ns: self.wait_ready,
            headers: self
                .headers
                .iter()
                .map(|s| parse_header(s))
                .collect::<Result<_, _>>()?,
            api_key: self.api_key.clone().filter(|k| !k.is_empty()),
            percentiles: self.percentiles_of()?,
            goodput: self.goodput_of()?,
            max_lag_ms: self.max_lag,
            stall_ms: self.stall_ms,
            out_dir: self.out.clone(),
            progress: !self.quiet,
            grace_ns: self.grace,
            allow_concurrent: self.allow_concurrent,
            exports: exports_of(self.export.as_deref())?,
            records: self.records,
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            workload: workload_of(self)?,
            rx_timestamps: !self.no_rx_timestamps,
            pacer_spin_ns: self.pacer_spin_us.0,
            max_failed_percent: self.max_failed,
            server_metrics: self.server_metrics_spec(),
            metrics_listen: self.metrics_listen.clone(),
            request_id: !self.no_request_id,
            run_id: self.run_id.clone(),
            vllm_result,
            args: self.args.clone(),
            shard: self.shard()?,
            start_at_unix_ns: self.start_at,
            sessions: self.sessions.spec()?,
            cancel: self.sessions.cancel(),
        };
        if let Some(stages) = &self.stages {
            plan.set_stages(stages.0.clone());
        }
        plan.validate().map_err(|e| UsageError(e.0))?;
        Ok(plan)
    }

    /// `--percentiles`, checked, or the default ones.
    fn percentiles_of(&self) -> Result<Vec<f64>, UsageError> {
        match &self.percentiles {
            Some(ps) => check_percentiles(ps),
            None => Ok(defaults::plan().percentiles.clone()),
        }
    }

    /// `--goodput KEY:MS ...`, parsed.
    fn goodput_of(&self) -> Result<Vec<ringbench::plan::Slo>, UsageError> {
        self.goodput.iter().map(|s| parse_slo(s)).collect()
    }

    /// What to scrape from the server, and how often.
    fn server_metrics_spec(&self) -> ServerMetricsSpec {
        ServerMetricsSpec {
            enabled: !self.no_server_metrics,
            urls: self.server_metrics.clone().unwrap_or_default(),
            interval_ns: self.server_metrics_interval,
            prometheus: self.prometheus.clone(),
            prometheus_selector: self.prometheus_selector.clone(),
        }
    }

    /// `--shard I/N`, or `auto` with `--shards N` and the Indexed Job's index.
    fn shard(&self) -> Result<Option<ringbench::plan::Shard>, UsageError> {
        super::parse::shard_of(
            self.shard.as_deref(),
            self.shards,
            std::env::var(super::parse::JOB_INDEX_VAR).ok().as_deref(),
        )
    }

    /// When to stop: the flags given, or the plan's default (100 requests).
    fn stop(&self) -> Stop {
        match (self.request_count, self.duration) {
            (None, None) => defaults::plan().stop.clone(),
            (c, d) => Stop {
                request_count: c,
                duration_ns: d,
            },
        }
    }

    /// Which load the flags make: a trace, an open loop at `--request-rate`, or a closed loop
    /// of `--concurrency` users (1 by default).
    fn load(&self) -> Result<Load, UsageError> {
        if self.trace.is_some() {
            return trace_load_of(self);
        }
        if self.stages.is_some() {
            return self.staged_load();
        }
        let Some(rate) = self.request_rate else {
            if self.arrival.is_some() {
                return usage(
                    "--arrival shapes an open loop: give --request-rate R (or --stages) with it \
                     (with --turns: --session-rate R)",
                );
            }
            if self.max_concurrency.is_some() {
                return usage(
                    "--max-concurrency caps an open loop: give --request-rate R with it (or \
                     --request-rate inf, vLLM's all at once: a closed loop of that many users), \
                     or use --concurrency N",
                );
            }
            return Ok(Load::Closed {
                concurrency: self.concurrency.unwrap_or(1),
            });
        };
        if self.concurrency.is_some() {
            return usage(
                "--concurrency (a closed loop of users) and --request-rate (an open loop) \
                 exclude each other: to cap an open loop's requests in flight, use \
                 --max-concurrency N",
            );
        }
        Ok(Load::Open {
            request_rate: rate,
            arrival: self.arrival_of()?,
            max_concurrency: self.max_concurrency,
        })
    }

    /// `--stages`: an open loop whose rate and length the stages set (`Plan::set_stages`);
    /// the flags that would set them too are refused here, naming them.
    fn staged_load(&self) -> Result<Load, UsageError> {
        let given: Vec<&str> = [
            ("--request-rate", self.request_rate.is_some()),
            ("--duration", self.duration.is_some()),
            ("--request-count", self.request_count.is_some()),
            ("--concurrency", self.concurrency.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, on)| on.then_some(flag))
        .collect();
        if !given.is_empty() {
            return usage(format!(
                "--stages sets the run's rate and length stage by stage: drop {} (put each \
                 rate and duration in a stage, like --stages 200:30s,400:30s)",
                given.join(", ")
            ));
        }
        Ok(Load::Open {
            request_rate: 1.0,
            arrival: self.arrival_of()?,
            max_concurrency: self.max_concurrency,
        })
    }

    /// `--arrival` and `--burstiness`, resolved.
    fn arrival_of(&self) -> Result<Arrival, UsageError> {
        let arrival = match (self.arrival, self.burstiness) {
            (Some(ArrivalArg::Gamma) | None, Some(k)) => Arrival::Gamma { burstiness: k },
            (Some(ArrivalArg::Gamma), None) => {
                return usage("--arrival gamma needs --burstiness K (1 is Poisson)")
            }
            (_, Some(_)) => return usage("--burstiness only applies to --arrival gamma"),
            (Some(ArrivalArg::Poisson) | None, None) => Arrival::Poisson,
            (Some(ArrivalArg::Constant), None) => Arrival::Constant,
        };
        Ok(arrival)
    }
}

/// The workload flags (tokenizer, length distributions, dataset, shared prefixes, request
/// options) as the `Plan`'s `WorkloadSpec`.
fn workload_of(a: &RunArgs) -> Result<WorkloadSpec, UsageError> {
    let dist = |flag: &str, spec: &Option<String>| {
        spec.as_deref()
            .map(|s| LengthDist::parse(flag, s).map_err(UsageError))
            .transpose()
    };
    let (mut input, mut output) = (
        dist("--input-dist", &a.input_dist)?,
        dist("--output-dist", &a.output_dist)?,
    );
    if let Some(r) = a.random_range_ratio {
        if !(r.is_finite() && (0.0..1.0).contains(&r)) {
            return usage(format!("--random-range-ratio {r}: must be in [0, 1)"));
        }
        input = Some(LengthDist::Uniform {
            mean: a.input_tokens(),
            range_ratio: r,
        });
        output = Some(LengthDist::Uniform {
            mean: a
                .output_tokens
                .unwrap_or(super::defaults::plan().output_tokens),
            range_ratio: r,
        });
    }
    // An explicit --output-tokens overrides a dataset's own output lengths.
    if output.is_none() {
        output = a.output_tokens.map(|tokens| LengthDist::Fixed { tokens });
    }
    let prefix = prefix_of(a);
    Ok(WorkloadSpec {
        tokenizer: a.tokenizer.clone(),
        input,
        output,
        dataset: dataset_of(a),
        hf: hf_of(a)?,
        prefix,
        request: request_of(a)?,
        prompt_salt: !a.no_prompt_salt,
        prompt_nonce: a.prompt_nonce,
        media: super::workload_args::media_of(&a.media)?,
    })
}

/// `--trace FILE` (with `--trace-block-size`, `--replay-speedup`, `--max-concurrency`):
/// the file read and checked, its lines and send times in the load.
fn trace_load_of(a: &RunArgs) -> Result<ringbench::plan::Load, UsageError> {
    let Some(path) = a.trace.as_deref() else {
        return usage("--trace: give the trace file");
    };
    let t = ringbench::plan::workload::TraceLoad::open(
        path,
        a.trace_block_size,
        a.replay_speedup,
        a.max_concurrency,
    )
    .map_err(|e| UsageError(e.to_string()))?;
    Ok(ringbench::plan::Load::Trace(t))
}

fn dataset_of(a: &RunArgs) -> Option<DatasetSpec> {
    let path = a.dataset.clone()?;
    let kind =
        a.dataset_format
            .unwrap_or_else(|| match path.extension().and_then(|e| e.to_str()) {
                Some("json") => DatasetKind::Sharegpt,
                Some("parquet") => DatasetKind::Hf,
                _ => DatasetKind::Jsonl,
            });
    Some(DatasetSpec {
        kind,
        path,
        sampling: a.dataset_sampling,
    })
}

/// `--hf-*`: only with a Hugging Face dataset.
fn hf_of(a: &RunArgs) -> Result<HfSpec, UsageError> {
    let f = &a.hf;
    let given = [
        ("--hf-split", &f.hf_split),
        ("--hf-subset", &f.hf_subset),
        ("--hf-prompt-column", &f.hf_prompt_column),
        ("--hf-image-column", &f.hf_image_column),
    ];
    let hf = dataset_of(a).is_some_and(|d| d.kind == DatasetKind::Hf);
    if let Some((flag, _)) = given.iter().find(|(_, v)| v.is_some()).filter(|_| !hf) {
        return usage(format!(
            "{flag} reads a Hugging Face dataset: give --dataset-name hf --dataset-path ORG/NAME \
             (or --dataset ORG/NAME --dataset-format hf)"
        ));
    }
    if let Some((flag, _)) = given
        .iter()
        .find(|(_, v)| v.as_deref().is_some_and(|v| v.trim().is_empty()))
    {
        return usage(format!("{flag}: give a name"));
    }
    Ok(HfSpec {
        split: f.hf_split.clone(),
        subset: f.hf_subset.clone(),
        prompt_column: f.hf_prompt_column.clone(),
        image_column: f.hf_image_column.clone(),
    })
}

fn prefix_of(a: &RunArgs) -> Option<PrefixSpec> {
    let (Some(groups), Some(tokens)) = (a.prefix_groups, a.prefix_tokens) else {
        return None;
    };
    Some(PrefixSpec {
        groups,
        tokens,
        zipf: a.prefix_zipf,
    })
}

fn request_of(a: &RunArgs) -> Result<RequestOptions, UsageError> {
    let extra_body = match &a.extra_body {
        None => None,
        Some(s) => match serde_json::from_str::<serde_json::Value>(s) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            Ok(_) => return usage("--extra-body: must be a JSON object, like '{\"top_p\": 0.9}'"),
            Err(e) => return usage(format!("--extra-body: not valid JSON ({e})")),
        },
    };
    Ok(RequestOptions {
        ignore_eos: a.ignore_eos,
        min_tokens: a.min_tokens,
        temperature: a.temperature,
        extra_body,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use ringbench::plan::{Slo, SloMetric};

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

    /// `ringbench run ARGS…` as the binary reads it (`cli::parse`, which knows which flags
    /// were given): `run`'s plan and whether it is the demo.
    fn run_plan(args: &[&str]) -> Result<(Plan, bool), String> {
        let argv = ["ringbench", "run"].iter().chain(args).copied();
        let cli = crate::cli::parse(argv).map_err(|e| format!("{e:?}"))?;
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        run.run_plan().map_err(|e| e.0)
    }

    #[test]
    fn no_url_and_no_load_flag_runs_the_demo() {
        for args in [&[][..], &["--out", "/tmp/d", "--quiet", "--seed", "3"]] {
            let (p, demo) = run_plan(args).unwrap();
            assert!(demo, "{args:?}");
            let sim = p.sim.as_ref().unwrap();
            assert_eq!((sim.ttft_ms, sim.itl_ms), (DEMO_TTFT_MS, DEMO_ITL_MS));
            assert_eq!(p.output_tokens, DEMO_OUTPUT_TOKENS);
            assert_eq!(
                p.load,
                Load::Open {
                    request_rate: DEMO_RATE,
                    arrival: Arrival::Poisson,
                    max_concurrency: None
                }
            );
            assert_eq!(
                p.stop,
                Stop {
                    request_count: None,
                    duration_ns: Some(DEMO_DURATION_NS)
                }
            );
            assert!(p.targets.is_empty());
        }
        let (p, demo) = run_plan(&["--output-tokens", "32"]).unwrap();
        assert!(
            demo && p.output_tokens == 32,
            "a workload flag keeps the demo"
        );
        for args in [
            &["--self-check"][..],
            &["--request-count", "5"],
            &["--duration", "1s"],
            &["--concurrency", "2"],
            &["--sim-itl-ms", "1"],
            &["--sim-cpus", "0"],
            &["--url", "http://h:1"],
            &["--base-url", "http://h:1"],
            &["--endpoint-type", "chat"],
        ] {
            let (p, demo) = run_plan(args).unwrap();
            assert!(!demo, "{args:?}");
            assert_eq!(p.sim.as_ref().map(|s| s.ttft_ms).unwrap_or(0.0), 0.0);
        }
        let (p, _) = run_plan(&["--self-check"]).unwrap();
        assert_eq!(
            (p.load, p.stop.request_count),
            (Load::Closed { concurrency: 1 }, Some(100))
        );
        assert!(run_plan(&["--self-check", "--url", "http://h:1"]).is_err());
    }

    #[test]
    fn times_take_units_and_bare_numbers_keep_their_old_unit() {
        let p = plan(&[
            "--max-lag",
            "250us",
            "--sim-ttft-ms",
            "0.02s",
            "--sim-itl-ms",
            "5",
        ])
        .unwrap();
        assert_eq!(p.max_lag_ms, 0.25);
        let sim = p.sim.as_ref().unwrap();
        assert_eq!((sim.ttft_ms, sim.itl_ms), (20.0, 5.0));
        let p = plan(&[
            "--max-lag",
            "2",
            "--sim-fault-stall-ms",
            "1s",
            "--grace",
            "2",
        ])
        .unwrap();
        assert_eq!(p.max_lag_ms, 2.0);
        assert_eq!(p.sim.as_ref().unwrap().faults.stall_ms, 1_000);
        assert_eq!(p.grace_ns, 2_000_000_000);
        for bad in [
            &["--max-lag", "1 parsec"][..],
            &["--sim-fault-stall-ms", "1500us"],
        ] {
            assert!(plan(bad).is_err(), "{bad:?}");
        }
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
        assert_eq!(
            plan(&["--pacer-spin-us", "0.05ms"]).unwrap().pacer_spin_ns,
            Some(50_000)
        );
        for bad in ["201", "-1", "1ms", "fast"] {
            let e = plan(&[&format!("--pacer-spin-us={bad}")]).unwrap_err();
            assert!(e.contains("--pacer-spin-us"), "{bad}: {e}");
        }
    }

    #[test]
    fn ramps_and_stages_resolve_and_contradictions_name_the_flags() {
        let p = plan(&["--stages", "200:1s,400:500ms", "--arrival", "constant"]).unwrap();
        let st = |r, ns| ringbench::plan::Stage {
            request_rate: r,
            duration_ns: ns,
        };
        assert_eq!(p.stages, [st(200.0, 1_000_000_000), st(400.0, 500_000_000)]);
        assert_eq!(p.stop.duration_ns, Some(1_500_000_000));
        assert_eq!(p.stop.request_count, None);
        assert_eq!(p.target_rate(), Some(400.0 / 1.5));
        assert!(matches!(
            p.load,
            Load::Open {
                arrival: Arrival::Constant,
                ..
            }
        ));
        let p = plan(&[
            "--request-rate",
            "50",
            "--ramp-up",
            "10s",
            "--duration",
            "1m",
        ])
        .unwrap();
        assert_eq!(p.ramp_up_ns, Some(10_000_000_000));
        let p = plan(&["--concurrency", "8", "--users-ramp", "4s"]).unwrap();
        assert_eq!(p.users_ramp_ns, Some(4_000_000_000));
        for (args, want) in [
            (
                &[
                    "--stages",
                    "200:1s",
                    "--request-rate",
                    "5",
                    "--duration",
                    "3s",
                ][..],
                "drop --request-rate, --duration",
            ),
            (
                &["--stages", "200:1s", "--concurrency", "2"],
                "drop --concurrency",
            ),
            (&["--stages", "200"], "RATE:DURATION"),
            (&["--stages", "0:1s"], "above 0"),
            (&["--stages", "5:1s", "--ramp-up", "1s"], "--ramp-up"),
            (
                &["--concurrency", "2", "--ramp-up", "1s"],
                "--request-rate R",
            ),
            (
                &["--request-rate", "5", "--users-ramp", "1s"],
                "--concurrency N",
            ),
            (
                &["--request-rate", "5", "--duration", "5s", "--ramp-up", "9s"],
                "--duration",
            ),
            (&["--arrival", "constant"], "--request-rate R (or --stages)"),
        ] {
            let e = plan(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
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
        let t = &p.targets[0];
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
        // A negative duration is a value, told what is wrong with it, not a flag.
        let err = plan(&["--duration", "-5s"]).unwrap_err();
        assert!(
            err.contains("--duration") && err.contains("must be positive"),
            "{err}"
        );
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
    fn a_url_pasted_with_its_endpoint_is_split_into_base_and_endpoint() {
        let p = plan(&["--url", "http://h:8000/v1/chat/completions"]).unwrap();
        let t = &p.targets[0];
        assert_eq!(
            (t.host.as_str(), t.port, t.base_path.as_str()),
            ("h", 8000, "")
        );
        assert_eq!(p.endpoint, Endpoint::Chat);
        let p = plan(&["--url", "https://gw/team/v1/embeddings/"]).unwrap();
        assert_eq!(
            (p.targets[0].base_path.as_str(), p.endpoint),
            ("/team", Endpoint::Embeddings)
        );
        assert!(
            !p.stream,
            "the endpoint read from the URL decides streaming too"
        );
        let p = plan(&["--url", "http://h:80/rerank"]).unwrap();
        assert_eq!(p.endpoint, Endpoint::TeiRerank);
        let p = plan(&["--url", "http://h:1/v1/rerank"]).unwrap();
        assert_eq!(p.endpoint, Endpoint::Rerank, "the longest path wins");
        // The same endpoint given again is fine; a different one is refused.
        let same = ["--url", "http://h:1/v1/messages", "--endpoint", "messages"];
        assert_eq!(plan(&same).unwrap().endpoint, Endpoint::Messages);
        let err = plan(&["--url", "http://h:1/v1/completions", "--endpoint", "chat"]).unwrap_err();
        assert!(
            err.contains("--endpoint says /v1/chat/completions"),
            "{err}"
        );
        let err = plan(&[
            "--url",
            "http://a:1/v1/completions",
            "--url",
            "http://b:1/v1/chat/completions",
        ])
        .unwrap_err();
        assert!(err.contains("different endpoints"), "{err}");
        // A base URL is left alone.
        let p = plan(&["--url", "http://h:1/v1"]).unwrap();
        assert_eq!(
            (p.targets[0].base_path.as_str(), p.endpoint),
            ("", Endpoint::Chat)
        );
        let cli = Cli::try_parse_from([
            "ringbench",
            "run",
            "--url",
            "http://h:8000/v1/chat/completions",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            crate::cli::compat::url_note(&run).as_deref(),
            Some(
                "--url http://h:8000/v1/chat/completions: read as --url http://h:8000 --endpoint \
                 /v1/chat/completions (the base URL and the endpoint apart)"
            )
        );
    }

    #[test]
    fn out_refuses_another_runs_folder_unless_overwrite_and_names_the_flag() {
        let parsed = |extra: &[&str]| {
            let mut argv = vec!["ringbench", "run"];
            argv.extend_from_slice(extra);
            let Command::Run(run) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("not run")
            };
            run
        };
        let dir = std::env::temp_dir().join(format!("ringbench-out-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let fresh = dir.join("new");
        parsed(&[]).check_out(Some(&fresh)).unwrap();
        assert!(fresh.is_dir(), "created");
        std::fs::write(fresh.join("requests.jsonl"), b"{}\n").unwrap();
        std::fs::write(fresh.join("notes.txt"), b"mine").unwrap();
        let err = parsed(&[]).check_out(Some(&fresh)).unwrap_err().0;
        assert!(
            err.contains("--out") && err.contains("requests.jsonl") && err.contains("--overwrite"),
            "{err}"
        );
        parsed(&["--overwrite"]).check_out(Some(&fresh)).unwrap();
        // A folder with other files only is fine; so is no --out.
        std::fs::remove_file(fresh.join("requests.jsonl")).unwrap();
        parsed(&[]).check_out(Some(&fresh)).unwrap();
        parsed(&[]).check_out(None).unwrap();
        // A folder that cannot be made: the flag named, the OS error once.
        let blocked = fresh.join("notes.txt").join("sub");
        let err = parsed(&[]).check_out(Some(&blocked)).unwrap_err().0;
        assert!(
            err.starts_with("--out ") && err.contains("cannot write there"),
            "{err}"
        );
        assert_eq!(err.matches("os error").count(), 1, "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn prometheus_flags_resolve_and_refuse_with_the_fix() {
        let p = plan(&[
            "--prometheus",
            "http://prom:9090",
            "--prometheus-selector",
            "{pod=~\"vllm-.*\"}",
            "--server-metrics-interval",
            "500ms",
        ])
        .unwrap();
        let m = &p.server_metrics;
        assert_eq!(m.prometheus.as_deref(), Some("http://prom:9090"));
        assert_eq!(m.prometheus_selector.as_deref(), Some("{pod=~\"vllm-.*\"}"));
        assert_eq!(m.interval_ns, 500_000_000);
        let cases: &[(&[&str], &[&str])] = &[
            (
                &[
                    "--prometheus",
                    "http://p:9090",
                    "--server-metrics",
                    "http://s/metrics",
                ],
                &["--prometheus", "--server-metrics", "give one"],
            ),
            (
                &["--prometheus", "http://p:9090", "--no-server-metrics"],
                &["--prometheus", "--no-server-metrics"],
            ),
            (&["--prometheus", "prom:9090"], &["--prometheus", "http://"]),
            (
                &["--prometheus", "http://p:x"],
                &["--prometheus", "bad port"],
            ),
            (
                &["--prometheus", "http://p/?a=1"],
                &["--prometheus", "without a query"],
            ),
            (
                &["--prometheus-selector", "{a=\"b\"}"],
                &["--prometheus-selector", "needs --prometheus"],
            ),
        ];
        for (args, wants) in cases {
            let err = plan(args).unwrap_err();
            for want in *wants {
                assert!(err.contains(want), "{args:?}: {err}");
            }
        }
        for sel in [
            "pod=\"a\"",
            "{pod=\"a\"",
            "{a=\"}\"} }",
            "{a=\"b}",
            "vllm:x{a=\"b\"}",
        ] {
            let err = plan(&[
                "--prometheus",
                "http://p:9090",
                "--prometheus-selector",
                sel,
            ])
            .unwrap_err();
            assert!(
                err.contains("--prometheus-selector") && err.contains("{pod=~"),
                "{sel}: {err}"
            );
        }
        for sel in ["{}", " {a=\"}\",b!~'x\\'y'} ", "{a=~`\\d+`}"] {
            assert!(
                plan(&["--prometheus", "https://p", "--prometheus-selector", sel]).is_ok(),
                "{sel}"
            );
        }
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
