//! Measures the pacer (stage `schedule → worker`): (1) its pure half, the cost per arrival of
//! walking the seeded global schedule and keeping one worker's share, which every worker does
//! between sends (Poisson and gamma at 30,000 req/s, one and two workers); (2) its clock
//! half, a 100 µs wait on the precise timer (timerfd through the runtime) against monoio's
//! wheel: the time per iteration minus 100 µs is how late the pacer wakes.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringbench::__private::schedule::Schedule;
use ringbench::plan::Arrival;
use std::hint::black_box;

const ARRIVALS: u64 = 100_000;

fn walk(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule");
    g.throughput(Throughput::Elements(ARRIVALS));
    for (name, arrival) in [
        ("poisson", Arrival::Poisson),
        ("gamma_0.5", Arrival::Gamma { burstiness: 0.5 }),
    ] {
        let s = Schedule::new(arrival, 30_000.0, 1, Some(ARRIVALS), None).expect("valid");
        for workers in [1usize, 2] {
            g.bench_function(format!("{name}_dealt_to_1_of_{workers}"), |b| {
                b.iter(|| {
                    black_box(
                        s.clone()
                            .dealt(ringbench::plan::Shard::WHOLE, 0, workers)
                            .map(|(_, t)| t)
                            .sum::<u64>(),
                    )
                })
            });
        }
    }
    g.finish();
}

/// Runs `iters` waits of `wait_ns` each inside one runtime and returns the total time.
fn timed_waits(iters: u64, wait_ns: u64, precise: bool) -> std::time::Duration {
    use ringbench::__private::{block_on, mono_ns, Ring, Timer};
    let (_, total) = block_on(
        ringbench::plan::IoDriver::Auto,
        Ring::Sleeping,
        || async move {
            let timer = Timer::new().expect("timerfd");
            let start = std::time::Instant::now();
            for _ in 0..iters {
                let due = mono_ns() + wait_ns;
                if precise {
                    timer.sleep_until(due).await.expect("timer");
                } else {
                    monoio::time::sleep(std::time::Duration::from_nanos(wait_ns)).await;
                }
            }
            start.elapsed()
        },
    )
    .expect("a runtime");
    total
}

fn wake(c: &mut Criterion) {
    let mut g = c.benchmark_group("pacer_wait_100us");
    g.sample_size(20);
    g.bench_function("precise_timerfd", |b| {
        b.iter_custom(|n| timed_waits(n, 100_000, true))
    });
    g.bench_function("monoio_wheel", |b| {
        b.iter_custom(|n| timed_waits(n, 100_000, false))
    });
    g.finish();
}

criterion_group!(benches, walk, wake);
criterion_main!(benches);
