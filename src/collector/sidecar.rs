//! Part of the collector (… → record → **collector** → summary → report): `DIR/run.json`,
//! what a summary needs that no request record carries — the resolved config, the host, the
//! wall-clock start, the scheduled count, the workers' own stats (`WorkerStats` as it is,
//! histograms as `[value_ns, count]` pairs that rebuild the very same buckets) and the
//! simulator's report, and a shard's place in a run over several hosts (`shard`, `clock`,
//! `merge`). Every latency, throughput and goodput figure comes from `requests.jsonl` alone;
//! this file only lets `ringbench report` reprint the rest of `summary.json` byte for byte.
//! Written once at the end of a run; never prints.

use super::RunFacts;
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
    pub host: Host,
    pub config: serde_json::Value,
    /// Everything else the summary needs, as the run handed it to `finish` (the keys sit at
    /// the top level of `run.json`).
    #[serde(flatten)]
    pub facts: RunFacts,
}

impl RunSidecar {
    pub fn new(facts: &RunFacts, host: &Host, config: &serde_json::Value) -> Self {
        RunSidecar {
            format: FORMAT,
            host: host.clone(),
            config: config.clone(),
            facts: facts.clone(),
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
