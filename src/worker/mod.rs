//! Stage 2 of the flow (schedule → **worker** → http → sse → extract → record → collector →
//! report): one OS thread per CPU, pinned, each with its own monoio runtime, its share of the
//! schedule, its own connections and buffers. Nothing is shared between workers on the hot
//! path except a few atomics (stop flag, closed-loop claims, live counters), each counter
//! written per request on a cache line of its own (`PaddedCounter`); the
//! records of each runtime pass leave together on the worker's own bounded ring to the
//! collector, and their buffers come back on another (`record::handoff`). Workers never
//! compute percentiles and never print.

mod conn;
pub mod gate;
mod job;
mod lane;
mod netwatch;
mod pacer;
mod pass;
mod rxstamp;
mod session;
mod sink;
mod spin;

pub use crate::rt::driver::DriverUsed;
use crate::rt::driver::Ring;

use crate::plan::{Load, Plan};
use crate::prepare::catalog::Catalog;
use crate::record::handoff::WorkerLink;
use crate::record::{Record, Spare, WarmupBy};
use crate::rt::clock::RunClock;
use crate::schedule::Schedule;
use crate::summary::workers::{QueueTally, WorkerStats};
use crate::summary::WorkerCounts;
use job::Job;
use lane::Lanes;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Records a worker may hold back when its ring to the collector is full before it waits.
const OVERFLOW_BOUND: usize = 1 << 16;
/// Records of one pass the outbox has room for before it grows (once, in a burst).
const OUTBOX_START: usize = 1024;
/// Event vectors kept ready per worker, so the first requests do not allocate.
const PREALLOCATED_EVENT_VECS: usize = 256;

/// State shared by all workers of a run: only atomics, touched a few times per request.
#[derive(Debug)]
pub struct Shared {
    /// Set to stop scheduling (interrupt): arrivals not yet sent end as `NotSent`.
    pub stop: AtomicBool,
    /// Closed loop: the next request id to claim. Every user of every worker writes it once
    /// per request, so it has a cache line of its own: were it beside `stop` or the warm-up
    /// gate, which every request reads, each claim would take that line from every other
    /// worker's cache.
    pub claimed: PaddedCounter,
    /// Requests handed to the kernel, per worker (the progress line reads them).
    pub sent: Vec<PaddedCounter>,
    /// Set when the grace period after a stop ends: in-flight requests end as `Cancelled`.
    pub cancel: AtomicBool,
    /// Closed loop with a warm-up: measured requests wait for it to drain.
    pub gate: gate::WarmupGate,
    /// Conversations (`--turns`), per worker: sessions begun and turns begun (each turn is
    /// one record), so the run counts the requests it scheduled apart from the records.
    pub sessions_begun: Vec<PaddedCounter>,
    pub turns_begun: Vec<PaddedCounter>,
}

/// A counter alone on its cache line (128 bytes: two 64-byte lines, as the adjacent-line
/// prefetcher of x86 pulls pairs), so writing it never invalidates what others read.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct PaddedCounter(pub AtomicU64);

impl Shared {
    /// For `workers` workers running `plan`.
    pub fn new(workers: usize, plan: &Plan) -> Self {
        Shared {
            stop: AtomicBool::new(false),
            claimed: PaddedCounter::default(),
            sent: (0..workers).map(|_| PaddedCounter::default()).collect(),
            cancel: AtomicBool::new(false),
            gate: gate::WarmupGate::new(gate::drains(plan)),
            sessions_begun: (0..workers).map(|_| PaddedCounter::default()).collect(),
            turns_begun: (0..workers).map(|_| PaddedCounter::default()).collect(),
        }
    }

    pub fn total_sent(&self) -> u64 {
        sum(&self.sent)
    }

    /// Conversations: (sessions begun, turns begun) over every worker.
    pub fn sessions_and_turns(&self) -> (u64, u64) {
        (sum(&self.sessions_begun), sum(&self.turns_begun))
    }
}

fn sum(counters: &[PaddedCounter]) -> u64 {
    counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
}

/// Everything one worker needs, moved into its thread.
pub struct WorkerSetup {
    pub index: usize,
    pub workers: usize,
    pub cpu: usize,
    pub plan: Arc<Plan>,
    /// The servers, in `plan.targets`' order (the simulator alone without one).
    pub dests: Vec<Dest>,
    /// The run's catalog; the worker reads its own copy of it (`Catalog::for_worker`, made on
    /// its thread before the start).
    pub catalog: Catalog,
    pub clock: RunClock,
    /// Run-clock time at which the schedule starts: set by the start handshake (`StartGate`).
    pub start_ns: u64,
    /// Open loop: most requests this worker keeps in flight (its share of
    /// `--max-concurrency`, or of the file-descriptor limit). At the cap an arrival waits for
    /// a lane and keeps its intended time, so the wait shows as scheduling lag.
    pub lane_cap: usize,
    /// Open loop: the whole global schedule (this worker keeps its share). Built once, before
    /// the clock starts, because building it walks every arrival.
    pub schedule: Option<Schedule>,
    pub shared: Arc<Shared>,
}

/// One server a worker connects to.
#[derive(Clone)]
pub struct Dest {
    pub addr: SocketAddr,
    /// `https://`: every new connection shakes hands with this.
    pub tls: Option<TlsClient>,
}

/// What a worker needs to open TLS connections.
#[cfg(feature = "tls")]
#[derive(Clone)]
pub struct TlsClient {
    pub connector: monoio_rustls::TlsConnector,
    pub name: rustls::pki_types::ServerName<'static>,
}

/// A build without the `tls` feature opens no TLS connection.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub enum TlsClient {}

/// What a worker thread returns.
pub struct WorkerEnd {
    pub stats: WorkerStats,
    pub driver: DriverUsed,
    /// What this worker could not do as asked (pinning, precise timer).
    pub warnings: Vec<String>,
}

/// A worker thread as it runs: its statistics when every one of its requests has a record,
/// or why its runtime could not be built.
pub type WorkerThread = std::thread::JoinHandle<std::io::Result<WorkerEnd>>;

/// The start handshake: a worker says it is ready (pinned, its catalog copied) and waits for
/// the run-clock time its schedule starts at, which is set once every worker is ready, so
/// the copies never eat into the start's lead.
pub struct StartGate {
    pub ready: std::sync::mpsc::Sender<()>,
    pub start_ns: std::sync::mpsc::Receiver<u64>,
}

/// Starts the worker thread. It pins itself, copies its catalog, waits for the start time
/// (`gate`), builds its runtime, runs its share, and returns its statistics when every one of
/// its requests has a record. Its records leave on `link`.
pub fn spawn(
    mut setup: WorkerSetup,
    link: WorkerLink,
    gate: StartGate,
) -> std::io::Result<WorkerThread> {
    std::thread::Builder::new()
        .name(format!("ringbench-w{}", setup.index))
        .spawn(move || {
            let pinned = core_affinity::set_for_current(core_affinity::CoreId { id: setup.cpu });
            setup.catalog = setup.catalog.for_worker();
            let _ = gate.ready.send(());
            drop(gate.ready);
            setup.start_ns = gate.start_ns.recv().map_err(|_| {
                std::io::Error::other("the run was abandoned before its workers started")
            })?;
            let plan_driver = setup.plan.io_driver;
            let ring = match spin::polls(setup.plan.pacer_spin_ns, mean_gap_ns(&setup)) {
                true => Ring::Polling,
                false => Ring::Sleeping,
            };
            let (driver, (stats, warnings)) =
                crate::rt::driver::block_on(plan_driver, ring, || {
                    worker_main(setup, link, pinned)
                })?;
            Ok(WorkerEnd {
                stats,
                driver,
                warnings,
            })
        })
}

/// The per-worker context, shared by its tasks on one thread (`Rc`, no locks).
pub(crate) struct Ctx {
    pub setup: WorkerSetup,
    pub pacer: pacer::Pacer,
    pub counters: RefCell<WorkerCounts>,
    /// Records of this pass, and any the ring had no room for, oldest first.
    outbox: RefCell<VecDeque<Record>>,
    /// Of the outbox's oldest records, how many are already counted in `channel_full`.
    held: Cell<usize>,
    link: RefCell<WorkerLink>,
    free_events: RefCell<Vec<Spare>>,
    /// This runtime pass: read stamps and the end-of-pass batch (`pass`).
    pub pass: pass::Pass,
    /// The driver completes reads itself (io_uring): a plain or TLS read takes the pass
    /// stamp. On epoll the lane's own `recv` reads (see `pass`).
    pub driver_reads: bool,
    pub cancel: lane::CancelBell,
    pub connects: Rc<job::ConnectGate>,
    /// Kernel → user delay per read on stamped connections (`--rx-timestamps`).
    pub kernel_rx: rxstamp::Tally,
    /// Each connection's connect time and, as it closes (and every 5 s of a long one), its
    /// `TCP_INFO`, by server.
    pub net: Rc<netwatch::NetWatch>,
    /// Per server: this worker's requests (with `--turns`, sessions) in flight there, for
    /// `--url-policy least-in-flight`.
    in_flight: RefCell<Box<[u32]>>,
    /// The payload scratch every connection's parser shares (`ResponseParser::sharing`).
    pub extractor: Rc<RefCell<crate::extract::Extractor>>,
    /// Read buffers lent to connections (`conn::ReadBufs`).
    pub read_bufs: conn::ReadBufs,
}

impl Ctx {
    /// Hands a finished record to the collector; never drops it. It waits in the outbox
    /// until the end of the pass, when the pass's records go onto the ring together
    /// (`flush`). Past `OVERFLOW_BOUND` records held back by a full ring the worker waits for
    /// room rather than grow without bound.
    pub fn emit(&self, rec: Record) {
        let mut outbox = self.outbox.borrow_mut();
        outbox.push_back(rec);
        self.pass.wake_tail();
        if outbox.len() >= OVERFLOW_BOUND {
            drop(outbox);
            self.flush_outbox();
        }
    }

    /// The end of a pass: the outbox's records onto the ring in one batch, as many as it has
    /// room for. Each record a full ring keeps back is counted once in `channel_full`; they
    /// go with the next pass's batch.
    fn flush(&self) {
        let mut outbox = self.outbox.borrow_mut();
        if outbox.is_empty() {
            return;
        }
        let moved = self.link.borrow_mut().push_from(&mut outbox);
        let counted = self.held.get().saturating_sub(moved);
        let left = outbox.len();
        if left > counted {
            self.counters.borrow_mut().channel_full += (left - counted) as u64;
        }
        self.held.set(left);
    }

    /// The end of a pass: its records leave (`flush`), then its busy time — from its first
    /// item's stamp to now — goes into the queue model's tally. One clock read per pass.
    fn end_pass(&self, sample: pass::Sample, queue: &mut QueueTally) {
        self.flush();
        if let Some(began) = sample.began {
            let busy_ns = self.setup.clock.now_ns().saturating_sub(began);
            queue.add(busy_ns, sample.items);
        }
    }

    /// Records held back by a full ring go at the end of the next pass (called every few ms:
    /// a quiet worker has no other pass end to send them).
    /// The same idle path samples long-lived connections' `TCP_INFO` (`NetWatch::tick`: at
    /// most every 5 s each, a bounded number per 100 ms), never per request.
    fn nudge(&self) {
        if !self.outbox.borrow().is_empty() {
            self.pass.wake_tail();
        }
        self.net.tick(self.setup.clock.now_ns());
    }

    /// Every record onto the ring, waiting for room: at the end of the run, and when the
    /// outbox reaches its bound (the collector is far behind: wait rather than grow).
    fn flush_outbox(&self) {
        self.flush();
        self.link
            .borrow_mut()
            .push_all_waiting(&mut self.outbox.borrow_mut());
        self.held.set(0);
    }

    /// Empty event and text buffers for a record: this worker's own, recycled by the
    /// collector when possible.
    pub fn spare(&self) -> Spare {
        let mut free = self.free_events.borrow_mut();
        if let Some(v) = free.pop() {
            return v;
        }
        // Emptied by the collector before it sent them back.
        self.link.borrow_mut().take_spares(&mut free);
        if let Some(v) = free.pop() {
            return v;
        }
        self.counters.borrow_mut().event_vecs_allocated += 1;
        Spare::with_events(event_capacity(&self.setup.catalog))
    }

    /// The server request (or session) `id` goes to, by `--url-policy`; counted in flight
    /// there until `arrived(to)`.
    pub fn route(&self, id: u64) -> usize {
        let s = &self.setup;
        let n = self.in_flight.borrow().len();
        let to = match n {
            1 => 0,
            _ => (s.plan.url_policy)
                .pick(s.plan.seed, id, s.plan.this_shard().count, n)
                .unwrap_or_else(|| crate::plan::targets::least(&self.in_flight.borrow(), id)),
        };
        self.in_flight.borrow_mut()[to] += 1;
        to
    }

    /// A request (or session) `route` sent to `to` ended.
    pub fn arrived(&self, to: usize) {
        let c = &mut self.in_flight.borrow_mut()[to];
        *c = c.saturating_sub(1);
    }

    /// Moves whenever the worker does work: the pacer's idle test (see `Pacer::until`).
    fn progress(&self) -> u64 {
        let c = self.counters.borrow();
        c.reads + c.requests + c.connections_opened
    }

    /// Which warm-up rules arrival `id`, due at `intended_ns`, falls under.
    pub fn warmup_by(&self, id: u64, intended_ns: u64) -> WarmupBy {
        let plan = &self.setup.plan;
        WarmupBy {
            count: id < plan.warmup_requests,
            duration: intended_ns.saturating_sub(self.setup.start_ns) < plan.warmup_duration_ns,
        }
    }

    /// A record for an arrival that will never be sent (the run was stopped); a session's is
    /// its first turn's.
    pub fn not_sent(&self, arrival: u64, intended_ns: u64) -> Record {
        let sessions = self.setup.plan.sessions.as_ref();
        let id = session::first_id(sessions, arrival);
        let mut warmup_by = self.warmup_by(id, intended_ns);
        warmup_by.count = arrival < self.setup.plan.warmup_requests;
        Record {
            id,
            turn: sessions.map(|_| crate::record::Turn {
                session: arrival,
                ..Default::default()
            }),
            worker: self.setup.index as u16,
            warmup: warmup_by.any(),
            warmup_by,
            intended_ns,
            input_tokens: self.setup.catalog.get(id).input_tokens,
            input_source: self.setup.catalog.input_source,
            ..Default::default()
        }
    }
}

/// The worker's one payload scratch, capturing each event's text when the collector counts
/// output tokens with a tokenizer, or a conversation sends each reply back in its history;
/// otherwise the text is never copied.
fn shared_extractor(plan: &crate::plan::Plan) -> crate::extract::Extractor {
    let mut x = crate::extract::Extractor::for_endpoint(plan.endpoint);
    x.capture_text(plan.workload.tokenizer.is_some() || plan.sessions.is_some());
    x
}

async fn worker_main(
    setup: WorkerSetup,
    link: WorkerLink,
    pinned: bool,
) -> (WorkerStats, Vec<String>) {
    let cpu_start_ns = crate::rt::clock::thread_cpu_ns();
    let sched_start = crate::rt::sched::SchedReading::now();
    let wall_start_ns = setup.clock.now_ns();
    // Room for the preallocated buffers and a full spare ring, so taking them never grows it.
    let mut free = Vec::with_capacity(PREALLOCATED_EVENT_VECS + link.spare_capacity());
    free.extend(
        (0..PREALLOCATED_EVENT_VECS).map(|_| Spare::with_events(event_capacity(&setup.catalog))),
    );
    let setup_servers = setup.dests.len().max(1);
    let kernel_rx = rxstamp::Tally::new(setup.plan.rx_timestamps);
    let pass = pass::Pass::with_lanes(deferred_room(&setup));
    let extractor = Rc::new(RefCell::new(shared_extractor(&setup.plan)));
    let ctx = Rc::new(Ctx {
        pacer: pacer::Pacer::new(setup.clock, setup.plan.pacer_spin_ns, mean_gap_ns(&setup)),
        setup,
        counters: RefCell::new(WorkerCounts::default()),
        outbox: RefCell::new(VecDeque::with_capacity(OUTBOX_START)),
        held: Cell::new(0),
        link: RefCell::new(link),
        free_events: RefCell::new(free),
        pass,
        driver_reads: crate::rt::driver::current() == Some(DriverUsed::IoUring),
        cancel: lane::CancelBell::default(),
        connects: Rc::default(),
        kernel_rx,
        net: Rc::new(netwatch::NetWatch::new(setup_servers)),
        in_flight: RefCell::new(vec![0; setup_servers].into_boxed_slice()),
        extractor,
        read_bufs: conn::ReadBufs::new(),
    });
    let tail = {
        let ctx = ctx.clone();
        monoio::spawn(async move {
            let mut queue = QueueTally::default();
            pass::tail(&ctx.pass, |sample| ctx.end_pass(sample, &mut queue)).await;
            queue
        })
    };
    let probe = pacer::LoopLagProbe::start(ctx.clone());
    let watch = monoio::spawn(lane::watch_cancel(ctx.clone()));
    match ctx.setup.plan.load.clone() {
        Load::Open { .. } | Load::Trace(_) => open_loop(&ctx, ctx.setup.lane_cap).await,
        Load::Closed { concurrency } => closed_loop(&ctx, concurrency).await,
    }
    ctx.cancel.finish();
    watch.await;
    ctx.pass.close();
    let queue = tail.await;
    ctx.flush_outbox();
    let loop_lag = probe.stop().await;
    let c = ctx.counters.borrow();
    let s = &ctx.setup;
    let spun = ctx.pacer.spun();
    let warnings = warnings(&ctx, &c, pinned);
    let sched = crate::rt::sched::SchedReading::now().since(&sched_start);
    let stats = WorkerStats {
        worker: s.index as u16,
        cpu: s.cpu,
        cpu_ns: crate::rt::clock::thread_cpu_ns() - cpu_start_ns,
        wall_ns: s.clock.now_ns() - wall_start_ns,
        runnable_wait_ns: sched.wait_ns,
        involuntary_switches: sched.involuntary_switches,
        loop_lag,
        counts: *c,
        kernel_rx: ctx.kernel_rx.finish(kernel_rx_off(s)),
        pacer_spun_ns: spun.spun_ns,
        pacer_passes: spun.passes,
        pacer_idle_ns: spun.idle_ns,
        pacer_spin_budget_ns: spun.budget_ns,
        queue,
        network: ctx.net.finish(),
    };
    (stats, warnings)
}

/// What the user should know about how this worker ran: no precise timer, arrivals that
/// waited for a connection, no pinning.
fn warnings(ctx: &Ctx, c: &WorkerCounts, pinned: bool) -> Vec<String> {
    let s = &ctx.setup;
    let mut warnings = vec![];
    if !ctx.pacer.is_precise() {
        warnings.push(format!(
            "worker {}: no timerfd, pacing on the 1 ms timer wheel",
            s.index
        ));
    }
    if c.cap_waits > 0 {
        warnings.push(format!(
            "worker {}: {} arrivals waited for a free connection at the cap of {} in flight",
            s.index, c.cap_waits, s.lane_cap
        ));
    }
    if c.connect_waits > 0 {
        warnings.push(format!(
            "worker {}: {} arrivals waited while {} connections were being opened \
             (the server was slow to accept)",
            s.index,
            c.connect_waits,
            job::MAX_CONNECTING
        ));
    }
    if c.texts_cut > 0 {
        warnings.push(format!(
            "worker {}: {} responses' text passed the bound of {} MiB per record and was not \
             kept (their OSL is the server's usage or the events', not the tokenizer's; a \
             conversation's history lacks that reply)",
            s.index,
            c.texts_cut,
            sink::MAX_TEXT_BYTES_PER_RECORD >> 20
        ));
    }
    if !pinned {
        warnings.push(format!(
            "worker {} could not be pinned to CPU {}",
            s.index, s.cpu
        ));
    }
    warnings
}

/// Why this worker measures no kernel receive stamps at all, if it does not.
fn kernel_rx_off(s: &WorkerSetup) -> Option<String> {
    if !s.plan.rx_timestamps {
        Some("off (--no-rx-timestamps)".into())
    } else if s.dests.iter().any(|d| d.tls.is_some()) {
        Some(
            "not measured over TLS: rustls reads the socket through monoio's read, which \
             carries no control message"
                .into(),
        )
    } else {
        None
    }
}

/// Lanes whose reads a pass may defer at once: at most one read per lane, and no more lanes
/// than the worker's cap (its share of the descriptors, or of `--max-concurrency`). Bounded
/// at 65,536 wakers (1 MiB).
fn deferred_room(s: &WorkerSetup) -> usize {
    s.lane_cap.min(1 << 16)
}

/// The mean gap between this worker's arrivals (open loop, trace), ns.
fn mean_gap_ns(s: &WorkerSetup) -> Option<f64> {
    let rate = s.plan.target_rate().filter(|r| *r > 0.0)?;
    let shards = f64::from(s.plan.this_shard().count.max(1));
    Some(s.workers as f64 * shards * 1e9 / rate)
}

fn open_schedule(ctx: &Ctx) -> impl Iterator<Item = (u64, u64)> {
    let s = &ctx.setup;
    let schedule = s.schedule.clone().expect("open loop has a schedule");
    schedule.dealt(s.plan.this_shard(), s.index, s.workers)
}

/// Open loop: every arrival is sent at its time on an idle lane (a new one if none is idle);
/// at the concurrency cap it waits for a lane and keeps its intended time, so the wait shows
/// in the from-intent latencies and the scheduling lag.
async fn open_loop(ctx: &Rc<Ctx>, cap: usize) {
    let lanes = Lanes::new(ctx.clone(), cap);
    lanes.warm(warm_lanes(ctx));
    let mut arrivals = open_schedule(ctx);
    for (id, at_ns) in arrivals.by_ref() {
        let intended_ns = ctx.setup.start_ns + at_ns;
        ctx.pacer.until(intended_ns, || ctx.progress()).await;
        if ctx.setup.shared.stop.load(Ordering::Relaxed) {
            ctx.emit(ctx.not_sent(id, intended_ns));
            break;
        }
        let to = ctx.route(id);
        let lane = lanes.acquire(to).await;
        lane.dispatch(Job {
            id,
            intended_ns,
            to,
        });
    }
    for (id, at_ns) in arrivals {
        ctx.emit(ctx.not_sent(id, ctx.setup.start_ns + at_ns));
    }
    lanes.drain().await;
}

/// Lanes to open before the schedule starts: the arrivals of its first `WARM_NS`, plus one.
/// The run starts `START_LEAD_NS` (20 ms) after the workers do, time enough to connect them.
fn warm_lanes(ctx: &Ctx) -> usize {
    const WARM_NS: f64 = 2e6;
    mean_gap_ns(&ctx.setup).map_or(1, |gap| (WARM_NS / gap).ceil() as usize + 1)
}

/// Closed loop: this worker's share of the virtual users (of this shard's share of them),
/// each sending its next request when the previous one ended. Ids are claimed from one
/// counter so `--request-count` is exact across workers (and, as global ids i with
/// i mod N = I, across shards).
async fn closed_loop(ctx: &Rc<Ctx>, concurrency: u32) {
    let all_users = concurrency;
    let concurrency = ctx.setup.plan.this_shard().share_u32(concurrency);
    let (n, k) = (ctx.setup.workers as u32, ctx.setup.index as u32);
    let users = concurrency / n + u32::from(k < concurrency % n);
    ctx.pacer.until(ctx.setup.start_ns, || ctx.progress()).await;
    let mut tasks = Vec::with_capacity(users as usize);
    for m in 0..users {
        // User m of this worker is the shard's local user k + m·n, and the shard's local
        // user j the run's user I + j·N (`Shard::global`, as its request ids).
        let starts_at = ctx.setup.plan.users_ramp_ns.map(|ramp| {
            let user = ctx.setup.plan.this_shard().global(u64::from(k + m * n));
            ctx.setup.start_ns + user_start_ns(user, all_users, ramp)
        });
        tasks.push(monoio::spawn(lane::virtual_user(ctx.clone(), starts_at)));
    }
    for t in tasks {
        t.await;
    }
}

/// `--users-ramp`: user k of N starts k × ramp / N after the schedule's start (ns, rounded
/// down), so the N users are spread evenly over the ramp and the last starts one step before
/// its end.
fn user_start_ns(user: u64, users: u32, ramp_ns: u64) -> u64 {
    (u128::from(user) * u128::from(ramp_ns) / u128::from(users.max(1))) as u64
}

/// Event slots a request's vector starts with: one per asked token, bounded so a few very long
/// answers do not make every preallocated vector huge (a longer answer grows its vector once,
/// and the grown vector is recycled).
fn event_capacity(catalog: &Catalog) -> usize {
    const MAX_PREALLOCATED_EVENTS: usize = 4096;
    (catalog.max_output_tokens() as usize + 4).min(MAX_PREALLOCATED_EVENTS)
}
