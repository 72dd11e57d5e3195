//! The validated run description: `cli` turns raw flags into a `Plan`, and everything after
//! it (schedule, workers, collector, report) reads only the `Plan`. A `Plan` that exists is
//! valid; checks live in `cli`/`Plan::check`, never on the hot path.

use serde::Serialize;
use std::path::PathBuf;

/// Which OpenAI-compatible route to call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    Chat,
    Completions,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
        }
    }
}

/// Open-loop arrival process.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    Poisson,
    Constant,
    /// Gamma-distributed gaps with shape `burstiness` (1 = Poisson; < 1 burstier).
    Gamma {
        burstiness: f64,
    },
}

/// How load is offered.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Load {
    /// N virtual users, each sending its next request when the previous one ended.
    Closed { concurrency: u32 },
    /// Requests at their scheduled times, whether or not earlier ones finished.
    Open {
        request_rate: f64,
        arrival: Arrival,
        max_concurrency: Option<u32>,
    },
    /// Requests at the times a trace recorded (`--trace`), divided by the speed-up.
    Trace(crate::prepare::trace::TraceLoad),
}

/// When to stop sending. At least one is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stop {
    /// Measured requests (warm-up requests come on top).
    pub request_count: Option<u64>,
    pub duration_ns: Option<u64>,
}

/// Which I/O driver the workers' runtimes use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum IoDriver {
    /// io_uring where the kernel allows it, else epoll.
    Auto,
    Uring,
    Epoll,
}

/// A per-request SLO (`--goodput ttft:500`): the metric's value must be ≤ `max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Slo {
    pub metric: SloMetric,
    pub max_ms: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    Ttft,
    Tpot,
    /// Every chunk gap of the request must be within bound (vLLM's meaning).
    Itl,
    E2e,
    Ntpot,
}

/// The server under test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Target {
    /// As the user gave it (no credentials are ever in it: they go in headers).
    pub url: String,
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Path prefix before `/v1/...` (usually empty).
    pub base_path: String,
}

/// Settings of the in-process simulator started when no `--url` is given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimSettings {
    pub ttft_ms: f64,
    pub itl_ms: f64,
    pub tokens_per_chunk: u32,
    pub cpus: Vec<usize>,
    /// Faults injected by the built-in simulator (`--sim-fault`).
    pub faults: crate::sim::fault::FaultConfig,
    /// Load model (0 = off): extra TTFT/ITL ms per other request in flight.
    pub ttft_per_inflight_ms: f64,
    pub itl_per_inflight_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// `None`: start the built-in simulator and benchmark it.
    pub target: Option<Target>,
    pub sim: Option<SimSettings>,
    pub endpoint: Endpoint,
    /// `None`: ask `GET /v1/models` for the first model.
    pub model: Option<String>,
    pub load: Load,
    pub stop: Stop,
    pub warmup_requests: u64,
    pub warmup_duration_ns: u64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub stream: bool,
    pub include_usage: bool,
    pub seed: u64,
    /// One pinned worker per CPU.
    pub cpus: Vec<usize>,
    pub io_driver: IoDriver,
    pub request_timeout_ns: u64,
    pub connect_timeout_ns: u64,
    /// Sent on every request. Values of secret-looking headers are never serialized.
    #[serde(serialize_with = "redact_headers")]
    pub headers: Vec<(String, String)>,
    #[serde(serialize_with = "redact_opt")]
    pub api_key: Option<String>,
    pub percentiles: Vec<f64>,
    pub goodput: Vec<Slo>,
    /// Scheduling-lag p99 above this marks the run invalid (ms).
    pub max_lag_ms: f64,
    pub out_dir: Option<PathBuf>,
    /// Print the live progress line (stderr is a terminal).
    pub progress: bool,
    /// After an interrupt, how long in-flight requests may still finish (`--grace`).
    pub grace_ns: u64,
    /// Run even if another ringbench holds this endpoint's lock (`--allow-concurrent`).
    pub allow_concurrent: bool,
    /// Exports written beside `summary.json` when `out_dir` is set (`--export`).
    pub exports: Vec<crate::output::export::ExportKind>,
    /// `https://`: trust only this CA (PEM) instead of the system roots.
    pub cacert: Option<PathBuf>,
    /// `https://`: do not verify the server's certificate (a warning in the report).
    pub insecure: bool,
    /// Tokenizer, length distributions, dataset, shared prefixes, request options.
    pub workload: crate::prepare::WorkloadSpec,
    /// Kernel software receive stamps on every plain connection (`--rx-timestamps`).
    pub rx_timestamps: bool,
    /// How long before each send the pacer spins instead of sleeping, ns; `None` learns it
    /// from the timer's lateness (`--pacer-spin-us`, default auto).
    #[serde(default)]
    pub pacer_spin_ns: Option<u64>,
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
            "<redacted>"
        } else {
            v.as_str()
        };
        m.serialize_entry(k, shown)?;
    }
    m.end()
}

fn redact_opt<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(_) => s.serialize_str("<redacted>"),
        None => s.serialize_none(),
    }
}

pub const DEFAULT_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

impl Plan {
    /// A plan with the CLI's defaults: closed loop at 1 user, 100 requests, built-in simulator.
    pub fn defaults() -> Self {
        Plan {
            target: None,
            sim: Some(SimSettings {
                ttft_ms: 0.0,
                itl_ms: 0.0,
                tokens_per_chunk: 1,
                cpus: vec![],
                faults: crate::sim::fault::FaultConfig::default(),
                ttft_per_inflight_ms: 0.0,
                itl_per_inflight_ms: 0.0,
            }),
            endpoint: Endpoint::Chat,
            model: None,
            load: Load::Closed { concurrency: 1 },
            stop: Stop {
                request_count: Some(100),
                duration_ns: None,
            },
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
            headers: vec![],
            api_key: None,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            goodput: vec![],
            max_lag_ms: 1.0,
            out_dir: None,
            progress: false,
            grace_ns: 5_000_000_000,
            allow_concurrent: false,
            exports: crate::output::export::ALL.to_vec(),
            cacert: None,
            insecure: false,
            workload: crate::prepare::WorkloadSpec::default(),
            rx_timestamps: false,
            pacer_spin_ns: None,
        }
    }

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
        use crate::prepare::lengths::LengthDist;
        match (&self.load, &self.workload.output, &self.workload.dataset) {
            (Load::Trace(_), _, _) => None,
            (_, Some(LengthDist::Fixed { tokens }), _) => Some(*tokens),
            (_, Some(_), _) | (_, None, Some(_)) => None,
            (_, None, None) => Some(self.output_tokens),
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

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
