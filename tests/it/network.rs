//! The network's share of a run (issue 40): each connection's `TCP_INFO` at its close and its
//! connect time, as the summary's `network` block and the console's line "TTFT p50 … of
//! which network RTT ~…"; a run through a delay relay (`support::relay`), where the TTFT is
//! the simulator's own plus the relay's round trip and the ITL is unchanged; the same through
//! a packet-level delay between network namespaces (`support::netns`), where the client's
//! kernel sees the delay too (root and `ip` only: `SKIPPED` otherwise, a failure with
//! `RINGBENCH_REQUIRE_NETNS=1`); a long run's connections sampled mid-life; and the
//! simulator's endless faults (`dribble`, `stop_reading`), each a counted timeout that
//! leaves the rest of the run alone. Every run holds the one lock and is a few seconds long.

use crate::engine::{against, closed, start_sim};
use crate::support::common::{f as num, lock, sim_plan};
use crate::support::netns::{self, Netns};
use crate::support::relay::{self, Path};
use ringbench::plan::sim::FaultSpec;
use ringbench::plan::{SimSettings, Target};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `GET`/`POST` `path` on its own connection: the body, as JSON.
fn truth(addr: SocketAddr, method: &str, path: &str) -> Value {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: sim\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").expect("a whole answer").1;
    serde_json::from_str(body).expect("the truth is JSON")
}

#[test]
fn a_loopback_run_reports_every_connection_as_the_kernel_saw_it() {
    let _l = lock();
    let mut p = sim_plan();
    closed(&mut p, 4, 200);
    p.output_tokens = 8;
    let s = ringbench::run(&p).expect("the run completes");
    let n = s.network.expect("a run that connected has a network block");
    let all = &n.all;
    assert!(n.servers.is_none(), "one server: no breakdown");
    // 4 users keep their connections; each was read once, when the run closed it.
    assert!(all.connections_opened >= 4, "{all:?}");
    assert_eq!(all.connections_read, all.connections_opened, "{all:?}");
    assert_eq!(all.connections_unread, 0);
    assert_eq!(all.tcp_connect_ms.count, all.connections_opened);
    assert!(all.tls_handshake_ms.is_none());
    // Loopback: round trips of microseconds, well under a millisecond even on a busy host.
    let rtt = all.rtt_ms.p50.unwrap();
    assert!(rtt > 0.0 && rtt < 1.0, "loopback RTT p50 {rtt} ms");
    let base = all.base_rtt_ms.unwrap();
    assert!(
        base > 0.0 && base <= all.rtt_ms.max.unwrap(),
        "base {base} ms"
    );
    // 200 requests went out on these connections.
    assert!(all.segments_out >= 200, "{all:?}");
    assert!(all.retransmit_percent.unwrap() < 1.0, "{all:?}");
}

/// One run through a relay delaying each direction by `one_way_ms` + [0, `jitter_ms`]: the
/// simulator's own TTFT (its `/sim/truth`), and the run's summary.
fn through_relay(one_way_ms: u64, jitter_ms: u64) -> (Value, ringbench::Summary) {
    let sim = start_sim(SimSettings {
        ttft_ms: 20.0,
        itl_ms: 4.0,
        ..SimSettings::default()
    });
    let path = Path {
        fixed: Duration::from_millis(one_way_ms),
        jitter: Duration::from_millis(jitter_ms),
        bytes_per_s: None,
    };
    let r = relay::start(sim.addr, path);
    let mut p = against(&sim);
    p.targets = vec![Target::parse(&format!("http://{}", r.addr)).unwrap()];
    p.model = Some("m".into());
    p.server_metrics.enabled = false;
    p.output_tokens = 32;
    closed(&mut p, 2, 24);
    truth(sim.addr, "POST", "/sim/truth/reset");
    let s = ringbench::run(&p).expect("the run through the relay completes");
    // Every connection went through the relay: 2 users, one kept-alive connection each.
    let relayed = r.accepted.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(relayed, s.network.as_ref().unwrap().all.connections_opened);
    (truth(sim.addr, "GET", "/sim/truth"), s)
}

#[test]
fn through_a_delay_relay_the_ttft_is_the_servers_plus_the_round_trip() {
    let _l = lock();
    for (one_way_ms, jitter_ms) in [(10u64, 2u64), (50, 5)] {
        let (truth, s) = through_relay(one_way_ms, jitter_ms);
        assert_eq!((s.counts.tally.sent, s.counts.tally.ok), (24, 24));
        let sim_ttft_ms = num(&truth, "ttft_us.p50") / 1e3;
        let ttft_ms = s.latency_ms.ttft.p50.unwrap();
        let rtt_ms = 2.0 * one_way_ms as f64;
        // The request waits one way, its first token the other: at least the fixed round
        // trip, at most both jitters and 10 ms of a busy host's scheduling more.
        let added = ttft_ms - sim_ttft_ms;
        let most = rtt_ms + 2.0 * jitter_ms as f64 + 10.0;
        assert!(
            added >= rtt_ms - 0.5 && added <= most,
            "RTT {rtt_ms} ms: TTFT {ttft_ms} ms = simulator's {sim_ttft_ms} ms + {added} ms"
        );
        // Every token waits the same fixed delay: the mean gap over an answer moves by at
        // most one jitter over its 31 gaps (the bound: 1.5 ms on a busy host).
        let tpot = s.latency_ms.tpot.mean.unwrap();
        assert!(
            (tpot - 4.0).abs() < 1.5,
            "TPOT mean {tpot} ms, simulator's ITL 4 ms"
        );
        // The relay ends TCP: the client's kernel measures its first hop, on loopback.
        let n = s.network.expect("a network block");
        let first_hop = n.all.rtt_ms.p50.unwrap();
        assert!(
            first_hop < 1.0,
            "TCP_INFO RTT {first_hop} ms is the relay's first hop"
        );
        assert!(first_hop < rtt_ms / 10.0);
    }
}

/// Whether the namespaces test may run: `false` after a visible skip line; with
/// `RINGBENCH_REQUIRE_NETNS=1` (`.ci/run` as root) a host that cannot fails instead.
fn netns_or_skip(test: &str) -> bool {
    let Err(why) = netns::available() else {
        return true;
    };
    let why = format!("no network namespaces here ({why}; needs root and `ip`)");
    crate::support::common::skip_or_require(test, "RINGBENCH_REQUIRE_NETNS", &why);
    false
}

/// One run from the client's namespace to a simulator in the server's, across a bridge
/// delaying each direction by `one_way_ms` + [0, `jitter_ms`]: the simulator's truth, the
/// summary, and the bridge's counts (frames, drops, the largest frame).
fn through_namespaces(one_way_ms: u64, jitter_ms: u64) -> (Value, ringbench::Summary, [u64; 3]) {
    let ns = Netns::start(Path {
        fixed: Duration::from_millis(one_way_ms),
        jitter: Duration::from_millis(jitter_ms),
        bytes_per_s: None,
    });
    let sim = ns.in_server(|| {
        ringbench::sim::start(ringbench::sim::SimConfig {
            host: netns::SERVER.into(),
            settings: SimSettings {
                ttft_ms: 20.0,
                itl_ms: 4.0,
                cpus: vec![crate::support::common::cpu_pair().1],
                ..SimSettings::default()
            },
            ..Default::default()
        })
        .expect("the simulator starts in its namespace")
    });
    let addr = sim.addr;
    ns.in_server(|| truth(addr, "POST", "/sim/truth/reset"));
    let mut p = against(&sim);
    p.model = Some("m".into());
    p.server_metrics.enabled = false;
    p.output_tokens = 32;
    closed(&mut p, 2, 24);
    let s = ns.in_client(|| ringbench::run(&p).expect("the run across the bridge completes"));
    let truth = ns.in_server(|| truth(addr, "GET", "/sim/truth"));
    drop(sim);
    let c = &ns.count;
    let count = [&c.frames, &c.dropped, &c.max_frame_bytes].map(|a| a.load(Ordering::Relaxed));
    assert_eq!(c.send_errors.load(Ordering::Relaxed), 0, "{c:?}");
    (truth, s, count)
}

#[test]
fn across_a_packet_delay_tcp_info_sees_the_round_trip_and_the_ttft_carries_it() {
    let test = "across_a_packet_delay_tcp_info_sees_the_round_trip_and_the_ttft_carries_it";
    let _l = lock();
    if !netns_or_skip(test) {
        return;
    }
    for (one_way_ms, jitter_ms) in [(10u64, 2u64), (50, 5)] {
        let (truth, s, [frames, dropped, max_frame]) = through_namespaces(one_way_ms, jitter_ms);
        assert_eq!((s.counts.tally.sent, s.counts.tally.ok), (24, 24));
        assert!(
            frames > 100 && dropped == 0,
            "{frames} frames, {dropped} dropped"
        );
        // Every frame crossed whole, however large (veth hands over segmentation-offloaded
        // frames above the 1,514-byte MTU when a write is large; these answers are small).
        assert!(max_frame > 0, "largest frame {max_frame} bytes");
        let rtt_ms = 2.0 * one_way_ms as f64;
        let jitters = 2.0 * jitter_ms as f64;
        let n = s.network.as_ref().expect("a network block");
        // The path's base round trip (each connection's smallest, its SYN's included): the
        // fixed round trip, plus at most both jitters and 3 ms of the bridge threads' wake-ups
        // on a busy host.
        let base = n.all.base_rtt_ms.unwrap();
        assert!(
            base >= rtt_ms && base <= rtt_ms + jitters + 3.0,
            "RTT {rtt_ms} ms + jitter ≤ {jitters}: TCP_INFO base {base} ms"
        );
        // The smoothed RTT is at least the path's; the server holds the ACK of a request
        // until its first token (the simulator's 20 ms TTFT), and a delayed ACK may wait
        // the kernel's minimum ACK timeout (TCP_DELACK_MIN, 40 ms) on a quiet connection:
        // it may add those, no more (measured: 143 ms at a 100 ms round trip).
        let srtt = n.all.rtt_ms.p50.unwrap();
        assert!(
            srtt >= rtt_ms && srtt <= rtt_ms + jitters + 20.0 + 40.0 + 5.0,
            "RTT {rtt_ms} ms: TCP_INFO smoothed p50 {srtt} ms"
        );
        assert_eq!(n.all.connections_read, n.all.connections_opened);
        // TTFT = the simulator's own + the round trip (as through the relay).
        let sim_ttft_ms = num(&truth, "ttft_us.p50") / 1e3;
        let ttft_ms = s.latency_ms.ttft.p50.unwrap();
        let added = ttft_ms - sim_ttft_ms;
        assert!(
            added >= rtt_ms - 0.5 && added <= rtt_ms + jitters + 10.0,
            "RTT {rtt_ms} ms: TTFT {ttft_ms} ms = simulator's {sim_ttft_ms} ms + {added} ms"
        );
        // The TTFT's network share is the base round trip.
        assert!(
            (added - base).abs() <= jitters + 5.0,
            "{added} vs base {base}"
        );
        let tpot = s.latency_ms.tpot.mean.unwrap();
        assert!(
            (tpot - 4.0).abs() < 1.5,
            "TPOT mean {tpot} ms, simulator's ITL 4 ms"
        );
    }
}

/// Keep-alive connections that live the whole run (7 s): each is read once mid-life (at
/// 5 s; the next would be at 10 s) and once at its close.
#[test]
fn a_long_runs_connections_are_sampled_mid_life_once_every_5_s() {
    let _l = lock();
    let mut p = sim_plan();
    p.load = ringbench::plan::Load::Closed { concurrency: 2 };
    p.stop = ringbench::plan::Stop {
        request_count: None,
        duration_ns: Some(7_000_000_000),
    };
    p.warmup_requests = 0;
    p.max_lag_ms = 1e9;
    p.output_tokens = 8;
    p.sim.as_mut().unwrap().ttft_ms = 5.0;
    let s = ringbench::run(&p).expect("the run completes");
    let all = &s.network.expect("a network block").all;
    assert_eq!(
        all.connections_opened, 2,
        "keep-alive: one each, never closed"
    );
    assert_eq!(all.connections_read, 2, "read at the run's end");
    assert_eq!(all.rtt_samples_mid_life, 2, "{all:?}");
    assert_eq!(all.rtt_ms.count, 4);
}

#[test]
fn dribbling_and_stalled_uploads_are_timeouts_and_the_rest_is_served() {
    let _l = lock();
    let mut p = sim_plan();
    closed(&mut p, 4, 60);
    p.output_tokens = 4;
    p.request_timeout_ns = 1_000_000_000;
    let sim = p.sim.as_mut().unwrap();
    sim.faults.faults = vec!["dribble:0.1".parse::<FaultSpec>().unwrap()];
    let s = ringbench::run(&p).expect("the run completes");
    let timeouts = s.counts.failed_by_kind.get("timeout").copied().unwrap_or(0);
    let faults = s.overhead.sim.as_ref().unwrap()["faults"].as_u64().unwrap();
    assert!(faults > 0, "some answers dribbled");
    assert_eq!(timeouts, faults, "each dribble is one timeout");
    assert_eq!(s.counts.tally.ok + timeouts, 60, "the rest were served");
    // A dribbled answer carries ~2 bytes per 10 ms for a second: its record's bytes are
    // bounded by the timeout, not the answer (which never ends).
    assert!(s.counts.tally.failed == timeouts);
}

#[test]
fn a_server_that_stops_reading_a_4_mb_upload_is_a_timeout_and_the_rest_is_served() {
    use ringbench::plan::workload::{DatasetKind, DatasetSpec, Sampling};
    let _l = lock();
    let dir = crate::support::common::made_dir("stop-reading");
    // 1,100 × 1,000 pixels of noise (deflate cannot shrink it): ~3.3 MB of PNG, ~4.4 MB
    // as base64 in the body.
    std::fs::write(dir.join("big.png"), noise_png(1_100, 1_000)).unwrap();
    let items = "{\"prompt\": \"describe\", \"image\": \"big.png\"}\n".repeat(12);
    std::fs::write(dir.join("items.jsonl"), items).unwrap();
    let mut p = sim_plan();
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Jsonl,
        path: dir.join("items.jsonl"),
        sampling: Sampling::Sequential,
    });
    closed(&mut p, 2, 12);
    p.output_tokens = 4;
    p.request_timeout_ns = 1_000_000_000;
    let sim = p.sim.as_mut().unwrap();
    sim.faults.faults = vec!["stop_reading:0.3".parse::<FaultSpec>().unwrap()];
    let s = ringbench::run(&p).expect("the run completes");
    let body = s.upload.as_ref().unwrap().body_bytes.min.unwrap();
    assert!(body > 4_000_000.0, "a 4 MB body: {body}");
    let timeouts = s.counts.failed_by_kind.get("timeout").copied().unwrap_or(0);
    let faults = s.overhead.sim.as_ref().unwrap()["faults"].as_u64().unwrap();
    assert!(faults > 0, "the simulator stopped reading some uploads");
    assert_eq!(timeouts, faults, "each is one timeout");
    assert_eq!(s.counts.tally.ok + timeouts, 12, "the rest were served");
}

/// A PNG of `w` × `h` RGB pixels of xorshift noise.
fn noise_png(w: u32, h: u32) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let pixels: Vec<u8> = (0..w * h * 3)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect();
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().unwrap();
    writer.write_image_data(&pixels).unwrap();
    writer.finish().unwrap();
    out
}
