//! `ringbench sweep` and `ringbench search` (after **summary**; a layer above `run`): one
//! run per load point, each a full `run::run` with its own warm-up, then the curve, the knee
//! and the SLO crossing. Every point's summaries are kept whole; the analysis only reads
//! numbers out of them. The library never prints: progress and each finished point go to
//! the caller's callback; `report`/`main` print.

use crate::plan::workload::splitmix64;
use crate::plan::{Load, Plan};
use crate::run::RunError;
use crate::summary::metric::{role, Metric};
use crate::summary::study::{
    point_dir_name, Analysis, Axis, Point, SloBound, SloCheck, Spread, Sweep, CURVE_STATS,
};
use crate::summary::Summary;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Fewer measured successful requests than this at a point draws a warning: the issue asks
/// for a few hundred per point, and p95/p99 of fewer move with every repeat.
pub const MIN_POINT_REQUESTS: u64 = 200;
/// Measured requests per point when neither `--request-count` nor `--duration` is given.
pub const DEFAULT_POINT_REQUESTS: u64 = 300;

/// What every point shares.
#[derive(Clone, Debug)]
pub struct PointSpec {
    /// What the loads are.
    pub axis: Axis,
    /// Runs per point (`--repeats`); 0 runs once.
    pub repeats: u32,
    /// The `--slo` bounds a point must meet.
    pub slos: Vec<SloBound>,
    /// The base run already had a warm-up of its own; otherwise each point gets one.
    pub warmup_given: bool,
    /// `--allow-invalid`: a run the client's own overhead made invalid still counts (its
    /// SLO verdict, its place on the curve). Without it such a point never passes, is left
    /// out of the knee and the crossing (a search counts it as failing), and the sweep or
    /// search exits 4.
    pub allow_invalid: bool,
}

impl Point {
    /// Reads a point's figures out of its repeats' summaries.
    pub fn from_runs(load: f64, runs: Vec<Summary>, spec: &PointSpec) -> Point {
        let slos = &spec.slos;
        let each = |f: &dyn Fn(&Summary) -> Option<f64>| Spread::of(runs.iter().map(f).collect());
        let checks: Vec<SloCheck> = slos
            .iter()
            .map(|b| {
                let value_ms = each(&|s| b.value_in(s));
                SloCheck {
                    slo: b.text.clone(),
                    pass: b.passes(value_ms.median),
                    value_ms,
                    max_ms: b.max_ms,
                }
            })
            .collect();
        let mut latency_ms = std::collections::BTreeMap::new();
        for m in Metric::with(role::CURVE).map(Metric::key) {
            for st in CURVE_STATS {
                let v = each(&|s| stat_of(s, m, st));
                latency_ms.insert(format!("{m}_{st}"), v);
            }
        }
        let measured_ok = runs.iter().map(|s| s.counts.tally.ok).min().unwrap_or(0);
        let warnings = point_warnings(load, &runs, slos, measured_ok);
        let invalid_reasons: Vec<String> = runs
            .iter()
            .enumerate()
            .flat_map(|(r, s)| {
                let reasons = s.overhead.invalid_reasons.iter();
                reasons.map(move |why| format!("repeat {}: {why}", r + 1))
            })
            .collect();
        let valid = runs.iter().all(|s| s.overhead.valid);
        let interrupted = runs.iter().any(|s| s.interrupted);
        let counts = (valid || spec.allow_invalid) && !interrupted;
        Point {
            load,
            pass: counts && !checks.is_empty() && checks.iter().all(|c| c.pass),
            slos: checks,
            throughput_requests_per_s: each(&|s| s.throughput.requests_per_s),
            output_tokens_per_s: each(&|s| s.throughput.output_tokens_per_s),
            goodput_requests_per_s: each(&|s| s.throughput.goodput_requests_per_s),
            achieved_concurrency: each(&|s| s.achieved.concurrency_mean),
            achieved_request_rate: each(&|s| s.achieved.request_rate),
            latency_ms,
            measured_ok,
            warnings,
            runs,
            valid,
            invalid_reasons,
            interrupted,
        }
    }

    /// Whether this point's figures may decide anything (the knee, a crossing, a search's
    /// bracket): complete, and valid unless `--allow-invalid`.
    pub fn counts(&self, allow_invalid: bool) -> bool {
        (self.valid || allow_invalid) && !self.interrupted
    }

    /// The median value of the `i`-th SLO's statistic, ms; `None` when there is no such SLO or no
    /// value.
    pub fn slo_value(&self, i: usize) -> Option<f64> {
        self.slos.get(i).and_then(|c| c.value_ms.median)
    }
}

/// A statistic of one latency distribution of a summary, by key.
pub fn stat_of(s: &Summary, metric: &str, stat: &str) -> Option<f64> {
    let v = serde_json::to_value(&s.latency_ms).ok()?;
    v[metric][stat].as_f64()
}

fn point_warnings(load: f64, runs: &[Summary], slos: &[SloBound], ok: u64) -> Vec<String> {
    let mut w = vec![];
    if ok < MIN_POINT_REQUESTS {
        w.push(format!(
            "load {load}: only {ok} measured successful requests (want ≥ {MIN_POINT_REQUESTS}); raise --request-count or --duration"
        ));
    }
    for b in slos {
        if runs.iter().any(|s| b.small_sample_in(s)) {
            w.push(format!(
                "load {load}: {} comes from too few samples to mean much",
                b.label()
            ));
        }
    }
    for s in runs.iter().filter(|s| !s.overhead.valid) {
        w.push(format!(
            "load {load}: the client's own overhead made a run invalid: {}",
            s.overhead.invalid_reasons.join("; ")
        ));
    }
    w
}

/// The run plan of one point's `repeat`: the base plan at this load, its own warm-up, its own
/// output folder, the percentiles the SLOs need, and — when the base fixes `--prompt-nonce` —
/// a nonce of its own derived from it, so no point re-sends another's prompts (and the whole
/// study still reproduces). Without one, each run draws its own.
pub fn plan_at(
    base: &Plan,
    spec: &PointSpec,
    load: f64,
    repeat: u32,
    out: Option<PathBuf>,
) -> Plan {
    let mut p = base.clone();
    p.workload.prompt_nonce = base.workload.prompt_nonce.map(|n| {
        let at = splitmix64(load.to_bits()) ^ splitmix64(u64::from(repeat) ^ 0x5a17);
        splitmix64(n ^ at)
    });
    p.load = match (spec.axis, &base.load) {
        (Axis::Concurrency, _) => Load::Closed {
            concurrency: load.round().max(1.0) as u32,
        },
        (
            Axis::Rate,
            Load::Open {
                arrival,
                max_concurrency,
                ..
            },
        ) => Load::Open {
            request_rate: load,
            arrival: *arrival,
            max_concurrency: *max_concurrency,
        },
        (Axis::Rate, Load::Closed { .. } | Load::Trace(_)) => Load::Open {
            request_rate: load,
            arrival: crate::plan::Arrival::Poisson,
            max_concurrency: None,
        },
    };
    if !spec.warmup_given {
        // One request per user (or one second of arrivals) warms connections and caches.
        p.warmup_requests = load.ceil().clamp(1.0, 1000.0) as u64;
    }
    for b in &spec.slos {
        if let Some(pct) = b.percentile {
            if !p.percentiles.contains(&pct) {
                p.percentiles.push(pct);
            }
        }
    }
    if p.goodput.is_empty() {
        p.goodput = spec.slos.iter().filter_map(per_request_slo).collect();
    }
    p.out_dir = out;
    p.progress = false;
    p
}

/// Goodput needs per-request bounds: without `--goodput`, each `--slo` on a metric that has a
/// per-request form bounds every request by the same number (ttft:p95<500ms → ttft ≤ 500 ms).
fn per_request_slo(b: &SloBound) -> Option<crate::plan::Slo> {
    use crate::plan::SloMetric;
    let metric = match b.metric.as_str() {
        "ttft" => SloMetric::Ttft,
        "tpot" => SloMetric::Tpot,
        "itl" => SloMetric::Itl,
        "e2e" => SloMetric::E2e,
        "ntpot" => SloMetric::Ntpot,
        _ => return None,
    };
    Some(crate::plan::Slo {
        metric,
        max_ms: b.max_ms,
    })
}

/// Why a sweep or search stopped.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A point's run could not start or finish.
    #[error("load {load}: {source}")]
    Run {
        /// The point's load.
        load: f64,
        /// Why the run failed.
        source: RunError,
    },
}

/// The run behind every point: `run::run` with a per-point folder under `out`.
pub fn measure(
    base: &Plan,
    spec: &PointSpec,
    out: Option<&Path>,
    load: f64,
) -> Result<Point, SweepError> {
    measure_with(base, spec, out, load, &AtomicBool::new(false))
}

/// `measure`, stoppable: once `interrupt` is set, the repeat running stops as
/// `run::run_with` stops (grace, then cancel), no further repeat starts, and the point is
/// marked `interrupted`.
pub fn measure_with(
    base: &Plan,
    spec: &PointSpec,
    out: Option<&Path>,
    load: f64,
    interrupt: &AtomicBool,
) -> Result<Point, SweepError> {
    let mut runs = Vec::with_capacity(spec.repeats as usize);
    for r in 0..spec.repeats.max(1) {
        let dir = out.map(|d| d.join(point_dir_name(spec.axis, load, r)));
        let plan = plan_at(base, spec, load, r, dir);
        let s = crate::run::run_with(&plan, interrupt, &mut ())
            .map_err(|source| SweepError::Run { load, source })?;
        runs.push(s);
        if interrupt.load(Ordering::SeqCst) {
            break;
        }
    }
    let mut p = Point::from_runs(load, runs, spec);
    // A signal between repeats leaves every run whole but the point short of its repeats.
    if p.runs.len() < spec.repeats.max(1) as usize && !p.interrupted {
        p.interrupted = true;
        p.pass = false;
    }
    Ok(p)
}

/// Sleeps `gap`, waking early once `interrupt` is set; true when it was.
pub fn cooldown(gap: std::time::Duration, interrupt: &AtomicBool) -> bool {
    let until = std::time::Instant::now() + gap;
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return true;
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
    }
}

/// Runs every point in load order with `cooldown` between them. `on_point` sees each point
/// as it finishes.
pub fn sweep(
    base: &Plan,
    spec: &PointSpec,
    loads: &[f64],
    cooldown: std::time::Duration,
    out: Option<&Path>,
    on_point: impl FnMut(&Point),
) -> Result<Sweep, SweepError> {
    let never = AtomicBool::new(false);
    sweep_with(base, spec, loads, cooldown, out, &never, on_point)
}

/// `sweep`, stoppable: once `interrupt` is set the point running stops (see
/// `measure_with`), no later point starts, and the sweep so far is analysed and returned
/// with `interrupted` set.
pub fn sweep_with(
    base: &Plan,
    spec: &PointSpec,
    loads: &[f64],
    gap: std::time::Duration,
    out: Option<&Path>,
    interrupt: &AtomicBool,
    mut on_point: impl FnMut(&Point),
) -> Result<Sweep, SweepError> {
    let mut loads = loads.to_vec();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let mut points: Vec<Point> = Vec::with_capacity(loads.len());
    for (i, &load) in loads.iter().enumerate() {
        if i > 0 && cooldown(gap, interrupt) {
            break;
        }
        let p = measure_with(base, spec, out, load, interrupt)?;
        on_point(&p);
        points.push(p);
        if interrupt.load(Ordering::SeqCst) {
            break;
        }
    }
    let mut s = analyze(spec, points);
    s.interrupted = interrupt.load(Ordering::SeqCst);
    Ok(s)
}

/// The curve's analysis from finished points (already in load order). Points that do not
/// count (interrupted; invalid without `--allow-invalid`) stay in the sweep, marked, but
/// take no part in the knee or the crossing: their figures are unknown, not a failure, so
/// a load the client could not measure cleanly neither passes nor ends the passing run.
pub fn analyze(spec: &PointSpec, points: Vec<Point>) -> Sweep {
    let curve: Vec<super::analysis::CurvePoint> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.counts(spec.allow_invalid))
        .filter_map(|(index, p)| {
            Some(super::analysis::CurvePoint {
                index,
                load: p.load,
                throughput: p.throughput_requests_per_s.median?,
                latency_ms: p.latency_ms.get(KNEE_LATENCY).and_then(|s| s.median),
            })
        })
        .collect();
    let mut found = super::analysis::knee(&curve);
    let mut warnings: Vec<String> = points.iter().flat_map(|p| p.warnings.clone()).collect();
    let left_out = points.len() - curve.len();
    if left_out > 0 {
        let why = format!(
            "{left_out} point(s) left out of the knee (interrupted, invalid, or no throughput \
             measured)"
        );
        for n in [
            &mut found.note,
            &mut found.throughput_knee.note,
            &mut found.latency_knee.note,
        ]
        .into_iter()
        .flatten()
        {
            *n = format!("{n}; {why}");
        }
        warnings.push(why);
    }
    let counted: Vec<&Point> = points
        .iter()
        .filter(|p| p.counts(spec.allow_invalid))
        .collect();
    let (highest_pass, slo_crossing, mut crossing_note) = crossing(&spec.slos, &counted);
    let uncounted = points.len() - counted.len();
    if uncounted > 0 && !spec.slos.is_empty() {
        let n = crossing_note.get_or_insert_with(String::new);
        n.push_str(&format!(
            "; {uncounted} point(s) interrupted or invalid (the client's own overhead) left out"
        ));
    }
    warnings.extend(points.iter().filter(|p| p.interrupted).map(|p| {
        format!(
            "load {}: interrupted; its figures cover part of the run and decide nothing",
            p.load
        )
    }));
    Sweep {
        axis: spec.axis,
        slos: spec.slos.clone(),
        repeats: spec.repeats,
        points,
        analysis: Analysis {
            knee: found.knee,
            knee_note: found.note,
            throughput_knee: found.throughput_knee,
            latency_knee: found.latency_knee,
            highest_pass,
            slo_crossing,
            crossing_note,
            warnings,
        },
        interrupted: false,
    }
}

/// The latency curve of the knee (a `latency_ms` key of `Point`): e2e p50. E2E is what
/// throughput is traded against (in a closed loop, throughput = users / mean e2e), and it
/// carries both queueing before the first token and a decode that slows as the batch
/// grows, where TTFT alone misses the second; the median, because with a few hundred
/// requests per point p90/p99 move with every repeat and Kneedle on a noisy curve picks noise.
pub const KNEE_LATENCY: &str = "e2e_p50";

/// The last passing point before the first failing one, and the load between them where the
/// tightest failing bound is met (linear in load).
fn crossing(slos: &[SloBound], points: &[&Point]) -> (Option<f64>, Option<f64>, Option<String>) {
    if slos.is_empty() {
        return (None, None, Some("no --slo given".into()));
    }
    if points.is_empty() {
        return (None, None, Some("no point counts".into()));
    }
    let Some(fail) = points.iter().position(|p| !p.pass) else {
        let top = points.last().map(|p| p.load);
        return (
            top,
            None,
            Some("every point passed: the crossing is above the highest load".into()),
        );
    };
    if fail == 0 {
        return (None, None, Some("the lowest load already fails".into()));
    }
    let (a, b) = (points[fail - 1], points[fail]);
    let mut best: Option<(f64, &str)> = None;
    for (i, s) in slos.iter().enumerate() {
        let (Some(v0), Some(v1)) = (a.slo_value(i), b.slo_value(i)) else {
            continue;
        };
        if v1 < s.max_ms {
            continue;
        }
        let x = super::analysis::interpolate_crossing(a.load, v0, b.load, v1, s.max_ms);
        if best.is_none_or(|(bx, _)| x < bx) {
            best = Some((x, &s.text));
        }
    }
    let note = best.map(|(_, t)| {
        format!(
            "set by {t}: linear in load between {} (pass) and {} (fail)",
            a.load, b.load
        )
    });
    (Some(a.load), best.map(|(x, _)| x).or(Some(a.load)), note)
}

/// `log:1:1000:8` → 8 log-spaced loads from 1 to 1000, rounded to integers for concurrency
/// (1, 3, 7, 19, 52, 139, 373, 1000); `lin:A:B:N` for linear spacing.
pub fn parse_grid(text: &str, axis: Axis) -> Result<Vec<f64>, String> {
    let bad = |why: &str| format!("--grid '{text}': {why} (like log:1:1000:8 or lin:10:100:10)");
    let parts: Vec<&str> = text.split(':').collect();
    let [kind, a, b, n] = parts[..] else {
        return Err(bad("expected KIND:FROM:TO:COUNT"));
    };
    let (a, b): (f64, f64) = match (a.parse(), b.parse()) {
        (Ok(a), Ok(b)) if a > 0.0 && b > a && f64::is_finite(b) => (a, b),
        _ => return Err(bad("FROM and TO must be numbers with 0 < FROM < TO")),
    };
    let n: usize = match n.parse() {
        Ok(n) if (2..=1000).contains(&n) => n,
        _ => return Err(bad("COUNT must be between 2 and 1000")),
    };
    let t = |i: usize| i as f64 / (n - 1) as f64;
    let mut loads: Vec<f64> = match kind {
        "log" => (0..n).map(|i| a * (b / a).powf(t(i))).collect(),
        "lin" => (0..n).map(|i| a + (b - a) * t(i)).collect(),
        _ => return Err(bad("KIND must be log or lin")),
    };
    if axis == Axis::Concurrency {
        loads.iter_mut().for_each(|x| *x = x.round());
    } else {
        loads
            .iter_mut()
            .for_each(|x| *x = (*x * 1000.0).round() / 1000.0);
    }
    loads.dedup();
    Ok(loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_grid_matches_the_issue() {
        let g = parse_grid("log:1:1000:8", Axis::Concurrency).unwrap();
        assert_eq!(g, vec![1.0, 3.0, 7.0, 19.0, 52.0, 139.0, 373.0, 1000.0]);
        let g = parse_grid("lin:10:100:10", Axis::Rate).unwrap();
        assert_eq!(g.len(), 10);
        assert_eq!((g[0], g[9]), (10.0, 100.0));
        for bad in [
            "log:1:1000",
            "exp:1:10:3",
            "log:0:10:3",
            "log:5:1:3",
            "log:1:10:1",
        ] {
            let e = parse_grid(bad, Axis::Concurrency).unwrap_err();
            assert!(e.contains("--grid"), "{e}");
        }
    }
}
