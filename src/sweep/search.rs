//! `ringbench search` (a layer above `run`, beside sweep): the highest load that meets the
//! SLOs, found adaptively. Step up geometrically from `start` until a probe fails, then
//! bisect the bracket [highest pass, lowest fail]. Before each decision every SLO metric is
//! smoothed over all probes so far with isotonic regression (latency may not fall as load
//! rises), so one noisy probe cannot move the bracket the wrong way. Stops when the bracket
//! is narrower than `tolerance` of its low end (or 1 user apart in concurrency), or after
//! `max_iterations` probes. The measuring function is the caller's (a real run, or a model
//! in tests); each probe goes to a callback as it finishes. Nothing here prints.

use super::analysis::{interpolate_crossing, isotonic_increasing};
use super::slo::SloBound;
use super::{Axis, Point};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug)]
pub struct SearchSpec {
    pub axis: Axis,
    pub start: f64,
    /// Step-up factor (> 1).
    pub factor: f64,
    /// Never probe above this.
    pub max_load: f64,
    /// Bracket width, as a fraction of its low end, at which to stop (0.05).
    pub tolerance: f64,
    pub max_iterations: u32,
    pub slos: Vec<SloBound>,
}

/// One measured load, as the search saw it when it decided the next step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Probe {
    pub iteration: u32,
    pub phase: String,
    pub load: f64,
    /// Medians of each SLO's statistic, as measured.
    pub values_ms: Vec<Option<f64>>,
    pub pass_raw: bool,
    /// After isotonic smoothing over every probe so far.
    pub pass_smoothed: bool,
    /// The bracket after this probe: highest passing load and lowest failing one.
    pub bracket: (Option<f64>, Option<f64>),
    pub throughput_requests_per_s: Option<f64>,
    pub goodput_requests_per_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchResult {
    pub axis: Axis,
    pub slos: Vec<SloBound>,
    /// The highest probed load that passes (smoothed); `None` when even the lowest failed.
    pub answer: Option<f64>,
    /// Where the tightest bound is crossed, linear between the bracket's ends (smoothed).
    pub crossing: Option<f64>,
    pub bracket: (Option<f64>, Option<f64>),
    pub converged: bool,
    pub stop_reason: String,
    pub probes: Vec<Probe>,
    pub points: Vec<Point>,
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
    while let Some((load, phase)) = next.take() {
        if probes.len() as u32 >= spec.max_iterations {
            stop_reason = format!("--max-iterations {} reached", spec.max_iterations);
            break;
        }
        let point = measure(load)?;
        let insert_at = points.partition_point(|p| p.load < load);
        points.insert(insert_at, point);
        let pass = smoothed_pass(&spec.slos, &points);
        let bracket = bracket_of(&points, &pass);
        let p = &points[insert_at];
        let probe = Probe {
            iteration: probes.len() as u32 + 1,
            phase: phase.into(),
            load,
            values_ms: (0..spec.slos.len()).map(|i| p.slo_value(i)).collect(),
            pass_raw: p.pass,
            pass_smoothed: pass[insert_at],
            bracket,
            throughput_requests_per_s: p.throughput_requests_per_s.median,
            goodput_requests_per_s: p.goodput_requests_per_s.median,
        };
        on_probe(&probe);
        probes.push(probe);
        match decide(spec, bracket, &points) {
            Ok(step) => next = Some(step),
            Err(reason) => stop_reason = reason,
        }
    }
    let pass = smoothed_pass(&spec.slos, &points);
    let bracket = bracket_of(&points, &pass);
    let converged = narrow_enough(spec, bracket);
    Ok(SearchResult {
        axis: spec.axis,
        slos: spec.slos.clone(),
        answer: bracket.0,
        crossing: crossing(&spec.slos, &points, bracket),
        bracket,
        converged,
        stop_reason,
        probes,
        points,
    })
}

/// Pass/fail of every point (in load order) after smoothing each SLO's values.
fn smoothed_pass(slos: &[SloBound], points: &[Point]) -> Vec<bool> {
    let mut pass = vec![!slos.is_empty(); points.len()];
    for (i, slo) in slos.iter().enumerate() {
        // A point without samples fails; give it a value that cannot pass.
        let raw: Vec<f64> = points
            .iter()
            .map(|p| p.slo_value(i).unwrap_or(f64::MAX / 4.0))
            .collect();
        for (ok, v) in pass.iter_mut().zip(isotonic_increasing(&raw)) {
            *ok &= v < slo.max_ms;
        }
    }
    pass
}

/// Smoothed values are non-decreasing, so passes are a prefix: the bracket is the prefix's
/// last load and the next one.
fn bracket_of(points: &[Point], pass: &[bool]) -> (Option<f64>, Option<f64>) {
    let first_fail = pass.iter().position(|ok| !ok);
    let lo = match first_fail {
        Some(0) => None,
        Some(i) => Some(points[i - 1].load),
        None => points.last().map(|p| p.load),
    };
    (lo, first_fail.map(|i| points[i].load))
}

fn narrow_enough(spec: &SearchSpec, (lo, hi): (Option<f64>, Option<f64>)) -> bool {
    match (lo, hi) {
        (Some(lo), Some(hi)) => {
            hi - lo <= spec.tolerance * lo || (spec.axis == Axis::Concurrency && hi - lo <= 1.0)
        }
        _ => false,
    }
}

/// The next load to probe, or why to stop.
fn decide(
    spec: &SearchSpec,
    bracket: (Option<f64>, Option<f64>),
    points: &[Point],
) -> Result<(f64, &'static str), String> {
    let round = |x: f64| match spec.axis {
        Axis::Concurrency => x.round(),
        Axis::Rate => x,
    };
    match bracket {
        (Some(lo), None) if lo >= spec.max_load => Err(format!(
            "every probe up to the maximum load {} passed",
            spec.max_load
        )),
        (Some(lo), None) => {
            let up = round(lo * spec.factor).max(lo + 1.0).min(spec.max_load);
            Ok((up, "step"))
        }
        (lo, Some(hi)) => {
            if narrow_enough(spec, bracket) {
                return Err(format!(
                    "bracket narrower than {}%",
                    (spec.tolerance * 100.0).round()
                ));
            }
            let floor = match spec.axis {
                Axis::Concurrency => 1.0,
                Axis::Rate => 0.0,
            };
            let lo_v = lo.unwrap_or(floor);
            if lo.is_none() && hi <= floor + 1.0 && spec.axis == Axis::Concurrency {
                return Err("even the lowest load fails".into());
            }
            let mid = round((lo_v + hi) / 2.0);
            if points.iter().any(|p| p.load == mid) || mid <= lo_v && lo.is_some() {
                return Err("no untested load left inside the bracket".into());
            }
            Ok((mid, "bisect"))
        }
        (None, None) => Err("nothing measured".into()),
    }
}

/// The tightest bound's crossing between the bracket's ends, on smoothed values.
fn crossing(
    slos: &[SloBound],
    points: &[Point],
    (lo, hi): (Option<f64>, Option<f64>),
) -> Option<f64> {
    let (lo, hi) = (lo?, hi?);
    let ia = points.iter().position(|p| p.load == lo)?;
    let ib = points.iter().position(|p| p.load == hi)?;
    let mut best: Option<f64> = None;
    for (i, slo) in slos.iter().enumerate() {
        let raw: Vec<f64> = points
            .iter()
            .map(|p| p.slo_value(i).unwrap_or(f64::MAX / 4.0))
            .collect();
        let sm = isotonic_increasing(&raw);
        if sm[ib] < slo.max_ms {
            continue;
        }
        let x = interpolate_crossing(lo, sm[ia], hi, sm[ib], slo.max_ms);
        best = Some(best.map_or(x, |b: f64| b.min(x)));
    }
    best.or(Some(lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::analysis::Spread;

    /// A point whose only SLO value is `v` ms (no runs behind it).
    fn point(load: f64, v: f64, bound: f64) -> Point {
        Point {
            load,
            pass: v < bound,
            slos: vec![super::super::SloCheck {
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
        assert_eq!(smoothed_pass(&slos, &pts), vec![true, true, true, false]);
        assert_eq!(
            bracket_of(&pts, &smoothed_pass(&slos, &pts)),
            (Some(30.0), Some(40.0))
        );
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
        assert_eq!(r.probes.len(), 1);
    }
}
