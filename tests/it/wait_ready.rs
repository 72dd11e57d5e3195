//! `run --wait-ready D` (issue 19): a server that starts answering late is waited for, and
//! one that never answers 200 ends the run with exit 1 and a message naming the flag, after
//! the wait and not long after.

use crate::support::common::{cpu_pair, lock, output, ringbench, spawn_sim_on};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A free loopback port (bound and released: nothing listens on it until the test starts a
/// server there).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_server_that_starts_late_is_waited_for() {
    let _g = lock();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let (client_cpu, _) = cpu_pair();
    let started = Instant::now();
    let run = ringbench([
        "run",
        "--url",
        &url,
        "--wait-ready",
        "60s",
        "--request-count",
        "20",
        "--cpus",
        &client_cpu.to_string(),
        "--allow-invalid",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("the run starts");
    // Nothing listens for 2 s: the run's asks are refused.
    std::thread::sleep(Duration::from_secs(2));
    let (mut sim, _) = spawn_sim_on(port);
    let out = run.wait_with_output().unwrap();
    let _ = sim.kill();
    let _ = sim.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "it waited for the server"
    );
    assert!(
        stdout.contains(&format!("{url} is ready after")),
        "the wait is said: {stdout}"
    );
}

#[test]
fn a_server_that_never_answers_200_ends_the_run_after_the_wait() {
    let _g = lock();
    // Answers every request with 503, as vLLM's /health does while the engine is not up.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            let mut head = String::new();
            let mut r = BufReader::new(c.try_clone().unwrap());
            while r.read_line(&mut head).map(|n| n > 2).unwrap_or(false) {}
            let _ = c.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    let started = Instant::now();
    let ran = output(&mut ringbench([
        "run",
        "--url",
        &url,
        "--wait-ready",
        "2s",
        "--request-count",
        "5",
        "--model",
        "m",
    ]));
    let waited = started.elapsed();
    assert_eq!(ran.status.code(), Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("--wait-ready") && ran.stderr.contains("GET /health: 503"),
        "the message names the flag and the last answer: {}",
        ran.stderr
    );
    assert!(
        waited >= Duration::from_secs(2),
        "it waited the 2 s: {waited:?}"
    );
    // The bound leaves room for a loaded machine; a wait that ignored the limit would run on.
    assert!(
        waited < Duration::from_secs(20),
        "and stopped after them: {waited:?}"
    );
}
