//! The arrival process the simulator saw (server side; the client flow schedule → worker →
//! http → sse → extract → record → collector → report never reads it): every completion
//! request's arrival, stamped twice — by the kernel (the receive stamp of the segment that
//! carried its last byte, see `rt::tstamp`) and by the listener thread (when its read
//! returned) — kept in a bounded ring per thread, and, off the serving path, the statistics
//! of the gaps between consecutive arrivals of all threads merged in time order.
//!
//! Why the last byte: it is the one stamp the kernel gives exactly (a read reports the stamp
//! of the segment holding the last byte it returned; a request written in one write is one
//! segment on loopback up to 64 KiB anyway), it is when the request exists for the server,
//! and it is where the truth's TTFT starts, so one stamp serves both.
//!
//! Why the kernel's stamp: a listener thread that wakes once for several requests stamps them
//! all at its wake-up, so its own stamps clump the arrival process (their gaps' coefficient
//! of variation rises above a Poisson process's 1.0) however exactly the client sent; the
//! kernel stamps each segment as it enters the stack. Both are kept, so the two can be set
//! side by side.
//!
//! Recording is two relaxed stores and a release store into memory the thread owns (no lock,
//! no allocation); a full ring overwrites its oldest stamps, and the readers count what was
//! lost. Readers copy a thread's ring seqlock-style: stamps overwritten while they copied are
//! dropped, never misread.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use serde::Serialize;

/// One thread's arrivals; written only by that thread.
#[derive(Debug)]
pub(crate) struct ArrivalRing {
    /// `CLOCK_MONOTONIC` ns of the kernel's receive stamp; 0: the read carried none.
    kernel: Box<[AtomicU64]>,
    /// `CLOCK_MONOTONIC` ns when the read returned.
    user: Box<[AtomicU64]>,
    /// Arrivals recorded since the thread started; slot `i % len` holds arrival `i`.
    head: AtomicU64,
}

/// A one-slot ring: what a thread's counters start with before `ThreadStats::new` gives it
/// its size (`--arrivals-kept`).
impl Default for ArrivalRing {
    fn default() -> Self {
        Self::with_capacity(1)
    }
}

/// A zeroed slice of `n` atomics, without touching its pages (the allocator maps zero pages).
fn zeroed(n: usize) -> Box<[AtomicU64]> {
    const _: () = assert!(
        std::mem::size_of::<AtomicU64>() == std::mem::size_of::<u64>()
            && std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>()
    );
    let raw = Box::into_raw(vec![0u64; n].into_boxed_slice());
    // SAFETY: `AtomicU64` has the size and bit validity of `u64` (std's documentation) and,
    // as asserted above, its alignment here; the slice is uniquely owned and moves whole
    // from one box type to the other, so its layout for deallocation is unchanged.
    unsafe { Box::from_raw(raw as *mut [AtomicU64]) }
}

impl ArrivalRing {
    /// A ring of `n` slots (a power of two), zeroed: 16 bytes a slot, in pages the
    /// allocator maps untouched.
    pub(crate) fn with_capacity(n: usize) -> Self {
        assert!(n.is_power_of_two(), "ring size {n}");
        Self {
            kernel: zeroed(n),
            user: zeroed(n),
            head: AtomicU64::new(0),
        }
    }

    /// Records one arrival. Only the owning thread may call this.
    #[inline]
    pub(crate) fn record(&self, kernel_ns: Option<u64>, user_ns: u64) {
        let at = self.head.load(Ordering::Relaxed);
        let slot = at as usize & (self.user.len() - 1);
        self.kernel[slot].store(kernel_ns.unwrap_or(0), Ordering::Relaxed);
        self.user[slot].store(user_ns, Ordering::Relaxed);
        self.head.store(at + 1, Ordering::Release);
    }

    /// Arrivals recorded so far (a window's start).
    pub(crate) fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Appends the arrivals since `from` (a `head()` taken earlier) still in the ring to
    /// `into`; returns how many arrived since `from` and how many of those it no longer
    /// holds. With the ring full, the oldest slot may be being overwritten as it is read, so
    /// it is dropped too.
    fn copy_since(&self, from: u64, into: &mut Copied) -> (u64, u64) {
        let len = self.user.len() as u64;
        let head = self.head();
        let start = from.max(head.saturating_sub(len));
        let (k0, u0) = (into.kernel.len(), into.user.len());
        let mut copied = Vec::with_capacity((head - start) as usize);
        for at in start..head {
            let slot = (at % len) as usize;
            let k = self.kernel[slot].load(Ordering::Relaxed);
            let u = self.user[slot].load(Ordering::Relaxed);
            copied.push((k, u));
        }
        // Stamps the writer may have overwritten while they were copied are dropped: arrival
        // `at` is safe while the writer, at `head_now`, has not reached `at + len`.
        fence(Ordering::Acquire);
        let head_now = self.head.load(Ordering::Relaxed);
        let safe = start.max((head_now + 1).saturating_sub(len));
        let skip = (safe - start).min(copied.len() as u64) as usize;
        for &(k, u) in &copied[skip..] {
            if k != 0 {
                into.kernel.push(k);
            }
            into.user.push(u);
        }
        let kept = (into.user.len() - u0) as u64;
        // A thread that lost arrivals leaves a hole before its oldest kept one: the merged
        // sequence is whole only after it.
        if head.saturating_sub(from) > kept {
            let first = |v: &[u64]| v.iter().copied().min();
            into.cut_kernel = into.cut_kernel.max(first(&into.kernel[k0..]).unwrap_or(0));
            into.cut_user = into.cut_user.max(first(&into.user[u0..]).unwrap_or(0));
        }
        let arrived = head.saturating_sub(from);
        (arrived, arrived.saturating_sub(kept))
    }
}

/// Every thread's arrivals of a window, gathered for merging.
#[derive(Default)]
struct Copied {
    kernel: Vec<u64>,
    user: Vec<u64>,
    /// Arrivals before these are incomplete (a thread's ring had already dropped them).
    cut_kernel: u64,
    cut_user: u64,
}

/// The arrival process of a window, as `GET /sim/truth` and a run's `sim` block report it.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct ArrivalSummary {
    /// Completion requests that arrived in the window, every thread.
    pub count: u64,
    /// Of those, arrivals whose stamps a full ring had already overwritten; the gaps are of
    /// the newest arrivals only, from where every thread's ring still held them.
    pub overflow: u64,
    /// Gaps between the kernel's receive stamps (requests whose read carried one).
    pub kernel: GapSummary,
    /// Gaps between the listener threads' own stamps (when each read returned).
    pub user: GapSummary,
}

/// The gaps between consecutive arrivals, all threads merged in time order.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct GapSummary {
    /// Arrivals the gaps are between (gaps: one fewer).
    pub count: u64,
    /// Mean gap, µs.
    pub mean_gap_us: Option<f64>,
    /// Standard deviation of the gaps over their mean: 1.0 for Poisson arrivals, 0 for
    /// constant ones, 1/√K for gamma arrivals of shape K; clumped arrivals push it up.
    pub gap_cv: Option<f64>,
}

/// The arrivals since `from` (one `head()` per ring, in order), merged.
pub(crate) fn summary<'a>(
    rings: impl Iterator<Item = &'a ArrivalRing>,
    from: &[u64],
) -> ArrivalSummary {
    let (mut copied, count, overflow) = gather(rings, from);
    ArrivalSummary {
        count,
        overflow,
        kernel: gaps(&mut copied.kernel, copied.cut_kernel),
        user: gaps(&mut copied.user, copied.cut_user),
    }
}

/// The arrivals of a window themselves, merged in time order (`GET /sim/arrivals`): what
/// the gap statistics are computed from, for a referee that tests their distribution (a
/// KS test against the exponential, `tools/arrivals-check`). At most `--arrivals-kept` per
/// thread: 16 bytes each here, some 40 bytes each as JSON.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct ArrivalStamps {
    /// As in `ArrivalSummary`.
    pub count: u64,
    pub overflow: u64,
    /// The kernel's receive stamps (`CLOCK_MONOTONIC` ns), ascending, from where every
    /// thread's ring still held them; reads that carried none are left out.
    pub kernel_ns: Vec<u64>,
    /// The listener threads' own stamps (when each read returned), the same way.
    pub user_ns: Vec<u64>,
}

/// The arrivals since `from`, merged: every stamp kept.
pub(crate) fn stamps<'a>(
    rings: impl Iterator<Item = &'a ArrivalRing>,
    from: &[u64],
) -> ArrivalStamps {
    let (mut copied, count, overflow) = gather(rings, from);
    whole_from(&mut copied.kernel, copied.cut_kernel);
    whole_from(&mut copied.user, copied.cut_user);
    ArrivalStamps {
        count,
        overflow,
        kernel_ns: copied.kernel,
        user_ns: copied.user,
    }
}

/// Every ring's arrivals since its `from`: the stamps, how many arrived, how many were lost.
fn gather<'a>(rings: impl Iterator<Item = &'a ArrivalRing>, from: &[u64]) -> (Copied, u64, u64) {
    let mut copied = Copied::default();
    let (mut count, mut overflow) = (0, 0);
    for (ring, &from) in rings.zip(from.iter().chain(std::iter::repeat(&0))) {
        let (arrived, lost) = ring.copy_since(from, &mut copied);
        count += arrived;
        overflow += lost;
    }
    (copied, count, overflow)
}

/// `stamps` from `cut` on, in time order.
fn whole_from(stamps: &mut Vec<u64>, cut: u64) {
    stamps.retain(|&s| s >= cut);
    stamps.sort_unstable();
}

/// Gap statistics of `stamps` from `cut` on, in time order.
fn gaps(stamps: &mut Vec<u64>, cut: u64) -> GapSummary {
    whole_from(stamps, cut);
    let n = stamps.len();
    let mut out = GapSummary {
        count: n as u64,
        ..GapSummary::default()
    };
    if n < 2 {
        return out;
    }
    let count = (n - 1) as f64;
    let mean = (stamps[n - 1] - stamps[0]) as f64 / count;
    let var = stamps
        .windows(2)
        .map(|w| {
            let d = (w[1] - w[0]) as f64 - mean;
            d * d
        })
        .sum::<f64>()
        / count;
    out.mean_gap_us = Some(mean / 1e3);
    out.gap_cv = (mean > 0.0).then(|| var.sqrt() / mean);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cv(s: &ArrivalSummary) -> (f64, f64) {
        (s.kernel.gap_cv.unwrap(), s.user.gap_cv.unwrap())
    }

    #[test]
    fn constant_gaps_merged_across_threads_have_no_spread() {
        // Two threads taking every other arrival of a 10 µs grid: merged, the gaps are 10 µs.
        let (a, b) = (
            ArrivalRing::with_capacity(64),
            ArrivalRing::with_capacity(64),
        );
        for i in 0..40u64 {
            let t = 1_000_000 + i * 10_000;
            let ring = if i % 2 == 0 { &a } else { &b };
            // The thread's own stamp lags by a varying wake-up; the kernel's does not.
            ring.record(Some(t), t + 3_000 + (i % 3) * 2_000);
        }
        let s = summary([&a, &b].into_iter(), &[0, 0]);
        assert_eq!(
            (s.count, s.overflow, s.kernel.count, s.user.count),
            (40, 0, 40, 40)
        );
        assert!((s.kernel.mean_gap_us.unwrap() - 10.0).abs() < 1e-9);
        let (kernel, user) = cv(&s);
        assert!(kernel < 1e-12, "{kernel}");
        assert!(user > 0.1, "the threads' stamps wander: {user}");
    }

    #[test]
    fn known_gaps_give_their_cv() {
        // Gaps 1, 3, 1, 3, ... µs: mean 2, standard deviation 1, CV 0.5.
        let ring = ArrivalRing::with_capacity(1024);
        let mut t = 5_000;
        for i in 0..101 {
            ring.record(Some(t), t);
            t += if i % 2 == 0 { 1_000 } else { 3_000 };
        }
        let s = summary(std::iter::once(&ring), &[0]);
        let (kernel, user) = cv(&s);
        assert!(
            (kernel - 0.5).abs() < 1e-9 && (user - 0.5).abs() < 1e-9,
            "{s:?}"
        );
        assert!((s.kernel.mean_gap_us.unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn unstamped_arrivals_count_but_have_no_kernel_gap() {
        let ring = ArrivalRing::with_capacity(16);
        ring.record(None, 10);
        ring.record(Some(15), 20);
        ring.record(Some(25), 30);
        let s = summary(std::iter::once(&ring), &[0]);
        assert_eq!((s.count, s.kernel.count, s.user.count), (3, 2, 3));
        let single = ArrivalRing::with_capacity(16);
        single.record(Some(1), 2);
        let s = summary(std::iter::once(&single), &[0]);
        assert_eq!(
            (s.count, s.kernel.gap_cv, s.user.mean_gap_us),
            (1, None, None)
        );
    }

    #[test]
    fn a_full_ring_counts_what_it_lost_and_merges_only_where_every_thread_is_whole() {
        // Thread a's ring of 8 holds its last 8 of 20 arrivals (t = 12..19 ms), of which the
        // oldest is dropped (a full ring's oldest slot may be mid-overwrite): 13..19 kept.
        // Thread b keeps all 5 of its (t = 0.5, 4.5, ..., 16.5 ms). Merged from a's oldest
        // kept stamp on: 13..19 and 16.5.
        let (a, b) = (ArrivalRing::with_capacity(8), ArrivalRing::with_capacity(8));
        for i in 0..20u64 {
            a.record(Some(i * 1_000_000), i * 1_000_000);
        }
        for i in 0..5u64 {
            b.record(Some(i * 4_000_000 + 500_000), i * 4_000_000 + 500_000);
        }
        let s = summary([&a, &b].into_iter(), &[0, 0]);
        assert_eq!((s.count, s.overflow), (25, 13));
        assert_eq!((s.kernel.count, s.user.count), (8, 8));
        // A window that starts after the losses loses nothing.
        let s = summary([&a, &b].into_iter(), &[15, 3]);
        assert_eq!((s.count, s.overflow, s.kernel.count), (7, 0, 7));
    }

    #[test]
    fn stamps_are_the_merged_arrivals_the_summary_is_computed_from() {
        // The same two threads as above: the stamps are a's 13..19 ms and b's 16.5 ms, in
        // order, and their gaps give the summary's figures.
        let (a, b) = (ArrivalRing::with_capacity(8), ArrivalRing::with_capacity(8));
        for i in 0..20u64 {
            a.record(Some(i * 1_000_000), i * 1_000_000 + 7);
        }
        for i in 0..5u64 {
            b.record(
                (i != 4).then_some(i * 4_000_000 + 500_000),
                i * 4_000_000 + 500_000,
            );
        }
        let st = stamps([&a, &b].into_iter(), &[0, 0]);
        let ms = |v: &[u64]| v.iter().map(|&t| t as f64 / 1e6).collect::<Vec<_>>();
        assert_eq!((st.count, st.overflow), (25, 13));
        assert_eq!(
            ms(&st.kernel_ns),
            vec![13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]
        );
        let user = ms(&st.user_ns);
        assert_eq!(user.len(), 8);
        assert!((user[3] - 16.000_007).abs() < 1e-9 && (user[4] - 16.5).abs() < 1e-9);
        let s = summary([&a, &b].into_iter(), &[0, 0]);
        assert_eq!(s.kernel.count, st.kernel_ns.len() as u64);
        assert_eq!(s.kernel.gap_cv, Some(0.0));
    }

    #[test]
    fn the_ring_starts_zeroed_and_wraps() {
        let ring = ArrivalRing::with_capacity(4);
        assert_eq!(ring.head(), 0);
        assert!(ring.user.iter().all(|s| s.load(Ordering::Relaxed) == 0));
        for i in 1..=6 {
            ring.record(Some(i), i);
        }
        let mut into = Copied::default();
        assert_eq!(ring.copy_since(0, &mut into), (6, 3));
        assert_eq!(into.user, vec![4, 5, 6]);
        assert_eq!((into.cut_kernel, into.cut_user), (4, 4));
    }
}
