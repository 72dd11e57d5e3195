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
//!
//! Which API's shape is read is the extractor's `Endpoint`, decided by one `match` per
//! payload: chat and completions (`choices[0]`), the Responses API (events named by their
//! JSON `type`; the non-streamed response object's `output[]`), Anthropic's Messages
//! (`message_start` … `message_stop`; the non-streamed message's `content[]`). A payload in
//! another API's shape is `wrong_api`. Pooling answers (embeddings, rerank, score) are not
//! read here but by `pooled::PooledScanner`, as their bodies arrive.

mod messages;
pub mod pooled;
mod responses;

pub use pooled::PooledScanner;

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
    /// A chat or completions chunk whose `delta.content` (or `text`) is an empty string, with
    /// no role and no finish: what vLLM streams for a token that decodes to no text yet. Not
    /// a token by itself; the sink credits such events when the server's usage says tokens
    /// were generated and no event carried text (`worker::sink::credit_empty_text`).
    pub empty_text: bool,
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
    /// A pooling answer's embedding length (numbers in each vector, or a base64 vector's
    /// bytes / 4), the same for all of its embeddings; 0 when it holds none.
    pub vector_len: u32,
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
    /// A pooling answer's embeddings differ in length: the server broke its own answer.
    #[error("embeddings of one answer differ in length")]
    UnequalVectors,
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
        let warmed = x.parse(&WARM_PAYLOAD, false);
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
        self.parse(payload, false)
    }

    /// One whole non-streamed body (a pooling endpoint's through `PooledScanner`, which
    /// `ResponseParser` feeds as the body arrives instead).
    pub fn body(&mut self, json: &[u8]) -> Result<EventInfo, ExtractError> {
        if !self.endpoint.generates() {
            let mut scanner = PooledScanner::new(self.endpoint);
            scanner.push(json);
            return scanner.finish();
        }
        self.parse(json, true)
    }

    fn parse(&mut self, json: &[u8], body: bool) -> Result<EventInfo, ExtractError> {
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
            Ok(()) => read_root(tape.as_value(), self.endpoint, body, self.text.as_mut()),
            Err(_) => Err(ExtractError::BadJson),
        };
        self.tape = Some(tape.reset());
        info
    }
}

fn read_root(
    root: Value<'_, '_>,
    endpoint: Endpoint,
    body: bool,
    text: Option<&mut Vec<u8>>,
) -> Result<EventInfo, ExtractError> {
    let Some(obj) = root.as_object() else {
        // A bare array answering a generation request is TEI's rerank answer, not a
        // broken one; an event is never an array.
        if body && root.as_array().is_some() {
            return Ok(EventInfo {
                wrong_api: true,
                ..EventInfo::default()
            });
        }
        return Err(ExtractError::NotObject);
    };
    match endpoint {
        Endpoint::Chat | Endpoint::Completions => Ok(read_chat(&obj, text)),
        Endpoint::Responses => Ok(responses::read(&obj, text)),
        Endpoint::Messages => Ok(messages::read(&obj, text)),
        // Pooling answers are one JSON body, read by `PooledScanner`: a JSON event answering
        // a pooling request is a generation API's.
        Endpoint::Embeddings | Endpoint::Rerank | Endpoint::Score | Endpoint::TeiRerank => {
            let error = obj.get("error").is_some_and(|v| !v.is_null());
            Ok(EventInfo {
                error,
                wrong_api: !error,
                ..EventInfo::default()
            })
        }
    }
}

fn read_chat(obj: &Object<'_, '_>, text: Option<&mut Vec<u8>>) -> EventInfo {
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
    let Some(choices) = choices else {
        // Not a chat chunk: another API's event or answer (looked for only then, off the
        // chat path).
        info.wrong_api = !info.error
            && ["type", "output", "data", "results"]
                .iter()
                .any(|k| obj.get(*k).is_some());
        return info;
    };
    let choice = choices.get_idx(0).and_then(|c| c.as_object());
    if let Some(choice) = choice {
        read_choice(&choice, &mut info);
        if let Some(out) = text {
            copy_text(&choice, out);
        }
    }
    info
}

/// Which of up to 16 keys a one-pass read has met already.
#[derive(Default)]
struct Seen(u16);

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
    let mut empty_text = false;
    for (key, v) in choice.iter() {
        match key {
            "finish_reason" if seen.first(0) => info.finish = !v.is_null(),
            "text" if seen.first(1) => {
                text = str_len(Some(v));
                empty_text = v.as_str() == Some("");
                info.visible |= visible(&v);
            }
            "delta" if seen.first(2) => delta = v.as_object(),
            "message" if seen.first(3) => message = v.as_object(),
            _ => {}
        }
    }
    let (content, reasoning) = match delta.or(message) {
        Some(d) => read_message(&d, info),
        None => (0, 0),
    };
    info.content_bytes = content.saturating_add(text);
    info.reasoning_bytes = reasoning;
    info.empty_text = (empty_text || info.empty_text) && !info.finish && !info.carries_token();
}

/// Content and reasoning bytes of a `delta` or `message` object, in one pass; `visible` set
/// when the content holds more than white space; its tool calls counted into `info`.
fn read_message(d: &Object<'_, '_>, info: &mut EventInfo) -> (u32, u32) {
    let (mut content, mut reasoning, mut reasoning_content) = (0u32, 0u32, 0u32);
    let (mut empty, mut role) = (false, false);
    let mut seen = Seen::default();
    for (key, v) in d.iter() {
        match key {
            "content" if seen.first(0) => {
                content = str_len(Some(v));
                empty = v.as_str() == Some("");
                info.visible |= visible(&v);
            }
            // A role announces the answer (vLLM's first chunk, `"content": ""`): not a
            // token, nor an empty-text one.
            "role" => role = true,
            "reasoning" if seen.first(1) => reasoning = str_len(Some(v)),
            "reasoning_content" if seen.first(2) => reasoning_content = str_len(Some(v)),
            "tool_calls" if seen.first(3) => read_tool_calls(v, info, None),
            _ => {}
        }
    }
    info.empty_text = empty && !role;
    (content, reasoning.saturating_add(reasoning_content))
}

/// Chat's `tool_calls[i]` fragments: the bytes of each `function.name` and
/// `function.arguments`; an element with an `id` (or, when a server omits ids, a name)
/// begins a call. With `out`, the fragments' text is appended to it.
fn read_tool_calls(v: Value<'_, '_>, info: &mut EventInfo, mut out: Option<&mut Vec<u8>>) {
    let Some(calls) = v.as_array() else { return };
    for call in calls.iter() {
        let Some(call) = call.as_object() else {
            continue;
        };
        let (mut begins, mut bytes) = (false, 0u32);
        for (key, v) in call.iter() {
            match key {
                "id" => begins |= v.as_str().is_some_and(|s| !s.is_empty()),
                "function" => {
                    let Some(f) = v.as_object() else { continue };
                    for (key, v) in f.iter() {
                        if key == "name" || key == "arguments" {
                            let n = take(Some(v), &mut out);
                            begins |= key == "name" && n > 0;
                            bytes = bytes.saturating_add(n);
                        }
                    }
                }
                _ => {}
            }
        }
        info.tool_calls += u32::from(begins);
        info.tool_call_bytes = info.tool_call_bytes.saturating_add(bytes);
    }
}

/// The choice's generated text, reasoning first, as the fields `read_choice` counts.
fn copy_text(choice: &Object<'_, '_>, out: &mut Vec<u8>) {
    let inner = choice
        .get("delta")
        .or_else(|| choice.get("message"))
        .and_then(|d| d.as_object());
    let mut put = |v: Option<Value<'_, '_>>| {
        if let Some(s) = v.as_ref().and_then(|v| v.into_string()) {
            out.extend_from_slice(s.as_bytes());
        }
    };
    if let Some(d) = &inner {
        put(d.get("reasoning"));
        put(d.get("reasoning_content"));
        put(d.get("content"));
    }
    put(choice.get("text"));
    if let Some(calls) = inner.and_then(|d| d.get("tool_calls")) {
        read_tool_calls(calls, &mut EventInfo::default(), Some(out));
    }
}

/// Length of a string value (null, absent and non-strings count as empty), its text
/// appended to `out` when text is captured.
fn take(v: Option<Value<'_, '_>>, out: &mut Option<&mut Vec<u8>>) -> u32 {
    let s = v.and_then(|v| v.into_string()).unwrap_or_default();
    if let Some(out) = out.as_mut() {
        out.extend_from_slice(s.as_bytes());
    }
    u32::try_from(s.len()).unwrap_or(u32::MAX)
}

/// A string value equal to `name`.
fn is_str(v: Option<Value<'_, '_>>, name: &str) -> bool {
    v.and_then(|v| v.into_string()) == Some(name)
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

/// A string holding a character other than Unicode white space (it stops at the first).
fn visible(v: &Value<'_, '_>) -> bool {
    v.as_str()
        .is_some_and(|s| s.chars().any(|c| !c.is_whitespace()))
}

/// Length of a string value; null, absent and non-strings count as empty.
fn str_len(v: Option<Value<'_, '_>>) -> u32 {
    let len = v.and_then(|v| v.into_string().map(str::len)).unwrap_or(0);
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

    fn ev_at(endpoint: Endpoint, payload: &str) -> EventInfo {
        Extractor::for_endpoint(endpoint)
            .event(payload.as_bytes())
            .unwrap()
    }

    #[test]
    fn chat_tool_call_fragments_begin_calls_and_count_bytes() {
        let first = ev(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
        );
        assert_eq!((first.tool_calls, first.tool_call_bytes), (1, 11));
        assert!(first.carries_token() && first.carries_output() && !first.visible);
        let args = ev(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"P"}}]}}]}"#,
        );
        assert_eq!((args.tool_calls, args.tool_call_bytes), (0, 11));
        // No ids: a name begins a call; two calls in one chunk; null fields count nothing.
        let two = ev(
            r#"{"choices":[{"delta":{"content":"ok","tool_calls":[{"function":{"name":"a","arguments":null}},{"id":null,"function":{"name":"bc"}},{"id":"x"},null,{"function":null}]},"finish_reason":"tool_calls"}]}"#,
        );
        assert_eq!(
            (two.tool_calls, two.tool_call_bytes, two.content_bytes),
            (3, 3, 2)
        );
        assert!(two.finish);
        let body = br#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"false"}}]},"finish_reason":"tool_calls"}]}"#;
        let b = Extractor::new().body(body).unwrap();
        assert_eq!((b.tool_calls, b.tool_call_bytes, b.finish), (1, 6, true));
        let mut x = Extractor::new();
        x.capture_text(true);
        x.event(br#"{"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}"#)
            .unwrap();
        assert_eq!(x.text(), br#"f{"a":1}"#);
    }

    #[test]
    fn responses_events() {
        let r = |p: &str| ev_at(Endpoint::Responses, p);
        let d = r(
            r#"{"content_index":0,"delta":"a\"\u00e9","item_id":"m","type":"response.output_text.delta"}"#,
        );
        assert_eq!((d.content_bytes, d.visible), (4, true));
        assert!(!r(r#"{"type":"response.output_text.delta","delta":" "}"#).visible);
        assert_eq!(
            r(r#"{"type":"response.output_text.delta","delta":null}"#).content_bytes,
            0
        );
        assert_eq!(
            r(r#"{"type":"response.output_text.delta"}"#),
            EventInfo::default()
        );
        for t in [
            "response.reasoning_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning.delta",
        ] {
            let e = r(&format!(r#"{{"type":"{t}","delta":"hmm"}}"#));
            assert_eq!((e.reasoning_bytes, e.content_bytes), (3, 0), "{t}");
        }
        let call = r(
            r#"{"item":{"arguments":"","name":"get_weather","type":"function_call"},"type":"response.output_item.added"}"#,
        );
        assert_eq!((call.tool_calls, call.tool_call_bytes), (1, 11));
        let msg =
            r(r#"{"item":{"type":"message","content":[]},"type":"response.output_item.added"}"#);
        assert_eq!(msg, EventInfo::default());
        let args = r(r#"{"delta":"{\"c","type":"response.function_call_arguments.delta"}"#);
        assert_eq!((args.tool_call_bytes, args.tool_calls), (3, 0));
        // Earlier events carry `usage: null`; only the end's counts.
        let created =
            r(r#"{"type":"response.created","response":{"usage":null,"status":"in_progress"}}"#);
        assert_eq!(created, EventInfo::default());
        let done = r(
            r#"{"response":{"status":"incomplete","usage":{"input_tokens":24,"input_tokens_details":{"cached_tokens":16},"output_tokens":16,"total_tokens":40}},"type":"response.completed"}"#,
        );
        assert!(done.finish && !done.carries_token());
        assert_eq!(
            done.usage,
            Some(Usage {
                prompt_tokens: Some(24),
                completion_tokens: Some(16),
                cached_tokens: Some(16)
            })
        );
        assert!(r(r#"{"type":"response.incomplete","response":{}}"#).finish);
        assert!(r(r#"{"type":"response.failed","response":{"error":{"code":"x"}}}"#).error);
        assert!(r(r#"{"type":"error","code":"x","message":"m"}"#).error);
        for other in [
            "response.in_progress",
            "response.output_text.done",
            "response.content_part.added",
        ] {
            assert_eq!(
                r(&format!(r#"{{"type":"{other}","text":"abc"}}"#)),
                EventInfo::default()
            );
        }
    }

    #[test]
    fn responses_object_not_streamed() {
        let body = br#"{"id":"r","object":"response","status":"completed","output":[
            {"type":"reasoning","content":[{"type":"reasoning_text","text":"think"}],"summary":[]},
            {"type":"message","content":[{"type":"output_text","text":"hello"},{"type":"refusal","refusal":"no"}]},
            {"type":"function_call","name":"f","arguments":"{}"}],
            "usage":{"input_tokens":5,"output_tokens":9,"input_tokens_details":null}}"#;
        let e = Extractor::for_endpoint(Endpoint::Responses)
            .body(body)
            .unwrap();
        assert_eq!(
            (
                e.content_bytes,
                e.reasoning_bytes,
                e.tool_calls,
                e.tool_call_bytes
            ),
            (5, 5, 1, 3)
        );
        assert!(e.finish && e.visible && !e.wrong_api);
        assert_eq!(e.usage.unwrap().completion_tokens, Some(9));
        assert_eq!(e.usage.unwrap().cached_tokens, None);
    }

    #[test]
    fn messages_events() {
        let m = |p: &str| ev_at(Endpoint::Messages, p);
        let start = m(
            r#"{"type":"message_start","message":{"usage":{"cache_read_input_tokens":23,"input_tokens":1,"output_tokens":1}}}"#,
        );
        assert_eq!(
            start.usage,
            Some(Usage {
                prompt_tokens: Some(24),
                completion_tokens: None,
                cached_tokens: Some(23)
            })
        );
        let text = m(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb"}}"#,
        );
        assert_eq!((text.content_bytes, text.visible), (3, true));
        let think = m(
            r#"{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        );
        assert_eq!((think.reasoning_bytes, think.content_bytes), (2, 0));
        let json = m(
            r#"{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
        );
        assert_eq!((json.tool_call_bytes, json.tool_calls), (5, 0));
        assert_eq!(
            m(
                r#"{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"x"}}"#
            ),
            EventInfo::default()
        );
        assert_eq!(
            m(r#"{"type":"content_block_delta","delta":null}"#),
            EventInfo::default()
        );
        let tool = m(
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"get_weather","input":{}}}"#,
        );
        assert_eq!((tool.tool_calls, tool.tool_call_bytes), (1, 11));
        assert_eq!(
            m(r#"{"type":"content_block_start","content_block":{"type":"text","text":""}}"#),
            EventInfo::default()
        );
        let delta = m(
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":16}}"#,
        );
        assert!(delta.finish);
        assert_eq!(
            delta.usage,
            Some(Usage {
                prompt_tokens: None,
                completion_tokens: Some(16),
                cached_tokens: None
            })
        );
        assert!(!m(r#"{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}"#).finish);
        for quiet in [
            r#"{"type":"message_stop"}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ] {
            assert_eq!(m(quiet), EventInfo::default());
        }
        assert!(
            m(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
                .error
        );
    }

    #[test]
    fn messages_not_streamed() {
        let body = br#"{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"abc"},{"type":"text","text":"hello"},{"type":"tool_use","id":"t","name":"f","input":{"city":"Paris","n":[1]}}],"stop_reason":"tool_use","usage":{"input_tokens":24,"output_tokens":16}}"#;
        let e = Extractor::for_endpoint(Endpoint::Messages)
            .body(body)
            .unwrap();
        assert_eq!(
            (
                e.reasoning_bytes,
                e.content_bytes,
                e.tool_calls,
                e.tool_call_bytes
            ),
            (3, 5, 1, 1 + 4 + 5 + 1)
        );
        assert!(e.finish && !e.wrong_api);
        assert_eq!(e.usage.unwrap().prompt_tokens, Some(24));
        assert_eq!(e.usage.unwrap().completion_tokens, Some(16));
    }

    #[test]
    fn another_apis_shape_is_wrong_api() {
        let chat =
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"delta":{"content":"hi"}}]}"#;
        let responses = r#"{"type":"response.output_text.delta","delta":"hi"}"#;
        let messages =
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"hi"}}"#;
        assert!(!ev_at(Endpoint::Chat, chat).wrong_api);
        for (endpoint, payload) in [
            (Endpoint::Chat, responses),
            (Endpoint::Chat, messages),
            (
                Endpoint::Completions,
                r#"{"object":"list","data":[{"embedding":[1]}]}"#,
            ),
            (Endpoint::Responses, chat),
            (Endpoint::Responses, messages),
            (Endpoint::Messages, chat),
            (Endpoint::Messages, responses),
            (Endpoint::Embeddings, chat),
            (Endpoint::Rerank, responses),
        ] {
            let e = ev_at(endpoint, payload);
            assert!(
                e.wrong_api && !e.error && !e.carries_token(),
                "{endpoint:?} {payload}"
            );
        }
        // An error event is an error, in any API's shape.
        for endpoint in Endpoint::ALL {
            let e = ev_at(endpoint, r#"{"type":"error","error":{"message":"x"}}"#);
            assert!(e.error && !e.wrong_api, "{endpoint:?}");
        }
        // A usage-only chat chunk is chat's; a bare array answering a generation request
        // is TEI's rerank answer; as an event it stays not an object.
        assert!(!ev(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#).wrong_api);
        assert!(
            Extractor::new()
                .body(b"[{\"index\":0,\"score\":1}]")
                .unwrap()
                .wrong_api
        );
        assert_eq!(Extractor::new().event(b"[1]"), Err(ExtractError::NotObject));
        // A pooling answer through `body` is read by the scanner.
        let e = Extractor::for_endpoint(Endpoint::Score)
            .body(br#"{"data":[{"score":1},{"score":0}]}"#)
            .unwrap();
        assert_eq!((e.items, e.wrong_api), (2, false));
    }

    #[test]
    fn bad_json_for_every_endpoint() {
        for endpoint in Endpoint::ALL {
            let mut x = Extractor::for_endpoint(endpoint);
            assert_eq!(
                x.event(b"{\"type\":"),
                Err(ExtractError::BadJson),
                "{endpoint:?}"
            );
            assert_eq!(
                x.event(b"\"x\""),
                Err(ExtractError::NotObject),
                "{endpoint:?}"
            );
            assert_eq!(
                x.body(b"{\"type\":1"),
                Err(ExtractError::BadJson),
                "{endpoint:?}"
            );
        }
    }

    #[test]
    fn captured_text_of_the_other_apis() {
        let mut x = Extractor::for_endpoint(Endpoint::Messages);
        x.capture_text(true);
        x.event(br#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"\u00e9t\u00e9"}}"#)
            .unwrap();
        assert_eq!(x.text(), "été".as_bytes());
        x.event(br#"{"type":"message_stop"}"#).unwrap();
        assert_eq!(x.text(), b"");
        let mut r = Extractor::for_endpoint(Endpoint::Responses);
        r.capture_text(true);
        r.event(br#"{"type":"response.function_call_arguments.delta","delta":"{\"a\""}"#)
            .unwrap();
        assert_eq!(r.text(), br#"{"a""#);
    }
}
