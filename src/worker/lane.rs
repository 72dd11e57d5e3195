//! Part of the worker (schedule → **worker** → http → …): the lanes. A lane is one request
//! task with its own keep-alive connection (`conn`), reused request after request: the open
//! loop dispatches arrivals to idle lanes and opens a new lane only when none is idle (so
//! steady state allocates nothing), a closed-loop virtual user is a lane that feeds itself.
//! Here too: the bell that cancels every lane in flight when a grace period ends. Inside
//! `worker/` it sits above `session` and `conn` (it runs them; they never import it), and
//! the job and the connect gate all three share are `job`'s. Never prints.

use super::conn::Conn;
use super::gate;
use super::job::{ConnectGuard, Job, MAX_CONNECTING};
use super::session::{self, SessionBufs};
use super::Ctx;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::{Poll, Waker};
use std::time::Duration;

/// One lane's mailbox: the pacer puts a job in and wakes the lane's task.
#[derive(Default)]
pub struct Lane {
    job: Cell<Option<Job>>,
    closed: Cell<bool>,
    waker: Cell<Option<Waker>>,
    /// The server its connection goes to (its last job's): the idle stack it returns to.
    server: Cell<usize>,
}

impl Lane {
    pub fn dispatch(&self, job: Job) {
        self.server.set(job.to);
        self.job.set(Some(job));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn close(&self) {
        self.closed.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    async fn next_job(&self) -> Option<Job> {
        poll_fn(|cx| {
            if let Some(job) = self.job.take() {
                return Poll::Ready(Some(job));
            }
            if self.closed.get() {
                return Poll::Ready(None);
            }
            self.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// The open loop's lanes: idle ones on a stack per server (so a request finds a connection
/// to its server kept alive), at most `cap` in all.
pub struct Lanes {
    ctx: Rc<Ctx>,
    cap: usize,
    state: Rc<LanesState>,
    tasks: RefCell<Vec<monoio::task::JoinHandle<()>>>,
}

#[derive(Default)]
struct LanesState {
    /// By server.
    idle: RefCell<Vec<Vec<Rc<Lane>>>>,
    all: RefCell<Vec<Rc<Lane>>>,
    busy: Cell<usize>,
    /// The pacer, waiting for a lane to come back (at the cap, or draining).
    waiter: Cell<Option<Waker>>,
}

impl LanesState {
    fn release(&self, lane: Rc<Lane>) {
        self.idle.borrow_mut()[lane.server.get()].push(lane);
        self.busy.set(self.busy.get() - 1);
        if let Some(w) = self.waiter.take() {
            w.wake();
        }
    }
}

impl LanesState {
    /// An idle lane of server `to`, or with `any` one of another server's (the one with
    /// the most idle lanes).
    fn take_idle(&self, to: usize, any: bool) -> Option<Rc<Lane>> {
        let mut idle = self.idle.borrow_mut();
        let lane = match idle[to].pop() {
            Some(lane) => lane,
            None if any => idle.iter_mut().max_by_key(|s| s.len())?.pop()?,
            None => return None,
        };
        self.busy.set(self.busy.get() + 1);
        Some(lane)
    }

    /// Idle lanes of every server.
    fn idle_total(&self) -> usize {
        self.idle.borrow().iter().map(Vec::len).sum()
    }
}

impl Lanes {
    pub fn new(ctx: Rc<Ctx>, cap: usize) -> Self {
        let servers = ctx.setup.dests.len().max(1);
        let state = LanesState {
            idle: RefCell::new(vec![Vec::new(); servers]),
            ..LanesState::default()
        };
        Lanes {
            ctx,
            cap,
            state: Rc::new(state),
            tasks: RefCell::new(Vec::new()),
        }
    }

    /// An idle lane of server `to`, a new one below the cap, at the cap an idle lane of
    /// another server (it closes its connection and opens one to `to`), or the first one to
    /// come back.
    ///
    /// Before opening a lane it lets the ready completions run once: when the worker is behind,
    /// every due arrival comes here without the loop yielding, so answers already waiting in
    /// the kernel were not read, their lanes not released, and each arrival opened a new
    /// connection (CPU on both ends), which put the worker further behind. At 40,000 req/s a
    /// 1–3 ms preemption grew that way to 17,000 connections and seconds of lag.
    pub async fn acquire(&self, to: usize) -> Rc<Lane> {
        let mut passed = false;
        loop {
            if let Some(lane) = self.state.take_idle(to, false) {
                return lane;
            }
            if !passed && self.state.busy.get() > 0 {
                passed = true;
                self.ctx.pacer.pass().await;
                continue;
            }
            let below_cap = self.state.all.borrow().len() < self.cap;
            if below_cap && !self.ctx.connects.is_full() {
                self.state.busy.set(self.state.busy.get() + 1);
                return self.spawn_lane(false, to);
            }
            if !below_cap {
                if let Some(lane) = self.state.take_idle(to, true) {
                    return lane;
                }
            }
            {
                let mut c = self.ctx.counters.borrow_mut();
                if below_cap {
                    c.connect_waits += 1;
                } else {
                    c.cap_waits += 1;
                }
            }
            self.wait_for_release().await;
        }
    }

    /// Opens `n` lanes (at most the cap and `MAX_CONNECTING`) that connect at once and wait
    /// idle, before the schedule starts: the first connects of a run are the slow ones
    /// (io_uring's connect op completed 4 ms late at a run's start), and without warm lanes
    /// the first arrivals of a fast schedule each waited for one: a burst at start-up.
    pub fn warm(&self, n: usize) {
        let servers = self.ctx.setup.dests.len().max(1);
        for k in 0..n.min(self.cap).min(MAX_CONNECTING) {
            self.state.busy.set(self.state.busy.get() + 1);
            self.spawn_lane(true, k % servers);
        }
    }

    fn spawn_lane(&self, warm: bool, to: usize) -> Rc<Lane> {
        let lane = Rc::new(Lane::default());
        lane.server.set(to);
        self.state.all.borrow_mut().push(lane.clone());
        // Counted from now, not from when the task first runs: a burst of due arrivals
        // opens lanes faster than their tasks start.
        let opening = self.ctx.connects.enter();
        let state = self.state.clone();
        let task = lane_task(self.ctx.clone(), lane.clone(), state, opening, warm);
        self.tasks.borrow_mut().push(monoio::spawn(task));
        lane
    }

    async fn wait_for_release(&self) {
        let before = self.state.idle_total();
        let gate = &self.ctx.connects;
        let was_full = gate.is_full();
        poll_fn(|cx| {
            let idle_grew = self.state.idle_total() > before;
            if idle_grew || self.state.busy.get() == 0 || (was_full && !gate.is_full()) {
                return Poll::Ready(());
            }
            self.state.waiter.set(Some(cx.waker().clone()));
            gate.wake_on_leave(cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Waits for every in-flight request, then closes all lanes and their connections.
    pub async fn drain(self) {
        while self.state.busy.get() > 0 {
            self.wait_for_release().await;
        }
        for lane in self.state.all.borrow().iter() {
            lane.close();
        }
        for t in self.tasks.take() {
            t.await;
        }
    }
}

async fn lane_task(
    ctx: Rc<Ctx>,
    lane: Rc<Lane>,
    state: Rc<LanesState>,
    opening: ConnectGuard,
    warm: bool,
) {
    let mut conn = Conn::new(&ctx, false);
    conn.go_to(lane.server.get());
    conn.opening = Some(opening);
    let mut session = ctx
        .setup
        .plan
        .sessions
        .is_some()
        .then(|| SessionBufs::new(&ctx));
    if warm {
        // A failed warm connect is not a request's failure: the first job connects again
        // and records what happens then.
        let _ = conn.connect(&ctx, false).await;
        state.release(lane.clone());
    }
    while let Some(job) = lane.next_job().await {
        match session.as_mut() {
            // The job is a session's start: its turns run here, one record each.
            Some(bufs) => {
                session::run(&ctx, &mut conn, bufs, job).await;
            }
            None => {
                let rec = conn.exchange(&ctx, job).await;
                ctx.emit(rec);
            }
        }
        ctx.arrived(job.to);
        state.release(lane.clone());
    }
}

/// A closed-loop virtual user: claims the next id, sends, waits for the whole response,
/// and goes again until the request count or the duration is reached. Its first measured
/// request waits at the warm-up gate until the warm-up has drained and the measured phase
/// opened; `--duration` counts from that opening.
///
/// Each request's intended time is its user's previous request's end (`done_ns`, docs/metrics.md),
/// not the time the user got round to the next one: whatever the worker spends between the
/// two (handing the record over, other lanes' work in the same pass) shows in the
/// from-intent latencies instead of vanishing. The first request's is the time it was
/// claimed (the start), and a request held at the warm-up gate's is the time it was let
/// through.
///
/// `starts_at`: with `--users-ramp`, the run-clock time this user starts; it sleeps until
/// then, and its first request's intended time is exactly that (docs/metrics.md: a closed-loop
/// request is due when its user is ready to send it), so a late start shows as lag.
pub async fn virtual_user(ctx: Rc<Ctx>, starts_at: Option<u64>) {
    let s = &ctx.setup;
    if let Some(at) = starts_at {
        let now = s.clock.now_ns();
        if at > now {
            monoio::time::sleep(Duration::from_nanos(at - now)).await;
        }
    }
    let gate = &s.shared.gate;
    let total = s
        .plan
        .stop
        .request_count
        .map(|c| c + s.plan.warmup_requests);
    // A user keeps a connection to every server it sent to, as a browser's pool does.
    let mut conn = Conn::new(&ctx, true);
    let mut session = s.plan.sessions.is_some().then(|| SessionBufs::new(&ctx));
    // The end of this user's previous request: the next one's intended time.
    let mut previous_done_ns: Option<u64> = starts_at;
    loop {
        let now = s.clock.now_ns();
        if s.shared.stop.load(Ordering::Relaxed)
            || s.shared.gate.past_duration(&s.plan, s.start_ns, now)
        {
            break;
        }
        let claim = || {
            // Release, the weakest ordering that is correct: the ids are unique by the
            // counter's atomicity alone, and the one thing a claim must publish is the gate's
            // check-in just before it (`WarmupGate::enter`). The drain test reads the claims
            // with Acquire before the in-flight count (`run::server`), so once it sees this
            // claim it sees the check-in too (every later claim is a read-modify-write, which
            // continues this release). On x86 any ordering is the same locked add: the cost
            // was the cache line, which `PaddedCounter` keeps apart from what requests read.
            let local = s.shared.claimed.0.fetch_add(1, Ordering::Release);
            // A shard's ids are the global ids i with i mod N = I: `total` bounds them all.
            let id = s.plan.this_shard().global(local);
            (id, previous_done_ns.unwrap_or_else(|| s.clock.now_ns()))
        };
        let ((id, mut intended_ns), entry) =
            gate.enter(claim, |&(id, at)| ctx.warmup_by(id, at).any());
        if total.is_some_and(|t| id >= t) {
            if entry == gate::Entry::Warmup {
                gate.left();
            }
            break;
        }
        if entry == gate::Entry::Wait {
            if !wait_for_measure(&ctx).await {
                break;
            }
            intended_ns = s.clock.now_ns();
        }
        let job = Job {
            id,
            intended_ns,
            to: ctx.route(id),
        };
        previous_done_ns = Some(match session.as_mut() {
            // With `--turns` the claim is a session: the user holds its whole conversation.
            Some(bufs) => session::run(&ctx, &mut conn, bufs, job).await,
            None => {
                let rec = conn.exchange(&ctx, job).await;
                // `exchange` ends every record with a `done_ns`; the fallback is never taken.
                let done = rec.done_ns.unwrap_or_else(|| s.clock.now_ns());
                ctx.emit(rec);
                done
            }
        });
        ctx.arrived(job.to);
        if entry == gate::Entry::Warmup {
            gate.left();
        }
    }
}

/// How often a user at the warm-up gate looks whether the measured phase has opened.
const GATE_POLL: Duration = Duration::from_micros(200);

/// Waits at the warm-up gate until the measured phase opens (true) or the run is stopped
/// (false).
async fn wait_for_measure(ctx: &Ctx) -> bool {
    let shared = &ctx.setup.shared;
    loop {
        if shared.gate.open_ns().is_some() {
            return true;
        }
        if shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        monoio::time::sleep(GATE_POLL).await;
    }
}

/// How often a worker looks at the run's cancel flag. Only the end of a grace period waits
/// on it, so 10 ms costs nothing on the hot path and bounds how late a cancel lands.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// One worker's cancel signal: a flag and one waker slot per lane (bounded by the lanes, so
/// waiting on it allocates nothing per request).
#[derive(Default)]
pub struct CancelBell {
    cancelled: Cell<bool>,
    finished: Cell<bool>,
    slots: RefCell<Vec<Rc<Cell<Option<Waker>>>>>,
}

impl CancelBell {
    pub(super) fn slot(&self) -> Rc<Cell<Option<Waker>>> {
        let slot = Rc::new(Cell::new(None));
        self.slots.borrow_mut().push(slot.clone());
        slot
    }

    fn ring(&self) {
        self.cancelled.set(true);
        for slot in self.slots.borrow().iter() {
            if let Some(w) = slot.take() {
                w.wake();
            }
        }
    }

    /// The worker's work is done: the watcher may end.
    pub fn finish(&self) {
        self.finished.set(true);
    }

    pub(super) async fn wait(&self, slot: &Cell<Option<Waker>>) {
        poll_fn(|cx| {
            if self.cancelled.get() {
                return Poll::Ready(());
            }
            slot.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// Per-worker task: turns the run's cancel flag into wake-ups of every lane in flight.
pub async fn watch_cancel(ctx: Rc<Ctx>) {
    while !ctx.cancel.finished.get() {
        if ctx.setup.shared.cancel.load(Ordering::Relaxed) {
            ctx.cancel.ring();
            return;
        }
        monoio::time::sleep(CANCEL_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
    use std::sync::Arc;
    use std::task::{Context, Wake};

    /// A waker that counts its wakes.
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, AtomicOrdering::SeqCst);
        }
    }

    fn counting() -> (Arc<Counting>, Waker) {
        let c = Arc::new(Counting(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    fn poll_once<F: std::future::Future>(f: std::pin::Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(w))
    }

    #[test]
    fn a_lane_takes_its_job_and_ends_when_closed() {
        let lane = Lane::default();
        let (woken, w) = counting();
        let mut next = std::pin::pin!(lane.next_job());
        assert!(poll_once(next.as_mut(), &w).is_pending());
        lane.dispatch(Job {
            id: 7,
            intended_ns: 42,
            to: 0,
        });
        assert_eq!(woken.0.load(AtomicOrdering::SeqCst), 1);
        match poll_once(next.as_mut(), &w) {
            Poll::Ready(Some(job)) => assert_eq!((job.id, job.intended_ns), (7, 42)),
            other => panic!("expected the job, got {:?}", other.map(|j| j.map(|j| j.id))),
        }
        let mut after = std::pin::pin!(lane.next_job());
        assert!(poll_once(after.as_mut(), &w).is_pending());
        lane.close();
        assert!(matches!(poll_once(after.as_mut(), &w), Poll::Ready(None)));
    }

    #[test]
    fn the_cancel_bell_wakes_every_waiting_lane_once_rung() {
        let bell = CancelBell::default();
        let (a, b) = (bell.slot(), bell.slot());
        let ((wa, wake_a), (wb, wake_b)) = (counting(), counting());
        let mut fa = std::pin::pin!(bell.wait(&a));
        let mut fb = std::pin::pin!(bell.wait(&b));
        assert!(poll_once(fa.as_mut(), &wake_a).is_pending());
        assert!(poll_once(fb.as_mut(), &wake_b).is_pending());
        bell.ring();
        assert_eq!(wa.0.load(AtomicOrdering::SeqCst), 1);
        assert_eq!(wb.0.load(AtomicOrdering::SeqCst), 1);
        assert!(poll_once(fa.as_mut(), &wake_a).is_ready());
        assert!(poll_once(fb.as_mut(), &wake_b).is_ready());
        // A lane that starts waiting after the ring does not wait at all.
        let c = bell.slot();
        let mut late = std::pin::pin!(bell.wait(&c));
        assert!(poll_once(late.as_mut(), &wake_a).is_ready());
        assert!(!bell.finished.get());
        bell.finish();
        assert!(bell.finished.get());
    }
}
