//! Part of the binary (beside `main`): where it writes and how it is stopped. stdout that
//! goes away (`ringbench sweep … | head -1`) is not an error, as in ripgrep: the first EPIPE
//! marks it gone and later output is dropped, while the command finishes its work (the files
//! under `--out`) and exits with its usual code. stderr is written the same way. SIGINT and
//! SIGTERM ask a run to stop; the live progress line is drawn here, as the run's observer.

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

/// `error: …` on stderr; a closed stderr is ignored.
pub fn error(e: impl std::fmt::Display) {
    let _ = writeln!(io::stderr(), "error: {e}");
}

/// The run's observer: the workload's description before the run (stdout), the live progress
/// line while it goes (stderr, only on a terminal).
pub struct Watch {
    live: bool,
}

impl Watch {
    pub fn new(progress: bool) -> Self {
        Watch {
            live: progress && io::stderr().is_terminal(),
        }
    }

    /// Ends the progress line.
    pub fn finish(&mut self) {
        if self.live {
            let _ = writeln!(io::stderr());
        }
    }
}

impl Observer for Watch {
    fn on_prepared(&mut self, plan: &Plan, workload: &WorkloadStats) {
        for line in console::workload_lines(plan, workload) {
            let _ = writeln!(Stdout, "{line}");
        }
    }

    fn on_note(&mut self, note: &str) {
        let _ = writeln!(Stdout, "{note}");
    }

    fn on_progress(&mut self, live: &LiveCounts, elapsed_s: f64) {
        if self.live {
            let _ = write!(
                io::stderr(),
                "\r{}",
                console::progress_line(live, elapsed_s)
            );
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
