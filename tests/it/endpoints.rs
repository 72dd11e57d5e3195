//! Several servers behind one run (`--url` repeated, `--url-file`, `--url-policy`) end to end
//! (schedule → worker → http → … → collector → summary): how requests are dealt by each
//! policy, seen by the servers themselves; the per-server rows against what each server did;
//! the connections a user keeps; a conversation staying on one server; each URL's path
//! prefix and `Host:` on its own requests; the flags' usage errors. Each test that runs a
//! load holds the one lock.

use crate::engine::{against, closed, start_sim};
use crate::sessions::recording_server;
use crate::support::common::{lock, out_dir, output, ringbench};
use ringbench::plan::workload::LengthDist;
use ringbench::plan::{
    Arrival, Load, Plan, SessionSpec, SimSettings, Target, ThinkTime, UrlPolicy,
};
use ringbench::sim::SimHandle;
use ringbench::summary::endpoints::EndpointRow;
use std::collections::{BTreeMap, BTreeSet};

/// Simulators with these TTFTs (ms), 4 tokens each, no `/metrics` probe in the count.
fn sims(ttft_ms: &[f64]) -> Vec<SimHandle> {
    (ttft_ms.iter())
        .map(|&ttft_ms| {
            start_sim(SimSettings {
                ttft_ms,
                ..SimSettings::default()
            })
        })
        .collect()
}

/// A closed loop of `users` for `requests` against every one of `sims`, by `policy`.
fn plan_for(sims: &[SimHandle], policy: UrlPolicy, users: u32, requests: u64) -> Plan {
    let mut p = against(&sims[0]);
    p.targets = (sims.iter())
        .map(|s| Target::parse(&format!("http://{}", s.addr)).unwrap())
        .collect();
    p.url_policy = policy;
    p.model = Some("m".into());
    p.output_tokens = 4;
    p.server_metrics.enabled = false;
    closed(&mut p, users, requests);
    p
}

fn rows(s: &ringbench::Summary) -> &[EndpointRow] {
    s.endpoints
        .as_deref()
        .expect("several servers: an endpoints block")
}

#[test]
fn round_robin_deals_exact_shares_and_each_row_is_its_servers_own() {
    let _l = lock();
    // The third server is slow to its first token: only its row may show it.
    let sims = sims(&[0.0, 0.0, 30.0]);
    let p = plan_for(&sims, UrlPolicy::RoundRobin, 6, 300);
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!((s.counts.tally.sent, s.counts.tally.ok), (300, 300));
    let rows = rows(&s);
    assert_eq!(rows.len(), 3);
    for (k, (row, sim)) in rows.iter().zip(&sims).enumerate() {
        let seen = sim.stats();
        assert_eq!(row.url, format!("http://{}", sim.addr));
        assert_eq!(
            (row.endpoint, row.tally.sent, row.tally.ok),
            (k as u16, 100, 100)
        );
        assert_eq!(seen.requests, 100, "server {k} saw its third, exactly");
        // Each of the 6 users keeps one connection to each server it sends to.
        assert_eq!(seen.connections, 6, "server {k}");
        let share = row.share_percent.unwrap();
        assert!((share - 100.0 / 3.0).abs() < 1e-9, "{share}");
    }
    let ttft = |k: usize| rows[k].ttft_ms.p50.unwrap();
    assert!(ttft(2) >= 30.0, "the slow server's own TTFT: {}", ttft(2));
    assert!(
        ttft(0) < 15.0 && ttft(1) < 15.0,
        "the fast servers' rows hold none of it: {} {}",
        ttft(0),
        ttft(1)
    );
    let sum: u64 = rows.iter().map(|r| r.tally.sent).sum();
    assert_eq!(sum, s.counts.tally.sent, "the rows add up to the run");
}

#[test]
fn an_open_loop_deals_its_arrivals_and_keeps_a_pool_per_server() {
    let _l = lock();
    let sims = sims(&[0.0, 2.0]);
    let mut p = plan_for(&sims, UrlPolicy::RoundRobin, 1, 400);
    p.load = Load::Open {
        request_rate: 800.0,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!((s.counts.tally.sent, s.counts.tally.ok), (400, 400));
    for (k, sim) in sims.iter().enumerate() {
        let seen = sim.stats();
        assert_eq!(seen.requests, 200, "server {k}");
        assert_eq!(rows(&s)[k].tally.sent, 200, "server {k}");
        // A lane goes back to its server's idle stack: connections are reused, not one per
        // request (a few per server open at the start, the rest kept alive).
        assert!(
            seen.connections < 50,
            "server {k}: {} connections",
            seen.connections
        );
    }
}

#[test]
fn random_sends_each_request_where_the_seeded_draw_says() {
    let _l = lock();
    let sims = sims(&[0.0, 0.0]);
    let mut p = plan_for(&sims, UrlPolicy::Random, 2, 200);
    let draw = |seed| {
        let mut n = [0u64; 2];
        for id in 0..200 {
            n[UrlPolicy::Random.pick(seed, id, 1, 2).unwrap()] += 1;
        }
        n
    };
    // A seed whose draw is not an even deal (most are not), so the test tells the two apart.
    p.seed = (p.seed..).find(|&seed| draw(seed)[0] != 100).unwrap();
    let want = draw(p.seed);
    assert!(want[0] > 60 && want[1] > 60, "uniform: {want:?}");
    let s = ringbench::run(&p).expect("the run completes");
    let rows = rows(&s);
    for k in 0..2 {
        assert_eq!(rows[k].tally.sent, want[k], "server {k}");
        assert_eq!(sims[k].stats().requests, want[k], "server {k} saw them");
    }
}

#[test]
fn least_in_flight_sends_more_to_the_server_that_answers_sooner() {
    let _l = lock();
    // 40 ms to a first token against 0: the fast server frees its users 10+ times as often.
    let sims = sims(&[0.0, 40.0]);
    let s = ringbench::run(&plan_for(&sims, UrlPolicy::LeastInFlight, 4, 200))
        .expect("the run completes");
    let rows = rows(&s);
    assert_eq!(rows[0].tally.sent + rows[1].tally.sent, 200);
    assert!(
        rows[0].tally.sent > 3 * rows[1].tally.sent,
        "fast {} against slow {}",
        rows[0].tally.sent,
        rows[1].tally.sent
    );
    // Round-robin on the same servers deals them evenly, whatever their speed.
    let s =
        ringbench::run(&plan_for(&sims, UrlPolicy::RoundRobin, 4, 200)).expect("the run completes");
    assert_eq!((rows_of(&s)[0], rows_of(&s)[1]), (100, 100));
}

fn rows_of(s: &ringbench::Summary) -> Vec<u64> {
    rows(s).iter().map(|r| r.tally.sent).collect()
}

#[test]
fn a_conversation_stays_on_one_server_and_each_url_keeps_its_prefix_and_host() {
    let _l = lock();
    let (a, seen_a) = recording_server();
    let (b, seen_b) = recording_server();
    let mut p = against_nothing();
    // A trailing `/v1` is the route's, not the prefix's.
    p.targets = vec![
        Target::parse(&format!("http://{a}/a")).unwrap(),
        Target::parse(&format!("http://{b}/b/v1")).unwrap(),
    ];
    p.run_id = Some("mt".into());
    closed(&mut p, 2, 4);
    p.sessions = Some(SessionSpec {
        turns: LengthDist::Fixed { tokens: 3 },
        think_time: ThinkTime::default(),
        max_context_tokens: None,
        all_turns: false,
    });
    p.out_dir = Some(out_dir("sticky"));
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!((s.counts.tally.sent, s.counts.tally.ok), (12, 12));
    for (seen, host, path, sessions) in [
        (&seen_a, &a, "/a/v1/chat/completions", ["mt-0", "mt-2"]),
        (&seen_b, &b, "/b/v1/chat/completions", ["mt-1", "mt-3"]),
    ] {
        let seen = seen.lock().unwrap();
        let mut turns: BTreeMap<String, usize> = BTreeMap::new();
        for r in seen.iter() {
            assert_eq!(r.headers[":request-line"], format!("POST {path} HTTP/1.1"));
            assert_eq!(&r.headers["host"], host);
            *turns.entry(r.headers["x-session-id"].clone()).or_default() += 1;
        }
        // Round-robin by session: sessions 0 and 2 on the first server, 1 and 3 on the
        // second, every turn of each where its first went.
        let want: BTreeMap<String, usize> = sessions.iter().map(|s| (s.to_string(), 3)).collect();
        assert_eq!(turns, want, "{host}");
    }
    let by_session: BTreeSet<(u64, u64)> =
        crate::support::common::read_jsonl(&p.out_dir.unwrap().join("requests.jsonl"))
            .iter()
            .map(|r| {
                (
                    r["turn"]["session"].as_u64().unwrap(),
                    r["endpoint"].as_u64().unwrap(),
                )
            })
            .collect();
    let want: BTreeSet<(u64, u64)> = (0..4).map(|s| (s, s % 2)).collect();
    assert_eq!(by_session, want, "each record says its server");
}

/// The default plan with no simulator: the test names its servers.
fn against_nothing() -> Plan {
    let mut p = crate::support::common::sim_plan();
    p.sim = None;
    p.model = Some("m".into());
    p.allow_concurrent = true;
    p.server_metrics.enabled = false;
    p
}

#[test]
fn url_flags_name_their_fix() {
    let dir = out_dir("flags");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "# no servers yet\n\n").unwrap();
    let many = dir.join("many.txt");
    let lines: Vec<String> = (0..65)
        .map(|i| format!("http://127.0.0.1:{}", 9000 + i))
        .collect();
    std::fs::write(&many, lines.join("\n")).unwrap();
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "http://127.0.0.1:9000\n127.0.0.1:9001\n").unwrap();
    let (empty, many, bad) = (
        empty.to_str().unwrap(),
        many.to_str().unwrap(),
        bad.to_str().unwrap(),
    );
    for (args, needle) in [
        (&["--url-file", "/no/such/urls.txt"][..], "--url-file"),
        (&["--url-file", empty][..], "no URL"),
        (&["--url-file", many][..], "at most 64"),
        (&["--url-file", bad][..], "needs a scheme"),
        (
            &["--url", "http://h:1", "--url-policy", "fastest"][..],
            "least-in-flight",
        ),
        (&["--self-check", "--url-file", empty][..], "--self-check"),
    ] {
        let ran = output(&mut ringbench(["run"].iter().chain(args)));
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(needle), "{args:?}: {}", ran.stderr);
    }
}
