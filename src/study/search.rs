//! `ringbench search` (a layer above `run`, beside sweep): the highest load that meets the
//! SLOs, found adaptively. Step up geometrically from `start` until a probe fails, then
//! bisect the bracket [highest pass, lowest fail]. Before each decision every SLO metric is
//! smoothed over all probes so far with isotonic regression (latency may not fall as load
//! rises), so one noisy probe cannot move the bracket the wrong way. Stops when the bracket
//! is narrower than `tolerance` of its low end (or 1 user apart in concurrency), or after
//! `max_iterations` probes. The measuring function is the caller's (a real run, or a model
//! in tests); each probe goes to a callback as it finishes. Nothing here prints.

use super::analysis::{interpolate_crossing, isotonic_increasing_weighted};
use crate::summary::study::{Axis, Point, Probe, SearchResult, SloBound};

/// How a search steps and when it stops (`ringbench search`'s flags).
#[derive(Clone, Debug)]
pub struct SearchSpec {
    /// What the loads are: picked by `--request-rate` or `--concurrency`.
    pub axis: Axis,
    /// The first load probed: the `--request-rate` or `--concurrency` given.
    pub start: f64,
    /// Step-up factor (> 1).
    pub factor: f64,
    /// Never probe above this.
    pub max_load: f64,
    /// Bracket width, as a fraction of its low end, at which to stop (0.05).
    pub tolerance: f64,
    /// Most probes in all (`--max-iterations`).
    pub max_iterations: u32,
    /// The bounds a load must meet (`--slo`, at least one).
    pub slos: Vec<SloBound>,
    /// `--allow-invalid`: take an invalid probe's figures as measured. Without it a probe
    /// the client's own overhead made invalid counts as failing: the search never answers
    /// with a load the client could not measure cleanly.
    pub allow_invalid: bool,
}

/// The search over real runs: each probe is `sweep::measure_with` at its load from `base`,
/// with `gap` of idle time between probes. A signal during the gap reaches the next probe's
/// run at its start: it stops at once and comes back interrupted, which ends the search.
pub fn search_runs(
    base: &crate::plan::Plan,
    points: &super::sweep::PointSpec,
    spec: &SearchSpec,
    gap: std::time::Duration,
    interrupt: &std::sync::atomic::AtomicBool,
    on_probe: impl FnMut(&Probe),
) -> Result<SearchResult, super::sweep::SweepError> {
    let out = base.out_dir.clone();
    let mut first = true;
    let measure = |load: f64| {
        if !std::mem::take(&mut first) {
            super::sweep::cooldown(gap, interrupt);
        }
        super::sweep::measure_with(base, points, out.as_deref(), load, interrupt)
    };
    search(spec, measure, on_probe)
}

/// Runs the search. `measure` runs one load point; `on_probe` sees each probe as it ends.
pub fn search<E>(
    spec: &SearchSpec,
    mut measure: impl FnMut(f64) -> Result<Point, E>,
    mut on_probe: impl FnMut(&Probe),
) -> Result<SearchResult, E> {
    let mut points: Vec<Point> = vec![];
    let mut probes: Vec<Probe> = vec![];
    let mut next = Some((spec.start.min(spec.max_load), "step"));
    let mut stop_reason = String::new();
    let mut interrupted = false;
    while let Some((load, phase)) = next.take() {
        if probes.len() as u32 >= spec.max_iterations {
            stop_reason = format!("--max-iterations {} reached", spec.max_iterations);
            break;
        }
        let point = measure(load)?;
        interrupted = point.interrupted;
        // After any earlier probes at the same load: all of them are pooled by the fit.
        let insert_at = points.partition_point(|p| p.load <= load);
        points.insert(insert_at, point);
        let fit = Fit::of(&spec.slos, spec.allow_invalid, &points);
        let p = &points[insert_at];
        let probe = Probe {
            iteration: probes.len() as u32 + 1,
            phase: phase.into(),
            load,
            values_ms: (0..spec.slos.len()).map(|i| p.slo_value(i)).collect(),
            pass_raw: p.pass,
            pass_smoothed: fit.passes(load),
            bracket: fit.bracket(),
            throughput_requests_per_s: p.throughput_requests_per_s.median,
            goodput_requests_per_s: p.goodput_requests_per_s.median,
            valid: p.valid,
            invalid_reasons: p.invalid_reasons.clone(),
            interrupted: p.interrupted,
        };
        on_probe(&probe);
        probes.push(probe);
        if interrupted {
            stop_reason = "interrupted by a signal".into();
            break;
        }
        match decide(spec, &fit) {
            Ok(step) => next = Some(step),
            Err(reason) => stop_reason = reason,
        }
    }
    let fit = Fit::of(&spec.slos, spec.allow_invalid, &points);
    let bracket = fit.bracket();
    Ok(SearchResult {
        axis: spec.axis,
        slos: spec.slos.clone(),
        answer: bracket.0,
        crossing: fit.crossing(&spec.slos),
        bracket,
        converged: narrow_enough(spec, bracket),
        stop_reason,
        probes,
        points,
        interrupted,
    })
}

/// The isotonic fit over every probe so far: probes at one load pooled into their mean
/// (weighted by their count), then each SLO's values made non-decreasing in load, so a
/// load passes only if the fitted value of every SLO is under its bound. Passes are then a
/// prefix of the loads, and a noisy probe is outvoted by its neighbours and its own repeats.
/// An interrupted probe is left out; an invalid one (without `allow_invalid`) reads as a
/// value no bound admits, so it fails, and so does every load above it.
#[derive(Debug)]
struct Fit {
    /// Distinct loads, rising.
    loads: Vec<f64>,
    /// Probes at each load.
    counts: Vec<usize>,
    /// Fitted values per SLO, per load.
    values: Vec<Vec<f64>>,
    pass: Vec<bool>,
}

/// The value given to a probe that cannot pass: no samples, or invalid.
const CANNOT_PASS: f64 = f64::MAX / 1e6;

impl Fit {
    fn of(slos: &[SloBound], allow_invalid: bool, points: &[Point]) -> Fit {
        let points: Vec<&Point> = points.iter().filter(|p| !p.interrupted).collect();
        let mut loads: Vec<f64> = points.iter().map(|p| p.load).collect();
        loads.dedup();
        let at = |x: f64| points.iter().filter(move |p| p.load == x);
        let counts: Vec<usize> = loads.iter().map(|&x| at(x).count()).collect();
        let values: Vec<Vec<f64>> = (0..slos.len())
            .map(|i| {
                let pooled: Vec<(f64, f64)> = loads
                    .iter()
                    .map(|&x| {
                        // A probe without samples fails; give it a value that cannot pass.
                        let vs: Vec<f64> = at(x)
                            .map(|p| match p.counts(allow_invalid) {
                                true => p.slo_value(i).unwrap_or(CANNOT_PASS),
                                false => CANNOT_PASS,
                            })
                            .collect();
                        let n = vs.len() as f64;
                        (vs.iter().sum::<f64>() / n, n)
                    })
                    .collect();
                isotonic_increasing_weighted(&pooled)
            })
            .collect();
        let pass = (0..loads.len())
            .map(|j| !slos.is_empty() && slos.iter().zip(&values).all(|(b, v)| v[j] < b.max_ms))
            .collect();
        Fit {
            loads,
            counts,
            values,
            pass,
        }
    }

    fn index(&self, load: f64) -> Option<usize> {
        self.loads.iter().position(|&x| x == load)
    }

    fn passes(&self, load: f64) -> bool {
        self.index(load).is_some_and(|j| self.pass[j])
    }

    fn probes_at(&self, load: f64) -> usize {
        self.index(load).map_or(0, |j| self.counts[j])
    }

    /// Fitted values are non-decreasing, so passes are a prefix: the bracket is the
    /// prefix's last load and the next one.
    fn bracket(&self) -> (Option<f64>, Option<f64>) {
        let first_fail = self.pass.iter().position(|ok| !ok);
        let lo = match first_fail {
            Some(0) => None,
            Some(i) => Some(self.loads[i - 1]),
            None => self.loads.last().copied(),
        };
        (lo, first_fail.map(|i| self.loads[i]))
    }

    /// The tightest bound's crossing between the bracket's ends, on fitted values.
    fn crossing(&self, slos: &[SloBound]) -> Option<f64> {
        let (lo, hi) = self.bracket();
        let (lo, hi) = (lo?, hi?);
        let (ia, ib) = (self.index(lo)?, self.index(hi)?);
        let mut best: Option<f64> = None;
        for (slo, sm) in slos.iter().zip(&self.values) {
            if sm[ib] < slo.max_ms {
                continue;
            }
            let x = interpolate_crossing(lo, sm[ia], hi, sm[ib], slo.max_ms);
            best = Some(best.map_or(x, |b: f64| b.min(x)));
        }
        best.or(Some(lo))
    }
}

fn narrow_enough(spec: &SearchSpec, (lo, hi): (Option<f64>, Option<f64>)) -> bool {
    match (lo, hi) {
        (Some(lo), Some(hi)) => {
            hi - lo <= spec.tolerance * lo || (spec.axis == Axis::Concurrency && hi - lo <= 1.0)
        }
        _ => false,
    }
}

/// The next load to probe, or why to stop. Before any stop that rests on the bracket, each
/// of its ends measured only once is measured again ("confirm"): one noisy probe alone
/// cannot end the search, and the fit pools the repeat with it.
fn decide(spec: &SearchSpec, fit: &Fit) -> Result<(f64, &'static str), String> {
    let why = match next_probe(spec, fit)? {
        Step::Probe(load, phase) => return Ok((load, phase)),
        Step::Settled(why) => why,
    };
    let (lo, hi) = fit.bracket();
    match [lo, hi]
        .into_iter()
        .flatten()
        .find(|&x| fit.probes_at(x) < 2)
    {
        Some(x) => Ok((x, "confirm")),
        None => Err(why.to_string()),
    }
}

enum Step {
    Probe(f64, &'static str),
    /// The bracket is settled, for this reason.
    Settled(&'static str),
}

/// Step up or bisect, or say why the bracket is settled.
fn next_probe(spec: &SearchSpec, fit: &Fit) -> Result<Step, String> {
    let round = |x: f64| match spec.axis {
        Axis::Concurrency => x.round(),
        Axis::Rate => x,
    };
    let bracket = fit.bracket();
    match bracket {
        (Some(lo), None) if lo >= spec.max_load => Err(format!(
            "every probe up to the maximum load {} passed",
            spec.max_load
        )),
        (Some(lo), None) => {
            let up = round(lo * spec.factor).max(lo + 1.0).min(spec.max_load);
            Ok(Step::Probe(up, "step"))
        }
        (lo, Some(hi)) => {
            if narrow_enough(spec, bracket) {
                return Ok(Step::Settled("bracket narrower than the tolerance"));
            }
            let floor = match spec.axis {
                Axis::Concurrency => 1.0,
                Axis::Rate => 0.0,
            };
            let lo_v = lo.unwrap_or(floor);
            let lowest = match spec.axis {
                Axis::Concurrency => hi <= floor + 1.0,
                // Far below where the search started: the answer is "none" at this precision.
                Axis::Rate => hi <= spec.start * spec.tolerance,
            };
            if lo.is_none() && lowest {
                return Ok(Step::Settled("even the lowest load fails"));
            }
            let mid = round((lo_v + hi) / 2.0);
            if fit.index(mid).is_some() || mid <= lo_v && lo.is_some() {
                return Ok(Step::Settled("no untested load left inside the bracket"));
            }
            Ok(Step::Probe(mid, "bisect"))
        }
        (None, None) => Err("nothing measured".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::study::Spread;

    /// A point whose only SLO value is `v` ms (no runs behind it).
    fn point(load: f64, v: f64, bound: f64) -> Point {
        Point {
            load,
            pass: v < bound,
            slos: vec![crate::summary::study::SloCheck {
                slo: "ttft:p95<x".into(),
                value_ms: Spread::of(vec![Some(v)]),
                max_ms: bound,
                pass: v < bound,
            }],
            throughput_requests_per_s: Spread::default(),
            output_tokens_per_s: Spread::default(),
            goodput_requests_per_s: Spread::default(),
            achieved_concurrency: Spread::default(),
            achieved_request_rate: Spread::default(),
            latency_ms: Default::default(),
            measured_ok: 1000,
            warnings: vec![],
            runs: vec![],
            valid: true,
            invalid_reasons: vec![],
            interrupted: false,
        }
    }

    fn spec(axis: Axis) -> SearchSpec {
        SearchSpec {
            axis,
            start: 1.0,
            factor: 2.0,
            max_load: 10_000.0,
            tolerance: 0.05,
            max_iterations: 40,
            slos: vec![SloBound::parse("ttft:p95<100ms").unwrap()],
            allow_invalid: false,
        }
    }

    #[test]
    fn finds_the_crossing_of_a_linear_model_within_tolerance() {
        // ttft = 10 + 0.5·rate: the bound 100 is crossed at rate 180.
        let s = spec(Axis::Rate);
        let mut seen = 0;
        let r = search(
            &s,
            |x| Ok::<_, ()>(point(x, 10.0 + 0.5 * x, 100.0)),
            |_| seen += 1,
        )
        .unwrap();
        let (lo, hi) = (r.bracket.0.unwrap(), r.bracket.1.unwrap());
        assert!(
            lo < 180.0 && 180.0 <= hi && hi - lo <= 0.05 * lo,
            "{:?}",
            r.bracket
        );
        assert!(r.converged);
        assert_eq!(seen, r.probes.len());
        assert!((r.crossing.unwrap() - 180.0).abs() < 1e-6);
        assert_eq!(r.probes[0].phase, "step");
        assert!(r.probes.iter().any(|p| p.phase == "bisect"));
    }

    #[test]
    fn concurrency_stops_one_user_apart() {
        let s = spec(Axis::Concurrency);
        // Passes up to 37 users.
        let r = search(&s, |x| Ok::<_, ()>(point(x, x * 2.7, 100.0)), |_| {}).unwrap();
        assert_eq!(r.bracket, (Some(37.0), Some(38.0)));
        assert_eq!(r.answer, Some(37.0));
    }

    #[test]
    fn smoothing_pools_a_noisy_spike_with_the_passes_above_it() {
        // 20 users spiked to 120 ms once; 30 users measured 60 ms: pooled, both pass.
        let slos = vec![SloBound::parse("ttft:p95<100ms").unwrap()];
        let pts: Vec<Point> = [(10.0, 50.0), (20.0, 120.0), (30.0, 60.0), (40.0, 150.0)]
            .iter()
            .map(|&(x, v)| point(x, v, 100.0))
            .collect();
        assert!(!pts[1].pass);
        let fit = Fit::of(&slos, false, &pts);
        assert_eq!(fit.pass, vec![true, true, true, false]);
        assert_eq!(fit.bracket(), (Some(30.0), Some(40.0)));
    }

    /// A scripted search: `truth(x)` ms at load x, except the listed (load, nth probe at that
    /// load) measurements, which read `noisy` instead.
    fn scripted(
        truth: fn(f64) -> f64,
        noise: &[(f64, usize, f64)],
    ) -> impl FnMut(f64) -> Result<Point, ()> + '_ {
        let mut seen: Vec<f64> = vec![];
        move |x| {
            let nth = seen.iter().filter(|&&l| l == x).count();
            seen.push(x);
            let v = noise
                .iter()
                .find(|n| n.0 == x && n.1 == nth)
                .map_or(truth(x), |n| n.2);
            Ok(point(x, v, 100.0))
        }
    }

    #[test]
    fn a_noisy_pass_above_a_failing_load_is_outvoted() {
        // ttft = 3·users: p95 < 100 ms holds up to 33 users. The first probe at 40 users
        // reads 90 ms (a lucky pass; truth 120): taken raw it makes 40 the answer.
        let s = spec(Axis::Concurrency);
        let noise = [(40.0, 0, 90.0)];
        let r = search(&s, scripted(|x| 3.0 * x, &noise), |_| {}).unwrap();
        let at_40: Vec<&Probe> = r.probes.iter().filter(|p| p.load == 40.0).collect();
        assert!(at_40[0].pass_raw, "the scripted noise: 40 passed once, raw");
        assert!(
            at_40.len() >= 2 && at_40[1].phase == "confirm",
            "{:?}",
            r.probes
        );
        // Pooled, 40 fails ((90 + 120) / 2 = 105 ms): smoothed, the search goes back down.
        assert!(!at_40[1].pass_smoothed);
        assert_eq!(r.answer, Some(33.0), "{:?}", r.probes);
        assert!(r.converged, "{}", r.stop_reason);
        // The raw verdicts alone would have bracketed the answer at 40.
        let raw_highest_pass = r
            .probes
            .iter()
            .filter(|p| p.iteration <= at_40[0].iteration && p.pass_raw)
            .map(|p| p.load)
            .fold(0.0, f64::max);
        assert_eq!(raw_highest_pass, 40.0);
    }

    #[test]
    fn a_noisy_fail_while_stepping_up_does_not_end_the_search() {
        // ttft = 2.5·users: passes up to 39 users. The first probe at 32 spikes to 105 ms;
        // raw, the search would settle on 31. Its confirmation reads the truth (80 ms), the
        // pooled 92.5 ms passes, and the search steps on past 32.
        let s = spec(Axis::Concurrency);
        let noise = [(32.0, 0, 105.0)];
        let r = search(&s, scripted(|x| 2.5 * x, &noise), |_| {}).unwrap();
        let at_32: Vec<&Probe> = r.probes.iter().filter(|p| p.load == 32.0).collect();
        assert!(!at_32[0].pass_raw && !at_32[0].pass_smoothed);
        assert!(at_32[1].pass_smoothed, "{:?}", r.probes);
        assert!(r.probes.iter().any(|p| p.load > 32.0 && p.phase == "step"));
        assert_eq!(r.answer, Some(39.0), "{:?}", r.probes);
    }

    #[test]
    fn repeats_at_one_load_are_pooled_before_the_fit() {
        let slos = vec![SloBound::parse("ttft:p95<100ms").unwrap()];
        // Order among probes at one load must not matter: 110 then 80, or 80 then 110.
        for (a, b) in [(110.0, 80.0), (80.0, 110.0)] {
            let pts = vec![
                point(10.0, 50.0, 100.0),
                point(20.0, a, 100.0),
                point(20.0, b, 100.0),
            ];
            let fit = Fit::of(&slos, false, &pts);
            assert_eq!(fit.loads, vec![10.0, 20.0]);
            assert_eq!(fit.counts, vec![1, 2]);
            assert_eq!(fit.values[0], vec![50.0, 95.0]);
            assert!(fit.passes(20.0));
        }
    }

    /// ttft = 2·users (passes up to 49 users); from 32 users up the client's own overhead
    /// makes the run invalid.
    fn invalid_from_32(x: f64) -> Result<Point, ()> {
        let mut p = point(x, 2.0 * x, 100.0);
        if x >= 32.0 {
            p.valid = false;
            p.invalid_reasons = vec!["repeat 1: scheduling lag p99 above --max-lag".into()];
        }
        Ok(p)
    }

    #[test]
    fn an_invalid_probe_counts_as_failing_unless_allowed() {
        let s = spec(Axis::Concurrency);
        let r = search(&s, invalid_from_32, |_| {}).unwrap();
        assert_eq!(r.answer, Some(31.0), "{:?}", r.probes);
        let bad: Vec<&Probe> = r.probes.iter().filter(|p| !p.valid).collect();
        assert!(!bad.is_empty() && bad.iter().all(|p| !p.pass_smoothed));
        assert!(bad[0].invalid_reasons[0].contains("max-lag"));
        let mut s = spec(Axis::Concurrency);
        s.allow_invalid = true;
        let r = search(&s, invalid_from_32, |_| {}).unwrap();
        // Counted as measured: the bound's 49 users, to the search's 5%.
        let answer = r.answer.unwrap();
        assert!((47.0..=49.0).contains(&answer), "{:?}", r.probes);
    }

    #[test]
    fn an_interrupted_probe_stops_the_search_and_decides_nothing() {
        let s = spec(Axis::Concurrency);
        let mut n = 0;
        let r = search(
            &s,
            |x| {
                n += 1;
                let mut p = point(x, 2.0 * x, 100.0);
                p.interrupted = n == 3;
                Ok::<_, ()>(p)
            },
            |_| {},
        )
        .unwrap();
        assert!(r.interrupted && r.stop_reason.contains("interrupted"));
        assert_eq!(r.probes.len(), 3);
        assert!(r.probes[2].interrupted && !r.probes[2].pass_smoothed);
        // Probes at 1 and 2 users passed; the one at 4 was cut short and does not count.
        assert_eq!(r.bracket, (Some(2.0), None));
    }

    #[test]
    fn stops_at_max_iterations_and_reports_it() {
        let mut s = spec(Axis::Rate);
        s.max_iterations = 3;
        let r = search(&s, |x| Ok::<_, ()>(point(x, x, 100.0)), |_| {}).unwrap();
        assert_eq!(r.probes.len(), 3);
        assert!(!r.converged && r.stop_reason.contains("max-iterations"));
    }

    #[test]
    fn lowest_load_failing_has_no_answer() {
        let s = spec(Axis::Concurrency);
        let r = search(&s, |x| Ok::<_, ()>(point(x, 500.0, 100.0)), |_| {}).unwrap();
        assert_eq!(r.answer, None);
        // The first probe, and once more to confirm it.
        assert_eq!(r.probes.len(), 2);
        assert_eq!(r.probes[1].phase, "confirm");
        assert!(r.stop_reason.contains("lowest load"), "{}", r.stop_reason);
    }
}
