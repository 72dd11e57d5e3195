//! Part of stage 7 (… → record → **collector** → summary): one worker as the M/G/1 queue
//! (`summary::QueueModel`), from what it reported about itself (`WorkerStats`): its busy CPU
//! time and wall time, its work items (reads and sends), its runtime passes' busy times and
//! its loop-lag probe. Pure arithmetic; never prints.

use super::WorkerStats;
use crate::summary::QueueModel;

/// The worker's queue model; `None` when it served no item or had no wall time.
pub fn model(w: &WorkerStats, busy_ns: u64) -> Option<QueueModel> {
    let items = w.counts.reads + w.counts.requests;
    if items == 0 || w.wall_ns == 0 {
        return None;
    }
    let wall_s = w.wall_ns as f64 / 1e9;
    let service_mean_ns = busy_ns as f64 / items as f64;
    let rho = busy_ns as f64 / w.wall_ns as f64;
    let cv2 = service_cv2(w);
    let predicted_wait_us = (rho < 1.0)
        .then(|| rho * service_mean_ns * (1.0 + cv2.unwrap_or(0.0)) / (2.0 * (1.0 - rho)) / 1e3);
    let q = &w.queue;
    Some(QueueModel {
        items_per_s: items as f64 / wall_s,
        service_mean_us: service_mean_ns / 1e3,
        service_cv: cv2.map(f64::sqrt),
        rho,
        predicted_wait_us,
        loop_lag_mean_us: (!w.loop_lag.is_empty()).then(|| w.loop_lag.mean() / 1e3),
        passes: q.passes,
        items_per_pass_mean: (q.passes > 0).then(|| q.items as f64 / q.passes as f64),
    })
}

/// c² of the service time from the passes: E\[S\] = Σ busy / Σ items, E\[S²\] = Σ (busy² /
/// items) / Σ items (each item of a pass served for busy / items), c² = E\[S²\] / E\[S\]² − 1
/// (never below 0: rounding).
fn service_cv2(w: &WorkerStats) -> Option<f64> {
    let q = &w.queue;
    if q.items == 0 || q.busy_ns == 0 {
        return None;
    }
    let n = q.items as f64;
    let mean = q.busy_ns as f64 / n;
    let second = q.busy_sq_per_item_ns2 / n;
    Some((second / (mean * mean) - 1.0).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(reads: u64, requests: u64, wall_ns: u64) -> WorkerStats {
        let mut w = WorkerStats::new(0, 0);
        w.counts.reads = reads;
        w.counts.requests = requests;
        w.wall_ns = wall_ns;
        w
    }

    #[test]
    fn rate_service_and_utilisation_follow_from_the_counts_exactly() {
        // 3,000 reads and 1,000 sends in 2 s, busy 0.5 s: λ = 2,000/s, E[S] = 125 µs, ρ = 0.25.
        let mut w = worker(3_000, 1_000, 2_000_000_000);
        // Passes of equal busy time per item: c = 0.
        for _ in 0..1_000 {
            w.queue.add(500_000, 4);
        }
        let m = model(&w, 500_000_000).unwrap();
        assert_eq!(m.items_per_s, 2_000.0);
        assert_eq!(m.service_mean_us, 125.0);
        assert_eq!(m.rho, 0.25);
        assert_eq!(m.service_cv, Some(0.0));
        // Wq = ρ E[S] (1 + 0) / (2 (1 − ρ)) = 0.25 × 125 / 1.5 µs.
        assert_eq!(m.predicted_wait_us, Some(0.25 * 125.0 / 1.5));
        assert_eq!(m.passes, 1_000);
        assert_eq!(m.items_per_pass_mean, Some(4.0));
    }

    #[test]
    fn the_passes_give_the_service_times_second_moment() {
        // One item served for 1 µs, one pass of 3 items for 9 µs (3 µs each): items 1, 3, 3, 3
        // µs; mean 2.5, second moment (1 + 27) / 4 = 7, c² = 7 / 6.25 − 1 = 0.12.
        let mut w = worker(4, 0, 1_000_000);
        w.queue.add(1_000, 1);
        w.queue.add(9_000, 3);
        w.queue.add(5_000, 0);
        assert_eq!(w.queue.passes, 2, "a pass without items adds nothing");
        let c2 = service_cv2(&w).unwrap();
        assert!((c2 - 0.12).abs() < 1e-12, "{c2}");
        // Exponential service (c = 1) at ρ = 0.5: Wq = E[S] exactly.
        let mut w = worker(1_000, 0, 1_000_000_000);
        w.queue.passes = 1;
        w.queue.items = 1;
        w.queue.busy_ns = 1_000;
        w.queue.busy_sq_per_item_ns2 = 2.0e6;
        let m = model(&w, 500_000_000).unwrap();
        assert_eq!(m.service_cv, Some(1.0));
        assert_eq!(m.predicted_wait_us, Some(m.service_mean_us));
    }

    #[test]
    fn a_saturated_worker_has_no_finite_wait_and_an_idle_one_no_model() {
        let w = worker(10, 10, 1_000);
        let m = model(&w, 1_000).unwrap();
        assert_eq!(m.rho, 1.0);
        assert_eq!(m.predicted_wait_us, None);
        assert_eq!(m.service_cv, None, "no pass sampled");
        assert!(model(&worker(0, 0, 1_000), 0).is_none());
        assert!(model(&worker(5, 0, 0), 0).is_none());
    }
}
