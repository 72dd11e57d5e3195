//! Measures the record path (stage `record → collector`): what one finished request costs
//! after its last byte — the hop from a worker to the collector thread (a pass's records
//! through the worker's ring and their buffers back, against the one crossbeam channel of
//! before, a `send` per record),
//! `Collector::add` (histograms, counters, goodput) without and with the streamed
//! `requests.jsonl` line, and the line formatting alone. One 16-token streamed record,
//! the shape of the overhead benchmark's requests.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringbench::__private::{format_line, Collector};
use ringbench::plan::Plan;
use ringbench::record::handoff;
use ringbench::record::{EventStamp, OslSource, Outcome, Record};
use std::collections::VecDeque;
use std::hint::black_box;

fn record(id: u64) -> Record {
    let sent = 1_000_000 + id * 100_000;
    let events = (0..18u64)
        .map(|i| EventStamp {
            at_ns: sent + 50_000 + i * 10_000,
            server_ns: Some(sent + 49_000 + i * 10_000),
            tokens: u32::from((1..=16).contains(&i)),
            output: (1..=16).contains(&i),
            reasoning: false,
            ..Default::default()
        })
        .collect();
    Record {
        id,
        outcome: Outcome::Ok,
        status: 200,
        intended_ns: sent - 20_000,
        sent_ns: Some(sent),
        head_ns: Some(sent + 40_000),
        first_token_ns: Some(sent + 60_000),
        first_output_ns: Some(sent + 60_000),
        last_token_ns: Some(sent + 210_000),
        done_ns: Some(sent + 230_000),
        input_tokens: 128,
        output_tokens: 16,
        output_source: OslSource::Usage,
        usage_prompt_tokens: Some(128),
        usage_completion_tokens: Some(16),
        reads: 1,
        bytes: 4096,
        events,
        ..Default::default()
    }
}

fn collector_add(c: &mut Criterion) {
    let mut g = c.benchmark_group("record_path");
    g.throughput(Throughput::Elements(1));
    let plan = Plan::defaults();
    let recs: Vec<Record> = (0..1024).map(record).collect();
    let mut col = Collector::new(&plan, None).expect("no output folder");
    let mut i = 0;
    g.bench_function("collector_add_16_tokens_no_log", |b| {
        b.iter(|| {
            col.add(black_box(&recs[i % recs.len()]));
            i += 1;
        })
    });
    let dir = std::env::temp_dir().join(format!("ringbench-bench-{}", std::process::id()));
    let mut logged = Collector::new(&plan, Some(&dir)).expect("temp folder");
    g.bench_function("collector_add_16_tokens_with_jsonl", |b| {
        b.iter(|| {
            logged.add(black_box(&recs[i % recs.len()]));
            i += 1;
        })
    });
    let mut line = Vec::with_capacity(2048);
    g.bench_function("jsonl_line_16_tokens", |b| {
        b.iter(|| {
            line.clear();
            format_line(&mut line, black_box(&recs[i % recs.len()]));
            i += 1;
        })
    });
    let (tx, rx) = crossbeam_channel::bounded::<Record>(1024);
    g.bench_function("channel_hop_worker_to_collector", |b| {
        b.iter_batched(
            || record(7),
            |r| {
                tx.send(r).expect("receiver alive");
                black_box(rx.recv().expect("sender alive"))
            },
            criterion::BatchSize::SmallInput,
        )
    });
    // One pass's 8 records onto the worker's ring in one batch, taken by the collector, their
    // buffers back to the worker: per record.
    const PASS: usize = 8;
    let (mut worker, mut collector) = handoff::link(1024, 1024);
    let mut outbox = VecDeque::with_capacity(PASS);
    let mut free = Vec::with_capacity(2048);
    g.throughput(Throughput::Elements(PASS as u64));
    g.bench_function("ring_hop_worker_to_collector_8_per_pass", |b| {
        b.iter_batched(
            || (0..PASS as u64).map(record).collect::<Vec<_>>(),
            |recs| {
                outbox.extend(recs);
                worker.push_from(&mut outbox);
                collector.drain(|r| {
                    black_box(r);
                });
                worker.take_spares(&mut free);
                free.clear();
            },
            criterion::BatchSize::SmallInput,
        )
    });
    g.finish();
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group!(benches, collector_add);
criterion_main!(benches);
