//! Measures the SSE splitter alone (stage `sse` of http → sse → extract → record): the cost
//! of finding 16 coalesced vLLM-sized events in one read and handing out their `data`
//! values, with no JSON parsing. Reported per event (`Throughput::Elements`). Two cases:
//! all events inside one slice (zero-copy path) and the same bytes cut into 7-byte reads
//! (every event spans reads and is copied once into the splitter's buffer).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringbench::__private::sse::{SseOversized, SseSplitter};

const EVENTS: usize = 16;
const CHUNK: &str = r#"{"id":"chatcmpl-bcbfaef0df3c593b","object":"chat.completion.chunk","created":1795959947,"model":"tiny-llama","choices":[{"index":0,"delta":{"content":" more"},"logprobs":null,"finish_reason":null,"token_ids":null}]}"#;

fn coalesced_body() -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..EVENTS {
        body.extend_from_slice(b"data: ");
        body.extend_from_slice(CHUNK.as_bytes());
        body.extend_from_slice(b"\n\n");
    }
    body
}

fn split(s: &mut SseSplitter, reads: &[&[u8]]) -> usize {
    let mut total = 0;
    for read in reads {
        let pushed = s.push(read, |data| {
            total += black_box(data).len();
            Ok::<(), SseOversized>(())
        });
        assert!(pushed.is_ok());
    }
    total
}

fn bench_split(c: &mut Criterion) {
    let body = coalesced_body();
    let one_read: Vec<&[u8]> = vec![&body];
    let small_reads: Vec<&[u8]> = body.chunks(7).collect();
    let mut s = SseSplitter::new(1 << 20);
    assert_eq!(split(&mut s, &one_read), EVENTS * CHUNK.len());

    let mut g = c.benchmark_group("sse_split");
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.bench_function("16_events_one_read", |b| {
        b.iter(|| split(&mut s, black_box(&one_read)))
    });
    g.bench_function("16_events_7_byte_reads", |b| {
        b.iter(|| split(&mut s, black_box(&small_reads)))
    });
    g.finish();
}

criterion_group!(benches, bench_split);
criterion_main!(benches);
