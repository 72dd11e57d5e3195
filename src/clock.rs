//! The run's one clock. Every stamp in a run is integer nanoseconds since one origin taken
//! when the run starts, read from `CLOCK_MONOTONIC`. The simulator stamps its writes with the
//! same clock, absolute (`mono_ns`), so a client on the same host can compute delivery delay.
//! Nothing here allocates or blocks.

/// Absolute `CLOCK_MONOTONIC` in nanoseconds (shared by every process on the host).
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time consumed by the calling thread, in nanoseconds.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above; CLOCK_THREAD_CPUTIME_ID is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The run clock: `now_ns()` is nanoseconds since the run's origin.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    origin_mono_ns: u64,
}

impl RunClock {
    pub fn start() -> Self {
        Self {
            origin_mono_ns: mono_ns(),
        }
    }

    /// A clock whose origin is a given absolute monotonic stamp (tests, shards).
    pub fn with_origin(origin_mono_ns: u64) -> Self {
        Self { origin_mono_ns }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        mono_ns().saturating_sub(self.origin_mono_ns)
    }

    pub fn origin_mono_ns(&self) -> u64 {
        self.origin_mono_ns
    }

    /// Converts an absolute monotonic stamp (the simulator's) to this run's time line.
    #[inline]
    pub fn from_mono(&self, mono_ns: u64) -> i64 {
        mono_ns as i64 - self.origin_mono_ns as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_clock_is_monotonic_and_starts_near_zero() {
        let clock = RunClock::start();
        let a = clock.now_ns();
        let b = clock.now_ns();
        assert!(a < 10_000_000, "origin should be moments ago, got {a} ns");
        assert!(b >= a);
        assert_eq!(clock.from_mono(clock.origin_mono_ns() + 5), 5);
    }

    #[test]
    fn thread_cpu_clock_advances_with_work() {
        let before = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > before);
    }
}
