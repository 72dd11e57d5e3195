//! The `--metrics-listen` page against the summary: hand-built records in, the page parsed
//! back line by line (every line a `# HELP`, a `# TYPE` or a sample of a family of
//! `LiveMetric::ALL`), histograms cumulative and monotone, and the counts equal to the ones
//! `finish` puts in `summary.json`.

use super::exposition::{Kind, LiveFacts, LiveMetric, BUCKET_BOUNDS_NS};
use super::{Collector, RunFacts};
use crate::plan::Plan;
use crate::record::{EventStamp, Outcome, Record};
use std::collections::BTreeMap;

/// A streamed success sent at `sent_ns`: first token 2 ms later, then a token every
/// `gap_ns`, `tokens` in all, done 1 µs after the last.
fn ok(sent_ns: u64, gap_ns: u64, tokens: u64) -> Record {
    let events: Vec<EventStamp> = (0..tokens)
        .map(|i| EventStamp {
            at_ns: sent_ns + 2_000_000 + i * gap_ns,
            tokens: 1,
            output: true,
            ..Default::default()
        })
        .collect();
    let last = events.last().map_or(sent_ns, |e| e.at_ns);
    Record {
        outcome: Outcome::Ok,
        status: 200,
        intended_ns: sent_ns - 1_000,
        sent_ns: Some(sent_ns),
        head_ns: Some(sent_ns + 1_000_000),
        first_token_ns: Some(sent_ns + 2_000_000),
        first_output_ns: Some(sent_ns + 2_000_000),
        last_token_ns: Some(last),
        done_ns: Some(last + 1_000),
        output_tokens: tokens as u32,
        events,
        ..Default::default()
    }
}

fn failed(outcome: Outcome, status: u16, sent_ns: u64) -> Record {
    Record {
        outcome,
        status,
        intended_ns: sent_ns,
        sent_ns: Some(sent_ns),
        done_ns: Some(sent_ns + 5_000_000),
        ..Default::default()
    }
}

/// One sample line: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Every line of `page`, checked for its shape; the samples, with each family's type.
fn parse(page: &str) -> (Vec<Sample>, BTreeMap<String, String>) {
    let (mut samples, mut types) = (vec![], BTreeMap::new());
    let mut helped = std::collections::BTreeSet::new();
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect(line);
            assert!(
                !help.is_empty() && helped.insert(name.to_string()),
                "{line}"
            );
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(line);
            assert!(helped.contains(name), "TYPE before HELP: {line}");
            assert!(types.insert(name.to_string(), kind.to_string()).is_none());
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect(line);
        let value: f64 = value.parse().expect(line);
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect(line);
                let labels = body
                    .split("\",")
                    .map(|kv| {
                        let (k, v) = kv.split_once("=\"").expect(line);
                        (k.to_string(), v.trim_end_matches('"').to_string())
                    })
                    .collect();
                (name, labels)
            }
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name);
        assert!(
            types.contains_key(family),
            "a sample before its TYPE: {line}"
        );
        samples.push((name.to_string(), labels, value));
    }
    (samples, types)
}

fn value(samples: &[Sample], name: &str) -> f64 {
    let mut found = samples
        .iter()
        .filter(|s| s.0 == name && !s.1.contains_key("le"));
    let v = found.next().unwrap_or_else(|| panic!("{name} missing")).2;
    assert!(found.next().is_none(), "{name} twice");
    v
}

/// The cumulative buckets of a histogram, checked monotone, `+Inf` last and equal to `_count`.
fn buckets(samples: &[Sample], name: &str) -> Vec<(String, f64)> {
    let b: Vec<(String, f64)> = (samples.iter())
        .filter(|s| s.0 == format!("{name}_bucket"))
        .map(|s| (s.1["le"].clone(), s.2))
        .collect();
    assert_eq!(b.len(), BUCKET_BOUNDS_NS.len() + 1, "{name}");
    assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "{name}: {b:?}");
    let les: Vec<f64> = b[..b.len() - 1]
        .iter()
        .map(|(le, _)| le.parse().unwrap())
        .collect();
    assert!(les.windows(2).all(|w| w[0] < w[1]), "{name}: {les:?}");
    assert_eq!(b.last().unwrap().0, "+Inf");
    assert_eq!(
        b.last().unwrap().1,
        value(samples, &format!("{name}_count"))
    );
    b
}

#[test]
fn the_page_parses_back_and_agrees_with_the_summary() {
    let mut plan = Plan::defaults();
    plan.metrics_listen = Some("127.0.0.1:0".to_string());
    let mut c = Collector::new(&plan, None).unwrap();
    let mut warm = ok(1_000_000, 1_000_000, 3);
    warm.warmup = true;
    c.add(&warm);
    // 10 successes 100 ms apart: 5 tokens 300 µs apart (ITL), TTFT 2 ms.
    (0..10u64).for_each(|i| c.add(&ok(10_000_000 + i * 100_000_000, 300_000, 5)));
    c.add(&failed(Outcome::HttpStatus, 503, 1_010_000_000));
    c.add(&failed(Outcome::HttpStatus, 429, 1_020_000_000));
    c.add(&failed(Outcome::Timeout, 0, 1_030_000_000));
    c.add(&Record::default());
    let facts = LiveFacts {
        total_sent: 20,
        worker_cpu_ns: vec![(0, 1_500_000_000), (2, 7)],
        model: "m\"odel".to_string(),
        url: "http://a:1,http://b:2".to_string(),
        run_id: "r1".to_string(),
    };
    let mut page = String::from("stale");
    c.exposition(&facts, &mut page);
    let (samples, types) = parse(&page);
    for m in LiveMetric::ALL {
        assert_eq!(
            types.get(m.name()).map(String::as_str),
            Some(m.kind().name())
        );
    }
    assert_eq!(types.len(), LiveMetric::ALL.len(), "{types:?}");
    let info = samples.iter().find(|s| s.0 == "ringbench_info").unwrap();
    assert_eq!(info.1["model"], "m\\\"odel");
    assert_eq!(
        (info.1["url"].as_str(), info.2),
        ("http://a:1,http://b:2", 1.0)
    );
    let ttft = buckets(&samples, "ringbench_ttft_seconds");
    let e2e = buckets(&samples, "ringbench_e2e_seconds");
    let itl = buckets(&samples, "ringbench_itl_seconds");
    // 2 ms is a bound: `le` is inclusive.
    assert_eq!(ttft.iter().find(|b| b.0 == "0.001").unwrap().1, 0.0);
    assert_eq!(ttft.iter().find(|b| b.0 == "0.0025").unwrap().1, 10.0);
    assert_eq!(itl.iter().find(|b| b.0 == "0.00025").unwrap().1, 0.0);
    assert_eq!(itl.iter().find(|b| b.0 == "0.0005").unwrap().1, 40.0);
    assert_eq!(e2e[0].1, 0.0);
    let sum = value(&samples, "ringbench_itl_seconds_sum");
    assert!((sum - 40.0 * 0.0003).abs() < 1e-9, "{sum}");
    let cpu: Vec<f64> = (samples.iter())
        .filter(|s| s.0 == "ringbench_worker_cpu_seconds_total")
        .map(|s| s.2)
        .collect();
    assert_eq!(cpu, [1.5, 7e-9]);
    let s = c.finish(RunFacts::default()).unwrap();
    let n = &s.counts;
    for (name, want) in [
        ("ringbench_ttft_seconds_count", n.tally.ok),
        ("ringbench_e2e_seconds_count", n.tally.ok),
        ("ringbench_requests_ok_total", n.tally.ok),
        ("ringbench_requests_sent_total", n.tally.sent),
    ] {
        assert_eq!(value(&samples, name), want as f64, "{name}");
    }
    assert_eq!(value(&samples, "ringbench_requests_not_sent_total"), 1.0);
    assert_eq!(
        value(&samples, "ringbench_warmup_requests_total"),
        n.warmup as f64
    );
    let e2e_sum = value(&samples, "ringbench_e2e_seconds_sum");
    assert!((e2e_sum * 1e3 - s.latency_ms.e2e.mean.unwrap() * 10.0).abs() < 1e-6);
    let failed: BTreeMap<&str, f64> = (samples.iter())
        .filter(|s| s.0 == "ringbench_requests_failed_total")
        .map(|s| (s.1["kind"].as_str(), s.2))
        .collect();
    assert_eq!(failed.values().sum::<f64>(), n.tally.failed as f64);
    assert_eq!(
        (failed["http_status"], failed["timeout"], failed["connect"]),
        (2.0, 1.0, 0.0)
    );
    // 14 records sent (the warm-up's one among them) of the 20 handed to the kernel.
    assert_eq!(value(&samples, "ringbench_requests_in_flight"), 6.0);
    let rate = value(&samples, "ringbench_achieved_requests_per_second");
    assert_eq!(Some(rate), s.achieved.request_rate);
    let sched = value(&samples, "ringbench_schedule_requests_per_second");
    assert_eq!(Some(sched), s.achieved.schedule_rate);
    let lag = value(&samples, "ringbench_schedule_lag_p99_seconds");
    assert_eq!(lag * 1e3, s.overhead.sched_lag_ms.p99.unwrap());
    // The lag histogram holds every measured send's lag, whatever its outcome.
    let lag_count = value(&samples, "ringbench_schedule_lag_seconds_count");
    assert_eq!(lag_count, s.overhead.sched_lag_ms.count as f64);
    assert_eq!(lag_count, 13.0, "10 successes and 3 failures were sent");
    // Lags of 1 µs (the successes) and 0 (the failures): all in the first, 10 µs, bucket.
    let b = buckets(&samples, "ringbench_schedule_lag_seconds");
    assert_eq!(b[0], ("0.00001".to_string(), 13.0));
}

#[test]
fn before_two_sends_the_rates_have_no_sample() {
    let mut plan = Plan::defaults();
    plan.metrics_listen = Some("127.0.0.1:0".to_string());
    let c = Collector::new(&plan, None).unwrap();
    let mut page = String::new();
    c.exposition(&LiveFacts::default(), &mut page);
    let (samples, _) = parse(&page);
    for m in LiveMetric::ALL
        .into_iter()
        .filter(|m| m.kind() == Kind::Gauge)
    {
        let n = samples.iter().filter(|s| s.0 == m.name()).count();
        let expected = usize::from(matches!(m, LiveMetric::Info | LiveMetric::InFlight));
        assert_eq!(n, expected, "{}", m.name());
    }
    assert_eq!(value(&samples, "ringbench_e2e_seconds_count"), 0.0);
}
