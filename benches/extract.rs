//! Measures payload extraction (stage `extract` of http → sse → extract → record) and the
//! whole response path: `Extractor::event` on one ~215-byte vLLM chat chunk (simd-json tape
//! with reused buffers; stack.md's proof measured ≈280 ns), and `ResponseParser::feed` on
//! (a) a coalesced 16-event chunked response in one read and (b) the captured vLLM
//! `chat_stream_usage_64` fixture in one read: head + chunked + SSE + JSON per event.
//! Reported per event (`Throughput::Elements`).

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringbench::extract::{EventInfo, Extractor};
use ringbench::http::{Limits, Progress, ResponseParser, ResponseSink};

const CHUNK: &str = r#"{"id":"chatcmpl-bcbfaef0df3c593b","object":"chat.completion.chunk","created":1795959947,"model":"tiny-llama","choices":[{"index":0,"delta":{"content":" more"},"logprobs":null,"finish_reason":null,"token_ids":null}]}"#;

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
