//! Part of the summary (a leaf): what a run spread over several hosts records, in
//! `summary.json` and `run.json`. A shard's `shard` block (which part of which run) and
//! every run's `clock` block (how its stamps map to wall-clock time, and how far the kernel
//! thinks that clock may be off); a merged run's `merge` block (which shards it is made of,
//! each one's own overhead and validity, and whether any is missing). Types only: figures are
//! filled in by the run and by `ringbench merge`; never prints.

use serde::{Deserialize, Serialize};

/// Which part of which run a shard is (`--shard I/N`): what `ringbench merge` checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
    /// The hash of what defines the run (`plan::shard::plan_hash`): equal on every shard.
    pub plan_hash: String,
    /// `--seed`: equal on every shard.
    pub seed: u64,
    /// Requests of the global schedule (warm-up included) of which this shard sends its share
    /// (`counts.scheduled` is that share); `null` in a closed loop stopped by time alone.
    pub global_scheduled: Option<u64>,
    /// Closed loop: this shard's virtual users (its share of `--concurrency`).
    pub users: Option<u32>,
    /// This shard's in-flight cap (its share of `--max-concurrency`): a cap per shard.
    pub max_concurrency_per_shard: Option<u32>,
}

/// How a run's stamps map to wall-clock time. Every stamp `t` of the run is the wall-clock
/// instant `origin_unix_ns + t`, to within `offset_uncertainty_ns` and the host clock's own
/// error (`kernel`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockSync {
    /// `CLOCK_REALTIME` at the run clock's origin, Unix ns.
    pub origin_unix_ns: u64,
    /// Half the window in which the two clocks were read: the offset's own uncertainty, ns.
    pub offset_uncertainty_ns: u64,
    /// Run-clock ns at which the schedule started (its arrival 0).
    pub schedule_start_ns: u64,
    /// `--start-at`, Unix ns; `null` when the schedule started as soon as the workers were
    /// ready.
    pub start_at_unix_ns: Option<u64>,
    /// How long after `--start-at` the workers were ready, ns (0 when on time): the schedule
    /// still starts at `--start-at`, so its first arrivals were sent late, and their lateness
    /// is in the scheduling lag.
    pub start_late_ns: u64,
    /// The kernel's own estimate of its clock's sync (`adjtimex`); `null` where it could not
    /// be read.
    pub kernel: Option<KernelClock>,
}

/// What `adjtimex(2)` says of the host's wall clock (as NTP or PTP keep it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelClock {
    /// The kernel says the clock is synchronized (`adjtimex` state not `TIME_ERROR`, and
    /// `STA_UNSYNC` not set).
    pub synchronized: bool,
    /// `adjtimex`'s return: 0 `TIME_OK`, 1 `TIME_INS`, 2 `TIME_DEL`, 3 `TIME_OOP`,
    /// 4 `TIME_WAIT`, 5 `TIME_ERROR`.
    pub state: i32,
    /// The `status` bits (`STA_*`).
    pub status: i32,
    /// Estimated error, µs (`esterror`).
    pub esterror_us: i64,
    /// Maximum error, µs (`maxerror`).
    pub maxerror_us: i64,
}

/// A run merged from shards (`ringbench merge`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeInfo {
    /// How many shards the run has.
    pub shards: u32,
    /// Every shard 0..N is there, once: the records are the whole schedule.
    pub complete: bool,
    /// Shard indices no folder gave.
    pub missing: Vec<u32>,
    /// Shard indices more than one folder gave (only the first of each was merged).
    pub duplicated: Vec<u32>,
    /// The time base: the earliest shard's clock origin, Unix ns. Every merged stamp `t` is
    /// the wall-clock instant `origin_unix_ns + t`.
    pub origin_unix_ns: u64,
    /// Largest `maxerror` over the shards' kernels, µs: how far apart the hosts' clocks may be
    /// (twice this, at most); `null` where no kernel said.
    pub max_clock_error_us: Option<i64>,
    /// The shard whose `server_metrics.jsonl` the merged run kept (every shard scraped the
    /// same server, so one shard's scrapes, not their sum, make the `server` block): the
    /// lowest index that had the file; `null` when none had.
    pub server_metrics_shard: Option<u32>,
    /// Each merged shard, in index order.
    pub parts: Vec<ShardPart>,
}

/// One shard of a merged run, with its own overhead as its `summary.json` said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    /// The shard's index.
    pub index: u32,
    /// The folder it was read from, as given.
    pub dir: String,
    /// Its own `started_at`.
    pub started_at: String,
    /// How far its stamps were moved onto the merged time base, ns.
    pub shift_ns: i64,
    /// Its clock block.
    pub clock: Option<ClockSync>,
    /// Requests it scheduled (warm-up included).
    pub scheduled: u64,
    /// Its scheduling lag p99, ms.
    pub sched_lag_ms_p99: Option<f64>,
    /// Its workers' CPU use, % of their wall time (mean).
    pub worker_cpu_percent: Option<f64>,
    /// It was valid on its own.
    pub valid: bool,
    /// Why not.
    pub invalid_reasons: Vec<String>,
}
