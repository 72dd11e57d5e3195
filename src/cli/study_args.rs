//! Part of the CLI (raw flags → `Plan`): `sweep`, `search` and `compare`'s flags, turned
//! into a base `Plan` plus the sweep's own settings. Every `run` flag is `run`'s own
//! (`RunArgs`, flattened), so it applies to every point; `sweep` only widens `--concurrency`
//! and `--request-rate` to comma-separated lists. A bad flag is a `UsageError` naming it.

use super::parse::parse_duration_ns;
use super::{usage, RunArgs, UsageError};
use clap::{ArgAction, ArgMatches, Args, FromArgMatches};
use ringbench::plan::Plan;
use ringbench::study::search::SearchSpec;
use ringbench::study::sweep::{parse_grid, PointSpec};
use ringbench::summary::study::Axis;
use ringbench::summary::study::SloBound;
use std::path::PathBuf;

/// `sweep`'s own flags (besides the lists).
#[derive(Debug, Args)]
#[command(next_help_heading = "Sweep")]
pub struct SweepOwn {
    /// Log- or linear-spaced loads, like log:1:1000:8 (8 loads from 1 to 1000)
    ///
    /// log:1:1000:8 is 1, 3, 7, 19, 52, 139, 373, 1000.
    #[arg(long, value_name = "SPEC")]
    pub grid: Option<String>,
    /// What --grid's numbers are: concurrency or rate
    #[arg(
        long,
        value_enum,
        value_name = "AXIS",
        hide_possible_values = true,
        default_value = "concurrency"
    )]
    pub grid_axis: Axis,
    #[command(flatten)]
    pub common: CommonOwn,
}

/// Flags `sweep` and `search` share.
#[derive(Debug, Args)]
#[command(next_help_heading = "SLOs and repeats")]
pub struct CommonOwn {
    /// An SLO like ttft:p95<500ms, repeatable (bound bare: ms)
    ///
    /// METRIC:STAT<BOUND: any latency metric, a percentile pN, mean or max, and a bound in us,
    /// ms or s.
    #[arg(long = "slo", value_name = "SLO")]
    pub slos: Vec<String>,
    /// Runs per point: their median is used, their spread reported
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeats: u32,
    /// Idle gap between points (bare: s)
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = "1s")]
    pub cooldown: u64,
}

/// `ringbench sweep`: every `run` flag, with `--concurrency`/`--request-rate` as lists.
#[derive(Debug)]
pub struct SweepArgs {
    pub run: RunArgs,
    pub concurrency: Vec<u32>,
    pub request_rate: Vec<f64>,
    pub own: SweepOwn,
}

impl FromArgMatches for SweepArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut m.clone())
    }

    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        // Read the lists before RunArgs takes (the first of) them.
        let concurrency = m
            .get_many::<u32>("concurrency")
            .map(|v| v.copied().collect())
            .unwrap_or_default();
        let request_rate = m
            .get_many::<f64>("request_rate")
            .map(|v| v.copied().collect())
            .unwrap_or_default();
        Ok(SweepArgs {
            run: RunArgs::from_arg_matches_mut(m)?,
            concurrency,
            request_rate,
            own: SweepOwn::from_arg_matches_mut(m)?,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for SweepArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let list = |a: clap::Arg| a.action(ArgAction::Append).value_delimiter(',');
        let cmd = RunArgs::augment_args(cmd)
            .mut_arg("self_check", |a| a.hide(true))
            .mut_arg("concurrency", |a| {
                let help = "Closed loop: a list of user counts, like 1,2,4,8";
                list(a).help(help).long_help(help)
            })
            .mut_arg("request_rate", |a| {
                let help = "Open loop: a list of request rates, like 5,10,20";
                list(a).help(help).long_help(help)
            });
        SweepOwn::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// `ringbench search`: every `run` flag; `--concurrency N` or `--request-rate R` picks the
/// axis and the first probe.
#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Step-up factor between probes until one fails.
    #[arg(long, value_name = "X", default_value_t = 2.0, help_heading = "Search")]
    pub factor: f64,
    /// Highest load ever probed (users or req/s).
    #[arg(
        long,
        value_name = "X",
        default_value_t = 4096.0,
        help_heading = "Search"
    )]
    pub max_load: f64,
    /// Stop when the bracket is narrower than this fraction of its low end.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.05,
        help_heading = "Search"
    )]
    pub tolerance: f64,
    /// Most probes made.
    #[arg(long, value_name = "N", default_value_t = 20, help_heading = "Search")]
    pub max_iterations: u32,
    #[command(flatten)]
    pub common: CommonOwn,
}

/// `ringbench compare A B`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A run folder (summary.json), a sweep folder (sweep.json), or either file.
    pub a: PathBuf,
    pub b: PathBuf,
}

fn slos_of(c: &CommonOwn) -> Result<Vec<SloBound>, UsageError> {
    if c.repeats == 0 {
        return usage("--repeats 0: must be at least 1");
    }
    c.slos
        .iter()
        .map(|s| SloBound::parse(s).map_err(|e| UsageError(e.to_string())))
        .collect()
}

/// The run plan every point starts from, with a sweep's defaults: a few hundred requests per
/// point when no stop was given.
fn base_plan(run: &RunArgs) -> Result<Plan, UsageError> {
    if run.self_check {
        return usage("--self-check is `ringbench run`'s: a sweep or search has its own loads");
    }
    if run.stages.is_some() {
        return usage(
            "--stages: a load curve in one run is `ringbench run --stages`; a sweep runs its \
             own loads, one run each",
        );
    }
    let mut plan = run.to_plan()?;
    if run.trace.is_some() {
        return usage("--trace: a trace sets its own load; replay it with `ringbench run`");
    }
    if run.request_count.is_none() && run.duration.is_none() {
        plan.stop.request_count = Some(ringbench::study::sweep::DEFAULT_POINT_REQUESTS);
    }
    Ok(plan)
}

fn point_spec(run: &RunArgs, axis: Axis, c: &CommonOwn) -> Result<PointSpec, UsageError> {
    Ok(PointSpec {
        axis,
        repeats: c.repeats,
        slos: slos_of(c)?,
        warmup_given: run.warmup_requests > 0 || run.warmup_duration.is_some(),
        allow_invalid: run.allow_invalid,
    })
}

impl SweepArgs {
    /// The base plan, the point settings and the loads, in order.
    pub fn resolve(&self) -> Result<(Plan, PointSpec, Vec<f64>), UsageError> {
        let given = [
            !self.concurrency.is_empty(),
            !self.request_rate.is_empty(),
            self.own.grid.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return usage("sweep: give exactly one of --concurrency LIST, --request-rate LIST or --grid log:FROM:TO:N");
        }
        let (axis, loads) = if let Some(g) = &self.own.grid {
            (
                self.own.grid_axis,
                parse_grid(g, self.own.grid_axis).map_err(UsageError)?,
            )
        } else if !self.concurrency.is_empty() {
            if self.concurrency.contains(&0) {
                return usage("--concurrency: every entry must be at least 1");
            }
            let l = self.concurrency.iter().map(|&c| f64::from(c)).collect();
            (Axis::Concurrency, l)
        } else {
            if self
                .request_rate
                .iter()
                .any(|r| !(r.is_finite() && *r > 0.0))
            {
                return usage("--request-rate: every entry must be a number above 0");
            }
            (Axis::Rate, self.request_rate.clone())
        };
        Ok((
            base_plan(&self.run)?,
            point_spec(&self.run, axis, &self.own.common)?,
            loads,
        ))
    }
}

impl SearchArgs {
    pub fn resolve(&self) -> Result<(Plan, PointSpec, SearchSpec), UsageError> {
        let (axis, start) = match (self.run.request_rate, self.run.concurrency) {
            (Some(r), _) => (Axis::Rate, r),
            (None, c) => (Axis::Concurrency, f64::from(c.unwrap_or(1))),
        };
        let c = &self.common;
        let slos = slos_of(c)?;
        if slos.is_empty() {
            return usage("search: needs at least one --slo, like --slo ttft:p95<500ms");
        }
        if !(self.factor.is_finite() && self.factor > 1.0) {
            return usage("--factor: must be above 1, like 2");
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return usage("--tolerance: must be in (0, 1), like 0.05");
        }
        if !(self.max_load.is_finite() && self.max_load >= start) {
            return usage("--max-load: must be at least the starting load");
        }
        if self.max_iterations == 0 {
            return usage("--max-iterations 0: must be at least 1");
        }
        let spec = SearchSpec {
            axis,
            start,
            factor: self.factor,
            max_load: self.max_load,
            tolerance: self.tolerance,
            max_iterations: self.max_iterations,
            slos,
            allow_invalid: self.run.allow_invalid,
        };
        Ok((base_plan(&self.run)?, point_spec(&self.run, axis, c)?, spec))
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Command, String> {
        let mut argv = vec!["ringbench"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv)
            .map(|c| c.command)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn sweep_takes_lists_and_every_run_flag() {
        let Command::Sweep(s) = parse(&[
            "sweep",
            "--concurrency",
            "1,2,4",
            "--output-tokens",
            "7",
            "--slo",
            "ttft:p95<500ms",
            "--repeats",
            "3",
        ])
        .unwrap() else {
            panic!("not sweep")
        };
        let (plan, spec, loads) = s.resolve().unwrap();
        assert_eq!(loads, vec![1.0, 2.0, 4.0]);
        assert_eq!(plan.output_tokens, 7);
        assert_eq!(plan.stop.request_count, Some(300));
        assert_eq!((spec.repeats, spec.slos.len()), (3, 1));
        let Command::Sweep(s) = parse(&["sweep", "--request-rate", "5,10.5"]).unwrap() else {
            panic!()
        };
        assert_eq!(s.resolve().unwrap().2, vec![5.0, 10.5]);
    }

    #[test]
    fn sweep_usage_errors_name_the_flag() {
        let Command::Sweep(s) = parse(&["sweep"]).unwrap() else {
            panic!()
        };
        assert!(s.resolve().unwrap_err().0.contains("--concurrency"));
        let Command::Sweep(s) = parse(&["sweep", "--grid", "log:1:10", "--slo", "x"]).unwrap()
        else {
            panic!()
        };
        assert!(s.resolve().unwrap_err().0.contains("--grid"));
        let Command::Sweep(s) =
            parse(&["sweep", "--concurrency", "1,2", "--slo", "ttft<5"]).unwrap()
        else {
            panic!()
        };
        assert!(s.resolve().unwrap_err().0.contains("--slo"));
    }

    #[test]
    fn search_picks_axis_from_run_flags() {
        let Command::Search(s) =
            parse(&["search", "--request-rate", "8", "--slo", "itl:p99<50ms"]).unwrap()
        else {
            panic!()
        };
        let (_, _, spec) = s.resolve().unwrap();
        assert_eq!(
            (spec.axis, spec.start),
            (ringbench::summary::study::Axis::Rate, 8.0)
        );
        let Command::Search(s) = parse(&["search"]).unwrap() else {
            panic!()
        };
        assert!(s.resolve().unwrap_err().0.contains("--slo"));
    }
}
