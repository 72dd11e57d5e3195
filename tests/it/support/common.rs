//! Test support shared by the modules of `tests/it`: the one lock that keeps timed runs
//! from measuring each other, fresh temporary folders, a plan for the in-process simulator
//! pinned away from the client, the built binary run with its output captured, readers for
//! the JSON a run leaves (`summary.json`, `sweep.json`, `requests.jsonl`), the temporary files
//! a killed process leaves, the one way a test skips when the kernel refuses io_uring, and
//! the one way a timing bound is retried on a loaded machine (`within_attempts`).
//!
//! Every module of the binary runs in one process, two test threads at a time: a test that
//! starts a run, a simulator under load, the built binary, or anything timed takes `lock()`
//! for as long as it does, and never calls a helper that takes it again (the lock is not
//! reentrant).

use ringbench::plan::Plan;
use serde_json::Value;
use std::ffi::OsStr;
use std::io::Write;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Serializes the tests of the binary that load the two shared cores or time something. A
/// test that panicked while holding it poisons it; the next one takes it anyway, since the
/// lock guards no data.
pub fn lock() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A folder of this process for `name` in the calling test's module (`e2e`, `records`, ...,
/// so modules may use the same names), emptied: absent until a run writes it.
#[track_caller]
pub fn out_dir(name: &str) -> PathBuf {
    let caller = Path::new(std::panic::Location::caller().file());
    let module = caller
        .file_stem()
        .map_or_else(|| "it".into(), |s| s.to_string_lossy().into_owned());
    let dir = std::env::temp_dir().join(format!(
        "ringbench-it-{}-{module}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// As `out_dir`, but created, for tests that write their own inputs into it.
#[track_caller]
pub fn made_dir(name: &str) -> PathBuf {
    let dir = out_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// (client CPU, simulator CPU): the first and the last online CPU, the same one on a 1-CPU
/// machine.
pub fn cpu_pair() -> (usize, usize) {
    let cpus = ringbench::host::online_cpus();
    (cpus[0], cpus[cpus.len() - 1])
}

/// The default plan against the in-process simulator on 127.0.0.1:0, client and simulator
/// pinned as `cpu_pair` says.
pub fn sim_plan() -> Plan {
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut p = Plan::defaults();
    p.progress = false;
    p.cpus = vec![client_cpu];
    p.sim.as_mut().unwrap().cpus = vec![sim_cpu];
    p
}

/// Runs `p` through the library; its summary as JSON, as `summary.json` would hold it.
pub fn run_summary(p: &Plan) -> Value {
    let summary = ringbench::run(p).expect("the run completes");
    serde_json::to_value(&summary).expect("the summary serializes")
}

/// The built binary's `ringbench sim --port 0` on the simulator's CPU (`cpu_pair`): the child
/// and the `host:port` its first line names.
pub fn spawn_sim() -> (Child, String) {
    spawn_sim_on(0)
}

/// `spawn_sim` on `port` (0: one the kernel picks), once it listens.
pub fn spawn_sim_on(port: u16) -> (Child, String) {
    spawn_sim_with(&["--port", &port.to_string()])
}

/// `spawn_sim` with `flags` (`--port 0` unless they name one), once it listens.
pub fn spawn_sim_with(flags: &[&str]) -> (Child, String) {
    let (_, sim_cpu) = cpu_pair();
    let mut args = vec!["sim", "--cpus"];
    let cpu = sim_cpu.to_string();
    args.push(&cpu);
    if !flags.contains(&"--port") {
        args.extend(["--port", "0"]);
    }
    args.extend(flags);
    let mut sim = ringbench(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the simulator starts");
    let mut first = String::new();
    BufReader::new(sim.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .expect("first line names the address")
        .to_string();
    (sim, addr)
}

/// The built binary with `args`. Its stdin is closed: it never reads it, and a test must not
/// hang on the terminal if that changed.
pub fn ringbench<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringbench"));
    c.args(args).stdin(Stdio::null());
    c
}

/// How a command ended, its two streams as text.
/// A child killed and waited for when dropped, a panic's unwinding included.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to the end, capturing both streams.
pub fn output(cmd: &mut Command) -> Ran {
    let out = cmd.output().expect("the binary runs");
    Ran {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Sends `sig` to our own child.
pub fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Temporary files left in `dir` (by a killed process): the files whose name starts with '.'
/// and contains ".tmp.", the rule of every file a run writes (`.NAME.tmp.PID`), sorted.
pub fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with('.') && n.contains(".tmp."))
        })
        .collect();
    found.sort();
    found
}

/// Whether a test that needs io_uring can run: true when the kernel allows it. When it does
/// not, the skip is said where CI sees it (`SKIPPED: <test>: io_uring refused by this kernel`
/// on stderr) and the test should return; with `RINGBENCH_REQUIRE_URING=1` it fails instead
/// (a CI job on a kernel that must have io_uring). `test` names the test as libtest does
/// (`module::name`).
pub fn uring_or_skip(test: &str) -> bool {
    if ringbench::host::uring_available() {
        return true;
    }
    skip_or_require(
        test,
        "RINGBENCH_REQUIRE_URING",
        "io_uring refused by this kernel",
    );
    false
}

/// A test that cannot run here for want of `why`: with `require_env`=1 (CI, where it must
/// run) it fails; otherwise it says `SKIPPED: <test>: <why>` where CI sees it, and the
/// caller returns.
pub fn skip_or_require(test: &str, require_env: &str, why: &str) {
    if std::env::var_os(require_env).is_some_and(|v| v == "1") {
        panic!("{test}: {why}, and {require_env}=1");
    }
    // To the process's stderr itself: libtest captures `eprintln!` of a passing test, so
    // the skip would show nowhere.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

/// A bound on time that a loaded machine can break for a moment (another process held a CPU,
/// a wake-up came late), tried up to `attempts` times: `attempt(k)` returns `Ok` when its
/// bound held, else `Err` with its figures. The first `Ok` is returned; when none held, the
/// test fails naming `what` and every attempt's figures, so a real regression still fails
/// and shows by how much. Assertions that do not depend on timing stay plain `assert!`s
/// inside `attempt`: they fail at the first attempt.
#[track_caller]
pub fn within_attempts<T>(
    attempts: usize,
    what: &str,
    mut attempt: impl FnMut(usize) -> Result<T, String>,
) -> T {
    let mut tried = Vec::with_capacity(attempts);
    for k in 0..attempts {
        match attempt(k) {
            Ok(done) => return done,
            Err(figures) => tried.push(format!("attempt {}: {figures}", k + 1)),
        }
    }
    panic!(
        "{what}: no attempt of {attempts} held: {}",
        tried.join("; ")
    )
}

/// The child's exit code (-1 when a signal ended it); kills it and fails past `limit`.
pub fn wait_within(child: &mut Child, limit: Duration) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One JSON file (`summary.json`, `sweep.json`, ...), naming the file when it fails.
pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every line of a JSON-lines file (`requests.jsonl`), each parsed.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The value at a dotted path (`counts.ok`, `overhead.workers.0.reconnects`): a segment
/// that is a number indexes an array.
pub fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |cur, k| match k.parse::<usize>() {
        Ok(i) => &cur[i],
        Err(_) => &cur[k],
    })
}

/// The integer at `path`; fails naming the path when it is anything else.
pub fn u(v: &Value, path: &str) -> u64 {
    let cur = at(v, path);
    cur.as_u64()
        .unwrap_or_else(|| panic!("{path} is not an integer: {cur}"))
}

/// The number at `path`; fails naming the path when it is anything else.
pub fn f(v: &Value, path: &str) -> f64 {
    let cur = at(v, path);
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number: {cur}"))
}

/// The captured server responses, in the repository (`tests/data/sse`: real servers' bytes,
/// see `tests/data/README.md`).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sse")
}
