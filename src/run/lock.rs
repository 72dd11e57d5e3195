//! One benchmark per endpoint: an advisory lock keyed by the endpoint's resolved address,
//! taken by `run` before anything is sent (it sits beside the flow, between `plan` and the
//! workers, and touches nothing on the hot path). Two benchmarks against one server corrupt
//! each other's figures, so a second run on this host is refused, naming the holder's pid
//! and start time, unless `--allow-concurrent` is given.
//!
//! Mechanism: `flock(LOCK_EX | LOCK_NB)` on `$TMPDIR/ringbench-locks/<hash>.lock`, whose text
//! says who holds it. The kernel drops a `flock` when its holder exits however it exits
//! (return, error, panic, `_exit` on a second signal, SIGKILL), so the lock is released on
//! every exit path, and a lock file left by a dead process is simply taken over: no pid
//! guessing, no stale-lock race. The file itself is never removed (removing it would let two
//! processes lock two different inodes).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// Held for the length of a run; dropping it releases the lock.
#[derive(Debug)]
pub struct EndpointLock {
    file: File,
    path: PathBuf,
}

/// Why the endpoint's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "another ringbench (pid {pid}, started {started_at}) is benchmarking {endpoint} on \
         this host; two runs corrupt each other's figures. Wait for it, or pass \
         --allow-concurrent (lock file {path})"
    )]
    Held {
        /// The holder's pid, as its lock file says (`unknown` when unreadable).
        pid: String,
        /// When the holder started, RFC 3339 (`unknown` when unreadable).
        started_at: String,
        /// The endpoint both want.
        endpoint: String,
        /// The lock file.
        path: String,
    },
    /// The lock file could not be created, opened, locked or written.
    #[error("cannot take the endpoint lock {path}: {source} (or pass --allow-concurrent)")]
    Io {
        /// The lock file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Where lock files live: one folder per host (the temp dir), one file per endpoint.
pub fn lock_path(endpoint: &str) -> PathBuf {
    std::env::temp_dir()
        .join("ringbench-locks")
        .join(format!("{:016x}.lock", fnv1a(endpoint.as_bytes())))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Takes the lock for `endpoint` (a resolved `host:port` plus path), or says who holds it.
pub fn acquire(endpoint: &str, started_at: &str) -> Result<EndpointLock, LockError> {
    let path = lock_path(endpoint);
    let io = |source| LockError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .open(&path)
        .map_err(io)?;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(io(err));
        }
        return Err(held_by(&mut file, endpoint, &path));
    }
    let text = format!("{}\n{started_at}\n{endpoint}\n", std::process::id());
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(EndpointLock { file, path })
}

fn held_by(file: &mut File, endpoint: &str, path: &std::path::Path) -> LockError {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let mut lines = text.lines();
    let mut next = || lines.next().unwrap_or("unknown").to_string();
    LockError::Held {
        pid: next(),
        started_at: next(),
        endpoint: endpoint.to_string(),
        path: path.display().to_string(),
    }
}

impl EndpointLock {
    /// The lock file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for EndpointLock {
    fn drop(&mut self) {
        // Emptied first so a reader never names a finished run; the kernel would release the
        // flock on close anyway.
        let _ = self.file.set_len(0);
        // SAFETY: unlocking an fd we own.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_with_the_holders_pid_until_release() {
        let key = format!("test-endpoint-{}:1", std::process::id());
        let held = acquire(&key, "2026-01-01T00:00:00Z").unwrap();
        let err = acquire(&key, "later").unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains("2026-01-01T00:00:00Z") && err.contains("--allow-concurrent"));
        drop(held);
        let again = acquire(&key, "now").unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_left_by_a_dead_process_is_taken_over() {
        let key = format!("test-stale-{}:1", std::process::id());
        let path = lock_path(&key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // Text naming a pid that is gone, and no flock: what a killed run leaves.
        std::fs::write(&path, "999999999\n2020-01-01T00:00:00Z\nx\n").unwrap();
        let lock = acquire(&key, "now").unwrap();
        let text = std::fs::read_to_string(lock.path()).unwrap();
        assert!(
            text.starts_with(&format!("{}\n", std::process::id())),
            "{text}"
        );
    }
}
