//! The simulator's own timing truth (`src/sim/truth.rs`, `src/sim/arrivals.rs`): what it
//! measures for each streamed completion (TTFT from the request's arrival — the kernel's
//! receive stamp — to the write carrying the first token, E2E to the last write, the same on
//! its own clock, its wake-up) and the arrival process it saw, as a run's `overhead.sim`
//! block, as `GET /sim/truth` over a window opened by `POST /sim/truth/reset`, and in `sim
//! --stats-interval` lines. Every
//! simulator is on 127.0.0.1:0, started by the test; every run is bounded in count and time.
//! Runs are serialized (one lock): the delay bands must not measure another test's load.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::support::common::{cpu_pair, f as num, lock, ringbench, run_summary, sim_plan};
use ringbench::plan::sim::KernelStamps;
use ringbench::plan::{Arrival, IoDriver, Load, Plan, Stop};
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
    // The window's arrivals themselves: the four completions since the reset, in order.
    let arrivals = truth(addr, "GET", "/sim/arrivals");
    assert_eq!(num(&arrivals, "count"), 4.0, "{arrivals}");
    assert_eq!(num(&window, "arrivals.count"), 4.0, "{window}");
    let user: Vec<f64> = arrivals["user_ns"]
        .as_array()
        .expect("user_ns")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(user.len(), 4, "{arrivals}");
    assert!(user.windows(2).all(|w| w[0] <= w[1]), "{arrivals}");
    assert!(user[0] >= num(&reset, "since_mono_ns"), "{arrivals}");
    assert_eq!(http(addr, "POST", "/sim/arrivals", "").0, 405);

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

/// A simulator on the simulator CPU with these stamps and driver (and ring size).
fn stamped_sim(
    stamps: KernelStamps,
    driver: IoDriver,
    arrivals_kept: u32,
) -> ringbench::sim::SimHandle {
    let (_, sim_cpu) = cpu_pair();
    ringbench::sim::start(ringbench::sim::SimConfig {
        io_driver: driver,
        settings: ringbench::plan::SimSettings {
            cpus: vec![sim_cpu],
            kernel_stamps: stamps,
            arrivals_kept,
            ..Default::default()
        },
        ..Default::default()
    })
    .expect("the simulator starts")
}

/// The truth of one streamed request, alone in its window.
fn one_request_truth(addr: SocketAddr) -> Value {
    truth(addr, "POST", "/sim/truth/reset");
    streamed(addr);
    truth(addr, "GET", "/sim/truth")
}

/// The kernel's receive stamp starts the truth at the wire: request by request (a window of
/// one), on both io drivers, the kernel-stamped TTFT and the thread's own are both there, and
/// they differ by exactly the thread's wake-up (receive stamp → read's return), which is
/// never negative; with transmit stamps the end moves to when the bytes left, never after the
/// write returned. Bucket midpoints are within 0.8 % of each value, so the sums are compared
/// to 1.6 % (and 2 ns of rounding).
#[test]
fn kernel_stamps_start_the_truth_at_the_wire_request_by_request() {
    let _g = lock();
    for driver in [IoDriver::Auto, IoDriver::Epoll] {
        for stamps in [KernelStamps::Rx, KernelStamps::RxTx] {
            let sim = stamped_sim(stamps, driver, 1024);
            let addr = sim.addr;
            // Linux turns software receive stamping on lazily (a workqueue flips a static key
            // when the first socket asks, and off again when the last one closes): one
            // connection held open keeps it on, and the first stamped read ends the warm-up.
            let _keep = TcpStream::connect(addr).unwrap();
            // The flip waits for a worker thread: on a loaded machine that can take a while, so
            // the warm-up is bounded in time (10 s), not in requests.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let warm = loop {
                if num(&one_request_truth(addr), "wake_us.count") == 1.0 {
                    break true;
                }
                if std::time::Instant::now() > deadline {
                    break false;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            assert!(
                warm,
                "{driver:?} {stamps:?}: no read carried a kernel stamp"
            );
            for i in 0..10 {
                let t = one_request_truth(addr);
                let ctx = format!("{driver:?} {stamps:?} request {i}: {t}");
                for figure in [
                    "ttft_us",
                    "ttft_user_us",
                    "wake_us",
                    "e2e_us",
                    "e2e_user_us",
                ] {
                    assert_eq!(num(&t, &format!("{figure}.count")), 1.0, "{figure}: {ctx}");
                }
                assert_eq!(num(&t, "unstamped_reads"), 0.0, "{ctx}");
                assert_eq!(num(&t, "unstamped_writes"), 0.0, "{ctx}");
                assert_eq!(t["kernel_stamps"], serde_json::to_value(stamps).unwrap());
                let (kernel, user, wake) = (
                    num(&t, "ttft_us.p50"),
                    num(&t, "ttft_user_us.p50"),
                    num(&t, "wake_us.p50"),
                );
                let slack = 0.016 * (kernel + user + wake) + 0.002;
                assert!(wake > 0.0, "{ctx}");
                match stamps {
                    // Same end (the write's return): kernel = user + wake.
                    KernelStamps::Rx => {
                        assert!(kernel >= user, "{ctx}");
                        assert!((kernel - (user + wake)).abs() <= slack, "{ctx}");
                    }
                    // The end is the transmit stamp, taken inside the write.
                    _ => assert!(kernel <= user + wake + slack, "{ctx}"),
                }
                let arrivals = &t["arrivals"];
                assert_eq!(num(arrivals, "count"), 1.0, "{ctx}");
                assert_eq!(num(arrivals, "kernel.count"), 1.0, "{ctx}");
            }
            let stats = sim.stop();
            assert_eq!(stats.ttft_us.count, stats.ttft_user_us.count);
            assert_eq!(stats.kernel_stamps, stamps);
        }
    }
}

/// `--kernel-stamps off`: the simulator's own clock only, as before; both figures are the same
/// requests' and the kernel gave nothing.
#[test]
fn without_kernel_stamps_the_truth_is_the_threads_own() {
    let _g = lock();
    let sim = stamped_sim(KernelStamps::Off, IoDriver::Auto, 1024);
    for _ in 0..3 {
        streamed(sim.addr);
    }
    let t = truth(sim.addr, "GET", "/sim/truth");
    assert_eq!(num(&t, "ttft_us.count"), 3.0, "{t}");
    assert_eq!(num(&t, "ttft_us.p50"), num(&t, "ttft_user_us.p50"), "{t}");
    assert_eq!(num(&t, "wake_us.count"), 0.0, "{t}");
    assert_eq!(num(&t, "arrivals.count"), 3.0, "{t}");
    assert_eq!(num(&t, "arrivals.kernel.count"), 0.0, "{t}");
    assert_eq!(num(&t, "arrivals.user.count"), 3.0, "{t}");
    assert_eq!(num(&t, "unstamped_reads"), 0.0, "{t}");
}

/// Records every request's send stamp (`sent_ns`).
#[derive(Default)]
struct Sends(Vec<u64>);

impl ringbench::Observer for Sends {
    fn on_record(&mut self, r: &ringbench::Record) {
        self.0.extend(r.sent_ns);
    }
}

/// The CV of the gaps between sorted stamps.
fn gap_cv(stamps: &mut [u64]) -> f64 {
    stamps.sort_unstable();
    let gaps: Vec<f64> = stamps.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean) * (g - mean)).sum::<f64>() / gaps.len() as f64;
    var.sqrt() / mean
}

/// The arrival process the simulator saw, by the kernel's stamps: a constant schedule's gaps
/// barely vary, a Poisson schedule's vary as much as they are long (CV 1), and either way
/// they are the gaps the client actually sent (its `sent_ns`).
///
/// Bounds: 400 arrivals (100/s for 4 s). The sample CV of n exponential gaps has a standard
/// error of about 1/√n (delta method: the variances of the sample standard deviation, 2/n, and
/// of the mean, 1/n, less twice their covariance, 1/n), 0.05 here, so ±0.2 is four of them. A
/// constant schedule sent exactly has CV 0; what moves it is the client sending late on a busy
/// 2-core machine (other builds preempt it for milliseconds): send times late by a jitter of
/// standard deviation σ give gaps of standard deviation √2·σ, so CV < 0.3 holds while σ is
/// under 2 ms of the 10 ms gaps. The kernel stamps a request inside the client's write, µs
/// after its `sent_ns`, so the two CVs agree to 0.05 (and 10 % for a client preempted between
/// the two). The mean gap is the schedule's 10 ms (exactly rate × duration arrivals are sent)
/// within 5 %.
#[test]
fn the_server_sees_a_constant_schedule_as_constant_and_poisson_as_poisson() {
    let _g = lock();
    for (arrival, low, high) in [(Arrival::Constant, 0.0, 0.3), (Arrival::Poisson, 0.8, 1.2)] {
        let mut p = sim_plan();
        p.output_tokens = 4;
        p.load = Load::Open {
            request_rate: 100.0,
            arrival,
            max_concurrency: None,
        };
        p.stop = Stop {
            request_count: None,
            duration_ns: Some(4_000_000_000),
        };
        let mut sends = Sends::default();
        let summary = ringbench::run_with(&p, &AtomicBool::new(false), &mut sends)
            .expect("the run completes");
        let s = serde_json::to_value(&summary).unwrap();
        let sim = &s["overhead"]["sim"];
        let a = &sim["arrivals"];
        let sent_cv = gap_cv(&mut sends.0);
        let ctx = format!("{arrival:?}: client's send CV {sent_cv}, server's {a}");
        assert_eq!(num(a, "count"), num(sim, "completions"), "{ctx}");
        assert_eq!(num(a, "count"), sends.0.len() as f64, "{ctx}");
        assert!(num(a, "count") >= 399.0, "{ctx}");
        assert_eq!(num(a, "overflow"), 0.0, "{ctx}");
        // The first reads after stamping is switched on may come unstamped (see above).
        assert!(num(a, "kernel.count") >= 0.95 * num(a, "count"), "{ctx}");
        let cv = num(a, "kernel.gap_cv");
        assert!((cv - sent_cv).abs() <= 0.05 + 0.1 * sent_cv, "{ctx}");
        assert!((low..high).contains(&cv), "kernel CV {cv}: {ctx}");
        let mean = num(a, "kernel.mean_gap_us");
        assert!(
            (9_500.0..10_500.0).contains(&mean),
            "mean gap {mean}: {ctx}"
        );
        assert!(num(a, "user.gap_cv") >= 0.0, "{ctx}");
    }
}

/// A ring smaller than the window: what it could not keep is counted, and the gaps are of
/// what it kept (a full ring's oldest slot is dropped too: it may be mid-overwrite).
#[test]
fn an_overflowing_arrival_ring_is_counted() {
    let _g = lock();
    let sim = stamped_sim(KernelStamps::Rx, IoDriver::Auto, 50); // rounded up to 64
    for _ in 0..100 {
        streamed(sim.addr);
    }
    let t = truth(sim.addr, "GET", "/sim/truth");
    let a = &t["arrivals"];
    assert_eq!(num(a, "count"), 100.0, "{t}");
    assert_eq!(num(a, "user.count"), 63.0, "{t}");
    assert_eq!(num(a, "overflow"), 37.0, "{t}");
    let stats = sim.stop();
    assert_eq!((stats.arrivals.count, stats.arrivals.overflow), (100, 37));
}
