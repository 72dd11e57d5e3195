//! The `ringbench` binary: a thin edge over the library. It parses flags, runs, prints, and
//! maps results to exit codes (0 ran and valid, 1 error, 2 bad usage, 3 SLO gate failed,
//! 4 the client's own overhead made the run invalid, 130 stopped by a signal). `anyhow` lives
//! only here.

use clap::Parser;
use ringbench::cli::study_args::{CompareArgs, SearchArgs, SweepArgs};
use ringbench::cli::{CalibrateArgs, Cli, Command, ReportArgs, RunArgs, SimArgs};
use ringbench::study::sweep::{Point, Sweep};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Where the binary prints. A reader that goes away (`ringbench sweep … | head -1`) is not an
/// error, as in ripgrep: the first EPIPE marks stdout gone and later output is dropped, while
/// the command finishes its work (the files under `--out`) and exits with its usual code.
/// stderr is written the same way: a closed stderr never panics the process.
mod out {
    use std::io::{self, Write};
    use std::sync::atomic::{AtomicBool, Ordering};

    static GONE: AtomicBool = AtomicBool::new(false);

    pub struct Stdout;

    fn quiet<T>(r: io::Result<T>, all: T) -> io::Result<T> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                GONE.store(true, Ordering::Relaxed);
                Ok(all)
            }
            r => r,
        }
    }

    impl Write for Stdout {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if GONE.load(Ordering::Relaxed) {
                return Ok(buf.len());
            }
            quiet(io::stdout().lock().write(buf), buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            if GONE.load(Ordering::Relaxed) {
                return Ok(());
            }
            quiet(io::stdout().lock().flush(), ())
        }
    }
}

/// `println!` that never panics (see `out`).
macro_rules! outln {
    ($($t:tt)*) => {{
        let _ = writeln!(out::Stdout, $($t)*);
    }};
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Sim(args) => sim(&args),
        Command::Calibrate(args) => calibrate(&args),
        Command::Report(args) => report(&args),
        Command::Sweep(args) => sweep(&args),
        Command::Search(args) => search(&args),
        Command::Compare(args) => compare(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let plan = match args.to_plan() {
        Ok(plan) => plan,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // Tokenizer, dataset and prompts before anything is sent: bad input is a usage error.
    let prepared = match ringbench::prepare::prepare(&plan) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    {
        let mut out = out::Stdout;
        if let ringbench::plan::Load::Trace(t) = &plan.load {
            for line in t.describe() {
                writeln!(out, "{line}")?;
            }
        }
        for line in prepared.stats.describe() {
            writeln!(out, "{line}")?;
        }
    }
    let live = plan.progress && std::io::stderr().is_terminal();
    signals::install();
    let summary = ringbench::run::run_prepared(
        &plan,
        prepared,
        &signals::INTERRUPTED,
        |counts, elapsed_s| {
            if live {
                let _ = write!(
                    std::io::stderr(),
                    "\r{}",
                    ringbench::output::console::progress_line(counts, elapsed_s)
                );
            }
        },
    )?;
    if live {
        errln!();
    }
    let mut out = out::Stdout;
    ringbench::output::console::print_console(&summary, &mut out)?;
    if let Some(dir) = &plan.out_dir {
        ringbench::output::html::write_run_report(dir, &summary)?;
        writeln!(out, "results written to {}", dir.display())?;
    }
    if summary.interrupted {
        return Ok(ExitCode::from(signals::EXIT_INTERRUPTED));
    }
    let code = summary.exit_code();
    Ok(if code == 4 && args.allow_invalid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(code as u8)
    })
}

/// `ringbench report DIR`: the summary again, from the records alone.
fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    use ringbench::collector::{definitions::ToolView, replay};
    let parsed = args.overrides().and_then(|o| {
        let kinds = ringbench::cli::exports_of(args.export.as_deref())?;
        Ok((o, kinds))
    });
    let (overrides, exports) = match parsed {
        Ok(o) => o,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let summary = replay::recompute(&args.dir, &overrides)?;
    let mut out = out::Stdout;
    ringbench::output::console::print_console(&summary, &mut out)?;
    if !args.definitions.is_empty() {
        let (_, settings) = replay::settings(&args.dir, &overrides)?;
        let mut views: Vec<ToolView> = args
            .definitions
            .iter()
            .map(|&d| ToolView::new(d, settings.stream))
            .collect();
        replay::read_records(&args.dir, |r| views.iter_mut().for_each(|v| v.add(r)))?;
        let figures: Vec<_> = views
            .iter()
            .map(|v| v.finish(&settings.percentiles))
            .collect();
        ringbench::output::console::print_definitions(&figures, &mut out)?;
    }
    if let Some(dir) = &args.out {
        ringbench::output::console::write_summary_json(dir, &summary)?;
        ringbench::output::export::write_all(dir, &args.dir, &summary, &exports)?;
        writeln!(out, "results written to {}", dir.display())?;
    }
    Ok(ExitCode::from(summary.exit_code() as u8))
}

fn sim(args: &SimArgs) -> anyhow::Result<ExitCode> {
    let cpus = match args
        .cpus
        .as_deref()
        .map(|s| ringbench::cli::parse_cpus("--cpus", s))
    {
        Some(Ok(cpus)) => cpus,
        Some(Err(e)) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
        None => vec![ringbench::cli::online_cpus()[0]],
    };
    let cfg = ringbench::sim::SimConfig {
        host: args.host.clone(),
        port: args.port,
        cpus,
        ttft_ms: args.ttft_ms,
        itl_ms: args.itl_ms,
        tokens_per_chunk: args.tokens_per_chunk,
        model: args.model.clone(),
        io_driver: args.io_driver,
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => match ringbench::http::tls::server_config(cert, key) {
                Ok(c) => Some(c),
                Err(e) => {
                    errln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            },
            _ => None,
        },
        faults: match args.fault_config() {
            Ok(f) => f,
            Err(e) => {
                errln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        ttft_per_inflight_ms: args.ttft_per_inflight_ms,
        itl_per_inflight_ms: args.itl_per_inflight_ms,
    };
    ringbench::run::raise_fd_limit();
    let handle = ringbench::sim::start(cfg)?;
    outln!("listening on {}", handle.addr);
    out::Stdout.flush()?;
    match args.stats_interval {
        Some(every_ns) => print_sim_stats(&handle, every_ns),
        None => loop {
            std::thread::park();
        },
    }
}

/// `sim --stats-interval`: one JSON line of counters per interval, on absolute deadlines so
/// the lines do not drift. A closed stdout (the reader went away) ends the simulator quietly.
fn print_sim_stats(handle: &ringbench::sim::SimHandle, every_ns: u64) -> anyhow::Result<ExitCode> {
    let start_ns = ringbench::rt::clock::mono_ns();
    let mut out = std::io::stdout().lock();
    for tick in 1u64.. {
        let due_ns = start_ns + tick * every_ns;
        let now_ns = ringbench::rt::clock::mono_ns();
        if due_ns > now_ns {
            std::thread::sleep(std::time::Duration::from_nanos(due_ns - now_ns));
        }
        let line = serde_json::json!({
            "mono_ns": ringbench::rt::clock::mono_ns(),
            "stats": handle.stats(),
        });
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn calibrate(args: &CalibrateArgs) -> anyhow::Result<ExitCode> {
    let cfg = match args.to_config() {
        Ok(cfg) => cfg,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let cal = ringbench::study::calibrate::calibrate(&cfg, |p| {
        outln!("{}", ringbench::output::console::calibrate_point_line(p));
    })?;
    let mut out = out::Stdout;
    ringbench::output::console::print_calibration(&cal, &mut out)?;
    if let Some(dir) = &args.out {
        ringbench::output::console::write_json_atomic(dir, "calibrate.json", &cal)?;
        writeln!(out, "written to {}", dir.join("calibrate.json").display())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn usage_exit(e: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    errln!("error: {e}");
    Ok(ExitCode::from(2))
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

fn print_point(p: &Point) {
    let t = &p.throughput_requests_per_s;
    let spread = match t.rel_spread {
        Some(r) if p.runs.len() > 1 => format!(" (spread {:.1}%)", r * 100.0),
        _ => String::new(),
    };
    let slos: Vec<String> = p
        .slos
        .iter()
        .map(|c| {
            format!(
                "{}={}",
                c.slo.split('<').next().unwrap_or(""),
                fmt_opt(c.value_ms.median)
            )
        })
        .collect();
    let verdict = match (p.interrupted, p.valid, p.slos.is_empty(), p.pass) {
        (true, ..) => "INTERRUPTED",
        (_, false, _, false) => "INVALID",
        (_, _, true, _) => "",
        (_, _, false, true) => "PASS",
        (_, _, false, false) => "FAIL",
    };
    outln!(
        "load {:>8}  {verdict:4}  {} req/s{spread}  goodput {}  achieved conc {} rate {}  {}",
        p.load,
        fmt_opt(t.median),
        fmt_opt(p.goodput_requests_per_s.median),
        fmt_opt(p.achieved_concurrency.median),
        fmt_opt(p.achieved_request_rate.median),
        slos.join(" ")
    );
    for w in &p.warnings {
        errln!("warning: {w}");
    }
}

fn print_analysis(s: &Sweep) {
    let a = &s.analysis;
    match &a.knee {
        Some(k) => outln!(
            "knee: load {} at {:.2} req/s, e2e p50 {} ms — {}",
            k.load,
            k.throughput,
            fmt_opt(k.latency_ms),
            k.method
        ),
        None => outln!("knee: none ({})", a.knee_note.as_deref().unwrap_or("")),
    }
    let part = |p: &ringbench::study::analysis::KneePart| match &p.knee {
        Some(k) => format!("load {}", k.load),
        None => format!("none ({})", p.note.as_deref().unwrap_or("")),
    };
    outln!(
        "  throughput knee: {}; latency knee: {}",
        part(&a.throughput_knee),
        part(&a.latency_knee)
    );
    if !s.slos.is_empty() {
        outln!(
            "highest passing load: {}; SLO crossing: {} ({})",
            a.highest_pass.map_or("none".into(), |x| x.to_string()),
            a.slo_crossing.map_or("none".into(), |x| format!("{x:.2}")),
            a.crossing_note.as_deref().unwrap_or("")
        );
    }
}

fn sweep(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    let (plan, spec, loads) = match args.resolve() {
        Ok(r) => r,
        Err(e) => return usage_exit(e),
    };
    outln!(
        "sweep over {} {:?}, {} repeat(s) per point",
        spec.axis.name(),
        loads,
        spec.repeats
    );
    let cooldown = std::time::Duration::from_nanos(args.own.common.cooldown);
    let out = plan.out_dir.clone();
    signals::install();
    let result = ringbench::study::sweep::sweep_with(
        &plan,
        &spec,
        &loads,
        cooldown,
        out.as_deref(),
        &signals::INTERRUPTED,
        print_point,
    )?;
    print_analysis(&result);
    let invalid: Vec<f64> = result
        .points
        .iter()
        .filter(|p| !p.valid)
        .map(|p| p.load)
        .collect();
    print_invalid(&invalid, spec.allow_invalid);
    if let Some(dir) = &out {
        ringbench::output::study::write_sweep(dir, &result)?;
        let html = ringbench::output::html::write_sweep_report(dir, &result)?;
        outln!(
            "results written to {} (report: {})",
            dir.display(),
            html.display()
        );
    }
    let no_pass = !result.slos.is_empty() && !result.points.iter().any(|p| p.pass);
    Ok(ExitCode::from(gate_exit_code(
        result.interrupted,
        !invalid.is_empty() && !spec.allow_invalid,
        no_pass,
    )))
}

/// The exit code of a sweep or search that finished, in `run`'s precedence: 130 when a
/// signal stopped it; 4 when a point's run was invalid (the client's own overhead) and
/// `--allow-invalid` was not given — before 3, since an invalid point never passes, so its
/// SLO verdict may be the client's doing; 3 when the SLO gate failed (sweep: SLOs given and
/// no point met them all, failing points above a passing one being its answer; search: not
/// even the lowest load passes); else 0.
fn gate_exit_code(interrupted: bool, invalid: bool, gate_failed: bool) -> u8 {
    if interrupted {
        signals::EXIT_INTERRUPTED
    } else if invalid {
        4
    } else if gate_failed {
        3
    } else {
        0
    }
}

/// Names the loads whose runs were invalid (each point's reasons were printed with it).
fn print_invalid(loads: &[f64], allowed: bool) {
    if loads.is_empty() {
        return;
    }
    if allowed {
        errln!("warning: invalid (client overhead) at loads {loads:?}; counted anyway (--allow-invalid)");
    } else {
        errln!(
            "invalid (client overhead) at loads {loads:?}: they do not pass and decide \
             nothing (sweep: left out of the knee and the crossing; search: counted as \
             failing); exit 4 (--allow-invalid counts them)"
        );
    }
}

/// SIGINT/SIGTERM: the first asks the run to stop (grace period, then cancel, then the
/// partial summary); the second ends the process at once. Files stay valid either way:
/// `summary.json` is renamed into place whole or not at all, and `requests.jsonl` holds
/// complete lines up to its last flush (at most a second old).
mod signals {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);
    static SIGNALS: AtomicU32 = AtomicU32::new(0);
    /// 128 + SIGINT, as shells report an interrupted command.
    pub const EXIT_INTERRUPTED: u8 = 130;

    extern "C" fn on_signal(_: libc::c_int) {
        // Only async-signal-safe calls here: atomics, write(2), _exit(2).
        if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
            INTERRUPTED.store(true, Ordering::SeqCst);
            let msg = b"\ninterrupted: stopping (grace period, then cancel); again to quit now\n";
            // SAFETY: write(2) on stderr with a valid buffer is async-signal-safe.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        } else {
            let msg = b"\ninterrupted twice: quitting now\n";
            // SAFETY: write(2) and _exit(2) are async-signal-safe; _exit skips destructors,
            // which is the point (the kernel drops the endpoint lock with the process).
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(EXIT_INTERRUPTED as i32);
            }
        }
    }

    pub fn install() {
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid; the
        // handler only touches atomics and async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
            libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        }
    }
}

fn search(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let (plan, point_spec, spec) = match args.resolve() {
        Ok(r) => r,
        Err(e) => return usage_exit(e),
    };
    let out = plan.out_dir.clone();
    let cooldown = std::time::Duration::from_nanos(args.common.cooldown);
    let mut first = true;
    signals::install();
    let stop = &signals::INTERRUPTED;
    // A signal during the cooldown reaches the next probe's run at its start: it stops at
    // once and the probe comes back interrupted, which ends the search.
    let measure = |load: f64| {
        if !std::mem::take(&mut first) {
            ringbench::study::sweep::cooldown(cooldown, stop);
        }
        ringbench::study::sweep::measure_with(&plan, &point_spec, out.as_deref(), load, stop)
    };
    let result = ringbench::study::search::search(&spec, measure, |p| {
        outln!(
            "probe {:>2} {:6} load {:>9}  {}{}  values {:?}  bracket [{}, {}]",
            p.iteration,
            p.phase,
            p.load,
            if p.pass_raw { "pass" } else { "FAIL" },
            if p.pass_raw != p.pass_smoothed {
                " (smoothed: flipped)"
            } else {
                ""
            },
            p.values_ms.iter().map(|v| fmt_opt(*v)).collect::<Vec<_>>(),
            p.bracket.0.map_or("-".into(), |x| x.to_string()),
            p.bracket.1.map_or("-".into(), |x| x.to_string()),
        );
        if p.interrupted {
            outln!("probe {:>2} interrupted: it decides nothing", p.iteration);
        }
        for why in &p.invalid_reasons {
            errln!(
                "warning: probe {} load {} invalid: {why}",
                p.iteration,
                p.load
            );
        }
        let _ = out::Stdout.flush();
    })?;
    outln!(
        "answer: {} = {} (crossing ≈ {}; {}{})",
        spec.axis.name(),
        result.answer.map_or("none".into(), |x| x.to_string()),
        fmt_opt(result.crossing),
        result.stop_reason,
        if result.converged {
            ""
        } else {
            "; NOT converged"
        }
    );
    if let Some(dir) = &out {
        ringbench::output::study::write_search(dir, &result)?;
        outln!("history written to {}", dir.join("search.json").display());
    }
    let mut invalid: Vec<f64> = result
        .probes
        .iter()
        .filter(|p| !p.valid)
        .map(|p| p.load)
        .collect();
    invalid.sort_by(f64::total_cmp);
    invalid.dedup();
    print_invalid(&invalid, spec.allow_invalid);
    Ok(ExitCode::from(gate_exit_code(
        result.interrupted,
        !invalid.is_empty() && !spec.allow_invalid,
        result.answer.is_none(),
    )))
}

fn compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    use ringbench::study::compare::{compare, load, CompareError};
    let loaded = load(&args.a).and_then(|a| Ok((a, load(&args.b)?)));
    let rows = match loaded.and_then(|(a, b)| compare(&a, &b, (&args.a, &args.b))) {
        Ok(rows) => rows,
        Err(e @ (CompareError::NotFound(_) | CompareError::Mixed(..))) => return usage_exit(e),
        Err(e) => return Err(e.into()),
    };
    outln!("A = {}\nB = {}", args.a.display(), args.b.display());
    outln!(
        "{:<36} {:>12} {:>12} {:>9} {:>10}  beyond spread?",
        "figure",
        "A",
        "B",
        "change",
        "spread"
    );
    for r in &rows {
        outln!(
            "{:<36} {:>12} {:>12} {:>9} {:>10}  {}",
            r.name,
            fmt_opt(r.a),
            fmt_opt(r.b),
            r.change
                .map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
            fmt_opt(r.spread),
            match r.significant {
                Some(true) => "YES",
                Some(false) => "no",
                None => "unknown (no repeats)",
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
