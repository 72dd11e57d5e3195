//! Part of the plan (a leaf): what a conversation is — how many turns, how long its user
//! thinks between a reply and the next message, and its context budget (`--turns`,
//! `--think-time`, `--max-context-tokens`). The draws are pure functions of the run's seed and
//! the session's index, so the same plan and seed give the same conversations on any number
//! of workers or shards. No I/O, no clock.

use super::workload::{splitmix64, LengthDist, Z_P99};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, LogNormal};
use serde::{Deserialize, Serialize};

/// Most turns one session has: a draw above it is clipped (and the turn index of every
/// record fits the per-turn tables' bound).
pub const MAX_TURNS: u32 = 256;

/// Conversations: each session sends its turns one after the other on one connection, each
/// turn's prompt the whole history so far (user messages and the assistant's actual replies)
/// plus a new user message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    /// Turns per session (`--turns`), each draw clipped to `[1, MAX_TURNS]`; with a dataset
    /// of conversations, also to the session's conversation's user turns.
    pub turns: LengthDist,
    /// `--turns all`: as many turns as the session's dataset conversation has (`turns` is
    /// then `MAX_TURNS`, the cap); needs a dataset of conversations.
    #[serde(default)]
    pub all_turns: bool,
    /// Between a reply's end and the next turn's send (`--think-time`).
    pub think_time: ThinkTime,
    /// A session whose next prompt would pass this many tokens ends before it
    /// (`--max-context-tokens`); `None`: no budget.
    pub max_context_tokens: Option<u32>,
}

/// How long a user thinks before the next turn.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThinkTime {
    /// Always the same (`fixed:D`, or a bare duration; 0 by default).
    Fixed {
        /// The pause, ns.
        ns: u64,
    },
    /// Exponential with this mean (`exp:MEAN`).
    Exponential {
        /// Mean pause, ns.
        mean_ns: u64,
    },
    /// Lognormal set by its median and 99th percentile (`lognormal:MEDIAN:P99`).
    Lognormal {
        /// Median pause, ns.
        median_ns: u64,
        /// 99th percentile, ns (above the median).
        p99_ns: u64,
    },
}

impl Default for ThinkTime {
    fn default() -> Self {
        ThinkTime::Fixed { ns: 0 }
    }
}

impl ThinkTime {
    /// One pause, ns (clipped to an hour, so a lognormal's tail cannot stall a run).
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        const MAX_NS: f64 = 3_600e9;
        let v = match *self {
            ThinkTime::Fixed { ns } => return ns,
            ThinkTime::Exponential { mean_ns: 0 } => return 0,
            ThinkTime::Exponential { mean_ns } => {
                Exp::new(1.0 / mean_ns as f64).map_or(0.0, |d| d.sample(rng))
            }
            ThinkTime::Lognormal { median_ns, p99_ns } => {
                let (median, sigma) = lognormal(median_ns, p99_ns);
                LogNormal::new(median.ln(), sigma).map_or(median, |d| d.sample(rng))
            }
        };
        v.round().clamp(0.0, MAX_NS) as u64
    }

    /// The distribution's mean, ns (what the summary sets beside the measured pauses).
    pub fn mean_ns(&self) -> f64 {
        match *self {
            ThinkTime::Fixed { ns } => ns as f64,
            ThinkTime::Exponential { mean_ns } => mean_ns as f64,
            ThinkTime::Lognormal { median_ns, p99_ns } => {
                let (median, sigma) = lognormal(median_ns, p99_ns);
                median * (sigma * sigma / 2.0).exp()
            }
        }
    }
}

/// A lognormal's median and sigma from its median and 99th percentile, ns.
fn lognormal(median_ns: u64, p99_ns: u64) -> (f64, f64) {
    let median = (median_ns as f64).max(1.0);
    (median, ((p99_ns as f64).max(median) / median).ln() / Z_P99)
}

/// Mixed into the seed so a session's draws never repeat the schedule's or the prompts'.
const SESSION_TAG: u64 = 0x5e55_1011_7a1c_0001;

impl SessionSpec {
    /// The largest turn count a draw can give: record ids of session `s` are
    /// `s × stride + turn` (`turn_id`).
    pub fn stride(&self) -> u64 {
        u64::from(self.turns.upper_bound().clamp(1, MAX_TURNS))
    }

    /// The request id of turn `turn` of session `session`.
    pub fn turn_id(&self, session: u64, turn: u32) -> u64 {
        session
            .saturating_mul(self.stride())
            .saturating_add(u64::from(turn))
    }

    /// Session `session`'s own random stream (turn count first, then its pauses).
    pub fn rng(&self, seed: u64, session: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(splitmix64(seed ^ SESSION_TAG ^ splitmix64(session)))
    }

    /// Session `session`'s turn count, drawn first from `rng`.
    pub fn turns_of<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        self.turns.sample(rng).clamp(1, MAX_TURNS)
    }
}

/// Why a session ended; exactly one per session, on its last turn's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionEnd {
    /// Every turn drawn was answered.
    Completed,
    /// The next prompt would have passed `--max-context-tokens`, or (with its `max_tokens`)
    /// the server's context window.
    Context,
    /// A turn did not succeed (failed, timed out, cancelled by the run's end): a chat app
    /// shows the error and the conversation stops there.
    Failed,
    /// The user abandoned a turn's answer (`--cancel-rate`): the tab was closed, and the
    /// conversation with it.
    Abandoned,
    /// The next turn was due after the run's end (`--duration`), or the run was stopped.
    RunEnd,
}

impl SessionEnd {
    /// Every reason, in the order the summary lists them.
    pub const ALL: [SessionEnd; 5] = [
        SessionEnd::Completed,
        SessionEnd::Context,
        SessionEnd::Failed,
        SessionEnd::Abandoned,
        SessionEnd::RunEnd,
    ];

    /// The name `requests.jsonl` and `summary.json` use.
    pub fn name(self) -> &'static str {
        match self {
            SessionEnd::Completed => "completed",
            SessionEnd::Context => "context",
            SessionEnd::Failed => "failed",
            SessionEnd::Abandoned => "abandoned",
            SessionEnd::RunEnd => "run_end",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(t: ThinkTime, n: usize) -> (f64, f64) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let v: Vec<f64> = (0..n).map(|_| t.sample(&mut rng) as f64).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn think_times_have_the_asked_mean_and_spread() {
        let n = 200_000;
        let (mean, cv) = moments(ThinkTime::Fixed { ns: 5_000_000 }, 1000);
        assert_eq!((mean, cv), (5e6, 0.0));
        let exp = ThinkTime::Exponential { mean_ns: 2_000_000 };
        let (mean, cv) = moments(exp, n);
        assert!((mean / 2e6 - 1.0).abs() < 0.02, "exp mean {mean}");
        assert!((cv - 1.0).abs() < 0.02, "exp cv {cv}");
        let logn = ThinkTime::Lognormal {
            median_ns: 1_000_000,
            p99_ns: 10_000_000,
        };
        let (mean, _) = moments(logn, n);
        assert!(
            (mean / logn.mean_ns() - 1.0).abs() < 0.02,
            "lognormal mean {mean} vs {}",
            logn.mean_ns()
        );
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut v: Vec<u64> = (0..n).map(|_| logn.sample(&mut rng)).collect();
        v.sort_unstable();
        let median = v[n / 2] as f64;
        let p99 = v[n * 99 / 100] as f64;
        assert!((median / 1e6 - 1.0).abs() < 0.02, "median {median}");
        assert!((p99 / 1e7 - 1.0).abs() < 0.05, "p99 {p99}");
    }

    #[test]
    fn turn_ids_are_distinct_across_sessions_and_draws_are_seeded() {
        let spec = SessionSpec {
            turns: LengthDist::Uniform {
                mean: 4,
                range_ratio: 0.5,
            },
            think_time: ThinkTime::default(),
            max_context_tokens: None,
            all_turns: false,
        };
        assert_eq!(spec.stride(), 6);
        let mut seen = std::collections::HashSet::new();
        for s in 0..50 {
            let turns = spec.turns_of(&mut spec.rng(3, s));
            assert!((2..=6).contains(&turns));
            assert_eq!(turns, spec.turns_of(&mut spec.rng(3, s)), "seeded");
            for t in 0..turns {
                assert!(seen.insert(spec.turn_id(s, t)), "session {s} turn {t}");
            }
        }
        let differ = (0..50)
            .any(|s| spec.turns_of(&mut spec.rng(3, s)) != spec.turns_of(&mut spec.rng(4, s)));
        assert!(differ, "another seed draws other sessions");
    }

    #[test]
    fn every_end_has_a_distinct_name() {
        let names: std::collections::HashSet<_> =
            SessionEnd::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names.len(), SessionEnd::ALL.len());
        for e in SessionEnd::ALL {
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(json, format!("\"{}\"", e.name()));
        }
    }
}
