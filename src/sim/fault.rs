//! Fault injection for the simulator (server side; the client flow schedule → worker → http
//! → sse → extract → record → collector → report is what has to survive these). This file
//! holds only the names, the `KIND:PROB` syntax and the seeded draw; how each fault is
//! served lives in `conn/faulty.rs`. It may not touch sockets or clocks, and a draw may not
//! allocate (it runs once per request on the simulator's thread).
//!
//! Each request (each accepted connection, for `refuse`) draws one uniform number from a
//! per-thread xorshift generator seeded by `--fault-seed` and the thread index, and takes the
//! first fault whose cumulative probability covers it: at most one fault per request, and the
//! same seed gives the same faults on a single-threaded simulator.

use serde::Serialize;
use std::cell::Cell;

/// What a faulted request or connection does instead of a normal answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Accepted connection reset at once (`SO_LINGER 0`), before a byte is read: the closest
    /// a listening server can come to refusing (a kernel-level refusal needs no listener).
    Refuse,
    /// Request read, then the connection reset with no response byte.
    ResetBeforeHead,
    /// Head and two events sent, then the connection reset.
    ResetMidStream,
    Http500,
    /// With `Retry-After`.
    Http503,
    /// With `Retry-After`.
    Http429,
    /// HTTP 200, two events, then `data: {"error": ...}` (half the time followed by `[DONE]`).
    ErrorEvent,
    /// No byte for the stall time before the head; then the normal answer.
    StallHead,
    /// Head and two events, then no byte for the stall time, then the connection closed.
    StallMid,
    /// One event whose JSON does not parse.
    BadJson,
    /// A chunk that declares more bytes than it carries, then the connection closed.
    TruncatedChunk,
    /// One event with invalid UTF-8 inside a JSON string.
    BadUtf8,
    /// One event larger than the client's event bound (2 MiB against the default 1 MiB).
    OversizedEvent,
    /// The head trickled out in pieces over the slow-head time; then the normal answer.
    SlowHead,
    /// The normal answer, then the connection closed although the head said keep-alive
    /// (what llama.cpp does): a client must reconnect without counting a failure.
    CloseAfterResponse,
}

const ALL: [(FaultKind, &str); 15] = [
    (FaultKind::Refuse, "refuse"),
    (FaultKind::ResetBeforeHead, "reset_before_head"),
    (FaultKind::ResetMidStream, "reset_mid_stream"),
    (FaultKind::Http500, "http_500"),
    (FaultKind::Http503, "http_503"),
    (FaultKind::Http429, "http_429"),
    (FaultKind::ErrorEvent, "error_event"),
    (FaultKind::StallHead, "stall_head"),
    (FaultKind::StallMid, "stall_mid"),
    (FaultKind::BadJson, "bad_json"),
    (FaultKind::TruncatedChunk, "truncated_chunk"),
    (FaultKind::BadUtf8, "bad_utf8"),
    (FaultKind::OversizedEvent, "oversized_event"),
    (FaultKind::SlowHead, "slow_head"),
    (FaultKind::CloseAfterResponse, "close_after_response"),
];

impl FaultKind {
    pub fn name(self) -> &'static str {
        ALL.iter().find(|(k, _)| *k == self).map_or("?", |(_, n)| n)
    }

    pub fn all() -> impl Iterator<Item = FaultKind> {
        ALL.iter().map(|(k, _)| *k)
    }

    fn from_name(s: &str) -> Option<FaultKind> {
        ALL.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
    }

    /// Drawn per accepted connection rather than per request.
    pub fn per_connection(self) -> bool {
        self == FaultKind::Refuse
    }
}

/// One `--fault KIND:PROB`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// Probability per request (per connection for `refuse`), in [0, 1].
    pub prob: f64,
}

impl std::str::FromStr for FaultSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let names = || ALL.map(|(_, n)| n).join(", ");
        let (k, p) = s.split_once(':').ok_or_else(|| {
            format!("--fault '{s}': expected KIND:PROB, like reset_mid_stream:0.1")
        })?;
        let kind = FaultKind::from_name(k.trim())
            .ok_or_else(|| format!("--fault '{s}': unknown kind '{k}' (kinds: {})", names()))?;
        let prob: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("--fault '{s}': '{p}' is not a probability (like 0.05)"))?;
        if !(0.0..=1.0).contains(&prob) {
            return Err(format!("--fault '{s}': the probability must be in [0, 1]"));
        }
        Ok(FaultSpec { kind, prob })
    }
}

/// Checks a whole `--fault` list: each kind once, per-request probabilities summing to ≤ 1
/// (one uniform draw picks at most one fault).
pub fn check_faults(faults: &[FaultSpec]) -> Result<(), String> {
    for (i, f) in faults.iter().enumerate() {
        if faults[..i].iter().any(|g| g.kind == f.kind) {
            return Err(format!("--fault {}: given twice", f.kind.name()));
        }
    }
    let sum: f64 = faults
        .iter()
        .filter(|f| !f.kind.per_connection())
        .map(|f| f.prob)
        .sum();
    if sum > 1.0 + 1e-9 {
        return Err(format!(
            "--fault: per-request probabilities sum to {sum} (must be ≤ 1; refuse is per connection)"
        ));
    }
    Ok(())
}

/// How faults are drawn and timed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultConfig {
    pub faults: Vec<FaultSpec>,
    pub seed: u64,
    /// How long `stall_head` and `stall_mid` send nothing.
    pub stall_ms: u64,
    /// How long `slow_head` takes to trickle the head out.
    pub slow_head_ms: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            faults: vec![],
            seed: 0,
            stall_ms: 5_000,
            slow_head_ms: 200,
        }
    }
}

/// One thread's generator (xorshift64*): no allocation, no lock.
pub(crate) struct FaultDraw {
    state: Cell<u64>,
}

impl FaultDraw {
    pub(crate) fn new(seed: u64, thread: u64) -> Self {
        // splitmix64 of (seed, thread) so that seeds 0 and 1 do not start alike.
        let mut z = seed ^ thread.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        FaultDraw {
            state: Cell::new(z | 1),
        }
    }

    fn uniform(&self) -> f64 {
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The fault for the next request (`per_connection == false`) or connection.
    pub(crate) fn pick(&self, cfg: &FaultConfig, per_connection: bool) -> Option<FaultKind> {
        if !cfg
            .faults
            .iter()
            .any(|f| f.kind.per_connection() == per_connection)
        {
            return None;
        }
        let u = self.uniform();
        let mut acc = 0.0;
        for f in &cfg.faults {
            if f.kind.per_connection() != per_connection {
                continue;
            }
            acc += f.prob;
            if u < acc {
                return Some(f.kind);
            }
        }
        None
    }

    /// A fair coin (which way an error event ends).
    pub(crate) fn coin(&self) -> bool {
        self.uniform() < 0.5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_by_its_name() {
        for k in FaultKind::all() {
            let spec: FaultSpec = format!("{}:0.25", k.name()).parse().unwrap();
            assert_eq!(
                spec,
                FaultSpec {
                    kind: k,
                    prob: 0.25
                }
            );
        }
        assert!("http_500"
            .parse::<FaultSpec>()
            .unwrap_err()
            .contains("KIND:PROB"));
        assert!("nope:0.1"
            .parse::<FaultSpec>()
            .unwrap_err()
            .contains("unknown kind"));
        assert!("http_500:1.5"
            .parse::<FaultSpec>()
            .unwrap_err()
            .contains("[0, 1]"));
        assert!("http_500:NaN".parse::<FaultSpec>().is_err());
    }

    #[test]
    fn lists_are_checked_and_draws_follow_the_probabilities() {
        let f = |s: &str| s.parse::<FaultSpec>().unwrap();
        assert!(check_faults(&[f("http_500:0.6"), f("http_503:0.6")]).is_err());
        assert!(check_faults(&[f("http_500:0.1"), f("http_500:0.1")]).is_err());
        assert!(check_faults(&[f("http_500:0.6"), f("refuse:0.6")]).is_ok());
        let cfg = FaultConfig {
            faults: vec![f("http_500:0.2"), f("bad_json:0.3"), f("refuse:0.5")],
            ..FaultConfig::default()
        };
        let draw = FaultDraw::new(7, 0);
        let (mut h, mut b, mut none) = (0, 0, 0);
        for _ in 0..100_000 {
            match draw.pick(&cfg, false) {
                Some(FaultKind::Http500) => h += 1,
                Some(FaultKind::BadJson) => b += 1,
                None => none += 1,
                Some(k) => panic!("{k:?} is per connection"),
            }
        }
        assert!((19_000..21_000).contains(&h), "{h}");
        assert!((29_000..31_000).contains(&b), "{b}");
        assert!((49_000..51_000).contains(&none), "{none}");
        let again = FaultDraw::new(7, 0);
        let first: Vec<_> = (0..50).map(|_| again.pick(&cfg, false)).collect();
        let same = FaultDraw::new(7, 0);
        assert_eq!(
            first,
            (0..50).map(|_| same.pick(&cfg, false)).collect::<Vec<_>>()
        );
    }
}
