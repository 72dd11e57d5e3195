//! The `ringbench` binary: a thin edge over the library. It parses flags, runs, prints, and
//! maps results to exit codes (0 ran and valid, 1 error, 2 bad usage, 3 SLO gate failed,
//! 4 the client's own overhead made the run invalid). `anyhow` lives only here.

use clap::Parser;
use ringbench::cli::{Cli, Command, RunArgs, SimArgs};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Sim(args) => sim(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let plan = match args.to_plan() {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let live = plan.progress && std::io::stderr().is_terminal();
    signals::install();
    let summary = ringbench::run::run_with(&plan, &signals::INTERRUPTED, |counts, elapsed_s| {
        if live {
            eprint!("\r{}", ringbench::report::progress_line(counts, elapsed_s));
        }
    })?;
    if live {
        eprintln!();
    }
    let mut out = std::io::stdout().lock();
    ringbench::report::print_console(&summary, &mut out)?;
    if let Some(dir) = &plan.out_dir {
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

fn sim(args: &SimArgs) -> anyhow::Result<ExitCode> {
    let cpus = match args
        .cpus
        .as_deref()
        .map(|s| ringbench::cli::parse_cpus("--cpus", s))
    {
        Some(Ok(cpus)) => cpus,
        Some(Err(e)) => {
            eprintln!("error: {e}");
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
            (Some(cert), Some(key)) => match ringbench::tls::server_config(cert, key) {
                Ok(c) => Some(c),
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            },
            _ => None,
        },
        faults: match args.fault_config() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        },
    };
    ringbench::run::raise_fd_limit();
    let handle = ringbench::sim::start(cfg)?;
    println!("listening on {}", handle.addr);
    std::io::stdout().flush()?;
    loop {
        std::thread::park();
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
