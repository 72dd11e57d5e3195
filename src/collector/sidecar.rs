//! Part of the collector (… → record → **collector** → summary → report): `DIR/run.json`,
//! what a summary needs that no request record carries — the resolved config, the host, the
//! wall-clock start, the scheduled count, the workers' own stats (`WorkerStats` as it is,
//! histograms as `[value_ns, count]` pairs that rebuild the very same buckets) and the
//! simulator's report, and a shard's place in a run over several hosts (`shard`, `clock`,
//! `merge`). Every latency, throughput and goodput figure comes from `requests.jsonl` alone;
//! this file only lets `ringbench report` reprint the rest of `summary.json` byte for byte.
//! Written once at the end of a run; never prints.

use super::{RunFacts, WorkerStats};
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
    pub workers: Vec<WorkerStats>,
    /// The workload as drawn before the run (lengths, method, prefixes, observed cache hits).
    #[serde(default)]
    pub workload: Option<crate::summary::workload::WorkloadStats>,
    #[serde(default)]
    pub kernel_net: Option<crate::summary::NetDelta>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::summary::shard::ShardInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::summary::shard::ClockSync>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<crate::summary::shard::MergeInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<crate::summary::served::Served>,
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
            workers: facts.workers.clone(),
            workload: facts.workload.clone(),
            kernel_net: facts.kernel_net.clone(),
            shard: facts.shard.clone(),
            clock: facts.clock.clone(),
            merge: facts.merge.clone(),
            served: facts.served.clone(),
        }
    }

    pub fn facts(&self) -> RunFacts {
        RunFacts {
            started_at: self.started_at.clone(),
            io_driver: self.io_driver.clone(),
            scheduled: self.scheduled,
            wall_ns: self.wall_ns,
            interrupted: self.interrupted,
            workers: self.workers.clone(),
            sim: self.sim.clone(),
            warnings: self.warnings.clone(),
            workload: self.workload.clone(),
            kernel_net: self.kernel_net.clone(),
            shard: self.shard.clone(),
            clock: self.clock.clone(),
            merge: self.merge.clone(),
            served: self.served.clone(),
        }
    }

    pub fn write(&self, dir: &Path) -> io::Result<()> {
        crate::rt::file::write_json(dir, FILE_NAME, self)
    }

    pub fn read(dir: &Path) -> io::Result<Self> {
        let text = std::fs::read(dir.join(FILE_NAME))?;
        serde_json::from_slice(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}
