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
    // Tokenizer, dataset and prompts before anything is sent: bad input is a usage error.
    let prepared = match ringbench::workload::prepare(&plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    {
        let mut out = std::io::stdout().lock();
        for line in prepared.stats.describe() {
            writeln!(out, "{line}")?;
        }
    }
    let live = plan.progress && std::io::stderr().is_terminal();
    let summary = ringbench::run::run_prepared(&plan, prepared, |counts, elapsed_s| {
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
    let code = summary.exit_code();
    Ok(if code == 4 && args.allow_invalid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(code as u8)
    })
}

fn sim(args: &SimArgs) -> anyhow::Result<ExitCode> {
    let cpus = match &args.cpus {
        Some(s) => ringbench::cli::parse_cpus("--cpus", s)?,
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
    };
    ringbench::run::raise_fd_limit();
    let handle = ringbench::sim::start(cfg)?;
    println!("listening on {}", handle.addr);
    std::io::stdout().flush()?;
    loop {
        std::thread::park();
    }
}
