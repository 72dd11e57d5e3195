//! Part of the runtime underneath client and simulator: the process's descriptor limits. A run
//! may hold tens of thousands of connections (and, with the in-process simulator, both ends of
//! each), so the soft limit is raised and the descriptor table grown once, before any thread
//! that the growth would stall has started. Never prints.

/// Soft `RLIMIT_NOFILE` raised to the hard limit, and the descriptor table grown to it (up to
/// `FD_TABLE_PRESIZE`, 65,536) now; returns the soft limit in force.
///
/// Why grow the table now: the kernel doubles a process's descriptor table when an fd past its
/// end is asked for, and in a multi-threaded process each doubling waits for an RCU grace
/// period (`expand_files` → `synchronize_rcu`), measured here at 9–14 ms in uninterruptible
/// sleep inside `socket()` or `accept()`. Mid-run, that stalled a worker at 64, 128, 256, ...
/// connections; at 30,000 req/s each stall left ~400 arrivals due at once, which opened more
/// connections and so more doublings, and the run collapsed. The table never shrinks, so one
/// growth before the run removes them all.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid, owned struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    presize_fd_table(lim.rlim_cur.min(FD_TABLE_PRESIZE));
    lim.rlim_cur
}

/// The most descriptors the table is grown to ahead of time: 8 bytes of kernel memory each,
/// and more connections than this are past what one client machine opens in a run.
const FD_TABLE_PRESIZE: u64 = 65_536;

/// Grows the descriptor table to hold `fds` descriptors by opening `/dev/null` into the last
/// slot and closing it. Best effort: a failure leaves the table growing on demand.
fn presize_fd_table(fds: u64) {
    let Ok(last) = libc::c_int::try_from(fds.saturating_sub(1)) else {
        return;
    };
    // SAFETY: `dup3` into a slot we then close; if the slot was in use it is not touched
    // (F_GETFD succeeds), so no descriptor of ours is replaced or closed.
    unsafe {
        if last < 3 || libc::fcntl(last, libc::F_GETFD) != -1 {
            return;
        }
        let probe = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if probe < 0 {
            return;
        }
        if libc::dup3(probe, last, libc::O_CLOEXEC) == last {
            libc::close(last);
        }
        libc::close(probe);
    }
}

#[cfg(test)]
mod tests {
    /// `FDSize` in /proc/self/status is the kernel's descriptor table size.
    #[test]
    fn raising_the_fd_limit_grows_the_descriptor_table_up_front() {
        let limit = super::raise_fd_limit();
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let size: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("FDSize:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("FDSize in /proc/self/status");
        assert!(
            size >= limit.min(super::FD_TABLE_PRESIZE),
            "FDSize {size}, limit {limit}"
        );
    }
}
