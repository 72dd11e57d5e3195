//! The `ringbench` binary: a thin edge over the library. `cli` turns flags into what the
//! library runs; each command here calls it, hands its results to `output` for stdout, and
//! maps them to an exit status (`ringbench::Exit`: 0 valid, 1 error, 2 bad usage, 3 a gate
//! failed, 4 the client's overhead made it invalid, 5 nothing succeeded, 130 a signal).

pub(crate) mod cli;

use cli::study_args::{CompareArgs, SearchArgs, SweepArgs};
use cli::term::{self, signals, Stdout};
use cli::{CalibrateArgs, Command, MergeArgs, ReportArgs, RunArgs, SimArgs};
use ringbench::output::{console, console_study};
use ringbench::Exit;
use std::io::Write;
use std::process::ExitCode;

type Done = anyhow::Result<Exit>;

fn main() -> ExitCode {
    ExitCode::from(main_with(std::env::args_os()))
}

/// The whole command line, `argv[0]` first; the exit status (`python/`'s command too).
pub(crate) fn main_with(argv: impl IntoIterator<Item = std::ffi::OsString>) -> u8 {
    let cli = match cli::parse(argv) {
        Ok(cli) => cli,
        Err(e) => return term::parse_failed(e),
    };
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Sim(args) => sim(&args),
        Command::Calibrate(args) => calibrate(&args),
        Command::Report(args) => report(&args),
        Command::Sweep(args) => sweep(&args),
        Command::Search(args) => search(&args),
        Command::Compare(args) => compare(&args),
        Command::Merge(args) => merge(&args),
        Command::K8s(args) => k8s(&args),
    };
    (result.unwrap_or_else(|e| {
        term::error(term::said(&e));
        [Exit::Error, Exit::Usage][usize::from(e.is::<Usage>())]
    }))
    .code()
}

/// A usage error: said on stderr like any error, but exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Usage(pub(crate) String);

fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    Usage(e.to_string()).into()
}

/// `run`'s plan from its flags, checked before any request is sent (`python/` calls it too).
pub(crate) fn checked_plan(args: &RunArgs) -> anyhow::Result<(ringbench::Plan, bool)> {
    let (plan, demo) = args.run_plan().map_err(usage)?;
    args.check_out(plan.out_dir.as_deref()).map_err(usage)?;
    cli::run_args::check_reachable(&plan).map_err(anyhow::Error::msg)?;
    Ok((plan, demo))
}

fn run(args: &RunArgs) -> Done {
    let (plan, demo) = checked_plan(args)?;
    term::warn(args.vllm.ignored_warning());
    cli::compat::url_note(args).into_iter().for_each(term::note);
    if let Some((path, recorded)) = &args.rerun_of {
        term::rerun_notes(path, recorded, &plan);
    }
    if demo {
        writeln!(Stdout, "{}", console::demo_intro(&plan))?;
    }
    signals::install();
    let mut watch = term::Watch::new(plan.progress, args.progress_interval);
    let summary = match ringbench::run_with(&plan, &signals::INTERRUPTED, &mut watch) {
        Ok(s) => s,
        Err(e) if e.is_usage() => return Err(usage(e)),
        Err(e) => return Err(e.into()),
    };
    watch.finish();
    let not_measured = demo || args.self_check; // reported, and ends 0 even when invalid
    console::print_run_console(&summary, args.allow_invalid || not_measured, &mut Stdout)?;
    term::written(&plan)?;
    write!(Stdout, "{}", console::closing(&summary, demo, not_measured))?;
    Ok(summary.exit(args.allow_invalid || not_measured))
}

/// `ringbench report DIR`: the summary again, from the records alone.
fn report(args: &ReportArgs) -> Done {
    let (overrides, exports) = args.resolve().map_err(usage)?;
    let summary = ringbench::report::recompute_to(&args.dir, &overrides, args.out.as_deref())?;
    console::print_console(&summary, &mut Stdout)?;
    if !args.definitions.is_empty() {
        let figures = ringbench::report::definitions(&args.dir, &overrides, &args.definitions)?;
        console::print_definitions(&figures, &mut Stdout)?;
    }
    if let Some(dir) = &args.out {
        ringbench::output::write_summary_and_exports(dir, &args.dir, &summary, &exports)?;
        writeln!(Stdout, "results written to {}", dir.display())?;
    }
    Ok(summary.exit(false))
}

fn sim(args: &SimArgs) -> Done {
    let cfg = args.config().map_err(usage)?;
    ringbench::host::raise_fd_limit();
    let handle = ringbench::sim::start(cfg)?;
    writeln!(Stdout, "listening on {}", handle.addr)?;
    Stdout.flush()?;
    match args.stats_interval {
        Some(every_ns) => console::sim_stats_lines(&handle, every_ns, &mut std::io::stdout())?,
        None => loop {
            std::thread::park();
        },
    }
    Ok(Exit::Ok)
}

fn calibrate(args: &CalibrateArgs) -> Done {
    let cfg = args.to_config().map_err(usage)?;
    let cal = ringbench::study::calibrate::calibrate(&cfg, |p| {
        let _ = writeln!(Stdout, "{}", console::calibrate_point_line(p));
    })?;
    console::print_calibration(&cal, &mut Stdout)?;
    if let Some(dir) = &args.out {
        ringbench::output::write_json(dir, "calibrate.json", &cal)?;
        term::written_to(&dir.join("calibrate.json"))?;
    }
    Ok(Exit::Ok)
}

fn sweep(args: &SweepArgs) -> Done {
    let (plan, spec, loads) = args.resolve().map_err(usage)?;
    console_study::sweep_start(&mut Stdout, spec.axis.name(), &loads, spec.repeats)?;
    let cooldown = std::time::Duration::from_nanos(args.own.common.cooldown);
    signals::install();
    let result = ringbench::study::sweep::sweep_with(
        &plan,
        &spec,
        &loads,
        cooldown,
        plan.out_dir.as_deref(),
        &signals::INTERRUPTED,
        |p| {
            let _ = console_study::point(&mut Stdout, &mut std::io::stderr(), p);
        },
    )?;
    console_study::analysis(&mut Stdout, &result)?;
    let invalid = result.invalid_loads();
    console_study::invalid_loads(&mut std::io::stderr(), &invalid, spec.allow_invalid)?;
    if let Some(dir) = &plan.out_dir {
        let html = ringbench::output::write_sweep(dir, &result)?;
        let (d, h) = (dir.display(), html.display());
        writeln!(Stdout, "results written to {d} (report: {h})")?;
    }
    let no_pass = !result.slos.is_empty() && !result.points.iter().any(|p| p.pass);
    let invalid = !invalid.is_empty() && !spec.allow_invalid;
    Ok(Exit::of_study(result.interrupted, invalid, no_pass))
}

fn search(args: &SearchArgs) -> Done {
    let (plan, point_spec, spec) = args.resolve().map_err(usage)?;
    let cooldown = std::time::Duration::from_nanos(args.common.cooldown);
    signals::install();
    let result = ringbench::study::search::search_runs(
        &plan,
        &point_spec,
        &spec,
        cooldown,
        &signals::INTERRUPTED,
        |p| {
            let _ = console_study::probe(&mut Stdout, &mut std::io::stderr(), p);
        },
    )?;
    console_study::search_answer(&mut Stdout, &result)?;
    if let Some(dir) = &plan.out_dir {
        ringbench::output::study::write_search(dir, &result)?;
        term::written_to(&dir.join("search.json"))?;
    }
    let invalid = result.invalid_loads();
    console_study::invalid_loads(&mut std::io::stderr(), &invalid, spec.allow_invalid)?;
    let invalid = !invalid.is_empty() && !spec.allow_invalid;
    let none = result.answer.is_none();
    Ok(Exit::of_study(result.interrupted, invalid, none))
}

/// `ringbench merge DIR...`: one run again from its shards' records.
fn merge(args: &MergeArgs) -> Done {
    let exports = cli::parse::exports_of(args.export.as_deref()).map_err(usage)?;
    let allow_incomplete = args.allow_incomplete;
    let opts = ringbench::report::MergeOptions { allow_incomplete };
    let summary = ringbench::report::merge(&args.dirs, &args.out, &opts)?;
    ringbench::output::write_run(&args.out, &summary, &exports)?;
    console::print_console(&summary, &mut Stdout)?;
    term::merge_incomplete(&summary);
    term::written_to(&args.out)?;
    Ok(summary.exit(false))
}

/// `ringbench k8s manifest`: the Indexed Job's YAML on stdout.
fn k8s(args: &cli::k8s::K8sArgs) -> Done {
    let cli::k8s::K8sCommand::Manifest(m) = &args.command;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let yaml = cli::k8s::manifest(m, now.as_nanos() as u64).map_err(usage)?;
    write!(Stdout, "{yaml}")?;
    Ok(Exit::Ok)
}

fn compare(args: &CompareArgs) -> Done {
    use ringbench::study::compare::{compare, load, CompareError};
    let loaded = load(&args.a).and_then(|a| Ok((a, load(&args.b)?)));
    let rows = match loaded.and_then(|(a, b)| compare(&a, &b, (&args.a, &args.b))) {
        Ok(rows) => rows,
        Err(e @ (CompareError::NotFound(_) | CompareError::Mixed(..))) => return Err(usage(e)),
        Err(e) => return Err(e.into()),
    };
    let names = (args.a.display().to_string(), args.b.display().to_string());
    console_study::comparison(&mut Stdout, (&names.0, &names.1), &rows)?;
    Ok(Exit::Ok)
}
