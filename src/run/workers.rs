//! Part of the run (wiring): the workers — one pinned thread per CPU of the plan, each given
//! its share of the schedule, of the in-flight cap and of the descriptor budget, the catalog,
//! and its own link to the collector (`record::handoff`: records out, spare buffers back) —
//! started together and joined. Never prints.

use super::endpoint::{tls_connector, Endpoints};
use super::RunError;
use crate::plan::{Load, Plan};
use crate::prepare::catalog::Catalog;
use crate::record::handoff::{self, CollectorLink};
use crate::rt::clock::RunClock;
use crate::schedule::Schedule;
use crate::worker::{self, Shared, StartGate, WorkerEnd, WorkerSetup, WorkerThread};
use std::sync::Arc;

/// Records in flight between the workers and the collector, all workers together (each
/// worker's ring gets its share, at least `MIN_RING`); a full ring is counted.
const RECORD_RING_TOTAL: usize = 1 << 14;
/// Spare buffers on their way back to the workers, all workers together.
const SPARE_RING_TOTAL: usize = 1 << 12;
/// The smallest ring of a worker.
const MIN_RING: usize = 1 << 10;
/// Time given to worker threads to start and pin before the first arrival is due.
const START_LEAD_NS: u64 = 20_000_000;

/// The running workers and what the collector needs from them.
pub(super) struct Started {
    pub handles: Vec<WorkerThread>,
    /// One per worker, in worker order.
    pub links: Vec<CollectorLink>,
    pub shared: Arc<Shared>,
    pub clock: RunClock,
    /// Run-clock time the schedule starts at.
    pub start_ns: u64,
    /// How long after the schedule's start the workers were ready (`--start-at` too close
    /// or past), ns; 0 when on time.
    pub start_late_ns: u64,
    pub schedule: Option<Schedule>,
}

/// Starts every worker; the schedule begins `START_LEAD_NS` after every worker is ready
/// (pinned, its own copy of the catalog made), or with `--start-at` at that wall-clock
/// instant: run-clock `start_at − origin_unix_ns` (`origin_unix_ns` is the run clock's
/// origin on the wall clock), however late the workers are for it.
pub(super) fn start(
    plan: &Plan,
    eps: &Endpoints,
    catalog: &Catalog,
    clock: RunClock,
    origin_unix_ns: u64,
) -> Result<Started, RunError> {
    let plan_arc = Arc::new(plan.clone());
    let shared = Arc::new(Shared::new(plan.cpus.len(), plan));
    let n = plan.cpus.len().max(1);
    let (record_ring, spare_ring) = (
        (RECORD_RING_TOTAL / n).max(MIN_RING),
        (SPARE_RING_TOTAL / n).max(MIN_RING),
    );
    let mut links = Vec::with_capacity(n);
    let fd_budget = fd_budget(plan);
    let schedule = open_schedule(plan);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let mut starts = Vec::with_capacity(n);
    let mut handles = Vec::with_capacity(plan.cpus.len());
    let dests = eps
        .list
        .iter()
        .map(|ep| {
            Ok(worker::Dest {
                addr: ep.addr,
                tls: tls_connector(ep)?,
            })
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    for (index, &cpu) in plan.cpus.iter().enumerate() {
        let setup = WorkerSetup {
            index,
            workers: plan.cpus.len(),
            cpu,
            plan: plan_arc.clone(),
            dests: dests.clone(),
            catalog: catalog.clone(),
            clock,
            start_ns: 0,
            schedule: schedule.clone(),
            lane_cap: lane_cap(plan, index, fd_budget),
            shared: shared.clone(),
        };
        let (worker_link, collector_link) = handoff::link(record_ring, spare_ring);
        let (start_tx, start_rx) = std::sync::mpsc::channel();
        let gate = StartGate {
            ready: ready_tx.clone(),
            start_ns: start_rx,
        };
        let handle = worker::spawn(setup, worker_link, gate)
            .map_err(super::io_err("cannot start a worker thread"))?;
        starts.push(start_tx);
        handles.push(handle);
        links.push(collector_link);
    }
    // Returns once every worker has said it is ready (or is gone).
    drop(ready_tx);
    while ready_rx.recv().is_ok() {}
    let ready_ns = clock.now_ns();
    let start_ns = match plan.start_at_unix_ns {
        Some(at) => at.saturating_sub(origin_unix_ns),
        None => ready_ns + START_LEAD_NS,
    };
    let start_late_ns = ready_ns.saturating_sub(start_ns);
    for s in starts {
        let _ = s.send(start_ns);
    }
    Ok(Started {
        handles,
        links,
        shared,
        clock,
        start_ns,
        start_late_ns,
        schedule,
    })
}

/// Waits for every worker; a worker that panicked is an error of the run, not of the caller.
pub(super) fn join(handles: Vec<WorkerThread>) -> Result<Vec<WorkerEnd>, RunError> {
    let mut ends = Vec::with_capacity(handles.len());
    for (index, h) in handles.into_iter().enumerate() {
        let end = h.join().map_err(|_| RunError::WorkerPanicked(index))?;
        ends.push(end.map_err(super::io_err("cannot start a worker's runtime"))?);
    }
    Ok(ends)
}

/// Descriptors kept free for everything that is not a connection (files, the ring, timers).
const FD_RESERVE: u64 = 256;

/// Raises the soft open-files limit to the hard one and returns how many connections the
/// workers may hold together. The in-process simulator holds the other end of each one in
/// the same process, so it gets half.
fn fd_budget(plan: &Plan) -> u64 {
    let limit = crate::rt::fd::raise_fd_limit();
    let usable = limit.saturating_sub(FD_RESERVE).max(16);
    if plan.targets.is_empty() {
        usable / 2
    } else {
        usable
    }
}

/// Worker `index`'s share of the in-flight cap: `--max-concurrency` when given (a shard's
/// share of it first: `Shard::share`), and never more connections than the descriptor budget
/// allows. Arrivals are dealt round-robin, so an even split holds the global cap while no
/// worker waits on another.
fn lane_cap(plan: &Plan, index: usize, fd_budget: u64) -> usize {
    let n = plan.cpus.len() as u64;
    let share = |total: u64| (total / n + u64::from((index as u64) < total % n)).max(1);
    let by_fds = share(fd_budget);
    let shard = plan.this_shard();
    let cap = match plan.load {
        Load::Open {
            max_concurrency, ..
        } => max_concurrency,
        Load::Trace(ref t) => t.max_concurrency,
        _ => None,
    };
    cap.map_or(by_fds, |cap| share(shard.share(u64::from(cap))).min(by_fds)) as usize
}

/// The open loop's global schedule: exactly rate × horizon arrivals (or the count), through
/// the ramp when there is one, or the stages'; a trace's own times.
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
    if !plan.stages.is_empty() {
        // The stages are the whole run, warm-up arrivals included.
        return Schedule::staged(arrival, &plan.stages, plan.seed).ok();
    }
    let count = plan.stop.request_count.map(|c| c + plan.warmup_requests);
    let until = plan.stop.duration_ns.map(|d| d + plan.warmup_duration_ns);
    let schedule = match plan.ramp_up_ns {
        Some(ramp) => Schedule::ramped(arrival, request_rate, ramp, plan.seed, count, until),
        None => Schedule::new(arrival, request_rate, plan.seed, count, until),
    };
    schedule.ok()
}

/// How many requests the run scheduled, counted independently of the records so that
/// `scheduled = sent + not_sent` is a real check. Open loop: the schedule's length. Closed
/// loop: the ids the virtual users claimed within the count. A shard counts its own share.
///
/// Conversations (`--turns`): the schedule (or the claims) counts sessions, and a session's
/// turns are drawn as it runs, so the requests scheduled are the turns the workers began
/// plus one for each scheduled session never begun (its `not_sent` record).
pub(super) fn scheduled_count(plan: &Plan, schedule: Option<&Schedule>, shared: &Shared) -> u64 {
    let shard = plan.this_shard();
    let arrivals = match schedule {
        Some(s) => shard.share(s.len()),
        None => {
            let claimed = shared.claimed.0.load(std::sync::atomic::Ordering::Relaxed);
            let total = plan.stop.request_count.map(|c| c + plan.warmup_requests);
            total.map_or(claimed, |t| claimed.min(shard.share(t)))
        }
    };
    if plan.sessions.is_none() {
        return arrivals;
    }
    let (sessions, turns) = shared.sessions_and_turns();
    turns + arrivals.saturating_sub(sessions)
}
