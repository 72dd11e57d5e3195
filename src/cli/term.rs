//! Part of the binary (beside `main`): where it writes and how it is stopped. stdout that
//! goes away (`ringbench sweep … | head -1`) is not an error, as in ripgrep: the first EPIPE
//! marks it gone and later output is dropped, while the command finishes its work (the files
//! under `--out`) and exits with its usual code. stderr is written the same way. SIGINT and
//! SIGTERM ask a run to stop; the run's progress is shown here, as the run's observer.

use ringbench::output::console;
use ringbench::plan::Plan;
use ringbench::summary::workload::WorkloadStats;
use ringbench::{LiveCounts, Observer};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static GONE: AtomicBool = AtomicBool::new(false);

/// stdout that never panics and never fails on a closed pipe.
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

/// `warning: …` on stderr, when there is one.
pub fn warn(w: Option<String>) {
    if let Some(w) = w {
        let _ = writeln!(io::stderr(), "warning: {w}");
    }
}

/// Where a run's files went: its folder, and vLLM's result file (`--save-result`).
pub fn written(plan: &Plan) -> io::Result<()> {
    if let Some(dir) = &plan.out_dir {
        writeln!(Stdout, "results written to {}", dir.display())?;
    }
    if let Some(v) = &plan.vllm_result {
        writeln!(Stdout, "vLLM result written to {}", v.path.display())?;
    }
    Ok(())
}

/// Says why the command line could not be read; the exit status clap or usage gives.
pub fn parse_failed(e: super::ParseError) -> u8 {
    match e {
        super::ParseError::Clap(e, said) => {
            let _ = e.print();
            if let (Some(n), true) = (said, e.use_stderr()) {
                note(n);
            }
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
        super::ParseError::Usage(e) => {
            error(e);
            ringbench::Exit::Usage.code()
        }
    }
}

/// `results written to PATH`.
pub fn written_to(path: &std::path::Path) -> io::Result<()> {
    writeln!(Stdout, "results written to {}", path.display())
}

/// `ringbench merge`: a warning when shards were missing or duplicated (`--allow-incomplete`).
pub fn merge_incomplete(summary: &ringbench::Summary) {
    if let Some(m) = summary.merge.as_ref().filter(|m| !m.complete) {
        warn(Some(format!(
            "the merged run is INCOMPLETE: shards missing {:?}, duplicated {:?} of {}",
            m.missing, m.duplicated, m.shards
        )));
    }
}

/// An error and its causes, each said once: many errors already name their cause in their own
/// message (`cannot write X: No space left on device`), which `{:#}` would repeat.
pub fn said(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !out.contains(&cause) {
            out.push_str(": ");
            out.push_str(&cause);
        }
    }
    out
}

/// `note: …` on stderr.
pub fn note(n: impl std::fmt::Display) {
    let _ = writeln!(io::stderr(), "note: {n}");
}

/// `--config DIR/summary.json`: what the rerun cannot take from the file (the secrets), and
/// how its plan differs from the recorded one (flags on the line, or this version's defaults).
pub fn rerun_notes(path: &std::path::Path, recorded: &serde_json::Value, plan: &Plan) {
    let missing = super::config::secrets_missing(recorded, plan);
    if !missing.is_empty() {
        warn(Some(format!(
            "{} was run with secrets that are never written: give {} again",
            path.display(),
            missing.join(", ")
        )));
    }
    if plan.out_dir.is_none() {
        note(format!(
            "the rerun writes no files: give --out DIR (it never reuses {}'s folder)",
            path.display()
        ));
    }
    let now = serde_json::to_value(plan).unwrap_or_default();
    let differs = super::config::differences(recorded, &now);
    if differs.is_empty() {
        note(format!("rerunning {} with the same plan", path.display()));
    } else {
        note(format!(
            "rerunning {}; the plan differs in config.{} (flags on the line, or this \
             version's defaults)",
            path.display(),
            differs.join(", config.")
        ));
    }
}

/// `error: …` on stderr; a closed stderr is ignored.
pub fn error(e: impl std::fmt::Display) {
    let _ = writeln!(io::stderr(), "error: {e}");
}

/// The run's observer: the workload's description before the run (stdout), and its progress
/// (stderr) from the library's snapshots (about one a second): a bar on a terminal, drawn by
/// indicatif (the bar, its width and its redraw over other output are its job, and it starts
/// no thread of its own without a steady tick); elsewhere (CI logs, a pipe) a plain
/// `progress: …` line every `--progress-interval`. `--quiet` (vLLM's `--disable-tqdm`) turns
/// both off. What the progress says never reaches stdout or the run's files.
pub struct Watch {
    show: Show,
    goal: console::ProgressGoal,
    /// Lines only: seconds between lines, and when the next is due.
    every_s: f64,
    next_s: f64,
}

enum Show {
    Off,
    Lines,
    /// The bar, made once the run is prepared (so the workload lines come first).
    Bar(Option<indicatif::ProgressBar>),
}

impl Watch {
    /// `progress`: the plan's (not `--quiet`); `every_ns`: `--progress-interval` (0: no lines).
    pub fn new(progress: bool, every_ns: u64) -> Self {
        let show = match (progress, io::stderr().is_terminal()) {
            (false, _) => Show::Off,
            (true, true) => Show::Bar(None),
            (true, false) if every_ns > 0 => Show::Lines,
            (true, false) => Show::Off,
        };
        let every_s = every_ns as f64 / 1e9;
        Watch {
            show,
            goal: console::ProgressGoal::default(),
            every_s,
            next_s: every_s,
        }
    }

    /// Leaves the bar where it is, above the report.
    pub fn finish(&mut self) {
        if let Show::Bar(Some(bar)) = &self.show {
            bar.abandon();
        }
    }
}

/// The bar: 24 cells and the progress line beside it; the line alone when the plan sets no
/// goal to count to.
fn bar(goal: &console::ProgressGoal) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let counted = goal.duration_s.is_some() || goal.requests.is_some();
    let template = if counted { "{bar:24} {msg}" } else { "{msg}" };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("█▉▊▋▌▍▎▏ ");
    ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr()).with_style(style)
}

impl Observer for Watch {
    fn on_prepared(&mut self, plan: &Plan, workload: &WorkloadStats) {
        for line in console::workload_lines(plan, workload) {
            let _ = writeln!(Stdout, "{line}");
        }
        self.goal = console::ProgressGoal::of(plan);
        if let Show::Bar(b) = &mut self.show {
            *b = Some(bar(&self.goal));
        }
    }

    fn on_note(&mut self, note: &str) {
        let _ = writeln!(Stdout, "{note}");
    }

    fn on_progress(&mut self, live: &LiveCounts, elapsed_s: f64) {
        let line = || console::progress_line(live, elapsed_s, &self.goal);
        match &self.show {
            Show::Off | Show::Bar(None) => {}
            Show::Bar(Some(bar)) => {
                let done = self.goal.fraction(live, elapsed_s).unwrap_or(0.0);
                bar.set_position((done * 1000.0).round() as u64);
                bar.set_message(line());
            }
            Show::Lines if elapsed_s + 1e-9 >= self.next_s => {
                let _ = writeln!(io::stderr(), "progress: {}", line());
                // The next line on the interval's grid, however late this one came.
                self.next_s = ((elapsed_s / self.every_s).floor() + 1.0) * self.every_s;
            }
            Show::Lines => {}
        }
    }
}

/// SIGINT/SIGTERM: the first asks the run to stop (grace period, then cancel, then the
/// partial summary); the second ends the process at once. Files stay valid either way:
/// `summary.json` is renamed into place whole or not at all, and `requests.jsonl` holds
/// complete lines up to its last flush (at most a second old).
pub mod signals {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);
    static SIGNALS: AtomicU32 = AtomicU32::new(0);

    extern "C" fn on_signal(_: libc::c_int) {
        // Only async-signal-safe calls here: atomics, write(2), _exit(2).
        if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
            INTERRUPTED.store(true, Ordering::SeqCst);
            let msg = b"\ninterrupted: stopping (grace period, then cancel); again to quit now\n";
            // SAFETY: write(2) on stderr with a valid buffer is async-signal-safe.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        } else {
            let msg = b"\ninterrupted twice: quitting now\n";
            let code = ringbench::Exit::Interrupted.code() as i32;
            // SAFETY: write(2) and _exit(2) are async-signal-safe; _exit skips destructors,
            // which is the point (the kernel drops the endpoint lock with the process).
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(code);
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
