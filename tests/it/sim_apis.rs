//! The simulator's other APIs (`/v1/responses`, `/v1/messages`, `/v1/embeddings`,
//! `/v1/rerank`, TEI's `/rerank`, `/v1/score`, tool calls) against real servers' captures in
//! `tests/data/apis/`: each capture's own request is sent to an in-process simulator of the
//! same flavour, and the answer must have the capture's shape — the same SSE event types in
//! order, the same JSON keys at every level — with values that differ by nature (ids, text,
//! times, `ringbench_ns`, llama.cpp's `timings`) left alone; and usage equal to what was
//! sent. A plain blocking std client reads the bytes (no client module), one request per
//! connection (`Connection: close`). Each test that starts a simulator holds the one lock.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use crate::support::common::lock;
use crate::support::wire::parse;
use ringbench::__private::http::{Limits, ResponseParser};
use ringbench::plan::sim::Flavor;
use ringbench::plan::{Endpoint, SimSettings};
use ringbench::sim::{self, SimConfig, SimHandle};
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/apis")
}

/// Status, headers (lower-cased names) and the de-chunked body of an HTTP/1.1 response.
struct Http {
    status: u16,
    body: Vec<u8>,
}

fn split_head(raw: &[u8]) -> (&str, &[u8]) {
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    (std::str::from_utf8(&raw[..at]).unwrap(), &raw[at + 4..])
}

fn parse_http(raw: &[u8]) -> Http {
    let (head, mut rest) = split_head(raw);
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    if !chunked {
        return Http {
            status,
            body: rest.to_vec(),
        };
    }
    let mut body = vec![];
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap(), 16).unwrap();
        rest = &rest[line + 2..];
        if size == 0 {
            break;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
    Http { status, body }
}

/// A capture's request: its path and body (the model renamed to the simulator's).
fn fixture_request(server: &str, name: &str) -> (String, String) {
    let raw = std::fs::read(dir().join(server).join(format!("{name}.request.bin"))).unwrap();
    let (head, body) = split_head(&raw);
    let path = head.split(' ').nth(1).unwrap().to_string();
    let body = std::str::from_utf8(body)
        .unwrap()
        .replace("ringbench-random-llama", "sim-model");
    (path, body)
}

fn fixture_response(server: &str, name: &str) -> Http {
    parse_http(&std::fs::read(dir().join(server).join(format!("{name}.wire.bin"))).unwrap())
}

fn send(sim: &SimHandle, path: &str, body: &str, extra: &str) -> Http {
    let mut sock = TcpStream::connect(sim.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}\
Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).unwrap();
    let mut raw = vec![];
    sock.read_to_end(&mut raw).unwrap();
    parse_http(&raw)
}

fn start(flavor: Flavor, tune: impl FnOnce(&mut SimSettings)) -> SimHandle {
    let mut settings = SimSettings {
        flavor,
        model: "sim-model".into(),
        ..SimSettings::default()
    };
    tune(&mut settings);
    sim::start(SimConfig {
        settings,
        ..SimConfig::default()
    })
    .expect("simulator starts")
}

/// SSE events: (the `event:` name, if any; the data's JSON, None for `[DONE]`).
fn events(body: &[u8]) -> Vec<(Option<String>, Option<Value>)> {
    let text = std::str::from_utf8(body).unwrap();
    let mut out = vec![];
    for ev in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let mut name = None;
        let mut data = None;
        for line in ev.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = Some(n.to_string());
            } else if let Some(d) = line.strip_prefix("data: ") {
                data = (d != "[DONE]").then(|| serde_json::from_str(d).unwrap());
            }
        }
        out.push((name, data));
    }
    out
}

/// Keys only the simulator writes, and keys only the capture has, that may differ.
const OURS_ONLY: [&str; 2] = ["ringbench_ns", "arguments"];
const THEIRS_ONLY: [&str; 1] = ["timings"];

/// `ours` has `theirs`' shape: the same keys at every level of objects (arrays compared by
/// their first elements when both have one).
fn same_shape(ours: &Value, theirs: &Value, at: &str) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let kb: BTreeSet<_> = b
                .keys()
                .filter(|k| !THEIRS_ONLY.contains(&k.as_str()))
                .collect();
            let ka: BTreeSet<_> = a
                .keys()
                .filter(|k| kb.contains(k) || !OURS_ONLY.contains(&k.as_str()))
                .collect();
            assert_eq!(ka, kb, "keys at {at}");
            for k in kb {
                same_shape(&a[k.as_str()], &b[k.as_str()], &format!("{at}.{k}"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if let (Some(x), Some(y)) = (a.first(), b.first()) {
                same_shape(x, y, &format!("{at}[0]"));
            }
        }
        _ => {}
    }
}

/// Event names with runs of the same name collapsed (token counts differ from the capture).
fn kinds(evs: &[(Option<String>, Option<Value>)]) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for (name, data) in evs {
        let name = name.clone().unwrap_or_else(|| match data {
            Some(_) => "data".into(),
            None => "[DONE]".into(),
        });
        if out.last() != Some(&name) {
            out.push(name);
        }
    }
    out
}

/// The first event of each name, ours against the capture's, and every event's `type` equal
/// to its `event:` name and stamped.
fn same_events(
    ours: &[(Option<String>, Option<Value>)],
    theirs: &[(Option<String>, Option<Value>)],
    what: &str,
) {
    assert_eq!(kinds(ours), kinds(theirs), "{what}: event sequence");
    for (name, data) in ours {
        let data = data.as_ref().expect("no [DONE] here");
        assert_eq!(
            data["type"].as_str(),
            name.as_deref(),
            "{what}: type is the event name"
        );
        assert!(data["ringbench_ns"].as_u64().is_some(), "{what}: stamped");
        let twin = theirs.iter().find(|(n, _)| n == name).unwrap();
        same_shape(
            data,
            twin.1.as_ref().unwrap(),
            &format!("{what} {}", name.as_deref().unwrap()),
        );
    }
}

fn count(evs: &[(Option<String>, Option<Value>)], name: &str) -> u64 {
    evs.iter()
        .filter(|(n, _)| n.as_deref() == Some(name))
        .count() as u64
}

fn last<'a>(evs: &'a [(Option<String>, Option<Value>)], name: &str) -> &'a Value {
    let found = evs.iter().rev().find(|(n, _)| n.as_deref() == Some(name));
    found.and_then(|(_, d)| d.as_ref()).unwrap()
}

#[test]
fn responses_and_messages_streams_have_the_captures_shape() {
    let _g = lock();
    for (server, flavor) in [
        ("vllm-cpu", Flavor::Vllm),
        ("llama-cpp-server", Flavor::LlamaCpp),
    ] {
        let sim = start(flavor, |_| {});
        for name in ["responses_stream", "messages_stream"] {
            let (path, body) = fixture_request(server, name);
            let got = send(&sim, &path, &body, "");
            assert_eq!(got.status, 200, "{server}/{name}");
            let ours = events(&got.body);
            let theirs = events(&fixture_response(server, name).body);
            same_events(&ours, &theirs, &format!("{server}/{name}"));
            if name == "responses_stream" {
                let deltas = count(&ours, "response.output_text.delta");
                let usage = &last(&ours, "response.completed")["response"]["usage"];
                assert_eq!((deltas, usage["output_tokens"].as_u64()), (16, Some(16)));
                assert_eq!(usage["input_tokens"], 4, "Hello, how are you? is 4 words");
            } else {
                let deltas = count(&ours, "content_block_delta");
                let usage = &last(&ours, "message_delta")["usage"];
                assert_eq!((deltas, usage["output_tokens"].as_u64()), (16, Some(16)));
                let start = &last(&ours, "message_start")["message"]["usage"];
                assert_eq!(start["input_tokens"], 4);
            }
        }
    }
}

#[test]
fn mid_stream_errors_come_in_each_apis_own_event() {
    let _g = lock();
    let sim = start(Flavor::Vllm, |s| {
        s.faults.faults = vec!["error_event:1".parse().unwrap()];
    });
    let mut seen = BTreeSet::new();
    for round in 0..12 {
        for (name, endpoint) in [
            ("responses_stream", Endpoint::Responses),
            ("messages_stream", Endpoint::Messages),
        ] {
            let (path, body) = fixture_request("vllm-cpu", name);
            let got = send(&sim, &path, &body, "");
            assert_eq!(got.status, 200, "{name}");
            let evs = events(&got.body);
            // Opening events, two deltas, the error; nothing after it.
            let (kind, data) = evs.last().unwrap();
            let (kind, data) = (kind.clone().unwrap(), data.clone().unwrap());
            assert_eq!(data["type"], kind.as_str(), "{name}: {kind}");
            let deltas = evs.iter().filter(|(n, _)| {
                matches!(
                    n.as_deref(),
                    Some("response.output_text.delta" | "content_block_delta")
                )
            });
            assert_eq!(deltas.count(), 2, "{name} round {round}");
            match endpoint {
                Endpoint::Responses if kind == "response.failed" => {
                    let r = &data["response"];
                    assert_eq!(r["status"], "failed");
                    assert!(r["error"]["message"].is_string() && r["error"]["code"].is_string());
                }
                Endpoint::Responses => {
                    assert_eq!(kind, "error");
                    assert!(data["message"].is_string() && data["code"].is_string());
                    assert!(data["sequence_number"].is_u64() && data["param"].is_null());
                }
                _ => {
                    assert_eq!(kind, "error");
                    assert_eq!(data["error"]["type"], "api_error");
                    assert!(data["error"]["message"].is_string());
                }
            }
            seen.insert(format!("{name}: {kind}"));
            // The client counts it a failure of its own kind, in the API's shape.
            let mut wire = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                got.body.len()
            )
            .into_bytes();
            wire.extend_from_slice(&got.body);
            let mut p = ResponseParser::for_endpoint(Limits::default(), endpoint);
            let t = parse(&mut p, &mut std::iter::once(&wire[..]));
            assert_eq!(t.events.iter().filter(|e| e.error).count(), 1, "{name}");
            assert!(t.events.iter().all(|e| !e.wrong_api && !e.finish), "{name}");
        }
    }
    // Both of Responses' ways of failing came (a fair coin, 12 draws), and Messages' one.
    assert_eq!(seen.len(), 3, "{seen:?}");
}

#[test]
fn whole_responses_and_messages_have_the_captures_keys() {
    let _g = lock();
    let sim = start(Flavor::Vllm, |_| {});
    for name in ["responses_nostream", "messages_nostream"] {
        let (path, body) = fixture_request("vllm-cpu", name);
        let got = send(&sim, &path, &body, "");
        assert_eq!(got.status, 200);
        let ours: Value = serde_json::from_slice(&got.body).unwrap();
        let theirs: Value =
            serde_json::from_slice(&fixture_response("vllm-cpu", name).body).unwrap();
        same_shape(&ours, &theirs, name);
        assert!(ours["ringbench_ns"].as_u64().is_some());
        let out = ours["usage"]["output_tokens"].as_u64();
        assert_eq!(out, Some(16), "{name}");
    }
}

#[test]
fn errors_come_in_each_apis_shape_before_any_stream() {
    let _g = lock();
    let sim = start(Flavor::Vllm, |_| {});
    for (name, path, body) in [
        (
            "err_long_prompt_messages_stream",
            "/v1/messages",
            r#"{"max_tokens":0,"messages":[],"stream":true}"#,
        ),
        (
            "err_long_prompt_responses_stream",
            "/v1/responses",
            r#"{"input":"x","max_output_tokens":0,"stream":true}"#,
        ),
    ] {
        let got = send(&sim, path, body, "");
        assert_eq!(got.status, 400);
        let theirs = fixture_response("vllm-cpu", name);
        assert_eq!(theirs.status, 400);
        let ours: Value = serde_json::from_slice(&got.body).unwrap();
        same_shape(&ours, &serde_json::from_slice(&theirs.body).unwrap(), name);
    }
}

/// A chat stream's tool-call argument pieces and its usage.
fn chat_tool_stream(got: &Http) -> (Vec<Value>, String, u64) {
    let evs = events(&got.body);
    assert_eq!(evs.last().unwrap().1, None, "ends with [DONE]");
    let data: Vec<Value> = evs.iter().filter_map(|(_, d)| d.clone()).collect();
    let mut args = String::new();
    let mut pieces = 0;
    for d in &data {
        if let Some(a) = d["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
        {
            if d["choices"][0]["delta"]["tool_calls"][0]["id"].is_null() {
                pieces += 1;
            }
            args.push_str(a);
        }
    }
    let usage = data.last().unwrap()["usage"]["completion_tokens"]
        .as_u64()
        .unwrap();
    assert_eq!(pieces, usage, "one argument piece per output token");
    (data, args, usage)
}

#[test]
fn chat_tool_calls_for_required_named_none_and_rate() {
    let _g = lock();
    let sim = start(Flavor::Vllm, |_| {});
    for name in [
        "chat_stream_tools_required_hermes",
        "chat_stream_tools_named_hermes",
    ] {
        let (path, body) = fixture_request("vllm-cpu", name);
        let body = body.replace("\"max_tokens\":256", "\"max_tokens\":12");
        let got = send(&sim, &path, &body, "");
        let (data, args, usage) = chat_tool_stream(&got);
        assert_eq!(usage, 12);
        let args: Value = serde_json::from_str(&args).expect("the arguments are JSON");
        assert!(args.is_object());
        let theirs: Vec<Value> = events(&fixture_response("vllm-cpu", name).body)
            .into_iter()
            .filter_map(|(_, d)| d)
            .collect();
        // Role, tool head, an argument piece, the finish, the usage: each as captured.
        for (o, t) in [
            (0, 0),
            (1, 1),
            (2, 2),
            (data.len() - 2, theirs.len() - 2),
            (data.len() - 1, theirs.len() - 1),
        ] {
            same_shape(&data[o], &theirs[t], &format!("{name} event {o}"));
        }
        assert_eq!(
            data[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert_eq!(
            data[data.len() - 2]["choices"][0]["finish_reason"],
            "tool_calls"
        );
    }
    // none: text.
    let (path, body) = fixture_request("vllm-cpu", "chat_stream_tools_required_hermes");
    let none = body.replace("\"tool_choice\":\"required\"", "\"tool_choice\":\"none\"");
    let text = String::from_utf8(send(&sim, &path, &none, "").body).unwrap();
    assert!(!text.contains("tool_calls") && text.contains("\"content\":\" lorem\""));
    // auto at the default rate 0: text; non-streamed required: a whole tool-call message.
    let auto = body.replace("\"tool_choice\":\"required\",", "");
    assert!(!String::from_utf8(send(&sim, &path, &auto, "").body)
        .unwrap()
        .contains("tool_calls"));
    let whole = body
        .replace("\"stream\":true", "\"stream\":false")
        .replace("256", "5");
    let v: Value = serde_json::from_slice(&send(&sim, &path, &whole, "").body).unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let args = v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert!(serde_json::from_str::<Value>(args).unwrap().is_object());
    assert_eq!(v["usage"]["completion_tokens"], 5);
    drop(sim);
    // A rate: about that share of auto requests call, the same request id always the same way.
    let sim = start(Flavor::Vllm, |s| s.tool_call_rate = 0.5);
    let auto = auto
        .replace("\"stream\":true", "\"stream\":false")
        .replace("256", "2");
    let mut calls = 0;
    for i in 0..200 {
        let id = format!("x-request-id: r{i}\r\n");
        let called = send(&sim, &path, &auto, &id).body;
        let again = send(&sim, &path, &auto, &id).body;
        let is_call = |b: &[u8]| String::from_utf8_lossy(b).contains("\"tool_calls\":[");
        assert_eq!(
            is_call(&called),
            is_call(&again),
            "request r{i} draws the same twice"
        );
        calls += u32::from(is_call(&called));
    }
    assert!((60..=140).contains(&calls), "{calls} of 200 at rate 0.5");
    drop(sim);
    let sim = start(Flavor::Vllm, |s| s.tool_call_rate = 1.0);
    assert!(String::from_utf8(send(&sim, &path, &auto, "").body)
        .unwrap()
        .contains("\"tool_calls\":["));
}

#[test]
fn responses_and_messages_tool_calls() {
    let _g = lock();
    let sim = start(Flavor::Vllm, |_| {});
    let name = "responses_stream_tools_required_hermes";
    let (path, body) = fixture_request("vllm-cpu", name);
    let body = body.replace("\"max_output_tokens\":128", "\"max_output_tokens\":9");
    let ours = events(&send(&sim, &path, &body, "").body);
    let theirs = events(&fixture_response("vllm-cpu", name).body);
    same_events(&ours, &theirs, name);
    let deltas: String = ours
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.function_call_arguments.delta"))
        .map(|(_, d)| d.as_ref().unwrap()["delta"].as_str().unwrap().to_string())
        .collect();
    let done = last(&ours, "response.function_call_arguments.done");
    assert_eq!(done["arguments"].as_str(), Some(deltas.as_str()));
    assert!(serde_json::from_str::<Value>(&deltas).unwrap().is_object());
    let usage = &last(&ours, "response.completed")["response"]["usage"];
    assert_eq!(
        usage["output_tokens"],
        count(&ours, "response.function_call_arguments.delta")
    );
    assert_eq!(usage["output_tokens"], 9);
    // Anthropic's tools and tool_choice: a tool_use block.
    let (path, body) = fixture_request("vllm-cpu", "messages_stream");
    let tools = r#""tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"max_tokens":6"#;
    let body = body.replace("\"max_tokens\":16", tools);
    let ours = events(&send(&sim, &path, &body, "").body);
    let start = last(&ours, "content_block_start");
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["name"], "get_weather");
    let json: String = ours
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("content_block_delta"))
        .map(|(_, d)| {
            let d = &d.as_ref().unwrap()["delta"];
            assert_eq!(d["type"], "input_json_delta");
            d["partial_json"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(serde_json::from_str::<Value>(&json).unwrap().is_object());
    let delta = last(&ours, "message_delta");
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(
        delta["usage"]["output_tokens"],
        count(&ours, "content_block_delta")
    );
    assert_eq!(delta["usage"]["output_tokens"], 6);
    let none = body.replace(r#"{"type":"any"}"#, r#"{"type":"none"}"#);
    let ours = events(&send(&sim, &path, &none, "").body);
    assert_eq!(
        last(&ours, "content_block_start")["content_block"]["type"],
        "text"
    );
}

#[test]
fn embeddings_rerank_and_score_have_the_captures_shape() {
    let _g = lock();
    for (server, flavor) in [
        ("vllm-cpu", Flavor::Vllm),
        ("llama-cpp-server", Flavor::LlamaCpp),
    ] {
        let sim = start(flavor, |_| {});
        let names: &[&str] = match flavor {
            Flavor::Vllm => &[
                "embeddings_list4",
                "embeddings_base64",
                "rerank_v1",
                "score_v1",
            ],
            Flavor::LlamaCpp => &["embeddings_list4", "rerank_v1"],
        };
        for name in names {
            let (path, body) = fixture_request(server, name);
            let got = send(&sim, &path, &body, "");
            assert_eq!(got.status, 200, "{server}/{name}");
            let ours: Value = serde_json::from_slice(&got.body).unwrap();
            let theirs: Value =
                serde_json::from_slice(&fixture_response(server, name).body).unwrap();
            same_shape(&ours, &theirs, &format!("{server}/{name}"));
            assert!(ours["ringbench_ns"].as_u64().is_some());
            let tokens = ours["usage"]["prompt_tokens"].as_u64().unwrap();
            match *name {
                "embeddings_list4" => {
                    // 4 + 5 + 4 + 4 words; vectors of the default 1024.
                    assert_eq!(tokens, 17);
                    let data = ours["data"].as_array().unwrap();
                    assert_eq!(data.len(), 4);
                    assert!(data
                        .iter()
                        .all(|d| d["embedding"].as_array().unwrap().len() == 1024));
                }
                "embeddings_base64" => {
                    use base64::Engine;
                    let text = ours["data"][0]["embedding"].as_str().unwrap();
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .unwrap();
                    assert_eq!(bytes.len(), 4 * 1024);
                }
                // (query 6 words + each document) for each of 3 documents; top_n 2.
                "rerank_v1" => {
                    assert_eq!(tokens, 3 * 6 + 6 + 4 + 4);
                    assert_eq!(ours["results"].as_array().unwrap().len(), 2);
                }
                _ => assert_eq!(tokens, 2 * 6 + 6 + 4),
            }
        }
    }
    // Another width, both encodings agreeing; TEI's bare array at /rerank.
    let sim = start(Flavor::Vllm, |s| s.embedding_dim = 48);
    let floats: Value =
        serde_json::from_slice(&send(&sim, "/v1/embeddings", r#"{"input":"a b"}"#, "").body)
            .unwrap();
    let b64: Value = serde_json::from_slice(
        &send(
            &sim,
            "/v1/embeddings",
            r#"{"input":"a b","encoding_format":"base64"}"#,
            "",
        )
        .body,
    )
    .unwrap();
    let v: Vec<f32> = floats["data"][0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let w: Vec<f32> = bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!((v.len(), &v), (48, &w));
    let tei = send(&sim, "/rerank", r#"{"query":"q","texts":["a","b c"]}"#, "");
    let tei: Value = serde_json::from_slice(&tei.body).unwrap();
    let arr = tei.as_array().expect("TEI answers a bare array");
    assert_eq!(arr.len(), 2);
    for r in arr {
        let keys: BTreeSet<_> = r.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["index", "score"].map(String::from).into());
    }
    let bad = send(&sim, "/v1/embeddings", r#"{"input":[]}"#, "");
    assert_eq!(bad.status, 400);
}

#[test]
fn pooling_requests_go_through_the_engine_and_metrics() {
    let _g = lock();
    let sim = start(Flavor::Vllm, |s| {
        s.ttft_ms = 30.0;
        s.prefill_ms_per_token = 1.0;
    });
    let t = std::time::Instant::now();
    let got = send(
        &sim,
        "/v1/embeddings",
        r#"{"input":["a b c d e","f g h i j"]}"#,
        "",
    );
    assert_eq!(got.status, 200);
    // 30 ms compute + 10 prompt tokens × 1 ms prefill.
    assert!(
        t.elapsed() >= Duration::from_millis(40),
        "{:?}",
        t.elapsed()
    );
    let mut sock = TcpStream::connect(sim.addr).unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = vec![];
    sock.read_to_end(&mut raw).unwrap();
    let page = String::from_utf8(parse_http(&raw).body).unwrap();
    let line = page
        .lines()
        .find(|l| l.starts_with("vllm:prompt_tokens_total"))
        .unwrap();
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(value, 10.0, "{line}");
}
