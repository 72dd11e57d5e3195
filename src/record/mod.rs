//! Stage 6 of the flow (schedule → worker → http → sse → extract → **record** → collector →
//! report): what one request leaves behind. A worker fills one `Record` per scheduled request
//! (sent or not) and hands it to the collector; the collector never sees anything else from
//! the hot path. Stamps are integer nanoseconds on the run clock (`clock::RunClock`); `None`
//! means "did not happen". Failures are data: every record ends in exactly one `Outcome`.

pub mod arrow;
pub mod failure;
pub mod handoff;
pub mod jsonl;
pub mod request_id;

pub use crate::plan::RunId;
pub use failure::Failure;
pub use request_id::RequestId;

use crate::summary::Tally;

use serde::{Deserialize, Serialize};

/// One line per outcome: its variant, its name (in `requests.jsonl` and `failed_by_kind`) and
/// the `counts` bucket it lands in (`Tally`'s field: `ok`, `failed`, `cancelled`, `not_sent`).
/// `Outcome`, `Outcome::ALL`, `Outcome::name`, what is sent or a failure, and `Tally::add`
/// all come from it, as `summary::metric`'s `metrics!` does for the distributions.
macro_rules! outcomes {
    ($( $(#[$doc:meta])* $variant:ident $name:ident => $bucket:ident; )*) => {
        /// How a scheduled request ended. Exactly one per record.
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum Outcome {
            $( $(#[$doc])* $variant, )*
        }

        impl Outcome {
            /// Every outcome, in declaration order.
            pub const ALL: [Outcome; [$(Outcome::$variant),*].len()] = [$(Outcome::$variant),*];

            /// The `requests.jsonl` name (`ok`, `reset_mid_stream`, …); `http_status` for every
            /// non-2xx status.
            pub const fn name(self) -> &'static str {
                match self { $( Outcome::$variant => stringify!($name), )* }
            }

            /// The `counts` bucket it lands in (`Tally`'s field name).
            const fn bucket(self) -> &'static str {
                match self { $( Outcome::$variant => stringify!($bucket), )* }
            }
        }

        impl Tally {
            /// One request that ended in `outcome`: its bucket, and `sent` unless it was never
            /// sent (`sent = ok + failed + cancelled`).
            pub fn add(&mut self, outcome: Outcome) {
                match outcome { $( Outcome::$variant => self.$bucket += 1, )* }
                self.sent += u64::from(outcome.was_sent());
            }
        }
    };
}

outcomes! {
    /// Complete response, 2xx, stream ended normally.
    Ok ok => ok;
    /// Scheduled but never sent (the run stopped first). Not part of `sent`.
    #[default]
    NotSent not_sent => not_sent;
    /// Sent, then abandoned because the run was stopped (interrupt, end of grace period).
    Cancelled cancelled => cancelled;
    /// Could not open a connection (refused, unreachable, connect timeout).
    Connect connect => failed;
    /// `--request-timeout` expired before the response ended.
    Timeout timeout => failed;
    /// The server answered with a non-2xx status (kept in `Record::status`).
    HttpStatus http_status => failed;
    /// The connection was reset or closed before a response head arrived.
    ResetBeforeHead reset_before_head => failed;
    /// The connection was reset or closed after the head, before the body ended.
    ResetMidStream reset_mid_stream => failed;
    /// The response could not be parsed: bad head, bad chunk framing, bad SSE or JSON.
    Malformed malformed => failed;
    /// The server sent an `error` object inside the stream.
    ErrorEvent error_event => failed;
    /// An event or head larger than the client's bound.
    Oversized oversized => failed;
    /// Any other I/O error (kept distinct so it is never mislabelled).
    Io io => failed;
    /// Aborted by the client on purpose (`--cancel-rate`): its connection closed mid-answer,
    /// as a browser tab closed does. Not a failure; kept out of the latency figures.
    CancelledByClient cancelled_by_client => cancelled;
    /// A 2xx answer in another API's shape than the endpoint asked (a chat chunk answering a
    /// Responses request): the server does not serve that endpoint as asked.
    WrongApi wrong_api => failed;
}

impl Outcome {
    /// Was the request handed to the kernel? (`sent = ok + failed + cancelled`)
    pub fn was_sent(self) -> bool {
        self != Outcome::NotSent
    }

    /// Counted in `failed`: every outcome but ok, not sent and cancelled (by the run's stop
    /// or by the client on purpose).
    pub fn is_failure(self) -> bool {
        self.bucket() == "failed"
    }

    /// The key under `counts.failed_by_kind`. HTTP statuses are split by code (`http_503`).
    pub fn kind_key(self, status: u16) -> String {
        match self {
            Outcome::HttpStatus => format!("http_{status}"),
            other => other.name().to_string(),
        }
    }
}

/// Where a request's output token count (OSL) came from, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
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

impl OslSource {
    /// The `requests.jsonl` name (`usage`, `tokenizer`, `events`).
    pub fn name(self) -> &'static str {
        match self {
            OslSource::Usage => "usage",
            OslSource::Tokenizer => "tokenizer",
            OslSource::Events => "events",
        }
    }
}

/// Where a request's input token count (ISL) came from: the client's own count, known before
/// the run. The server's `usage.prompt_tokens` is kept beside it (`Record::usage_prompt_tokens`),
/// never in place of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputSource {
    /// Counted by the client tokenizer (`--tokenizer`): exact, special tokens and chat template
    /// excluded.
    Tokenizer,
    /// The client's approximation without a tokenizer: one token per word of a synthetic
    /// prompt, one per 4 bytes of dataset text. Also what a log written before the field
    /// existed reads as (the weaker claim).
    #[default]
    Approximate,
}

impl InputSource {
    /// The `requests.jsonl` name (`tokenizer`, `approximate`).
    pub fn name(self) -> &'static str {
        match self {
            InputSource::Tokenizer => "tokenizer",
            InputSource::Approximate => "approximate",
        }
    }
}

/// Which warm-up rules a request fell under; both can hold at once, and `Record::warmup` is
/// their union.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmupBy {
    /// Among the first `--warmup-requests` arrivals (by id).
    pub count: bool,
    /// Due within `--warmup-duration` of the run's start (by intended time).
    pub duration: bool,
}

impl WarmupBy {
    /// Either rule holds: the request is warm-up.
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

    /// The inverse of `name`: no name is a measured request; an unknown name gives `None`.
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventStamp {
    /// Run-clock stamp of the read that completed this event. Events completed by the same
    /// read share it.
    pub at_ns: u64,
    /// The simulator's stamp of the write that carried this event, on the run clock; `None`
    /// for servers that do not stamp.
    pub server_ns: Option<u64>,
    /// Generated tokens this event carries (0 for role-only, empty, usage and `[DONE]`).
    pub tokens: u32,
    /// The event carried reasoning text (`reasoning`, `reasoning_content`).
    pub reasoning: bool,
    /// The event carried non-reasoning output text (`content`, `text`).
    pub output: bool,
    /// Bytes of `Record::text` this event carried (only when the run has a tokenizer).
    pub text_bytes: u32,
    /// Tokens the client tokenizer says this event completed (0 without a tokenizer).
    pub text_tokens: u32,
    /// The client's own stamp of the same read, when `at_ns` is the kernel's receive stamp
    /// (`--rx-timestamps`): the difference is the client's wake-up and stamping time. `None`
    /// when `at_ns` is itself the client's stamp.
    pub user_ns: Option<u64>,
    /// The worker's only: a chunk whose text was an empty string (`EventInfo::empty_text`),
    /// credited as a token by `worker::sink::credit_empty_text` when the stream carried no
    /// text at all. Not logged (a credited event reads as a token without text flags).
    pub empty_text: bool,
}

impl EventStamp {
    /// `flags` bit: the event carried output text.
    pub const FLAG_OUTPUT: u8 = 1;
    /// `flags` bit: the event carried reasoning text.
    pub const FLAG_REASONING: u8 = 2;

    /// The event carries at least one generated token.
    pub fn carries_token(&self) -> bool {
        self.tokens > 0
    }

    /// The client's own stamp of the read that completed it: `user_ns` when the kernel's
    /// stamp is `at_ns`, else `at_ns` itself.
    pub fn user_at_ns(&self) -> u64 {
        self.user_ns.unwrap_or(self.at_ns)
    }

    /// The `flags` bit set `requests.jsonl` writes.
    pub fn flags(&self) -> u8 {
        (if self.output { Self::FLAG_OUTPUT } else { 0 })
            | if self.reasoning {
                Self::FLAG_REASONING
            } else {
                0
            }
    }
}

/// `requests.jsonl` writes an event as `[at_ns, tokens, server_ns_or_null, flags]`, with a
/// fifth element `text_tokens` when the client tokenizer credited it, and a sixth, `user_ns`,
/// when `at_ns` is the kernel's stamp (the fifth is then written, 0 or not; see `jsonl`).
impl Serialize for EventStamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let len = match (self.user_ns, self.text_tokens) {
            (Some(_), _) => 6,
            (None, 0) => 4,
            (None, _) => 5,
        };
        let mut t = s.serialize_tuple(len)?;
        t.serialize_element(&self.at_ns)?;
        t.serialize_element(&self.tokens)?;
        t.serialize_element(&self.server_ns)?;
        t.serialize_element(&self.flags())?;
        if len > 4 {
            t.serialize_element(&self.text_tokens)?;
        }
        if let Some(user_ns) = self.user_ns {
            t.serialize_element(&user_ns)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for EventStamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = EventStamp;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("[at_ns, tokens, server_ns, flags], text_tokens fifth, user_ns sixth")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<EventStamp, A::Error> {
                let missing = |i| serde::de::Error::invalid_length(i, &self);
                let at_ns = a.next_element()?.ok_or_else(|| missing(0))?;
                let tokens = a.next_element()?.ok_or_else(|| missing(1))?;
                let server_ns = a.next_element()?.ok_or_else(|| missing(2))?;
                let flags: u8 = a.next_element()?.ok_or_else(|| missing(3))?;
                let text_tokens = a.next_element()?.unwrap_or(0);
                let user_ns = a.next_element()?;
                if a.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(7, &self));
                }
                Ok(EventStamp {
                    at_ns,
                    server_ns,
                    tokens,
                    reasoning: flags & EventStamp::FLAG_REASONING != 0,
                    output: flags & EventStamp::FLAG_OUTPUT != 0,
                    text_bytes: 0,
                    text_tokens,
                    user_ns,
                    empty_text: false,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

/// `requests.jsonl` writes `warmup_by` as its name (`count`, `duration`, `both`) or `null`.
impl Serialize for WarmupBy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.name().serialize(s)
    }
}

impl<'de> Deserialize<'de> for WarmupBy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = Option::<String>::deserialize(d)?;
        WarmupBy::from_name(name.as_deref()).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown warmup_by `{}`", name.unwrap_or_default()))
        })
    }
}

/// Everything measured about one scheduled request. Its serde form is exactly one line of
/// `requests.jsonl` (see `jsonl` for the format and the allocation-free writer).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Arrival index in the global schedule (closed loop: claim order).
    pub id: u64,
    /// What the request sent as `x-request-id` (`<run id>-<id>`); `None`: no id of ours went
    /// out (`--no-request-id`, a user `--header` of that name, or never sent). Logs written
    /// before it existed lack it.
    #[serde(default)]
    pub request_id: Option<RequestId>,
    /// The `x-request-id` the server's response head carried (vLLM with
    /// `--enable-request-id-headers`, most gateways), as sent back — ours, or the server's own
    /// when it made one; empty when it sent none (written `null`). Cut to
    /// `request_id::MAX_ECHO_BYTES`; bytes other than visible ASCII kept as `?`. Its buffer is
    /// recycled with the events'.
    #[serde(default, with = "echo_serde")]
    pub server_request_id: Vec<u8>,
    /// Index of the worker that ran it.
    pub worker: u16,
    /// Which server it went to: an index of `--url`'s, in the order given (the summary's
    /// `endpoints` rows); 0 with one server. Logs written before there could be several
    /// lack it.
    #[serde(default)]
    pub endpoint: u16,
    /// Excluded from every figure (by `--warmup-requests` or `--warmup-duration`).
    pub warmup: bool,
    /// How it ended.
    pub outcome: Outcome,
    /// HTTP status of the response head, 0 when none arrived.
    pub status: u16,
    /// When the schedule meant it to be sent (closed loop: when its user became free).
    pub intended_ns: u64,
    /// Just before the request was written (the retry's, when a kept-alive connection was found
    /// closed); `None`: never written.
    pub sent_ns: Option<u64>,
    /// The read that completed the response head.
    pub head_ns: Option<u64>,
    /// The first token-bearing event (streamed responses only).
    pub first_token_ns: Option<u64>,
    /// The first event with non-reasoning output text (streamed responses only).
    pub first_output_ns: Option<u64>,
    /// The first event whose output text holds more than white space (streamed responses
    /// only). Logs written before it existed lack it.
    #[serde(default)]
    pub first_visible_ns: Option<u64>,
    /// The last token-bearing event (streamed responses only).
    pub last_token_ns: Option<u64>,
    /// The response ended, or the request failed or was abandoned.
    pub done_ns: Option<u64>,
    /// With `--rx-timestamps`, the stamps above that come from a read (`head_ns` to
    /// `done_ns`, and each event's `at_ns`) are the kernel's receive stamps, and these are
    /// the client's own stamps of the reads that completed the first token and the response
    /// (the `*_user` figures); `None` on a connection without kernel stamps. Logs written
    /// before they existed lack them.
    #[serde(default)]
    pub first_token_user_ns: Option<u64>,
    /// See `first_token_user_ns`.
    #[serde(default)]
    pub done_user_ns: Option<u64>,
    /// Prompt tokens as the client counts them (known before the run).
    pub input_tokens: u32,
    /// Where `input_tokens` came from (the catalog's, copied). Logs written before it existed
    /// lack it: then it reads as `approximate`.
    #[serde(default)]
    pub input_source: InputSource,
    /// The resolved OSL and where it came from.
    pub output_tokens: u32,
    /// Where `output_tokens` came from.
    pub output_source: OslSource,
    /// The server's `usage.prompt_tokens`, kept beside the client's `input_tokens` (they
    /// differ by the chat template and special tokens, or by a different tokenizer).
    pub usage_prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`, when the server sent it.
    pub usage_completion_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`, when the server sent it.
    pub cached_tokens: Option<u32>,
    /// Socket reads and bytes that made up the response.
    pub reads: u32,
    /// Bytes those reads returned.
    pub bytes: u64,
    /// Events beyond the per-record bound: counted, not stored.
    pub events_dropped: u32,
    /// Tool calls the answer made (`--tools`); 0 when it made none. Logs written before it
    /// existed lack it.
    #[serde(default)]
    pub tool_calls: u32,
    /// A pooling answer's items (embeddings, rerank results, scores); 0 for generation.
    /// Logs written before it existed lack it.
    #[serde(default)]
    pub items: u32,
    /// Why `warmup` is set (both rules may apply); all false for a measured request. Logs
    /// written before it existed lack it: then `warmup` alone is known.
    #[serde(default)]
    pub warmup_by: WarmupBy,
    /// The conversation turn this request was (`--turns`); `None` for an independent request.
    /// Logs written before it existed lack it.
    #[serde(default)]
    pub turn: Option<Turn>,
    /// Why a failed request failed, as the server said it (`failure`): the content type
    /// and first body bytes of a non-2xx answer, of a 2xx body that did not parse, or of an
    /// error event's payload; empty (written `null`) for every other record. Its buffers are
    /// recycled with the events'. Logs written before it existed lack it.
    #[serde(default)]
    pub failure: Failure,
    // ---- Upload and media (issue 34): what the request carried and how long it took to
    // leave. Logs written before these existed lack them (0, `null`).
    /// Bytes of the request's body as written (its `Content-Length`).
    #[serde(default)]
    pub body_bytes: u64,
    /// The completion of the request's last write: its last byte handed to the kernel (a
    /// large body leaves in many writes). `upload_ns` = this − `sent_ns`; `None`: never
    /// written whole.
    #[serde(default)]
    pub uploaded_ns: Option<u64>,
    /// Images the request carried (content parts).
    #[serde(default)]
    pub images: u32,
    /// Audio the request carried, milliseconds.
    #[serde(default)]
    pub audio_ms: u32,
    // ---- end of upload and media.
    /// Every event, in arrival order (token-bearing or not).
    pub events: Vec<EventStamp>,
    /// The generated text, unescaped, event after event (`EventStamp::text_bytes` each), kept
    /// only when the run has a tokenizer. The collector counts its tokens and drops it; it
    /// is never logged.
    #[serde(skip)]
    pub text: Vec<u8>,
}

/// Which turn of which conversation a request was (`--turns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The session's index in the schedule (closed loop: its claim order).
    pub session: u64,
    /// 0 for the session's first turn.
    pub index: u32,
    /// When the session's first turn was sent: its duration ends at its last turn's `done_ns`.
    pub session_start_ns: u64,
    /// The pause drawn before this turn (`--think-time`; 0 for the first): its intended time
    /// is the previous turn's `done_ns` plus this.
    pub think_ns: u64,
    /// On the session's last turn: why it ended. `None` on every other turn.
    pub end: Option<crate::plan::SessionEnd>,
}

/// A finished record's buffers, emptied by the collector and sent back to the workers so
/// steady state allocates nothing per request (the text is non-empty only with a tokenizer).
#[derive(Debug, Default)]
pub struct Spare {
    /// The event vector, emptied, its capacity kept.
    pub events: Vec<EventStamp>,
    /// The text buffer, emptied, its capacity kept.
    pub text: Vec<u8>,
    /// The echoed request id's buffer, emptied, its capacity kept.
    pub server_request_id: Vec<u8>,
    /// The failure's buffers, emptied, their capacity kept (`Failure::with_capacity`).
    pub failure: Failure,
}

/// `Record::server_request_id` as a JSON string, or `null` when empty.
mod echo_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match v.is_empty() {
            true => s.serialize_none(),
            // `keep_echo` kept visible ASCII only.
            false => s.serialize_str(&String::from_utf8_lossy(v)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(Option::<String>::deserialize(d)?
            .map(String::into_bytes)
            .unwrap_or_default())
    }
}

impl Spare {
    /// Fresh buffers, room for `events` events.
    pub fn with_events(events: usize) -> Spare {
        Spare {
            events: Vec::with_capacity(events),
            failure: Failure::with_capacity(),
            ..Spare::default()
        }
    }
}

impl Record {
    /// The record's buffers, taken out and emptied for the next record (capacity kept).
    pub fn take_spare(&mut self) -> Spare {
        let mut spare = Spare {
            events: std::mem::take(&mut self.events),
            text: std::mem::take(&mut self.text),
            server_request_id: std::mem::take(&mut self.server_request_id),
            failure: std::mem::take(&mut self.failure),
        };
        spare.failure.clear();
        spare.events.clear();
        spare.text.clear();
        spare.server_request_id.clear();
        spare
    }

    /// The events that carry at least one generated token.
    pub fn token_events(&self) -> impl Iterator<Item = &EventStamp> {
        self.events.iter().filter(|e| e.carries_token())
    }

    /// TTFT: first token-bearing event − send; `None` when either is missing.
    pub fn ttft_ns(&self) -> Option<u64> {
        Some(self.first_token_ns?.saturating_sub(self.sent_ns?))
    }

    /// TTST: the token-bearing event at which the request's tokens reach two − send (the
    /// first event's own stamp when it carried two or more); `None` with fewer than two
    /// tokens or no send.
    pub fn ttst_ns(&self) -> Option<u64> {
        let sent = self.sent_ns?;
        let mut tokens = 0u64;
        self.token_events()
            .find(|e| {
                tokens += u64::from(e.tokens);
                tokens >= 2
            })
            .map(|e| e.at_ns.saturating_sub(sent))
    }

    /// TTFO: first non-reasoning output event − send; `None` when either is missing.
    pub fn ttfo_ns(&self) -> Option<u64> {
        Some(self.first_output_ns?.saturating_sub(self.sent_ns?))
    }

    /// TTFV: first visible output (not white space only) − send; `None` when either is
    /// missing.
    pub fn ttfv_ns(&self) -> Option<u64> {
        Some(self.first_visible_ns?.saturating_sub(self.sent_ns?))
    }

    /// Upload: the request's last write completed − send (its first byte); `None` when
    /// either is missing.
    pub fn upload_ns(&self) -> Option<u64> {
        Some(self.uploaded_ns?.saturating_sub(self.sent_ns?))
    }

    /// TTFT from the request's last byte: first token-bearing event − the last write's
    /// completion (`ttft` is from the first byte); `None` when either is missing.
    pub fn ttft_from_upload_ns(&self) -> Option<u64> {
        Some(self.first_token_ns?.saturating_sub(self.uploaded_ns?))
    }

    /// Its prompt's tokens: the server's `usage.prompt_tokens` where given, else the client's
    /// count.
    pub fn prompt_tokens(&self) -> u32 {
        self.usage_prompt_tokens.unwrap_or(self.input_tokens)
    }

    /// TTFB: response head − send; `None` when either is missing.
    pub fn ttfb_ns(&self) -> Option<u64> {
        Some(self.head_ns?.saturating_sub(self.sent_ns?))
    }

    /// E2E: done − send; `None` when either is missing.
    pub fn e2e_ns(&self) -> Option<u64> {
        Some(self.done_ns?.saturating_sub(self.sent_ns?))
    }

    /// TTFT by the client's own stamp of the first token's read (`--rx-timestamps`); `None`
    /// without kernel stamps.
    pub fn ttft_user_ns(&self) -> Option<u64> {
        Some(self.first_token_user_ns?.saturating_sub(self.sent_ns?))
    }

    /// E2E by the client's own stamp of the last read (`--rx-timestamps`); `None` without
    /// kernel stamps.
    pub fn e2e_user_ns(&self) -> Option<u64> {
        Some(self.done_user_ns?.saturating_sub(self.sent_ns?))
    }

    /// First token-bearing event − intended send time (queueing included); `None` without a token.
    pub fn ttft_from_intent_ns(&self) -> Option<u64> {
        Some(self.first_token_ns?.saturating_sub(self.intended_ns))
    }

    /// Done − intended send time (queueing included); `None` when not done.
    pub fn e2e_from_intent_ns(&self) -> Option<u64> {
        Some(self.done_ns?.saturating_sub(self.intended_ns))
    }

    /// Scheduling lag: send − intended send time; `None` when never sent.
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
        self.token_gaps(true, |e| e.at_ns)
    }

    /// The chunk gaps by the client's own stamps of the reads (`--rx-timestamps`); none
    /// without kernel stamps (a record that ended without `done_user_ns`).
    pub fn itl_user_gaps_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.token_gaps(self.done_user_ns.is_some(), EventStamp::user_at_ns)
    }

    /// Gaps between consecutive token-bearing events by `stamp` (none unless `any`).
    fn token_gaps(
        &self,
        any: bool,
        stamp: fn(&EventStamp) -> u64,
    ) -> impl Iterator<Item = u64> + '_ {
        let mut prev: Option<u64> = None;
        self.token_events()
            .filter(move |_| any)
            .filter_map(move |e| {
                let at = stamp(e);
                let gap = prev.map(|p| at.saturating_sub(p));
                prev = Some(at);
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

    #[test]
    fn ttst_is_the_event_that_brings_the_second_token() {
        let mut r = Record {
            sent_ns: Some(100),
            ..Default::default()
        };
        r.events = vec![tok(1_000)];
        assert_eq!(r.ttst_ns(), None, "one token: no second");
        r.events = vec![
            EventStamp {
                tokens: 0,
                ..tok(500)
            },
            tok(1_000),
            tok(1_700),
            tok(2_000),
        ];
        assert_eq!(r.ttst_ns(), Some(1_600), "role-only event skipped");
        r.events = vec![
            EventStamp {
                tokens: 3,
                ..tok(1_000)
            },
            tok(2_000),
        ];
        assert_eq!(
            r.ttst_ns(),
            Some(900),
            "a first event of three tokens holds the second"
        );
        r.sent_ns = None;
        assert_eq!(r.ttst_ns(), None);
    }

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
        assert_eq!(r.upload_ns(), None, "never written whole: no upload time");
        let written = Record {
            uploaded_ns: Some(1_700),
            ..r.clone()
        };
        assert_eq!(written.upload_ns(), Some(700));
        assert_eq!(written.ttft_from_upload_ns(), Some(49_300));
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
