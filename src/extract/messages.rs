//! Part of stage 5 (worker → http → sse → **extract** → record): one payload of Anthropic's
//! Messages API (`/v1/messages`), already on simd-json's tape. Streamed events are named by
//! their JSON `type` (`message_start`, `content_block_start`, `content_block_delta`,
//! `message_delta`, `message_stop`, `ping`, `error`); a non-streamed answer is the message
//! itself (`type: "message"`, `content[]` blocks). No `[DONE]` ends the stream: its framing
//! does. Like the rest of `extract` it reads numbers out of the tape, never keeps a string,
//! and does no I/O.
//!
//! Anthropic's `input_tokens` leaves out the prompt tokens read from or written to its cache
//! (`cache_read_input_tokens`, `cache_creation_input_tokens`); the prompt tokens are their sum,
//! as chat's `prompt_tokens` counts cached ones (llama.cpp's `message_start` says 1 + 23 read
//! from cache where vLLM says 24 for the same prompt).

use simd_json::prelude::*;
use simd_json::tape::{Object, Value};

use super::{as_u32, is_str, take, visible, EventInfo, Seen, Usage};

/// One Messages event or non-streamed message.
pub(super) fn read(obj: &Object<'_, '_>, mut out: Option<&mut Vec<u8>>) -> EventInfo {
    let mut info = EventInfo::default();
    let (mut kind, mut delta, mut block, mut message) = (None, None, None, None);
    let (mut usage, mut content, mut stop_reason) = (None, None, None);
    let mut seen = Seen::default();
    for (key, v) in obj.iter() {
        match key {
            "type" if seen.first(0) => kind = v.into_string(),
            "delta" if seen.first(1) => delta = v.as_object(),
            "content_block" if seen.first(2) => block = v.as_object(),
            "message" if seen.first(3) => message = v.as_object(),
            "usage" if seen.first(4) => usage = v.as_object(),
            "error" if seen.first(5) => info.error = !v.is_null(),
            "content" if seen.first(6) => content = Some(v),
            "stop_reason" if seen.first(7) => stop_reason = Some(v),
            "ringbench_ns" if seen.first(8) => info.server_mono_ns = v.as_u64(),
            // A chat chunk (or body): another API's answer.
            "choices" if seen.first(9) => info.wrong_api = true,
            _ => {}
        }
    }
    match kind {
        Some("content_block_delta") => {
            let Some(delta) = delta else { return info };
            match delta.get("type").and_then(|t| t.into_string()) {
                Some("text_delta") => {
                    let text = delta.get("text");
                    info.content_bytes = take(text, &mut out);
                    info.visible = text.is_some_and(|t| visible(&t));
                }
                Some("thinking_delta") => {
                    info.reasoning_bytes = take(delta.get("thinking"), &mut out)
                }
                Some("input_json_delta") => {
                    info.tool_call_bytes = take(delta.get("partial_json"), &mut out)
                }
                _ => {}
            }
        }
        Some("content_block_start") => {
            if let Some(block) = block.filter(|b| is_str(b.get("type"), "tool_use")) {
                info.tool_calls = 1;
                info.tool_call_bytes = take(block.get("name"), &mut out);
            }
        }
        // Its `output_tokens` is a count so far (0 or 1), not the final one.
        Some("message_start") => {
            info.usage = message
                .and_then(|m| m.get("usage"))
                .and_then(|u| u.as_object())
                .map(|u| read_usage(u, false));
        }
        Some("message_delta") => {
            info.usage = usage.map(|u| read_usage(u, true));
            info.finish = delta.is_some_and(|d| d.get("stop_reason").is_some_and(|r| !r.is_null()));
        }
        Some("error") => info.error = true,
        // The non-streamed answer.
        Some("message") => {
            info.usage = usage.map(|u| read_usage(u, true));
            info.finish = stop_reason.is_some_and(|r| !r.is_null());
            if let Some(blocks) = content {
                read_blocks(blocks, &mut info, &mut out);
            }
        }
        // The Responses API's events answering a Messages request.
        Some(k) if k.starts_with("response.") => info.wrong_api = true,
        Some(_) => {}
        None => info.wrong_api |= !info.error,
    }
    info
}

/// A message's `content[]`: `text` blocks are content, `thinking` reasoning, `tool_use` a
/// call (its name's and its input's strings' bytes: the input is an object here, not the
/// text the stream sends).
fn read_blocks(blocks: Value<'_, '_>, info: &mut EventInfo, out: &mut Option<&mut Vec<u8>>) {
    let Some(blocks) = blocks.as_array() else {
        return;
    };
    for block in blocks.iter() {
        let Some(block) = block.as_object() else {
            continue;
        };
        match block.get("type").and_then(|t| t.into_string()) {
            Some("text") => {
                let text = block.get("text");
                info.content_bytes = info.content_bytes.saturating_add(take(text, out));
                info.visible |= text.is_some_and(|t| visible(&t));
            }
            Some("thinking") => {
                info.reasoning_bytes = info
                    .reasoning_bytes
                    .saturating_add(take(block.get("thinking"), out));
            }
            Some("tool_use") => {
                info.tool_calls = info.tool_calls.saturating_add(1);
                let bytes = take(block.get("name"), out)
                    .saturating_add(block.get("input").map_or(0, strings_len));
                info.tool_call_bytes = info.tool_call_bytes.saturating_add(bytes);
            }
            _ => {}
        }
    }
}

/// Bytes of every key and string in a value, at most 16 levels down.
fn strings_len(v: Value<'_, '_>) -> u32 {
    fn walk(v: Value<'_, '_>, depth: u8) -> u32 {
        if depth == 16 {
            return 0;
        }
        if let Some(s) = v.as_str() {
            return u32::try_from(s.len()).unwrap_or(u32::MAX);
        }
        if let Some(a) = v.as_array() {
            return a
                .iter()
                .fold(0u32, |n, v| n.saturating_add(walk(v, depth + 1)));
        }
        if let Some(o) = v.as_object() {
            return o.iter().fold(0u32, |n, (k, v)| {
                let k = u32::try_from(k.len()).unwrap_or(u32::MAX);
                n.saturating_add(k).saturating_add(walk(v, depth + 1))
            });
        }
        0
    }
    walk(v, 0)
}

/// Prompt tokens (`input_tokens` plus the cache's, when `input_tokens` is given), cached
/// tokens (`cache_read_input_tokens`), and `output_tokens` when `output` (not at
/// `message_start`, where it is a count so far).
fn read_usage(usage: Object<'_, '_>, output: bool) -> Usage {
    let cached = as_u32(usage.get("cache_read_input_tokens"));
    let created = as_u32(usage.get("cache_creation_input_tokens"));
    let prompt = as_u32(usage.get("input_tokens")).map(|n| {
        n.saturating_add(cached.unwrap_or(0))
            .saturating_add(created.unwrap_or(0))
    });
    Usage {
        prompt_tokens: prompt,
        completion_tokens: output.then(|| as_u32(usage.get("output_tokens"))).flatten(),
        cached_tokens: cached,
    }
}
