//! The run as a library call: a `Plan` in, a `Summary` out. This is the only place that wires
//! the stages together — simulator (when no URL), catalog, workers, collector — and it owns
//! the collector thread's loop. It never prints: progress goes to the caller's callback.

use crate::catalog::Catalog;
use crate::clock::RunClock;
use crate::collector::{Collector, LiveCounts, RunFacts};
use crate::plan::{IoDriver, Load, Plan};
use crate::record::{EventStamp, Record};
use crate::schedule::Schedule;
use crate::summary::Summary;
use crate::worker::{self, Shared, WorkerSetup};
use crate::workload::{CacheTally, Prepared};
use crossbeam_channel::RecvTimeoutError;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// Records in flight between workers and the collector; a full channel is counted.
const RECORD_CHANNEL_CAP: usize = 1 << 14;
/// Event vectors on their way back to the workers for reuse.
const RECYCLE_CHANNEL_CAP: usize = 1 << 12;
/// Time given to worker threads to start and pin before the first arrival is due.
const START_LEAD_NS: u64 = 20_000_000;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot resolve {host}:{port}: {reason} (check --url)")]
    Resolve {
        host: String,
        port: u16,
        reason: String,
    },
    #[error("could not start the built-in simulator: {0}")]
    Sim(std::io::Error),
    #[error("could not ask {0}/v1/models for a model name: {1} (give one with --model)")]
    Model(String, String),
    #[error("--io-driver uring: the kernel refuses io_uring here (use --io-driver epoll or auto)")]
    UringRefused,
    #[error("https is not supported yet; use an http:// URL")]
    HttpsUnsupported,
    /// A tokenizer or dataset that cannot be used (bad input: exit code 2).
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: std::io::Error,
    },
}

fn io_err(context: &'static str) -> impl FnOnce(std::io::Error) -> RunError {
    move |source| RunError::Io { context, source }
}

/// Where to send, and what to send as `Host:`.
struct Endpoint {
    addr: SocketAddr,
    host_header: String,
    base_url: String,
    sim: Option<crate::sim::SimHandle>,
}

fn resolve(plan: &Plan) -> Result<Endpoint, RunError> {
    let Some(t) = &plan.target else {
        return start_sim(plan);
    };
    if t.https {
        return Err(RunError::HttpsUnsupported);
    }
    let addr = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())
        .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
        .map_err(|reason| RunError::Resolve {
            host: t.host.clone(),
            port: t.port,
            reason,
        })?;
    Ok(Endpoint {
        addr,
        host_header: format!("{}:{}", t.host, t.port),
        base_url: t.url.trim_end_matches('/').to_string(),
        sim: None,
    })
}

fn start_sim(plan: &Plan) -> Result<Endpoint, RunError> {
    let s = plan
        .sim
        .clone()
        .unwrap_or_else(|| Plan::defaults().sim.expect("defaults have a sim"));
    let cfg = crate::sim::SimConfig {
        host: "127.0.0.1".into(),
        port: 0,
        cpus: s.cpus,
        ttft_ms: s.ttft_ms,
        itl_ms: s.itl_ms,
        tokens_per_chunk: s.tokens_per_chunk,
        io_driver: plan.io_driver,
        ..crate::sim::SimConfig::default()
    };
    let handle = crate::sim::start(cfg).map_err(RunError::Sim)?;
    let addr = handle.addr;
    Ok(Endpoint {
        addr,
        host_header: addr.to_string(),
        base_url: format!("http://{addr}"),
        sim: Some(handle),
    })
}

/// `GET /v1/models` before the run (blocking; not on the hot path): the first model's id.
fn discover_model(ep: &Endpoint, plan: &Plan) -> Result<String, RunError> {
    let fail = |why: String| RunError::Model(ep.base_url.clone(), why);
    let limit = Duration::from_nanos(plan.connect_timeout_ns);
    let mut s = TcpStream::connect_timeout(&ep.addr, limit).map_err(|e| fail(e.to_string()))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut req = format!(
        "GET /v1/models HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        ep.host_header
    );
    if let Some(key) = &plan.api_key {
        req.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    let mut resp = Vec::new();
    s.take(4 << 20)
        .read_to_end(&mut resp)
        .map_err(|e| fail(e.to_string()))?;
    model_from_response(&resp).ok_or_else(|| fail("no model id in the response".into()))
}

fn model_from_response(resp: &[u8]) -> Option<String> {
    let body_at = memchr::memmem::find(resp, b"\r\n\r\n")? + 4;
    let body = &resp[body_at..];
    // The body may be chunked: the JSON object starts at the first '{'.
    let start = memchr::memchr(b'{', body)?;
    let mut de =
        serde_json::Deserializer::from_slice(&body[start..]).into_iter::<serde_json::Value>();
    let v = de.next()?.ok()?;
    Some(v["data"][0]["id"].as_str()?.to_string())
}

/// Runs one benchmark. `on_progress` is called about once a second from this thread.
pub fn run(plan: &Plan, on_progress: impl FnMut(&LiveCounts, f64)) -> Result<Summary, RunError> {
    let prepared = crate::workload::prepare(plan)?;
    run_prepared(plan, prepared, on_progress)
}

/// Runs one benchmark with its requests already prepared (`workload::prepare`), so the
/// caller can check and show the workload before anything is sent.
pub fn run_prepared(
    plan: &Plan,
    prepared: Prepared,
    mut on_progress: impl FnMut(&LiveCounts, f64),
) -> Result<Summary, RunError> {
    if plan.io_driver == IoDriver::Uring && !worker::uring_available() {
        return Err(RunError::UringRefused);
    }
    let started_at = crate::clock::rfc3339_now();
    let ep = resolve(plan)?;
    let model = match &plan.model {
        Some(m) => m.clone(),
        None => discover_model(&ep, plan)?,
    };
    let catalog = Catalog::build(plan, &prepared, &ep.host_header, &model);
    let mut collector = Collector::new(plan, plan.out_dir.as_deref())
        .map_err(io_err("cannot open the output folder"))?;
    let plan_arc = Arc::new(plan.clone());
    let shared = Arc::new(Shared::new(plan.cpus.len()));
    let (tx, rx) = crossbeam_channel::bounded::<Record>(RECORD_CHANNEL_CAP);
    let (recycle_tx, recycle_rx) =
        crossbeam_channel::bounded::<Vec<EventStamp>>(RECYCLE_CHANNEL_CAP);
    let fd_budget = fd_budget(plan);
    let schedule = open_schedule(plan);
    let clock = RunClock::start();
    let start_ns = clock.now_ns() + START_LEAD_NS;
    let mut handles = Vec::with_capacity(plan.cpus.len());
    for (index, &cpu) in plan.cpus.iter().enumerate() {
        let setup = WorkerSetup {
            index,
            workers: plan.cpus.len(),
            cpu,
            plan: plan_arc.clone(),
            addr: ep.addr,
            catalog: catalog.clone(),
            clock,
            start_ns,
            schedule: schedule.clone(),
            lane_cap: lane_cap(plan, index, fd_budget),
            records: tx.clone(),
            recycled: recycle_rx.clone(),
            shared: shared.clone(),
        };
        handles.push(worker::spawn(setup).map_err(io_err("cannot start a worker thread"))?);
    }
    drop(tx);
    let mut tally = CacheTally::default();
    collect(
        &mut collector,
        &mut tally,
        &rx,
        &recycle_tx,
        &clock,
        start_ns,
        &mut on_progress,
    );
    let ends: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("a worker thread panicked"))
        .collect();
    let sim_stats = ep
        .sim
        .map(|s| serde_json::to_value(s.stop()).unwrap_or_default());
    let mut warnings: Vec<String> = ends.iter().flat_map(|e| e.warnings.clone()).collect();
    if !catalog.input_method.starts_with("exact") {
        warnings.push(catalog.input_method.clone());
    }
    let mut workload = prepared.stats;
    tally.apply(&mut workload);
    let facts = RunFacts {
        started_at,
        io_driver: ends.first().map_or("none", |e| e.driver.name()).to_string(),
        scheduled: scheduled_count(plan, schedule.as_ref(), &shared),
        wall_ns: clock.now_ns(),
        interrupted: shared.stop.load(std::sync::atomic::Ordering::Relaxed),
        workers: ends.into_iter().map(|e| e.stats).collect(),
        sim: sim_stats,
        warnings,
        workload: Some(workload),
    };
    let summary = collector
        .finish(plan, facts)
        .map_err(io_err("cannot write the results"))?;
    if let Some(dir) = &plan.out_dir {
        crate::report::write_summary_json(dir, &summary)
            .map_err(io_err("cannot write summary.json"))?;
    }
    Ok(summary)
}

/// Descriptors kept free for everything that is not a connection (files, the ring, timers).
const FD_RESERVE: u64 = 256;

/// Raises the soft open-files limit to the hard one and returns how many connections the
/// workers may hold together. The in-process simulator holds the other end of each one in
/// the same process, so it gets half.
fn fd_budget(plan: &Plan) -> u64 {
    let limit = raise_fd_limit();
    let usable = limit.saturating_sub(FD_RESERVE).max(16);
    if plan.target.is_none() {
        usable / 2
    } else {
        usable
    }
}

/// Soft `RLIMIT_NOFILE` raised to the hard limit; returns the soft limit now in force.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid, owned struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    lim.rlim_cur
}

/// Worker `index`'s share of the in-flight cap: `--max-concurrency` when given, and never
/// more connections than the descriptor budget allows. Arrivals are dealt round-robin, so an
/// even split holds the global cap while no worker waits on another.
fn lane_cap(plan: &Plan, index: usize, fd_budget: u64) -> usize {
    let n = plan.cpus.len() as u64;
    let share = |total: u64| (total / n + u64::from((index as u64) < total % n)).max(1);
    let by_fds = share(fd_budget);
    match plan.load {
        Load::Open {
            max_concurrency: Some(cap),
            ..
        } => share(u64::from(cap)).min(by_fds) as usize,
        _ => by_fds as usize,
    }
}

/// The open loop's global schedule: exactly rate × horizon arrivals (or the count).
fn open_schedule(plan: &Plan) -> Option<Schedule> {
    let Load::Open {
        request_rate,
        arrival,
        ..
    } = plan.load
    else {
        return None;
    };
    let count = plan.stop.request_count.map(|c| c + plan.warmup_requests);
    let until = plan.stop.duration_ns.map(|d| d + plan.warmup_duration_ns);
    let schedule = Schedule::new(arrival, request_rate, plan.seed, count, until);
    Some(schedule.expect("the plan was validated"))
}

/// How many requests the run scheduled, counted independently of the records so that
/// `scheduled = sent + not_sent` is a real check. Open loop: the schedule's length. Closed
/// loop: the ids the virtual users claimed within the count.
fn scheduled_count(plan: &Plan, schedule: Option<&Schedule>, shared: &Shared) -> u64 {
    if let Some(s) = schedule {
        return s.len();
    }
    let claimed = shared.claimed.load(std::sync::atomic::Ordering::Relaxed);
    let total = plan.stop.request_count.map(|c| c + plan.warmup_requests);
    total.map_or(claimed, |t| claimed.min(t))
}

/// The collector thread's loop: every record into the collector, its event vector back to
/// the workers, and a progress callback about once a second.
fn collect(
    collector: &mut Collector,
    tally: &mut CacheTally,
    rx: &crossbeam_channel::Receiver<Record>,
    recycle: &crossbeam_channel::Sender<Vec<EventStamp>>,
    clock: &RunClock,
    start_ns: u64,
    on_progress: &mut impl FnMut(&LiveCounts, f64),
) {
    let mut next_tick_ns = start_ns + 1_000_000_000;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(mut rec) => {
                collector.add(&rec);
                tally.add(&rec);
                let mut events = std::mem::take(&mut rec.events);
                events.clear();
                let _ = recycle.try_send(events);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        let now = clock.now_ns();
        if now >= next_tick_ns {
            next_tick_ns = now + 1_000_000_000;
            on_progress(&collector.live(), now.saturating_sub(start_ns) as f64 / 1e9);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn model_is_read_from_a_models_listing() {
        let resp = b"HTTP/1.1 200 OK\r\ncontent-length: 60\r\n\r\n{\"object\":\"list\",\"data\":[{\"id\":\"tiny-llama\",\"object\":\"model\"}]}";
        assert_eq!(
            super::model_from_response(resp).as_deref(),
            Some("tiny-llama")
        );
        assert_eq!(
            super::model_from_response(b"HTTP/1.1 404 x\r\n\r\nnope"),
            None
        );
    }
}
