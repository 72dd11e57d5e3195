//! Part of the collector (… → record → **collector** → summary → report): the run over
//! time, so a reader can see whether it reached a steady state. Measured requests are cut
//! into intervals of the run clock (1 s to start with): completions, output tokens and
//! mean requests in flight per interval, and the TTFT and ITL p50/p99 of what happened in
//! it. Memory is bounded: at most `MAX_POINTS` intervals — a longer run doubles the
//! interval width, merging neighbours — and each interval's histograms (2 significant
//! digits, µs) are made only when a sample lands in it and grow only as far as its largest
//! value (a fixed one-hour range costs 13 KB each, 6.7 MB at the cap; sized to a 1 ms
//! TTFT it is 2 KB). The result does not depend on the
//! order records arrive in, so `ringbench report` reproduces it. Never prints.

use crate::record::{Outcome, Record};
use crate::summary::series::{Point, TimeSeries};
use hdrhistogram::Histogram;

pub const MAX_POINTS: usize = 256;
const FIRST_WIDTH_NS: u64 = 1_000_000_000;
const NS_PER_US: u64 = 1_000;
/// One hour in µs, as the main histograms.
const HIST_MAX_US: u64 = 3_600_000_000;

#[derive(Clone, Debug, Default)]
struct Bucket {
    done_ok: u64,
    tokens: u64,
    busy_ns: u128,
    ttft: Option<Histogram<u32>>,
    itl: Option<Histogram<u32>>,
}

fn new_hist() -> Histogram<u32> {
    match Histogram::new(2) {
        Ok(h) => h,
        Err(e) => unreachable!("constant histogram precision rejected: {e}"),
    }
}

fn record(h: &mut Option<Histogram<u32>>, ns: u64) {
    let us = (ns / NS_PER_US).clamp(1, HIST_MAX_US);
    // Auto-resizing: `record` grows the counts to `us` (which the clamp keeps far below the
    // crate's i64::MAX / 2 limit, so it cannot fail); `saturating_record` would not grow.
    let _ = h.get_or_insert_with(new_hist).record(us);
}

fn merge(into: &mut Option<Histogram<u32>>, from: Option<Histogram<u32>>) {
    match (into.as_mut(), from) {
        (Some(a), Some(b)) => {
            let _ = a.add(&b);
        }
        (None, b) => *into = b,
        (_, None) => {}
    }
}

#[derive(Clone, Debug)]
pub struct Series {
    width_ns: u64,
    buckets: Vec<Bucket>,
}

impl Default for Series {
    fn default() -> Self {
        Series {
            width_ns: FIRST_WIDTH_NS,
            buckets: Vec::new(),
        }
    }
}

impl Series {
    /// Widens until `ns` falls inside the bounded range, then returns its bucket.
    fn bucket(&mut self, ns: u64) -> &mut Bucket {
        while ns / self.width_ns >= MAX_POINTS as u64 {
            self.widen();
        }
        let i = (ns / self.width_ns) as usize;
        if self.buckets.len() <= i {
            self.buckets.resize_with(i + 1, Bucket::default);
        }
        &mut self.buckets[i]
    }

    /// Doubles the width: bucket i of the new series is old buckets 2i and 2i + 1.
    fn widen(&mut self) {
        self.width_ns *= 2;
        let old = std::mem::take(&mut self.buckets);
        for (i, b) in old.into_iter().enumerate() {
            let j = i / 2;
            if self.buckets.len() <= j {
                self.buckets.resize_with(j + 1, Bucket::default);
            }
            let t = &mut self.buckets[j];
            t.done_ok += b.done_ok;
            t.tokens += b.tokens;
            t.busy_ns += b.busy_ns;
            merge(&mut t.ttft, b.ttft);
            merge(&mut t.itl, b.itl);
        }
    }

    /// A measured, sent record. `tokens` gives each token-bearing event's share of OSL.
    pub fn add(&mut self, r: &Record, stream: bool) {
        let (Some(sent), Some(done)) = (r.sent_ns, r.done_ns) else {
            return;
        };
        // The widest stamp first, so the spans below are cut at the final width.
        self.bucket(done.max(sent));
        self.add_busy(sent, done);
        if r.outcome != Outcome::Ok {
            return;
        }
        self.bucket(done).done_ok += 1;
        for (at, n) in super::tokens::per_event(r) {
            self.bucket(at).tokens += n as u64;
        }
        if !stream {
            return;
        }
        if let (Some(first), Some(ttft)) = (r.first_token_ns, r.ttft_ns()) {
            record(&mut self.bucket(first).ttft, ttft);
        }
        let mut prev: Option<u64> = None;
        for e in r.token_events() {
            if let Some(p) = prev {
                record(&mut self.bucket(e.at_ns).itl, e.at_ns.saturating_sub(p));
            }
            prev = Some(e.at_ns);
        }
    }

    fn add_busy(&mut self, sent: u64, done: u64) {
        let w = self.width_ns;
        let mut at = sent;
        while at < done {
            let end = ((at / w + 1) * w).min(done);
            self.bucket(at).busy_ns += (end - at) as u128;
            at = end;
        }
    }

    pub fn finish(&self) -> TimeSeries {
        let w_s = self.width_ns as f64 / 1e9;
        let first = self
            .buckets
            .iter()
            .position(|b| b.busy_ns > 0 || b.done_ok > 0);
        let pct = |h: &Option<Histogram<u32>>, q: f64| {
            h.as_ref()
                .map(|h| h.value_at_quantile(q) as f64 * NS_PER_US as f64 / 1e6)
        };
        let count = |h: &Option<Histogram<u32>>| h.as_ref().map_or(0, |h| h.len());
        let points = first.map_or(Vec::new(), |first| {
            self.buckets[first..]
                .iter()
                .enumerate()
                .map(|(i, b)| Point {
                    t_s: (first + i) as f64 * w_s,
                    requests_per_s: b.done_ok as f64 / w_s,
                    output_tokens_per_s: b.tokens as f64 / w_s,
                    in_flight_mean: b.busy_ns as f64 / self.width_ns as f64,
                    ttft_count: count(&b.ttft),
                    ttft_p50_ms: pct(&b.ttft, 0.5),
                    ttft_p99_ms: pct(&b.ttft, 0.99),
                    itl_count: count(&b.itl),
                    itl_p50_ms: pct(&b.itl, 0.5),
                    itl_p99_ms: pct(&b.itl, 0.99),
                })
                .collect()
        });
        TimeSeries {
            interval_s: w_s,
            points,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_histograms_grow_only_as_far_as_their_values() {
        let mut h = None;
        for ns in [50_000, 400_000, 1_000_000] {
            record(&mut h, ns);
        }
        let small = h.as_ref().unwrap();
        // A one-hour range would need 3,328 counters; 1 ms needs a few hundred.
        assert!(
            small.distinct_values() <= 512,
            "{}",
            small.distinct_values()
        );
        assert_eq!(small.value_at_quantile(0.5), small.highest_equivalent(400));
        // Beyond the range: clamped to an hour, not lost.
        record(&mut h, u64::MAX);
        let h = h.unwrap();
        assert_eq!(h.len(), 4);
        assert_eq!(h.max(), h.highest_equivalent(HIST_MAX_US));
    }

    #[test]
    fn widening_merges_grown_histograms_of_different_sizes() {
        let mut a = None;
        let mut b = None;
        record(&mut a, 1_000);
        record(&mut b, 10_000_000_000);
        merge(&mut a, b);
        let a = a.unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a.max(), a.highest_equivalent(10_000_000));
    }
}
