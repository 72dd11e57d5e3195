//! The simulator's own timing truth (`src/sim/truth.rs`): what it measures for each streamed
//! completion (TTFT from the read that completed the request to the write carrying the first
//! token, E2E to the last write), as a run's `overhead.sim` block, as `GET /sim/truth` over
//! a window opened by `POST /sim/truth/reset`, and in `sim --stats-interval` lines. Every
//! simulator is on 127.0.0.1:0, started by the test; every run is bounded in count and time.
//! Runs are serialized (one lock): the delay bands must not measure another test's load.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use crate::support::common::{f as num, lock, ringbench, run_summary};
use ringbench::plan::{Load, Plan, Stop};
use serde_json::Value;

/// One request on its own connection (`Connection: close`): status and body.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the simulator");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: sim\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text)
        .expect("the simulator answers and closes");
    let status = text[9..12].parse().expect("a status line");
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn streamed(addr: SocketAddr) {
    let body =
        r#"{"model":"m","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}"#;
    let (status, text) = http(addr, "POST", "/v1/chat/completions", body);
    assert_eq!(status, 200);
    assert!(text.contains("[DONE]"), "{text}");
}

fn truth(addr: SocketAddr, method: &str, path: &str) -> Value {
    let (status, body) = http(addr, method, path, "");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("the truth is JSON")
}

#[test]
fn a_run_reports_the_simulators_own_ttft_and_e2e() {
    let _g = lock();
    let cpus = ringbench::host::online_cpus();
    let mut p = Plan::defaults();
    p.progress = false;
    p.cpus = vec![cpus[0]];
    let sim = p.sim.as_mut().unwrap();
    sim.cpus = vec![cpus[cpus.len() - 1]];
    sim.ttft_ms = 5.0;
    sim.itl_ms = 1.0;
    p.output_tokens = 8;
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(40),
        duration_ns: None,
    };
    let s = run_summary(&p);
    let sim = &s["overhead"]["sim"];
    let streams = num(sim, "stream_requests");
    assert_eq!(streams, 40.0, "{sim}");
    assert_eq!(num(sim, "ttft_us.count"), streams, "{sim}");
    assert_eq!(num(sim, "e2e_us.count"), streams, "{sim}");
    // The deadline is the read + 5 ms, so nothing can be earlier (less the 0.8 % buckets);
    // the upper bound leaves room for a shared 2-core machine's wake-ups.
    let ttft_p50 = num(sim, "ttft_us.p50");
    assert!(
        (4_960.0..7_000.0).contains(&ttft_p50),
        "ttft p50 {ttft_p50} µs"
    );
    assert!(num(sim, "ttft_us.max") >= num(sim, "ttft_us.p99"));
    // 8 tokens, 1 ms apart: the last write is due 7 ms after the first.
    let e2e_p50 = num(sim, "e2e_us.p50");
    assert!(
        (11_900.0..15_000.0).contains(&e2e_p50),
        "e2e p50 {e2e_p50} µs"
    );
    // The client's TTFT holds the server's: it starts before the read and ends after the
    // write (a little slack for the write's return racing the client's read).
    let client_ms = num(&s, "latency_ms.ttft.p50");
    assert!(
        client_ms * 1e3 > ttft_p50 * 0.95,
        "{client_ms} ms vs {ttft_p50} µs"
    );
}

#[test]
fn the_truth_endpoint_reports_the_window_since_its_reset() {
    let _g = lock();
    let cpus: Vec<usize> = ringbench::host::online_cpus().into_iter().take(2).collect();
    let handle = ringbench::sim::start(ringbench::sim::SimConfig {
        settings: ringbench::plan::SimSettings {
            cpus: cpus.clone(),
            ttft_ms: 2.0,
            ..Default::default()
        },
        ..Default::default()
    })
    .expect("the simulator starts");
    let addr = handle.addr;
    let start = truth(addr, "GET", "/sim/truth");
    assert_eq!(num(&start, "ttft_us.count"), 0.0, "{start}");
    assert!(start["ttft_us"]["p50"].is_null(), "{start}");
    for _ in 0..6 {
        streamed(addr);
    }
    // Every thread's streams, whichever thread answers (one per CPU, SO_REUSEPORT).
    let first = truth(addr, "GET", "/sim/truth");
    assert_eq!(num(&first, "ttft_us.count"), 6.0, "{first}");
    assert_eq!(num(&first, "e2e_us.count"), 6.0, "{first}");
    assert!(num(&first, "ttft_us.p50") >= 1_980.0, "{first}");

    let reset = truth(addr, "POST", "/sim/truth/reset");
    assert_eq!(num(&reset, "ttft_us.count"), 0.0, "{reset}");
    assert!(num(&reset, "since_mono_ns") > num(&start, "since_mono_ns"));
    for _ in 0..3 {
        streamed(addr);
    }
    let whole = r#"{"stream":false,"max_tokens":4,"prompt":"x"}"#;
    assert_eq!(http(addr, "POST", "/v1/completions", whole).0, 200);
    let window = truth(addr, "GET", "/sim/truth");
    assert_eq!(num(&window, "ttft_us.count"), 3.0, "{window}");
    assert_eq!(num(&window, "e2e_us.count"), 3.0, "{window}");
    assert_eq!(num(&window, "since_mono_ns"), num(&reset, "since_mono_ns"));
    assert!(num(&window, "mono_ns") > num(&window, "since_mono_ns"));
    let p50 = num(&window, "ttft_us.p50");
    assert!((1_980.0..20_000.0).contains(&p50), "{window}");

    assert_eq!(http(addr, "GET", "/sim/truth/reset", "").0, 405);
    assert_eq!(http(addr, "POST", "/sim/truth", "").0, 405);
    // The endpoint's own requests are no completions: the cumulative figures hold the nine
    // streams only, and the non-streamed answer is not among them.
    let stats = handle.stop();
    assert_eq!(stats.stream_requests, 9);
    assert_eq!(stats.ttft_us.count, 9);
    assert_eq!(stats.e2e_us.count, 9);
    assert_eq!(stats.threads, cpus.len() as u64);
}

#[test]
fn stats_interval_lines_carry_the_cumulative_truth() {
    let _g = lock();
    let cpu = *ringbench::host::online_cpus().last().unwrap();
    let cpu = cpu.to_string();
    let args = [
        "sim",
        "--port",
        "0",
        "--ttft-ms",
        "1",
        "--stats-interval",
        "20ms",
    ];
    let mut sim = ringbench(args.into_iter().chain(["--cpus", cpu.as_str()]))
        .stdout(Stdio::piped())
        .spawn()
        .expect("the simulator starts");
    let mut lines = BufReader::new(sim.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr: SocketAddr = first
        .strip_prefix("listening on ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("{first}"));
    streamed(addr);
    streamed(addr);
    // Lines queued while the requests ran; at most 10 s of them.
    let mut last = Value::Null;
    for _ in 0..500 {
        last = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if num(&last, "stats.ttft_us.count") >= 2.0 {
            break;
        }
    }
    let _ = sim.kill();
    let _ = sim.wait();
    assert_eq!(num(&last, "stats.ttft_us.count"), 2.0, "{last}");
    assert!(num(&last, "stats.ttft_us.p50") >= 990.0, "{last}");
}
