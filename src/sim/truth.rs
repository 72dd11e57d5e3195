//! The simulator's own per-request timing truth (server side; the client flow schedule →
//! worker → http → sse → extract → record → collector → report never reads it): for every
//! streamed completion, TTFT from the arrival of the request to the departure of the first
//! content token, and E2E to the departure of the response's last byte, in nanoseconds on
//! `CLOCK_MONOTONIC`. Arrival is the kernel's receive stamp of the segment that carried the
//! request's last byte (`rt::tstamp` says why that byte), departure the kernel's transmit
//! stamp of the write's last byte with `--kernel-stamps rx-tx`, else the return of the write;
//! a read or write without its stamp falls back to its return, counted. The same two figures
//! on the simulator's own clock alone (read's return → write's return, `*_user`) are kept
//! beside them, and so is the thread's own wake-up (receive stamp → read's return): what a
//! truth that starts when the read returns bills to the client. Each listener thread owns one `TruthHist` per
//! figure and is its only writer (relaxed load + store, as `counter::bump`); readers sum the
//! threads into an owned `TruthCounts` and read percentiles from that. Recording may not
//! lock, allocate or loop; everything else here runs off the serving path.
//!
//! Buckets are log-linear (HdrHistogram's layout): exact below 128 ns, then 64 sub-buckets
//! per power of two, so a bucket is at most 1/64 of its lower bound wide and its midpoint,
//! which is what a percentile reports, is within 0.8 % of every value in it. Values are
//! clamped to [1 µs, 60 s] and each clamp is counted.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use serde::Serialize;

use super::counter::bump;

/// Below this everything is exact, one bucket per nanosecond.
const LINEAR: u64 = 128;
/// log2 of the sub-buckets per power of two above `LINEAR`.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Smallest and largest values kept; others are clamped and counted.
pub(crate) const LOW_NS: u64 = 1_000;
pub(crate) const HIGH_NS: u64 = 60_000_000_000;
/// Buckets needed to reach `HIGH_NS` (< 2^36): 128 linear + 64 for each of 2^7..2^36.
pub(crate) const BUCKETS: usize = LINEAR as usize + (36 - 7) * SUB as usize;

/// The bucket a value falls in (values up to 2^36 - 1).
#[inline]
pub(crate) fn bucket_of(v_ns: u64) -> usize {
    if v_ns < LINEAR {
        return v_ns as usize;
    }
    let exp = 63 - v_ns.leading_zeros();
    let shift = exp - SUB_BITS;
    let sub = (v_ns >> shift) - SUB;
    LINEAR as usize + (exp as usize - 7) * SUB as usize + sub as usize
}

/// The first value of bucket `i` and its width.
pub(crate) fn bucket_range(i: usize) -> (u64, u64) {
    if (i as u64) < LINEAR {
        return (i as u64, 1);
    }
    let k = i - LINEAR as usize;
    let shift = (k / SUB as usize) as u32 + 7 - SUB_BITS;
    let sub = (k % SUB as usize) as u64;
    ((SUB + sub) << shift, 1 << shift)
}

/// What a percentile of bucket `i` reports: its midpoint (exact in the linear range).
pub(crate) fn bucket_value(i: usize) -> u64 {
    let (low, width) = bucket_range(i);
    low + (width - 1) / 2
}

/// One thread's histogram of one figure; written only by that thread.
#[derive(Debug)]
pub(crate) struct TruthHist {
    buckets: Box<[AtomicU64]>,
    /// Sum of the (clamped) values, for the mean.
    sum_ns: AtomicU64,
    clamped_low: AtomicU64,
    clamped_high: AtomicU64,
}

impl Default for TruthHist {
    fn default() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            clamped_low: AtomicU64::new(0),
            clamped_high: AtomicU64::new(0),
        }
    }
}

impl TruthHist {
    /// Counts one value. Only the owning thread may call this.
    #[inline]
    pub(crate) fn record(&self, v_ns: u64) {
        let v = if v_ns < LOW_NS {
            bump(&self.clamped_low, 1);
            LOW_NS
        } else if v_ns > HIGH_NS {
            bump(&self.clamped_high, 1);
            HIGH_NS
        } else {
            v_ns
        };
        bump(&self.buckets[bucket_of(v)], 1);
        bump(&self.sum_ns, v);
    }
}

/// Summed bucket counts of one figure, owned: what readers compute from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TruthCounts {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
    pub clamped_low: u64,
    pub clamped_high: u64,
}

impl Default for TruthCounts {
    fn default() -> Self {
        Self {
            buckets: vec![0; BUCKETS],
            sum_ns: 0,
            clamped_low: 0,
            clamped_high: 0,
        }
    }
}

impl TruthCounts {
    pub(crate) fn add(&mut self, h: &TruthHist) {
        for (sum, b) in self.buckets.iter_mut().zip(h.buckets.iter()) {
            *sum += b.load(Relaxed);
        }
        self.sum_ns += h.sum_ns.load(Relaxed);
        self.clamped_low += h.clamped_low.load(Relaxed);
        self.clamped_high += h.clamped_high.load(Relaxed);
    }

    /// What was counted since `base` (a snapshot taken earlier of the same threads).
    pub(crate) fn since(&self, base: &TruthCounts) -> TruthCounts {
        TruthCounts {
            buckets: (self.buckets.iter().zip(&base.buckets))
                .map(|(now, then)| now.saturating_sub(*then))
                .collect(),
            sum_ns: self.sum_ns.saturating_sub(base.sum_ns),
            clamped_low: self.clamped_low.saturating_sub(base.clamped_low),
            clamped_high: self.clamped_high.saturating_sub(base.clamped_high),
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The value at quantile `q` (0..=1): the midpoint of the bucket holding the
    /// ⌈q·count⌉-th value (the first for q = 0). `None` when empty.
    pub(crate) fn quantile_ns(&self, q: f64) -> Option<u64> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_value(i));
            }
        }
        None
    }

    pub(crate) fn summary(&self) -> TruthSummary {
        let count = self.count();
        let us = |q: f64| self.quantile_ns(q).map(|ns| ns as f64 / 1e3);
        TruthSummary {
            count,
            mean: (count > 0).then(|| self.sum_ns as f64 / count as f64 / 1e3),
            p50: us(0.50),
            p90: us(0.90),
            p99: us(0.99),
            max: us(1.0),
            clamped_low: self.clamped_low,
            clamped_high: self.clamped_high,
        }
    }
}

/// Percentiles of one figure in microseconds, within the buckets' 0.8 % (`max` too: it is
/// the top non-empty bucket's midpoint). `None` when nothing was counted.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct TruthSummary {
    /// Streams whose first (for TTFT) or last (for E2E) write returned.
    pub count: u64,
    /// Mean, µs (exact, from the sum).
    pub mean: Option<f64>,
    /// Median, µs.
    pub p50: Option<f64>,
    /// 90th percentile, µs.
    pub p90: Option<f64>,
    /// 99th percentile, µs.
    pub p99: Option<f64>,
    /// Largest, µs.
    pub max: Option<f64>,
    /// Values under 1 µs counted as 1 µs.
    pub clamped_low: u64,
    /// Values over 60 s counted as 60 s.
    pub clamped_high: u64,
}

/// Every figure, summed over threads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TruthPair {
    pub ttft: TruthCounts,
    pub e2e: TruthCounts,
    pub ttft_user: TruthCounts,
    pub e2e_user: TruthCounts,
    pub wake: TruthCounts,
    pub unstamped_reads: u64,
    pub unstamped_writes: u64,
    pub queue: TruthCounts,
    pub completions: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
}

impl TruthPair {
    pub(crate) fn since(&self, base: &TruthPair) -> TruthPair {
        TruthPair {
            ttft: self.ttft.since(&base.ttft),
            e2e: self.e2e.since(&base.e2e),
            ttft_user: self.ttft_user.since(&base.ttft_user),
            e2e_user: self.e2e_user.since(&base.e2e_user),
            wake: self.wake.since(&base.wake),
            unstamped_reads: self.unstamped_reads.saturating_sub(base.unstamped_reads),
            unstamped_writes: self.unstamped_writes.saturating_sub(base.unstamped_writes),
            queue: self.queue.since(&base.queue),
            completions: self.completions.saturating_sub(base.completions),
            prompt_tokens: self.prompt_tokens.saturating_sub(base.prompt_tokens),
            cached_tokens: self.cached_tokens.saturating_sub(base.cached_tokens),
        }
    }
}

/// Most distinct prompt hashes kept (8 MiB of hashes at most).
pub(crate) const DISTINCT_BOUND: usize = 1 << 20;

/// The set of prompt hashes every replica adds to, one insert per admitted completion with
/// the KV cache on: a lock, so kept off the model-off path entirely. Bounded; what it cannot
/// keep is counted.
#[derive(Debug, Default)]
pub(crate) struct Distinct {
    set: Mutex<std::collections::HashSet<u64>>,
    overflow: AtomicU64,
}

impl Distinct {
    pub(crate) fn insert(&self, h: u64) {
        let mut set = self.set.lock().unwrap_or_else(|e| e.into_inner());
        if set.len() < DISTINCT_BOUND {
            set.insert(h);
        } else if !set.contains(&h) {
            self.overflow.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.set.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }

    pub(crate) fn overflow(&self) -> u64 {
        self.overflow.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_maps_to_a_bucket_that_holds_it() {
        let mut v = 0u64;
        while v <= HIGH_NS {
            let i = bucket_of(v);
            assert!(i < BUCKETS, "{v} -> {i}");
            let (low, width) = bucket_range(i);
            assert!(low <= v && v < low + width, "{v} in [{low}, +{width})");
            if v >= LINEAR {
                // Width at most 1/64 of the bucket's start: the midpoint is within 0.8 %.
                assert!(width * 64 <= low, "{v}: width {width} low {low}");
                let mid = bucket_value(i) as f64;
                assert!((mid - v as f64).abs() <= v as f64 * 0.008, "{v} -> {mid}");
            } else {
                assert_eq!(bucket_value(i), v);
            }
            v = v + 1 + v / 97;
        }
        assert!(bucket_of(HIGH_NS) < BUCKETS);
        assert_eq!(bucket_of((1 << 36) - 1), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_contiguous_and_ordered() {
        for i in 1..BUCKETS {
            let (low, _) = bucket_range(i);
            let (prev_low, prev_width) = bucket_range(i - 1);
            assert_eq!(prev_low + prev_width, low, "bucket {i}");
            assert_eq!(bucket_of(low), i);
            assert_eq!(bucket_of(low - 1), i - 1);
        }
    }

    #[test]
    fn percentiles_of_known_data() {
        let h = TruthHist::default();
        // 1..=1000 µs: p50 = 500 µs, p90 = 900, p99 = 990, max = 1000.
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let mut c = TruthCounts::default();
        c.add(&h);
        let s = c.summary();
        assert_eq!(s.count, 1000);
        for (got, want) in [
            (s.p50, 500.0),
            (s.p90, 900.0),
            (s.p99, 990.0),
            (s.max, 1000.0),
        ] {
            let got = got.unwrap();
            assert!((got - want).abs() <= want * 0.008, "{got} vs {want}");
        }
        assert!((s.mean.unwrap() - 500.5).abs() < 1e-9);
        assert_eq!((s.clamped_low, s.clamped_high), (0, 0));
    }

    #[test]
    fn clamps_are_counted_and_windows_subtract() {
        let h = TruthHist::default();
        h.record(10);
        h.record(HIGH_NS * 2);
        let mut before = TruthCounts::default();
        before.add(&h);
        let s = before.summary();
        assert_eq!((s.count, s.clamped_low, s.clamped_high), (2, 1, 1));
        assert_eq!(s.p50, Some(bucket_value(bucket_of(LOW_NS)) as f64 / 1e3));
        for _ in 0..5 {
            h.record(7_000_000);
        }
        let mut after = TruthCounts::default();
        after.add(&h);
        let w = after.since(&before).summary();
        assert_eq!((w.count, w.clamped_low, w.clamped_high), (5, 0, 0));
        assert!((w.p99.unwrap() - 7000.0).abs() <= 7000.0 * 0.008);
        assert!((w.mean.unwrap() - 7000.0).abs() < 1e-9);
        assert_eq!(TruthCounts::default().summary().p50, None);
    }
}
