//! Part of the collector (… → record → **collector** → summary → report): `DIR/run.json`,
//! what a summary needs that no request record carries — the resolved config, the host, the
//! wall-clock start, the scheduled count, the workers' own stats (loop-lag histograms as
//! `[value_ns, count]` pairs, which rebuild the very same buckets) and the simulator's
//! report. Every latency, throughput and goodput figure comes from `requests.jsonl` alone;
//! this file only lets `ringbench report` reprint the rest of `summary.json` byte for byte.
//! Written once at the end of a run; never prints.

use super::{new_histogram, RunFacts, WorkerStats};
use crate::summary::Host;
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
    pub workload: Option<crate::workload::WorkloadStats>,
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
        }
    }

    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        crate::outfile::write_atomic(&dir.join(FILE_NAME), &text)
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
            loop_lag_ns: w
                .loop_lag
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
            reads: w.reads,
            events: w.events,
            bytes: w.bytes,
            requests: w.requests,
            connections_opened: w.connections_opened,
            reconnects: w.reconnects,
            channel_full: w.channel_full,
        }
    }

    fn to_stats(&self) -> WorkerStats {
        let mut loop_lag = new_histogram();
        for &[value, count] in &self.loop_lag_ns {
            loop_lag.saturating_record_n(value, count);
        }
        WorkerStats {
            worker: self.worker,
            cpu: self.cpu,
            cpu_ns: self.cpu_ns,
            wall_ns: self.wall_ns,
            loop_lag,
            reads: self.reads,
            events: self.events,
            bytes: self.bytes,
            requests: self.requests,
            connections_opened: self.connections_opened,
            reconnects: self.reconnects,
            channel_full: self.channel_full,
        }
    }
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
}
