//! Part of stage 5 (worker → http → sse → **extract** → record): one payload of OpenAI's
//! Responses API (`/v1/responses`), already on simd-json's tape. A streamed event is named
//! by its JSON `type` (the SSE `event:` line says the same and is dropped by the splitter);
//! a non-streamed answer is the response object, whose `output[]` items hold the text.
//! Like the rest of `extract` it reads numbers out of the tape, never keeps a string, and
//! does no I/O.

use simd_json::prelude::*;
use simd_json::tape::{Object, Value};

use super::{as_u32, is_str, take, visible, EventInfo, Seen, Usage};

/// One Responses event or response object.
pub(super) fn read(obj: &Object<'_, '_>, mut out: Option<&mut Vec<u8>>) -> EventInfo {
    let mut info = EventInfo::default();
    let (mut kind, mut delta, mut item, mut response) = (None, None, None, None);
    let (mut output, mut usage, mut status) = (None, None, None);
    let mut seen = Seen::default();
    for (key, v) in obj.iter() {
        match key {
            "type" if seen.first(0) => kind = Some(v),
            "delta" if seen.first(1) => delta = Some(v),
            "item" if seen.first(2) => item = v.as_object(),
            "response" if seen.first(3) => response = v.as_object(),
            "error" if seen.first(4) => info.error = !v.is_null(),
            "output" if seen.first(5) => output = Some(v),
            "usage" if seen.first(6) => usage = v.as_object(),
            "status" if seen.first(7) => status = Some(v),
            "ringbench_ns" if seen.first(8) => info.server_mono_ns = v.as_u64(),
            // A chat chunk (or body): another API's answer.
            "choices" if seen.first(9) => info.wrong_api = true,
            _ => {}
        }
    }
    let Some(kind) = kind.and_then(|k| k.into_string()) else {
        match output {
            Some(output) => read_object(output, usage, status, &mut info, &mut out),
            None => info.wrong_api |= !info.error,
        }
        return info;
    };
    match kind {
        "response.output_text.delta" => {
            info.content_bytes = take(delta, &mut out);
            info.visible = delta.is_some_and(|d| visible(&d));
        }
        // OpenAI's reasoning events; vLLM's older `response.reasoning.delta` too.
        "response.reasoning_text.delta"
        | "response.reasoning_summary_text.delta"
        | "response.reasoning.delta" => info.reasoning_bytes = take(delta, &mut out),
        "response.output_item.added" => {
            if let Some(item) = item.filter(|i| is_str(i.get("type"), "function_call")) {
                info.tool_calls = 1;
                info.tool_call_bytes = take(item.get("name"), &mut out);
            }
        }
        "response.function_call_arguments.delta" => info.tool_call_bytes = take(delta, &mut out),
        // The stream's last event (no `[DONE]` follows): an answer cut at
        // `max_output_tokens` ends `response.completed` (status `incomplete`) or
        // `response.incomplete`.
        "response.completed" | "response.incomplete" => {
            info.finish = true;
            info.usage = response
                .and_then(|r| r.get("usage"))
                .and_then(|u| u.as_object())
                .map(read_usage);
        }
        "response.failed" | "error" => info.error = true,
        // Anthropic's Messages events answering a Responses request.
        k if k.starts_with("message_") || k.starts_with("content_block_") => info.wrong_api = true,
        _ => {}
    }
    info
}

/// A non-streamed response object: `output[]` items (`message` parts of type
/// `output_text`, `reasoning` items, `function_call` items) and `usage`.
fn read_object(
    output: Value<'_, '_>,
    usage: Option<Object<'_, '_>>,
    status: Option<Value<'_, '_>>,
    info: &mut EventInfo,
    out: &mut Option<&mut Vec<u8>>,
) {
    let status = status.and_then(|s| s.into_string());
    info.finish = matches!(status, Some("completed" | "incomplete"));
    info.error |= status == Some("failed");
    info.usage = usage.map(read_usage);
    let Some(items) = output.as_array() else {
        return;
    };
    for item in items.iter() {
        let Some(item) = item.as_object() else {
            continue;
        };
        let kind = item.get("type").and_then(|t| t.into_string());
        match kind {
            Some("message") | Some("reasoning") => {
                let parts = item.get("content").and_then(|c| c.as_array());
                for part in parts.iter().flat_map(|p| p.iter()) {
                    let Some(part) = part.as_object() else {
                        continue;
                    };
                    let text = part.get("text");
                    if kind == Some("message") && is_str(part.get("type"), "output_text") {
                        info.content_bytes = info.content_bytes.saturating_add(take(text, out));
                        info.visible |= text.is_some_and(|t| visible(&t));
                    } else if kind == Some("reasoning") {
                        info.reasoning_bytes = info.reasoning_bytes.saturating_add(take(text, out));
                    }
                }
            }
            Some("function_call") => {
                info.tool_calls = info.tool_calls.saturating_add(1);
                let bytes =
                    take(item.get("name"), out).saturating_add(take(item.get("arguments"), out));
                info.tool_call_bytes = info.tool_call_bytes.saturating_add(bytes);
            }
            _ => {}
        }
    }
}

/// `input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`.
fn read_usage(usage: Object<'_, '_>) -> Usage {
    let cached = usage
        .get("input_tokens_details")
        .and_then(|d| d.as_object())
        .and_then(|d| as_u32(d.get("cached_tokens")));
    Usage {
        prompt_tokens: as_u32(usage.get("input_tokens")),
        completion_tokens: as_u32(usage.get("output_tokens")),
        cached_tokens: cached,
    }
}
