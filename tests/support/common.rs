//! Test support shared by the integration-test binaries: the per-binary lock that keeps
//! timed runs from measuring each other, fresh temporary folders, a plan for the in-process
//! simulator pinned away from the client, the built binary run with its output captured,
//! and readers for the JSON a run leaves (`summary.json`, `sweep.json`, `requests.jsonl`).
//! It sits beside the tests, outside the flow: it may only call the library's public API and
//! the built binary, and holds no assertion about what they produce.
//!
//! Each binary includes it with `#[path = "support/common.rs"] mod common;`, so each has its
//! own copy and so its own lock; binaries that use only part of it allow dead code on the
//! `mod` line.

use ringbench::plan::Plan;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Serializes the tests of one binary that load the two shared cores. A test that panicked
/// while holding it poisons it; the next one takes it anyway, since the lock guards no data.
pub fn lock() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A folder of this binary and process for `name`, emptied: absent until a run writes it.
pub fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ringbench-{}-{name}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// As `out_dir`, but created, for tests that write their own inputs into it.
pub fn made_dir(name: &str) -> PathBuf {
    let dir = out_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// (client CPU, simulator CPU): the first and the last online CPU, the same one on a 1-CPU
/// machine.
pub fn cpu_pair() -> (usize, usize) {
    let cpus = ringbench::cli::online_cpus();
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
    let summary = ringbench::run::run(p, |_, _| {}).expect("the run completes");
    serde_json::to_value(&summary).expect("the summary serializes")
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
