//! ringbench embedded in a program: a plan against the in-process simulator (no URL), run
//! with an observer that sees every record as it is collected, then two figures from the
//! summary. `cargo run --release --example embed`.
//!
//! The simulator answers like a small model here (20 ms to the first token, a token every
//! 5 ms, 32 tokens), 200 requests at 100 req/s (Poisson), on the first CPU for the client
//! and another for the simulator where the machine has one.

use ringbench::plan::{Arrival, Load, Stop};
use ringbench::{LiveCounts, Observer, Plan, Record};
use std::sync::atomic::AtomicBool;

/// Counts the records as they come, and the slowest first token seen.
#[derive(Default)]
struct Watch {
    records: u64,
    slowest_ttft_ns: u64,
}

impl Observer for Watch {
    fn on_record(&mut self, r: &Record) {
        self.records += 1;
        self.slowest_ttft_ns = self.slowest_ttft_ns.max(r.ttft_ns().unwrap_or(0));
    }

    fn on_progress(&mut self, live: &LiveCounts, elapsed_s: f64) {
        eprintln!(
            "{elapsed_s:.1} s: {} ok, {} in flight",
            live.tally.ok,
            live.in_flight.unwrap_or(0)
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let online = ringbench::host::online_cpus();
    let mut plan = Plan::defaults();
    plan.cpus = ringbench::host::default_worker_cpus(&online);
    if let Some(sim) = plan.sim.as_mut() {
        sim.cpus = ringbench::host::default_sim_cpus(&online, &plan.cpus);
        sim.ttft_ms = 20.0;
        sim.itl_ms = 5.0;
    }
    plan.output_tokens = 32;
    plan.load = Load::Open {
        request_rate: 100.0,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    plan.stop = Stop {
        request_count: Some(200),
        duration_ns: None,
    };
    plan.validate()?;

    let mut watch = Watch::default();
    let summary = ringbench::run_with(&plan, &AtomicBool::new(false), &mut watch)?;

    let ttft = &summary.latency_ms.ttft;
    println!(
        "{} records seen, {} ok; TTFT p50 {:.2} ms (slowest {:.2} ms); {:.1} output tokens/s",
        watch.records,
        summary.counts.tally.ok,
        ttft.p50.unwrap_or(f64::NAN),
        watch.slowest_ttft_ns as f64 / 1e6,
        summary.throughput.output_tokens_per_s.unwrap_or(0.0),
    );
    println!(
        "the client's own cost: scheduling lag p99 {:.3} ms, valid: {}, exit {}",
        summary.overhead.sched_lag_ms.p99.unwrap_or(f64::NAN),
        summary.overhead.valid,
        summary.exit(false).code()
    );
    Ok(())
}
