//! Stage 5 of the flow (worker → http → sse → **extract** → record): reads the few fields a
//! record needs out of one SSE `data:` payload or one non-streamed JSON body. It sees bytes,
//! never a socket, and returns numbers, never strings. It may not do I/O and may not
//! allocate per event once its reused buffers have grown to the largest payload seen.
//!
//! simd-json's tape API over reused `Buffers` is the measured fast path (stack.md: ≈280 ns
//! per ~225-byte chunk; the borrowed DOM is ≈600 ns). simd-json unescapes strings in place,
//! so each payload is copied once into a padded scratch buffer first.
//!
//! Only `choices[0].delta`, `choices[0].text` and `choices[0].message` are read for text:
//! `"content"` also appears inside `logprobs`, and counting that would invent tokens.

use simd_json::prelude::*;
use simd_json::tape::{Object, Tape, Value};
use simd_json::{Buffers, INPUT_PADDING};

use crate::plan::Endpoint;

/// Token accounting a server reported in a `usage` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`
    pub completion_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`
    pub cached_tokens: Option<u32>,
}

/// What one event (or one non-streamed body) said, reduced to what a record needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventInfo {
    /// Bytes of non-empty `delta.content`, `choices[0].text` or (non-stream) `message.content`.
    pub content_bytes: u32,
    /// Bytes of `reasoning` / `reasoning_content` in the delta (or message).
    pub reasoning_bytes: u32,
    /// The content (or `text`) holds a character other than white space: output a reader
    /// sees (a first chunk of `"\n\n"` is output, not yet visible).
    pub visible: bool,
    /// `finish_reason` was present and not null.
    pub finish: bool,
    /// A non-null `usage` object was present.
    pub usage: Option<Usage>,
    /// A top-level `error` (object or string) was present: a mid-stream error event.
    pub error: bool,
    /// The payload was `[DONE]`.
    pub done_marker: bool,
    /// Top-level integer `ringbench_ns`: the simulator's write stamp. Other servers lack it.
    pub server_mono_ns: Option<u64>,
    /// Bytes of tool-call fragments (a call's name and its arguments' text): output, as
    /// content is (chat `delta.tool_calls`, Responses `function_call_arguments.delta`,
    /// Messages `input_json_delta`; a non-streamed message's calls).
    pub tool_call_bytes: u32,
    /// Tool calls begun in this event (a fragment with a new call's id or name, a
    /// `function_call` item added, a `tool_use` block started); a non-streamed body: every
    /// call in it.
    pub tool_calls: u32,
    /// A pooling answer's items: embeddings, rerank results or scores in the body.
    pub items: u32,
    /// Valid JSON in another API's shape than the one asked (a chat chunk answering a
    /// Responses request): the server does not serve the endpoint as asked.
    pub wrong_api: bool,
}

impl EventInfo {
    /// The event carries generated output: text, reasoning or a tool call's fragment.
    pub fn carries_token(&self) -> bool {
        self.content_bytes > 0 || self.reasoning_bytes > 0 || self.tool_call_bytes > 0
    }

    /// The event carries non-reasoning output: content, text or a tool call (TTFO's rule).
    pub fn carries_output(&self) -> bool {
        self.content_bytes > 0 || self.tool_call_bytes > 0
    }
}

/// Why a payload could not be read. Each maps to `Outcome::Malformed` upstream.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractError {
    /// Not valid JSON (or not UTF-8). Fix: the server sent a broken event; nothing to tune.
    #[error("payload is not valid JSON")]
    BadJson,
    /// Valid JSON but not an object (e.g. a bare string or number).
    #[error("payload is JSON but not an object")]
    NotObject,
}

/// Values of `WARM_PAYLOAD`: ~2 structural characters and one tape node each. A streamed
/// chat chunk has ~30–60 structurals (the simulator's, with `usage`, up to ~140).
const WARM_VALUES: usize = 160;

/// `[0,0,…,0]`: the payload a new `Extractor` parses once, so its buffers start at the size
/// of `WARM_VALUES` values (~1.3 KB of index and 2.6 KB of tape).
const WARM_PAYLOAD: [u8; 2 * WARM_VALUES + 1] = {
    let mut b = [b','; 2 * WARM_VALUES + 1];
    b[0] = b'[';
    let mut i = 0;
    while i < WARM_VALUES {
        b[1 + 2 * i] = b'0';
        i += 1;
    }
    b[2 * WARM_VALUES] = b']';
    b
};

/// Reused parsing state; one per connection (or per worker).
pub struct Extractor {
    buffers: Buffers,
    /// Kept between calls so the node vector is allocated once; always empty at rest.
    tape: Option<Tape<'static>>,
    /// Padded copy of the payload that simd-json may rewrite.
    scratch: Vec<u8>,
    /// The last payload's generated text (reasoning, then content), unescaped, when the run
    /// counts output tokens with a tokenizer (`capture_text`); `None` otherwise. Reused.
    text: Option<Vec<u8>>,
    /// The API whose answers this extractor reads (`Plan::endpoint`).
    endpoint: Endpoint,
}

impl Default for Extractor {
    fn default() -> Self {
        Self::new()
    }
}

impl Extractor {
    /// An extractor whose buffers already hold a payload of `WARM_PAYLOAD`'s structure (and
    /// grow past it to the largest payload seen); text capture off.
    ///
    /// Warmed at once: simd-json sizes its index and tape vectors by what it parses, so a
    /// lane first used mid-run (an open loop's lanes are opened before the first arrival and
    /// some wait idle until a burst) grew them there, five allocations on the hot path.
    pub fn new() -> Self {
        Self::for_endpoint(Endpoint::Chat)
    }

    /// `new`, for the answers of `endpoint` (chat's reads completions' too).
    pub fn for_endpoint(endpoint: Endpoint) -> Self {
        let mut x = Extractor {
            buffers: Buffers::new(1024),
            tape: Some(Tape::null().reset()),
            scratch: Vec::with_capacity(1024 + INPUT_PADDING),
            text: None,
            endpoint,
        };
        // An array, not an object: the error it reads as is the expected outcome.
        let warmed = x.parse(&WARM_PAYLOAD);
        debug_assert_eq!(warmed, Err(ExtractError::NotObject));
        x
    }

    /// The API whose answers it reads.
    pub fn endpoint(&self) -> Endpoint {
        self.endpoint
    }

    /// Keep each payload's generated text for `text()` (one copy into a reused buffer).
    pub fn capture_text(&mut self, on: bool) {
        self.text = on.then(|| Vec::with_capacity(1024));
    }

    /// The generated text of the last payload; empty unless `capture_text(true)`.
    pub fn text(&self) -> &[u8] {
        self.text.as_deref().unwrap_or(&[])
    }

    /// One SSE `data:` value (without `data:`). `[DONE]` gives an event with only
    /// `done_marker` set.
    pub fn event(&mut self, payload: &[u8]) -> Result<EventInfo, ExtractError> {
        if let Some(t) = self.text.as_mut() {
            // `[DONE]` carries no text: the previous event's must not be handed on again.
            t.clear();
        }
        if payload.trim_ascii() == b"[DONE]" {
            return Ok(EventInfo {
                done_marker: true,
                ..EventInfo::default()
            });
        }
        self.parse(payload)
    }

    /// One whole non-streamed chat/completions body.
    pub fn body(&mut self, json: &[u8]) -> Result<EventInfo, ExtractError> {
        self.parse(json)
    }

    fn parse(&mut self, json: &[u8]) -> Result<EventInfo, ExtractError> {
        self.scratch.clear();
        self.scratch.extend_from_slice(json);
        self.scratch.resize(json.len() + INPUT_PADDING, b' ');
        if let Some(t) = self.text.as_mut() {
            t.clear();
        }
        let mut tape: Tape<'_> = self.tape.take().unwrap_or_else(Tape::null).reset();
        let filled = simd_json::fill_tape_padded(
            &mut self.scratch,
            json.len(),
            &mut self.buffers,
            &mut tape,
        );
        let info = match filled {
            Ok(()) => read_root(tape.as_value(), self.text.as_mut()),
            Err(_) => Err(ExtractError::BadJson),
        };
        self.tape = Some(tape.reset());
        info
    }
}

fn read_root(root: Value<'_, '_>, text: Option<&mut Vec<u8>>) -> Result<EventInfo, ExtractError> {
    let obj = root.as_object().ok_or(ExtractError::NotObject)?;
    let mut info = EventInfo::default();
    let mut choices = None;
    // One pass over the keys, not one `get` (a linear scan with a compare per key) per field:
    // this runs for every event. The first of a duplicated key wins, as `get` would have it.
    let mut seen = Seen::default();
    for (key, v) in obj.iter() {
        match key {
            "error" if seen.first(0) => info.error = !v.is_null(),
            "usage" if seen.first(1) => info.usage = v.as_object().map(read_usage),
            "ringbench_ns" if seen.first(2) => info.server_mono_ns = v.as_u64(),
            "choices" if seen.first(3) => choices = Some(v),
            _ => {}
        }
    }
    let choice = choices
        .and_then(|c| c.get_idx(0))
        .and_then(|c| c.as_object());
    if let Some(choice) = choice {
        read_choice(&choice, &mut info);
        if let Some(out) = text {
            copy_text(&choice, out);
        }
    }
    Ok(info)
}

/// Which of up to 8 keys a one-pass read has met already.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    /// True the first time `bit` is asked for.
    fn first(&mut self, bit: u8) -> bool {
        let new = self.0 & (1 << bit) == 0;
        self.0 |= 1 << bit;
        new
    }
}

fn read_choice(choice: &Object<'_, '_>, info: &mut EventInfo) {
    let (mut text, mut delta, mut message) = (0, None, None);
    let mut seen = Seen::default();
    for (key, v) in choice.iter() {
        match key {
            "finish_reason" if seen.first(0) => info.finish = !v.is_null(),
            "text" if seen.first(1) => {
                text = str_len(Some(v));
                info.visible |= visible(&v);
            }
            "delta" if seen.first(2) => delta = v.as_object(),
            "message" if seen.first(3) => message = v.as_object(),
            _ => {}
        }
    }
    let (content, reasoning) = match delta.or(message) {
        Some(d) => read_message(&d, &mut info.visible),
        None => (0, 0),
    };
    info.content_bytes = content.saturating_add(text);
    info.reasoning_bytes = reasoning;
}

/// Content and reasoning bytes of a `delta` or `message` object, in one pass; `visible` set
/// when the content holds more than white space.
fn read_message(d: &Object<'_, '_>, visible_out: &mut bool) -> (u32, u32) {
    let (mut content, mut reasoning, mut reasoning_content) = (0u32, 0u32, 0u32);
    let mut seen = Seen::default();
    for (key, v) in d.iter() {
        match key {
            "content" if seen.first(0) => {
                content = str_len(Some(v));
                *visible_out |= visible(&v);
            }
            "reasoning" if seen.first(1) => reasoning = str_len(Some(v)),
            "reasoning_content" if seen.first(2) => reasoning_content = str_len(Some(v)),
            _ => {}
        }
    }
    (content, reasoning.saturating_add(reasoning_content))
}

/// The choice's generated text, reasoning first, as the fields `read_choice` counts.
fn copy_text(choice: &Object<'_, '_>, out: &mut Vec<u8>) {
    let inner = choice
        .get("delta")
        .or_else(|| choice.get("message"))
        .and_then(|d| d.as_object());
    let mut put = |v: Option<Value<'_, '_>>| {
        if let Some(s) = v.as_ref().and_then(|v| v.as_str()) {
            out.extend_from_slice(s.as_bytes());
        }
    };
    if let Some(d) = inner {
        put(d.get("reasoning"));
        put(d.get("reasoning_content"));
        put(d.get("content"));
    }
    put(choice.get("text"));
}

fn read_usage(usage: Object<'_, '_>) -> Usage {
    let cached = usage
        .get("prompt_tokens_details")
        .and_then(|d| d.as_object())
        .and_then(|d| as_u32(d.get("cached_tokens")));
    Usage {
        prompt_tokens: as_u32(usage.get("prompt_tokens")),
        completion_tokens: as_u32(usage.get("completion_tokens")),
        cached_tokens: cached,
    }
}

/// Length of a string value; null, absent and non-strings count as empty.
/// A string holding a character other than Unicode white space (it stops at the first).
fn visible(v: &Value<'_, '_>) -> bool {
    v.as_str()
        .is_some_and(|s| s.chars().any(|c| !c.is_whitespace()))
}

fn str_len(v: Option<Value<'_, '_>>) -> u32 {
    let len = v.and_then(|v| v.as_str().map(str::len)).unwrap_or(0);
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn as_u32(v: Option<Value<'_, '_>>) -> Option<u32> {
    v.and_then(|v| v.as_u64())
        .and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_warm_payload_is_an_array_of_its_count_of_zeros() {
        let v: serde_json::Value = serde_json::from_slice(&WARM_PAYLOAD).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), WARM_VALUES);
        assert!(a.iter().all(|x| x == 0));
        // A fresh extractor (warmed by it) still reads a real event.
        let e = Extractor::new()
            .event(br#"{"choices":[{"delta":{"content":"hi"}}]}"#)
            .unwrap();
        assert_eq!(e.content_bytes, 2);
    }

    use super::*;

    fn ev(payload: &str) -> EventInfo {
        Extractor::new().event(payload.as_bytes()).unwrap()
    }

    #[test]
    fn output_is_visible_once_it_holds_more_than_white_space() {
        let chat = |c: &str| {
            ev(&format!(
                r#"{{"choices":[{{"delta":{{"content":"{c}"}}}}]}}"#
            ))
        };
        for blank in [r"\n\n", " ", r"\t \r\n", r"\u00a0\u3000"] {
            let e = chat(blank);
            assert!(e.content_bytes > 0 && !e.visible, "{blank:?}");
        }
        for seen in [r"\nHi", ".", r"\u00e9", "\\\""] {
            assert!(chat(seen).visible, "{seen:?}");
        }
        let text = |t: &str| ev(&format!(r#"{{"choices":[{{"text":"{t}"}}]}}"#));
        assert!(
            !text("  ").visible && text(" a").visible,
            "completions' text too"
        );
        let thinking = ev(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#);
        assert!(!thinking.visible, "reasoning is not output");
    }

    #[test]
    fn captured_text_is_unescaped_reasoning_then_content() {
        let mut x = Extractor::new();
        x.capture_text(true);
        let e = x
            .event(br#"{"choices":[{"delta":{"reasoning":"a\n","content":"\u00e9t\u00e9"}}]}"#)
            .unwrap();
        assert_eq!(x.text(), "a\nété".as_bytes());
        assert_eq!(x.text().len() as u32, e.content_bytes + e.reasoning_bytes);
        x.event(br#"{"choices":[],"usage":{"completion_tokens":3}}"#)
            .unwrap();
        assert_eq!(x.text(), b"");
        let mut off = Extractor::new();
        off.event(br#"{"choices":[{"text":"hello"}]}"#).unwrap();
        assert_eq!(off.text(), b"");
    }

    #[test]
    fn role_only_and_null_content_carry_no_token() {
        let a = ev(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        let b = ev(r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#);
        assert!(!a.carries_token() && !b.carries_token());
        assert!(!a.finish && a.usage.is_none());
    }

    #[test]
    fn content_inside_logprobs_is_not_counted() {
        let e = ev(
            r#"{"choices":[{"logprobs":{"content":[{"token":"abc"}]},"delta":{"content":"xy"},"finish_reason":"stop"}]}"#,
        );
        assert_eq!(e.content_bytes, 2);
        assert!(e.finish);
        let only_logprobs = ev(r#"{"choices":[{"logprobs":{"content":"zzz"},"delta":{}}]}"#);
        assert_eq!(only_logprobs.content_bytes, 0);
    }

    #[test]
    fn reasoning_fields_and_completions_text() {
        assert_eq!(
            ev(r#"{"choices":[{"delta":{"reasoning":"abcd"}}]}"#).reasoning_bytes,
            4
        );
        let e = ev(r#"{"choices":[{"delta":{"reasoning_content":"ab","content":null}}]}"#);
        assert_eq!((e.reasoning_bytes, e.content_bytes), (2, 0));
        assert_eq!(
            ev(r#"{"choices":[{"text":"hello","index":0}]}"#).content_bytes,
            5
        );
    }

    #[test]
    fn usage_own_chunk_attached_or_null() {
        let own = ev(
            r#"{"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":3}}}"#,
        );
        let want = Usage {
            prompt_tokens: Some(19),
            completion_tokens: Some(8),
            cached_tokens: Some(3),
        };
        assert_eq!(own.usage, Some(want));
        assert!(!own.carries_token());
        let attached = ev(
            r#"{"choices":[{"text":"x","finish_reason":"length"}],"usage":{"completion_tokens":8}}"#,
        );
        assert_eq!(attached.usage.unwrap().completion_tokens, Some(8));
        assert!(attached.carries_token() && attached.finish);
        assert_eq!(ev(r#"{"choices":[],"usage":null}"#).usage, None);
    }

    #[test]
    fn done_error_and_server_stamp() {
        assert!(ev("[DONE]").done_marker);
        assert!(ev(r#"{"error":{"message":"boom","code":500}}"#).error);
        assert!(ev(r#"{"error":"plain"}"#).error);
        assert!(!ev(r#"{"error":null,"choices":[]}"#).error);
        let s = ev(r#"{"ringbench_ns":123456789012,"choices":[{"delta":{"content":"a"}}]}"#);
        assert_eq!(s.server_mono_ns, Some(123_456_789_012));
    }

    #[test]
    fn non_stream_body_reads_message() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":"hello world","reasoning_content":"hm"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":8}}"#;
        let e = Extractor::new().body(body).unwrap();
        assert_eq!(
            (e.content_bytes, e.reasoning_bytes, e.finish),
            (11, 2, true)
        );
        assert_eq!(e.usage.unwrap().prompt_tokens, Some(9));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut x = Extractor::new();
        assert_eq!(x.event(b"{\"choices\":"), Err(ExtractError::BadJson));
        assert_eq!(x.event(b""), Err(ExtractError::BadJson));
        assert_eq!(x.event(b"\xff\xfe"), Err(ExtractError::BadJson));
        assert_eq!(x.event(b"42"), Err(ExtractError::NotObject));
        assert_eq!(x.event(b"[1,2]"), Err(ExtractError::NotObject));
        // Reuse after failure still works.
        assert_eq!(
            x.event(br#"{"choices":[{"text":"ab"}]}"#)
                .unwrap()
                .content_bytes,
            2
        );
    }

    #[test]
    fn escapes_count_decoded_bytes() {
        assert_eq!(
            ev(r#"{"choices":[{"delta":{"content":"a\nb\u00e9"}}]}"#).content_bytes,
            5
        );
    }
}
