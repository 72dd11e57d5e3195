//! The validated run description: `cli` turns raw flags into a `Plan`, and everything after
//! it (schedule, workers, collector, report) reads only the `Plan`. A `Plan` that exists is
//! valid; checks live in `cli`/`Plan::check`, never on the hot path.

pub mod api;
pub mod cancel;
pub mod run_id;
pub mod session;
pub mod shape;
pub mod shard;
pub mod sim;
pub mod targets;
mod validate;
pub mod workload;

pub use api::{ApiOptions, EncodingFormat, Tool, ToolChoice};
pub use cancel::{CancelAfter, CancelSpec};
pub use run_id::RunId;
pub use session::{SessionEnd, SessionSpec, ThinkTime};
pub use shape::Stage;
pub use shard::Shard;
pub use sim::SimSettings;
pub use targets::{UrlPolicy, MAX_TARGETS};
pub use validate::{selector_matchers, PlanError, MAX_ARRIVALS, MAX_CPU, MAX_WORKERS};
pub use workload::WorkloadSpec;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which API a run calls: the route, the request body's shape and the answer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/chat/completions`, the prompt sent as `messages`.
    Chat,
    /// `/v1/completions`, the prompt sent as `prompt` text.
    Completions,
    /// `/v1/responses` (OpenAI's Responses API): the prompt sent as `input`, events named by
    /// their `type` (`response.output_text.delta`, …, `response.completed`).
    Responses,
    /// `/v1/messages` (Anthropic's Messages API): `messages`, `max_tokens` always, `x-api-key`
    /// and `anthropic-version` headers; events `message_start` … `message_stop`.
    Messages,
    /// `/v1/embeddings`: `--batch-size` inputs per request; not streamed.
    Embeddings,
    /// `/v1/rerank` (Jina/Cohere shape: `query`, `documents`): `--batch-size` documents per
    /// query; not streamed.
    Rerank,
    /// `/v1/score` (`text_1` against each of `text_2`): `--batch-size` pairs; not streamed.
    Score,
    /// `/rerank` in Hugging Face TEI's shape (`query`, `texts`; the answer a bare array).
    TeiRerank,
}

impl Endpoint {
    /// Every endpoint, in declaration order.
    pub const ALL: [Endpoint; 8] = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Responses,
        Endpoint::Messages,
        Endpoint::Embeddings,
        Endpoint::Rerank,
        Endpoint::Score,
        Endpoint::TeiRerank,
    ];

    /// The route's path, which follows the target's `base_path`.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
            Endpoint::Responses => "/v1/responses",
            Endpoint::Messages => "/v1/messages",
            Endpoint::Embeddings => "/v1/embeddings",
            Endpoint::Rerank => "/v1/rerank",
            Endpoint::Score => "/v1/score",
            Endpoint::TeiRerank => "/rerank",
        }
    }

    /// `--endpoint`'s name for it.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Chat => "chat",
            Endpoint::Completions => "completions",
            Endpoint::Responses => "responses",
            Endpoint::Messages => "messages",
            Endpoint::Embeddings => "embeddings",
            Endpoint::Rerank => "rerank",
            Endpoint::Score => "score",
            Endpoint::TeiRerank => "tei-rerank",
        }
    }

    /// It generates text (and may stream it); the others pool their inputs into vectors or
    /// scores and answer with one JSON body.
    pub fn generates(self) -> bool {
        matches!(
            self,
            Endpoint::Chat | Endpoint::Completions | Endpoint::Responses | Endpoint::Messages
        )
    }

    /// It takes `--batch-size` inputs per request (embeddings, rerank, score).
    pub fn batches(self) -> bool {
        !self.generates()
    }

    /// It can be asked to call tools (`--tools`).
    pub fn takes_tools(self) -> bool {
        matches!(
            self,
            Endpoint::Chat | Endpoint::Responses | Endpoint::Messages
        )
    }
}

/// Open-loop arrival process.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps at the rate: a Poisson process (`--arrival poisson`, the default).
    Poisson,
    /// Every gap 1 / rate (`--arrival constant`).
    Constant,
    /// Gamma-distributed gaps with shape `burstiness` (1 = Poisson; < 1 burstier).
    Gamma {
        /// The gamma shape (`--burstiness`), above 0.
        burstiness: f64,
    },
}

/// How load is offered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Load {
    /// N virtual users, each sending its next request when the previous one ended.
    Closed {
        /// Virtual users (`--concurrency`).
        concurrency: u32,
    },
    /// Requests at their scheduled times, whether or not earlier ones finished.
    Open {
        /// Arrivals per second (`--request-rate`); with `--ramp-up`, the rate the ramp
        /// reaches; with `--stages`, their mean (`Plan::set_stages` derives it).
        request_rate: f64,
        /// How the gaps between arrivals are drawn (`--arrival`).
        arrival: Arrival,
        /// Most requests in flight at once; a later arrival waits for one to end
        /// (`--max-concurrency`). `None`: no cap.
        max_concurrency: Option<u32>,
    },
    /// Requests at the times a trace recorded (`--trace`), divided by the speed-up.
    Trace(workload::TraceLoad),
}

/// When to stop sending. At least one is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stop {
    /// Measured requests (warm-up requests come on top).
    pub request_count: Option<u64>,
    /// How long to send measured requests, ns, counted after `warmup_duration_ns` (`--duration`).
    pub duration_ns: Option<u64>,
}

/// Which I/O driver the workers' runtimes use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum IoDriver {
    /// io_uring where the kernel allows it, else epoll.
    Auto,
    /// io_uring; the run is refused where the kernel does not allow it.
    Uring,
    /// epoll.
    Epoll,
}

/// A per-request SLO (`--goodput ttft:500`): the metric's value must be ≤ `max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// The metric bounded.
    pub metric: SloMetric,
    /// The bound, ms.
    pub max_ms: f64,
}

/// A metric a per-request SLO (`--goodput KEY:MS`) can bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first.
    Tpot,
    /// Every chunk gap of the request must be within bound (vLLM's meaning).
    Itl,
    /// End-to-end latency (vLLM's `e2el`).
    E2e,
    /// E2E / OSL.
    Ntpot,
}

impl SloMetric {
    /// Every metric an SLO can bound, in `--goodput`'s order.
    pub const ALL: [SloMetric; 5] = [
        SloMetric::Ttft,
        SloMetric::Tpot,
        SloMetric::Itl,
        SloMetric::E2e,
        SloMetric::Ntpot,
    ];

    /// The `--goodput` key (`ttft`, …); vLLM's `e2el` is read as `e2e`.
    pub fn key(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::Itl => "itl",
            SloMetric::E2e => "e2e",
            SloMetric::Ntpot => "ntpot",
        }
    }

    /// The metric a `--goodput` key names (case-insensitive; `e2el` is vLLM's `e2e`).
    pub fn from_key(key: &str) -> Option<SloMetric> {
        let key = key.trim().to_ascii_lowercase();
        let key = if key == "e2el" { "e2e" } else { key.as_str() };
        Self::ALL.into_iter().find(|m| m.key() == key)
    }
}

/// The server under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// As the user gave it (no credentials are ever in it: they go in headers).
    pub url: String,
    /// The scheme is `https://` (TLS).
    pub https: bool,
    /// Host name or address, without the brackets of an IPv6 literal.
    pub host: String,
    /// TCP port; the scheme's default (80, 443) when the URL gives none.
    pub port: u16,
    /// Path prefix before `/v1/...` (usually empty).
    pub base_path: String,
}

/// A URL pasted whole, endpoint path included (`http://h:8000/v1/chat/completions`, as
/// people copy it from a server's docs): its base (`http://h:8000`) and the endpoint its path
/// names, the longest such path winning (`/v1/rerank` over TEI's `/rerank`); `None` when the
/// path names no endpoint. A query or fragment is not looked through.
pub fn split_endpoint_url(url: &str) -> Option<(&str, Endpoint)> {
    let rest = url.split_once("://")?.1;
    let path_at = url.len() - rest.len() + rest.find('/')?;
    let path = url[path_at..].trim_end_matches('/');
    Endpoint::ALL
        .into_iter()
        .filter(|e| path.ends_with(e.path()))
        .max_by_key(|e| e.path().len())
        .map(|e| (&url[..path_at + path.len() - e.path().len()], e))
}

impl Target {
    /// The server at `url` (`--url`): `http://host:port[/prefix]` or `https://…`, the port
    /// defaulting to the scheme's; a trailing `/v1` is dropped from the prefix. Credentials
    /// in the URL are refused: they belong in headers, which are redacted in every output.
    pub fn parse(url: &str) -> Result<Target, PlanError> {
        let (https, rest) = if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else {
            return bad(format!("--url '{url}': needs a scheme, like http://{url}"));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.contains('@') {
            return bad("--url: put credentials in --api-key or --header, not in the URL");
        }
        let (host, port) = match split_authority(authority) {
            Some(parts) => parts,
            None => {
                return bad(format!(
                    "--url '{url}': an IPv6 address goes in brackets, like http://[::1]:8000"
                ))
            }
        };
        let port = match port {
            None => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(p) => p
                .parse()
                .map_err(|_| PlanError(format!("--url '{url}': bad port '{p}'")))?,
        };
        let host = host.to_string();
        if host.is_empty() {
            return bad(format!("--url '{url}': no host"));
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
}

impl Target {
    /// The `Host` header's value: the host (an IPv6 literal in brackets), and the port unless
    /// it is the scheme's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.https, self.port) {
            (false, 80) | (true, 443) => host,
            (_, port) => format!("{host}:{port}"),
        }
    }
}

/// `host[:port]` or `[v6]` / `[v6]:port` → the host (without brackets) and the port as
/// written; `None` for an IPv6 literal without brackets or a bracket left open.
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    match authority.split_once(':') {
        None => Some((authority, None)),
        Some((_, port)) if port.contains(':') => None,
        Some((host, port)) => Some((host, Some(port))),
    }
}

/// `targets` as written now (a list), or as a summary's `config` had it before (one object,
/// or `null` for the simulator).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Target>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<Target>),
        One(Target),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => vec![],
        Some(OneOrMany::One(t)) => vec![t],
        Some(OneOrMany::Many(ts)) => ts,
    })
}

fn bad<T>(msg: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError(msg.into()))
}

/// Everything a run is: what to load, how, for how long, what to measure and where to write
/// it. Build one from `Plan::defaults()` (the CLI's defaults: the built-in simulator, one
/// user, 100 requests) and change what you need; `validate` says what is wrong with it, and
/// `crate::run` refuses a plan that fails it. It serializes as `summary.json`'s `config`
/// (secrets redacted) and reads back from there, missing keys taking their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Plan {
    /// The servers under test (`--url`, repeated, or `--url-file`); empty: start the
    /// built-in simulator and benchmark it. Read back from a summary's `config` written
    /// before there could be several, as its one `target`.
    #[serde(alias = "target", deserialize_with = "one_or_many")]
    pub targets: Vec<Target>,
    /// Which of several `targets` each request (or conversation) goes to (`--url-policy`).
    pub url_policy: UrlPolicy,
    /// The built-in simulator's settings, used when `target` is `None` (`None`: its defaults).
    pub sim: Option<SimSettings>,
    /// The route to call (`--endpoint`).
    pub endpoint: Endpoint,
    /// What the endpoint is asked beside the prompt: tools, batch size, vector encoding.
    #[serde(default)]
    pub api: ApiOptions,
    /// `None`: ask `GET /v1/models` for the first model.
    pub model: Option<String>,
    /// How load is offered: closed loop, open loop or a trace.
    pub load: Load,
    /// When to stop sending.
    pub stop: Stop,
    /// Open loop: the rate rises linearly from 0 to `request_rate` over this long from the
    /// schedule's start, then holds; ns (`--ramp-up`). `stop.duration_ns` counts the ramp.
    #[serde(default)]
    pub ramp_up_ns: Option<u64>,
    /// Open loop: steady stages one after the other on one time line, each exactly rate ×
    /// duration arrivals (`--stages RATE:D,...`); empty: one steady rate. Set them with
    /// `Plan::set_stages`, which derives `request_rate` (their mean) and the stop (their
    /// total length) from them.
    #[serde(default)]
    pub stages: Vec<Stage>,
    /// Closed loop: user k of N starts k × this / N after the schedule's start, ns
    /// (`--users-ramp`); `None`: all at once.
    #[serde(default)]
    pub users_ramp_ns: Option<u64>,
    /// The first N arrivals are warm-up: sent and logged, left out of every figure
    /// (`--warmup-requests`).
    pub warmup_requests: u64,
    /// Arrivals due within this long of the start are warm-up, ns (`--warmup-duration`).
    pub warmup_duration_ns: u64,
    /// Prompt length, tokens, unless `workload.input`, a dataset or a trace sets it
    /// (`--input-tokens`).
    pub input_tokens: u32,
    /// `max_tokens` of every request, unless `workload.output`, a dataset or a trace sets it
    /// (`--output-tokens`).
    pub output_tokens: u32,
    /// Ask for a streamed (SSE) response; off: `--no-stream`, and only E2E-type metrics.
    pub stream: bool,
    /// Ask for `stream_options.include_usage`; off: `--no-usage`.
    pub include_usage: bool,
    /// Seeds every random draw: arrival gaps, lengths, prompts, dataset sampling (`--seed`).
    pub seed: u64,
    /// One pinned worker per CPU.
    pub cpus: Vec<usize>,
    /// The workers' I/O driver (`--io-driver`).
    pub io_driver: IoDriver,
    /// Longest a request may take, connecting included, ns; past it the request ends as
    /// `timeout` (`--request-timeout`).
    pub request_timeout_ns: u64,
    /// Longest the TCP connect, and then the TLS handshake, may each take, ns; past it the
    /// request ends as `connect` (`--connect-timeout`).
    pub connect_timeout_ns: u64,
    /// Before the run starts, wait up to this long for the server to answer
    /// `GET /health` (else `GET /v1/models`) with 200, ns (`--wait-ready`); `None`: no wait.
    #[serde(default)]
    pub wait_ready_ns: Option<u64>,
    /// Sent on every request. Values of secret-looking headers are never serialized.
    #[serde(
        serialize_with = "redact_headers",
        deserialize_with = "unredact_headers"
    )]
    pub headers: Vec<(String, String)>,
    /// Sent as `Authorization: Bearer` (`--api-key`, `OPENAI_API_KEY`); serialized as
    /// `<redacted>`, never as itself.
    #[serde(serialize_with = "redact_opt", deserialize_with = "unredact_opt")]
    pub api_key: Option<String>,
    /// Percentiles every stats object carries, on top of `FIXED_PERCENTILES` (`--percentiles`).
    pub percentiles: Vec<f64>,
    /// Per-request SLOs that define goodput (`--goodput`); empty: goodput is `null`.
    pub goodput: Vec<Slo>,
    /// Scheduling-lag p99 above this marks the run invalid (ms).
    pub max_lag_ms: f64,
    /// A chunk gap above this is a stall, ms (`--stall-ms`): the summary's `stalls` block
    /// counts them. A reading-speed budget: 250 ms is 4 tokens/s.
    #[serde(default = "default_stall_ms")]
    pub stall_ms: f64,
    /// Where `summary.json`, `requests.jsonl` and the exports are written (`--out`); `None`: no
    /// files.
    pub out_dir: Option<PathBuf>,
    /// Print the live progress line (stderr is a terminal).
    pub progress: bool,
    /// After an interrupt, how long in-flight requests may still finish (`--grace`).
    pub grace_ns: u64,
    /// Run even if another ringbench holds this endpoint's lock (`--allow-concurrent`).
    pub allow_concurrent: bool,
    /// Exports written beside `summary.json` when `out_dir` is set (`--export`).
    pub exports: Vec<ExportKind>,
    /// The per-request log's format in `out_dir` (`--records`): `requests.jsonl` or
    /// `requests.parquet`.
    #[serde(default)]
    pub records: RecordsFormat,
    /// `https://`: trust only this CA (PEM) instead of the system roots.
    pub cacert: Option<PathBuf>,
    /// `https://`: do not verify the server's certificate (a warning in the report).
    pub insecure: bool,
    /// Tokenizer, length distributions, dataset, shared prefixes, request options.
    pub workload: workload::WorkloadSpec,
    /// Kernel software receive stamps on every plain connection, the reads' stamps (on by
    /// default; `--no-rx-timestamps` turns them off).
    pub rx_timestamps: bool,
    /// How long before each send the pacer spins instead of sleeping, ns; `None` learns it
    /// from the timer's lateness (`--pacer-spin-us`, default auto).
    #[serde(default)]
    pub pacer_spin_ns: Option<u64>,
    /// A failure share above this percentage of measured sent requests fails the run's gate
    /// (exit 3); `None`: the run fails only when no measured request succeeded (`--max-failed`).
    #[serde(default)]
    pub max_failed_percent: Option<f64>,
    /// The server's own `/metrics`, scraped beside the run (`--server-metrics`).
    #[serde(default)]
    pub server_metrics: ServerMetricsSpec,
    /// Serve the run's own live figures as Prometheus text at `GET /metrics` on this address
    /// (`--metrics-listen`, `HOST:PORT`; port 0 picks one): `None`, no listener.
    #[serde(default)]
    pub metrics_listen: Option<String>,
    /// Send `x-request-id: <run id>-<request id>` with every request, so records join with
    /// the server's logs (off: `--no-request-id`; a `--header` of that name wins over it).
    pub request_id: bool,
    /// The run's id (`--run-id`): the first part of every request id. `None` until the run
    /// starts, which draws 8 hex digits at random and records them here (the summary's
    /// `config.run_id`).
    pub run_id: Option<String>,
    /// vLLM's result file as `vllm bench serve --save-result` names and fills it, written
    /// beside the run's own files (`--save-result`); `None`: only the `vllm_result.json`
    /// export of `out_dir`.
    #[serde(default)]
    pub vllm_result: Option<VllmResult>,
    /// The `ringbench run` flags this plan was made from, as `--long=value` (a config file's
    /// and the line's; the API key and secret-looking headers left out): `ringbench run
    /// --config DIR/summary.json` reads them back to rerun the run. Empty for a plan built in
    /// code; nothing in a run reads it.
    #[serde(default)]
    pub args: Vec<String>,
    /// This run is one shard of a run spread over several hosts (`--shard I/N`): it sends
    /// the arrivals (closed loop: the request ids) i with i mod N = I of the global schedule,
    /// and its share of the users and of the in-flight cap. `None`: the whole run.
    #[serde(default)]
    pub shard: Option<Shard>,
    /// The wall-clock instant the schedule starts at, Unix ns (`--start-at`), so that shards
    /// on several hosts start together; `None`: as soon as the workers are ready.
    #[serde(default)]
    pub start_at_unix_ns: Option<u64>,
    /// Conversations (`--turns`): the schedule's arrivals (closed loop: the users' claims)
    /// start sessions, and `--request-count` counts sessions. `None`: independent requests.
    #[serde(default)]
    pub sessions: Option<SessionSpec>,
    /// Requests the client aborts mid-answer (`--cancel-rate`, `--cancel-after`): counted as
    /// `cancelled_by_client`, not failures. `None`: none.
    #[serde(default)]
    pub cancel: Option<CancelSpec>,
}

/// `--save-result`: where vLLM's result JSON goes and what of vLLM's own arguments it
/// records. The figures come from the run's records (the run needs `out_dir`); these are the
/// setup keys vLLM writes from its arguments, kept as the user gave them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VllmResult {
    /// The file: `--result-dir` / (`--result-filename`, or vLLM's
    /// `{label}-{rate}qps[-concurrency{N}]-{model}-{YYYYmmdd-HHMMSS}.json`).
    pub path: PathBuf,
    /// Keep the per-request lists (`--save-detailed`).
    pub detailed: bool,
    /// The metrics whose mean/median/std/percentiles are written, of `ttft`, `tpot`, `itl`,
    /// `e2el` (`--percentile-metrics`; vLLM's default `ttft,tpot,itl`, `e2el` for a pooling
    /// endpoint).
    pub metrics: Vec<String>,
    /// `--metadata KEY=VALUE ...`: written as top-level keys.
    pub metadata: Vec<(String, String)>,
    /// `--backend` (vLLM's `backend` and `endpoint_type` keys).
    pub backend: String,
    /// `--label` (`None`: vLLM writes `null`).
    pub label: Option<String>,
    /// `--model` as given (vLLM's `model_id`).
    pub model_id: Option<String>,
    /// `--tokenizer` as given, else the model (vLLM's `tokenizer_id`).
    pub tokenizer_id: Option<String>,
    /// `--num-prompts`; `None` (a run stopped by `--duration`): the requests scheduled.
    pub num_prompts: Option<u64>,
    /// `--request-rate`; `None` is vLLM's `inf`.
    pub request_rate: Option<f64>,
    /// `--burstiness` (vLLM's default 1).
    pub burstiness: f64,
    /// `--max-concurrency`.
    pub max_concurrency: Option<u32>,
}

/// The metric names `--percentile-metrics` takes (vLLM's).
pub const VLLM_METRICS: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];

/// Whether and what to scrape of the server's own metrics (`--server-metrics [URL...]`,
/// `--server-metrics-interval`, `--no-server-metrics`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerMetricsSpec {
    /// `false`: nothing is scraped (`--no-server-metrics`).
    pub enabled: bool,
    /// The `/metrics` URLs, scraped whatever a probe says. Empty: `<base>/metrics` of the
    /// target (or of the built-in simulator), scraped when one probe before the run finds
    /// Prometheus text there.
    pub urls: Vec<String>,
    /// Time between scrapes, ns: 100 ms to 1 h (default 1 s); with `prometheus`, the range
    /// queries' step.
    pub interval_ns: u64,
    /// Read the server's metrics after the run from this Prometheus server's query API, over
    /// the measured window, instead of scraping them (`--prometheus URL`).
    pub prometheus: Option<String>,
    /// Label matchers merged into every Prometheus query, like `{pod=~"vllm-.*"}`
    /// (`--prometheus-selector SEL`); `None`: none.
    pub prometheus_selector: Option<String>,
}

/// Shortest `--server-metrics-interval`.
pub const MIN_SCRAPE_INTERVAL_NS: u64 = 100_000_000;

impl Default for ServerMetricsSpec {
    fn default() -> Self {
        ServerMetricsSpec {
            enabled: true,
            urls: vec![],
            interval_ns: 1_000_000_000,
            prometheus: None,
            prometheus_selector: None,
        }
    }
}

/// What a secret's value is written as.
pub const REDACTED: &str = "<redacted>";

/// `--stall-ms`'s default: a gap of 250 ms between chunks is slower than 4 tokens/s, below
/// a reader's pace.
pub const DEFAULT_STALL_MS: f64 = 250.0;

fn default_stall_ms() -> f64 {
    DEFAULT_STALL_MS
}

impl Plan {
    /// The run id requests carry, when they carry ours: `request_id` on, a run id resolved,
    /// and no `--header` of the same name (the user's wins).
    pub fn sent_run_id(&self) -> Option<RunId> {
        let user_has_it = self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(run_id::HEADER));
        match (self.request_id && !user_has_it, &self.run_id) {
            (true, Some(id)) => RunId::new(id).ok(),
            _ => None,
        }
    }
}

/// Header names whose values must never reach any output.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "authorization",
        "api-key",
        "api_key",
        "apikey",
        "token",
        "secret",
        "cookie",
        "password",
    ]
    .iter()
    .any(|s| n.contains(s))
}

fn redact_headers<S: serde::Serializer>(h: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(h.len()))?;
    for (k, v) in h {
        let shown = if is_secret_header(k) {
            REDACTED
        } else {
            v.as_str()
        };
        m.serialize_entry(k, shown)?;
    }
    m.end()
}

/// The headers as a `summary.json` shows them, in their order: a redacted value stays
/// redacted (it is never sent again from a file; give it anew with `--header`).
fn unredact_headers<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, String)>, D::Error> {
    struct InOrder;
    impl<'de> serde::de::Visitor<'de> for InOrder {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of header names to values")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(pair) = m.next_entry()? {
                out.push(pair);
            }
            Ok(out)
        }
    }
    d.deserialize_map(InOrder)
}

/// A redacted API key read back is no key: it must be given again.
fn unredact_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<String>::deserialize(d)?;
    Ok(v.filter(|k| k != REDACTED))
}

fn redact_opt<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(_) => s.serialize_str(REDACTED),
        None => s.serialize_none(),
    }
}

/// Longest the pacer may spin before a send, ns (`--pacer-spin-us` at most 200): a timer's
/// lateness beyond this is preemption, not timer slop, and spinning for it would burn a core.
pub const MAX_SPIN_NS: u64 = 200_000;

/// `percentiles` when `--percentiles` is not given.
pub const DEFAULT_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

impl Default for Plan {
    fn default() -> Self {
        Plan::defaults()
    }
}

impl Plan {
    /// A plan with the CLI's defaults: closed loop at 1 user, 100 requests, built-in simulator.
    pub fn defaults() -> Self {
        Plan {
            targets: vec![],
            url_policy: UrlPolicy::default(),
            sim: Some(SimSettings::default()),
            endpoint: Endpoint::Chat,
            api: ApiOptions::default(),
            model: None,
            load: Load::Closed { concurrency: 1 },
            stop: Stop {
                request_count: Some(100),
                duration_ns: None,
            },
            ramp_up_ns: None,
            stages: vec![],
            users_ramp_ns: None,
            warmup_requests: 0,
            warmup_duration_ns: 0,
            input_tokens: 128,
            output_tokens: 16,
            stream: true,
            include_usage: true,
            seed: 0,
            cpus: vec![0],
            io_driver: IoDriver::Auto,
            request_timeout_ns: 600_000_000_000,
            connect_timeout_ns: 10_000_000_000,
            wait_ready_ns: None,
            headers: vec![],
            api_key: None,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            goodput: vec![],
            max_lag_ms: 1.0,
            stall_ms: DEFAULT_STALL_MS,
            out_dir: None,
            progress: false,
            grace_ns: 5_000_000_000,
            allow_concurrent: false,
            exports: ExportKind::ALL.to_vec(),
            records: RecordsFormat::Jsonl,
            cacert: None,
            insecure: false,
            workload: workload::WorkloadSpec::default(),
            rx_timestamps: true,
            pacer_spin_ns: None,
            max_failed_percent: None,
            server_metrics: ServerMetricsSpec::default(),
            metrics_listen: None,
            request_id: true,
            run_id: None,
            vllm_result: None,
            args: vec![],
            shard: None,
            start_at_unix_ns: None,
            sessions: None,
            cancel: None,
        }
    }

    /// The shard this plan runs (`Shard::WHOLE` unless `--shard` was given).
    pub fn this_shard(&self) -> Shard {
        self.shard.unwrap_or(Shard::WHOLE)
    }

    /// The arrival rate asked for, req/s: `--request-rate`, or a trace's own rate × its speed-up;
    /// `None` in a closed loop (`target.request_rate` in `summary.json`).
    pub fn target_rate(&self) -> Option<f64> {
        match self.load {
            Load::Open { request_rate, .. } => Some(request_rate),
            Load::Trace(ref t) => t.request_rate,
            Load::Closed { .. } => None,
        }
    }

    /// `max_tokens` when every request asks the same, which the OSL check compares usage
    /// with; `None` when lengths vary (a distribution, a dataset's own lengths, a trace).
    pub fn fixed_output_tokens(&self) -> Option<u32> {
        use workload::LengthDist;
        match (&self.load, &self.workload.output, &self.workload.dataset) {
            (Load::Trace(_), _, _) => None,
            (_, Some(LengthDist::Fixed { tokens }), _) => Some(*tokens),
            (_, Some(_), _) | (_, None, Some(_)) => None,
            (_, None, None) => Some(self.output_tokens),
        }
    }

    /// The virtual users of a closed loop, or an open loop's `--max-concurrency`
    /// (`target.concurrency` in `summary.json`).
    pub fn target_concurrency(&self) -> Option<u32> {
        match self.load {
            Load::Closed { concurrency } => Some(concurrency),
            Load::Open {
                max_concurrency, ..
            } => max_concurrency,
            Load::Trace(ref t) => t.max_concurrency,
        }
    }
}

/// The per-request log's format (`--records`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordsFormat {
    /// `requests.jsonl`: one JSON line per record (`record::jsonl`).
    #[default]
    Jsonl,
    /// `requests.parquet`: typed columns in row groups (`record::arrow`).
    Parquet,
}

impl RecordsFormat {
    /// Every format.
    pub const ALL: [RecordsFormat; 2] = [RecordsFormat::Jsonl, RecordsFormat::Parquet];

    /// Its `--records` name.
    pub fn name(self) -> &'static str {
        match self {
            RecordsFormat::Jsonl => "jsonl",
            RecordsFormat::Parquet => "parquet",
        }
    }

    /// The inverse of `name`; an unknown name is refused with the names there are.
    pub fn parse(s: &str) -> Result<RecordsFormat, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "`{s}` is not a records format; one of: {}",
                    names.join(", ")
                )
            })
    }
}

/// One export format (`--export vllm,aiperf,csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportKind {
    /// `vllm_result.json`, as `vllm bench serve --save-result` writes it.
    Vllm,
    /// `profile_export_aiperf.json` and `profile_export.jsonl`, as AIPerf writes them.
    Aiperf,
    /// `summary.csv`: one row per metric and statistic of `summary.json`.
    Csv,
}

impl ExportKind {
    /// Every export, in the order they are written.
    pub const ALL: [ExportKind; 3] = [ExportKind::Vllm, ExportKind::Aiperf, ExportKind::Csv];

    /// Its `--export` name (`vllm`, `aiperf`, `csv`).
    pub fn name(self) -> &'static str {
        match self {
            ExportKind::Vllm => "vllm",
            ExportKind::Aiperf => "aiperf",
            ExportKind::Csv => "csv",
        }
    }

    /// `vllm,csv` → kinds; `all` or nothing → every kind; `none` → no export.
    pub fn parse_list(items: &[String]) -> Result<Vec<ExportKind>, String> {
        let mut kinds = Vec::new();
        for item in items.iter().map(|s| s.trim().to_ascii_lowercase()) {
            match item.as_str() {
                "all" => kinds.extend(Self::ALL),
                "none" => {}
                other => match Self::ALL.into_iter().find(|k| k.name() == other) {
                    Some(k) => kinds.push(k),
                    None => {
                        return Err(format!(
                        "--export: unknown format '{other}' (use vllm, aiperf, csv, all or none)"
                    ))
                    }
                },
            }
        }
        kinds.dedup();
        Ok(kinds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_ipv6_brackets_default_ports_and_prefixes() {
        let t = |u: &str| {
            Target::parse(u).map(|t| (t.host.clone(), t.port, t.base_path.clone(), t.host_header()))
        };
        let ok = |h: &str, p: u16, b: &str, hh: &str| {
            Ok((h.to_string(), p, b.to_string(), hh.to_string()))
        };
        assert_eq!(t("http://h:8000"), ok("h", 8000, "", "h:8000"));
        assert_eq!(t("http://h"), ok("h", 80, "", "h"));
        assert_eq!(t("https://h/m/v1/"), ok("h", 443, "/m", "h"));
        assert_eq!(t("https://[::1]/m"), ok("::1", 443, "/m", "[::1]"));
        assert_eq!(t("http://[::1]:8000"), ok("::1", 8000, "", "[::1]:8000"));
        assert_eq!(
            t("http://[fe80::1]:80/"),
            ok("fe80::1", 80, "", "[fe80::1]")
        );
        for bad in [
            "http://::1:8000",
            "http://[::1",
            "http://[::1]x",
            "http://h:x",
            "http://:80",
            "h:80",
            "http://u@h",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad} must be refused");
        }
        let e = Target::parse("http://::1:8000").unwrap_err();
        assert!(e.0.contains("brackets"), "{}", e.0);
    }

    #[test]
    fn a_config_with_one_target_or_none_reads_back_as_targets() {
        let t = Target::parse("http://h:8000/p").unwrap();
        let one = serde_json::json!({ "target": t });
        let plan: Plan = serde_json::from_value(one).unwrap();
        assert_eq!(
            plan.targets,
            vec![t.clone()],
            "an older summary's single target"
        );
        let none: Plan = serde_json::from_value(serde_json::json!({ "target": null })).unwrap();
        assert!(none.targets.is_empty(), "null: the simulator");
        let mut many = Plan::defaults();
        many.targets = vec![t.clone(), Target::parse("https://g").unwrap()];
        many.url_policy = UrlPolicy::LeastInFlight;
        let back: Plan = serde_json::from_value(serde_json::to_value(&many).unwrap()).unwrap();
        assert_eq!(
            (back.targets, back.url_policy),
            (many.targets, many.url_policy)
        );
    }

    #[test]
    fn secrets_never_serialize() {
        let mut p = Plan::defaults();
        p.api_key = Some("sk-very-secret".into());
        p.headers = vec![
            ("Authorization".into(), "Bearer sk-other".into()),
            ("X-Trace".into(), "visible".into()),
        ];
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains("sk-very-secret") && !json.contains("sk-other"));
        assert!(json.contains("visible"));
    }
}
