//! The binary's first layer: raw flags, as the user typed them, turned into what the library
//! runs (a `Plan`, a study's settings, the simulator's settings). A bad flag yields a
//! `UsageError` that names the flag and the fix (exit code 2). Flag names follow `vllm bench
//! serve` and AIPerf where the meaning is the same. Only the binary uses this module; the
//! library's users build a `Plan` themselves.
//!
//! - `config`: `--config FILE` (TOML, YAML, a run's `summary.json`) read into flags;
//! - `compat_flags` and `compat`: `vllm bench serve`'s and `aiperf profile`'s spellings, and
//!   their lowering to ours (with the plan's entry points, `RunArgs::to_plan`/`run_plan`);
//! - `defaults`: the flags' defaults, from `Plan::defaults()`;
//! - `heading`: the headings of `run --help`;
//! - `parse`: single flag values (durations, CPU lists, URLs, SLOs, headers, percentiles);
//! - `run_args`: `run`'s flags → `Plan` (then `Plan::validate`);
//! - `workload_args`: the workload flags → `WorkloadSpec`, `--trace` → the load;
//! - `sim_args`: the simulator's flags, one list for `sim` and `run --sim-*`;
//! - `study_args`: `sweep`, `search` and `compare`;
//! - `k8s`: `k8s manifest`, a run's flags made into a Kubernetes Indexed Job.

pub mod api_args;
pub mod compat;
pub mod compat_flags;
pub mod config;
pub mod defaults;
pub mod heading;
pub mod k8s;
pub mod parse;
pub mod run_args;
pub mod session_args;
pub mod sim_args;
pub mod study_args;
pub mod term;
pub mod workload_args;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use parse::{check_percentiles, parse_duration_ns, parse_slo};
use ringbench::plan::IoDriver;
pub use run_args::RunArgs;
pub use sim_args::SimArgs;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ringbench",
    version,
    about = "Load generator for LLM inference servers that measures its own overhead",
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One benchmark. With no --url it starts the built-in simulator and benchmarks it.
    ///
    /// Exit status: 0 ran and valid; 1 error; 2 bad usage; 3 the --max-failed gate failed;
    /// 4 the client's own overhead made the run invalid (--allow-invalid: 0); 5 no measured
    /// request succeeded; 130 stopped by a signal.
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
    Sweep(Box<study_args::SweepArgs>),
    /// The highest concurrency (or rate) that meets the SLOs, found adaptively.
    ///
    /// Exit status: 0 when a passing load was found (converged or not: the last line says
    /// which); 3 when even the lowest load probed fails the SLOs; 1 on an error; 2 on bad
    /// usage.
    #[command(mut_arg("self_check", |a| a.hide(true)))]
    Search(Box<study_args::SearchArgs>),
    /// Two runs or sweeps side by side.
    Compare(study_args::CompareArgs),
    /// One run from the folders of its shards (run --shard I/N), recomputed from their records.
    ///
    /// Exit status: as `run` (the merged run is valid only if every shard was and none is
    /// missing); 1 when the folders are not the shards of one run, or shards are missing or
    /// duplicated (without --allow-incomplete).
    Merge(MergeArgs),
    /// Kubernetes: `k8s manifest --shards N [run flags]` prints an Indexed Job of N shards.
    K8s(k8s::K8sArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' `ringbench run --shard I/N --out` folders.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged run's files go (summary.json, requests.jsonl, run.json, .hlog, exports).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Merge even when shards are missing or given twice: the result is marked incomplete
    /// (and invalid).
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Which exports to write (comma-separated; default all).
    #[arg(long, value_delimiter = ',')]
    pub export: Option<Vec<String>>,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Rates to try, rising, req/s, comma-separated [default: 1000 to 40000, 9 steps].
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub rates: Option<Vec<f64>>,
    /// Length of each point.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = "10s")]
    pub duration: u64,
    /// max_tokens of every request.
    #[arg(long, value_name = "N", default_value_t = defaults::plan().output_tokens)]
    pub output_tokens: u32,
    /// Prompt length, tokens.
    #[arg(long, value_name = "N", default_value_t = defaults::plan().input_tokens)]
    pub input_tokens: u32,
    /// Client CPUs [default: the first].
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Simulator CPUs [default: another CPU than the client's where there is one].
    #[arg(long, value_name = "LIST")]
    pub sim_cpus: Option<String>,
    /// The workers' I/O driver.
    #[arg(long, value_enum, default_value_t = defaults::plan().io_driver)]
    pub io_driver: IoDriver,
    /// Scheduling-lag p99 bound for a rate to count as held (a bare number is ms).
    #[arg(long, value_name = "D", value_parser = parse::parse_ms, default_value = defaults::shown().max_lag.as_str())]
    pub max_lag: f64,
    /// Stop after this many rates in a row are not held.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub stop_after: usize,
    /// Seeds the prompts and arrivals.
    #[arg(long, value_name = "N", default_value_t = defaults::plan().seed)]
    pub seed: u64,
    /// Write calibrate.json here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl CalibrateArgs {
    pub fn to_config(&self) -> Result<ringbench::study::calibrate::CalibrateConfig, UsageError> {
        let rates = self.rates.clone().unwrap_or_else(|| {
            ringbench::study::calibrate::CalibrateConfig::DEFAULT_RATES.to_vec()
        });
        if rates.is_empty() || rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return usage("--rates: give rates above 0, like 1000,5000,10000");
        }
        if !(self.max_lag.is_finite() && self.max_lag > 0.0) {
            return usage("--max-lag: must be above 0, like 1ms or 500us");
        }
        let (client, sim) = parse::cpus_of(self.cpus.as_deref(), self.sim_cpus.as_deref())?;
        Ok(ringbench::study::calibrate::CalibrateConfig {
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
    pub definitions: Vec<ringbench::report::Definitions>,
    /// Write summary.json, the exports and the .hlog interval logs here (as a run does).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Which exports --out writes (comma-separated; default all).
    #[arg(long, value_delimiter = ',')]
    pub export: Option<Vec<String>>,
}

impl ReportArgs {
    /// What the report changes in the run's settings, and which exports `--out` writes.
    pub fn resolve(
        &self,
    ) -> Result<
        (
            ringbench::report::Overrides,
            Vec<ringbench::plan::ExportKind>,
        ),
        UsageError,
    > {
        let exports = parse::exports_of(self.export.as_deref())?;
        Ok((self.overrides()?, exports))
    }

    fn overrides(&self) -> Result<ringbench::report::Overrides, UsageError> {
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
        Ok(ringbench::report::Overrides {
            percentiles,
            goodput,
        })
    }
}

/// Why the command line could not be read.
#[derive(Debug)]
pub enum ParseError {
    /// clap's own (help and version included: `exit` prints them), with a note naming the
    /// flags `--config`'s file gave, when it gave any.
    Clap(clap::Error, Option<String>),
    /// `--config`'s file cannot be used.
    Usage(UsageError),
}

impl From<UsageError> for ParseError {
    fn from(e: UsageError) -> Self {
        ParseError::Usage(e)
    }
}

/// The command line read: for `run`, `sweep` and `search`, `--config FILE`'s flags go before
/// the line's own (a flag on the line replaces the file's), then clap parses the whole as one
/// line; `run` also learns which flags were given and keeps them for `summary.json`.
pub fn parse<I, T>(argv: I) -> Result<Cli, ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let mut cmd = Cli::command();
    let mut m = cmd
        .try_get_matches_from_mut(argv.clone())
        .map_err(|e| ParseError::Clap(e, None))?;
    let mut rerun_of = None;
    if let Some((name, sub_m)) = m.subcommand() {
        if let Some(path) = config::path_of(sub_m) {
            let loaded = config::load(&path)?;
            let sub = cmd.find_subcommand(name).expect("the matched subcommand");
            let file_args = config::to_args(&loaded, &path, sub, sub_m)?;
            let at = argv
                .iter()
                .skip(1)
                .position(|a| a == name)
                .map_or(argv.len(), |i| i + 2);
            let mut merged = argv[..at].to_vec();
            merged.extend(file_args.iter().cloned());
            merged.extend_from_slice(&argv[at..]);
            let shown: Vec<String> = file_args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let note = format!(
                "from --config {}: {}",
                path.display(),
                if shown.is_empty() {
                    "no flag (the line gives them all)".to_string()
                } else {
                    shown.join(" ")
                }
            );
            m = cmd
                .try_get_matches_from_mut(merged)
                .map_err(|e| ParseError::Clap(e, Some(note)))?;
            rerun_of = loaded.recorded.map(|r| (path, r));
        }
    }
    let mut cli = Cli::from_arg_matches(&m).map_err(|e| ParseError::Clap(e, None))?;
    if let (Command::Run(run), Some(sub_m)) = (&mut cli.command, m.subcommand_matches("run")) {
        let sub = cmd.find_subcommand("run").expect("run is a subcommand");
        run.given = sub
            .get_arguments()
            .map(|a| a.get_id().as_str())
            .filter(|id| sub_m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
            .map(str::to_string)
            .collect();
        run.args = config::given_args(sub, sub_m);
        run.rerun_of = rerun_of;
    }
    Ok(cli)
}

/// A flag that cannot be used as given: the message names it and says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}
