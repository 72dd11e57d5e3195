//! Stage 6 of the flow (schedule → worker → http → sse → extract → **record** → collector →
//! report): what one request leaves behind. A worker fills one `Record` per scheduled request
//! (sent or not) and hands it to the collector; the collector never sees anything else from
//! the hot path. Stamps are integer nanoseconds on the run clock (`clock::RunClock`); `None`
//! means "did not happen". Failures are data: every record ends in exactly one `Outcome`.

pub mod jsonl;

use serde::Serialize;

/// How a scheduled request ended. Exactly one per record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Complete response, 2xx, stream ended normally.
    Ok,
    /// Scheduled but never sent (the run stopped first). Not part of `sent`.
    #[default]
    NotSent,
    /// Sent, then abandoned because the run was stopped (interrupt, end of grace period).
    Cancelled,
    /// Could not open a connection (refused, unreachable, connect timeout).
    Connect,
    /// `--request-timeout` expired before the response ended.
    Timeout,
    /// The server answered with a non-2xx status (kept in `Record::status`).
    HttpStatus,
    /// The connection was reset or closed before a response head arrived.
    ResetBeforeHead,
    /// The connection was reset or closed after the head, before the body ended.
    ResetMidStream,
    /// The response could not be parsed: bad head, bad chunk framing, bad SSE or JSON.
    Malformed,
    /// The server sent an `error` object inside the stream.
    ErrorEvent,
    /// An event or head larger than the client's bound.
    Oversized,
    /// Any other I/O error (kept distinct so it is never mislabelled).
    Io,
}

impl Outcome {
    /// Was the request handed to the kernel? (`sent = ok + failed + cancelled`)
    pub fn was_sent(self) -> bool {
        self != Outcome::NotSent
    }

    pub fn is_failure(self) -> bool {
        !matches!(self, Outcome::Ok | Outcome::NotSent | Outcome::Cancelled)
    }

    /// The key under `counts.failed_by_kind`. HTTP statuses are split by code (`http_503`).
    pub fn kind_key(self, status: u16) -> String {
        match self {
            Outcome::HttpStatus => format!("http_{status}"),
            other => other.name().to_string(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotSent => "not_sent",
            Outcome::Cancelled => "cancelled",
            Outcome::Connect => "connect",
            Outcome::Timeout => "timeout",
            Outcome::HttpStatus => "http_status",
            Outcome::ResetBeforeHead => "reset_before_head",
            Outcome::ResetMidStream => "reset_mid_stream",
            Outcome::Malformed => "malformed",
            Outcome::ErrorEvent => "error_event",
            Outcome::Oversized => "oversized",
            Outcome::Io => "io",
        }
    }
}

/// Where a request's output token count (OSL) came from, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OslSource {
    /// `usage.completion_tokens` reported by the server.
    Usage,
    /// The client tokenizer's count of the generated text.
    Tokenizer,
    /// The number of token-bearing events (a lower bound when servers batch tokens).
    #[default]
    Events,
}

/// Which warm-up rules a request fell under; both can hold at once, and `Record::warmup` is
/// their union.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WarmupBy {
    /// Among the first `--warmup-requests` arrivals (by id).
    pub count: bool,
    /// Due within `--warmup-duration` of the run's start (by intended time).
    pub duration: bool,
}

impl WarmupBy {
    pub fn any(self) -> bool {
        self.count || self.duration
    }

    /// The `requests.jsonl` name: `count`, `duration`, `both`, or `None` for a measured one.
    pub fn name(self) -> Option<&'static str> {
        match (self.count, self.duration) {
            (true, true) => Some("both"),
            (true, false) => Some("count"),
            (false, true) => Some("duration"),
            (false, false) => None,
        }
    }

    pub fn from_name(name: Option<&str>) -> Option<Self> {
        let (count, duration) = match name {
            None => (false, false),
            Some("both") => (true, true),
            Some("count") => (true, false),
            Some("duration") => (false, true),
            Some(_) => return None,
        };
        Some(WarmupBy { count, duration })
    }
}

/// One SSE event of a streamed response (or the body of a non-streamed one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EventStamp {
    /// Run-clock stamp of the read that completed this event. Events completed by the same
    /// read share it.
    pub at_ns: u64,
    /// The simulator's stamp of the write that carried this event, on the run clock; `None`
    /// for servers that do not stamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_ns: Option<u64>,
    /// Generated tokens this event carries (0 for role-only, empty, usage and `[DONE]`).
    pub tokens: u32,
    /// The event carried reasoning text (`reasoning`, `reasoning_content`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reasoning: bool,
    /// The event carried non-reasoning output text (`content`, `text`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub output: bool,
    /// Bytes of `Record::text` this event carried (only when the run has a tokenizer).
    #[serde(skip)]
    pub text_bytes: u32,
    /// Tokens the client tokenizer says this event completed (0 without a tokenizer).
    #[serde(skip_serializing_if = "is_zero")]
    pub text_tokens: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl EventStamp {
    pub fn carries_token(&self) -> bool {
        self.tokens > 0
    }
}

/// Everything measured about one scheduled request.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    /// Arrival index in the global schedule (closed loop: claim order).
    pub id: u64,
    pub worker: u16,
    /// Excluded from every figure (by `--warmup-requests` or `--warmup-duration`).
    pub warmup: bool,
    pub outcome: Outcome,
    /// HTTP status of the response head, 0 when none arrived.
    pub status: u16,
    pub intended_ns: u64,
    pub sent_ns: Option<u64>,
    pub head_ns: Option<u64>,
    pub first_token_ns: Option<u64>,
    pub first_output_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    pub done_ns: Option<u64>,
    /// Prompt tokens as the client counts them (known before the run).
    pub input_tokens: u32,
    /// The resolved OSL and where it came from.
    pub output_tokens: u32,
    pub output_source: OslSource,
    /// What the server's `usage` said, kept beside the client's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_prompt_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
    /// Socket reads and bytes that made up the response.
    pub reads: u32,
    pub bytes: u64,
    /// Events beyond the per-record bound: counted, not stored.
    pub events_dropped: u32,
    /// Every event, in arrival order (token-bearing or not).
    pub events: Vec<EventStamp>,
    /// Why `warmup` is set (both rules may apply); all false for a measured request.
    pub warmup_by: WarmupBy,
    /// The generated text, unescaped, event after event (`EventStamp::text_bytes` each), kept
    /// only when the run has a tokenizer. The collector counts its tokens and drops it; it
    /// is never logged.
    #[serde(skip)]
    pub text: Vec<u8>,
}

/// A finished record's buffers, emptied by the collector and sent back to the workers so
/// steady state allocates nothing per request (the text is non-empty only with a tokenizer).
#[derive(Debug, Default)]
pub struct Spare {
    pub events: Vec<EventStamp>,
    pub text: Vec<u8>,
}

impl Record {
    pub fn token_events(&self) -> impl Iterator<Item = &EventStamp> {
        self.events.iter().filter(|e| e.carries_token())
    }

    pub fn ttft_ns(&self) -> Option<u64> {
        Some(self.first_token_ns?.saturating_sub(self.sent_ns?))
    }

    pub fn ttfo_ns(&self) -> Option<u64> {
        Some(self.first_output_ns?.saturating_sub(self.sent_ns?))
    }

    pub fn ttfb_ns(&self) -> Option<u64> {
        Some(self.head_ns?.saturating_sub(self.sent_ns?))
    }

    pub fn e2e_ns(&self) -> Option<u64> {
        Some(self.done_ns?.saturating_sub(self.sent_ns?))
    }

    pub fn ttft_from_intent_ns(&self) -> Option<u64> {
        Some(self.first_token_ns?.saturating_sub(self.intended_ns))
    }

    pub fn e2e_from_intent_ns(&self) -> Option<u64> {
        Some(self.done_ns?.saturating_sub(self.intended_ns))
    }

    pub fn sched_lag_ns(&self) -> Option<u64> {
        Some(self.sent_ns?.saturating_sub(self.intended_ns))
    }

    /// `(last − first) / (OSL − 1)`; undefined below two output tokens.
    pub fn tpot_ns(&self) -> Option<u64> {
        if self.output_tokens < 2 {
            return None;
        }
        let span = self.last_token_ns?.checked_sub(self.first_token_ns?)?;
        Some(span / (self.output_tokens as u64 - 1))
    }

    /// `E2E / OSL`.
    pub fn ntpot_ns(&self) -> Option<u64> {
        if self.output_tokens == 0 {
            return None;
        }
        Some(self.e2e_ns()? / self.output_tokens as u64)
    }

    /// Gaps between consecutive token-bearing events (vLLM's ITL list).
    pub fn itl_gaps_ns(&self) -> impl Iterator<Item = u64> + '_ {
        let mut prev: Option<u64> = None;
        self.token_events().filter_map(move |e| {
            let gap = prev.map(|p| e.at_ns.saturating_sub(p));
            prev = Some(e.at_ns);
            gap
        })
    }

    /// Largest chunk gap of the request.
    pub fn max_stall_ns(&self) -> Option<u64> {
        self.itl_gaps_ns().max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(at_ns: u64) -> EventStamp {
        EventStamp {
            at_ns,
            tokens: 1,
            output: true,
            ..Default::default()
        }
    }

    #[test]
    fn per_request_metrics_follow_the_definitions() {
        let r = Record {
            outcome: Outcome::Ok,
            intended_ns: 100,
            sent_ns: Some(1_000),
            head_ns: Some(2_000),
            first_token_ns: Some(51_000),
            first_output_ns: Some(51_000),
            last_token_ns: Some(81_000),
            done_ns: Some(82_000),
            output_tokens: 4,
            events: vec![
                EventStamp {
                    at_ns: 3_000,
                    ..Default::default()
                },
                tok(51_000),
                tok(61_000),
                tok(71_000),
                tok(81_000),
            ],
            ..Default::default()
        };
        assert_eq!(r.ttft_ns(), Some(50_000));
        assert_eq!(r.ttfb_ns(), Some(1_000));
        assert_eq!(r.e2e_ns(), Some(81_000));
        assert_eq!(r.tpot_ns(), Some(10_000));
        assert_eq!(r.ntpot_ns(), Some(20_250));
        assert_eq!(r.sched_lag_ns(), Some(900));
        assert_eq!(r.ttft_from_intent_ns(), Some(50_900));
        assert_eq!(r.itl_gaps_ns().collect::<Vec<_>>(), vec![10_000; 3]);
        assert_eq!(r.max_stall_ns(), Some(10_000));
    }

    #[test]
    fn tpot_is_undefined_below_two_tokens_and_failures_are_keyed() {
        let r = Record {
            output_tokens: 1,
            first_token_ns: Some(1),
            last_token_ns: Some(1),
            ..Default::default()
        };
        assert_eq!(r.tpot_ns(), None);
        assert_eq!(Outcome::HttpStatus.kind_key(503), "http_503");
        assert_eq!(Outcome::ResetMidStream.kind_key(0), "reset_mid_stream");
        assert!(!Outcome::NotSent.was_sent());
        assert!(Outcome::Cancelled.was_sent() && !Outcome::Cancelled.is_failure());
    }
}
