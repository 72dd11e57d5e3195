//! Wire tests for `ringbench sim`, the null server (server side of the flow schedule →
//! worker → http → sse → extract → record → collector → report). A plain blocking std
//! client on loopback checks the bytes the simulator sends: status, framing, event shapes,
//! stamps, keep-alive, pipelining and timing. These tests may not use any client module, so
//! a client bug cannot hide a simulator bug; timing bounds are loose (shared CI cores). Each
//! test that starts a simulator holds the one lock while it runs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::support::common::lock;
use ringbench::host::mono_ns;
use ringbench::plan::IoDriver;
use ringbench::sim::{self, SimConfig, SimHandle};
use serde_json::Value;

/// One parsed response.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    /// The chunk payloads (streamed) or the whole body (Content-Length).
    chunks: Vec<Vec<u8>>,
    /// When the read holding the end of each chunk returned.
    chunk_ns: Vec<u64>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, v)| v.as_str())
    }

    fn body_json(&self) -> Value {
        serde_json::from_slice(&self.chunks[0]).expect("body is JSON")
    }

    /// SSE payloads: (the JSON, or None for `[DONE]`, receipt stamp).
    fn events(&self) -> Vec<(Option<Value>, u64)> {
        let mut out = vec![];
        for (chunk, &at) in self.chunks.iter().zip(&self.chunk_ns) {
            let text = std::str::from_utf8(chunk).unwrap();
            for ev in text.split("\n\n").filter(|e| !e.is_empty()) {
                let data = ev.strip_prefix("data: ").expect("event starts with data: ");
                let json = (data != "[DONE]").then(|| serde_json::from_str(data).unwrap());
                out.push((json, at));
            }
        }
        out
    }
}

/// A blocking client that keeps unread bytes between responses (pipelining).
struct Client {
    sock: TcpStream,
    raw: Vec<u8>,
    /// (end offset in `raw`, mono_ns when that read returned)
    reads: Vec<(usize, u64)>,
}

impl Client {
    fn connect(sim: &SimHandle) -> Self {
        let sock = TcpStream::connect(sim.addr).unwrap();
        sock.set_nodelay(true).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Self {
            sock,
            raw: vec![],
            reads: vec![],
        }
    }

    fn send(&mut self, bytes: &[u8]) -> u64 {
        let at = mono_ns();
        self.sock.write_all(bytes).unwrap();
        at
    }

    fn response(&mut self) -> Response {
        loop {
            if let Some((resp, used)) = parse_response(&self.raw, &self.reads) {
                self.raw.drain(..used);
                self.reads.retain(|r| r.0 > used);
                self.reads.iter_mut().for_each(|r| r.0 -= used);
                return resp;
            }
            let mut buf = [0u8; 65536];
            let n = self.sock.read(&mut buf).unwrap();
            assert!(n > 0, "server closed mid-response");
            self.raw.extend_from_slice(&buf[..n]);
            self.reads.push((self.raw.len(), mono_ns()));
        }
    }
}

fn stamp_at(reads: &[(usize, u64)], end: usize) -> u64 {
    reads.iter().find(|r| r.0 >= end).map(|r| r.1).unwrap_or(0)
}

fn parse_response(raw: &[u8], reads: &[(usize, u64)]) -> Option<(Response, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(head_len) = resp.parse(raw).unwrap() else {
        return None;
    };
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let mut out = Response {
        status: resp.code.unwrap(),
        headers,
        chunks: vec![],
        chunk_ns: vec![],
    };
    if out.status < 200 {
        return Some((out, head_len));
    }
    if let Some(len) = out.header("content-length") {
        let end = head_len + len.parse::<usize>().unwrap();
        if raw.len() < end {
            return None;
        }
        out.chunks.push(raw[head_len..end].to_vec());
        out.chunk_ns.push(stamp_at(reads, end));
        return Some((out, end));
    }
    let mut at = head_len;
    loop {
        let line_end = at + raw.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let size_hex = std::str::from_utf8(&raw[at..line_end]).unwrap();
        let size = usize::from_str_radix(size_hex, 16).unwrap();
        let data = line_end + 2;
        if raw.len() < data + size + 2 {
            return None;
        }
        assert_eq!(&raw[data + size..data + size + 2], b"\r\n");
        at = data + size + 2;
        if size == 0 {
            return Some((out, at));
        }
        out.chunks.push(raw[data..data + size].to_vec());
        out.chunk_ns.push(stamp_at(reads, at));
    }
}

fn start(cfg: SimConfig) -> SimHandle {
    sim::start(cfg).expect("simulator starts")
}

fn post(path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes()
}

const CHAT_8: &str = r#"{"model":"tiny-llama","messages":[{"role":"user","content":"Hello, how are you?"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}"#;

/// Content events of a chat stream (role chunk and usage chunk excluded).
fn chat_contents(events: &[(Option<Value>, u64)]) -> Vec<&Value> {
    let contents = events.iter().filter_map(|(v, _)| v.as_ref());
    contents
        .filter(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|c| !c.is_empty())
        })
        .collect()
}

fn assert_stamps_ordered(events: &[(Option<Value>, u64)]) {
    let mut last = 0;
    for (v, received) in events
        .iter()
        .filter_map(|(v, r)| v.as_ref().map(|v| (v, r)))
    {
        let stamp = v["ringbench_ns"].as_u64().expect("every event is stamped");
        assert!(stamp >= last, "stamps never go back");
        assert!(stamp <= *received, "stamped before it was received");
        last = stamp;
    }
}

#[test]
fn chat_stream_with_usage() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    c.send(&post("/v1/chat/completions", CHAT_8));
    let resp = c.response();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(resp
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let events = resp.events();
    assert_eq!(
        events.len(),
        1 + 8 + 1 + 1,
        "role, 8 contents, usage, [DONE]"
    );
    let role = events[0].0.as_ref().unwrap();
    assert_eq!(role["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(role["object"], "chat.completion.chunk");
    assert_eq!(role["model"], "tiny-llama");
    let contents = chat_contents(&events);
    assert_eq!(contents.len(), 8);
    for (i, v) in contents.iter().enumerate() {
        let finish = &v["choices"][0]["finish_reason"];
        assert_eq!(
            finish.as_str() == Some("length"),
            i == 7,
            "finish_reason on the 8th only"
        );
    }
    let usage = events[9].0.as_ref().unwrap();
    assert_eq!(usage["choices"].as_array().unwrap().len(), 0);
    assert_eq!(usage["usage"]["completion_tokens"], 8);
    assert_eq!(
        usage["usage"]["prompt_tokens"], 4,
        "\"Hello, how are you?\": 4 words"
    );
    assert!(events[10].0.is_none(), "[DONE] last");
    assert_stamps_ordered(&events);
    let stats = sim.stop();
    assert_eq!(
        (stats.requests, stats.events, stats.connections),
        (1, 11, 1)
    );
}

#[test]
fn completions_stream() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    let body = r#"{"model":"m","prompt":"The quick brown fox","max_tokens":8,"stream":true}"#;
    c.send(&post("/v1/completions", body));
    let events = c.response().events();
    assert_eq!(
        events.len(),
        8 + 1,
        "8 contents, [DONE], no usage unless asked"
    );
    for (i, (v, _)) in events[..8].iter().enumerate() {
        let v = v.as_ref().unwrap();
        assert_eq!(v["object"], "text_completion");
        assert!(!v["choices"][0]["text"].as_str().unwrap().is_empty());
        assert_eq!(v["choices"][0]["finish_reason"].is_string(), i == 7);
    }
    assert_stamps_ordered(&events);
}

#[test]
fn continuous_usage_on_every_chunk() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    let body = r#"{"prompt":"abcd","max_tokens":3,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#;
    c.send(&post("/v1/completions", body));
    let events = c.response().events();
    let counts: Vec<u64> = events
        .iter()
        .filter_map(|(v, _)| v.as_ref()?["usage"]["completion_tokens"].as_u64())
        .collect();
    assert_eq!(counts, [1, 2, 3, 3]);
}

#[test]
fn non_stream_chat_and_completion() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    let chat = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}"#;
    c.send(&post("/v1/chat/completions", chat));
    let resp = c.response();
    assert_eq!(resp.status, 200);
    assert!(resp.header("content-length").is_some());
    let v = resp.body_json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "ringbench-sim");
    assert!(v["choices"][0]["message"]["content"].is_string());
    assert_eq!(v["usage"]["completion_tokens"], 4);
    c.send(&post("/v1/completions", r#"{"prompt":"x","stream":false}"#));
    let v = c.response().body_json();
    assert_eq!(
        v["usage"]["completion_tokens"], 16,
        "OpenAI's default max_tokens"
    );
    assert!(v["choices"][0]["text"].is_string());
}

#[test]
fn keep_alive_and_pipelining() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    for _ in 0..2 {
        c.send(&post("/v1/chat/completions", CHAT_8));
        assert_eq!(chat_contents(&c.response().events()).len(), 8);
    }
    let mut two = post("/v1/chat/completions", CHAT_8);
    two.extend(post("/v1/completions", r#"{"prompt":"x","max_tokens":2}"#));
    c.send(&two);
    assert_eq!(chat_contents(&c.response().events()).len(), 8);
    assert_eq!(c.response().body_json()["object"], "text_completion");
    // A request cut across writes is still one request.
    let split = post("/v1/completions", r#"{"prompt":"x","max_tokens":1}"#);
    c.send(&split[..10]);
    std::thread::sleep(Duration::from_millis(5));
    c.send(&split[10..]);
    assert_eq!(c.response().status, 200);
    let stats = sim.stop();
    assert_eq!((stats.connections, stats.requests), (1, 5));
}

#[test]
fn models_health_and_errors() {
    let _g = lock();
    let sim = start(SimConfig {
        settings: ringbench::plan::SimSettings {
            model: "sim-model".into(),
            ..Default::default()
        },
        ..SimConfig::default()
    });
    let mut c = Client::connect(&sim);
    c.send(&get("/v1/models"));
    let v = c.response().body_json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "sim-model");
    c.send(&get("/health"));
    assert_eq!(c.response().status, 200);
    c.send(&get("/v2/nothing"));
    let resp = c.response();
    assert_eq!(resp.status, 404);
    assert_eq!(resp.body_json()["error"]["code"], 404);
    c.send(&post("/v1/chat/completions", "{not json"));
    assert_eq!(c.response().status, 400);
    c.send(&post("/v1/completions", r#"{"max_tokens":0}"#));
    assert_eq!(
        c.response().status,
        400,
        "and the connection is still usable"
    );
    let stats = sim.stop();
    assert_eq!(
        (stats.parse_errors, stats.not_found, stats.requests),
        (2, 1, 5)
    );
}

#[test]
fn expect_continue_is_answered() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    let body = r#"{"prompt":"x","max_tokens":2}"#;
    let head = format!(
        "POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.send(head.as_bytes());
    assert_eq!(c.response().status, 100);
    c.send(body.as_bytes());
    assert_eq!(c.response().status, 200);
}

#[test]
fn malformed_head_gets_400_and_close() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    c.send(b"\x01\x02\x03 nonsense\r\n\r\n");
    let resp = c.response();
    assert_eq!(resp.status, 400);
    assert_eq!(resp.header("connection"), Some("close"));
    let mut rest = [0u8; 16];
    assert_eq!(
        c.sock.read(&mut rest).unwrap(),
        0,
        "closed after a bad head"
    );
}

#[test]
fn tokens_per_chunk_groups_tokens() {
    let _g = lock();
    let sim = start(SimConfig {
        settings: ringbench::plan::SimSettings {
            tokens_per_chunk: 4,
            ..Default::default()
        },
        ..SimConfig::default()
    });
    let mut c = Client::connect(&sim);
    c.send(&post("/v1/chat/completions", CHAT_8));
    let events = c.response().events();
    let contents = chat_contents(&events);
    assert_eq!(contents.len(), 2);
    let text = contents[0]["choices"][0]["delta"]["content"]
        .as_str()
        .unwrap();
    assert_eq!(text.split_whitespace().count(), 4);
    assert_eq!(
        events.iter().rev().nth(1).unwrap().0.as_ref().unwrap()["usage"]["completion_tokens"],
        8
    );
}

#[test]
fn zero_delays_send_each_response_in_one_write() {
    let _g = lock();
    let sim = start(SimConfig::default());
    let mut c = Client::connect(&sim);
    for _ in 0..5 {
        c.send(&post("/v1/chat/completions", CHAT_8));
        c.response();
    }
    let stats = sim.stats();
    assert_eq!(stats.requests, 5);
    assert_eq!(stats.writes, 5, "one write per request");
    assert!(stats.cpu_ns > 0 && stats.bytes_written > 5 * 2000);
}

fn timed_stream(driver: IoDriver) {
    let sim = start(SimConfig {
        io_driver: driver,
        settings: ringbench::plan::SimSettings {
            ttft_ms: 50.0,
            itl_ms: 10.0,
            ..Default::default()
        },
        ..SimConfig::default()
    });
    let mut c = Client::connect(&sim);
    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":20,"stream":true}"#;
    let sent = c.send(&post("/v1/chat/completions", body));
    let events = c.response().events();
    let at: Vec<u64> = events.iter().skip(1).map(|(_, at)| *at).collect();
    let ttft_ms = (at[0] - sent) as f64 / 1e6;
    assert!((50.0..150.0).contains(&ttft_ms), "ttft {ttft_ms} ms");
    let mut gaps: Vec<f64> = at
        .windows(2)
        .take(19)
        .map(|w| (w[1] - w[0]) as f64 / 1e6)
        .collect();
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    assert!((8.0..14.0).contains(&median), "median gap {median} ms");
    let stamps: Vec<u64> = events
        .iter()
        .filter_map(|(v, _)| v.as_ref()?["ringbench_ns"].as_u64())
        .collect();
    // Deadlines are absolute: content k is never written before send + ttft + k·itl.
    for (k, s) in stamps.iter().skip(1).take(20).enumerate() {
        assert!(
            *s >= sent + 50_000_000 + k as u64 * 10_000_000,
            "event {k} early"
        );
    }
    assert_stamps_ordered(&events);
}

#[test]
fn ttft_and_itl_are_kept_uring_or_fallback() {
    let _g = lock();
    timed_stream(IoDriver::Auto);
}

#[test]
fn ttft_and_itl_are_kept_on_epoll() {
    let _g = lock();
    timed_stream(IoDriver::Epoll);
}

#[test]
fn stop_closes_idle_and_waiting_connections_promptly() {
    let _g = lock();
    let sim = start(SimConfig {
        settings: ringbench::plan::SimSettings {
            ttft_ms: 10_000.0,
            ..Default::default()
        },
        ..SimConfig::default()
    });
    let mut idle = Client::connect(&sim);
    idle.send(&get("/health"));
    idle.response();
    let mut waiting = Client::connect(&sim);
    waiting.send(&post("/v1/chat/completions", CHAT_8));
    std::thread::sleep(Duration::from_millis(20));
    let begun = mono_ns();
    let stats = sim.stop();
    assert!(mono_ns() - begun < 1_000_000_000, "stop took too long");
    assert_eq!(stats.connections, 2);
    for c in [&mut idle, &mut waiting] {
        let mut buf = [0u8; 64];
        let n = c.sock.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "connection closed by stop");
    }
}

#[test]
fn several_threads_share_one_port() {
    let _g = lock();
    // Both threads on the first CPU this process may use: the point is the shared port.
    let cpu = core_affinity::get_core_ids().expect("affinity readable")[0].id;
    let sim = start(SimConfig {
        settings: ringbench::plan::SimSettings {
            cpus: vec![cpu, cpu],
            ..Default::default()
        },
        ..SimConfig::default()
    });
    assert_ne!(sim.addr.port(), 0);
    for _ in 0..8 {
        let mut c = Client::connect(&sim);
        c.send(&get("/health"));
        assert_eq!(c.response().status, 200);
    }
    let stats = sim.stop();
    assert_eq!((stats.threads, stats.connections), (2, 8));
}

#[test]
fn invalid_config_is_refused() {
    let zero = SimConfig {
        settings: ringbench::plan::SimSettings {
            tokens_per_chunk: 0,
            ..Default::default()
        },
        ..SimConfig::default()
    };
    assert!(sim::start(zero).is_err());
    let negative = SimConfig {
        settings: ringbench::plan::SimSettings {
            ttft_ms: -1.0,
            ..Default::default()
        },
        ..SimConfig::default()
    };
    assert!(sim::start(negative).is_err());
}

// ---- Measurements (run by hand: `cargo test --release --test it sim_wire:: -- --ignored
// --nocapture`); they print figures instead of asserting tight bounds.

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// TTFT, inter-event gaps and write lateness seen by a client, 8 connections at once.
#[test]
#[ignore]
fn measure_timing_precision() {
    let _g = lock();
    for driver in [IoDriver::Auto, IoDriver::Epoll] {
        let sim = start(SimConfig {
            io_driver: driver,
            settings: ringbench::plan::SimSettings {
                ttft_ms: 50.0,
                itl_ms: 10.0,
                ..Default::default()
            },
            ..SimConfig::default()
        });
        let addr = sim.addr;
        let runs: Vec<_> = (0..8)
            .map(|_| std::thread::spawn(move || timed_samples(addr, 6)))
            .collect();
        let (mut ttft, mut gaps, mut late) = (vec![], vec![], vec![]);
        for r in runs {
            let (t, g, l) = r.join().unwrap();
            ttft.extend(t);
            gaps.extend(g);
            late.extend(l);
        }
        let stats = sim.stop();
        eprintln!(
            "{}: ttft p50 {:.3} p99 {:.3} ms | gap p50 {:.3} p10 {:.3} p90 {:.3} ms | \
write lateness p50 {:.1} p99 {:.1} µs",
            stats.io_driver,
            percentile(&mut ttft, 0.5),
            percentile(&mut ttft, 0.99),
            percentile(&mut gaps, 0.5),
            percentile(&mut gaps, 0.1),
            percentile(&mut gaps, 0.9),
            percentile(&mut late, 0.5),
            percentile(&mut late, 0.99),
        );
    }
}

type Samples = (Vec<f64>, Vec<f64>, Vec<f64>);

fn timed_samples(addr: std::net::SocketAddr, requests: usize) -> Samples {
    let (mut ttft, mut gaps, mut late) = (vec![], vec![], vec![]);
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_nodelay(true).unwrap();
    let mut c = Client {
        sock,
        raw: vec![],
        reads: vec![],
    };
    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":20,"stream":true}"#;
    for _ in 0..requests {
        let sent = c.send(&post("/v1/chat/completions", body));
        let events = c.response().events();
        let contents = &events[1..21];
        ttft.push((contents[0].1 - sent) as f64 / 1e6);
        gaps.extend(contents.windows(2).map(|w| (w[1].1 - w[0].1) as f64 / 1e6));
        for (k, (v, _)) in contents.iter().enumerate() {
            let stamp = v.as_ref().unwrap()["ringbench_ns"].as_u64().unwrap();
            let due = sent + 50_000_000 + k as u64 * 10_000_000;
            late.push((stamp - due) as f64 / 1e3);
        }
    }
    (ttft, gaps, late)
}

/// The simulator's own CPU per request and per event, zero delays, one keep-alive client.
#[test]
#[ignore]
fn measure_sim_cost() {
    let _g = lock();
    for driver in [IoDriver::Auto, IoDriver::Epoll] {
        let short = sim_cpu(driver, 1, 0.0, 4000);
        let long = sim_cpu(driver, 256, 0.0, 400);
        let per_event = (long.0 - short.0) / (long.1 - short.1);
        let per_request = short.0 - per_event * short.1;
        let paced = sim_cpu(driver, 50, 0.2, 40);
        eprintln!(
            "{driver:?}: zero delays: {per_request:.0} ns/request + {per_event:.0} ns/event \
(1-token request {:.0} ns, 256-token {:.0} ns); one write per event (itl 0.2 ms): {:.0} ns/event",
            short.0,
            long.0,
            paced.0 / paced.1
        );
    }
}

/// (sim CPU ns per request, events per request)
fn sim_cpu(driver: IoDriver, tokens: u32, itl_ms: f64, requests: u64) -> (f64, f64) {
    let sim = start(SimConfig {
        io_driver: driver,
        settings: ringbench::plan::SimSettings {
            itl_ms,
            ..Default::default()
        },
        ..SimConfig::default()
    });
    let mut c = Client::connect(&sim);
    let body = format!(
        r#"{{"messages":[{{"role":"user","content":"hi"}}],"max_tokens":{tokens},"stream":true,"stream_options":{{"include_usage":true}}}}"#
    );
    let req = post("/v1/chat/completions", &body);
    for _ in 0..requests / 10 {
        c.send(&req);
        c.response();
    }
    let before = sim.stats();
    for _ in 0..requests {
        c.send(&req);
        c.response();
    }
    let after = sim.stop();
    let n = (after.requests - before.requests) as f64;
    let cpu = (after.cpu_ns - before.cpu_ns) as f64 / n;
    (cpu, (after.events - before.events) as f64 / n)
}
