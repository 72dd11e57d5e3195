//! Part of the summary (types only): the per-stage breakdown of a `--stages` run
//! (`stages` in `summary.json`). Each stage's figures are the collector's, recomputed from
//! that stage's own records (never combined from percentiles); the whole-run figures beside
//! them stay the combined ones. Never computes, never prints.

use super::{Stats, Tally};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One stage of the run: what it asked, what it got, its latencies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// Its place in `--stages`, from 0.
    pub index: usize,
    /// The rate it asked for, req/s.
    pub target_request_rate: f64,
    /// Where its window starts on the schedule's time line, s from the schedule's start.
    pub start_s: f64,
    /// How long its window is, s.
    pub duration_s: f64,
    /// Its requests: those whose intended time falls in its window.
    pub counts: StageCounts,
    /// Its measured requests sent (whenever they were sent) / its window, req/s: the load
    /// the stage offered by count. A request sent late still counts to its own stage, so a
    /// slow client shows here only by requests it never sent, and in `sched_lag_ms`.
    pub achieved_request_rate: Option<f64>,
    /// Its measured requests sent within its own window (a late one past its end is not).
    pub sent_in_window: u64,
    /// Scheduling lag (send − intended) of its measured sent requests, ms.
    pub sched_lag_ms: Stats,
    /// Its measured successful requests' distributions, ms, keyed as `latency_ms` (the
    /// metrics with the `STAGE` role).
    pub latency_ms: BTreeMap<String, Stats>,
}

/// A stage's counts, as the run's (`scheduled = sent + not_sent`, warm-up apart).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCounts {
    /// Measured arrivals the schedule put in the stage: exactly its rate × duration (this
    /// shard's share of them), less its warm-up arrivals.
    pub scheduled: u64,
    /// Its measured requests by how they ended (as the run's `counts`).
    #[serde(flatten)]
    pub tally: Tally,
    /// Warm-up records of the stage (`--warmup-requests`: the first stage's first N).
    pub warmup: u64,
}
