//! Stage 1 of the flow (**schedule** → worker → http → sse → extract → record → collector →
//! report): when each request is meant to start. The schedule is a pure, seeded function —
//! no clock, no I/O — so the same seed gives the same arrivals and it is testable without a
//! runtime. There is one global sequence, dealt to workers (arrival i to worker i mod N), so
//! the process the server sees is exactly the one asked for whatever N is: splitting a rate R
//! into N independent streams of R/N would be exact only for Poisson.
//!
//! Exact count, random times. A run of rate R for T seconds sends exactly n = R·T requests
//! (or the asked `--request-count` n over T = n/R): the gaps are drawn from the process and
//! then scaled by one factor so that n of them fill the horizon. For Poisson this is exactly
//! a Poisson process conditioned on its count (the times are uniform order statistics); for
//! gamma it keeps the gaps' shape and coefficient of variation. Without it, the realized rate
//! of 5,000 Poisson arrivals alone strays ±1.4% (1 sd) from the target, and "achieved vs
//! target" would measure the dice, not the client.
//!
//! Arrivals are generated lazily (an iterator), so a long run at a high rate keeps no
//! per-arrival memory: the scale factor comes from a first pass over the same seeded draws.
//! Each worker walks the whole sequence and keeps its own share, which costs it a few
//! nanoseconds per arrival of other workers.

use crate::plan::{Arrival, Shard};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma};

/// The gap distribution, resolved once.
#[derive(Clone, Debug)]
enum Gaps {
    Constant {
        gap_ns: f64,
    },
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
    /// Recorded send times (ns from the first), already divided by the replay speed-up.
    Trace(std::sync::Arc<[u64]>),
}

/// The global arrival sequence: `(index, intended_ns)` relative to the schedule's start.
/// The first arrival is at 0; after that, gaps follow the arrival process with mean 1/rate.
#[derive(Clone, Debug)]
pub struct Schedule {
    gaps: Gaps,
    rng: Xoshiro256PlusPlus,
    next_index: u64,
    /// Sum of raw gaps so far, in f64 nanoseconds so rounding never drifts the rate.
    raw_sum_ns: f64,
    /// Raw gap sum × scale = time: n arrivals fill the horizon exactly.
    scale: f64,
    count: u64,
}

/// Arrivals in the run: the count asked, or rate × horizon, whichever is smaller.
fn arrival_count(rate_per_s: f64, count: Option<u64>, until_ns: Option<u64>) -> u64 {
    let by_time = until_ns.map(|u| (rate_per_s * u as f64 / 1e9).round() as u64);
    match (count, by_time) {
        (Some(c), Some(t)) => c.min(t),
        (Some(c), None) => c,
        (None, Some(t)) => t,
        (None, None) => 0,
    }
}

/// Why a schedule cannot be built (each variant names the flag to fix).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// The rate is not a finite number above 0.
    #[error("--request-rate must be a finite number above 0 (got {0})")]
    BadRate(f64),
    /// The gamma shape is not a finite number above 0.
    #[error("--burstiness must be a finite number above 0 (got {0}); 1 is Poisson")]
    BadBurstiness(f64),
    /// Neither a count nor an end time was given.
    #[error("the schedule needs an end: give --request-count or --duration")]
    Unbounded,
}

impl Schedule {
    /// `count` arrivals at most, and none at or after `until_ns`; at least one must be set.
    pub fn new(
        arrival: Arrival,
        rate_per_s: f64,
        seed: u64,
        count: Option<u64>,
        until_ns: Option<u64>,
    ) -> Result<Self, ScheduleError> {
        if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
            return Err(ScheduleError::BadRate(rate_per_s));
        }
        if count.is_none() && until_ns.is_none() {
            return Err(ScheduleError::Unbounded);
        }
        let mean_gap_ns = 1e9 / rate_per_s;
        let gaps = match arrival {
            Arrival::Constant => Gaps::Constant {
                gap_ns: mean_gap_ns,
            },
            Arrival::Poisson => Gaps::Exp(Exp::new(1.0 / mean_gap_ns).expect("rate checked")),
            Arrival::Gamma { burstiness } => {
                if !(burstiness.is_finite() && burstiness > 0.0) {
                    return Err(ScheduleError::BadBurstiness(burstiness));
                }
                let scale = mean_gap_ns / burstiness;
                Gaps::Gamma(Gamma::new(burstiness, scale).expect("shape and scale checked"))
            }
        };
        let n = arrival_count(rate_per_s, count, until_ns);
        let mut s = Schedule {
            gaps,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            next_index: 0,
            raw_sum_ns: 0.0,
            scale: 1.0,
            count: n,
        };
        s.scale = s.clone().scale_for(n as f64 * mean_gap_ns);
        Ok(s)
    }

    /// A trace replay: arrival i at `at_ns[i]` exactly (times from `trace::Trace`, in order).
    pub fn from_trace(at_ns: std::sync::Arc<[u64]>) -> Schedule {
        debug_assert!(
            at_ns.windows(2).all(|w| w[0] <= w[1]),
            "trace times in order"
        );
        Schedule {
            count: at_ns.len() as u64,
            gaps: Gaps::Trace(at_ns),
            rng: Xoshiro256PlusPlus::seed_from_u64(0),
            next_index: 0,
            raw_sum_ns: 0.0,
            scale: 1.0,
        }
    }

    /// The first pass: n raw gaps (the n-th ends the horizon) must sum to `horizon_ns`.
    fn scale_for(mut self, horizon_ns: f64) -> f64 {
        let raw: f64 = (0..self.count).map(|_| self.gap_ns()).sum();
        if raw > 0.0 {
            horizon_ns / raw
        } else {
            1.0
        }
    }

    /// How many arrivals the whole schedule has (all workers together).
    pub fn len(&self) -> u64 {
        self.count
    }

    /// The schedule has no arrival.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn gap_ns(&mut self) -> f64 {
        match &self.gaps {
            Gaps::Constant { gap_ns } => *gap_ns,
            Gaps::Exp(d) => d.sample(&mut self.rng),
            Gaps::Gamma(d) => d.sample(&mut self.rng),
            // Called after `next_index` moved on: the gap from this arrival to the next.
            Gaps::Trace(at) => {
                let i = self.next_index as usize;
                at.get(i).map_or(0.0, |&t| (t - at[i - 1]) as f64)
            }
        }
    }

    /// The share of worker `worker` out of `workers` on `shard`: the shard keeps the
    /// arrivals i with i mod N = I (`Shard::owns`), and deals its own j-th arrival to worker
    /// j mod `workers`. On the whole run (`Shard::WHOLE`) that is arrival i to worker i mod
    /// `workers`. Indices stay global, so records of every shard name the same arrivals.
    pub fn dealt(
        self,
        shard: Shard,
        worker: usize,
        workers: usize,
    ) -> impl Iterator<Item = (u64, u64)> {
        assert!(workers > 0 && worker < workers, "worker index out of range");
        let n = u64::from(shard.count.max(1));
        self.filter(move |(i, _)| shard.owns(*i) && ((*i / n) % workers as u64) as usize == worker)
    }
}

impl Iterator for Schedule {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.next_index >= self.count {
            return None;
        }
        let at_ns = (self.raw_sum_ns * self.scale).round() as u64;
        let index = self.next_index;
        self.next_index += 1;
        self.raw_sum_ns += self.gap_ns();
        Some((index, at_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(arrival: Arrival, rate: f64, n: u64, seed: u64) -> Vec<f64> {
        let times: Vec<u64> = Schedule::new(arrival, rate, seed, Some(n), None)
            .unwrap()
            .map(|(_, t)| t)
            .collect();
        times.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    }

    fn mean_cv(g: &[f64]) -> (f64, f64) {
        let n = g.len() as f64;
        let mean = g.iter().sum::<f64>() / n;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn mean_rate_within_one_percent_for_each_process() {
        for arrival in [
            Arrival::Poisson,
            Arrival::Constant,
            Arrival::Gamma { burstiness: 0.5 },
            Arrival::Gamma { burstiness: 4.0 },
        ] {
            let g = gaps(arrival, 5_000.0, 100_000, 7);
            let rate = 1e9 / mean_cv(&g).0;
            assert!(
                (rate / 5_000.0 - 1.0).abs() < 0.01,
                "{arrival:?}: realized rate {rate:.1}/s"
            );
        }
    }

    #[test]
    fn coefficient_of_variation_matches_the_process() {
        let cases = [
            (Arrival::Poisson, 1.0),
            (Arrival::Constant, 0.0),
            (Arrival::Gamma { burstiness: 0.25 }, 2.0),
            (Arrival::Gamma { burstiness: 4.0 }, 0.5),
        ];
        for (arrival, want) in cases {
            let (_, cv) = mean_cv(&gaps(arrival, 1_000.0, 100_000, 11));
            assert!(
                (cv - want).abs() < 0.03 * want.max(0.01),
                "{arrival:?}: CV {cv:.4}, want {want}"
            );
        }
    }

    #[test]
    fn same_seed_same_schedule_other_seed_other_schedule() {
        let a: Vec<_> = Schedule::new(Arrival::Poisson, 100.0, 3, Some(1000), None)
            .unwrap()
            .collect();
        let b: Vec<_> = Schedule::new(Arrival::Poisson, 100.0, 3, Some(1000), None)
            .unwrap()
            .collect();
        let c: Vec<_> = Schedule::new(Arrival::Poisson, 100.0, 4, Some(1000), None)
            .unwrap()
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn dealing_partitions_the_sequence_exactly() {
        let whole: Vec<_> = Schedule::new(
            Arrival::Gamma { burstiness: 0.7 },
            300.0,
            5,
            Some(10_001),
            None,
        )
        .unwrap()
        .collect();
        for workers in 1..=5 {
            let mut merged: Vec<_> = (0..workers)
                .flat_map(|w| {
                    let s = Schedule::new(
                        Arrival::Gamma { burstiness: 0.7 },
                        300.0,
                        5,
                        Some(10_001),
                        None,
                    );
                    s.unwrap()
                        .dealt(Shard::WHOLE, w, workers)
                        .collect::<Vec<_>>()
                })
                .collect();
            merged.sort();
            assert_eq!(merged, whole, "{workers} workers");
        }
    }

    #[test]
    fn shards_of_workers_partition_the_global_sequence_by_global_index() {
        let make = || Schedule::new(Arrival::Poisson, 500.0, 9, Some(1_003), None).unwrap();
        let whole: Vec<_> = make().collect();
        for count in 1..=4u32 {
            for workers in 1..=3 {
                let mut merged = Vec::new();
                for index in 0..count {
                    let shard = Shard { index, count };
                    let mut mine: Vec<_> = (0..workers)
                        .flat_map(|w| make().dealt(shard, w, workers).collect::<Vec<_>>())
                        .collect();
                    mine.sort();
                    assert_eq!(mine.len() as u64, shard.share(1_003));
                    assert!(mine
                        .iter()
                        .all(|(i, _)| i % u64::from(count) == u64::from(index)));
                    // The shard's own arrivals go round its workers: worker loads differ by ≤ 1.
                    let per: Vec<usize> = (0..workers)
                        .map(|w| make().dealt(shard, w, workers).count())
                        .collect();
                    assert!(per.iter().max().unwrap() - per.iter().min().unwrap() <= 1);
                    merged.extend(mine);
                }
                merged.sort();
                assert_eq!(merged, whole, "{count} shards of {workers} workers");
            }
        }
    }

    #[test]
    fn a_poisson_run_holds_exactly_rate_times_duration_arrivals() {
        for seed in 0..20 {
            let s =
                Schedule::new(Arrival::Poisson, 1000.0, seed, None, Some(5_000_000_000)).unwrap();
            assert_eq!(s.len(), 5000);
            let times: Vec<u64> = s.map(|(_, t)| t).collect();
            assert_eq!(times.len(), 5000);
            assert!(*times.last().unwrap() < 5_000_000_000);
            // The realized rate over the sent span is the target (to one arrival's worth).
            let realized = 4999.0 / (*times.last().unwrap() as f64 / 1e9);
            assert!(
                (realized / 1000.0 - 1.0).abs() < 0.01,
                "seed {seed}: {realized}"
            );
        }
    }

    #[test]
    fn duration_bound_and_count_bound_both_stop() {
        let by_time: Vec<_> =
            Schedule::new(Arrival::Constant, 1000.0, 0, None, Some(1_000_000_000))
                .unwrap()
                .collect();
        assert_eq!(by_time.len(), 1000);
        assert_eq!(by_time[999].1, 999_000_000);
        let both: Vec<_> =
            Schedule::new(Arrival::Constant, 1000.0, 0, Some(10), Some(1_000_000_000))
                .unwrap()
                .collect();
        assert_eq!(both.len(), 10);
    }

    #[test]
    fn a_trace_schedule_sends_at_the_recorded_times_and_deals_exactly() {
        let at: std::sync::Arc<[u64]> = vec![0, 0, 5, 1_000_000_007, 3_000_000_000].into();
        let all: Vec<_> = Schedule::from_trace(at.clone()).collect();
        assert_eq!(
            all,
            [
                (0, 0),
                (1, 0),
                (2, 5),
                (3, 1_000_000_007),
                (4, 3_000_000_000)
            ]
        );
        assert_eq!(Schedule::from_trace(at.clone()).len(), 5);
        let mut merged: Vec<_> = (0..2)
            .flat_map(|w| Schedule::from_trace(at.clone()).dealt(Shard::WHOLE, w, 2))
            .collect();
        merged.sort();
        assert_eq!(merged, all);
    }

    #[test]
    fn bad_inputs_name_the_flag() {
        let e = Schedule::new(Arrival::Poisson, 0.0, 0, Some(1), None).unwrap_err();
        assert!(e.to_string().contains("--request-rate"));
        let e = Schedule::new(Arrival::Poisson, f64::NAN, 0, Some(1), None).unwrap_err();
        assert!(e.to_string().contains("--request-rate"));
        let e =
            Schedule::new(Arrival::Gamma { burstiness: -1.0 }, 1.0, 0, Some(1), None).unwrap_err();
        assert!(e.to_string().contains("--burstiness"));
        assert_eq!(
            Schedule::new(Arrival::Poisson, 1.0, 0, None, None).unwrap_err(),
            ScheduleError::Unbounded
        );
    }
}
