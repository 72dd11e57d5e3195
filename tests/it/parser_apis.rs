//! Integration test of stages 3–5 of the flow (worker → **http → sse → extract** → record)
//! for the other APIs, against real bytes: every `tests/data/apis/<server>/<name>.wire.bin`
//! (vLLM and llama.cpp answering `/v1/responses`, `/v1/messages`, chat with tools,
//! `/v1/embeddings`, `/v1/rerank`, `/v1/score`) is fed to `ResponseParser::for_endpoint` with
//! the endpoint its `.request.bin` was sent to, whole, cut at every byte and in many small
//! random reads; the heads, events and outcome must not depend on the cuts. Known facts of
//! each capture are then checked. No I/O beyond reading the fixture files; the folder must
//! exist (a missing folder fails, it never passes silently).

use std::path::Path;

use crate::parser_fixtures::{clean, parse, readings, wire_files, Rng, Trace};
use ringbench::__private::extract::{EventInfo, Usage};
use ringbench::__private::http::{Limits, Progress, ResponseParser};
use ringbench::plan::Endpoint;

/// One capture: its name ("server/name"), the endpoint asked, the response's bytes.
pub(crate) struct Capture {
    pub(crate) name: String,
    pub(crate) endpoint: Endpoint,
    pub(crate) wire: Vec<u8>,
}

/// The endpoint whose path the request line names.
fn endpoint_of(request: &[u8]) -> Endpoint {
    let line = request.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = std::str::from_utf8(line).expect("request line is text");
    let path = line.split(' ').nth(1).expect("request line has a path");
    Endpoint::ALL
        .into_iter()
        .find(|e| e.path() == path)
        .unwrap_or_else(|| panic!("no endpoint for {line:?}"))
}

/// Every capture, sorted by name.
pub(crate) fn captures() -> Vec<Capture> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/apis");
    let out: Vec<Capture> = wire_files(&dir)
        .into_iter()
        .map(|(name, path)| {
            let request_path = path.with_file_name(
                path.file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .replace(".wire.bin", ".request.bin"),
            );
            let request = std::fs::read(request_path).expect("each capture has its request");
            Capture {
                name,
                endpoint: endpoint_of(&request),
                wire: std::fs::read(&path).expect("read capture"),
            }
        })
        .collect();
    assert!(
        out.len() >= 18,
        "expected at least 18 captures in {}, found {}",
        dir.display(),
        out.len()
    );
    out
}

fn whole(endpoint: Endpoint, wire: &[u8]) -> Trace {
    let mut p = ResponseParser::for_endpoint(Limits::default(), endpoint);
    parse(&mut p, &mut std::iter::once(wire))
}

fn capture(name: &str) -> Trace {
    let c = captures()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("capture {name} missing"));
    whole(c.endpoint, &c.wire)
}

#[test]
fn every_capture_parses_the_same_at_every_cut_and_in_random_reads() {
    let mut rng = Rng(0xa915_0033);
    for c in captures() {
        let mut p = ResponseParser::for_endpoint(Limits::default(), c.endpoint);
        let one = parse(&mut p, &mut std::iter::once(&c.wire[..]));
        assert!(
            matches!(one.end, Some(Ok(Progress::Done { .. }))),
            "{}: {one:?}",
            c.name
        );
        for (how, reads) in readings(&c.wire, &mut rng, true, 50) {
            let got = parse(&mut p, &mut reads.into_iter());
            assert_eq!(got, one, "{}: {how}", c.name);
        }
        // Nothing in a capture answers in another API's shape, and no error event came.
        assert!(
            one.events.iter().all(|e| !e.wrong_api && !e.error),
            "{}",
            c.name
        );
    }
}

/// The usage a record ends with: each field's last reported value (`RecordSink`'s rule).
fn final_usage(t: &Trace) -> Usage {
    t.events
        .iter()
        .filter_map(|e| e.usage)
        .fold(Usage::default(), |acc, u| Usage {
            prompt_tokens: u.prompt_tokens.or(acc.prompt_tokens),
            completion_tokens: u.completion_tokens.or(acc.completion_tokens),
            cached_tokens: u.cached_tokens.or(acc.cached_tokens),
        })
}

fn usage(prompt: u32, completion: Option<u32>, cached: Option<u32>) -> Usage {
    Usage {
        prompt_tokens: Some(prompt),
        completion_tokens: completion,
        cached_tokens: cached,
    }
}

fn sum(t: &Trace, f: impl Fn(&EventInfo) -> u32) -> u32 {
    t.events.iter().map(f).sum()
}

const DONE_KEEP: Option<Result<Progress, ringbench::__private::http::ResponseError>> =
    Some(Ok(Progress::Done { keep_alive: true }));

#[test]
fn streams_of_the_other_apis_count_tokens_and_end_without_done() {
    // (capture, events, token-bearing events, content bytes, final usage)
    for (name, events, tokens, content, want) in [
        (
            "vllm-cpu/responses_stream",
            23,
            15,
            78,
            usage(24, Some(16), Some(0)),
        ),
        (
            "llama-cpp-server/responses_stream",
            24,
            16,
            84,
            usage(24, Some(16), Some(0)),
        ),
        (
            "vllm-cpu/messages_stream",
            21,
            16,
            82,
            usage(24, Some(16), None),
        ),
        // llama.cpp: 1 input token + 23 read from its cache.
        (
            "llama-cpp-server/messages_stream",
            21,
            16,
            73,
            usage(24, Some(16), Some(23)),
        ),
    ] {
        let t = clean(capture(name), name, 200, true);
        assert_eq!(
            (t.events.len(), t.tokens(), t.content_bytes()),
            (events, tokens, content),
            "{name}"
        );
        assert_eq!(final_usage(&t), want, "{name}");
        assert!(
            t.events.iter().all(|e| !e.done_marker && e.tool_calls == 0),
            "{name}"
        );
        assert_eq!(t.events.iter().filter(|e| e.finish).count(), 1, "{name}");
        let visible = t.events.iter().filter(|e| e.visible).count();
        assert!(visible > 0 && visible <= tokens, "{name}");
    }
}

#[test]
fn llama_cpp_streams_end_cleanly_and_a_close_after_them_changes_nothing() {
    for name in [
        "llama-cpp-server/responses_stream",
        "llama-cpp-server/messages_stream",
    ] {
        let c = captures()
            .into_iter()
            .find(|c| c.name == name)
            .expect("capture");
        let mut p = ResponseParser::for_endpoint(Limits::default(), c.endpoint);
        let mut t = Trace::default();
        assert_eq!(
            p.feed(&c.wire, &mut t),
            Ok(Progress::Done { keep_alive: true })
        );
        assert_eq!(p.eof(&mut t), Ok(Progress::Done { keep_alive: false }));
        // Cut at the last chunk's end (the server closed before the final CRLF).
        let cut = &c.wire[..c.wire.len() - 2];
        let t = whole(c.endpoint, cut);
        assert_eq!(
            t.end,
            Some(Ok(Progress::Done { keep_alive: false })),
            "{name}"
        );
    }
}

#[test]
fn tool_calls_are_counted_in_chat_and_responses_streams() {
    // (capture, calls, tool-call bytes, token-bearing events, final usage)
    for (name, calls, bytes, tokens, want) in [
        (
            "vllm-cpu/chat_stream_tools_named_hermes",
            1,
            16,
            4,
            usage(27, Some(58), None),
        ),
        (
            "vllm-cpu/chat_stream_tools_required_hermes",
            5,
            76,
            19,
            usage(27, Some(256), None),
        ),
        (
            "vllm-cpu/responses_stream_tools_required_hermes",
            1,
            15,
            5,
            usage(27, Some(56), Some(0)),
        ),
    ] {
        let t = capture(name);
        assert_eq!(t.end, DONE_KEEP, "{name}");
        assert_eq!(
            (
                sum(&t, |e| e.tool_calls),
                sum(&t, |e| e.tool_call_bytes),
                t.tokens()
            ),
            (calls, bytes, tokens),
            "{name}"
        );
        // Tool calls are output, not visible text.
        assert!(t.events.iter().all(|e| !e.visible), "{name}");
        let outputs = t.events.iter().filter(|e| e.carries_output()).count();
        assert_eq!(outputs, tokens, "{name}");
        assert_eq!(final_usage(&t), want, "{name}");
    }
}

#[test]
fn non_streamed_answers_are_one_event() {
    for (name, content, want) in [
        ("vllm-cpu/messages_nostream", 79, usage(24, Some(16), None)),
        (
            "vllm-cpu/responses_nostream",
            100,
            usage(24, Some(16), Some(0)),
        ),
    ] {
        let t = clean(capture(name), name, 200, false);
        assert_eq!(t.events.len(), 1, "{name}");
        let e = t.events[0];
        assert_eq!(
            (e.content_bytes, e.usage, e.finish),
            (content, Some(want), true),
            "{name}"
        );
    }
}

#[test]
fn pooling_answers_count_items_and_vector_length() {
    // (capture, items, vector length, prompt tokens)
    for (name, items, len, prompt) in [
        ("vllm-cpu/embeddings_list4", 4, 256, 50),
        ("vllm-cpu/embeddings_base64", 1, 256, 13),
        ("llama-cpp-server/embeddings_list4", 4, 256, 50),
        ("vllm-cpu/rerank_v1", 2, 0, 61),
        ("llama-cpp-server/rerank_v1", 2, 0, 97),
        ("vllm-cpu/score_v1", 2, 0, 49),
    ] {
        let t = clean(capture(name), name, 200, false);
        assert_eq!(t.events.len(), 1, "{name}");
        let e = t.events[0];
        assert_eq!((e.items, e.vector_len), (items, len), "{name}");
        assert_eq!(e.usage, Some(usage(prompt, None, None)), "{name}");
        assert!(!e.carries_token() && !e.wrong_api && !e.error, "{name}");
    }
}

#[test]
fn error_captures_end_with_no_events() {
    for name in [
        "llama-cpp-server/err_long_prompt_chat_stream",
        "vllm-cpu/err_long_prompt_messages_stream",
        "vllm-cpu/err_long_prompt_responses_stream",
    ] {
        let t = capture(name);
        assert_eq!(t.heads, vec![(400, false)], "{name}");
        assert!(t.events.is_empty(), "{name}");
        assert!(matches!(t.end, Some(Ok(Progress::Done { .. }))), "{name}");
    }
}

#[test]
fn an_answer_in_another_apis_shape_is_wrong_api() {
    let all = captures();
    let wire = |name: &str| {
        &all.iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name}"))
            .wire
    };
    let wrong = |endpoint: Endpoint, name: &str| {
        let t = whole(endpoint, wire(name));
        assert!(
            matches!(t.end, Some(Ok(Progress::Done { .. }))),
            "{endpoint:?} {name}: {t:?}"
        );
        assert!(
            t.events.iter().any(|e| e.wrong_api),
            "{endpoint:?} read {name} as its own"
        );
        assert!(t.events.iter().all(|e| !e.error), "{endpoint:?} {name}");
    };
    wrong(
        Endpoint::Responses,
        "vllm-cpu/chat_stream_tools_named_hermes",
    );
    wrong(
        Endpoint::Messages,
        "vllm-cpu/chat_stream_tools_required_hermes",
    );
    wrong(Endpoint::Chat, "vllm-cpu/responses_stream");
    wrong(Endpoint::Chat, "llama-cpp-server/messages_stream");
    wrong(Endpoint::Messages, "llama-cpp-server/responses_stream");
    wrong(Endpoint::Responses, "vllm-cpu/messages_stream");
    wrong(Endpoint::Chat, "vllm-cpu/embeddings_list4");
    wrong(Endpoint::Responses, "vllm-cpu/score_v1");
    wrong(Endpoint::Embeddings, "vllm-cpu/messages_nostream");
    wrong(Endpoint::Rerank, "vllm-cpu/responses_nostream");
    wrong(Endpoint::Embeddings, "vllm-cpu/responses_stream");
    wrong(Endpoint::Rerank, "vllm-cpu/score_v1");
}

#[test]
fn a_pooling_answer_over_the_body_bound_is_too_large_at_every_cut() {
    let c = captures()
        .into_iter()
        .find(|c| c.name == "vllm-cpu/embeddings_list4")
        .expect("capture");
    let limits = Limits {
        max_body_bytes: 4096,
        ..Limits::default()
    };
    let mut p = ResponseParser::for_endpoint(limits, c.endpoint);
    let one = parse(&mut p, &mut std::iter::once(&c.wire[..]));
    assert_eq!(
        one.end,
        Some(Err(ringbench::__private::http::ResponseError::BodyTooLarge))
    );
    for cut in (0..c.wire.len()).step_by(97) {
        let (a, b) = c.wire.split_at(cut);
        assert_eq!(parse(&mut p, &mut [a, b].into_iter()), one, "cut {cut}");
    }
}
