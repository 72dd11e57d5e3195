//! The simulator's truth window (server side; the client flow never reads it): what
//! `GET /sim/truth` answers and `POST /sim/truth/reset` restarts — every listener thread's
//! truth histograms (`truth.rs`) and arrival rings summed since a baseline. Read by whichever
//! thread serves the endpoint; its mutex is never taken on the serving path.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::arrivals::{ArrivalStamps, ArrivalSummary};
use super::stats::ThreadStats;
use super::truth::{Distinct, TruthPair, TruthSummary};
use crate::plan::sim::KernelStamps;

/// The window behind `GET /sim/truth`: every thread's histograms and arrival rings, and the
/// snapshot the last `POST /sim/truth/reset` took. Read by whichever thread serves the
/// endpoint; the mutex is only ever taken there, never on the serving path.
#[derive(Debug)]
pub(crate) struct TruthBoard {
    pub threads: Vec<Arc<ThreadStats>>,
    /// Distinct prompt hashes seen by every replica.
    pub distinct: Distinct,
    /// Which stamps the kernel gives.
    pub kernel_stamps: KernelStamps,
    baseline: Mutex<Baseline>,
}

/// Where the window starts.
#[derive(Debug, Default)]
struct Baseline {
    pair: TruthPair,
    /// Each thread's arrival count.
    heads: Vec<u64>,
    /// The monotonic instant it was taken (the simulator's start at first).
    since_ns: u64,
}

/// What `GET /sim/truth` answers.
#[derive(Serialize, Debug)]
pub(crate) struct TruthWindow {
    /// The window: from the last reset (or the start) to now, `CLOCK_MONOTONIC` ns.
    pub since_mono_ns: u64,
    pub mono_ns: u64,
    /// Which stamps the kernel gives (`--kernel-stamps`).
    pub kernel_stamps: KernelStamps,
    pub ttft_us: TruthSummary,
    pub e2e_us: TruthSummary,
    pub ttft_user_us: TruthSummary,
    pub e2e_user_us: TruthSummary,
    pub wake_us: TruthSummary,
    pub unstamped_reads: u64,
    pub unstamped_writes: u64,
    /// The completion requests that arrived in the window, and their gaps.
    pub arrivals: ArrivalSummary,
    /// Engine model: admitted completions' time waiting for a slot or KV blocks.
    pub queue_us: TruthSummary,
    /// Completions admitted in the window, their prompt tokens and the cached share.
    pub completions: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    /// Distinct prompts since the simulator started (KV cache on; not windowed).
    pub distinct_prompts: u64,
}

impl TruthBoard {
    pub(crate) fn new(
        threads: Vec<Arc<ThreadStats>>,
        kernel_stamps: KernelStamps,
        start_ns: u64,
    ) -> Self {
        Self {
            threads,
            distinct: Distinct::default(),
            kernel_stamps,
            baseline: Mutex::new(Baseline {
                since_ns: start_ns,
                ..Baseline::default()
            }),
        }
    }

    fn current(&self) -> TruthPair {
        let mut now = TruthPair::default();
        for t in &self.threads {
            t.add_truth(&mut now);
        }
        now
    }

    /// Starts a new window at `now_ns`.
    pub(crate) fn reset(&self, now_ns: u64) {
        let base = Baseline {
            pair: self.current(),
            heads: self.threads.iter().map(|t| t.arrivals.head()).collect(),
            since_ns: now_ns,
        };
        *self.baseline.lock().unwrap_or_else(|e| e.into_inner()) = base;
    }

    /// The arrivals since the last reset themselves (`GET /sim/arrivals`), merged in time
    /// order: up to `--arrivals-kept` per thread.
    pub(crate) fn arrival_stamps(&self) -> ArrivalStamps {
        let base = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        let rings = self.threads.iter().map(|t| &t.arrivals);
        super::arrivals::stamps(rings, &base.heads)
    }

    /// Percentiles of what was counted since the last reset, and the arrivals since then.
    /// Merging the arrivals sorts them: up to `--arrivals-kept` per thread (2^20 by default:
    /// tens of ms).
    pub(crate) fn window(&self, now_ns: u64) -> TruthWindow {
        let base = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        let diff = self.current().since(&base.pair);
        let rings = self.threads.iter().map(|t| &t.arrivals);
        TruthWindow {
            since_mono_ns: base.since_ns,
            mono_ns: now_ns,
            kernel_stamps: self.kernel_stamps,
            ttft_us: diff.ttft.summary(),
            e2e_us: diff.e2e.summary(),
            ttft_user_us: diff.ttft_user.summary(),
            e2e_user_us: diff.e2e_user.summary(),
            wake_us: diff.wake.summary(),
            unstamped_reads: diff.unstamped_reads,
            unstamped_writes: diff.unstamped_writes,
            arrivals: super::arrivals::summary(rings, &base.heads),
            queue_us: diff.queue.summary(),
            completions: diff.completions,
            prompt_tokens: diff.prompt_tokens,
            cached_tokens: diff.cached_tokens,
            distinct_prompts: self.distinct.count(),
        }
    }
}
