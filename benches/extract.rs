//! Measures payload extraction (stage `extract` of http → sse → extract → record) and the
//! whole response path: `Extractor::event` on one ~215-byte vLLM chat chunk (simd-json tape
//! with reused buffers; stack.md's proof measured ≈280 ns), and `ResponseParser::feed` on
//! (a) a coalesced 16-event chunked response in one read and (b) the captured vLLM
//! `chat_stream_usage_64` fixture in one read: head + chunked + SSE + JSON per event.
//! Reported per event (`Throughput::Elements`). The other APIs: a vLLM Responses
//! `response.output_text.delta` event and a Messages `content_block_delta` through
//! `Extractor::event`, and an 8 x 1,024-float embeddings body through `PooledScanner` in
//! 16 KiB slices (per body; bytes/s): as vLLM's floats (~170 KB) and as base64 (~44 KB).

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringbench::__private::extract::{EventInfo, Extractor, PooledScanner};
use ringbench::__private::http::{Limits, Progress, ResponseParser, ResponseSink};
use ringbench::plan::Endpoint;

const CHUNK: &str = r#"{"id":"chatcmpl-bcbfaef0df3c593b","object":"chat.completion.chunk","created":1795959947,"model":"tiny-llama","choices":[{"index":0,"delta":{"content":" more"},"logprobs":null,"finish_reason":null,"token_ids":null}]}"#;

const RESPONSES_DELTA: &str = r#"{"content_index":0,"delta":"chinggrund","item_id":"msg_ba38691dbb603cc9","logprobs":[],"output_index":0,"sequence_number":5,"type":"response.output_text.delta"}"#;

const MESSAGES_DELTA: &str =
    r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"els"},"index":0}"#;

/// Element `d` of vector `i`: roughly normal with the spread of a normalized 1,024-wide
/// vector's entries (σ ≈ 1/32), an f32 widened to a double, as vLLM's JSON holds them.
fn element(i: usize, d: usize) -> f32 {
    let mut x = ((i as u64) << 32) | d as u64;
    let mut sum = 0.0;
    for _ in 0..4 {
        x = ringbench::plan::workload::splitmix64(x);
        sum += (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    }
    (sum * 0.054) as f32
}

/// An embeddings answer of `inputs` vectors of `dims` floats, as vLLM writes it: each an f32
/// widened to a double in its shortest round-trip text (Python's `repr`: 17-21 characters,
/// an exponent for the few below 1e-4), or base64 of the little-endian f32 bytes.
fn embeddings_body(inputs: usize, dims: usize, base64: bool) -> Vec<u8> {
    use base64::Engine;
    let mut body =
        String::from(r#"{"id":"embd-1","object":"list","created":1,"model":"m","data":["#);
    for i in 0..inputs {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&format!(
            r#"{{"index":{i},"object":"embedding","embedding":"#
        ));
        if base64 {
            let bytes: Vec<u8> = (0..dims)
                .flat_map(|d| element(i, d).to_le_bytes())
                .collect();
            let text = base64::engine::general_purpose::STANDARD.encode(bytes);
            body.push_str(&format!("\"{text}\""));
        } else {
            let floats: Vec<String> = (0..dims)
                .map(|d| format!("{:?}", f64::from(element(i, d))))
                .collect();
            body.push_str(&format!("[{}]", floats.join(",")));
        }
        body.push('}');
    }
    body.push_str(r#"],"usage":{"prompt_tokens":50,"total_tokens":50}}"#);
    body.into_bytes()
}

/// Counts events so the work cannot be optimised away.
#[derive(Default)]
struct Count(u64);
impl ResponseSink for Count {
    fn head(&mut self, status: u16, _: bool) {
        self.0 += u64::from(status);
    }
    fn event(&mut self, ev: &EventInfo) {
        self.0 += u64::from(ev.content_bytes) + 1;
    }
}

fn coalesced_response(events: usize) -> Vec<u8> {
    let mut wire =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    for _ in 0..events {
        let event = format!("data: {CHUNK}\n\n");
        wire.extend_from_slice(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sse")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

fn parse_whole(p: &mut ResponseParser, wire: &[u8]) -> u64 {
    let mut sink = Count::default();
    p.reset();
    let done = p.feed(wire, &mut sink);
    assert!(matches!(done, Ok(Progress::Done { .. })), "{done:?}");
    sink.0
}

fn bench_extract(c: &mut Criterion) {
    let mut x = Extractor::new();
    assert_eq!(x.event(CHUNK.as_bytes()).map(|e| e.content_bytes), Ok(5));
    let mut g = c.benchmark_group("extract");
    g.throughput(Throughput::Elements(1));
    g.bench_function("vllm_chunk_215_bytes", |b| {
        b.iter(|| x.event(black_box(CHUNK.as_bytes())))
    });
    let mut r = Extractor::for_endpoint(Endpoint::Responses);
    assert_eq!(
        r.event(RESPONSES_DELTA.as_bytes()).map(|e| e.content_bytes),
        Ok(10)
    );
    g.bench_function("responses_output_text_delta", |b| {
        b.iter(|| r.event(black_box(RESPONSES_DELTA.as_bytes())))
    });
    let mut m = Extractor::for_endpoint(Endpoint::Messages);
    assert_eq!(
        m.event(MESSAGES_DELTA.as_bytes()).map(|e| e.content_bytes),
        Ok(3)
    );
    g.bench_function("messages_content_block_delta", |b| {
        b.iter(|| m.event(black_box(MESSAGES_DELTA.as_bytes())))
    });
    g.finish();

    let mut s = PooledScanner::new(Endpoint::Embeddings);
    let mut scan = |body: &[u8]| {
        s.reset();
        body.chunks(16 * 1024).for_each(|slice| s.push(slice));
        s.finish()
    };
    let mut g = c.benchmark_group("pooled");
    for (name, base64) in [
        ("embeddings_8x1024_floats", false),
        ("embeddings_8x1024_base64", true),
    ] {
        let body = embeddings_body(8, 1024, base64);
        let e = scan(&body).expect("a valid answer");
        assert_eq!((e.items, e.vector_len), (8, 1024));
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| b.iter(|| scan(black_box(&body))));
    }
    g.finish();
}

fn bench_response(c: &mut Criterion) {
    let mut p = ResponseParser::new(Limits::default());
    let coalesced = coalesced_response(16);
    let vllm64 = fixture("vllm-cpu/chat_stream_usage_64.wire.bin");
    let mut g = c.benchmark_group("response");
    g.throughput(Throughput::Elements(16));
    g.bench_function("coalesced_16_events_one_read", |b| {
        b.iter(|| parse_whole(&mut p, black_box(&coalesced)))
    });
    // 24 events (21 token-bearing, usage, [DONE]) in the vLLM 64-token capture.
    g.throughput(Throughput::Elements(24));
    g.bench_function("vllm_chat_stream_usage_64_one_read", |b| {
        b.iter(|| parse_whole(&mut p, black_box(&vllm64)))
    });
    g.finish();
}

criterion_group!(benches, bench_extract, bench_response);
criterion_main!(benches);
