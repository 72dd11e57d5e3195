//! Response bytes of the OpenAI Responses API (`POST /v1/responses`), Anthropic's Messages
//! API (`POST /v1/messages`) and tool calls on any of them and on chat, as captured in
//! `tests/data/apis/` (vLLM's shapes, llama.cpp's where `--flavor llama-cpp` differs). A
//! stream is opening events (`open_event`), one event per content write (`content_event`)
//! and closing events (`close_event`), each SSE event `event: TYPE` + `data: JSON` with the
//! same `type` inside and the `ringbench_ns` stamp as the JSON's last key; no `[DONE]`. Like
//! `format.rs`, it appends to caller-owned buffers and reads no clock.
//!
//! A tool call's arguments are one JSON object whose text is cut into exactly
//! `completion_tokens` pieces (`{"input":"`, words, `"}`), one per token, so the usage's output
//! tokens are the pieces sent.

use super::{put_args, put_hex16, put_json_str, put_u64, put_words, Api, Reply};
use crate::plan::sim::Flavor;

/// The SSE event head: `event: TYPE\ndata: `.
fn head(ev: &mut Vec<u8>, kind: &str) {
    ev.clear();
    ev.extend_from_slice(b"event: ");
    ev.extend_from_slice(kind.as_bytes());
    ev.extend_from_slice(b"\ndata: ");
}

/// `,"ringbench_ns":N}` and the blank line that ends the event.
fn tail(ev: &mut Vec<u8>, stamp_ns: u64) {
    ev.extend_from_slice(b",\"ringbench_ns\":");
    put_u64(ev, stamp_ns);
    ev.extend_from_slice(b"}\n\n");
}

/// The reply's generated text or arguments, tokens `first..end`, inside a JSON string.
fn put_output(out: &mut Vec<u8>, r: &Reply, first: u32, end: u32) {
    match r.tool {
        Some(_) => put_args(out, r, first, end, true),
        None => put_words(out, first, end),
    }
}

fn id(out: &mut Vec<u8>, prefix: &[u8], r: &Reply) {
    out.extend_from_slice(b"\"");
    out.extend_from_slice(prefix);
    put_hex16(out, r.seq);
    out.extend_from_slice(b"\"");
}

/// Opening events before the first content: `false` once `k` is past the last.
pub(crate) fn open_event(ev: &mut Vec<u8>, r: &Reply, k: u32, stamp_ns: u64) -> bool {
    match r.api {
        Api::Chat if k == 0 => super::role_event(ev, r, stamp_ns),
        Api::Chat if k == 1 && r.tool.is_some() => chat_tool_head(ev, r, stamp_ns),
        Api::Responses => return responses_open(ev, r, k, stamp_ns),
        Api::Messages => return messages_open(ev, r, k, stamp_ns),
        _ => return false,
    }
    true
}

/// Closing events after the last content (Responses and Messages; chat and completions end
/// through `finish_event`/`usage_event`): `false` once `k` is past the last.
pub(crate) fn close_event(ev: &mut Vec<u8>, r: &Reply, k: u32, stamp_ns: u64) -> bool {
    match r.api {
        Api::Responses => responses_close(ev, r, k, stamp_ns),
        Api::Messages => messages_close(ev, r, k, stamp_ns),
        _ => false,
    }
}

/// The content event of tokens `first..end` for Responses, Messages and chat tool calls.
pub(super) fn content_event(ev: &mut Vec<u8>, r: &Reply, first: u32, end: u32, stamp_ns: u64) {
    match r.api {
        Api::Responses => responses_delta(ev, r, first, end, stamp_ns),
        Api::Messages => messages_delta(ev, r, first, end, stamp_ns),
        _ => chat_tool_args(ev, r, first, end, stamp_ns),
    }
}

// ---- chat tool calls ----

fn chat_prefix(ev: &mut Vec<u8>, r: &Reply) {
    ev.clear();
    super::event_prefix(ev, r);
}

fn chat_tool_head(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    if r.flavor == Flavor::LlamaCpp {
        return super::llama_cpp::tool_head(ev, r, stamp_ns);
    }
    chat_prefix(ev, r);
    ev.extend_from_slice(b"[{\"index\":0,\"delta\":{\"content\":null,\"tool_calls\":[{\"id\":");
    id(ev, b"chatcmpl-tool-", r);
    ev.extend_from_slice(b",\"type\":\"function\",\"index\":0,\"function\":{\"name\":\"");
    put_json_str(ev, r.tool.unwrap_or_default());
    ev.extend_from_slice(
        b"\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}]",
    );
    super::event_suffix(ev, stamp_ns);
}

fn chat_tool_args(ev: &mut Vec<u8>, r: &Reply, first: u32, end: u32, stamp_ns: u64) {
    if r.flavor == Flavor::LlamaCpp {
        return super::llama_cpp::tool_args(ev, r, first, end, stamp_ns);
    }
    chat_prefix(ev, r);
    ev.extend_from_slice(
        b"[{\"index\":0,\"delta\":{\"content\":null,\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"",
    );
    put_args(ev, r, first, end, true);
    ev.extend_from_slice(b"\"}}]},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}]");
    super::continuous_usage(ev, r, end);
    super::event_suffix(ev, stamp_ns);
}

/// The event that ends a chat tool call: `"delta":{}`, `finish_reason: "tool_calls"`.
pub(super) fn chat_tool_finish(ev: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    if r.flavor == Flavor::LlamaCpp {
        return super::llama_cpp::tool_finish(ev, r, stamp_ns);
    }
    chat_prefix(ev, r);
    ev.extend_from_slice(
        b"[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\",\"stop_reason\":null,\"token_ids\":null}]",
    );
    super::event_suffix(ev, stamp_ns);
}

/// A whole chat message that is a tool call.
pub(super) fn chat_tool_message(body: &mut Vec<u8>, r: &Reply) {
    body.extend_from_slice(b"\"message\":{\"role\":\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":[{\"id\":");
    id(body, b"chatcmpl-tool-", r);
    body.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":\"");
    put_json_str(body, r.tool.unwrap_or_default());
    body.extend_from_slice(b"\",\"arguments\":\"");
    put_args(body, r, 0, r.completion_tokens, true);
    body.extend_from_slice(b"\"}}]}");
}

// ---- Responses ----

/// Events before the first delta: created, in_progress, output_item.added and, for text,
/// content_part.added.
fn responses_opens(r: &Reply) -> u32 {
    if r.tool.is_some() {
        3
    } else {
        4
    }
}

fn responses_open(ev: &mut Vec<u8>, r: &Reply, k: u32, stamp_ns: u64) -> bool {
    if k >= responses_opens(r) {
        return false;
    }
    let llama = r.flavor == Flavor::LlamaCpp;
    let kind = match k {
        0 => "response.created",
        1 => "response.in_progress",
        2 => "response.output_item.added",
        _ => "response.content_part.added",
    };
    head(ev, kind);
    if llama {
        ev.extend_from_slice(b"{\"type\":\"");
        ev.extend_from_slice(kind.as_bytes());
        ev.extend_from_slice(b"\",");
        match k {
            0 | 1 => {
                ev.extend_from_slice(b"\"response\":{\"id\":");
                id(ev, b"resp_", r);
                ev.extend_from_slice(b",\"object\":\"response\",\"status\":\"in_progress\"}");
            }
            2 => {
                ev.extend_from_slice(b"\"item\":");
                output_item(ev, r, false);
            }
            _ => {
                ev.extend_from_slice(b"\"item_id\":");
                id(ev, b"msg_", r);
                ev.extend_from_slice(b",\"part\":{\"type\":\"output_text\",\"text\":\"\"}");
            }
        }
        tail(ev, stamp_ns);
        return true;
    }
    match k {
        0 | 1 => {
            ev.extend_from_slice(b"{\"response\":");
            response_object(ev, r, false);
        }
        2 => {
            ev.extend_from_slice(b"{\"item\":");
            output_item(ev, r, false);
            ev.extend_from_slice(b",\"output_index\":0");
        }
        _ => {
            ev.extend_from_slice(b"{\"content_index\":0,\"item_id\":");
            id(ev, b"msg_", r);
            ev.extend_from_slice(b",\"output_index\":0,\"part\":{\"annotations\":[],\"text\":\"\",\"type\":\"output_text\",\"logprobs\":[]}");
        }
    }
    sequence(ev, k, kind);
    tail(ev, stamp_ns);
    true
}

/// vLLM's `,"sequence_number":N,"type":"KIND"`.
fn sequence(ev: &mut Vec<u8>, n: u32, kind: &str) {
    ev.extend_from_slice(b",\"sequence_number\":");
    put_u64(ev, n.into());
    ev.extend_from_slice(b",\"type\":\"");
    ev.extend_from_slice(kind.as_bytes());
    ev.extend_from_slice(b"\"");
}

fn responses_delta(ev: &mut Vec<u8>, r: &Reply, first: u32, end: u32, stamp_ns: u64) {
    let tool = r.tool.is_some();
    let kind = match tool {
        true => "response.function_call_arguments.delta",
        false => "response.output_text.delta",
    };
    let item: &[u8] = if tool { b"fc_" } else { b"msg_" };
    head(ev, kind);
    if r.flavor == Flavor::LlamaCpp {
        ev.extend_from_slice(b"{\"type\":\"");
        ev.extend_from_slice(kind.as_bytes());
        ev.extend_from_slice(b"\",\"item_id\":");
        id(ev, item, r);
        ev.extend_from_slice(b",\"delta\":\"");
        put_output(ev, r, first, end);
        ev.extend_from_slice(b"\"");
        tail(ev, stamp_ns);
        return;
    }
    let seq = responses_opens(r) + first / r.tokens_per_event.max(1);
    if tool {
        ev.extend_from_slice(b"{\"delta\":\"");
        put_output(ev, r, first, end);
        ev.extend_from_slice(b"\",\"item_id\":");
        id(ev, item, r);
        ev.extend_from_slice(b",\"output_index\":0");
    } else {
        ev.extend_from_slice(b"{\"content_index\":0,\"delta\":\"");
        put_output(ev, r, first, end);
        ev.extend_from_slice(b"\",\"item_id\":");
        id(ev, item, r);
        ev.extend_from_slice(b",\"logprobs\":[],\"output_index\":0");
    }
    sequence(ev, seq, kind);
    tail(ev, stamp_ns);
}

fn responses_close(ev: &mut Vec<u8>, r: &Reply, k: u32, stamp_ns: u64) -> bool {
    let tool = r.tool.is_some();
    // Text: output_text.done, content_part.done, output_item.done, completed; a tool call:
    // function_call_arguments.done, output_item.done, completed.
    let step = if tool && k >= 1 { k + 1 } else { k };
    let kind = match (step, tool) {
        (0, false) => "response.output_text.done",
        (0, true) => "response.function_call_arguments.done",
        (1, _) => "response.content_part.done",
        (2, _) => "response.output_item.done",
        (3, _) => "response.completed",
        _ => return false,
    };
    let llama = r.flavor == Flavor::LlamaCpp;
    head(ev, kind);
    if llama {
        ev.extend_from_slice(b"{\"type\":\"");
        ev.extend_from_slice(kind.as_bytes());
        ev.extend_from_slice(b"\",");
    } else {
        ev.extend_from_slice(b"{");
    }
    match step {
        0 => output_done(ev, r, llama, tool),
        1 => {
            if !llama {
                ev.extend_from_slice(b"\"content_index\":0,");
            }
            ev.extend_from_slice(b"\"item_id\":");
            id(ev, b"msg_", r);
            if !llama {
                ev.extend_from_slice(b",\"output_index\":0");
            }
            ev.extend_from_slice(b",\"part\":");
            text_part(ev, r);
        }
        2 => {
            ev.extend_from_slice(b"\"item\":");
            output_item(ev, r, true);
            if !llama {
                ev.extend_from_slice(b",\"output_index\":0");
            }
        }
        _ => {
            ev.extend_from_slice(b"\"response\":");
            response_object(ev, r, true);
        }
    }
    if !llama {
        let seq = responses_opens(r) + r.completion_tokens.div_ceil(r.tokens_per_event.max(1)) + k;
        sequence(ev, seq, kind);
        if step == 0 && tool {
            ev.extend_from_slice(b",\"name\":\"");
            put_json_str(ev, r.tool.unwrap_or_default());
            ev.extend_from_slice(b"\"");
        }
    }
    tail(ev, stamp_ns);
    true
}

/// The first closing event's fields: `output_text.done` (the whole text) or
/// `function_call_arguments.done` (the whole arguments).
fn output_done(ev: &mut Vec<u8>, r: &Reply, llama: bool, tool: bool) {
    if !llama && !tool {
        ev.extend_from_slice(b"\"content_index\":0,");
    }
    if tool {
        ev.extend_from_slice(b"\"arguments\":\"");
        put_output(ev, r, 0, r.completion_tokens);
        ev.extend_from_slice(b"\",");
    }
    ev.extend_from_slice(b"\"item_id\":");
    id(ev, if tool { b"fc_" } else { b"msg_" }, r);
    if !llama && !tool {
        ev.extend_from_slice(b",\"logprobs\":[]");
    }
    if !tool {
        if !llama {
            ev.extend_from_slice(b",\"output_index\":0");
        }
        ev.extend_from_slice(b",\"text\":\"");
        put_output(ev, r, 0, r.completion_tokens);
        ev.extend_from_slice(b"\"");
    } else if !llama {
        ev.extend_from_slice(b",\"output_index\":0");
    }
}

/// The whole text as an `output_text` part.
fn text_part(out: &mut Vec<u8>, r: &Reply) {
    match r.flavor {
        Flavor::Vllm => {
            out.extend_from_slice(b"{\"annotations\":[],\"text\":\"");
            put_words(out, 0, r.completion_tokens);
            out.extend_from_slice(b"\",\"type\":\"output_text\",\"logprobs\":null}");
        }
        Flavor::LlamaCpp => {
            out.extend_from_slice(
                b"{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"",
            );
            put_words(out, 0, r.completion_tokens);
            out.extend_from_slice(b"\"}");
        }
    }
}

/// The reply's one output item: a message or a function call, in progress or done.
fn output_item(out: &mut Vec<u8>, r: &Reply, done: bool) {
    let status: &[u8] = if done { b"completed" } else { b"in_progress" };
    if let Some(name) = r.tool {
        out.extend_from_slice(b"{\"arguments\":\"");
        if done {
            put_output(out, r, 0, r.completion_tokens);
        }
        out.extend_from_slice(b"\",\"call_id\":");
        id(out, b"call_", r);
        out.extend_from_slice(b",\"name\":\"");
        put_json_str(out, name);
        out.extend_from_slice(b"\",\"type\":\"function_call\",\"id\":");
        id(out, b"fc_", r);
        if r.flavor == Flavor::Vllm {
            out.extend_from_slice(b",\"async\":null,\"caller\":null,\"namespace\":null");
        }
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(status);
        out.extend_from_slice(b"\"}");
        return;
    }
    match r.flavor {
        Flavor::Vllm => {
            out.extend_from_slice(b"{\"id\":");
            id(out, b"msg_", r);
            out.extend_from_slice(b",\"content\":[");
            if done {
                text_part(out, r);
            }
            out.extend_from_slice(b"],\"role\":\"assistant\",\"status\":\"");
            out.extend_from_slice(status);
            out.extend_from_slice(b"\",\"type\":\"message\",\"phase\":null}");
        }
        Flavor::LlamaCpp if done => {
            out.extend_from_slice(b"{\"type\":\"message\",\"status\":\"completed\",\"id\":");
            id(out, b"msg_", r);
            out.extend_from_slice(b",\"content\":[");
            text_part(out, r);
            out.extend_from_slice(b"],\"role\":\"assistant\"}");
        }
        Flavor::LlamaCpp => {
            out.extend_from_slice(b"{\"content\":[],\"id\":");
            id(out, b"msg_", r);
            out.extend_from_slice(
                b",\"role\":\"assistant\",\"status\":\"in_progress\",\"type\":\"message\"}",
            );
        }
    }
}

/// The response object: in progress (no output, `usage: null`) or done (output and usage).
fn response_object(out: &mut Vec<u8>, r: &Reply, done: bool) {
    let total = u64::from(r.prompt_tokens) + u64::from(r.completion_tokens);
    let cached = r.cached_tokens.unwrap_or(0);
    if r.flavor == Flavor::LlamaCpp {
        out.extend_from_slice(b"{\"id\":");
        id(out, b"resp_", r);
        out.extend_from_slice(b",\"object\":\"response\",\"created_at\":");
        put_u64(out, r.created_s);
        out.extend_from_slice(b",\"status\":\"completed\",\"model\":\"");
        put_json_str(out, r.model);
        out.extend_from_slice(b"\",\"output\":[");
        output_item(out, r, true);
        out.extend_from_slice(b"],\"usage\":{\"input_tokens\":");
        put_u64(out, r.prompt_tokens.into());
        out.extend_from_slice(b",\"output_tokens\":");
        put_u64(out, r.completion_tokens.into());
        out.extend_from_slice(b",\"total_tokens\":");
        put_u64(out, total);
        out.extend_from_slice(b",\"input_tokens_details\":{\"cached_tokens\":");
        put_u64(out, cached.into());
        out.extend_from_slice(b"}}}");
        return;
    }
    // A text reply always stops at max_output_tokens here: vLLM calls that incomplete.
    let incomplete = done && r.tool.is_none();
    out.extend_from_slice(b"{\"id\":");
    id(out, b"resp_", r);
    out.extend_from_slice(b",\"created_at\":");
    put_u64(out, r.created_s);
    out.extend_from_slice(match incomplete {
        true => b",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}" as &[u8],
        false => b",\"incomplete_details\":null",
    });
    out.extend_from_slice(b",\"instructions\":null,\"metadata\":null,\"model\":\"");
    put_json_str(out, r.model);
    out.extend_from_slice(b"\",\"object\":\"response\",\"output\":[");
    if done {
        output_item(out, r, true);
    }
    out.extend_from_slice(b"],\"parallel_tool_calls\":true,\"temperature\":1.0,\"tool_choice\":\"");
    out.extend_from_slice(if r.tool.is_some() {
        b"required"
    } else {
        b"none"
    });
    out.extend_from_slice(
        b"\",\"tools\":[],\"top_p\":1.0,\"background\":false,\"max_output_tokens\":",
    );
    put_u64(out, r.completion_tokens.into());
    out.extend_from_slice(b",\"max_tool_calls\":null,\"previous_response_id\":null,\"prompt\":null,\"reasoning\":null,\"service_tier\":\"auto\",\"status\":\"");
    out.extend_from_slice(match (done, incomplete) {
        (false, _) => b"in_progress" as &[u8],
        (true, true) => b"incomplete",
        (true, false) => b"completed",
    });
    out.extend_from_slice(
        b"\",\"text\":null,\"top_logprobs\":null,\"truncation\":\"disabled\",\"usage\":",
    );
    if done {
        out.extend_from_slice(b"{\"input_tokens\":");
        put_u64(out, r.prompt_tokens.into());
        out.extend_from_slice(b",\"input_tokens_details\":{\"cached_tokens\":");
        put_u64(out, cached.into());
        out.extend_from_slice(b",\"cache_write_tokens\":0,\"input_tokens_per_turn\":[],\"cached_tokens_per_turn\":[]},\"output_tokens\":");
        put_u64(out, r.completion_tokens.into());
        out.extend_from_slice(b",\"output_tokens_details\":{\"reasoning_tokens\":0,\"tool_output_tokens\":0,\"output_tokens_per_turn\":[],\"tool_output_tokens_per_turn\":[]},\"total_tokens\":");
        put_u64(out, total);
        out.extend_from_slice(b"}");
    } else {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"user\":null,\"presence_penalty\":0.0,\"frequency_penalty\":0.0,\"kv_transfer_params\":null,\"ec_transfer_params\":null,\"input_messages\":null,\"output_messages\":null}");
}

// ---- Messages ----

fn messages_open(ev: &mut Vec<u8>, r: &Reply, k: u32, stamp_ns: u64) -> bool {
    let llama = r.flavor == Flavor::LlamaCpp;
    match k {
        0 => {
            head(ev, "message_start");
            ev.extend_from_slice(b"{\"type\":\"message_start\",\"message\":{\"id\":");
            id(ev, b"chatcmpl-", r);
            ev.extend_from_slice(
                b",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"",
            );
            put_json_str(ev, r.model);
            ev.extend_from_slice(b"\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{");
            input_usage(ev, r);
            ev.extend_from_slice(b",\"output_tokens\":0}}");
        }
        1 => {
            head(ev, "content_block_start");
            ev.extend_from_slice(b"{\"type\":\"content_block_start\",");
            if llama {
                ev.extend_from_slice(b"\"index\":0,");
            }
            ev.extend_from_slice(b"\"content_block\":");
            match r.tool {
                Some(name) => {
                    tool_use_head(ev, r, name);
                    ev.extend_from_slice(b"{}}");
                }
                None => ev.extend_from_slice(b"{\"type\":\"text\",\"text\":\"\"}"),
            }
            if !llama {
                ev.extend_from_slice(b",\"index\":0");
            }
        }
        _ => return false,
    }
    tail(ev, stamp_ns);
    true
}

/// A `tool_use` content block up to its input: `{"type":"tool_use","id":..,"name":..,"input":`.
fn tool_use_head(out: &mut Vec<u8>, r: &Reply, name: &str) {
    out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
    id(out, b"toolu_", r);
    out.extend_from_slice(b",\"name\":\"");
    put_json_str(out, name);
    out.extend_from_slice(b"\",\"input\":");
}

/// The input side of Anthropic usage: vLLM's `input_tokens`; llama.cpp's uncached
/// `input_tokens` after `cache_read_input_tokens`.
fn input_usage(ev: &mut Vec<u8>, r: &Reply) {
    match r.flavor {
        Flavor::Vllm => {
            ev.extend_from_slice(b"\"input_tokens\":");
            put_u64(ev, r.prompt_tokens.into());
        }
        Flavor::LlamaCpp => {
            let cached = r.cached_tokens.unwrap_or(0).min(r.prompt_tokens);
            ev.extend_from_slice(b"\"cache_read_input_tokens\":");
            put_u64(ev, cached.into());
            ev.extend_from_slice(b",\"input_tokens\":");
            put_u64(ev, (r.prompt_tokens - cached).into());
        }
    }
}

fn messages_delta(ev: &mut Vec<u8>, r: &Reply, first: u32, end: u32, stamp_ns: u64) {
    let llama = r.flavor == Flavor::LlamaCpp;
    head(ev, "content_block_delta");
    ev.extend_from_slice(b"{\"type\":\"content_block_delta\",");
    if llama {
        ev.extend_from_slice(b"\"index\":0,");
    }
    match r.tool {
        Some(_) => {
            ev.extend_from_slice(b"\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"")
        }
        None => ev.extend_from_slice(b"\"delta\":{\"type\":\"text_delta\",\"text\":\""),
    }
    put_output(ev, r, first, end);
    ev.extend_from_slice(b"\"}");
    if !llama {
        ev.extend_from_slice(b",\"index\":0");
    }
    tail(ev, stamp_ns);
}

fn messages_close(ev: &mut Vec<u8>, r: &Reply, k: u32, stamp_ns: u64) -> bool {
    match k {
        0 => {
            head(ev, "content_block_stop");
            ev.extend_from_slice(b"{\"type\":\"content_block_stop\",\"index\":0");
        }
        1 => {
            head(ev, "message_delta");
            ev.extend_from_slice(b"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"");
            ev.extend_from_slice(stop_reason(r));
            ev.extend_from_slice(b"\",\"stop_sequence\":null},\"usage\":{");
            if r.flavor == Flavor::Vllm {
                input_usage(ev, r);
                ev.extend_from_slice(b",");
            }
            ev.extend_from_slice(b"\"output_tokens\":");
            put_u64(ev, r.completion_tokens.into());
            ev.extend_from_slice(b"}");
        }
        2 => {
            head(ev, "message_stop");
            ev.extend_from_slice(b"{\"type\":\"message_stop\"");
        }
        _ => return false,
    }
    tail(ev, stamp_ns);
    true
}

fn stop_reason(r: &Reply) -> &'static [u8] {
    match r.tool {
        Some(_) => b"tool_use",
        None => b"max_tokens",
    }
}

// ---- whole (non-streamed) bodies ----

/// The whole Responses or Messages JSON body.
pub(super) fn whole_body(body: &mut Vec<u8>, r: &Reply, stamp_ns: u64) {
    body.clear();
    match r.api {
        Api::Responses => {
            response_object(body, r, true);
            body.pop();
        }
        _ => {
            body.extend_from_slice(b"{\"id\":");
            id(body, b"chatcmpl-", r);
            body.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"content\":[");
            match r.tool {
                Some(name) => {
                    tool_use_head(body, r, name);
                    put_args(body, r, 0, r.completion_tokens, false);
                    body.extend_from_slice(b"}");
                }
                None => {
                    body.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
                    put_words(body, 0, r.completion_tokens);
                    body.extend_from_slice(b"\"}");
                }
            }
            body.extend_from_slice(b"],\"model\":\"");
            put_json_str(body, r.model);
            body.extend_from_slice(b"\",\"stop_reason\":\"");
            body.extend_from_slice(stop_reason(r));
            body.extend_from_slice(b"\",\"usage\":{");
            input_usage(body, r);
            body.extend_from_slice(b",\"output_tokens\":");
            put_u64(body, r.completion_tokens.into());
            body.extend_from_slice(b"}");
        }
    }
    body.extend_from_slice(b",\"ringbench_ns\":");
    put_u64(body, stamp_ns);
    body.extend_from_slice(b"}");
}

/// Anthropic's error body: `{"type":"error","error":{"type":..,"message":..}}`.
pub(crate) fn messages_error_body(body: &mut Vec<u8>, error_type: &str, message: &str) {
    body.clear();
    put_messages_error(body, error_type, message);
    body.push(b'}');
}

/// Anthropic's error object without its closing brace.
fn put_messages_error(out: &mut Vec<u8>, error_type: &str, message: &str) {
    out.extend_from_slice(b"{\"type\":\"error\",\"error\":{\"type\":\"");
    out.extend_from_slice(error_type.as_bytes());
    out.extend_from_slice(b"\",\"message\":\"");
    put_json_str(out, message);
    out.extend_from_slice(b"\"}");
}

/// What a mid-stream failure says (`--fault error_event`).
const MID_STREAM_FAILURE: &str = "simulated failure mid-stream";

/// A failure mid-stream in the reply's API's own event (`--fault error_event`): for
/// Responses an `error` event (`code`, `message`, `param`, `sequence_number`) or, when
/// `failed`, `response.failed` carrying the response with `status: "failed"` and its
/// `error`; for Messages Anthropic's `event: error` (`{"type":"error","error":{..}}`).
/// `false` for chat and completions, whose error event is `data: {"error":..}`.
pub(crate) fn error_event(ev: &mut Vec<u8>, r: &Reply, failed: bool, stamp_ns: u64) -> bool {
    match r.api {
        Api::Responses if failed => {
            head(ev, "response.failed");
            ev.extend_from_slice(b"{\"type\":\"response.failed\",\"response\":{\"id\":");
            id(ev, b"resp_", r);
            ev.extend_from_slice(b",\"object\":\"response\",\"created_at\":");
            put_u64(ev, r.created_s);
            ev.extend_from_slice(
                b",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"",
            );
            put_json_str(ev, MID_STREAM_FAILURE);
            ev.extend_from_slice(b"\"},\"model\":\"");
            put_json_str(ev, r.model);
            ev.extend_from_slice(b"\",\"output\":[],\"usage\":null}");
            error_sequence(ev, r);
        }
        Api::Responses => {
            head(ev, "error");
            ev.extend_from_slice(b"{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"");
            put_json_str(ev, MID_STREAM_FAILURE);
            ev.extend_from_slice(b"\",\"param\":null");
            error_sequence(ev, r);
        }
        Api::Messages => {
            head(ev, "error");
            put_messages_error(ev, "api_error", MID_STREAM_FAILURE);
        }
        _ => return false,
    }
    tail(ev, stamp_ns);
    true
}

/// `,"sequence_number":N` of an event after the opening events and two deltas.
fn error_sequence(ev: &mut Vec<u8>, r: &Reply) {
    ev.extend_from_slice(b",\"sequence_number\":");
    put_u64(ev, (responses_opens(r) + 2).into());
}

/// A content event's bytes up to its text, and after it, in the API's shape: what the
/// faults that spoil one event (`bad_json`, `bad_utf8`, `oversized_event`,
/// `truncated_chunk`) write it in.
pub(crate) fn text_event_ends(api: Api) -> (&'static [u8], &'static [u8]) {
    match api {
        Api::Responses => (
            b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"",
            b"\"}\n\n",
        ),
        Api::Messages => (
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
            b"\"}}\n\n",
        ),
        _ => (
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
            b"\"},\"finish_reason\":null}]}\n\n",
        ),
    }
}
