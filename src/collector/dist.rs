//! Part of the collector (… → record → **collector** → summary → report): one bounded
//! distribution of nanosecond values. Percentiles come from an HdrHistogram (3 significant
//! digits, 1 ns … 1 h, memory fixed up front); count, min, max, mean and std are kept exactly
//! beside it (u128 sums), so an outlier beyond the histogram's bound is clamped in the
//! histogram but still counted, and still moves the mean and the max. Never allocates after
//! construction; never prints.

use crate::summary::{is_small_sample, percentile_key, Stats, FIXED_PERCENTILES};
use hdrhistogram::Histogram;

pub use crate::summary::workers::{new_histogram, HIST_MAX_NS};

const NS_PER_MS: f64 = 1e6;

#[derive(Clone, Debug)]
pub struct Dist {
    hist: Histogram<u64>,
    count: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
    min_ns: u64,
    max_ns: u64,
    /// Values above `HIST_MAX_NS`, clamped in the histogram.
    clamped: u64,
    /// False when built from histograms only (no exact sums): mean/std then come from them.
    exact: bool,
}

impl Default for Dist {
    fn default() -> Self {
        Self::new()
    }
}

impl Dist {
    pub fn new() -> Self {
        Dist {
            hist: new_histogram(),
            count: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            clamped: 0,
            exact: true,
        }
    }

    #[inline]
    pub fn record(&mut self, value_ns: u64) {
        if value_ns > HIST_MAX_NS {
            self.clamped += 1;
        }
        self.hist.saturating_record(value_ns);
        self.count += 1;
        let v = value_ns as u128;
        self.sum_ns += v;
        self.sum_sq_ns = self.sum_sq_ns.saturating_add(v * v);
        self.min_ns = self.min_ns.min(value_ns);
        self.max_ns = self.max_ns.max(value_ns);
    }

    /// Adds a histogram recorded elsewhere (a worker's loop-lag probe). Only the histogram is
    /// known, so this distribution's mean and std become the histogram's from here on.
    pub fn merge_histogram(&mut self, other: &Histogram<u64>) {
        if other.is_empty() {
            return;
        }
        self.exact = false;
        if self.hist.add(other).is_err() {
            // Different bounds: re-record value by value, clamping what does not fit.
            for v in other.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        self.count += other.len();
        self.min_ns = self.min_ns.min(other.min());
        self.max_ns = self.max_ns.max(other.max());
        self.clamped += other.iter_recorded().fold(0, |n, v| {
            n + if v.value_iterated_to() > HIST_MAX_NS {
                v.count_at_value()
            } else {
                0
            }
        });
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact smallest and largest values; `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }

    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    pub fn mean_ns(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        if !self.exact {
            return Some(self.hist.mean());
        }
        Some(self.sum_ns as f64 / self.count as f64)
    }

    /// Population std, from exact integer sums: n·Σx² − (Σx)² is computed in u128 so a large
    /// mean with a small spread loses nothing to cancellation.
    pub fn std_ns(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let n = self.count as u128;
        let exact = self.exact && self.sum_sq_ns < u128::MAX;
        let spread = n
            .checked_mul(self.sum_sq_ns)
            .zip(self.sum_ns.checked_mul(self.sum_ns))
            .filter(|_| exact)
            .map(|(a, b)| a.saturating_sub(b));
        Some(match spread {
            Some(s) => (s as f64).sqrt() / self.count as f64,
            None => self.hist.stdev(),
        })
    }

    /// A percentile in ns: the histogram's value (within 0.1%), held inside the exact
    /// [min, max] so that p100 is the true maximum and no percentile exceeds it.
    pub fn percentile_ns(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let v = self.hist.value_at_quantile(rank_quantile(p, self.count));
        Some(v.clamp(self.min_ns, self.max_ns))
    }

    /// The summary's stats in ms: fixed percentiles, then the configured ones, small samples
    /// marked.
    pub fn stats_ms(&self, configured: &[f64]) -> Stats {
        self.stats_per(configured, NS_PER_MS)
    }

    /// The summary's stats in the values' own unit (bytes, items), as `stats_ms` gives them.
    pub fn stats(&self, configured: &[f64]) -> Stats {
        self.stats_per(configured, 1.0)
    }

    /// The stats with every value divided by `unit`.
    fn stats_per(&self, configured: &[f64], unit: f64) -> Stats {
        let scaled = |v: u64| v as f64 / unit;
        let mut s = Stats {
            count: self.count,
            mean: self.mean_ns().map(|v| v / unit),
            std: self.std_ns().map(|v| v / unit),
            min: (self.count > 0).then(|| scaled(self.min_ns)),
            max: (self.count > 0).then(|| scaled(self.max_ns)),
            ..Default::default()
        };
        for &p in FIXED_PERCENTILES.iter().chain(configured) {
            let key = percentile_key(p);
            if is_small_sample(p, self.count) && !s.is_small(&key) {
                s.small_sample.push(key.clone());
            }
            s.set(key, self.percentile_ns(p).map(scaled));
        }
        s
    }
}

/// The quantile to ask the histogram for so that it lands on the nearest-rank sample,
/// rank = ⌈p·n/100⌉. Passing p/100 directly lets float noise push the rank one sample up
/// (99.9/100 · 1000 = 999.000…1, so p99.9 of 1000 samples would read the maximum).
fn rank_quantile(p: f64, count: u64) -> f64 {
    let n = count as f64;
    let exact = p / 100.0 * n;
    let rank = (exact - exact * 1e-12).ceil().clamp(1.0, n);
    // Half a sample below the rank: the histogram's own ⌈q·n⌉ then gives the rank back.
    (rank - 0.5) / n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_bounded_percentiles() {
        let mut d = Dist::new();
        for v in 1..=100u64 {
            d.record(v * 1_000_000);
        }
        assert_eq!(d.count(), 100);
        assert_eq!(d.mean_ns(), Some(50_500_000.0));
        // Population std of 1..=100 is sqrt((100² − 1)/12).
        let want = ((100.0f64 * 100.0 - 1.0) / 12.0).sqrt() * 1e6;
        assert!((d.std_ns().unwrap() - want).abs() < 1e-3);
        let p50 = d.percentile_ns(50.0).unwrap() as f64;
        assert!((p50 - 50e6).abs() <= 50e6 * 1e-3, "{p50}");
        assert_eq!(d.percentile_ns(100.0), Some(100_000_000));
    }

    #[test]
    fn nearest_rank_survives_float_noise() {
        let mut d = Dist::new();
        (1..=1000u64).for_each(|v| d.record(v));
        assert_eq!(d.percentile_ns(99.9), Some(999));
        assert_eq!(d.percentile_ns(99.0), Some(990));
        assert_eq!(d.percentile_ns(0.0), Some(1));
        assert_eq!(d.percentile_ns(100.0), Some(1000));
    }

    #[test]
    fn outliers_beyond_an_hour_are_counted_not_lost() {
        let mut d = Dist::new();
        d.record(10);
        d.record(2 * HIST_MAX_NS);
        assert_eq!(d.count(), 2);
        assert_eq!(d.clamped(), 1);
        let s = d.stats_ms(&[]);
        assert_eq!(s.max, Some(2.0 * HIST_MAX_NS as f64 / 1e6));
    }

    #[test]
    fn empty_is_null_and_small_samples_are_marked() {
        let s = Dist::new().stats_ms(&[99.99]);
        assert_eq!(s.count, 0);
        assert_eq!(s.mean, None);
        assert_eq!(s.p99_9, None);
        assert_eq!(
            s.small_sample,
            vec!["p50", "p90", "p95", "p99", "p99_9", "p99_99"]
        );
        let mut d = Dist::new();
        (0..100).for_each(|v| d.record(v));
        let s = d.stats_ms(&[75.0, 99.0]);
        assert_eq!(s.small_sample, vec!["p99_9"]);
        assert!(s.extra.contains_key("p75"));
    }

    #[test]
    fn merged_histograms_keep_count_and_range() {
        let mut h = new_histogram();
        h.saturating_record(1_000);
        h.saturating_record(3_000);
        let mut odd = Histogram::<u64>::new_with_bounds(1, 10_000, 2).unwrap();
        odd.saturating_record(2_000);
        let mut d = Dist::new();
        d.merge_histogram(&h);
        d.merge_histogram(&odd);
        assert_eq!(d.count(), 3);
        assert_eq!(d.percentile_ns(0.0), Some(1_000));
        assert!(d.mean_ns().unwrap() > 1_900.0 && d.mean_ns().unwrap() < 2_100.0);
    }
}
