//! Part of the runtime underneath client and simulator: what the kernel's scheduler says of the
//! calling thread — how long it ran, how long it was runnable but waited for its CPU (another
//! thread or process held it), and how often it was preempted. Read at a worker's start and
//! end, never on the hot path (it opens a file). Never prints.
//!
//! The source is `/proc/thread-self/schedstat` (`run_ns wait_ns timeslices`, the kernel's
//! `sched_info` of the thread, `CONFIG_SCHED_INFO`) and `getrusage(RUSAGE_THREAD)`'s
//! involuntary context switches. Where the file cannot be read the wait is `None`: unknown,
//! not zero.

/// One reading of the calling thread's scheduler figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedReading {
    /// Nanoseconds runnable but not running (on a run queue), since the thread started;
    /// `None` when the kernel does not say.
    pub wait_ns: Option<u64>,
    /// Times the thread was switched out while it still wanted its CPU.
    pub involuntary_switches: u64,
}

/// What happened between two readings of the same thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedDelta {
    /// Runnable-but-waiting nanoseconds between the readings (`None`: unknown).
    pub wait_ns: Option<u64>,
    /// Involuntary context switches between the readings.
    pub involuntary_switches: u64,
}

impl SchedReading {
    /// The calling thread's figures now.
    pub fn now() -> SchedReading {
        SchedReading {
            wait_ns: std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| parse_schedstat(&s))
                .map(|(_, wait_ns)| wait_ns),
            involuntary_switches: involuntary_switches(),
        }
    }

    /// What happened since `start` (a reading of the same thread).
    pub fn since(&self, start: &SchedReading) -> SchedDelta {
        SchedDelta {
            wait_ns: match (start.wait_ns, self.wait_ns) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(start.involuntary_switches),
        }
    }
}

/// `run_ns wait_ns timeslices` → `(run_ns, wait_ns)`; `None` unless it has those fields.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    let run_ns = fields.next()?.ok()?;
    let wait_ns = fields.next()?.ok()?;
    fields.next()?.ok()?;
    Some((run_ns, wait_ns))
}

/// The calling thread's involuntary context switches (0 when the kernel refuses).
fn involuntary_switches() -> u64 {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct, which
    // `getrusage` fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`; RUSAGE_THREAD exists on Linux ≥ 2.6.26.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if rc == 0 {
        usage.ru_nivcsw.max(0) as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_has_three_fields() {
        assert_eq!(
            parse_schedstat("123456789 987654321 42\n"),
            Some((123_456_789, 987_654_321))
        );
        assert_eq!(parse_schedstat("1 2\n"), None);
        assert_eq!(parse_schedstat("x 2 3\n"), None);
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn a_delta_is_the_later_less_the_earlier_and_unknown_stays_unknown() {
        let a = SchedReading {
            wait_ns: Some(1_000),
            involuntary_switches: 3,
        };
        let b = SchedReading {
            wait_ns: Some(5_500),
            involuntary_switches: 10,
        };
        assert_eq!(
            b.since(&a),
            SchedDelta {
                wait_ns: Some(4_500),
                involuntary_switches: 7
            }
        );
        let unknown = SchedReading {
            wait_ns: None,
            involuntary_switches: 10,
        };
        assert_eq!(unknown.since(&a).wait_ns, None);
    }

    #[test]
    fn this_kernel_says_how_long_this_thread_waited() {
        // Linux has had /proc/thread-self/schedstat since 3.17 (with CONFIG_SCHED_INFO, on in
        // every distribution kernel); a reading that moves backwards would be a parse error.
        let a = SchedReading::now();
        let b = SchedReading::now();
        let (Some(x), Some(y)) = (a.wait_ns, b.wait_ns) else {
            panic!("no schedstat here: {a:?} {b:?}");
        };
        assert!(y >= x, "{x} then {y}");
    }
}
