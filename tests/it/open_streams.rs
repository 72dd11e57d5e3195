//! Issue 37: an open stream costs the client at most 16 KiB of resident memory. The built
//! simulator holds 2,000 streams open (a TTFT longer than the test) while the built client
//! sends them at 1,000/s; the client's RSS and its open file descriptors are read once it
//! has warmed up and waits for its `--start-at`, and again with the most streams open. The
//! RSS added over the sockets added is the cost of one open stream (it was 31 KiB before
//! the payload scratch and the read buffers became the worker's: `worker/conn.rs`).

use crate::support::common::{cpu_pair, lock, out_dir, ringbench, spawn_sim_with, KillOnDrop};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The bound issue 37 sets, per open stream.
const BOUND_KIB: f64 = 16.0;

/// Streams the test opens: 1,000/s for 2 s.
const STREAMS: u64 = 2_000;

/// (VmRSS in KiB, open file descriptors) of `pid`.
fn reading(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss, fds))
}

#[test]
fn an_open_stream_costs_the_client_at_most_16_kib() {
    let _serial = lock();
    let (sim, addr) = spawn_sim_with(&["--ttft-ms", "20000"]);
    let _sim = KillOnDrop(sim);
    let (client_cpu, _) = cpu_pair();
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let settle = Duration::from_millis(1500);
    let start_at = (now_ns + settle.as_nanos()).to_string();
    let launched = Instant::now();
    let client = ringbench([
        "run",
        "--url",
        &format!("http://{addr}"),
        "--request-rate",
        &(STREAMS / 2).to_string(),
        "--duration",
        "2s",
        "--output-tokens",
        "1",
        "--cpus",
        &client_cpu.to_string(),
        "--quiet",
        "--export",
        "none",
        "--start-at",
        &start_at,
        "--out",
    ])
    .arg(out_dir("open"))
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("the client starts");
    let pid = client.id();
    let _client = KillOnDrop(client);
    // Warmed up and waiting for the start: nothing open yet.
    std::thread::sleep(settle - Duration::from_millis(300));
    let idle = reading(pid).expect("the client runs until its start");
    let mut most = idle;
    while launched.elapsed() < settle + Duration::from_millis(2600) {
        std::thread::sleep(Duration::from_millis(50));
        match reading(pid) {
            Some(r) if r.1 > most.1 => most = r,
            Some(_) => {}
            None => break,
        }
    }
    let streams = most.1.saturating_sub(idle.1);
    assert!(
        streams >= STREAMS / 2,
        "only {streams} streams open at once of {STREAMS} sent (idle {idle:?}, most {most:?})"
    );
    let per_stream_kib = most.0.saturating_sub(idle.0) as f64 / streams as f64;
    assert!(
        per_stream_kib <= BOUND_KIB,
        "{per_stream_kib:.1} KiB RSS per open stream over {streams} streams (bound {BOUND_KIB}; \
         idle {idle:?}, most open {most:?}, (RSS KiB, fds))"
    );
}
