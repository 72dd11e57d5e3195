//! Support for the crate's own unit tests that run things (outside the flow; compiled only
//! for tests): the lock that keeps timed runs from measuring each other, fresh temporary
//! folders, a plan for the in-process simulator pinned away from the client, and GPT-2's
//! vocabulary as a `tokenizer.json` (`gpt2`).
//!
//! The unit tests share one binary and run in parallel: one that runs real load or times
//! something takes `lock()` for as long as it does, and calls nothing that takes it again
//! (the lock is not reentrant).

// Its users that run things or read GPT-2 are the tokenizer feature's (`prepare`'s workload
// tests); without it, what only they use is unused.
#![cfg_attr(not(feature = "tokenizer"), allow(dead_code))]

use crate::plan::Plan;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// GPT-2's byte-level BPE written as a Hugging Face `tokenizer.json` (from the vocabulary the
/// `tiktoken-rs` dev-dependency embeds; no download). The integration tests use the same
/// file as `support::gpt2`: one converter for both.
#[path = "../../tests/it/support/gpt2.rs"]
pub(crate) mod gpt2;
#[path = "../../tests/it/support/trace.rs"]
pub(crate) mod trace;

/// Serializes the unit tests that load the two shared cores or time something. A test that
/// panicked while holding it poisons it; the next one takes it anyway, since the lock guards
/// no data.
pub(crate) fn lock() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A folder of this process for `name` in the calling test's file (`replay_tests`, ..., so
/// files may use the same names), emptied: absent until something writes it.
#[track_caller]
pub(crate) fn out_dir(name: &str) -> PathBuf {
    let caller = Path::new(std::panic::Location::caller().file());
    let file = caller
        .file_stem()
        .map_or_else(|| "lib".into(), |s| s.to_string_lossy().into_owned());
    let dir = std::env::temp_dir().join(format!(
        "ringbench-lib-{}-{file}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// As `out_dir`, but created, for tests that write their own inputs into it.
#[track_caller]
pub(crate) fn made_dir(name: &str) -> PathBuf {
    let dir = out_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// (client CPU, simulator CPU): the first and the last online CPU, the same one on a 1-CPU
/// machine.
pub(crate) fn cpu_pair() -> (usize, usize) {
    let cpus = crate::rt::cpu::online_cpus();
    (cpus[0], cpus[cpus.len() - 1])
}

/// The default plan against the in-process simulator on 127.0.0.1:0, no progress line,
/// client and simulator pinned as `cpu_pair` says.
pub(crate) fn sim_plan() -> Plan {
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut p = Plan::defaults();
    p.progress = false;
    p.cpus = vec![client_cpu];
    p.sim
        .as_mut()
        .expect("the default plan runs the simulator")
        .cpus = vec![sim_cpu];
    p
}
