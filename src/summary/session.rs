//! Part of the summary (a leaf): `summary.json`'s `sessions` block (`--turns`) — how the
//! conversations went and, per turn index, what the server did with a growing history: TTFT,
//! ITL, prompt and cached tokens (the cache-hit curve). Only data; the collector fills it.

use super::{Stats, Tally};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Conversations over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sessions {
    /// Sessions per second the schedule started (`--session-rate`); `null` for `--users`.
    pub target_session_rate: Option<f64>,
    /// Measured sessions whose first turn was sent.
    pub started: u64,
    /// Sessions that ended, by why (`completed`, `context`, `failed`, `abandoned`, `run_end`), every reason
    /// present.
    pub ended: BTreeMap<String, u64>,
    /// Turns sent per ended session.
    pub turns_per_session_mean: Option<f64>,
    /// The most turns one session sent.
    pub turns_per_session_max: u32,
    /// Ended sessions: from the first turn's send to the last turn's end, ms.
    pub duration_ms: Stats,
    /// The pauses drawn before turns 2 and on (`--think-time`), ms; and the asked mean.
    pub think_time_ms: Stats,
    /// The mean of the asked `--think-time` distribution, ms.
    pub think_time_asked_mean_ms: f64,
    /// From a reply's end to the next turn's send, ms: the pause plus the client's lateness.
    pub turn_gap_ms: Stats,
    /// One row per turn index (1 = a session's first turn), while any request had it.
    pub per_turn: Vec<TurnRow>,
}

/// The figures of every measured request that was its session's turn `turn`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnRow {
    /// The turn, from 1.
    pub turn: u32,
    /// Its measured requests by how they ended, as the run's `counts` (`sent` was named
    /// `requests` before, the one block that did).
    #[serde(flatten)]
    pub tally: Tally,
    /// TTFT of the successful ones, ms (streamed runs).
    pub ttft_ms: Stats,
    /// Chunk gaps of the successful ones, ms (streamed runs).
    pub itl_ms: Stats,
    /// Mean prompt tokens: the server's `usage.prompt_tokens` where given, else the client's.
    pub prompt_tokens_mean: Option<f64>,
    /// Mean `usage.prompt_tokens_details.cached_tokens`, over responses that carried it.
    pub cached_tokens_mean: Option<f64>,
    /// Σ cached tokens / Σ prompt tokens of responses that carried both, percent.
    pub cache_hit_percent: Option<f64>,
}
