//! The run's one clock. Every stamp in a run is integer nanoseconds since one origin taken
//! when the run starts, read from `CLOCK_MONOTONIC`. The simulator stamps its writes with the
//! same clock, absolute (`mono_ns`), so a client on the same host can compute delivery delay.
//! Nothing here allocates or blocks.

/// Absolute `CLOCK_MONOTONIC` in nanoseconds (shared by every process on the host).
#[inline]
pub fn mono_ns() -> u64 {
    read_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    read_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time consumed so far by another thread of this process, ns; `None` once it has
/// exited (glibc answers `ESRCH` for a thread whose kernel id is gone) or when the clock
/// cannot be read. Not for the hot path: the `--metrics-listen` page reads the workers'.
pub fn other_thread_cpu_ns(thread: libc::pthread_t) -> Option<u64> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: `thread` is a handle of a thread not yet joined (the caller holds its
    // `JoinHandle`); `id` is a valid, writable clockid_t.
    if unsafe { libc::pthread_getcpuclockid(thread, &mut id) } != 0 {
        return None;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; a clock that is gone answers an error.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some((ts.tv_sec.max(0) as u64) * 1_000_000_000 + ts.tv_nsec as u64)
}

/// `CLOCK_REALTIME` (the wall clock, as NTP or PTP steer it), Unix nanoseconds: the clock of
/// the kernel's socket timestamps too.
pub fn realtime_ns() -> u64 {
    read_ns(libc::CLOCK_REALTIME)
}

/// One of the clocks above, ns.
#[inline]
fn read_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the callers' clocks always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec.max(0) as u64) * 1_000_000_000 + ts.tv_nsec as u64
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

    /// A run clock whose origin was `back_ns` ago (a `--start-at` instant already past, so
    /// that the schedule's start is still a stamp ≥ 0).
    pub fn start_back(back_ns: u64) -> Self {
        Self {
            origin_mono_ns: mono_ns().saturating_sub(back_ns),
        }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        mono_ns().saturating_sub(self.origin_mono_ns)
    }

    pub fn origin_mono_ns(&self) -> u64 {
        self.origin_mono_ns
    }
}

/// The wall-clock instant of `clock`'s origin, Unix ns, and the uncertainty of that reading,
/// ns (see `wall_read`).
pub fn wall_origin(clock: &RunClock) -> (u64, u64) {
    let (wall, mid, half) = wall_read(|| clock.now_ns());
    (wall.saturating_sub(mid), half)
}

/// `CLOCK_REALTIME − CLOCK_MONOTONIC`, ns: the kernel stamps sockets in real time, the run
/// clock is monotonic. A clock step after the reading would shift it.
pub fn realtime_offset_ns() -> i64 {
    let (wall, mid, _) = wall_read(mono_ns);
    wall as i64 - mid as i64
}

/// The wall clock read between two reads of `now`, the narrowest of a few such windows: the
/// wall reading, the window's midpoint on `now`'s clock, and half its width (the reading's
/// uncertainty).
fn wall_read(now: impl Fn() -> u64) -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..8 {
        let a = now();
        let wall = realtime_ns();
        let b = now();
        let half = (b - a) / 2;
        if half < best.2 {
            best = (wall, a + half, half);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_origin_maps_run_stamps_to_the_wall_clock() {
        let clock = RunClock::start();
        let (origin, uncertainty) = wall_origin(&clock);
        assert!(uncertainty < 50_000_000, "{uncertainty} ns");
        let (t, wall) = (clock.now_ns(), realtime_ns());
        // The wall clock may be stepped by NTP in between; a 1 s tolerance still catches a
        // sign or unit error.
        assert!(
            (origin + t).abs_diff(wall) < 1_000_000_000,
            "{origin} + {t} vs {wall}"
        );
    }

    #[test]
    fn run_clock_is_monotonic_and_starts_near_zero() {
        let clock = RunClock::start();
        let a = clock.now_ns();
        let b = clock.now_ns();
        assert!(a < 10_000_000, "origin should be moments ago, got {a} ns");
        assert!(b >= a);
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

/// The wall-clock time now as RFC 3339 UTC (`2026-11-29T15:18:21Z`), for report headers only.
pub fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// A Unix time in seconds as RFC 3339 UTC (`2026-11-29T15:18:21Z`).
pub fn rfc3339(unix_s: u64) -> String {
    let (days, rem) = (unix_s / 86_400, unix_s % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod wall_tests {
    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_959_946), "2026-11-29T13:45:46Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
