//! llama.cpp's `llama-server` wire format for streamed completions (`--flavor llama-cpp`), as
//! captured in `tests/data/sse/llama-cpp-server/`: its head (`Server: llama.cpp`,
//! `Keep-Alive` although it closes after every stream), a chat role event whose `content` is
//! `null`, content events with `finish_reason` first and no `logprobs`, the finish in an event
//! of its own (`"delta":{}` for chat; `"text":""` carrying the usage for completions), chat
//! usage in a last event with empty `choices` (key order `completion_tokens, prompt_tokens,
//! total_tokens`, always with `prompt_tokens_details.cached_tokens`). Every event still ends
//! with the `ringbench_ns` stamp. A chat tool call is llama.cpp's `tool_calls` delta (no
//! `content` beside it, `index` first, a 32-character id) and ends `finish_reason:
//! "tool_calls"` in an event of its own, then the same usage event. Like `format.rs`, it
//! appends to caller-owned buffers and reads no clock.

use super::{put_hex16, put_json_str, put_text, put_u64, put_words, Api, Reply};

pub(super) const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: llama.cpp\r\n\
Access-Control-Allow-Origin: \r\nX-Accel-Buffering: no\r\nContent-Type: text/event-stream\r\n\
Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n";
pub(super) const HEAD_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: llama.cpp\r\n\
Access-Control-Allow-Origin: \r\nX-Accel-Buffering: no\r\nContent-Type: text/event-stream\r\n\
Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

/// The chat role event: `"delta":{"role":"assistant","content":null}`.
pub(super) fn role_event(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    ev.clear();
    ev.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,");
    ev.extend_from_slice(b"\"delta\":{\"role\":\"assistant\",\"content\":null}}]");
    suffix(ev, r, None, stamp_ns);
}

/// Tokens `first..end` without a finish reason (it comes in `finish_event`).
pub(super) fn content_event(ev: &mut Vec<u8>, r: &Reply, first: u32, end: u32, stamp_ns: u64) {
    ev.clear();
    match r.api {
        Api::Chat => {
            ev.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,");
            if r.reasoning_tokens <= first {
                ev.extend_from_slice(b"\"delta\":{\"content\":\"");
                put_words(ev, first, end);
                ev.extend_from_slice(b"\"}}]");
            } else {
                ev.extend_from_slice(b"\"delta\":{");
                put_text(ev, r, first, end);
                ev.extend_from_slice(b"}}]");
            }
        }
        _ => {
            ev.extend_from_slice(b"data: {\"choices\":[{\"text\":\"");
            put_words(ev, first, end);
            ev.extend_from_slice(b"\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]");
        }
    }
    suffix(ev, r, None, stamp_ns);
}

/// The event that ends the choice; for completions it carries the usage when asked for.
pub(super) fn finish_event(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    ev.clear();
    match r.api {
        Api::Chat => {
            ev.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":\"length\",");
            ev.extend_from_slice(b"\"index\":0,\"delta\":{}}]");
            suffix(ev, r, None, stamp_ns);
        }
        _ => {
            ev.extend_from_slice(b"data: {\"choices\":[{\"text\":\"\",\"index\":0,");
            ev.extend_from_slice(b"\"logprobs\":null,\"finish_reason\":\"length\"}]");
            suffix(ev, r, r.include_usage.then_some(r), stamp_ns);
        }
    }
}

/// A chat tool call's first event, as llama.cpp's `common_chat_msg_diff_to_json_oaicompat`
/// writes it: no `content` beside `tool_calls`, whose delta is `index` first, then an `id`
/// (llama.cpp's are 32 random letters and digits), `type`, the name and empty arguments.
pub(super) fn tool_head(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    ev.clear();
    ev.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,");
    ev.extend_from_slice(b"\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"");
    put_hex16(ev, r.seq);
    put_hex16(ev, r.seq.rotate_left(32) ^ r.created_s);
    ev.extend_from_slice(b"\",\"type\":\"function\",\"function\":{\"name\":\"");
    put_json_str(ev, r.tool.unwrap_or_default());
    ev.extend_from_slice(b"\",\"arguments\":\"\"}}]}}]");
    suffix(ev, r, None, stamp_ns);
}

/// Tool-call argument tokens `first..end`: `{"index":0,"function":{"arguments":".."}}`.
pub(super) fn tool_args(ev: &mut Vec<u8>, r: &Reply, first: u32, end: u32, stamp_ns: u64) {
    ev.clear();
    ev.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,");
    ev.extend_from_slice(b"\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"");
    super::put_args(ev, r, first, end, true);
    ev.extend_from_slice(b"\"}}]}}]");
    suffix(ev, r, None, stamp_ns);
}

/// The event that ends a tool call: `finish_reason: "tool_calls"`, `"delta":{}`.
pub(super) fn tool_finish(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    ev.clear();
    ev.extend_from_slice(b"data: {\"choices\":[{\"finish_reason\":\"tool_calls\",");
    ev.extend_from_slice(b"\"index\":0,\"delta\":{}}]");
    suffix(ev, r, None, stamp_ns);
}

/// Chat's usage event (empty `choices`); `false` for completions, whose usage rode on the
/// finish event.
pub(super) fn usage_event(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) -> bool {
    if r.api == Api::Completions {
        return false;
    }
    ev.clear();
    ev.extend_from_slice(b"data: {\"choices\":[]");
    suffix(ev, r, Some(r), stamp_ns);
    true
}

/// The fields after `choices`, in llama.cpp's order: chat `created, id, model,
/// system_fingerprint, object[, usage]`; completions `created, model, system_fingerprint,
/// object[, usage], id`.
fn suffix(ev: &mut Vec<u8>, r: &Reply, usage: Option<&Reply>, stamp_ns: u64) {
    ev.extend_from_slice(b",\"created\":");
    put_u64(ev, r.created_s);
    if r.api == Api::Chat {
        id(ev, r);
    }
    ev.extend_from_slice(b",\"model\":\"");
    put_json_str(ev, r.model);
    ev.extend_from_slice(b"\",\"system_fingerprint\":\"b0-unknown\",\"object\":\"");
    ev.extend_from_slice(match r.api {
        Api::Chat => b"chat.completion.chunk",
        _ => b"text_completion",
    });
    ev.extend_from_slice(b"\"");
    if let Some(u) = usage {
        ev.extend_from_slice(b",\"usage\":{\"completion_tokens\":");
        put_u64(ev, u.completion_tokens.into());
        ev.extend_from_slice(b",\"prompt_tokens\":");
        put_u64(ev, u.prompt_tokens.into());
        ev.extend_from_slice(b",\"total_tokens\":");
        put_u64(
            ev,
            u64::from(u.prompt_tokens) + u64::from(u.completion_tokens),
        );
        ev.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
        put_u64(ev, u.cached_tokens.unwrap_or(0).into());
        ev.extend_from_slice(b"}}");
    }
    if r.api == Api::Completions {
        id(ev, r);
    }
    ev.extend_from_slice(b",\"ringbench_ns\":");
    put_u64(ev, stamp_ns);
    ev.extend_from_slice(b"}\n\n");
}

fn id(ev: &mut Vec<u8>, r: &Reply) {
    ev.extend_from_slice(b",\"id\":\"chatcmpl-");
    put_hex16(ev, r.seq);
    ev.extend_from_slice(b"\"");
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::plan::sim::Flavor;

    /// The vLLM test reply, made llama.cpp's capture (`chat_stream_usage`, two tokens).
    fn reply(api: Api) -> Reply<'static> {
        Reply {
            created_s: 1_795_960_213,
            completion_tokens: 2,
            cached_tokens: Some(18),
            flavor: Flavor::LlamaCpp,
            ..super::super::tests::reply(api)
        }
    }

    /// The events of one whole streamed response, as the connection writes them.
    fn stream(api: Api) -> Vec<serde_json::Value> {
        let r = reply(api);
        let mut ev = vec![];
        let mut all = vec![];
        let mut keep = |ev: &Vec<u8>| {
            let text = std::str::from_utf8(ev).unwrap();
            let data = text.strip_prefix("data: ").unwrap().trim_end();
            all.push(serde_json::from_str::<serde_json::Value>(data).unwrap());
        };
        if api == Api::Chat {
            role_event(&mut ev, &r, 1);
            keep(&ev);
        }
        for i in 0..2 {
            content_event(&mut ev, &r, i, 1, 2);
            keep(&ev);
        }
        if finish_event(&mut ev, &r, 3) {
            keep(&ev);
        }
        if usage_event(&mut ev, &r, 4) {
            keep(&ev);
        }
        all
    }

    #[test]
    fn chat_has_the_shape_of_the_capture() {
        let evs = stream(Api::Chat);
        assert_eq!(evs.len(), 5);
        assert!(evs[0]["choices"][0]["delta"]["content"].is_null());
        assert_eq!(evs[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(evs[1]["choices"][0]["delta"]["content"], " lorem");
        assert!(evs[2]["choices"][0]["finish_reason"].is_null());
        assert_eq!(evs[3]["choices"][0]["finish_reason"], "length");
        assert_eq!(evs[3]["choices"][0]["delta"], serde_json::json!({}));
        assert_eq!(evs[4]["choices"], serde_json::json!([]));
        assert_eq!(
            evs[4]["usage"]["prompt_tokens_details"]["cached_tokens"],
            18
        );
        assert_eq!(evs[4]["usage"]["total_tokens"], 21);
        assert_eq!(evs[4]["system_fingerprint"], "b0-unknown");
        // Key order as llama.cpp writes it.
        let mut ev = vec![];
        role_event(&mut ev, &reply(Api::Chat), 7);
        let text = String::from_utf8(ev).unwrap();
        assert!(
            text.starts_with("data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\"")
        );
        assert!(
            text.contains("],\"created\":1795960213,\"id\":\"chatcmpl-"),
            "{text}"
        );
    }

    #[test]
    fn tool_calls_have_llama_cpps_delta_shape() {
        let r = Reply {
            tool: Some("get_weather"),
            completion_tokens: 3,
            ..reply(Api::Chat)
        };
        let mut ev = vec![];
        let json = |ev: &Vec<u8>| -> serde_json::Value {
            let text = std::str::from_utf8(ev).unwrap();
            serde_json::from_str(text.strip_prefix("data: ").unwrap().trim_end()).unwrap()
        };
        // Through the format's dispatch, as the connection writes a tool call.
        assert!(open_event(&mut ev, &r, 0, 1));
        assert!(json(&ev)["choices"][0]["delta"]["content"].is_null());
        assert!(open_event(&mut ev, &r, 1, 1));
        let text = String::from_utf8(ev.clone()).unwrap();
        assert!(
            text.contains("\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\""),
            "{text}"
        );
        let head = json(&ev);
        let call = &head["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["id"].as_str().unwrap().len(), 32);
        assert_eq!(call["type"], "function");
        assert_eq!(call["function"]["name"], "get_weather");
        assert_eq!(call["function"]["arguments"], "");
        assert!(head["choices"][0]["delta"].get("content").is_none());
        assert!(!open_event(&mut ev, &r, 2, 1));
        let mut args = String::new();
        for i in 0..3 {
            content_event(&mut ev, &r, i, 1, 2);
            let v = json(&ev);
            let call = &v["choices"][0]["delta"]["tool_calls"][0];
            assert!(call.get("id").is_none() && call["function"].get("name").is_none());
            assert!(v["choices"][0]["finish_reason"].is_null());
            args.push_str(call["function"]["arguments"].as_str().unwrap());
        }
        let args: serde_json::Value = serde_json::from_str(&args).unwrap();
        assert!(args.is_object(), "{args}");
        assert!(finish_event(&mut ev, &r, 3));
        let end = json(&ev);
        assert_eq!(end["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(end["choices"][0]["delta"], serde_json::json!({}));
        assert!(usage_event(&mut ev, &r, 4));
        let usage = json(&ev);
        assert_eq!(usage["system_fingerprint"], "b0-unknown");
        assert_eq!(usage["usage"]["completion_tokens"], 3);
    }

    #[test]
    fn completions_carry_the_usage_on_the_finish_event() {
        let evs = stream(Api::Completions);
        assert_eq!(evs.len(), 3);
        assert_eq!(evs[0]["choices"][0]["text"], " lorem");
        assert_eq!(evs[2]["choices"][0]["text"], "");
        assert_eq!(evs[2]["choices"][0]["finish_reason"], "length");
        assert_eq!(evs[2]["usage"]["completion_tokens"], 2);
        assert_eq!(evs[2]["object"], "text_completion");
    }
}
