//! The run as a library call: a `Plan` in, a `Summary` out. This is the only place that wires
//! the stages together — simulator (when no URL), catalog, workers, collector — and it owns
//! the collector thread's loop. It never prints: progress goes to the caller's callback.

pub mod lock;

use crate::collector::{Collector, LiveCounts, RunFacts};
use crate::plan::{IoDriver, Load, Plan};
use crate::prepare::catalog::Catalog;
use crate::prepare::{CacheTally, Prepared};
use crate::record::{Record, Spare};
use crate::rt::clock::RunClock;
use crate::rt::netcount::NetCounters;
use crate::schedule::Schedule;
use crate::summary::Summary;
use crate::worker::{self, Shared, WorkerSetup};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
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
    #[error("exports: {0}")]
    Export(#[from] crate::output::export::ExportError),
    #[error(transparent)]
    Tls(#[from] crate::http::tls::TlsError),
    #[error(transparent)]
    Busy(#[from] crate::run::lock::LockError),
    /// A tokenizer or dataset that cannot be used (bad input: exit code 2).
    #[error(transparent)]
    Workload(#[from] crate::prepare::WorkloadError),
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
    /// `https://`: the client config and the name the certificate must carry.
    tls: Option<TlsTarget>,
}

struct TlsTarget {
    config: Arc<rustls::ClientConfig>,
    host: String,
}

fn resolve(plan: &Plan) -> Result<Endpoint, RunError> {
    let Some(t) = &plan.target else {
        return start_sim(plan);
    };
    let tls = match t.https {
        true => Some(TlsTarget {
            config: crate::http::tls::client_config(plan.cacert.as_deref(), plan.insecure)?,
            host: t.host.clone(),
        }),
        false => None,
    };
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
        tls,
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
        faults: s.faults.clone(),
        ttft_per_inflight_ms: s.ttft_per_inflight_ms,
        itl_per_inflight_ms: s.itl_per_inflight_ms,
        ..crate::sim::SimConfig::default()
    };
    let handle = crate::sim::start(cfg).map_err(RunError::Sim)?;
    let addr = handle.addr;
    Ok(Endpoint {
        addr,
        host_header: addr.to_string(),
        base_url: format!("http://{addr}"),
        sim: Some(handle),
        tls: None,
    })
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// `GET /v1/models` before the run (blocking; not on the hot path): the first model's id.
fn discover_model(ep: &Endpoint, plan: &Plan) -> Result<String, RunError> {
    let fail = |why: String| RunError::Model(ep.base_url.clone(), why);
    let limit = Duration::from_nanos(plan.connect_timeout_ns);
    let mut s: Box<dyn ReadWrite> = match &ep.tls {
        Some(t) => Box::new(crate::http::tls::probe(
            ep.addr,
            &t.host,
            t.config.clone(),
            limit,
        )?),
        None => {
            let s = TcpStream::connect_timeout(&ep.addr, limit).map_err(|e| fail(e.to_string()))?;
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            Box::new(s)
        }
    };
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
    match s.take(4 << 20).read_to_end(&mut resp) {
        // A TLS server that closes without close_notify (as the simulator and many do) after
        // a complete answer is not an error here: the body is parsed below.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !resp.is_empty() => {}
        Err(e) => return Err(fail(e.to_string())),
        Ok(_) => {}
    }
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
    run_with(plan, &AtomicBool::new(false), on_progress)
}

/// `run`, stoppable: once `interrupt` is set (a signal handler, an embedding program), no
/// new request is sent, in-flight ones get `plan.grace_ns` to finish, the rest end as
/// `cancelled`, and the summary (marked `interrupted`) covers what was measured.
pub fn run_with(
    plan: &Plan,
    interrupt: &AtomicBool,
    on_progress: impl FnMut(&LiveCounts, f64),
) -> Result<Summary, RunError> {
    let prepared = crate::prepare::prepare(plan)?;
    run_prepared(plan, prepared, interrupt, on_progress)
}

/// `run_with` with its requests already prepared (`workload::prepare`), so the caller can
/// check and show the workload before anything is sent.
pub fn run_prepared(
    plan: &Plan,
    prepared: Prepared,
    interrupt: &AtomicBool,
    mut on_progress: impl FnMut(&LiveCounts, f64),
) -> Result<Summary, RunError> {
    if plan.io_driver == IoDriver::Uring && !worker::uring_available() {
        return Err(RunError::UringRefused);
    }
    let started_at = crate::rt::clock::rfc3339_now();
    let ep = resolve(plan)?;
    // Held until the run returns; the kernel releases it on any other exit.
    let _lock = match &plan.target {
        Some(t) if !plan.allow_concurrent => Some(crate::run::lock::acquire(
            &format!("{}{}", ep.addr, t.base_path),
            &started_at,
        )?),
        _ => None,
    };
    let model = match &plan.model {
        Some(m) => {
            // A certificate problem is one clear error before the run, not N `connect`s.
            if let Some(t) = &ep.tls {
                let limit = Duration::from_nanos(plan.connect_timeout_ns);
                crate::http::tls::probe(ep.addr, &t.host, t.config.clone(), limit)?;
            }
            m.clone()
        }
        None => discover_model(&ep, plan)?,
    };
    // The prompts are dropped as they become bytes: a trace's may take a gigabyte.
    let mut prepared = prepared;
    let prompts = std::mem::take(&mut prepared.prompts);
    let catalog = Catalog::from_prompts(plan, prompts, &prepared.stats, &ep.host_header, &model);
    let mut collector = Collector::new(plan, plan.out_dir.as_deref())
        .map_err(io_err("cannot open the output folder"))?;
    let plan_arc = Arc::new(plan.clone());
    let shared = Arc::new(Shared::new(plan.cpus.len()));
    let (tx, rx) = crossbeam_channel::bounded::<Record>(RECORD_CHANNEL_CAP);
    let (recycle_tx, recycle_rx) = crossbeam_channel::bounded::<Spare>(RECYCLE_CHANNEL_CAP);
    let fd_budget = fd_budget(plan);
    let schedule = open_schedule(plan);
    let clock = RunClock::start();
    let start_ns = clock.now_ns() + START_LEAD_NS;
    let net_before = NetCounters::read();
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
            tls: tls_connector(&ep)?,
        };
        handles.push(worker::spawn(setup).map_err(io_err("cannot start a worker thread"))?);
    }
    drop(tx);
    let stopper = Stopper {
        interrupt,
        shared: &shared,
        grace_ns: plan.grace_ns,
        stopped_at_ns: None,
    };
    let mut tally = CacheTally::default();
    let pin = CollectorPin::away_from(&plan.cpus);
    let channels = Channels {
        records: &rx,
        recycle: &recycle_tx,
    };
    collect(
        (&mut collector, &mut tally),
        channels,
        &clock,
        start_ns,
        stopper,
        &mut on_progress,
    );
    drop(pin);
    let ends: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("a worker thread panicked"))
        .collect();
    let kernel_net = net_before.delta(&NetCounters::read(), &plan.cpus);
    let sim_stats = ep
        .sim
        .map(|s| serde_json::to_value(s.stop()).unwrap_or_default());
    let mut warnings: Vec<String> = ends.iter().flat_map(|e| e.warnings.clone()).collect();
    if !catalog.input_method.starts_with("exact") {
        warnings.push(catalog.input_method.clone());
    }
    if plan.insecure {
        warnings.push(
            "--insecure: the server's TLS certificate was NOT verified; anyone on the path \
             could have answered"
                .to_string(),
        );
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
        kernel_net: Some(kernel_net),
    };
    let summary = collector
        .finish(plan, facts)
        .map_err(io_err("cannot write the results"))?;
    if let Some(dir) = &plan.out_dir {
        crate::output::console::write_summary_json(dir, &summary)
            .map_err(io_err("cannot write summary.json"))?;
        crate::output::export::write_all(dir, dir, &summary, &plan.exports)?;
    }
    Ok(summary)
}

/// The workers' TLS connector and server name, for an `https://` target.
fn tls_connector(ep: &Endpoint) -> Result<Option<worker::TlsClient>, RunError> {
    let Some(t) = &ep.tls else {
        return Ok(None);
    };
    Ok(Some(worker::TlsClient {
        connector: monoio_rustls::TlsConnector::from(t.config.clone()),
        name: crate::http::tls::server_name(&t.host)?,
    }))
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

/// Soft `RLIMIT_NOFILE` raised to the hard limit, and the descriptor table grown to it (up to
/// [`FD_TABLE_PRESIZE`]) now; returns the soft limit in force.
///
/// Why grow the table now: the kernel doubles a process's descriptor table when an fd past its
/// end is asked for, and in a multi-threaded process each doubling waits for an RCU grace
/// period (`expand_files` → `synchronize_rcu`), measured here at 9–14 ms in uninterruptible
/// sleep inside `socket()` or `accept()`. Mid-run, that stalled a worker at 64, 128, 256, ...
/// connections; at 30,000 req/s each stall left ~400 arrivals due at once, which opened more
/// connections and so more doublings, and the run collapsed. The table never shrinks, so one
/// growth before the run removes them all.
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
    presize_fd_table(lim.rlim_cur.min(FD_TABLE_PRESIZE));
    lim.rlim_cur
}

/// The most descriptors the table is grown to ahead of time: 8 bytes of kernel memory each,
/// and more connections than this are past what one client machine opens in a run.
const FD_TABLE_PRESIZE: u64 = 65_536;

/// Grows the descriptor table to hold `fds` descriptors by opening `/dev/null` into the last
/// slot and closing it. Best effort: a failure leaves the table growing on demand.
fn presize_fd_table(fds: u64) {
    let Ok(last) = libc::c_int::try_from(fds.saturating_sub(1)) else {
        return;
    };
    // SAFETY: `dup3` into a slot we then close; if the slot was in use it is not touched
    // (F_GETFD succeeds), so no descriptor of ours is replaced or closed.
    unsafe {
        if last < 3 || libc::fcntl(last, libc::F_GETFD) != -1 {
            return;
        }
        let probe = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if probe < 0 {
            return;
        }
        if libc::dup3(probe, last, libc::O_CLOEXEC) == last {
            libc::close(last);
        }
        libc::close(probe);
    }
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
        Load::Trace(ref t) => {
            t.max_concurrency
                .map_or(by_fds, |cap| share(u64::from(cap)).min(by_fds)) as usize
        }
        _ => by_fds as usize,
    }
}

/// The open loop's global schedule: exactly rate × horizon arrivals (or the count); a
/// trace's own times.
fn open_schedule(plan: &Plan) -> Option<Schedule> {
    if let Load::Trace(t) = &plan.load {
        return Some(Schedule::from_trace(t.times_ns.clone()));
    }
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

/// Turns an interrupt into the workers' two flags: stop scheduling at once, cancel what is
/// still in flight when the grace period ends.
struct Stopper<'a> {
    interrupt: &'a AtomicBool,
    shared: &'a Shared,
    grace_ns: u64,
    stopped_at_ns: Option<u64>,
}

impl Stopper<'_> {
    fn check(&mut self, now_ns: u64) {
        match self.stopped_at_ns {
            None if self.interrupt.load(Ordering::Relaxed) => {
                self.shared.stop.store(true, Ordering::Relaxed);
                self.stopped_at_ns = Some(now_ns);
            }
            Some(at) if now_ns.saturating_sub(at) >= self.grace_ns => {
                self.shared.cancel.store(true, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// Records in from the workers, emptied event vectors back to them.
struct Channels<'a> {
    records: &'a crossbeam_channel::Receiver<Record>,
    recycle: &'a crossbeam_channel::Sender<Spare>,
}

/// The collector thread's loop: every record into the collector, its event vector back to
/// the workers, the interrupt watched, and about once a second a progress callback and a
/// flush of the request log.
fn collect(
    (collector, tally): (&mut Collector, &mut CacheTally),
    Channels {
        records: rx,
        recycle,
    }: Channels<'_>,
    clock: &RunClock,
    start_ns: u64,
    mut stopper: Stopper<'_>,
    on_progress: &mut impl FnMut(&LiveCounts, f64),
) {
    let mut next_tick_ns = start_ns + 1_000_000_000;
    loop {
        stopper.check(clock.now_ns());
        let (taken, open) = drain(collector, tally, rx, recycle);
        let now = clock.now_ns();
        if now >= next_tick_ns {
            next_tick_ns = now + 1_000_000_000;
            collector.flush_log();
            on_progress(&collector.live(), now.saturating_sub(start_ns) as f64 / 1e9);
        }
        if !open {
            break;
        }
        if taken == 0 {
            // Polled, not woken per record: a blocking `recv` made every record a futex wake
            // from the worker, and the woken collector was placed on the worker's own core
            // (wake-affine), preempting it 30,000 times a second. Records carry their stamps,
            // so collecting them in batches changes no figure.
            std::thread::sleep(COLLECT_POLL);
        }
    }
}

/// Pins the collecting thread to a CPU no worker uses for as long as it lives, then restores
/// the thread's old CPU set. Why: a worker that polls keeps its core busy, and the scheduler
/// still placed the collector's wake-ups there now and then, preempting the worker for the
/// length of a batch. With no spare CPU the thread is left where it was.
struct CollectorPin {
    old: Option<libc::cpu_set_t>,
}

impl CollectorPin {
    fn away_from(worker_cpus: &[usize]) -> Self {
        let Some(old) = thread_cpus() else {
            return CollectorPin { old: None };
        };
        let Some(cpu) = cpus_in(&old).find(|cpu| !worker_cpus.contains(cpu)) else {
            return CollectorPin { old: None };
        };
        // SAFETY: an all-zero cpu_set_t is the empty set; `cpu` < CPU_SETSIZE.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut one) };
        let pinned = set_thread_cpus(&one);
        CollectorPin {
            old: pinned.then_some(old),
        }
    }
}

impl Drop for CollectorPin {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            set_thread_cpus(old);
        }
    }
}

/// The CPUs in `set`, lowest first.
fn cpus_in(set: &libc::cpu_set_t) -> impl Iterator<Item = usize> + '_ {
    // SAFETY: every `cpu` tested is < CPU_SETSIZE, the set's size.
    (0..libc::CPU_SETSIZE as usize).filter(move |&cpu| unsafe { libc::CPU_ISSET(cpu, set) })
}

fn thread_cpus() -> Option<libc::cpu_set_t> {
    // SAFETY: the kernel fills at most `size_of::<cpu_set_t>()` bytes of `set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    (rc == 0).then_some(set)
}

fn set_thread_cpus(set: &libc::cpu_set_t) -> bool {
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) == 0 }
}

/// How long the collector sleeps when it finds no record: at 30,000 records/s a batch of ~60,
/// far below `RECORD_CHANNEL_CAP`.
const COLLECT_POLL: Duration = Duration::from_millis(2);

/// Takes every record waiting now; false once every worker has hung up and nothing is left.
fn drain(
    collector: &mut Collector,
    tally: &mut CacheTally,
    rx: &Receiver<Record>,
    recycle: &Sender<Spare>,
) -> (usize, bool) {
    let mut taken = 0;
    loop {
        match rx.try_recv() {
            Ok(mut rec) => {
                collector.add_from_worker(&mut rec);
                tally.add(&rec);
                let mut spare = Spare {
                    events: std::mem::take(&mut rec.events),
                    text: std::mem::take(&mut rec.text),
                };
                spare.events.clear();
                spare.text.clear();
                let _ = recycle.try_send(spare);
                taken += 1;
            }
            Err(TryRecvError::Empty) => return (taken, true),
            Err(TryRecvError::Disconnected) => return (taken, false),
        }
    }
}

#[cfg(test)]
mod tests {
    /// `FDSize` in /proc/self/status is the kernel's descriptor table size.
    #[test]
    fn raising_the_fd_limit_grows_the_descriptor_table_up_front() {
        let limit = super::raise_fd_limit();
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let size: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("FDSize:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("FDSize in /proc/self/status");
        assert!(
            size >= limit.min(super::FD_TABLE_PRESIZE),
            "FDSize {size}, limit {limit}"
        );
    }

    #[test]
    fn the_collector_leaves_the_workers_cpus_and_gets_its_own_back() {
        use super::{cpus_in, thread_cpus, CollectorPin};
        let before = thread_cpus().expect("sched_getaffinity");
        let allowed: Vec<usize> = cpus_in(&before).collect();
        {
            let _pin = CollectorPin::away_from(&allowed[..1]);
            let on: Vec<usize> = cpus_in(&thread_cpus().unwrap()).collect();
            if allowed.len() > 1 {
                assert_eq!(on, vec![allowed[1]]);
            } else {
                assert_eq!(on, allowed, "no spare CPU: left where it was");
            }
        }
        // Every worker CPU taken: nothing to do.
        drop(CollectorPin::away_from(&allowed));
        let after = thread_cpus().unwrap();
        assert!(unsafe { libc::CPU_EQUAL(&before, &after) });
    }

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
