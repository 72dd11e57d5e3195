//! Part of the CLI (raw flags → `Plan`): `ringbench run`'s flags of how users behave —
//! conversations (`--turns`, `--users`, `--session-rate`, `--think-time`,
//! `--max-context-tokens`) and abandoned answers (`--cancel-rate`, `--cancel-after`) — and
//! their mapping.
//! `--users N` and `--session-rate R` are a closed and an open loop of *sessions*: they are
//! lowered to `--concurrency` and `--request-rate` (whose schedule then starts sessions), so
//! the load, its shards and its warm-up work as for requests. Rules between settings are
//! `Plan::validate`'s.

use super::heading as h;
use super::parse::{duration_ns_in, Bare};
use super::UsageError;
use clap::Args;
use ringbench::plan::session::MAX_TURNS;
use ringbench::plan::workload::LengthDist;
use ringbench::plan::{CancelAfter, CancelSpec, SessionSpec, ThinkTime};

#[derive(Debug, Clone, Default, Args)]
pub struct SessionFlags {
    /// Conversations of N turns (a distribution as --input-dist, or all)
    ///
    /// Each turn sends the whole history: earlier user messages and the assistant's actual
    /// replies, then a new user message; a session keeps one connection and sends
    /// x-session-id. --request-count then counts sessions. At most 256 turns a session. With
    /// a --dataset of conversations (ShareGPT, JSONL {"turns": [...]}), session s sends the
    /// user messages of conversation s (mod their count), at most N of them; all: every one.
    #[arg(long, value_name = "SPEC", help_heading = h::SESSIONS)]
    pub turns: Option<String>,
    /// Closed loop of N users, each holding one conversation after another
    #[arg(long, value_name = "N", requires = "turns", help_heading = h::SESSIONS)]
    pub users: Option<u32>,
    /// Open loop: sessions started per second (with --arrival)
    #[arg(long, value_name = "R", requires = "turns", conflicts_with = "users", help_heading = h::SESSIONS)]
    pub session_rate: Option<f64>,
    /// Pause between a reply and the next turn [default: 0]
    ///
    /// D, fixed:D, exp:MEAN or lognormal:MEDIAN:P99 (e.g. exp:2s); the next turn's intended
    /// time is the reply's end plus the pause.
    #[arg(long, value_name = "SPEC", requires = "turns", value_parser = parse_think_time, help_heading = h::SESSIONS)]
    pub think_time: Option<ThinkTime>,
    /// End a session before a turn whose prompt would pass N tokens
    #[arg(long, value_name = "N", requires = "turns", help_heading = h::SESSIONS)]
    pub max_context_tokens: Option<u32>,
    /// Abort this share of requests mid-answer (0.3: 30%)
    ///
    /// The client closes the connection; counted as cancelled_by_client (summary.json's
    /// cancellations), never as failures nor in the latency figures. Which requests is seeded.
    #[arg(long, value_name = "P", requires = "cancel_after", help_heading = h::SESSIONS)]
    pub cancel_rate: Option<f64>,
    /// When to abort: D after the send (500ms), or tokens:N
    #[arg(long, value_name = "SPEC", requires = "cancel_rate", value_parser = parse_cancel_after, help_heading = h::SESSIONS)]
    pub cancel_after: Option<CancelAfter>,
}

impl SessionFlags {
    /// The cancellations asked for; `None` without `--cancel-rate`.
    pub fn cancel(&self) -> Option<CancelSpec> {
        Some(CancelSpec {
            rate: self.cancel_rate?,
            after: self.cancel_after?,
        })
    }

    /// The conversations asked for; `None` without `--turns`.
    pub fn spec(&self) -> Result<Option<SessionSpec>, UsageError> {
        let Some(turns) = &self.turns else {
            return Ok(None);
        };
        let all_turns = turns.trim() == "all";
        let turns = match all_turns {
            true => LengthDist::Fixed { tokens: MAX_TURNS },
            false => LengthDist::parse("--turns", turns).map_err(UsageError)?,
        };
        Ok(Some(SessionSpec {
            turns,
            all_turns,
            think_time: self.think_time.unwrap_or_default(),
            max_context_tokens: self.max_context_tokens,
        }))
    }
}

/// `--cancel-after`: `D` (a bare number is ms) or `tokens:N`.
pub fn parse_cancel_after(s: &str) -> Result<CancelAfter, String> {
    let fix = "use a time after the send (500ms) or tokens:N";
    match s.split_once(':') {
        Some(("tokens", n)) => match n.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(CancelAfter::Tokens { n }),
            _ => Err(format!(
                "'{s}': N must be a whole number of tokens from 1; {fix}"
            )),
        },
        Some(_) => Err(format!("'{s}' is not a cut: {fix}")),
        None => match duration_ns_in(s, Bare::Ms) {
            Ok(ns) if ns > 0 => Ok(CancelAfter::Time { ns }),
            Ok(_) => Err(format!("'{s}': the time must be above 0; {fix}")),
            Err(e) => Err(format!("'{s}': {e}; {fix}")),
        },
    }
}

/// `--think-time`: `D` or `fixed:D`, `exp:MEAN`, `lognormal:MEDIAN:P99` (a bare number is s).
pub fn parse_think_time(s: &str) -> Result<ThinkTime, String> {
    let fix = "use D, fixed:D, exp:MEAN or lognormal:MEDIAN:P99, e.g. exp:2s";
    let parts: Vec<&str> = s.split(':').map(str::trim).collect();
    let d = |i: usize| -> Result<u64, String> {
        let v = parts
            .get(i)
            .ok_or_else(|| format!("'{s}' misses a duration: {fix}"))?;
        duration_ns_in(v, Bare::S).map_err(|e| format!("'{s}': {e}; {fix}"))
    };
    let t = match (parts[0], parts.len()) {
        (_, 1) => ThinkTime::Fixed { ns: d(0)? },
        ("fixed", 2) => ThinkTime::Fixed { ns: d(1)? },
        ("exp" | "exponential", 2) => ThinkTime::Exponential { mean_ns: d(1)? },
        ("lognormal", 3) => {
            let (median_ns, p99_ns) = (d(1)?, d(2)?);
            if median_ns == 0 || p99_ns <= median_ns {
                return Err(format!(
                    "'{s}': the p99 must be above the median, which must be above 0"
                ));
            }
            ThinkTime::Lognormal { median_ns, p99_ns }
        }
        _ => return Err(format!("'{s}' is not a think time: {fix}")),
    };
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_parse_with_their_units() {
        assert_eq!(
            parse_think_time("2"),
            Ok(ThinkTime::Fixed { ns: 2_000_000_000 })
        );
        assert_eq!(
            parse_think_time("fixed:250ms"),
            Ok(ThinkTime::Fixed { ns: 250_000_000 })
        );
        assert_eq!(
            parse_think_time("exp:1.5s"),
            Ok(ThinkTime::Exponential {
                mean_ns: 1_500_000_000
            })
        );
        assert_eq!(
            parse_think_time("lognormal:100ms:2s"),
            Ok(ThinkTime::Lognormal {
                median_ns: 100_000_000,
                p99_ns: 2_000_000_000
            })
        );
        for bad in ["exp", "lognormal:2s:1s", "gamma:1s", "fixed:x", "exp:1s:2s"] {
            assert!(parse_think_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cancel_cuts_parse_as_time_or_tokens() {
        assert_eq!(
            parse_cancel_after("500"),
            Ok(CancelAfter::Time { ns: 500_000_000 })
        );
        assert_eq!(
            parse_cancel_after("1.5s"),
            Ok(CancelAfter::Time { ns: 1_500_000_000 })
        );
        assert_eq!(
            parse_cancel_after("tokens:12"),
            Ok(CancelAfter::Tokens { n: 12 })
        );
        for bad in ["tokens:0", "tokens:x", "0", "words:3", "soon"] {
            assert!(parse_cancel_after(bad).is_err(), "{bad}");
        }
    }
}
