//! The collector against exact arithmetic: hand-built records with known stamps go in, and
//! every figure of `docs/metrics.md` that comes out is checked against the value worked out by
//! hand in the comments. Percentiles come from a 3-significant-digit histogram, so they are
//! checked to 0.1%; counts, sums, means, min and max are exact.

use super::{Collector, RunFacts, WorkerStats};
use crate::output::console;
use crate::plan::{Arrival, Load, Plan, Slo, SloMetric};
use crate::record::{EventStamp, InputSource, OslSource, Outcome, Record};
use crate::run::testkit::out_dir;
use crate::summary::{InputSourceCounts, Summary};

const MS: u64 = 1_000_000;

fn assert_close(got: Option<f64>, want: f64) {
    let got = got.unwrap_or_else(|| panic!("expected {want}, got null"));
    assert!(
        (got - want).abs() <= want.abs() * 1e-3 + 1e-9,
        "got {got}, want {want} (±0.1%)"
    );
}

fn assert_exact(got: Option<f64>, want: f64) {
    let got = got.unwrap_or_else(|| panic!("expected {want}, got null"));
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "got {got}, want {want}"
    );
}

fn token(at_ns: u64) -> EventStamp {
    EventStamp {
        at_ns,
        tokens: 1,
        output: true,
        ..Default::default()
    }
}

/// A successful streamed request: one token per event at `tokens_ms`, done 1 ms after
/// the last token unless `done_ms` says otherwise.
fn ok(id: u64, intended_ms: f64, sent_ms: u64, tokens_ms: &[u64], done_ms: u64) -> Record {
    let ms = |v: u64| v * MS;
    let first = ms(tokens_ms[0]);
    let last = ms(*tokens_ms.last().unwrap());
    let mut events = vec![EventStamp {
        at_ns: ms(sent_ms) + MS / 2,
        ..Default::default()
    }];
    events.extend(tokens_ms.iter().map(|&t| token(ms(t))));
    Record {
        id,
        outcome: Outcome::Ok,
        status: 200,
        intended_ns: (intended_ms * MS as f64) as u64,
        sent_ns: Some(ms(sent_ms)),
        head_ns: Some(ms(sent_ms + 1)),
        first_token_ns: Some(first),
        first_output_ns: Some(first),
        first_visible_ns: Some(first),
        last_token_ns: Some(last),
        done_ns: Some(ms(done_ms)),
        input_tokens: 10,
        output_tokens: tokens_ms.len() as u32,
        output_source: OslSource::Usage,
        reads: tokens_ms.len() as u32 + 1,
        events,
        ..Default::default()
    }
}

fn failed(id: u64, outcome: Outcome, status: u16, sent_ms: u64, done_ms: u64) -> Record {
    Record {
        id,
        outcome,
        status,
        intended_ns: sent_ms * MS,
        sent_ns: Some(sent_ms * MS),
        head_ns: (status != 0).then_some(sent_ms * MS + 10),
        done_ns: Some(done_ms * MS),
        input_tokens: 10,
        ..Default::default()
    }
}

/// A: sent 1 ms, tokens at 11, 13, 15, 17 ms, done 18 ms: TTFT 10, TPOT 2, gaps 2,2,2,
/// E2E 17, OSL 4, NTPOT 4.25, ISL 10.
fn request_a() -> Record {
    ok(0, 0.9, 1, &[11, 13, 15, 17], 18)
}

/// B: sent 6 ms, tokens at 26, 30, 34 ms, done 36 ms: TTFT 20, TPOT 4, gaps 4,4, E2E 30,
/// OSL 3, NTPOT 10, ISL 20; reasoning first, so its first output is at 30 ms (TTFO 24), and
/// that output white space, so its first visible output is at 34 ms (TTFV 28).
fn request_b() -> Record {
    let mut b = ok(1, 5.9, 6, &[26, 30, 34], 36);
    b.input_tokens = 20;
    b.first_output_ns = Some(30 * MS);
    b.first_visible_ns = Some(34 * MS);
    b.events[1].output = false;
    b.events[1].reasoning = true;
    b
}

/// The same request, every stamp `by_ns` later (as `merge` moves a shard's).
fn shifted(mut r: Record, by_ns: u64) -> Record {
    super::merge::shift_stamps(&mut r, i128::from(by_ns));
    r
}

fn facts(scheduled: u64) -> RunFacts {
    RunFacts {
        started_at: "2026-11-29T15:00:00Z".into(),
        io_driver: "epoll".into(),
        scheduled,
        ..Default::default()
    }
}

fn run(plan: &Plan, records: &[Record], facts: RunFacts) -> Summary {
    let mut c = Collector::new(plan, None).unwrap();
    records.iter().for_each(|r| c.add(r));
    c.finish(facts).unwrap()
}

fn has_warning(s: &Summary, needle: &str) -> bool {
    s.warnings.iter().any(|w| w.contains(needle))
}

#[test]
fn per_request_latencies_are_exact() {
    let s = run(&Plan::defaults(), &[request_a(), request_b()], facts(2));
    let l = &s.latency_ms;
    assert_eq!(l.ttft.count, 2);
    assert_exact(l.ttft.mean, 15.0);
    assert_exact(l.ttft.std, 5.0);
    assert_exact(l.ttft.min, 10.0);
    assert_exact(l.ttft.max, 20.0);
    assert_exact(l.ttfo.mean, (10.0 + 24.0) / 2.0);
    assert_exact(l.ttfv.mean, (10.0 + 28.0) / 2.0);
    assert_exact(l.ttfv.max, 28.0);
    assert_exact(l.ttfb.mean, 1.0);
    assert_exact(l.tpot.mean, 3.0);
    assert_exact(l.tpot.min, 2.0);
    assert_exact(l.e2e.mean, 23.5);
    assert_exact(l.ntpot.mean, (4.25 + 10.0) / 2.0);
    // TTFT from intent: 11 − 0.9 and 26 − 5.9; E2E from intent: 18 − 0.9 and 36 − 5.9.
    assert_exact(l.ttft_from_intent.mean, (10.1 + 20.1) / 2.0);
    assert_exact(l.e2e_from_intent.mean, (17.1 + 30.1) / 2.0);
    assert_exact(l.max_stall.max, 4.0);
}

#[test]
fn itl_is_every_gap_of_every_request() {
    let s = run(&Plan::defaults(), &[request_a(), request_b()], facts(2));
    let itl = &s.latency_ms.itl;
    // Gaps 2, 2, 2, 4, 4.
    assert_eq!(itl.count, 5);
    assert_exact(itl.mean, 2.8);
    assert_exact(itl.min, 2.0);
    assert_exact(itl.max, 4.0);
    assert_close(itl.p50, 2.0);
    assert_close(itl.p90, 4.0);
    assert_exact(itl.p99, 4.0);
}

#[test]
fn duration_and_throughputs_follow_metrics_md() {
    let s = run(&Plan::defaults(), &[request_a(), request_b()], facts(2));
    // Last done 36 ms − first sent 1 ms.
    assert_exact(Some(s.duration_s), 0.035);
    assert_exact(s.throughput.requests_per_s, 2.0 / 0.035);
    assert_exact(s.throughput.output_tokens_per_s, 7.0 / 0.035);
    assert_exact(s.throughput.total_tokens_per_s, (30.0 + 7.0) / 0.035);
    assert_eq!(s.tokens.input_total, 30);
    assert_eq!(s.tokens.output_total, 7);
    assert_eq!(s.tokens.output_source.usage, 2);
    // Sends at 1 and 6 ms: one gap of 5 ms.
    assert_exact(s.achieved.request_rate, 200.0);
    // Little's law: (17 + 30) ms of requests in 35 ms.
    assert_exact(s.achieved.concurrency_mean, 47.0 / 35.0);
    // No SLO given: no goodput figure rather than a made-up one.
    assert_eq!(s.throughput.goodput_requests_per_s, None);
    assert_eq!(s.throughput.good_fraction, None);
    assert_exact(s.overhead.sched_lag_ms.max, 0.1);
}

#[test]
fn warmup_is_excluded_from_every_figure_but_counted_and_logged() {
    let mut warm = ok(9, 0.0, 0, &[500, 900], 1_000);
    warm.warmup = true;
    let mut warm_failed = failed(10, Outcome::Timeout, 0, 0, 2_000);
    warm_failed.warmup = true;
    let dir = out_dir("warmup");
    let plan = Plan::defaults();
    let mut c = Collector::new(&plan, Some(&dir)).unwrap();
    for r in [&warm, &warm_failed, &request_a(), &request_b()] {
        c.add(r);
    }
    let s = c.finish(facts(4)).unwrap();
    let plain = run(&plan, &[request_a(), request_b()], facts(2));
    assert_eq!(s.counts.warmup, 2);
    assert_eq!(s.counts.scheduled, 2);
    assert_eq!((s.counts.tally.sent, s.counts.tally.failed), (2, 0));
    assert!(s.counts.failed_by_kind.is_empty());
    assert_eq!(s.latency_ms, plain.latency_ms);
    assert_eq!(s.duration_s, plain.duration_s);
    assert_eq!(s.throughput, plain.throughput);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    let log = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["warmup"], true);
    assert_eq!(lines[1]["outcome"], "timeout");
    assert_eq!(lines[2]["warmup"], false);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn requests_jsonl_is_enough_to_recompute_a_request() {
    let dir = out_dir("jsonl");
    let plan = Plan::defaults();
    let mut c = Collector::new(&plan, Some(&dir)).unwrap();
    let mut b = request_b();
    b.events[2].server_ns = Some(29 * MS);
    c.add(&b);
    c.finish(facts(1)).unwrap();
    let log = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(log.trim_end()).unwrap();
    let ns = |k: &str| v[k].as_u64().unwrap();
    assert_eq!(ns("first_token_ns") - ns("sent_ns"), b.ttft_ns().unwrap());
    assert_eq!(ns("done_ns") - ns("sent_ns"), b.e2e_ns().unwrap());
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), b.events.len());
    // [at_ns, tokens, server_ns, flags]: reasoning is flag 2, output flag 1.
    assert_eq!(events[1], serde_json::json!([26 * MS, 1, null, 2]));
    assert_eq!(events[2], serde_json::json!([30 * MS, 1, 29 * MS, 1]));
    let gaps: Vec<u64> = events
        .windows(2)
        .filter(|w| w[0][1].as_u64() > Some(0))
        .map(|w| w[1][0].as_u64().unwrap() - w[0][0].as_u64().unwrap())
        .collect();
    assert_eq!(gaps, b.itl_gaps_ns().collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failures_stay_out_of_latency_but_count_against_goodput() {
    let mut plan = Plan::defaults();
    // A meets TTFT ≤ 15 ms; B (20 ms) does not.
    plan.goodput = vec![Slo {
        metric: SloMetric::Ttft,
        max_ms: 15.0,
    }];
    let records = [
        request_a(),
        request_b(),
        failed(2, Outcome::HttpStatus, 503, 3, 4),
        failed(3, Outcome::Timeout, 0, 4, 30),
        failed(4, Outcome::HttpStatus, 503, 5, 6),
    ];
    let s = run(&plan, &records, facts(5));
    let c = &s.counts;
    let t = c.tally;
    assert_eq!((t.sent, t.ok, t.failed, t.cancelled), (5, 2, 3, 0));
    assert_eq!(c.failed_by_kind.get("http_503"), Some(&2));
    assert_eq!(c.failed_by_kind.get("timeout"), Some(&1));
    assert_eq!(c.failed_by_kind.len(), 2);
    let ok_only = run(&Plan::defaults(), &[request_a(), request_b()], facts(2));
    assert_eq!(s.latency_ms, ok_only.latency_ms);
    assert_exact(Some(s.duration_s), 0.035);
    assert_exact(s.throughput.requests_per_s, 2.0 / 0.035);
    assert_exact(s.throughput.goodput_requests_per_s, 1.0 / 0.035);
    assert_exact(s.throughput.goodput_output_tokens_per_s, 4.0 / 0.035);
    assert_exact(s.throughput.good_fraction, 1.0 / 5.0);
    // Failures held a slot: (17 + 30 + 1 + 26 + 1) ms in 35 ms.
    assert_exact(s.achieved.concurrency_mean, 75.0 / 35.0);
    // Sched lag is over every sent request.
    assert_eq!(s.overhead.sched_lag_ms.count, 5);
}

#[test]
fn each_slo_kind_separates_the_requests_it_should() {
    let slo = |metric, max_ms| Slo { metric, max_ms };
    let cases = [
        // (SLO, how many of A and B meet it)
        (slo(SloMetric::Tpot, 3.0), 1),  // A 2, B 4
        (slo(SloMetric::Itl, 3.0), 1),   // A's gaps ≤ 2, B's 4
        (slo(SloMetric::Itl, 4.0), 2),   // bound inclusive
        (slo(SloMetric::E2e, 20.0), 1),  // A 17, B 30
        (slo(SloMetric::Ntpot, 5.0), 1), // A 4.25, B 10
        (slo(SloMetric::Ttft, 5.0), 0),
    ];
    for (slo, good) in cases {
        let mut plan = Plan::defaults();
        plan.goodput = vec![slo];
        let s = run(&plan, &[request_a(), request_b()], facts(2));
        assert_exact(s.throughput.good_fraction, good as f64 / 2.0);
    }
    let mut plan = Plan::defaults();
    plan.goodput = vec![slo(SloMetric::Ttft, 25.0), slo(SloMetric::E2e, 20.0)];
    let s = run(&plan, &[request_a(), request_b()], facts(2));
    assert_exact(s.throughput.good_fraction, 0.5);
}

#[test]
fn small_samples_are_marked_per_percentile() {
    let mut plan = Plan::defaults();
    plan.percentiles = vec![50.0, 99.0, 99.9, 99.99];
    let many = |n: u64| -> Vec<Record> {
        (0..n)
            .map(|i| ok(i, i as f64, i, &[i + 10, i + 12], i + 13))
            .collect()
    };
    let s = run(&plan, &many(50), facts(50));
    assert_eq!(s.latency_ms.ttft.small_sample, ["p99", "p99_9", "p99_99"]);
    let s = run(&plan, &many(100), facts(100));
    assert_eq!(s.latency_ms.ttft.small_sample, ["p99_9", "p99_99"]);
    assert_close(s.latency_ms.ttft.get("p99_99"), 10.0);
    let s = run(&plan, &many(1000), facts(1000));
    assert_eq!(s.latency_ms.ttft.small_sample, ["p99_99"]);
    let json = serde_json::to_value(&s).unwrap();
    assert!(json["latency_ms"]["e2e"]["p99_99"].is_number());
    assert_eq!(json["latency_ms"]["e2e"]["small_sample"][0], "p99_99");
}

#[test]
fn percentiles_of_a_known_spread() {
    // TTFTs of 1..=1000 ms: nearest-rank p50 = 500, p90 = 900, p99 = 990, p99.9 = 999.
    let records: Vec<Record> = (1..=1000)
        .map(|i| ok(i, 0.0, 0, &[i, i + 1], i + 2))
        .collect();
    let s = run(&Plan::defaults(), &records, facts(1000));
    let t = &s.latency_ms.ttft;
    assert_close(t.p50, 500.0);
    assert_close(t.p90, 900.0);
    assert_close(t.p95, 950.0);
    assert_close(t.p99, 990.0);
    assert_close(t.p99_9, 999.0);
    assert_exact(t.mean, 500.5);
    assert!(t.small_sample.is_empty());
}

#[test]
fn invariants_hold_and_a_lost_record_is_a_loud_warning() {
    let not_sent = Record {
        id: 2,
        intended_ns: 40 * MS,
        ..Default::default()
    };
    let cancelled = Record {
        outcome: Outcome::Cancelled,
        sent_ns: Some(7 * MS),
        intended_ns: 7 * MS,
        ..Default::default()
    };
    let records = [request_a(), request_b(), not_sent, cancelled];
    let s = run(&Plan::defaults(), &records, facts(4));
    let c = &s.counts;
    let t = c.tally;
    assert_eq!(c.scheduled, t.sent + t.not_sent);
    assert_eq!(t.sent, t.ok + t.failed + t.cancelled);
    assert_eq!((t.not_sent, t.cancelled), (1, 1));
    assert!(!has_warning(&s, "INVARIANT"), "{:?}", s.warnings);

    let s = run(&Plan::defaults(), &records, facts(6));
    assert!(
        has_warning(&s, "INVARIANT BROKEN: scheduled 6"),
        "{:?}",
        s.warnings
    );
}

/// Requests A and B under the default plan, made by these workers.
fn run_two_on(workers: Vec<WorkerStats>) -> Summary {
    run(
        &Plan::defaults(),
        &[request_a(), request_b()],
        RunFacts {
            workers,
            ..facts(2)
        },
    )
}

#[test]
fn overhead_is_valid_when_the_client_kept_up() {
    let mut w = WorkerStats::new(0, 1);
    (w.cpu_ns, w.wall_ns) = (20 * MS, 100 * MS);
    (
        w.counts.reads,
        w.counts.events,
        w.counts.bytes,
        w.counts.requests,
    ) = (10, 20, 4_000, 2);
    w.loop_lag.record(50_000).unwrap();
    let s = run_two_on(vec![w]);
    let o = &s.overhead;
    assert!(o.valid, "{:?}", o.invalid_reasons);
    assert_eq!(s.exit(false).code(), 0);
    assert_exact(o.worker_cpu_percent, 20.0);
    assert_exact(o.events_per_read_mean, 2.0);
    assert_exact(o.bytes_per_read_mean, 400.0);
    assert_exact(o.cpu_ns_per_request, 10.0 * MS as f64);
    assert_exact(o.cpu_ns_per_event, MS as f64);
    assert_close(o.loop_lag_ms.p99, 0.05);
    assert_eq!(o.io_driver, "epoll");
    assert_eq!(o.delivery_delay_ms, None);
}

#[test]
fn loop_lag_is_judged_on_a_p99_of_enough_probes_only() {
    // A short run: 3 probes, the first wake-up 7 ms late. Its "p99" is that one wake-up.
    let mut w = WorkerStats::new(0, 1);
    for lag_ns in [7 * MS, 40_000, 50_000] {
        w.loop_lag.record(lag_ns).unwrap();
    }
    let s = run_two_on(vec![w.clone()]);
    assert_close(s.overhead.loop_lag_ms.p99, 7.0);
    assert!(s.overhead.loop_lag_ms.is_small("p99"));
    assert!(!has_warning(&s, "event-loop lag"), "{:?}", s.warnings);
    // A second of probes with the same 2% late: a p99 that means something, warned.
    for _ in 0..97 {
        w.loop_lag.record(50_000).unwrap();
    }
    w.loop_lag.record(7 * MS).unwrap();
    let s = run_two_on(vec![w]);
    assert!(!s.overhead.loop_lag_ms.is_small("p99"));
    assert!(
        has_warning(&s, "event-loop lag p99 7.0"),
        "{:?}",
        s.warnings
    );
}

#[test]
fn idle_polling_is_cpu_but_not_saturation() {
    // A polling worker: 99% of its core, 60 points of it in spin passes that served nothing.
    let mut w = WorkerStats::new(0, 1);
    (w.cpu_ns, w.wall_ns) = (99 * MS, 100 * MS);
    (w.pacer_spun_ns, w.pacer_idle_ns) = (90 * MS, 60 * MS);
    (w.counts.events, w.counts.requests) = (20, 2);
    let s = run_two_on(vec![w.clone()]);
    let o = &s.overhead;
    assert!(o.valid, "{:?}", o.invalid_reasons);
    assert_exact(o.worker_cpu_percent, 99.0);
    assert_exact(o.cpu_ns_per_request, 49.5 * MS as f64);
    assert_exact(o.busy_cpu_ns_per_request, 19.5 * MS as f64);
    assert_exact(o.busy_cpu_ns_per_event, 1.95 * MS as f64);
    assert_exact(o.workers[0].pacer_idle_percent, 60.0);
    assert_exact(o.workers[0].busy_percent, 39.0);
    // The same CPU with only 3 points idle is a saturated worker.
    w.pacer_idle_ns = 3 * MS;
    let s = run_two_on(vec![w]);
    let r = &s.overhead.invalid_reasons;
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("saturated: busy 96.0%"), "{r:?}");
}

#[test]
fn kernel_backlog_drops_on_the_client_cpus_invalidate_and_retransmits_warn() {
    let kernel_net = |client_drops, timeouts| crate::summary::NetDelta {
        backlog_drops_client_cpus: Some(client_drops),
        backlog_drops_all_cpus: Some(client_drops + 5),
        tcp_retransmitted_segments: Some(timeouts * 2),
        tcp_retransmit_timeouts: Some(timeouts),
        tcp_loss_probes: Some(0),
        tcp_listen_drops: Some(0),
    };
    let judged = |client_drops, timeouts| {
        let facts = RunFacts {
            kernel_net: Some(kernel_net(client_drops, timeouts)),
            ..facts(2)
        };
        run(&Plan::defaults(), &[request_a(), request_b()], facts)
    };
    // Drops on other CPUs alone (the server's) are the host's business, not the client's.
    let quiet = judged(0, 0);
    assert!(quiet.overhead.valid, "{:?}", quiet.overhead.invalid_reasons);
    assert!(!has_warning(&quiet, "TCP on this host"));
    let dropped = judged(3, 2);
    assert!(!dropped.overhead.valid);
    assert_eq!(dropped.exit(false).code(), 4);
    let reasons = dropped.overhead.invalid_reasons.join("\n");
    assert!(reasons.contains("dropped 3 packets"), "{reasons}");
    assert!(
        has_warning(&dropped, "4 retransmitted, 2 retransmit timeouts"),
        "{:?}",
        dropped.warnings
    );
    let net = dropped.overhead.kernel_net.as_ref().expect("reported");
    assert_eq!(net.backlog_drops_all_cpus, Some(8));
}

#[test]
fn overhead_invalid_reasons_name_each_broken_bound() {
    let mut plan = Plan::defaults();
    plan.load = Load::Open {
        request_rate: 1000.0,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    plan.max_lag_ms = 0.05;
    let mut busy = WorkerStats::new(1, 3);
    (busy.cpu_ns, busy.wall_ns) = (96 * MS, 100 * MS);
    busy.counts.channel_full = 3;
    // The schedule asked for B 1 ms after A (1000 req/s); it went out 5 ms after.
    let mut late_b = request_b();
    late_b.intended_ns = 1_900_000;
    let s = run(
        &plan,
        &[request_a(), late_b],
        RunFacts {
            workers: vec![WorkerStats::new(0, 2), busy],
            ..facts(2)
        },
    );
    let r = &s.overhead.invalid_reasons;
    assert!(!s.overhead.valid);
    assert_eq!(s.exit(false).code(), 4);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(r[0].contains("achieved rate 200.00 req/s is below 99% of the 1000.00 req/s"));
    assert!(r[1].contains("scheduling lag p99 4.100 ms"));
    assert!(r[2].contains("worker 1 (cpu 3) saturated: busy 96.0%"));
    assert!(r[3].contains("3 records found the collector channel full"));
    assert_eq!(s.target.request_rate, Some(1000.0));
}

#[test]
fn the_rate_bound_is_against_the_schedule_not_the_luck_of_its_draw() {
    // A Poisson draw that came out at 950 req/s against a 1000 req/s target, sent on time:
    // the client kept up, so the run is valid; sent late, it is not.
    let mut plan = Plan::defaults();
    plan.load = Load::Open {
        request_rate: 1000.0,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    let gap_ns = 1_000_000_000 / 950;
    let on_time: Vec<Record> = (0..20)
        .map(|i| shifted(ok(i, 0.0, 0, &[1, 2], 3), i * gap_ns))
        .collect();
    let s = run(&plan, &on_time, facts(20));
    assert_close(s.achieved.request_rate, 950.0);
    assert_close(s.achieved.schedule_rate, 950.0);
    assert!(s.overhead.valid, "{:?}", s.overhead.invalid_reasons);

    let mut late = on_time.clone();
    let last = late.last_mut().unwrap();
    last.sent_ns = last.sent_ns.map(|v| v + 2 * MS);
    last.done_ns = last.done_ns.map(|v| v + 2 * MS);
    plan.max_lag_ms = 10.0;
    let s = run(&plan, &late, facts(20));
    assert!(!s.overhead.valid);
    assert!(s.overhead.invalid_reasons[0].contains("of the 950.00 req/s the schedule asked for"));
}

#[test]
fn closed_loop_has_no_rate_bound_and_no_stream_has_no_ttft() {
    let mut plan = Plan::defaults();
    plan.stream = false;
    plan.load = Load::Closed { concurrency: 8 };
    let s = run(&plan, &[request_a(), request_b()], facts(2));
    assert!(s.overhead.valid);
    assert_eq!(s.target.concurrency, Some(8));
    assert_eq!(s.target.request_rate, None);
    assert_eq!(s.latency_ms.ttft.count, 0);
    assert_eq!(s.latency_ms.ttft.mean, None);
    assert_eq!(s.latency_ms.itl.count, 0);
    assert_eq!(s.latency_ms.e2e.count, 2);
    assert_exact(s.latency_ms.ntpot.mean, (4.25 + 10.0) / 2.0);
}

#[test]
fn delivery_delay_is_event_stamp_minus_server_stamp() {
    let mut a = request_a();
    for (i, e) in a.events.iter_mut().skip(1).enumerate() {
        e.server_ns = Some(e.at_ns - (i as u64 + 1) * 10_000);
    }
    let s = run(&Plan::defaults(), &[a], facts(1));
    let d = s
        .overhead
        .delivery_delay_ms
        .expect("stamped events give a delay");
    // Delays of 10, 20, 30, 40 µs.
    assert_eq!(d.count, 4);
    assert_exact(d.mean, 0.025);
    assert_exact(d.max, 0.04);
}

#[test]
fn nothing_measured_gives_nulls_not_zeros() {
    let s = run(&Plan::defaults(), &[], facts(0));
    assert_eq!(s.duration_s, 0.0);
    assert_eq!(s.throughput.requests_per_s, None);
    assert_eq!(s.achieved.request_rate, None);
    assert_eq!(s.latency_ms.e2e.count, 0);
    assert!(s.overhead.valid);
}

#[test]
fn summary_json_has_exactly_the_interface_keys_and_is_written_atomically() {
    let s = run(&Plan::defaults(), &[request_a(), request_b()], facts(2));
    let dir = out_dir("summary");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("summary.json"), "{\"old\": true}").unwrap();
    console::write_summary_json(&dir, &s).unwrap();

    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["summary.json"], "no temporary file is left behind");
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    let mut want = [
        "schema_version",
        "tool",
        "started_at",
        "host",
        "config",
        "counts",
        "duration_s",
        "throughput",
        "target",
        "achieved",
        "latency_ms",
        "tokens",
        "overhead",
        "warnings",
        "interrupted",
        "timeseries",
        "workload",
        "verdict",
        "server",
        // What the server said of itself before the run: null without one asked.
        "served",
        "stalls",
        "sessions",
        "cancellations",
        // Several `--url`s' breakdown: always present, null with one server.
        "endpoints",
        // `--stages`' breakdown: always present, null without stages.
        "stages",
        // Tool calls: always present, null without `--tools` or a call.
        "tools",
        // A pooling endpoint's figures: always present, null for a generating one.
        "pooling",
        // The failures by reason: always present, empty without one.
        "errors",
        // What the requests carried (body bytes, images, audio): always present.
        "upload",
        // The connections as the kernel saw them (TCP_INFO): null without a connection.
        "network",
    ];
    want.sort_unstable();
    assert_eq!(keys, want);
    assert!(
        v["stages"].is_null(),
        "a run without --stages has no breakdown"
    );
    assert!(v["tools"].is_null() && v["pooling"].is_null());
    for k in [
        "ttft",
        "ttst",
        "ttfo",
        "ttfv",
        "ttfb",
        "tpot",
        "itl",
        "e2e",
        "ntpot",
        "ttft_from_intent",
        "e2e_from_intent",
    ] {
        for f in [
            "count", "mean", "std", "min", "max", "p50", "p90", "p95", "p99", "p99_9",
        ] {
            assert!(v["latency_ms"][k].get(f).is_some(), "latency_ms.{k}.{f}");
        }
    }
    for k in [
        "scheduled",
        "sent",
        "ok",
        "failed",
        "cancelled",
        "not_sent",
        "warmup",
        "failed_by_kind",
    ] {
        assert!(v["counts"].get(k).is_some(), "counts.{k}");
    }
    assert_eq!(v["tool"]["name"], "ringbench");
    assert_eq!(v["config"]["percentiles"][4], 99.9);
    // serde_json's default float parser may differ in the last digit, so compare what is
    // exact and the shape.
    let back: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(back.counts, s.counts);
    assert_eq!(back.config, s.config);
    assert_eq!(
        back.latency_ms.ttft.small_sample,
        s.latency_ms.ttft.small_sample
    );
    assert_exact(back.latency_ms.e2e.mean, 23.5);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn console_block_reads_like_vllm_and_shows_the_overhead() {
    let mut plan = Plan::defaults();
    plan.max_lag_ms = 0.05;
    let s = run(&plan, &[request_a(), request_b()], facts(2));
    let mut out = Vec::new();
    console::print_console(&s, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("============ Serving Benchmark Result ============\n"));
    for line in [
        "Successful requests:                     2",
        "Benchmark duration (s):                  0.04",
        "Mean TTFT (ms):                          15.00",
        "Mean TPOT (ms):                          3.00",
        "P99 ITL (ms):                            4.00 *",
        "Mean E2E (ms):                           23.50",
        "Valid:                                   NO",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(text.contains("Client overhead"));
    assert!(text.contains("  - scheduling lag p99"));
    assert!(text.contains("* from fewer samples"));
}

/// Request A, `id` × 20 ms later, whose prompt the client counted as `client` tokens (from
/// `source`) and the server as `server` (none when it sent no `usage.prompt_tokens`).
fn prompt(id: u64, client: u32, source: InputSource, server: Option<u32>) -> Record {
    let mut r = shifted(request_a(), id * 20 * MS);
    r.id = id;
    r.input_tokens = client;
    r.input_source = source;
    r.usage_prompt_tokens = server;
    r
}

/// The input-token warning of a run of one request, if any.
fn isl_warning(client: u32, server: u32, source: InputSource) -> Option<String> {
    let s = run(
        &Plan::defaults(),
        &[prompt(0, client, source, Some(server))],
        facts(1),
    );
    s.warnings
        .iter()
        .find(|w| w.starts_with("input tokens:"))
        .cloned()
}

fn console_text(s: &Summary) -> String {
    let mut out = Vec::new();
    console::print_console(s, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn input_tokens_keep_their_source_and_the_servers_count_sits_beside_them() {
    use InputSource::Tokenizer;
    let mut warm = prompt(0, 10, Tokenizer, Some(1_000));
    warm.warmup = true;
    let mut broken = failed(3, Outcome::ResetMidStream, 200, 70, 75);
    broken.input_source = Tokenizer;
    broken.usage_prompt_tokens = Some(500);
    // Measured and successful: 10 (the server says 12), 20 (21), 30 (no usage).
    let records = [
        warm,
        prompt(1, 10, Tokenizer, Some(12)),
        prompt(2, 20, Tokenizer, Some(21)),
        broken,
        prompt(4, 30, Tokenizer, None),
    ];
    let s = run(&Plan::defaults(), &records, facts(5));
    let t = &s.tokens;
    assert_eq!(
        t.input_total, 60,
        "the client's count, warm-up and failures out"
    );
    assert_eq!(
        t.input_source,
        InputSourceCounts {
            tokenizer: 3,
            approximate: 0
        }
    );
    assert_eq!(
        (t.input_total_server, t.input_server_reports),
        (Some(33), 2)
    );
    // Over the two that reported: 33 / (10 + 20).
    assert_exact(t.input_server_ratio, 1.1);
    let w: Vec<&String> = s.warnings.iter().filter(|w| w.contains("input")).collect();
    assert_eq!(
        w,
        [
            "input tokens: the server counted 33, the client 30 (×1.10, over 2 requests reporting \
          usage.prompt_tokens): expected: the chat template and special tokens, which \
          --tokenizer counts leave out"
        ]
    );
    let text = console_text(&s);
    let line = "Total input tokens:                      60 (client, tokenizer) · server 33 \
                over 2 of 3 requests (×1.10)";
    assert!(text.contains(line), "missing {line:?} in\n{text}");
}

#[test]
fn without_the_servers_count_its_figures_are_null_and_nothing_is_warned() {
    let records = [
        prompt(0, 64, InputSource::Approximate, None),
        prompt(1, 64, InputSource::Approximate, None),
    ];
    let s = run(&Plan::defaults(), &records, facts(2));
    let t = &s.tokens;
    assert_eq!((t.input_total, t.input_source.approximate), (128, 2));
    assert_eq!(
        (
            t.input_total_server,
            t.input_server_reports,
            t.input_server_ratio
        ),
        (None, 0, None)
    );
    assert!(!has_warning(&s, "input tokens:"), "{:?}", s.warnings);
    let text = console_text(&s);
    let line = "Total input tokens:                      128 (client, approximate)\n";
    assert!(text.contains(line), "missing {line:?} in\n{text}");
    // Every request reported and the counts agree: the ratio, no "over N of M".
    let agreeing = [prompt(0, 64, InputSource::Approximate, Some(64))];
    let text = console_text(&run(&Plan::defaults(), &agreeing, facts(1)));
    let line = "64 (client, approximate) · server 64 (×1.00)\n";
    assert!(text.contains(line), "missing {line:?} in\n{text}");
}

#[test]
fn the_servers_count_is_warned_about_beyond_5_percent_either_way() {
    use InputSource::{Approximate, Tokenizer};
    for server in [95, 100, 105] {
        assert_eq!(isl_warning(100, server, Tokenizer), None, "server {server}");
        assert_eq!(
            isl_warning(100, server, Approximate),
            None,
            "server {server}"
        );
    }
    let above = isl_warning(100, 106, Tokenizer).expect("6% above warns");
    assert!(
        above.contains("counted 106, the client 100 (×1.06"),
        "{above}"
    );
    assert!(above.contains("chat template"), "{above}");
    let below = isl_warning(100, 94, Tokenizer).expect("6% below warns");
    assert!(
        below.contains("fewer than the client's exact count"),
        "{below}"
    );
    assert!(below.contains("--tokenizer"), "{below}");
    // The llama.cpp case: 64 synthetic words, 115 by the server's count.
    let approx = isl_warning(64, 115, Approximate).expect("approximate warns");
    assert_eq!(
        approx,
        "input tokens: the server counted 115, the client 64 (×1.80, over 1 request reporting \
         usage.prompt_tokens): the client's count is approximate: give --tokenizer the \
         server's tokenizer.json for exact counts"
    );
}

#[test]
fn twice_or_half_the_clients_count_looks_like_a_wrong_tokenizer() {
    use InputSource::{Approximate, Tokenizer};
    let wrong = "looks like a wrong tokenizer: give --tokenizer the server's tokenizer.json";
    for (server, want) in [
        (200, wrong),
        (50, wrong),
        (199, "chat template"),
        (51, "fewer than the client's exact count"),
    ] {
        let w = isl_warning(100, server, Tokenizer).expect("warns");
        assert!(w.contains(want), "server {server}: {w}");
    }
    let w = isl_warning(100, 200, Tokenizer).unwrap();
    assert!(
        w.contains("the server counted 200, the client 100 (×2.00,"),
        "{w}"
    );
    for server in [200, 50] {
        let w = isl_warning(100, server, Approximate).unwrap();
        assert!(
            w.contains("the client's approximation is far off: give --tokenizer"),
            "server {server}: {w}"
        );
    }
}

#[test]
fn report_recomputes_the_input_figures_and_old_logs_read_as_approximate() {
    use InputSource::Tokenizer;
    let dir = out_dir("isl-report");
    let mut c = Collector::new(&Plan::defaults(), Some(&dir)).unwrap();
    let records = [
        prompt(0, 100, Tokenizer, Some(300)),
        prompt(1, 100, Tokenizer, None),
    ];
    records.iter().for_each(|r| c.add(r));
    let ran = c.finish(facts(2)).unwrap();
    let again = super::replay::recompute(&dir, &Default::default()).unwrap();
    assert_eq!(again.tokens, ran.tokens);
    assert_eq!(again.warnings, ran.warnings);
    assert_eq!(ran.tokens.input_total_server, Some(300));
    assert!(has_warning(&again, "looks like a wrong tokenizer"));
    // The same log as written before `input_source` existed.
    let log = dir.join(crate::record::jsonl::FILE_NAME);
    let text = std::fs::read_to_string(&log).unwrap();
    let old = text.replace("\"input_source\":\"tokenizer\",", "");
    assert_ne!(old, text);
    std::fs::write(&log, old).unwrap();
    let old = super::replay::recompute(&dir, &Default::default()).unwrap();
    assert_eq!(
        old.tokens.input_source,
        InputSourceCounts {
            tokenizer: 0,
            approximate: 2
        }
    );
    assert_eq!(old.tokens.input_server_ratio, ran.tokens.input_server_ratio);
    assert!(has_warning(&old, "the client's approximation is far off"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Upload figures (issue 34). A: body 1,000 bytes, last write done 3 ms after its send at
/// 1 ms (upload 3), first token at 11 ms (TTFT from upload 11 − 4 = 7); 2 images, 1.5 s of
/// audio. B: body 3,000 bytes, sent at 6 ms, written at 7 (upload 1), first token at 26 (TTFT
/// from upload 19); no media. A failure's body is left out. Duration 35 ms.
#[test]
fn upload_figures_are_exact() {
    let mut a = request_a();
    (a.body_bytes, a.uploaded_ns, a.images, a.audio_ms) = (1_000, Some(4 * MS), 2, 1_500);
    let mut b = request_b();
    (b.body_bytes, b.uploaded_ns) = (3_000, Some(7 * MS));
    let mut f = failed(2, Outcome::Timeout, 0, 2, 30);
    (f.body_bytes, f.uploaded_ns, f.images) = (1 << 30, Some(3 * MS), 9);
    let s = run(&Plan::defaults(), &[a, b, f], facts(3));
    let l = &s.latency_ms;
    assert_eq!(l.upload.count, 2);
    assert_exact(l.upload.mean, 2.0);
    assert_exact(l.upload.max, 3.0);
    assert_exact(l.ttft_from_upload.mean, (7.0 + 19.0) / 2.0);
    assert_exact(l.ttft_from_upload.min, 7.0);
    let u = s.upload.as_ref().expect("an upload block");
    assert_eq!(u.body_bytes_total, 4_000);
    assert_exact(u.body_bytes_per_s, 4_000.0 / 0.035);
    assert_eq!(u.body_bytes.count, 2);
    assert_exact(u.body_bytes.mean, 2_000.0);
    assert_close(u.body_bytes.p50, 1_000.0);
    assert_close(u.body_bytes.p99, 3_000.0);
    assert_eq!(u.images, 2);
    assert_exact(u.images_per_request_mean, 1.0);
    assert_exact(u.images_per_s, 2.0 / 0.035);
    assert_eq!(u.audio_ms, 1_500);
    assert_exact(u.audio_s_per_request_mean, 0.75);
    assert_exact(u.audio_s_per_s, 1.5 / 0.035);
    // Without a successful request: counts 0, every mean and rate null, not a made-up 0.
    let none = run(
        &Plan::defaults(),
        &[failed(0, Outcome::Timeout, 0, 1, 2)],
        facts(1),
    );
    let u = none.upload.as_ref().expect("an upload block");
    assert_eq!((u.images, u.body_bytes.count), (0, 0));
    assert_eq!(u.images_per_request_mean, None);
    assert_eq!(none.latency_ms.upload.count, 0);
}
