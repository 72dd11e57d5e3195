//! Part of the CLI (the binary's first layer: raw flags → `Plan`): `ringbench run`'s flags and
//! their mapping to a `Plan`. The mapping only translates (defaults, units, which flags make
//! which load); every rule between settings is `Plan::validate`'s, called at the end, so the
//! CLI and a library user hit the same rules with the same messages.

use super::parse::{
    check_percentiles, exports_of, parse_duration_ns, parse_endpoint, parse_header, parse_slo,
    parse_target,
};
use super::sim_args::RunSimFlags;
use super::{usage, UsageError};
use clap::{Args, ValueEnum};
use ringbench::plan::{
    Arrival, Endpoint, IoDriver, Load, Plan, ServerMetricsSpec, Stop, DEFAULT_PERCENTILES,
};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    Poisson,
    Constant,
    Gamma,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Base URL of the server (http://host:port); none: benchmark the built-in simulator.
    #[arg(long)]
    pub url: Option<String>,
    /// chat or completions, or the path: /v1/chat/completions, /v1/completions [default: chat;
    /// with vLLM's spellings, vLLM's /v1/completions].
    #[arg(long, value_name = "KIND|PATH", value_parser = parse_endpoint)]
    pub endpoint: Option<Endpoint>,
    /// Model name sent in the body (default: first of GET /v1/models).
    #[arg(short = 'm', long, alias = "model-names")]
    pub model: Option<String>,
    /// Closed loop: N virtual users.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Open loop: requests per second; inf sends them all at once (vLLM's meaning: a closed
    /// loop of --max-concurrency users, or of one user per request).
    #[arg(long)]
    pub request_rate: Option<f64>,
    /// Arrival process of --request-rate [default: poisson; gamma when --burstiness is given].
    #[arg(long, value_enum, requires = "request_rate")]
    pub arrival: Option<ArrivalArg>,
    /// Gamma shape of the arrivals (1 = Poisson, < 1 burstier; vLLM's meaning).
    #[arg(long)]
    pub burstiness: Option<f64>,
    /// Cap on in-flight requests in open loop (--request-rate or --trace).
    #[arg(long)]
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
    /// Prompt length, tokens [default: 128].
    #[arg(long)]
    pub input_tokens: Option<u32>,
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
    #[arg(long, default_value_t = 0, alias = "random-seed")]
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
    /// Extra header K:V (or vLLM's K=V) on every request (repeatable); secret-looking values
    /// are never written out.
    #[arg(long = "header", value_name = "K:V", num_args = 1..)]
    pub headers: Vec<String>,
    /// Send no x-request-id [default: every request carries x-request-id: RUN-ID, its
    /// arrival index; requests.jsonl keeps it and any id the server echoes].
    #[arg(long)]
    pub no_request_id: bool,
    /// The run's id, first part of every x-request-id (1-23 of A-Z a-z 0-9 . _ -)
    /// [default: 8 random hex digits, in summary.json's config.run_id].
    #[arg(long, value_name = "ID", conflicts_with = "no_request_id")]
    pub run_id: Option<String>,
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Built-in simulator's CPUs (default: the first CPU the workers do not use).
    #[arg(long)]
    pub sim_cpus: Option<String>,
    #[command(flatten)]
    pub sim: RunSimFlags,
    /// No live progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
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
    pub dataset_format: Option<ringbench::plan::workload::DatasetKind>,
    /// Order items are taken in: sequential, random (with replacement) or shuffle; seeded.
    #[arg(long, value_enum, default_value = "sequential", requires = "dataset")]
    pub dataset_sampling: ringbench::plan::workload::Sampling,
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
    /// Let prompts repeat: no per-request salt at the start of each prompt, no per-run nonce
    /// (a run longer than the 1,024 built prompts, and every rerun, sends them again).
    #[arg(long)]
    pub no_prompt_salt: bool,
    /// The run's salt nonce (summary.json's config.workload.prompt_nonce): a rerun with it
    /// sends the same bytes [default: random per run, so every run meets a cold cache].
    #[arg(long, value_name = "N", conflicts_with = "no_prompt_salt")]
    pub prompt_nonce: Option<u64>,
    /// Replay a timestamped trace (Mooncake JSONL: timestamp ms, input_length,
    /// output_length, optional hash_ids): every line sent at its recorded time.
    #[arg(long, value_name = "FILE", conflicts_with_all = TRACE_CONFLICTS)]
    pub trace: Option<PathBuf>,
    /// Tokens per hash_ids entry in the trace (Mooncake: 512).
    #[arg(long, value_name = "N", default_value_t = ringbench::plan::workload::DEFAULT_BLOCK_SIZE, requires = "trace")]
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
    /// Fail the run's gate (exit 3) when more than PCT % of the measured requests sent
    /// failed [default: fail (exit 5) only when none succeeded].
    #[arg(long, value_name = "PCT")]
    pub max_failed: Option<f64>,
    /// Scrape the server's own Prometheus metrics beside the run: these /metrics URLs, or
    /// with no URL <base>/metrics [default: probe <base>/metrics once before the run and
    /// scrape it if it answers Prometheus text].
    #[arg(long, value_name = "URL", num_args = 0.., conflicts_with = "no_server_metrics")]
    pub server_metrics: Option<Vec<String>>,
    /// Time between scrapes of the server's metrics (100ms to 1h).
    #[arg(long, value_name = "D", default_value = "1s", value_parser = parse_duration_ns)]
    pub server_metrics_interval: u64,
    /// Do not probe or scrape the server's metrics.
    #[arg(long)]
    pub no_server_metrics: bool,
    /// Instead of scraping /metrics, query this Prometheus server (http://host:9090) after
    /// the run over the measured window, a step every --server-metrics-interval: for servers
    /// behind a service, where one pod's /metrics is not the whole picture.
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Label matchers merged into every --prometheus query, like '{pod=~"vllm-.*"}'
    /// [default: none].
    #[arg(long, value_name = "SEL")]
    pub prometheus_selector: Option<String>,
    #[command(flatten)]
    pub vllm: super::compat::VllmFlags,
    #[command(flatten)]
    pub aiperf: super::compat::AiperfFlags,
}

/// `--pacer-spin-us`: `None` is auto; otherwise ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinUs(pub Option<u64>);

fn parse_spin_us(s: &str) -> Result<SpinUs, String> {
    if s == "auto" {
        return Ok(SpinUs(None));
    }
    let max_us = ringbench::plan::MAX_SPIN_NS / 1000;
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
/// The prompt length when no flag sets it.
pub const DEFAULT_INPUT_TOKENS: u32 = 128;

impl RunArgs {
    /// The plan these flags ask for, validated: vLLM's and AIPerf's spellings lowered to ours
    /// first (`compat::lower`), then ours mapped.
    pub fn to_plan(&self) -> Result<Plan, UsageError> {
        let (ours, vllm_result) = super::compat::lower(self)?;
        ours.plan_of(vllm_result)
    }

    /// The input length asked for (`--input-tokens`, or the default).
    pub fn input_tokens(&self) -> u32 {
        self.input_tokens.unwrap_or(DEFAULT_INPUT_TOKENS)
    }

    /// The plan of ringbench's own flags (vLLM's and AIPerf's already lowered).
    fn plan_of(
        &self,
        vllm_result: Option<ringbench::plan::VllmResult>,
    ) -> Result<Plan, UsageError> {
        let target = self.url.as_deref().map(parse_target).transpose()?;
        let load = self.load()?;
        // A trace sends each of its lines once (warm-up ones included).
        let stop = match &load {
            Load::Trace(t) => super::workload_args::trace_stop(t, self.warmup_requests)?,
            _ => self.stop(),
        };
        let (cpus, sim_cpus) =
            super::parse::cpus_of(self.cpus.as_deref(), self.sim_cpus.as_deref())?;
        // The simulator's settings are kept whenever they matter or were given, so that
        // `validate` can refuse them beside --url.
        let sim = (target.is_none() || self.sim.any_set() || self.sim_cpus.is_some()).then(|| {
            self.sim
                .settings(sim_cpus, "ringbench-sim".into(), self.seed)
        });
        let plan = Plan {
            target,
            sim,
            endpoint: self.endpoint.unwrap_or(Endpoint::Chat),
            model: self.model.clone(),
            load,
            stop,
            warmup_requests: self.warmup_requests,
            warmup_duration_ns: self.warmup_duration.unwrap_or(0),
            input_tokens: self.input_tokens(),
            output_tokens: self.output_tokens.unwrap_or(DEFAULT_OUTPUT_TOKENS),
            stream: !self.no_stream,
            include_usage: !self.no_usage,
            seed: self.seed,
            cpus,
            io_driver: self.io_driver,
            request_timeout_ns: self.request_timeout,
            connect_timeout_ns: self.connect_timeout,
            headers: self
                .headers
                .iter()
                .map(|s| parse_header(s))
                .collect::<Result<_, _>>()?,
            api_key: self.api_key.clone().filter(|k| !k.is_empty()),
            percentiles: match &self.percentiles {
                Some(ps) => check_percentiles(ps)?,
                None => DEFAULT_PERCENTILES.to_vec(),
            },
            goodput: self
                .goodput
                .iter()
                .map(|s| parse_slo(s))
                .collect::<Result<_, _>>()?,
            max_lag_ms: self.max_lag,
            out_dir: self.out.clone(),
            progress: !self.quiet,
            grace_ns: self.grace,
            allow_concurrent: self.allow_concurrent,
            exports: exports_of(self.export.as_deref())?,
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            workload: super::workload_args::workload_of(self)?,
            rx_timestamps: self.rx_timestamps,
            pacer_spin_ns: self.pacer_spin_us.0,
            max_failed_percent: self.max_failed,
            server_metrics: ServerMetricsSpec {
                enabled: !self.no_server_metrics,
                urls: self.server_metrics.clone().unwrap_or_default(),
                interval_ns: self.server_metrics_interval,
                prometheus: self.prometheus.clone(),
                prometheus_selector: self.prometheus_selector.clone(),
            },
            request_id: !self.no_request_id,
            run_id: self.run_id.clone(),
            vllm_result,
        };
        plan.validate().map_err(|e| UsageError(e.0))?;
        Ok(plan)
    }

    /// When to stop: the flags given, or 100 requests.
    fn stop(&self) -> Stop {
        match (self.request_count, self.duration) {
            (None, None) => Stop {
                request_count: Some(100),
                duration_ns: None,
            },
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
            return super::workload_args::trace_load_of(self);
        }
        let Some(rate) = self.request_rate else {
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
        let arrival = match (self.arrival, self.burstiness) {
            (Some(ArrivalArg::Gamma) | None, Some(k)) => Arrival::Gamma { burstiness: k },
            (Some(ArrivalArg::Gamma), None) => {
                return usage("--arrival gamma needs --burstiness K (1 is Poisson)")
            }
            (_, Some(_)) => return usage("--burstiness only applies to --arrival gamma"),
            (Some(ArrivalArg::Poisson) | None, None) => Arrival::Poisson,
            (Some(ArrivalArg::Constant), None) => Arrival::Constant,
        };
        Ok(Load::Open {
            request_rate: rate,
            arrival,
            max_concurrency: self.max_concurrency,
        })
    }
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
