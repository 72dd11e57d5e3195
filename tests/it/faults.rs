//! Faults end to end: the client against the built-in simulator injecting one fault kind at
//! a time (`--sim-fault KIND:PROB`), through the library. For each kind: the run finishes,
//! every failure is counted under the kind the client observed, failures stay out of the
//! latency figures but count in goodput's denominator, `sent = ok + failed + cancelled`, and
//! the requests that were not faulted are measured as the simulator timed them. Runs are
//! serialized (the one lock) because they share two cores.

use crate::support::common::{cpu_pair, f, lock, out_dir, read_jsonl, run_summary, u};
use ringbench::plan::sim::{FaultConfig, FaultSpec};
use ringbench::plan::{Endpoint, Load, Plan, Slo, SloMetric, Stop};
use serde_json::Value;

const REQUESTS: u64 = 120;
const TTFT_MS: f64 = 20.0;

fn fault_plan(fault: &str, prob: f64) -> Plan {
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut p = Plan::defaults();
    p.cpus = vec![client_cpu];
    p.model = Some("ringbench-sim".into());
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(REQUESTS),
        duration_ns: None,
    };
    p.request_timeout_ns = 400_000_000;
    // A generous SLO every complete request meets: good = ok, so the good fraction shows
    // whether failures are in the denominator.
    p.goodput = vec![Slo {
        metric: SloMetric::E2e,
        max_ms: 10_000.0,
    }];
    let sim = p.sim.as_mut().unwrap();
    sim.cpus = vec![sim_cpu];
    sim.ttft_ms = TTFT_MS;
    sim.faults = FaultConfig {
        faults: vec![format!("{fault}:{prob}").parse::<FaultSpec>().unwrap()],
        seed: 3,
        stall_ms: 1_500,
        slow_head_ms: 150,
    };
    p
}

/// What every faulted run must show, whatever the fault. `kinds`: the failure kinds the
/// client may observe for it, `|`-separated; `None` when the fault is not a failure.
fn check_accounting(s: &Value, kind: Option<&str>) {
    let c = &s["counts"];
    let (sent, ok, failed) = (
        u(s, "counts.sent"),
        u(s, "counts.ok"),
        u(s, "counts.failed"),
    );
    assert_eq!(u(s, "counts.scheduled"), REQUESTS, "{c}");
    assert_eq!(sent, REQUESTS, "{c}");
    assert_eq!(sent, ok + failed + u(s, "counts.cancelled"), "{c}");
    let by_kind = c["failed_by_kind"].as_object().unwrap();
    match kind {
        Some(kinds) => {
            assert!(failed > 0 && ok > 0, "some but not all requests fail: {c}");
            assert!(
                by_kind.keys().all(|k| kinds.split('|').any(|w| w == k)),
                "{c}"
            );
            assert_eq!(
                by_kind.values().filter_map(Value::as_u64).sum::<u64>(),
                failed
            );
        }
        None => assert_eq!(failed, 0, "{c}"),
    }
    // Failures never enter a latency; they do count in goodput's denominator.
    assert_eq!(u(s, "latency_ms.e2e.count"), ok, "{}", s["latency_ms"]);
    assert_eq!(u(s, "latency_ms.ttft.count"), ok, "{}", s["latency_ms"]);
    let good = f(s, "throughput.good_fraction");
    assert!(
        (good - ok as f64 / sent as f64).abs() < 1e-9,
        "{good} vs {ok}/{sent}"
    );
    // The complete requests are measured as the simulator timed them.
    assert_eq!(u(s, "tokens.output_total"), ok * 16, "{}", s["tokens"]);
    assert_eq!(u(s, "latency_ms.itl.count"), ok * 15);
    let ttft_p50 = f(s, "latency_ms.ttft.p50");
    assert!(
        (TTFT_MS..TTFT_MS + 15.0).contains(&ttft_p50),
        "TTFT p50 {ttft_p50} ms against a {TTFT_MS} ms simulator"
    );
    assert!(
        u(s, "overhead.sim.faults") > 0,
        "the simulator injected: {}",
        s["overhead"]["sim"]
    );
}

fn fault_case(fault: &str, kind: Option<&str>) -> Value {
    let _g = lock();
    let s = run_summary(&fault_plan(fault, 0.2));
    check_accounting(&s, kind);
    s
}

#[test]
fn refuse_is_a_connect_failure_or_a_reset_before_the_head() {
    // A listening server can only refuse by resetting what it accepted: depending on whether
    // the reset lands before the client's connect completes, the client sees a failed connect
    // or a connection that died before any response byte. Refusal is per connection and
    // connections are kept alive, so it takes a high probability to see several.
    let _g = lock();
    let s = run_summary(&fault_plan("refuse", 0.6));
    check_accounting(&s, Some("connect|reset_before_head"));
}

#[test]
fn reset_before_head() {
    fault_case("reset_before_head", Some("reset_before_head"));
}

#[test]
fn reset_mid_stream() {
    fault_case("reset_mid_stream", Some("reset_mid_stream"));
}

/// `fault` with `--out`: the summary, and the `failure` of each failed line of
/// `requests.jsonl`.
fn logged_case(fault: &str, kind: &str) -> (Value, Vec<Value>) {
    let _g = lock();
    let dir = out_dir(fault);
    let mut p = fault_plan(fault, 0.2);
    p.out_dir = Some(dir.clone());
    let s = run_summary(&p);
    check_accounting(&s, Some(kind));
    let lines = read_jsonl(&dir.join("requests.jsonl"));
    let failed: Vec<Value> = lines
        .iter()
        .filter(|l| l["outcome"] != "ok")
        .map(|l| l["failure"].clone())
        .collect();
    assert!(
        lines
            .iter()
            .filter(|l| l["outcome"] == "ok")
            .all(|l| l["failure"].is_null()),
        "a success keeps no failure"
    );
    assert_eq!(failed.len() as u64, u(&s, "counts.failed"));
    (s, failed)
}

/// `errors` is the one group `(kind, status, message)` holding every failure.
fn one_group(s: &Value, kind: &str, status: u64, message: &str) {
    let errors = &s["errors"];
    assert_eq!(
        errors,
        &serde_json::json!([{
            "kind": kind, "status": status, "message": message, "count": u(s, "counts.failed")
        }]),
        "{errors}"
    );
}

#[test]
fn http_500() {
    let (s, failed) = logged_case("http_500", "http_500");
    one_group(&s, "http_500", 500, "simulated error");
    for f in &failed {
        assert_eq!(f["content_type"], "application/json", "{f}");
        let body = f["body"].as_str().unwrap();
        assert!(
            body.starts_with(r#"{"error":{"message":"simulated error""#),
            "{f}"
        );
    }
}

#[test]
fn an_html_page_answering_200_is_malformed_and_keeps_the_page() {
    let (s, failed) = logged_case("html_200", "malformed");
    one_group(&s, "malformed", 200, "Sign in - Example Proxy");
    for f in &failed {
        assert_eq!(f["content_type"], "text/html; charset=utf-8", "{f}");
        assert!(
            f["body"].as_str().unwrap().starts_with("<!DOCTYPE html>"),
            "{f}"
        );
        assert!(f["body_hex"].is_null());
    }
}

#[test]
fn http_503() {
    fault_case("http_503", Some("http_503"));
}

#[test]
fn http_429() {
    fault_case("http_429", Some("http_429"));
}

#[test]
fn error_event() {
    let (s, failed) = logged_case("error_event", "error_event");
    one_group(&s, "error_event", 200, "simulated failure mid-stream");
    assert!(failed
        .iter()
        .all(|f| f["content_type"] == "text/event-stream; charset=utf-8"));
}

#[test]
fn faults_in_responses_and_messages_streams_are_counted_as_in_chat() {
    // Each API's own error event, and its own shape of a spoiled event.
    for endpoint in [Endpoint::Responses, Endpoint::Messages] {
        for (fault, kind) in [
            ("error_event", "error_event"),
            ("bad_json", "malformed"),
            ("truncated_chunk", "reset_mid_stream"),
        ] {
            let _g = lock();
            let mut p = fault_plan(fault, 0.2);
            p.endpoint = endpoint;
            let s = run_summary(&p);
            check_accounting(&s, Some(kind));
        }
    }
}

#[test]
fn stall_head_hits_the_request_timeout() {
    fault_case("stall_head", Some("timeout"));
}

#[test]
fn stall_mid_hits_the_request_timeout() {
    fault_case("stall_mid", Some("timeout"));
}

#[test]
fn bad_json() {
    fault_case("bad_json", Some("malformed"));
}

#[test]
fn truncated_chunk_is_a_stream_cut_short() {
    fault_case("truncated_chunk", Some("reset_mid_stream"));
}

#[test]
fn bad_utf8() {
    fault_case("bad_utf8", Some("malformed"));
}

#[test]
fn oversized_event() {
    fault_case("oversized_event", Some("oversized"));
}

#[test]
fn slow_head_is_slow_not_failed() {
    let s = fault_case("slow_head", None);
    // Faulted heads took the 150 ms trickle; the median request did not.
    assert!(
        f(&s, "latency_ms.ttfb.max") >= 150.0,
        "{}",
        s["latency_ms"]["ttfb"]
    );
    assert!(
        f(&s, "latency_ms.ttfb.p50") < 60.0,
        "{}",
        s["latency_ms"]["ttfb"]
    );
}

#[test]
fn close_after_response_reconnects_without_failing() {
    let s = fault_case("close_after_response", None);
    let reconnects: u64 = s["overhead"]["workers"]
        .as_array()
        .map(|ws| ws.iter().filter_map(|w| w["reconnects"].as_u64()).sum())
        .unwrap_or_else(|| u(&s, "overhead.reconnects"));
    assert!(
        reconnects > 0,
        "closed connections were reopened: {}",
        s["overhead"]
    );
}

#[test]
fn connect_timeout_bounds_a_connect_that_never_completes() {
    let _g = lock();
    // A listener with a full accept queue drops further SYNs, so connect() hangs.
    let (port, _hold) = unresponsive_listener();
    let mut p = fault_plan("http_500", 0.0);
    p.targets = vec![ringbench::plan::Target::parse(&format!("http://127.0.0.1:{port}")).unwrap()];
    p.sim = None;
    p.load = Load::Closed { concurrency: 2 };
    p.stop.request_count = Some(4);
    p.connect_timeout_ns = 200_000_000;
    let t0 = std::time::Instant::now();
    let s = run_summary(&p);
    assert_eq!(u(&s, "counts.failed"), 4, "{}", s["counts"]);
    assert_eq!(u(&s, "counts.failed_by_kind.connect"), 4);
    assert!(t0.elapsed().as_secs_f64() < 3.0, "{:?}", t0.elapsed());
}

#[test]
fn an_open_loop_does_not_storm_a_server_that_does_not_accept() {
    let _g = lock();
    let (port, _hold) = unresponsive_listener();
    let mut p = fault_plan("http_500", 0.0);
    p.targets = vec![ringbench::plan::Target::parse(&format!("http://127.0.0.1:{port}")).unwrap()];
    p.sim = None;
    p.load = Load::Open {
        // 200 ms connects at 3,000/s would keep ~600 outstanding without the gate.
        request_rate: 3000.0,
        arrival: ringbench::plan::Arrival::Constant,
        max_concurrency: None,
    };
    p.stop = Stop {
        request_count: None,
        duration_ns: Some(300_000_000),
    };
    p.connect_timeout_ns = 200_000_000;
    let t0 = std::time::Instant::now();
    let s = run_summary(&p);
    // Every arrival is accounted for as a connect failure, none silently dropped...
    assert_eq!(u(&s, "counts.sent"), 900, "{}", s["counts"]);
    assert_eq!(
        u(&s, "counts.failed_by_kind.connect"),
        900,
        "{}",
        s["counts"]
    );
    // ...but at most 256 connects were outstanding: the rest waited, and said so.
    let warned = s["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .is_some_and(|w| w.contains("waited while 256 connections were being opened"))
    });
    assert!(warned, "{}", s["warnings"]);
    let stamps_warned = s["warnings"].to_string().contains("out-of-order stamps");
    assert!(
        !stamps_warned,
        "never-sent requests have no stamps to order: {}",
        s["warnings"]
    );
    // 900 connects through 256 places, 200 ms each: at least four rounds, where all at once
    // would have taken the 300 ms schedule plus one timeout.
    assert!(t0.elapsed().as_secs_f64() >= 0.75, "{:?}", t0.elapsed());
}

#[test]
fn a_closed_port_is_a_connect_failure() {
    let _g = lock();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut p = fault_plan("http_500", 0.0);
    p.targets = vec![ringbench::plan::Target::parse(&format!("http://127.0.0.1:{port}")).unwrap()];
    p.sim = None;
    p.stop.request_count = Some(8);
    let s = run_summary(&p);
    assert_eq!(u(&s, "counts.sent"), 8);
    assert_eq!(u(&s, "counts.failed_by_kind.connect"), 8, "{}", s["counts"]);
}

/// A listening socket with backlog 0 whose queue is already full: new SYNs are dropped.
fn unresponsive_listener() -> (u16, Vec<std::net::TcpStream>) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a fresh fd, checked; the fd is owned by the listener.
    let listener = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as u32;
        assert_eq!(
            libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), len),
            0
        );
        assert_eq!(libc::listen(fd, 0), 0);
        std::net::TcpListener::from_raw_fd(fd)
    };
    let port = listener.local_addr().unwrap().port();
    let mut hold = vec![];
    for _ in 0..4 {
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        if let Ok(s) =
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(100))
        {
            hold.push(s);
        }
    }
    std::mem::forget(listener);
    (port, hold)
}

#[test]
fn a_second_run_against_the_same_endpoint_is_refused_unless_allowed() {
    let _g = lock();
    let sim = ringbench::sim::start(ringbench::sim::SimConfig::default()).unwrap();
    let url = format!("http://{}", sim.addr);
    let mut p = fault_plan("http_500", 0.0);
    p.targets = vec![ringbench::plan::Target::parse(&url).unwrap()];
    p.sim = None;
    p.stop.request_count = Some(4);
    p.goodput.clear();
    let held =
        ringbench::run::lock::acquire(&sim.addr.to_string(), "2026-11-29T00:00:00Z").unwrap();
    let err = ringbench::run(&p).unwrap_err().to_string();
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    assert!(err.contains("--allow-concurrent"), "{err}");
    p.allow_concurrent = true;
    let s = run_summary(&p);
    assert_eq!(u(&s, "counts.ok"), 4);
    drop(held);
    p.allow_concurrent = false;
    let s = run_summary(&p);
    assert_eq!(u(&s, "counts.ok"), 4);
    // The run released its lock on the way out.
    drop(ringbench::run::lock::acquire(&sim.addr.to_string(), "now").unwrap());
}
