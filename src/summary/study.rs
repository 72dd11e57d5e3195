//! Part of the summary (types only): the results of studies made of runs — a sweep's points
//! and analysis, a search's probes, a calibration's points and floor, and the rows of a
//! comparison. They are computed in `crate::study` and rendered in `crate::output`.

use super::{Stats, Summary};
use serde::{Deserialize, Serialize};

/// What a point's load is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Closed loop, virtual users.
    Concurrency,
    /// Open loop, requests per second.
    Rate,
}

impl Axis {
    /// Its name in tables, plots and the report: `concurrency` or `request_rate`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Concurrency => "concurrency",
            Axis::Rate => "request_rate",
        }
    }
}

/// One load point: every repeat's summary and the figures read from them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    /// The point's load: virtual users or requests per second, per the axis.
    pub load: f64,
    /// Every SLO bound held by the median of the repeats (false when no SLO was given), and
    /// the point counts: valid (or `--allow-invalid`) and not interrupted.
    pub pass: bool,
    /// One check per `--slo`, in the order given.
    pub slos: Vec<SloCheck>,
    /// `throughput.requests_per_s` over the repeats.
    pub throughput_requests_per_s: Spread,
    /// `throughput.output_tokens_per_s` over the repeats.
    pub output_tokens_per_s: Spread,
    /// `throughput.goodput_requests_per_s` over the repeats.
    pub goodput_requests_per_s: Spread,
    /// `achieved.concurrency_mean` over the repeats.
    pub achieved_concurrency: Spread,
    /// `achieved.request_rate` over the repeats.
    pub achieved_request_rate: Spread,
    /// `latency_ms.<metric>.<stat>` medians for the plots: ttft, itl, e2e at p50/p95/p99.
    pub latency_ms: std::collections::BTreeMap<String, Spread>,
    /// The fewest measured successful requests of any repeat.
    pub measured_ok: u64,
    /// This point's cautions: too few measured requests, a bound read from too few samples, a
    /// repeat the client's own overhead made invalid.
    pub warnings: Vec<String>,
    /// Every repeat's summary, in the order run.
    pub runs: Vec<Summary>,
    /// Every repeat's run was valid (`overhead.valid`): the client's own overhead did not
    /// spoil the figures.
    #[serde(default = "yes")]
    pub valid: bool,
    /// Why not, per repeat (`repeat N: reason`).
    #[serde(default)]
    pub invalid_reasons: Vec<String>,
    /// A signal stopped this point's run: its figures cover only part of it.
    #[serde(default)]
    pub interrupted: bool,
}

/// serde's default for `valid` in files written before it existed (points and probes).
pub(crate) fn yes() -> bool {
    true
}

/// One `--slo` bound at one point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SloCheck {
    /// The bound as the user wrote it.
    pub slo: String,
    /// The bound's statistic over the repeats, ms.
    pub value_ms: Spread,
    /// The bound, ms.
    pub max_ms: f64,
    /// The median of the repeats is below `max_ms`.
    pub pass: bool,
}

/// A finished sweep: the points in load order and what they say.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sweep {
    /// What the loads are.
    pub axis: Axis,
    /// The `--slo` bounds, in the order given.
    pub slos: Vec<SloBound>,
    /// Runs per point (`--repeats`).
    pub repeats: u32,
    /// Every point run, in load order.
    pub points: Vec<Point>,
    /// The knees and the SLO crossing.
    pub analysis: Analysis,
    /// A signal stopped the sweep: the last point is marked `interrupted`, later ones were
    /// never run.
    #[serde(default)]
    pub interrupted: bool,
}

/// What a sweep's curve says: its knees and its SLO crossing (`analysis` in `sweep.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Analysis {
    /// Where throughput stops growing while latency starts climbing (`crate::study::analysis::knee`).
    pub knee: Option<Knee>,
    /// Why there is no knee, when there is none (naming the missing component).
    pub knee_note: Option<String>,
    /// Kneedle on throughput vs load alone.
    #[serde(default)]
    pub throughput_knee: KneePart,
    /// Kneedle on e2e p50 vs load alone.
    #[serde(default)]
    pub latency_knee: KneePart,
    /// Highest measured load that passed every SLO.
    pub highest_pass: Option<f64>,
    /// Highest load that passes, interpolated between the last pass and the first fail.
    pub slo_crossing: Option<f64>,
    /// Which SLO bound the crossing is set by, and how it was computed.
    pub crossing_note: Option<String>,
    /// The points' warnings, then the points left out of the knee and those interrupted.
    pub warnings: Vec<String>,
}

/// One figure over a point's repeats: the median and the range it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median of the values present; `None` when there is none.
    pub median: Option<f64>,
    /// Smallest value present.
    pub min: Option<f64>,
    /// Largest value present.
    pub max: Option<f64>,
    /// (max − min) / median: the run-to-run spread as a fraction.
    pub rel_spread: Option<f64>,
    /// Each repeat's value, in the order run (`None` where the run had none).
    pub values: Vec<Option<f64>>,
}

/// A knee: the point it falls on and the rule that found it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The point's load (users or req/s, per the axis).
    pub load: f64,
    /// The point's throughput, req/s (median of its repeats).
    pub throughput: f64,
    /// The latency curve (e2e p50, isotonic) at this point, when it was measured.
    #[serde(default)]
    pub latency_ms: Option<f64>,
    /// Index into the sweep's points (in load order).
    pub index: usize,
    /// The rule that found it, in words.
    pub method: String,
}

/// One component of the knee: its point, or why there is none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KneePart {
    /// The component's knee, when it has one.
    pub knee: Option<Knee>,
    /// Why there is none, when there is none.
    pub note: Option<String>,
}

/// The knee of a load curve and both curves' own knees.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KneeFinding {
    /// The combined knee on the latency-throughput curve, when both components have one.
    pub knee: Option<Knee>,
    /// Why there is no combined knee (naming the component that is missing).
    pub note: Option<String>,
    /// Kneedle on throughput vs load alone.
    pub throughput_knee: KneePart,
    /// Kneedle on e2e p50 vs load alone.
    pub latency_knee: KneePart,
}

/// One bound: `latency_ms.<metric>.<stat>` must stay below `max_ms`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloBound {
    /// As the user wrote it.
    pub text: String,
    /// A key of `latency_ms`: `ttft`, `itl`, `e2e`, …
    pub metric: String,
    /// A key of that stats object: `p95`, `p99_9`, `mean`, `max`.
    pub stat: String,
    /// The percentile `stat` names, when it is one (so the runs compute it).
    pub percentile: Option<f64>,
    /// The bound, ms: the statistic passes when below it.
    pub max_ms: f64,
}

/// One measured load, as the search saw it when it decided the next step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Probe {
    /// Its place in the search, from 1.
    pub iteration: u32,
    /// Why this load was probed: `step` (stepping up), `bisect` or `confirm` (a bracket end
    /// measured again).
    pub phase: String,
    /// The load probed (users or req/s, per the axis).
    pub load: f64,
    /// Medians of each SLO's statistic, as measured.
    pub values_ms: Vec<Option<f64>>,
    /// The probe's own verdict (its point's `pass`), before smoothing.
    pub pass_raw: bool,
    /// After isotonic smoothing over every probe so far.
    pub pass_smoothed: bool,
    /// The bracket after this probe: highest passing load and lowest failing one.
    pub bracket: (Option<f64>, Option<f64>),
    /// Median `throughput.requests_per_s` of its repeats.
    pub throughput_requests_per_s: Option<f64>,
    /// Median `throughput.goodput_requests_per_s` of its repeats.
    pub goodput_requests_per_s: Option<f64>,
    /// Every repeat's run was valid; when not, the probe counted as failing (unless
    /// `--allow-invalid`).
    #[serde(default = "yes")]
    pub valid: bool,
    /// Why not, per repeat (`repeat N: reason`).
    #[serde(default)]
    pub invalid_reasons: Vec<String>,
    /// A signal stopped this probe; it decided nothing and the search stopped.
    #[serde(default)]
    pub interrupted: bool,
}

/// A finished search (`search.json`): its answer and every probe that led to it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchResult {
    /// What the loads are.
    pub axis: Axis,
    /// The `--slo` bounds, in the order given.
    pub slos: Vec<SloBound>,
    /// The highest probed load that passes (smoothed); `None` when even the lowest failed.
    pub answer: Option<f64>,
    /// Where the tightest bound is crossed, linear between the bracket's ends (smoothed).
    pub crossing: Option<f64>,
    /// The final bracket: highest passing load and lowest failing one (smoothed); `None` where
    /// there is none.
    pub bracket: (Option<f64>, Option<f64>),
    /// The bracket ended narrower than `--tolerance` of its low end (or 1 user wide).
    pub converged: bool,
    /// Why the search stopped, in words.
    pub stop_reason: String,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
    /// Every probe's point, in load order.
    pub points: Vec<Point>,
    /// A signal stopped the search (the last probe is marked).
    #[serde(default)]
    pub interrupted: bool,
}

/// One rate tried.
#[derive(Clone, Debug, Serialize)]
pub struct CalibratePoint {
    /// The rate asked for, req/s.
    pub target_rate: f64,
    /// `achieved.request_rate` of its run, req/s.
    pub achieved_rate: Option<f64>,
    /// `achieved.schedule_rate` of its run, req/s.
    pub schedule_rate: Option<f64>,
    /// `counts.sent` of its run.
    pub sent: u64,
    /// `counts.failed` of its run.
    pub failed: u64,
    /// `overhead.sched_lag_ms` of its run.
    pub sched_lag_ms: Stats,
    /// `latency_ms.ttft` of its run.
    pub ttft_ms: Stats,
    /// `latency_ms.itl` of its run.
    pub itl_ms: Stats,
    /// `overhead.delivery_delay_ms` of its run.
    pub delivery_delay_ms: Option<Stats>,
    /// `overhead.worker_cpu_percent` of its run.
    pub worker_cpu_percent: Option<f64>,
    /// `overhead.cpu_ns_per_request` of its run.
    pub cpu_ns_per_request: Option<f64>,
    /// `overhead.cpu_ns_per_event` of its run.
    pub cpu_ns_per_event: Option<f64>,
    /// As `cpu_ns_per_request`, less the pacer's idle polling.
    pub busy_cpu_ns_per_request: Option<f64>,
    /// `overhead.io_driver` of its run: `io_uring` or `epoll`.
    pub io_driver: String,
    /// The client held this rate: `why_not` is empty.
    pub held: bool,
    /// The run's `overhead.invalid_reasons`, then its failed requests, if any.
    pub why_not: Vec<String>,
}

/// The client's latency floor, from the lowest rate tried.
#[derive(Clone, Debug, Serialize)]
pub struct Floor {
    /// That rate, req/s.
    pub at_rate: f64,
    /// TTFT at that rate.
    pub ttft_ms: Stats,
    /// ITL at that rate.
    pub itl_ms: Stats,
    /// `overhead.delivery_delay_ms` at that rate.
    pub delivery_delay_ms: Option<Stats>,
}

/// A finished `ringbench calibrate` (`calibrate.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// RFC 3339 wall clock of the start.
    pub started_at: String,
    /// The calibration's settings (`study::calibrate::CalibrateConfig`), as written.
    pub config: serde_json::Value,
    /// The CPU's model name (`/proc/cpuinfo`), or "unknown".
    pub host_cpu: String,
    /// Kernel release (`uname -r`), or "unknown".
    pub kernel: String,
    /// Every rate tried, in order.
    pub points: Vec<CalibratePoint>,
    /// The highest rate held, `None` when even the first failed.
    pub highest_rate_held: Option<f64>,
    /// The latency floor at the first rate; `None` when no rate ran.
    pub floor: Option<Floor>,
}

/// One figure in both.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The figure: for runs its `summary.json` path (`latency_ms.ttft.p50`); for sweeps a
    /// point's figure after its load (`@8 throughput req/s`), then the analyses' (`knee load`).
    pub name: String,
    /// Its value in A; `None` when A has none.
    pub a: Option<f64>,
    /// Its value in B; `None` when B has none.
    pub b: Option<f64>,
    /// (b − a) / a.
    pub change: Option<f64>,
    /// The larger of the two run-to-run ranges (max − min over repeats), when measured.
    pub spread: Option<f64>,
    /// |b − a| > spread; `None` when the spread is unknown.
    pub significant: Option<bool>,
}

/// The loads of `points` whose runs the client's own overhead made invalid, each once, in
/// load order.
fn invalid_of<'a>(points: impl Iterator<Item = (f64, bool)> + 'a) -> Vec<f64> {
    let mut loads: Vec<f64> = points.filter(|(_, valid)| !valid).map(|(l, _)| l).collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    loads
}

impl Sweep {
    /// The loads whose points were invalid (the client's own overhead).
    pub fn invalid_loads(&self) -> Vec<f64> {
        invalid_of(self.points.iter().map(|p| (p.load, p.valid)))
    }
}

impl SearchResult {
    /// The loads whose probes were invalid (the client's own overhead).
    pub fn invalid_loads(&self) -> Vec<f64> {
        invalid_of(self.probes.iter().map(|p| (p.load, p.valid)))
    }
}

/// The statistics a sweep point always carries for each curve metric (`role::CURVE`), whatever
/// the SLOs are: `Point::latency_ms["ttft_p95"]`, ….
pub const CURVE_STATS: [&str; 3] = ["p50", "p95", "p99"];

/// Where the run of a point's repeat is written, under the sweep's folder:
/// `points/c4-1` (concurrency 4, first repeat), `points/r2.5-2`.
pub fn point_dir_name(axis: Axis, load: f64, repeat: u32) -> String {
    let tag = match axis {
        Axis::Concurrency => "c",
        Axis::Rate => "r",
    };
    format!("points/{tag}{load}-{}", repeat + 1)
}
