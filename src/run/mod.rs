//! The run as a library call: a `Plan` in, a `Summary` out. This module wires the stages
//! together — the simulator when no URL is given (`endpoint`), the catalog, the workers
//! (`workers`), the collector thread's loop (`collect`) — and writes the run's files. It never
//! prints: what a caller wants to see as the run goes reaches it through an `Observer`.

mod about;
mod collect;
mod endpoint;
mod live;
pub mod lock;
mod server;
#[cfg(test)]
pub(crate) mod testkit;
mod workers;

use crate::collector::{Collector, LiveCounts, RunFacts};
use crate::plan::{IoDriver, Load, Plan};
use crate::prepare::catalog::Catalog;
use crate::prepare::WorkloadTally;
use crate::record::{InputSource, Record};
use crate::rt::netcount::NetCounters;
use crate::summary::served::Served;
use crate::summary::shard::{ClockSync, KernelClock, ShardInfo};
use crate::summary::workload::WorkloadStats;
use crate::summary::Summary;
use crate::worker::WorkerEnd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a run could not start or finish. A run that ran returns a `Summary` instead, whatever
/// its requests did: failures of requests are data in it, never an error here.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan breaks a rule (`Plan::validate`): bad usage, exit code 2.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// The target's host name gave no address.
    #[error("cannot resolve {host}:{port}: {reason} (check --url)")]
    Resolve {
        /// The host, as the URL gave it.
        host: String,
        /// The port.
        port: u16,
        /// Why it did not resolve.
        reason: String,
    },
    /// The in-process simulator could not start (no listener, no thread).
    #[error("could not start the built-in simulator: {0}")]
    Sim(std::io::Error),
    /// No `--model` was given and `GET /v1/models` did not name one: the base URL and why.
    #[error("could not ask {0}/v1/models for a model name: {1} (give one with --model)")]
    Model(String, String),
    /// `--wait-ready`: the server did not answer 200 in time (or the run was interrupted
    /// while waiting): the base URL, the wait in seconds, and its last answer.
    #[error(
        "{url} did not answer GET /health or /v1/models with 200 within {waited_s:.0} s \
         (--wait-ready): the last answer was {last}; give the server longer with a larger \
         --wait-ready, or check --url"
    )]
    NotReady {
        /// The base URL waited for.
        url: String,
        /// How long it waited, s.
        waited_s: f64,
        /// The last answer (a status, or why there was none).
        last: String,
    },
    /// `--io-driver uring` on a kernel that refuses io_uring.
    #[error("--io-driver uring: the kernel refuses io_uring here (use --io-driver epoll or auto)")]
    UringRefused,
    /// `--metrics-listen`: the address could not be bound (bad usage, exit code 2).
    #[error(
        "--metrics-listen {addr}: cannot listen there: {source} (give a free port, or port 0 \
         for any)"
    )]
    MetricsListen {
        /// The address, as given.
        addr: String,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// A result file could not be written.
    #[error("results: {0}")]
    Output(#[from] crate::output::WriteError),
    /// TLS could not be set up, or the handshake before the run failed.
    #[error(transparent)]
    Tls(#[from] crate::http::tls::TlsError),
    /// Another ringbench holds this endpoint's lock (without `--allow-concurrent`), or the
    /// lock could not be taken.
    #[error(transparent)]
    Busy(#[from] crate::run::lock::LockError),
    /// A tokenizer or dataset that cannot be used (bad input: exit code 2).
    #[error(transparent)]
    Workload(#[from] crate::prepare::WorkloadError),
    /// The worker of that index panicked.
    #[error("worker {0} panicked: a bug in ringbench (please report it with the command line)")]
    WorkerPanicked(usize),
    /// A worker thread or runtime could not start, or the output folder could not be used.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

impl RunError {
    /// A bad flag or input, found before any request was sent: exit code 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::Plan(_) | RunError::Workload(_) | RunError::MetricsListen { .. }
        )
    }
}

fn io_err(context: &'static str) -> impl FnOnce(std::io::Error) -> RunError {
    move |source| RunError::Io { context, source }
}

/// What a program watching a run is told. Every method is called on the thread that called
/// `run_with` (the collector's), never on a worker's, and has a default that does nothing.
/// A slow observer delays the collector, not the workers: records wait in a bounded channel
/// (a full one is counted in `overhead.channel_full` and makes the run invalid).
pub trait Observer {
    /// Once, when every prompt is built and before anything is sent.
    fn on_prepared(&mut self, _plan: &Plan, _workload: &WorkloadStats) {}
    /// Every record as the collector takes it, warm-up included, in the order they end.
    fn on_record(&mut self, _record: &Record) {}
    /// About once a second: counts so far, and seconds since the schedule started.
    fn on_progress(&mut self, _live: &LiveCounts, _elapsed_s: f64) {}
    /// A line about how the run is set up, before anything is sent (whether the server's
    /// metrics are scraped, and why not).
    fn on_note(&mut self, _note: &str) {}
}

/// No observer.
impl Observer for () {}

/// Runs one benchmark to its end; see `run_with`.
pub fn run(plan: &Plan) -> Result<Summary, RunError> {
    run_with(plan, &AtomicBool::new(false), &mut ())
}

/// Runs one benchmark: `plan.validate()`, the prompts built, the endpoint resolved (or the
/// in-process simulator started), the workers started on `plan.cpus`, every record collected,
/// and with `plan.out_dir` the run's files written there (`summary.json`, `requests.jsonl`,
/// `run.json`, the exports, `report.html` and its plots).
///
/// Once `interrupt` is set (a signal handler, an embedding program) no new request is sent,
/// in-flight ones get `plan.grace_ns` to finish, the rest end as `cancelled`, and the summary
/// (marked `interrupted`) covers what was measured.
///
/// Side effects on the calling process, all needed to measure: the soft `RLIMIT_NOFILE` is
/// raised to the hard limit and the descriptor table grown to it (up to 65,536) once; the
/// calling thread is pinned to a CPU no worker uses while the run collects, and given its
/// own CPU set back after; worker threads pin themselves to `plan.cpus`; unless
/// `plan.allow_concurrent`, a lock file for the endpoint (in the temporary folder) is held
/// until the run returns, so two runs on one host cannot measure each other.
pub fn run_with(
    plan: &Plan,
    interrupt: &AtomicBool,
    observer: &mut impl Observer,
) -> Result<Summary, RunError> {
    plan.validate()?;
    let plan = &with_nonce(plan);
    if plan.io_driver == IoDriver::Uring && !crate::rt::driver::uring_available() {
        return Err(RunError::UringRefused);
    }
    let mut prepared = crate::prepare::prepare(plan)?;
    observer.on_prepared(plan, &prepared.stats);
    let started_at = crate::rt::clock::rfc3339_now();
    let eps = endpoint::resolve(plan)?;
    if let Some(limit_ns) = plan.wait_ready_ns {
        endpoint::wait_all_ready(&eps, plan, limit_ns, interrupt, &mut |n| {
            observer.on_note(n)
        })?;
    }
    // Held until the run returns; the kernel releases them on any other exit.
    let _locks = locks(plan, &eps, &started_at)?;
    let (catalog, served) = catalog(plan, &mut prepared, &eps)?;
    let mut collector = Collector::new(plan, plan.out_dir.as_deref())
        .map_err(io_err("cannot open the output folder"))?;
    let clock = run_clock(plan);
    let (origin_unix_ns, offset_uncertainty_ns) = crate::rt::clock::wall_origin(&clock);
    let mut scraping = server::Scraping::start(plan, &eps, &clock);
    scraping.notes.iter().for_each(|n| observer.on_note(n));
    let mut live = start_live(plan, &eps, &served.model, observer)?;
    let net_before = NetCounters::read();
    let mut started = workers::start(plan, &eps, &catalog, clock, origin_unix_ns)?;
    let mut links = std::mem::take(&mut started.links);
    let mut tally = WorkloadTally::new(&catalog);
    let guard = collect::ApiGuard::new(plan.endpoint, server_urls(plan, &eps));
    let stopper = collect::Stopper::new(interrupt, guard, &started.shared, plan.grace_ns);
    let pin = crate::rt::cpu::CollectorPin::away_from(&plan.cpus);
    let refused = collect::collect(
        &mut collector,
        &mut tally,
        &started,
        &mut links,
        stopper,
        observer,
        &mut collect::Beside::new(&mut scraping, live.as_mut()),
    );
    drop(pin);
    let clock_sync = clock_sync(plan, &started, (origin_unix_ns, offset_uncertainty_ns));
    let ends = workers::join(started.handles)?;
    if let Some(l) = live.as_mut() {
        l.finish(&collector, started.shared.total_sent(), &ends);
    }
    let scrapes = scraping.finish();
    let mut workload = prepared.stats;
    tally.apply(&mut workload);
    let mut warnings = warnings(plan, &catalog, &ends);
    warnings.extend(refused.iter().cloned().chain(clock_warnings(&clock_sync)));
    warnings.extend(about::cap_warning(&served));
    let facts = RunFacts {
        shard: shard_info(plan, started.schedule.as_ref()),
        clock: Some(clock_sync),
        merge: None,
        served: Some(served),
        started_at,
        io_driver: ends.first().map_or("none", |e| e.driver.name()).to_string(),
        scheduled: workers::scheduled_count(plan, started.schedule.as_ref(), &started.shared),
        wall_ns: started.clock.now_ns(),
        // A server that does not serve the endpoint stopped it, not an interrupt.
        interrupted: started.shared.stop.load(Ordering::Relaxed) && refused.is_none(),
        warnings,
        workers: ends.into_iter().map(|e| e.stats).collect(),
        sim: eps
            .sim
            .map(|s| serde_json::to_value(s.stop()).unwrap_or_default()),
        workload: Some(workload),
        kernel_net: Some(net_before.delta(&NetCounters::read(), &plan.cpus)),
    };
    finish(plan, collector, facts, scrapes)
}

/// `--metrics-listen`: the listener bound and serving before anything is sent, its address
/// told to the observer; `None` without the flag.
fn start_live(
    plan: &Plan,
    eps: &endpoint::Endpoints,
    model: &str,
    observer: &mut impl Observer,
) -> Result<Option<live::LiveServer>, RunError> {
    let Some(addr) = &plan.metrics_listen else {
        return Ok(None);
    };
    let facts = crate::collector::exposition::LiveFacts {
        worker_cpu_ns: plan.cpus.iter().map(|&c| (c, 0)).collect(),
        model: model.to_string(),
        url: eps
            .list
            .iter()
            .map(|e| e.base_url.as_str())
            .collect::<Vec<_>>()
            .join(","),
        run_id: plan.run_id.clone().unwrap_or_default(),
        total_sent: 0,
    };
    let server =
        live::LiveServer::start(addr, facts).map_err(|source| RunError::MetricsListen {
            addr: addr.clone(),
            source,
        })?;
    observer.on_note(&format!(
        "metrics listening on http://{}/metrics (--metrics-listen; served until the run ends)",
        server.addr
    ));
    Ok(Some(server))
}

/// The servers' URLs, for the lines that name one; none for the run's own simulator.
fn server_urls(plan: &Plan, eps: &endpoint::Endpoints) -> Vec<String> {
    match eps.sim {
        Some(_) => vec![],
        None => plan.targets.iter().map(|t| t.url.clone()).collect(),
    }
}

/// One lock per server (a URL given twice is one server), unless `--allow-concurrent` or
/// the run's own simulator.
fn locks(
    plan: &Plan,
    eps: &endpoint::Endpoints,
    started_at: &str,
) -> Result<Vec<lock::EndpointLock>, RunError> {
    if plan.allow_concurrent || eps.sim.is_some() {
        return Ok(vec![]);
    }
    let keys: std::collections::BTreeSet<String> = (eps.list.iter())
        .map(|ep| format!("{}{}", ep.addr, ep.base_path))
        .collect();
    let locks = keys.iter().map(|key| lock::acquire(key, started_at));
    Ok(locks.collect::<Result<Vec<_>, _>>()?)
}

/// The requests' bytes, made once for every worker, naming the model the server was asked
/// for (or the plan's), with what the server said of itself. The prompts are dropped as they
/// become bytes: a trace's may take a gigabyte.
fn catalog(
    plan: &Plan,
    prepared: &mut crate::prepare::Prepared,
    eps: &endpoint::Endpoints,
) -> Result<(Catalog, Served), RunError> {
    let (model, listing) = endpoint::model(eps, plan)?;
    let mut served = about::served(eps, plan, model, listing);
    let window = about::session_cap(plan, &mut served);
    let prompts = std::mem::take(&mut prepared.prompts);
    let catalog = Catalog::from_prompts(
        plan,
        prompts,
        prepared.salt.take(),
        &prepared.stats,
        eps.list
            .iter()
            .map(|ep| ep.request_head(plan.endpoint))
            .collect(),
        &served.model,
    )
    .with_conversations(plan, prepared.conversations.as_deref())
    .with_context_window(window);
    Ok((catalog, served))
}

/// Where this run's clock stood against the wall clock and the schedule's start.
fn clock_sync(
    plan: &Plan,
    started: &workers::Started,
    (origin_unix_ns, offset_uncertainty_ns): (u64, u64),
) -> ClockSync {
    ClockSync {
        origin_unix_ns,
        offset_uncertainty_ns,
        schedule_start_ns: started.start_ns,
        start_at_unix_ns: plan.start_at_unix_ns,
        start_late_ns: started.start_late_ns,
        kernel: kernel_clock(),
    }
}

/// What the kernel says of its wall clock's sync (`adjtimex(2)`, read-only: modes 0);
/// `None` where the call fails. (Here rather than in `rt`, which makes no summary type.)
fn kernel_clock() -> Option<KernelClock> {
    // SAFETY: `timex` is plain data; all zeroes (modes 0) asks adjtimex to change nothing.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex that outlives the call.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    Some(KernelClock {
        synchronized: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        state,
        status: tx.status,
        esterror_us: tx.esterror as i64,
        maxerror_us: tx.maxerror as i64,
    })
}

/// The run clock: its origin now, or at a `--start-at` instant already past, so that the
/// schedule's start is a stamp like any other.
fn run_clock(plan: &Plan) -> crate::rt::clock::RunClock {
    let back_ns = plan
        .start_at_unix_ns
        .map_or(0, |at| crate::rt::clock::realtime_ns().saturating_sub(at));
    crate::rt::clock::RunClock::start_back(back_ns)
}

/// Which part of which run this is, when `--shard` was given.
fn shard_info(plan: &Plan, schedule: Option<&crate::schedule::Schedule>) -> Option<ShardInfo> {
    let shard = plan.shard?;
    let total = |n: u64| n + plan.warmup_requests;
    let (users, cap) = match plan.load {
        Load::Closed { concurrency } => (Some(shard.share_u32(concurrency)), None),
        Load::Open {
            max_concurrency, ..
        } => (None, max_concurrency.map(|c| shard.share_u32(c))),
        Load::Trace(ref t) => (None, t.max_concurrency.map(|c| shard.share_u32(c))),
    };
    Some(ShardInfo {
        index: shard.index,
        count: shard.count,
        plan_hash: crate::plan::shard::plan_hash(&serde_json::to_value(plan).unwrap_or_default()),
        seed: plan.seed,
        global_scheduled: schedule
            .map(|s| s.len())
            .or_else(|| plan.stop.request_count.map(total)),
        users,
        max_concurrency_per_shard: cap,
    })
}

/// What the clock block calls for: a late start, a wall clock the kernel calls unsynced.
fn clock_warnings(c: &ClockSync) -> Vec<String> {
    let mut w = vec![];
    if let Some(at) = c.start_at_unix_ns.filter(|_| c.start_late_ns > 0) {
        w.push(format!(
            "--start-at {at}: the workers were ready {:.3} ms after that instant; the \
             schedule still started then, so its first arrivals were sent late (counted in \
             the scheduling lag)",
            c.start_late_ns as f64 / 1e6
        ));
    }
    if c.start_at_unix_ns.is_some() && c.kernel.as_ref().is_some_and(|k| !k.synchronized) {
        w.push(
            "--start-at: the kernel says this host's wall clock is not synchronized \
             (adjtimex); shards on other hosts may not have started at the same instant"
                .to_string(),
        );
    }
    w
}

/// The summary from the collector and the run's facts, the server's block joined to it, and
/// the run's files written.
fn finish(
    plan: &Plan,
    collector: Collector,
    facts: RunFacts,
    scrapes: Option<crate::scrape::ScrapeLog>,
) -> Result<Summary, RunError> {
    let mut summary = collector
        .finish(facts)
        .map_err(io_err("cannot write the results"))?;
    if let Some(log) = scrapes {
        server::join(&mut summary, &log, &plan.percentiles);
    }
    if let Some(dir) = &plan.out_dir {
        let spec = plan.vllm_result.as_ref();
        crate::output::write_run_with(dir, &summary, &plan.exports, spec)?;
    }
    Ok(summary)
}

/// The plan as run: a salted workload without `--prompt-nonce` gets a random nonce, and a
/// plan without `--run-id` a random run id, which the summary's `config` then records.
fn with_nonce(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    if plan.run_id.is_none() {
        plan.run_id = Some(crate::plan::RunId::from_bits(rand::random()).to_string());
    }
    let w = &mut plan.workload;
    if w.prompt_salt && w.prompt_nonce.is_none() {
        w.prompt_nonce = Some(rand::random());
    }
    plan
}

/// What the workers, the catalog and the plan itself have to say beside the figures.
fn warnings(plan: &Plan, catalog: &Catalog, ends: &[WorkerEnd]) -> Vec<String> {
    let mut warnings: Vec<String> = ends.iter().flat_map(|e| e.warnings.clone()).collect();
    if catalog.input_source == InputSource::Approximate {
        warnings.push(catalog.input_method.clone());
    }
    if plan.insecure {
        warnings.push(
            "--insecure: the server's TLS certificate was NOT verified; anyone on the path \
             could have answered"
                .to_string(),
        );
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjtimex_is_read_without_changing_anything() {
        let k = kernel_clock().expect("adjtimex with modes 0 is allowed unprivileged");
        assert!((0..=5).contains(&k.state), "{k:?}");
        assert!(k.maxerror_us >= 0 && k.esterror_us >= 0, "{k:?}");
    }
}
