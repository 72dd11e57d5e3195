//! Part of the collector (… → record → **collector** → summary): the conversations' figures
//! (`--turns`) from their turns' records — each record says its session, its turn index, and
//! on the last turn why the session ended, so nothing is kept per session in flight. Bounded:
//! one row per turn index, at most `MAX_TURNS`, made when the index is first seen. Never
//! prints.

use super::dist::Dist;
use super::record_metric;
use crate::plan::session::MAX_TURNS;
use crate::plan::{SessionEnd, SessionSpec};
use crate::record::{Outcome, Record};
use crate::summary::session::{Sessions, TurnRow};
use crate::summary::{Metric, Tally};

/// One turn index's sums.
#[derive(Clone, Debug, Default)]
struct Row {
    tally: Tally,
    ttft: Dist,
    itl: Dist,
    prompt_sum: u64,
    prompts: u64,
    cached_sum: u64,
    cached: u64,
    /// Prompt tokens of the responses that reported cached tokens (the hit ratio's base).
    cached_base: u64,
}

/// The sessions so far.
#[derive(Clone, Debug)]
pub struct SessionTally {
    think_mean_ns: f64,
    started: u64,
    ended: [u64; SessionEnd::ALL.len()],
    turns_sum: u64,
    turns_max: u32,
    duration: Dist,
    think: Dist,
    gap: Dist,
    rows: Vec<Row>,
}

impl SessionTally {
    /// For a run with conversations `spec`.
    pub fn new(spec: &SessionSpec) -> Self {
        SessionTally {
            think_mean_ns: spec.think_time.mean_ns(),
            started: 0,
            ended: [0; SessionEnd::ALL.len()],
            turns_sum: 0,
            turns_max: 0,
            duration: Dist::new(),
            think: Dist::new(),
            gap: Dist::new(),
            rows: Vec::new(),
        }
    }

    /// One measured record (sent or not); a record without a turn is ignored.
    pub fn add(&mut self, rec: &Record, stream: bool) {
        let Some(turn) = rec.turn else {
            return;
        };
        let sent = rec.outcome.was_sent();
        let k = turn.index.min(MAX_TURNS - 1) as usize;
        if self.rows.len() <= k {
            self.rows.resize_with(k + 1, Row::default);
        }
        if sent && turn.index == 0 {
            self.started += 1;
        }
        if let Some(end) = turn.end {
            let i = SessionEnd::ALL.iter().position(|e| *e == end).unwrap_or(0);
            self.ended[i] += 1;
            self.turns_sum += u64::from(turn.index) + 1;
            self.turns_max = self.turns_max.max(turn.index + 1);
            if let Some(done) = rec.done_ns {
                self.duration
                    .record(done.saturating_sub(turn.session_start_ns));
            }
        }
        if turn.index > 0 {
            self.think.record(turn.think_ns);
            if let Some(sent_ns) = rec.sent_ns {
                // The previous reply ended `think_ns` before this turn's intended time.
                let reply_end = rec.intended_ns.saturating_sub(turn.think_ns);
                self.gap.record(sent_ns.saturating_sub(reply_end));
            }
        }
        let row = &mut self.rows[k];
        row.tally.add(rec.outcome);
        if rec.outcome != Outcome::Ok {
            return;
        }
        record_metric(Metric::Ttft, rec, stream, &mut row.ttft);
        record_metric(Metric::Itl, rec, stream, &mut row.itl);
        let prompt = u64::from(rec.prompt_tokens());
        row.prompt_sum += prompt;
        row.prompts += 1;
        if let Some(c) = rec.cached_tokens {
            row.cached_sum += u64::from(c);
            row.cached += 1;
            row.cached_base += prompt;
        }
    }

    /// The summary's `sessions` block.
    pub fn summary(&self, percentiles: &[f64], target_session_rate: Option<f64>) -> Sessions {
        let ended_total: u64 = self.ended.iter().sum();
        let mean = |sum: u64, n: u64| (n > 0).then(|| sum as f64 / n as f64);
        Sessions {
            target_session_rate,
            started: self.started,
            ended: SessionEnd::ALL
                .iter()
                .zip(self.ended)
                .map(|(e, n)| (e.name().to_string(), n))
                .collect(),
            turns_per_session_mean: mean(self.turns_sum, ended_total),
            turns_per_session_max: self.turns_max,
            duration_ms: self.duration.stats_ms(percentiles),
            think_time_ms: self.think.stats_ms(percentiles),
            think_time_asked_mean_ms: self.think_mean_ns / 1e6,
            turn_gap_ms: self.gap.stats_ms(percentiles),
            per_turn: self
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.tally.sent > 0)
                .map(|(k, r)| TurnRow {
                    turn: k as u32 + 1,
                    tally: r.tally,
                    ttft_ms: r.ttft.stats_ms(percentiles),
                    itl_ms: r.itl.stats_ms(percentiles),
                    prompt_tokens_mean: mean(r.prompt_sum, r.prompts),
                    cached_tokens_mean: mean(r.cached_sum, r.cached),
                    cache_hit_percent: (r.cached_base > 0)
                        .then(|| 100.0 * r.cached_sum as f64 / r.cached_base as f64),
                })
                .collect(),
        }
    }
}
