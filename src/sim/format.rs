//! Response bytes of the simulator (server side; the client flow schedule → worker → http →
//! sse → extract → record → collector → report reads what this writes). Everything is
//! appended to caller-owned, reused buffers: no allocation per event once the buffers have
//! grown, no `String` per chunk. The wire format copies vLLM's (field order included, see
//! `fixtures/sse/vllm-cpu`), plus one trailing top-level `"ringbench_ns"` stamp per event.
//! This module may not read clocks or sockets: stamps and timing come from the caller.

mod apis;
mod llama_cpp;
pub(crate) mod pool;

pub(crate) use apis::{close_event, error_event, messages_error_body, open_event, text_event_ends};

use super::api::WORDS;
pub(crate) use super::api::{Api, Pool};
use crate::plan::sim::Flavor;

/// Everything a response needs, fixed when the request arrives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reply<'a> {
    pub api: Api,
    /// Makes the response id unique per thread; printed as 16 hex digits like vLLM's.
    pub seq: u64,
    pub created_s: u64,
    /// The model name as decoded from the request; escaped again when written.
    pub model: &'a str,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub include_usage: bool,
    pub continuous_usage: bool,
    /// Prompt tokens served from the KV cache: sent as vLLM sends them
    /// (`usage.prompt_tokens_details.cached_tokens`) when the cache is on, else omitted.
    pub cached_tokens: Option<u32>,
    /// Whose streamed wire format to write (`llama_cpp.rs` for llama.cpp's).
    pub flavor: Flavor,
    /// The reply's first tokens that are reasoning (chat only; at most `completion_tokens`).
    pub reasoning_tokens: u32,
    /// The reply is a call to this tool (its arguments are the tokens), not text.
    pub tool: Option<&'a str>,
    /// Tokens per content event (Responses' sequence numbers count events).
    pub tokens_per_event: u32,
}

pub(crate) const STREAM_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nserver: ringbench-sim\r\n\
content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
pub(crate) const STREAM_HEAD_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nserver: ringbench-sim\r\n\
content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\
connection: close\r\n\r\n";
const DONE_EVENT: &[u8] = b"data: [DONE]\n\n";
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The streamed answer's head, with the `extra` header lines (each ending in CRLF) last.
pub(crate) fn stream_head(out: &mut Vec<u8>, close: bool, flavor: Flavor, extra: &[u8]) {
    let head = match (flavor, close) {
        (Flavor::Vllm, true) => STREAM_HEAD_CLOSE,
        (Flavor::Vllm, false) => STREAM_HEAD,
        (Flavor::LlamaCpp, true) => llama_cpp::HEAD_CLOSE,
        (Flavor::LlamaCpp, false) => llama_cpp::HEAD,
    };
    if extra.is_empty() {
        out.extend_from_slice(head);
    } else {
        // Every head literal ends in the blank line's CRLF.
        out.extend_from_slice(&head[..head.len() - 2]);
        out.extend_from_slice(extra);
        out.extend_from_slice(b"\r\n");
    }
}

/// The `x-request-id` header line a response carries: the request's own `value`, or, when it
/// sent none, 16 hex digits of `seq`.
pub(crate) fn request_id_line(out: &mut Vec<u8>, value: Option<&[u8]>, seq: u64) {
    out.clear();
    out.extend_from_slice(b"x-request-id: ");
    match value {
        Some(v) => out.extend_from_slice(v),
        None => put_hex16(out, seq),
    }
    out.extend_from_slice(b"\r\n");
}

/// The `x-ringbench-ns: N` header line (`plan::sim::STAMP_HEADER`): the write stamp of an
/// answer whose body has no room for it.
pub(crate) fn stamp_line(out: &mut Vec<u8>, stamp_ns: u64) {
    out.extend_from_slice(crate::plan::sim::STAMP_HEADER.as_bytes());
    out.extend_from_slice(b": ");
    put_u64(out, stamp_ns);
    out.extend_from_slice(b"\r\n");
}

/// Appends `ev` as one HTTP/1.1 chunk.
pub(crate) fn chunk(out: &mut Vec<u8>, ev: &[u8]) {
    put_hex(out, ev.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(ev);
    out.extend_from_slice(b"\r\n");
}

/// `data: [DONE]` and the terminating zero-length chunk.
pub(crate) fn stream_tail(out: &mut Vec<u8>) {
    chunk(out, DONE_EVENT);
    out.extend_from_slice(LAST_CHUNK);
}

/// The terminating zero-length chunk alone (Responses and Messages: no `[DONE]`).
pub(crate) fn stream_end(out: &mut Vec<u8>) {
    out.extend_from_slice(LAST_CHUNK);
}

/// The chat role-only first event (`"delta":{"role":"assistant","content":""}`).
pub(crate) fn role_event(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    if r.flavor == Flavor::LlamaCpp {
        return llama_cpp::role_event(ev, r, stamp_ns);
    }
    ev.clear();
    event_prefix(ev, r);
    ev.extend_from_slice(
        b"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\
\"logprobs\":null,\"finish_reason\":null}]",
    );
    continuous_usage(ev, r, 0);
    ev.extend_from_slice(b",\"prompt_token_ids\":null,\"prompt_text\":null");
    event_suffix(ev, stamp_ns);
}

/// One content event carrying tokens `first..first + count`; the one that reaches
/// `completion_tokens` carries `finish_reason: "length"`.
pub(crate) fn content_event(ev: &mut Vec<u8>, r: &Reply, first: u32, count: u32, stamp_ns: u64) {
    let end = first.saturating_add(count).min(r.completion_tokens);
    if r.tool.is_some() || !r.api.done_marker() {
        return apis::content_event(ev, r, first, end, stamp_ns);
    }
    if r.flavor == Flavor::LlamaCpp {
        return llama_cpp::content_event(ev, r, first, end, stamp_ns);
    }
    let last = end >= r.completion_tokens;
    ev.clear();
    event_prefix(ev, r);
    match r.api {
        // Content only (always so without reasoning): one literal, as before reasoning.
        Api::Chat if r.reasoning_tokens <= first => {
            ev.extend_from_slice(b"[{\"index\":0,\"delta\":{\"content\":\"");
            put_words(ev, first, end);
            ev.extend_from_slice(b"\"}");
        }
        Api::Chat => {
            ev.extend_from_slice(b"[{\"index\":0,\"delta\":{");
            put_text(ev, r, first, end);
            ev.extend_from_slice(b"}");
        }
        _ => {
            ev.extend_from_slice(b"[{\"index\":0,\"text\":\"");
            put_words(ev, first, end);
            ev.extend_from_slice(b"\"");
        }
    }
    ev.extend_from_slice(b",\"logprobs\":null,\"finish_reason\":");
    ev.extend_from_slice(if last { b"\"length\"" } else { b"null" });
    if last || r.api == Api::Completions {
        ev.extend_from_slice(b",\"stop_reason\":null");
    }
    if r.api == Api::Completions {
        ev.extend_from_slice(b",\"prompt_token_ids\":null");
    }
    ev.extend_from_slice(b",\"token_ids\":null}]");
    continuous_usage(ev, r, end);
    event_suffix(ev, stamp_ns);
}

/// The event that ends the choice when the flavour sends it apart from the last content
/// (llama.cpp); `false` when there is none (vLLM: the last content event carries it).
pub(crate) fn finish_event(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) -> bool {
    if r.tool.is_some() && r.api == Api::Chat {
        apis::chat_tool_finish(ev, r, stamp_ns);
        return true;
    }
    match r.flavor {
        Flavor::Vllm => false,
        Flavor::LlamaCpp => {
            llama_cpp::finish_event(ev, r, stamp_ns);
            true
        }
    }
}

/// The final usage event: empty `choices`, then `usage` (vLLM's key order); `false` when the
/// flavour sent the usage on another event (llama.cpp completions).
pub(crate) fn usage_event(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) -> bool {
    if r.flavor == Flavor::LlamaCpp {
        return llama_cpp::usage_event(ev, r, stamp_ns);
    }
    ev.clear();
    event_prefix(ev, r);
    ev.extend_from_slice(b"[],");
    usage(ev, r, r.completion_tokens);
    ev.extend_from_slice(b",\"system_fingerprint\":\"ringbench-sim\"");
    event_suffix(ev, stamp_ns);
    true
}

/// The whole non-streaming JSON body (`choices[0].message.content` or `choices[0].text`).
pub(crate) fn whole_body(body: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    if !r.api.done_marker() {
        return apis::whole_body(body, r, stamp_ns);
    }
    body.clear();
    object_prefix(body, r, false);
    body.extend_from_slice(b"[{\"index\":0,");
    let finish: &[u8] = match r.tool {
        Some(_) => b"tool_calls",
        None => b"length",
    };
    match r.api {
        _ if r.tool.is_some() => apis::chat_tool_message(body, r),
        Api::Chat => {
            body.extend_from_slice(b"\"message\":{\"role\":\"assistant\",");
            put_text(body, r, 0, r.completion_tokens);
            body.extend_from_slice(b",\"refusal\":null}");
        }
        _ => {
            body.extend_from_slice(b"\"text\":\"");
            put_words(body, 0, r.completion_tokens);
            body.extend_from_slice(b"\"");
        }
    }
    body.extend_from_slice(b",\"logprobs\":null,\"finish_reason\":\"");
    body.extend_from_slice(finish);
    body.extend_from_slice(b"\",\"stop_reason\":null}],");
    usage(body, r, r.completion_tokens);
    body.extend_from_slice(b",\"ringbench_ns\":");
    put_u64(body, stamp_ns);
    body.extend_from_slice(b"}");
}

/// `GET /v1/models`: the OpenAI list with the one model.
pub(crate) fn models_body(body: &mut Vec<u8>, model: &str, created_s: u64, max_model_len: u32) {
    body.clear();
    body.extend_from_slice(b"{\"object\":\"list\",\"data\":[{\"id\":\"");
    put_json_str(body, model);
    body.extend_from_slice(b"\",\"object\":\"model\",\"created\":");
    put_u64(body, created_s);
    body.extend_from_slice(b",\"owned_by\":\"ringbench\",\"root\":\"");
    put_json_str(body, model);
    body.extend_from_slice(b"\",\"parent\":null");
    if max_model_len > 0 {
        // vLLM's `ModelCard.max_model_len`.
        body.extend_from_slice(b",\"max_model_len\":");
        put_u64(body, max_model_len.into());
    }
    body.extend_from_slice(b"}]}");
}

/// What the simulator calls itself where a server names its version.
pub(crate) const SIM_VERSION: &str = concat!("ringbench-sim ", env!("CARGO_PKG_VERSION"));

/// vLLM's `GET /version` answer.
pub(crate) fn version_body(body: &mut Vec<u8>) {
    body.clear();
    body.extend_from_slice(b"{\"version\":\"");
    put_json_str(body, SIM_VERSION);
    body.extend_from_slice(b"\"}");
}

/// llama.cpp's `GET /props` answer, the fields a client reads: the build, the slots, and
/// each slot's context (`default_generation_settings.n_ctx`; llama.cpp splits its context
/// among its slots). `n_ctx` 0 (no window set) is left out.
pub(crate) fn props_body(body: &mut Vec<u8>, model: &str, n_ctx: u32, slots: u32) {
    body.clear();
    body.extend_from_slice(b"{\"default_generation_settings\":{");
    if n_ctx > 0 {
        body.extend_from_slice(b"\"n_ctx\":");
        put_u64(body, n_ctx.into());
        body.push(b',');
    }
    body.extend_from_slice(b"\"params\":{}},\"total_slots\":");
    put_u64(body, slots.into());
    body.extend_from_slice(b",\"model_path\":\"");
    put_json_str(body, model);
    body.extend_from_slice(b"\",\"build_info\":\"");
    put_json_str(body, SIM_VERSION);
    body.extend_from_slice(b"\"}");
}

/// The message a server refuses a prompt longer than its window with: vLLM's
/// (`serving_engine.py`) or llama.cpp's (`exceed_context_size_error`).
pub(crate) fn context_error(flavor: Flavor, window: u32, prompt: u32, max_tokens: u32) -> String {
    match flavor {
        Flavor::Vllm => format!(
            "This model's maximum context length is {window} tokens. However, you requested {} \
             tokens ({prompt} in the messages, {max_tokens} in the completion). Please reduce \
             the length of the messages or completion.",
            u64::from(prompt) + u64::from(max_tokens)
        ),
        Flavor::LlamaCpp => format!(
            "the request exceeds the available context size, try increasing it (n_prompt_tokens \
             = {prompt}, n_ctx = {window})"
        ),
    }
}

/// An OpenAI-style error body (`{"error":{"message",..,"code"}}`).
pub(crate) fn error_body(body: &mut Vec<u8>, status: Status, message: &str) {
    body.clear();
    body.extend_from_slice(b"{\"error\":{\"message\":\"");
    put_json_str(body, message);
    body.extend_from_slice(b"\",\"type\":\"");
    body.extend_from_slice(status.error_type().as_bytes());
    body.extend_from_slice(b"\",\"param\":null,\"code\":");
    put_u64(body, status.code().into());
    body.extend_from_slice(b"}}");
}

/// HTTP statuses the simulator answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    HeadersTooLarge,
    /// The engine's waiting queue is full (`--max-waiting`).
    TooManyRequests,
}

impl Status {
    pub(crate) fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::PayloadTooLarge => 413,
            Status::HeadersTooLarge => 431,
            Status::TooManyRequests => 429,
        }
    }

    fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"HTTP/1.1 200 OK\r\n",
            Status::BadRequest => b"HTTP/1.1 400 Bad Request\r\n",
            Status::NotFound => b"HTTP/1.1 404 Not Found\r\n",
            Status::MethodNotAllowed => b"HTTP/1.1 405 Method Not Allowed\r\n",
            Status::PayloadTooLarge => b"HTTP/1.1 413 Payload Too Large\r\n",
            Status::HeadersTooLarge => b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
            Status::TooManyRequests => b"HTTP/1.1 429 Too Many Requests\r\n",
        }
    }

    pub(crate) fn error_type(self) -> &'static str {
        match self {
            Status::NotFound => "NotFoundError",
            Status::MethodNotAllowed => "MethodNotAllowedError",
            Status::TooManyRequests => "RateLimitError",
            _ => "BadRequestError",
        }
    }
}

/// A complete `Content-Length` response: head then `body`.
/// `extra`: header lines (each ending in CRLF) written after the others.
pub(crate) fn fixed_response(
    out: &mut Vec<u8>,
    status: Status,
    body: &[u8],
    close: bool,
    extra: &[u8],
) {
    typed_response(out, status, b"application/json", body, close);
    if !extra.is_empty() {
        // Before the blank line that ends the head (`typed_response` wrote `\r\n\r\n`).
        let at = out.len() - body.len() - 2;
        out.splice(at..at, extra.iter().copied());
    }
}

/// The Prometheus text exposition format's content type (version 0.0.4).
pub(crate) const PROMETHEUS_TEXT: &[u8] = b"text/plain; version=0.0.4; charset=utf-8";

/// A whole `Content-Length` response of `content_type`; a 429 says when to retry.
pub(crate) fn typed_response(
    out: &mut Vec<u8>,
    status: Status,
    content_type: &[u8],
    body: &[u8],
    close: bool,
) {
    out.extend_from_slice(status.line());
    out.extend_from_slice(b"server: ringbench-sim\r\ncontent-type: ");
    out.extend_from_slice(content_type);
    out.extend_from_slice(b"\r\n");
    if status == Status::TooManyRequests {
        out.extend_from_slice(b"retry-after: 1\r\n");
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    put_u64(out, body.len() as u64);
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

fn event_prefix(ev: &mut Vec<u8>, r: &Reply) {
    ev.extend_from_slice(b"data: ");
    object_prefix(ev, r, true);
}

/// `{"id":..,"object":..,"created":..,"model":..,"choices":` (the value follows).
fn object_prefix(out: &mut Vec<u8>, r: &Reply, chunk: bool) {
    let (id_prefix, object): (&[u8], &[u8]) = match (r.api, chunk) {
        (Api::Chat, true) => (b"chatcmpl-", b"chat.completion.chunk"),
        (Api::Chat, false) => (b"chatcmpl-", b"chat.completion"),
        _ => (b"cmpl-", b"text_completion"),
    };
    out.extend_from_slice(b"{\"id\":\"");
    out.extend_from_slice(id_prefix);
    put_hex16(out, r.seq);
    out.extend_from_slice(b"\",\"object\":\"");
    out.extend_from_slice(object);
    out.extend_from_slice(b"\",\"created\":");
    put_u64(out, r.created_s);
    out.extend_from_slice(b",\"model\":\"");
    put_json_str(out, r.model);
    out.extend_from_slice(b"\",\"choices\":");
}

fn event_suffix(ev: &mut Vec<u8>, stamp_ns: u64) {
    ev.extend_from_slice(b",\"ringbench_ns\":");
    put_u64(ev, stamp_ns);
    ev.extend_from_slice(b"}\n\n");
}

fn continuous_usage(ev: &mut Vec<u8>, r: &Reply, completion_tokens: u32) {
    if r.continuous_usage {
        ev.push(b',');
        usage(ev, r, completion_tokens);
    }
}

fn usage(out: &mut Vec<u8>, r: &Reply, completion: u32) {
    let prompt = r.prompt_tokens;
    out.extend_from_slice(b"\"usage\":{\"prompt_tokens\":");
    put_u64(out, prompt.into());
    out.extend_from_slice(b",\"total_tokens\":");
    put_u64(out, u64::from(prompt) + u64::from(completion));
    out.extend_from_slice(b",\"completion_tokens\":");
    put_u64(out, completion.into());
    if let Some(cached) = r.cached_tokens {
        out.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
        put_u64(out, cached.into());
        out.extend_from_slice(b"}");
    }
    out.extend_from_slice(b"}");
}

/// A chat delta's (or message's) text fields for tokens `first..end`: those before
/// `reasoning_tokens` under the flavour's reasoning key, then the rest as `content`; an event
/// with no token at all is `"content":""`.
#[inline]
pub(super) fn put_text(out: &mut Vec<u8>, r: &Reply, first: u32, end: u32) {
    if r.reasoning_tokens <= first {
        // Every token of the event is content (always so without reasoning).
        out.extend_from_slice(b"\"content\":\"");
        put_words(out, first, end);
        out.extend_from_slice(b"\"");
        return;
    }
    let cut = r.reasoning_tokens.min(end);
    if cut > first {
        out.extend_from_slice(match r.flavor {
            Flavor::Vllm => b"\"reasoning\":\"",
            Flavor::LlamaCpp => b"\"reasoning_content\":\"",
        });
        put_words(out, first, cut);
        out.extend_from_slice(b"\"");
        if cut == end {
            return;
        }
        out.extend_from_slice(b",");
    }
    out.extend_from_slice(b"\"content\":\"");
    put_words(out, cut, end);
    out.extend_from_slice(b"\"");
}

pub(super) fn put_words(out: &mut Vec<u8>, first: u32, end: u32) {
    for i in first..end {
        out.extend_from_slice(WORDS[i as usize % WORDS.len()].as_bytes());
    }
}

/// Decimal without allocation (what `itoa` does).
pub(crate) fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Lower-case hex, shortest form (chunk sizes).
fn put_hex(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = HEX[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Exactly 16 lower-case hex digits (response ids, like vLLM's).
pub(super) fn put_hex16(out: &mut Vec<u8>, v: u64) {
    // Built on the stack and appended once: a push per digit was 190 instructions an event.
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((v >> ((15 - i) * 4)) & 0xf) as usize];
    }
    out.extend_from_slice(&digits);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `s` as the inside of a JSON string.
pub(super) fn put_json_str(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x00..=0x1f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
            _ => out.push(b),
        }
    }
}

/// Tool-call argument token `i` of `n`, as raw JSON text.
fn arg_piece(i: u32, n: u32) -> &'static str {
    match (i, n) {
        (_, 1) => "{}",
        (0, _) => "{\"input\":\"",
        (i, n) if i + 1 == n => "\"}",
        (i, _) => WORDS[i as usize % WORDS.len()],
    }
}

/// Tool-call argument tokens `first..end`: escaped as a JSON string's inside, or raw.
pub(crate) fn put_args(out: &mut Vec<u8>, r: &Reply, first: u32, end: u32, escaped: bool) {
    for i in first..end {
        let piece = arg_piece(i, r.completion_tokens);
        match escaped {
            true => put_json_str(out, piece),
            false => out.extend_from_slice(piece.as_bytes()),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A reply as vLLM's capture has it (`fixtures/sse/vllm-cpu`); other tests override fields.
    pub(in crate::sim::format) fn reply(api: Api) -> Reply<'static> {
        Reply {
            api,
            seq: 0xab,
            created_s: 1_795_959_947,
            model: "tiny-llama",
            prompt_tokens: 19,
            completion_tokens: 8,
            include_usage: true,
            continuous_usage: false,
            cached_tokens: None,
            flavor: Flavor::Vllm,
            reasoning_tokens: 0,
            tool: None,
            tokens_per_event: 1,
        }
    }

    fn text(v: &[u8]) -> &str {
        std::str::from_utf8(v).unwrap()
    }

    #[test]
    fn reasoning_comes_first_under_the_flavours_key_then_content() {
        let json = |ev: &[u8]| -> serde_json::Value {
            let line = text(ev).trim_end().strip_prefix("data: ").unwrap();
            serde_json::from_str(line).unwrap()
        };
        for (flavor, key) in [
            (Flavor::Vllm, "reasoning"),
            (Flavor::LlamaCpp, "reasoning_content"),
        ] {
            let r = Reply {
                reasoning_tokens: 3,
                flavor,
                ..reply(Api::Chat)
            };
            let mut ev = vec![];
            // Tokens 0..2: reasoning only; 2..4 straddles the cut; 4..6 content only.
            let delta = |ev: &mut Vec<u8>, first| {
                content_event(ev, &r, first, 2, 1);
                json(ev)["choices"][0]["delta"].clone()
            };
            assert_eq!(delta(&mut ev, 0), serde_json::json!({key: " lorem ipsum"}));
            assert_eq!(
                delta(&mut ev, 2),
                serde_json::json!({key: " dolor", "content": " sit"})
            );
            assert_eq!(
                delta(&mut ev, 4),
                serde_json::json!({"content": " amet sed"})
            );
            whole_body(&mut ev, &r, 1);
            let whole: serde_json::Value = serde_json::from_slice(&ev).unwrap();
            let message = &whole["choices"][0]["message"];
            assert_eq!(message[key], " lorem ipsum dolor", "{flavor:?}");
            assert_eq!(message["content"], " sit amet sed do eius");
            // Completions have no reasoning field: every token is text.
            let c = Reply {
                api: Api::Completions,
                ..r
            };
            content_event(&mut ev, &c, 0, 2, 1);
            assert!(!text(&ev).contains("reasoning"), "{}", text(&ev));
        }
    }

    #[test]
    fn numbers_format_like_std() {
        for v in [0u64, 7, 10, 99, 12345, u64::MAX] {
            let mut out = vec![];
            put_u64(&mut out, v);
            assert_eq!(text(&out), v.to_string());
            out.clear();
            put_hex(&mut out, v);
            assert_eq!(text(&out), format!("{v:x}"));
        }
        let mut out = vec![];
        put_hex16(&mut out, 0xab);
        assert_eq!(text(&out), "00000000000000ab");
    }

    #[test]
    fn role_event_matches_vllm_shape() {
        let mut ev = vec![];
        role_event(&mut ev, &reply(Api::Chat), 42);
        assert_eq!(
            text(&ev),
            "data: {\"id\":\"chatcmpl-00000000000000ab\",\"object\":\"chat.completion.chunk\",\
\"created\":1795959947,\"model\":\"tiny-llama\",\"choices\":[{\"index\":0,\"delta\":\
{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\
\"prompt_token_ids\":null,\"prompt_text\":null,\"ringbench_ns\":42}\n\n"
        );
    }

    #[test]
    fn chat_content_events_and_finish() {
        let r = reply(Api::Chat);
        let mut ev = vec![];
        content_event(&mut ev, &r, 0, 1, 5);
        assert!(text(&ev).contains(
            "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" lorem\"},\"logprobs\":null,\
\"finish_reason\":null,\"token_ids\":null}],\"ringbench_ns\":5}\n\n"
        ));
        content_event(&mut ev, &r, 6, 4, 6);
        assert!(text(&ev).contains(
            "{\"content\":\" do eius\"},\"logprobs\":null,\"finish_reason\":\"length\",\
\"stop_reason\":null,\"token_ids\":null}]"
        ));
    }

    #[test]
    fn completions_event_shape() {
        let mut ev = vec![];
        content_event(&mut ev, &reply(Api::Completions), 1, 1, 9);
        assert_eq!(
            text(&ev),
            "data: {\"id\":\"cmpl-00000000000000ab\",\"object\":\"text_completion\",\
\"created\":1795959947,\"model\":\"tiny-llama\",\"choices\":[{\"index\":0,\"text\":\" ipsum\",\
\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null,\"prompt_token_ids\":null,\
\"token_ids\":null}],\"ringbench_ns\":9}\n\n"
        );
    }

    #[test]
    fn usage_event_and_continuous_usage() {
        let mut r = reply(Api::Chat);
        let mut ev = vec![];
        usage_event(&mut ev, &r, 1);
        assert!(text(&ev).contains(
            "\"choices\":[],\"usage\":{\"prompt_tokens\":19,\"total_tokens\":27,\
\"completion_tokens\":8},\"system_fingerprint\":\"ringbench-sim\",\"ringbench_ns\":1}"
        ));
        r.continuous_usage = true;
        content_event(&mut ev, &r, 2, 1, 1);
        assert!(text(&ev).contains(
            "\"token_ids\":null}],\"usage\":{\"prompt_tokens\":19,\"total_tokens\":22,\
\"completion_tokens\":3},\"ringbench_ns\":1}"
        ));
    }

    #[test]
    fn every_event_is_valid_json_with_stamp_last() {
        let r = reply(Api::Chat);
        let mut ev = vec![];
        usage_event(&mut ev, &r, 77);
        let json = &ev[b"data: ".len()..ev.len() - 2];
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        assert_eq!(v["ringbench_ns"], 77);
        assert!(text(json).ends_with(",\"ringbench_ns\":77}"));
    }

    #[test]
    fn chunk_framing_and_tail() {
        let mut out = vec![];
        chunk(&mut out, b"data: x\n\n");
        stream_tail(&mut out);
        assert_eq!(
            text(&out),
            "9\r\ndata: x\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn whole_bodies_parse() {
        let mut body = vec![];
        whole_body(&mut body, &reply(Api::Chat), 3);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .len(),
            39
        );
        assert_eq!(v["usage"]["completion_tokens"], 8);
        whole_body(&mut body, &reply(Api::Completions), 3);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert!(v["choices"][0]["text"].is_string());
    }

    #[test]
    fn model_names_are_escaped() {
        let mut body = vec![];
        models_body(&mut body, "a\"b\\c\n", 1, 0);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["data"][0]["id"], "a\"b\\c\n");
        assert!(v["data"][0].get("max_model_len").is_none());
        models_body(&mut body, "m", 1, 2048);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["data"][0]["max_model_len"], 2048);
        version_body(&mut body);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["version"], SIM_VERSION);
        props_body(&mut body, "m", 4096, 2);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["default_generation_settings"]["n_ctx"], 4096);
        assert_eq!(
            (v["total_slots"].as_u64(), v["build_info"].as_str()),
            (Some(2), Some(SIM_VERSION))
        );
        props_body(&mut body, "m", 0, 1);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(v["default_generation_settings"].get("n_ctx").is_none());
        error_body(&mut body, Status::NotFound, "no route");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], 404);
    }

    #[test]
    fn fixed_response_head() {
        let mut out = vec![];
        fixed_response(&mut out, Status::Ok, b"{}", true, b"");
        assert_eq!(
            text(&out),
            "HTTP/1.1 200 OK\r\nserver: ringbench-sim\r\ncontent-type: application/json\r\n\
connection: close\r\ncontent-length: 2\r\n\r\n{}"
        );
    }
}
