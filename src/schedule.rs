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
//! Ramps and stages (`--ramp-up`, `--stages`). A ramp is a non-homogeneous Poisson process
//! of intensity λ(t) = R·t/ramp up to the ramp's end, then R. It is made by time-rescaling:
//! the steady process of rate R above runs in *operational time* τ (exact count included),
//! and each arrival is mapped to t = Φ⁻¹(τ), where Φ(t) = Λ(t)/R and Λ is the cumulative
//! intensity; so Λ(t_i) − Λ(t_{i−1}) are the steady process's gaps in units of 1/R (Exp(1)
//! for Poisson), and `--arrival constant` puts arrival i at exactly Λ⁻¹(i). `--duration`
//! counts the whole run, ramp included: the run holds round(Λ(T)) arrivals. With a
//! `--request-count` n instead, the count is reached on the schedule's own time line: n
//! arrivals at Λ⁻¹ of the steady process's n times, the ramp first. Stages are steady
//! segments one after the other, each exactly round(rate × duration) arrivals inside its own
//! window (its gaps scaled to fill it), drawn from one seeded generator in order.
//!
//! Arrivals are generated lazily (an iterator), so a long run at a high rate keeps no
//! per-arrival memory: the scale factor comes from a first pass over the same seeded draws.
//! Each worker walks the whole sequence and keeps its own share, which costs it a few
//! nanoseconds per arrival of other workers.

use crate::plan::{Arrival, Shard, Stage};
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
    /// Raw gap sum × scale = time: n arrivals fill the horizon exactly (a stage's own).
    scale: f64,
    count: u64,
    /// How operational time maps to the schedule's time.
    shape: Shape,
}

/// How the steady process's time τ becomes the schedule's time t.
#[derive(Clone, Debug)]
enum Shape {
    /// t = τ.
    Steady,
    /// A linear ramp from 0 over `ramp_ns`: t = Φ⁻¹(τ) (see `ramp_time_ns`).
    Ramp { ramp_ns: f64 },
    /// Steady stages: `spans[at]` is the stage of the next arrival; `scaled` the stage whose
    /// scale factor is set.
    Stages {
        spans: std::sync::Arc<[Span]>,
        at: usize,
        scaled: Option<usize>,
    },
}

/// One stage on the time line: its first global index, its arrivals, its window (ns).
#[derive(Clone, Copy, Debug)]
struct Span {
    first: u64,
    count: u64,
    start_ns: f64,
    duration_ns: f64,
}

/// Φ⁻¹ of a linear ramp of length `ramp_ns`: the time at which the cumulative intensity
/// Λ(t) = R·Φ(t) reaches R·τ. Φ(t) = t²/(2·ramp) during the ramp, t − ramp/2 after it.
pub fn ramp_time_ns(tau_ns: f64, ramp_ns: f64) -> f64 {
    if tau_ns < ramp_ns / 2.0 {
        (2.0 * ramp_ns * tau_ns).sqrt()
    } else {
        tau_ns + ramp_ns / 2.0
    }
}

/// Φ of a linear ramp (the operational time at schedule time `t_ns`); Λ(t) = R·Φ(t).
pub fn ramp_operational_ns(t_ns: f64, ramp_ns: f64) -> f64 {
    if t_ns < ramp_ns {
        t_ns * t_ns / (2.0 * ramp_ns)
    } else {
        t_ns - ramp_ns / 2.0
    }
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
            shape: Shape::Steady,
        };
        s.scale = s.clone().scale_for(n, n as f64 * mean_gap_ns);
        Ok(s)
    }

    /// `--ramp-up`: the steady schedule's arrivals, its count taken in operational time
    /// (`until_ns` counts the ramp: round(Λ(until)) arrivals), mapped through the ramp.
    pub fn ramped(
        arrival: Arrival,
        rate_per_s: f64,
        ramp_ns: u64,
        seed: u64,
        count: Option<u64>,
        until_ns: Option<u64>,
    ) -> Result<Self, ScheduleError> {
        let ramp = ramp_ns as f64;
        let until_tau = until_ns.map(|u| ramp_operational_ns(u as f64, ramp).round() as u64);
        let mut s = Schedule::new(arrival, rate_per_s, seed, count, until_tau)?;
        if ramp_ns > 0 {
            s.shape = Shape::Ramp { ramp_ns: ramp };
        }
        Ok(s)
    }

    /// `--stages`: each stage exactly `Stage::arrivals` arrivals inside its own window, one
    /// seeded sequence over all of them.
    pub fn staged(arrival: Arrival, stages: &[Stage], seed: u64) -> Result<Self, ScheduleError> {
        let rate_ok = |r: f64| r.is_finite() && r > 0.0;
        if let Some(bad) = stages.iter().find(|s| !rate_ok(s.request_rate)) {
            return Err(ScheduleError::BadRate(bad.request_rate));
        }
        let rate = stages.first().map_or(1.0, |s| s.request_rate);
        // Each stage scales its own gaps on entering it (`enter_stage`): no pass here.
        let mut s = Schedule::new(arrival, rate, seed, Some(0), None)?;
        s.count = stages.iter().map(Stage::arrivals).sum();
        let spans: Vec<Span> = crate::plan::shape::stage_starts(stages)
            .into_iter()
            .zip(stages)
            .map(|((start_ns, first), st)| Span {
                first,
                count: st.arrivals(),
                start_ns: start_ns as f64,
                duration_ns: st.duration_ns as f64,
            })
            .collect();
        s.shape = Shape::Stages {
            spans: spans.into(),
            at: 0,
            scaled: None,
        };
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
            shape: Shape::Steady,
        }
    }

    /// The first pass: n raw gaps (the n-th ends the horizon) must sum to `horizon_ns`.
    fn scale_for(mut self, n: u64, horizon_ns: f64) -> f64 {
        let raw: f64 = (0..n).map(|_| self.gap_ns()).sum();
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

    /// Stages: moves to the stage of the next arrival and, on entering it, starts its own
    /// time from 0 and scales its gaps to fill its window (a first pass over its draws).
    fn enter_stage(&mut self) {
        let Shape::Stages { spans, at, scaled } = &mut self.shape else {
            return;
        };
        while spans[*at].first + spans[*at].count <= self.next_index {
            *at += 1;
        }
        if *scaled == Some(*at) {
            return;
        }
        *scaled = Some(*at);
        let span = spans[*at];
        self.raw_sum_ns = 0.0;
        self.scale = self.clone().scale_for(span.count, span.duration_ns);
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
        self.enter_stage();
        let tau_ns = self.raw_sum_ns * self.scale;
        let at_ns = match &self.shape {
            Shape::Steady => tau_ns.round() as u64,
            Shape::Ramp { ramp_ns } => ramp_time_ns(tau_ns, *ramp_ns).round() as u64,
            // Strictly inside the stage's window, whatever the rounding.
            Shape::Stages { spans, at, .. } => {
                let s = spans[*at];
                let end = (s.start_ns + s.duration_ns) as u64;
                ((s.start_ns + tau_ns).round() as u64).min(end.saturating_sub(1))
            }
        };
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

    /// Kolmogorov–Smirnov distance between the sample and Exp(1).
    fn ks_exp1(mut x: Vec<f64>) -> f64 {
        x.sort_by(f64::total_cmp);
        let n = x.len() as f64;
        x.iter()
            .enumerate()
            .map(|(i, &v)| {
                let f = 1.0 - (-v).exp();
                (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    const S: u64 = 1_000_000_000;

    /// Λ(t_i) − Λ(t_{i−1}) of `times` under a ramp to `rate` over `ramp_ns`: Exp(1) if the
    /// times are that process.
    fn rescaled_gaps(times: &[u64], rate: f64, ramp_ns: u64) -> Vec<f64> {
        let lambda = |t: u64| rate / 1e9 * ramp_operational_ns(t as f64, ramp_ns as f64);
        times
            .windows(2)
            .map(|w| lambda(w[1]) - lambda(w[0]))
            .collect()
    }

    /// Pearson's chi-square of the counts per second against a ramp over the whole window.
    fn chi_square_per_second(times: &[u64], secs: u64, ramp_ns: u64) -> f64 {
        let mut seen = vec![0f64; secs as usize];
        times.iter().for_each(|t| seen[(t / S) as usize] += 1.0);
        let phi = |t: u64| ramp_operational_ns(t as f64, ramp_ns as f64);
        let n = times.len() as f64;
        (0..secs)
            .map(|k| {
                let want = n * (phi((k + 1) * S) - phi(k * S)) / phi(secs * S);
                (seen[k as usize] - want).powi(2) / want
            })
            .sum()
    }

    fn ramp_times(arrival: Arrival, seed: u64) -> Vec<u64> {
        Schedule::ramped(arrival, 1000.0, 20 * S, seed, None, Some(20 * S))
            .unwrap()
            .map(|(_, t)| t)
            .collect()
    }

    #[test]
    fn a_ramp_follows_its_intensity_and_a_steady_schedule_does_not() {
        // A 20 s ramp to 1,000/s: Λ(20 s) = 10,000 arrivals exactly, 50·(k + ½) in second k.
        // Critical values at α = 0.001: KS 1.949/√n; chi-square with 19 degrees of freedom
        // (the total is fixed) 43.8.
        let ks_bound = 1.949 / (9_999f64).sqrt();
        for seed in 0..5 {
            let t = ramp_times(Arrival::Poisson, seed);
            assert_eq!(t.len(), 10_000);
            assert!(*t.last().unwrap() < 20 * S);
            let ks = ks_exp1(rescaled_gaps(&t, 1000.0, 20 * S));
            assert!(ks < ks_bound, "seed {seed}: KS {ks:.4} ≥ {ks_bound:.4}");
            let chi = chi_square_per_second(&t, 20, 20 * S);
            assert!(chi < 43.8, "seed {seed}: chi-square {chi:.1}");
        }
        // The same test on a steady 500/s schedule (the same 10,000 arrivals in 20 s) under
        // the ramp's intensity: both statistics are far past their bounds.
        let steady: Vec<u64> = Schedule::new(Arrival::Poisson, 500.0, 0, None, Some(20 * S))
            .unwrap()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(steady.len(), 10_000);
        let ks = ks_exp1(rescaled_gaps(&steady, 1000.0, 20 * S));
        assert!(
            ks > 5.0 * ks_bound,
            "KS {ks:.4} must refuse a steady schedule"
        );
        let chi = chi_square_per_second(&steady, 20, 20 * S);
        assert!(
            chi > 1000.0,
            "chi-square {chi:.1} must refuse a steady schedule"
        );
        // A ramp of half the length is refused too (its rate is off by 2× in the first half).
        let short: Vec<u64> =
            Schedule::ramped(Arrival::Poisson, 1000.0, 10 * S, 0, Some(10_000), None)
                .unwrap()
                .map(|(_, t)| t)
                .collect();
        let ks = ks_exp1(rescaled_gaps(&short, 1000.0, 20 * S));
        assert!(ks > ks_bound, "KS {ks:.4} must refuse the wrong ramp");
    }

    #[test]
    fn a_constant_ramp_puts_arrival_i_at_the_inverse_intensity_of_i() {
        let t = ramp_times(Arrival::Constant, 0);
        assert_eq!(t.len(), 10_000);
        for (i, &at) in t.iter().enumerate() {
            // Λ⁻¹(i) for Λ(t) = R·t²/(2·ramp) during the ramp: t = √(2·ramp·i/R).
            let want = (2.0 * 20.0 * i as f64 / 1000.0).sqrt() * 1e9;
            assert!(
                (at as f64 - want).abs() <= 1.0,
                "arrival {i}: {at} vs {want}"
            );
        }
    }

    #[test]
    fn a_ramp_counts_the_whole_duration_and_a_count_lands_on_its_own_time_line() {
        // 10 s ramp then 20 s at 1,000/s: Λ(30 s) = 5,000 + 20,000.
        let s = Schedule::ramped(Arrival::Poisson, 1000.0, 10 * S, 3, None, Some(30 * S)).unwrap();
        assert_eq!(s.len(), 25_000);
        let t: Vec<u64> = s.map(|(_, t)| t).collect();
        assert!(*t.last().unwrap() < 30 * S);
        let in_ramp = t.iter().filter(|&&x| x < 10 * S).count();
        // 5,000 expected; conditioned on the total it is binomial(25,000, 0.2): sd 63.
        assert!(
            (in_ramp as i64 - 5_000).abs() < 400,
            "{in_ramp} in the ramp"
        );
        // A count alone: the n arrivals of the steady process, the ramp first.
        let c: Vec<_> = Schedule::ramped(Arrival::Constant, 100.0, 10 * S, 0, Some(600), None)
            .unwrap()
            .collect();
        assert_eq!(c.len(), 600);
        // 500 in the 10 s ramp, then 100 more at 100/s: the 600th at 10 s + 0.99 s.
        assert_eq!(c[599].1, 10 * S + 990_000_000);
        // The smaller of the two bounds wins, as for a steady run.
        let both = Schedule::ramped(Arrival::Poisson, 1000.0, 10 * S, 0, Some(7), Some(30 * S));
        assert_eq!(both.unwrap().len(), 7);
    }

    fn staged(arrival: Arrival, seed: u64) -> Schedule {
        let st = |r: f64, ns: u64| Stage {
            request_rate: r,
            duration_ns: ns,
        };
        let stages = [
            st(200.0, S),
            st(0.3, S),
            st(400.0, S),
            st(1000.0, 2 * S + 500_000_000),
        ];
        Schedule::staged(arrival, &stages, seed).unwrap()
    }

    #[test]
    fn each_stage_holds_exactly_rate_times_duration_arrivals_inside_its_window() {
        for arrival in [
            Arrival::Poisson,
            Arrival::Constant,
            Arrival::Gamma { burstiness: 0.5 },
        ] {
            for seed in 0..5 {
                let all: Vec<_> = staged(arrival, seed).collect();
                assert_eq!(all.len(), 200 + 400 + 2500);
                assert!(all
                    .windows(2)
                    .all(|w| w[0].0 + 1 == w[1].0 && w[0].1 <= w[1].1));
                let count =
                    |from: u64, to: u64| all.iter().filter(|(_, t)| (from..to).contains(t)).count();
                // Stage 1 (0.3/s for 1 s) rounds to no arrival.
                assert_eq!(count(0, S), 200, "{arrival:?} seed {seed}");
                assert_eq!(count(S, 2 * S), 0);
                assert_eq!(count(2 * S, 3 * S), 400);
                assert_eq!(count(3 * S, 5 * S + S / 2), 2500);
                assert_eq!(all[0].1, 0);
                assert_eq!(all[200].1, 2 * S, "a stage's first arrival opens it");
            }
        }
        let c: Vec<_> = staged(Arrival::Constant, 0).collect();
        assert_eq!(c[1].1, 5_000_000, "200/s: every 5 ms");
        assert_eq!(c[201].1, 2 * S + 2_500_000, "400/s: every 2.5 ms");
    }

    #[test]
    fn ramps_and_stages_are_seeded_and_deal_exactly() {
        let ramp = |seed| {
            Schedule::ramped(Arrival::Poisson, 500.0, 2 * S, seed, Some(3_001), None).unwrap()
        };
        assert_eq!(ramp(1).collect::<Vec<_>>(), ramp(1).collect::<Vec<_>>());
        assert_ne!(ramp(1).collect::<Vec<_>>(), ramp(2).collect::<Vec<_>>());
        let stages = |seed| staged(Arrival::Poisson, seed);
        assert_eq!(stages(1).collect::<Vec<_>>(), stages(1).collect::<Vec<_>>());
        assert_ne!(stages(1).collect::<Vec<_>>(), stages(2).collect::<Vec<_>>());
        for make in [&(|| ramp(4)) as &dyn Fn() -> Schedule, &|| stages(4)] {
            let whole: Vec<_> = make().collect();
            for count in 1..=3u32 {
                for workers in 1..=3 {
                    let mut merged: Vec<_> = (0..count)
                        .flat_map(|index| {
                            let shard = Shard { index, count };
                            (0..workers)
                                .flat_map(|w| make().dealt(shard, w, workers).collect::<Vec<_>>())
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    merged.sort();
                    assert_eq!(merged, whole, "{count} shards of {workers} workers");
                }
            }
        }
    }
}
