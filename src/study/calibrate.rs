//! `ringbench calibrate`: the client's own floor, measured. It starts the in-process
//! simulator with zero delays on its own CPU, runs the client on the others at rising Poisson
//! rates, and reports the highest rate the client held (achieved ≥ 99% of the schedule's
//! rate, scheduling-lag p99 within `--max-lag`, no failures, nothing overflowed) and its
//! latency floor (TTFT/ITL against a server that adds nothing). It sits beside `run`: a loop
//! of runs, nothing on the hot path; it never prints (points go to a callback).

use crate::plan::{Arrival, IoDriver, Load, Plan, SimSettings, Stop};
use crate::run::{run, RunError};
use crate::summary::study::CalibratePoint;
use crate::summary::study::Calibration;
use crate::summary::study::Floor;
use crate::summary::Summary;
use serde::Serialize;

/// What to calibrate.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrateConfig {
    /// Rates to try, rising; the sweep stops after `failures_to_stop` points in a row fail.
    pub rates: Vec<f64>,
    /// How long each rate runs, ns (`--duration`).
    pub duration_ns: u64,
    /// `max_tokens` of every request, at least 1 (`--output-tokens`).
    pub output_tokens: u32,
    /// Prompt length, tokens (`--input-tokens`).
    pub input_tokens: u32,
    /// The workers' CPUs, one worker each (`--cpus`).
    pub client_cpus: Vec<usize>,
    /// The simulator's CPUs (`--sim-cpus`).
    pub sim_cpus: Vec<usize>,
    /// The I/O driver of the workers and of the simulator (`--io-driver`).
    pub io_driver: IoDriver,
    /// Scheduling-lag p99 above this marks a rate not held, ms (`--max-lag`).
    pub max_lag_ms: f64,
    /// Stop after this many rates in a row are not held, at least 1 (`--stop-after`).
    pub failures_to_stop: usize,
    /// Seeds each run's Poisson arrivals (`--seed`).
    pub seed: u64,
}

impl CalibrateConfig {
    /// `rates` when `--rates` is not given, req/s.
    pub const DEFAULT_RATES: [f64; 9] = [
        1_000.0, 2_000.0, 5_000.0, 10_000.0, 15_000.0, 20_000.0, 25_000.0, 30_000.0, 40_000.0,
    ];
}

fn plan_for(cfg: &CalibrateConfig, rate: f64) -> Plan {
    let mut p = Plan::defaults();
    p.sim = Some(SimSettings {
        cpus: cfg.sim_cpus.clone(),
        ..SimSettings::default()
    });
    p.load = Load::Open {
        request_rate: rate,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    p.stop = Stop {
        request_count: None,
        duration_ns: Some(cfg.duration_ns),
    };
    p.output_tokens = cfg.output_tokens;
    p.input_tokens = cfg.input_tokens;
    p.cpus = cfg.client_cpus.clone();
    p.io_driver = cfg.io_driver;
    p.max_lag_ms = cfg.max_lag_ms;
    p.seed = cfg.seed;
    p.progress = false;
    p
}

fn point_of(rate: f64, s: &Summary) -> CalibratePoint {
    let mut why_not = s.overhead.invalid_reasons.clone();
    if s.counts.tally.failed > 0 {
        why_not.push(format!("{} requests failed", s.counts.tally.failed));
    }
    CalibratePoint {
        target_rate: rate,
        achieved_rate: s.achieved.request_rate,
        schedule_rate: s.achieved.schedule_rate,
        sent: s.counts.tally.sent,
        failed: s.counts.tally.failed,
        sched_lag_ms: s.overhead.sched_lag_ms.clone(),
        ttft_ms: s.latency_ms.ttft.clone(),
        itl_ms: s.latency_ms.itl.clone(),
        delivery_delay_ms: s.overhead.delivery_delay_ms.clone(),
        worker_cpu_percent: s.overhead.worker_cpu_percent,
        cpu_ns_per_request: s.overhead.cpu_ns_per_request,
        cpu_ns_per_event: s.overhead.cpu_ns_per_event,
        busy_cpu_ns_per_request: s.overhead.busy_cpu_ns_per_request,
        io_driver: s.overhead.io_driver.clone(),
        held: why_not.is_empty(),
        why_not,
    }
}

/// Runs the rates in order; `on_point` sees each point as it finishes.
pub fn calibrate(
    cfg: &CalibrateConfig,
    mut on_point: impl FnMut(&CalibratePoint),
) -> Result<Calibration, RunError> {
    let started_at = crate::rt::clock::rfc3339_now();
    let mut points: Vec<CalibratePoint> = vec![];
    let mut misses_in_a_row = 0;
    for &rate in &cfg.rates {
        let summary = run(&plan_for(cfg, rate))?;
        let point = point_of(rate, &summary);
        on_point(&point);
        misses_in_a_row = if point.held { 0 } else { misses_in_a_row + 1 };
        points.push(point);
        if misses_in_a_row >= cfg.failures_to_stop {
            break;
        }
    }
    let highest_rate_held = points
        .iter()
        .filter(|p| p.held)
        .map(|p| p.target_rate)
        .fold(None, |best: Option<f64>, r| {
            Some(best.map_or(r, |b| b.max(r)))
        });
    let floor = points.first().map(|p| Floor {
        at_rate: p.target_rate,
        ttft_ms: p.ttft_ms.clone(),
        itl_ms: p.itl_ms.clone(),
        delivery_delay_ms: p.delivery_delay_ms.clone(),
    });
    let host = crate::summary::Host::detect();
    Ok(Calibration {
        started_at,
        config: serde_json::to_value(cfg).unwrap_or_default(),
        host_cpu: cpu_model(),
        kernel: host.kernel,
        points,
        highest_rate_held,
        floor,
    })
}

/// `model name` from /proc/cpuinfo, for the record of where a figure was measured.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_reports_a_held_rate_and_a_floor() {
        let cpus = crate::rt::cpu::online_cpus();
        let cfg = CalibrateConfig {
            rates: vec![200.0, 400.0],
            duration_ns: 500_000_000,
            output_tokens: 8,
            input_tokens: 16,
            client_cpus: vec![cpus[0]],
            sim_cpus: vec![cpus[cpus.len() - 1]],
            io_driver: IoDriver::Auto,
            // Generous: this checks the mechanics, not this shared machine's precision.
            max_lag_ms: 50.0,
            failures_to_stop: 1,
            seed: 1,
        };
        let mut seen = vec![];
        let cal = calibrate(&cfg, |p| seen.push(p.target_rate)).unwrap();
        assert_eq!(seen, vec![200.0, 400.0]);
        assert_eq!(cal.points[0].sent, 100);
        assert_eq!(cal.points[0].failed, 0);
        let floor = cal.floor.expect("a floor from the first point");
        assert_eq!(floor.ttft_ms.count, 100);
        assert!(floor.delivery_delay_ms.is_some());
        assert!(
            cal.highest_rate_held.is_some(),
            "{:?}",
            cal.points[0].why_not
        );
    }
}
