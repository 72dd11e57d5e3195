//! Part of the collector (… → record → **collector** → summary → report): `DIR/run.json`,
//! what a summary needs that no request record carries — the resolved config, the host, the
//! wall-clock start, the scheduled count, the workers' own stats (loop-lag histograms as
//! `[value_ns, count]` pairs, which rebuild the very same buckets) and the simulator's
//! report. Every latency, throughput and goodput figure comes from `requests.jsonl` alone;
//! this file only lets `ringbench report` reprint the rest of `summary.json` byte for byte.
//! Written once at the end of a run; never prints.

use super::{new_histogram, KernelRx, RunFacts, WorkerStats};
use crate::summary::Host;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

pub const FILE_NAME: &str = "run.json";
/// Bumped when a key changes meaning.
pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSidecar {
    pub format: u32,
    pub started_at: String,
    pub host: Host,
    pub config: serde_json::Value,
    pub scheduled: u64,
    pub wall_ns: u64,
    pub interrupted: bool,
    pub io_driver: String,
    pub sim: Option<serde_json::Value>,
    /// Warnings raised outside the records (workers, catalog, the log itself).
    pub warnings: Vec<String>,
    pub workers: Vec<WorkerDoc>,
    /// The workload as drawn before the run (lengths, method, prefixes, observed cache hits).
    #[serde(default)]
    pub workload: Option<crate::prepare::WorkloadStats>,
    #[serde(default)]
    pub kernel_net: Option<crate::rt::netcount::NetDelta>,
}

/// `WorkerStats` as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerDoc {
    pub worker: u16,
    pub cpu: usize,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// `[highest value of the bucket, count]` for each non-empty bucket.
    pub loop_lag_ns: Vec<[u64; 2]>,
    pub reads: u64,
    pub events: u64,
    pub bytes: u64,
    pub requests: u64,
    pub connections_opened: u64,
    pub reconnects: u64,
    pub channel_full: u64,
    /// Kernel → user delays, as `loop_lag_ns`.
    #[serde(default)]
    pub kernel_rx_delay_ns: Vec<[u64; 2]>,
    #[serde(default)]
    pub kernel_rx_unstamped: u64,
    #[serde(default)]
    pub kernel_rx_negative: u64,
    #[serde(default)]
    pub kernel_rx_unavailable: Option<String>,
    #[serde(default)]
    pub pacer_spun_ns: u64,
    #[serde(default)]
    pub pacer_passes: u64,
    #[serde(default)]
    pub pacer_idle_ns: u64,
    #[serde(default)]
    pub pacer_spin_budget_ns: u64,
}

impl RunSidecar {
    pub fn new(facts: &RunFacts, host: &Host, config: &serde_json::Value) -> Self {
        RunSidecar {
            format: FORMAT,
            started_at: facts.started_at.clone(),
            host: host.clone(),
            config: config.clone(),
            scheduled: facts.scheduled,
            wall_ns: facts.wall_ns,
            interrupted: facts.interrupted,
            io_driver: facts.io_driver.clone(),
            sim: facts.sim.clone(),
            warnings: facts.warnings.clone(),
            workers: facts.workers.iter().map(WorkerDoc::from_stats).collect(),
            workload: facts.workload.clone(),
            kernel_net: facts.kernel_net.clone(),
        }
    }

    pub fn facts(&self) -> RunFacts {
        RunFacts {
            started_at: self.started_at.clone(),
            io_driver: self.io_driver.clone(),
            scheduled: self.scheduled,
            wall_ns: self.wall_ns,
            interrupted: self.interrupted,
            workers: self.workers.iter().map(WorkerDoc::to_stats).collect(),
            sim: self.sim.clone(),
            warnings: self.warnings.clone(),
            workload: self.workload.clone(),
            kernel_net: self.kernel_net.clone(),
        }
    }

    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        crate::output::files::write_atomic(&dir.join(FILE_NAME), &text)
    }

    pub fn read(dir: &Path) -> io::Result<Self> {
        let text = std::fs::read(dir.join(FILE_NAME))?;
        serde_json::from_slice(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

impl WorkerDoc {
    fn from_stats(w: &WorkerStats) -> Self {
        WorkerDoc {
            worker: w.worker,
            cpu: w.cpu,
            cpu_ns: w.cpu_ns,
            wall_ns: w.wall_ns,
            loop_lag_ns: buckets(&w.loop_lag),
            reads: w.reads,
            events: w.events,
            bytes: w.bytes,
            requests: w.requests,
            connections_opened: w.connections_opened,
            reconnects: w.reconnects,
            channel_full: w.channel_full,
            kernel_rx_delay_ns: buckets(&w.kernel_rx.delay_ns),
            kernel_rx_unstamped: w.kernel_rx.unstamped,
            kernel_rx_negative: w.kernel_rx.negative,
            kernel_rx_unavailable: w.kernel_rx.unavailable.clone(),
            pacer_spun_ns: w.pacer_spun_ns,
            pacer_passes: w.pacer_passes,
            pacer_idle_ns: w.pacer_idle_ns,
            pacer_spin_budget_ns: w.pacer_spin_budget_ns,
        }
    }

    fn to_stats(&self) -> WorkerStats {
        WorkerStats {
            worker: self.worker,
            cpu: self.cpu,
            cpu_ns: self.cpu_ns,
            wall_ns: self.wall_ns,
            loop_lag: histogram(&self.loop_lag_ns),
            reads: self.reads,
            events: self.events,
            bytes: self.bytes,
            requests: self.requests,
            connections_opened: self.connections_opened,
            reconnects: self.reconnects,
            channel_full: self.channel_full,
            kernel_rx: KernelRx {
                delay_ns: histogram(&self.kernel_rx_delay_ns),
                unstamped: self.kernel_rx_unstamped,
                negative: self.kernel_rx_negative,
                unavailable: self.kernel_rx_unavailable.clone(),
            },
            pacer_spun_ns: self.pacer_spun_ns,
            pacer_passes: self.pacer_passes,
            pacer_idle_ns: self.pacer_idle_ns,
            pacer_spin_budget_ns: self.pacer_spin_budget_ns,
        }
    }
}

/// `[highest value of the bucket, count]` for each non-empty bucket.
fn buckets(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect()
}

/// The histogram `buckets` was taken from, bucket for bucket.
fn histogram(buckets: &[[u64; 2]]) -> Histogram<u64> {
    let mut h = new_histogram();
    for &[value, count] in buckets {
        h.saturating_record_n(value, count);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_lag_histograms_rebuild_bucket_for_bucket() {
        let mut w = WorkerStats::new(3, 1);
        for v in [1_000u64, 1_001, 55_555, 9_999_999, 123_456_789] {
            w.loop_lag.record(v).unwrap();
        }
        let back = WorkerDoc::from_stats(&w).to_stats();
        assert_eq!(back.loop_lag, w.loop_lag);
        assert_eq!(back.loop_lag.min(), w.loop_lag.min());
        assert_eq!(back.loop_lag.max(), w.loop_lag.max());
        assert_eq!(back.loop_lag.mean(), w.loop_lag.mean());
    }

    #[test]
    fn kernel_rx_delays_and_their_counts_round_trip() {
        let mut w = WorkerStats::new(0, 0);
        for v in [0u64, 7_000, 25_431, 2_000_000] {
            w.kernel_rx.delay_ns.record(v).unwrap();
        }
        w.kernel_rx.unstamped = 3;
        w.kernel_rx.negative = 1;
        w.kernel_rx.unavailable = Some("off".into());
        let doc = WorkerDoc::from_stats(&w);
        let text = serde_json::to_string(&doc).unwrap();
        let back = serde_json::from_str::<WorkerDoc>(&text).unwrap().to_stats();
        assert_eq!(back.kernel_rx.delay_ns, w.kernel_rx.delay_ns);
        assert_eq!(back.kernel_rx.delay_ns.max(), w.kernel_rx.delay_ns.max());
        assert_eq!((back.kernel_rx.unstamped, back.kernel_rx.negative), (3, 1));
        assert_eq!(back.kernel_rx.unavailable.as_deref(), Some("off"));
    }
}
