//! When to send: the worker's pacer, and the probe that measures how late its event loop runs.
//!
//! The pacer waits on the thread's `timer::PreciseTimer` (an absolute timerfd, tens of
//! microseconds late where monoio's 1 ms wheel is a millisecond late), sends every arrival
//! already due at once, and never lets a late arrival shift the ones after it: times are
//! absolute. Whatever lateness remains is never hidden: it is each record's
//! `sent_ns − intended_ns`, reported as scheduling lag. Only one task (the open-loop
//! dispatcher, or the closed loop before it starts its users) waits on a pacer.

use super::Ctx;
use crate::clock::RunClock;
use crate::timer::PreciseTimer;
use hdrhistogram::Histogram;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// Waits for run-clock deadlines.
pub struct Pacer {
    clock: RunClock,
    /// `None` where no timerfd could be made: then monoio's coarse timer is used, and the
    /// cost shows in the scheduling lag.
    timer: Option<PreciseTimer>,
}

impl Pacer {
    /// Must be called inside the worker's runtime.
    pub fn new(clock: RunClock) -> Self {
        Pacer {
            clock,
            timer: PreciseTimer::new().ok(),
        }
    }

    pub fn is_precise(&self) -> bool {
        self.timer.is_some()
    }

    /// Waits until the run clock reaches `due_ns` (returns at once when already due).
    pub async fn until(&self, due_ns: u64) {
        let now = self.clock.now_ns();
        if due_ns <= now {
            return;
        }
        let precise = match &self.timer {
            Some(t) => t
                .sleep_until_mono(self.clock.origin_mono_ns() + due_ns)
                .await
                .is_ok(),
            None => false,
        };
        if !precise {
            let left = due_ns.saturating_sub(self.clock.now_ns());
            monoio::time::sleep(Duration::from_nanos(left)).await;
        }
    }
}

/// Interval between event-loop lag samples.
const PROBE_EVERY: Duration = Duration::from_millis(10);

/// A task that, every `PROBE_EVERY`, yields once and measures how long the loop took to poll
/// it again: the time other ready work kept it waiting, i.e. the delay any wake-up on this
/// worker would have suffered at that moment.
pub struct LoopLagProbe {
    done: Rc<Cell<bool>>,
    lag: Rc<RefCell<Histogram<u64>>>,
    task: monoio::task::JoinHandle<()>,
}

impl LoopLagProbe {
    pub fn start(ctx: Rc<Ctx>) -> Self {
        let done = Rc::new(Cell::new(false));
        let lag = Rc::new(RefCell::new(crate::collector::new_histogram()));
        let task = monoio::spawn(probe_loop(ctx, done.clone(), lag.clone()));
        LoopLagProbe { done, lag, task }
    }

    pub async fn stop(self) -> Histogram<u64> {
        self.done.set(true);
        self.task.await;
        self.lag.replace(crate::collector::new_histogram())
    }
}

async fn probe_loop(ctx: Rc<Ctx>, done: Rc<Cell<bool>>, lag: Rc<RefCell<Histogram<u64>>>) {
    let clock = ctx.setup.clock;
    while !done.get() {
        monoio::time::sleep(PROBE_EVERY).await;
        let before = clock.now_ns();
        YieldOnce(false).await;
        lag.borrow_mut().saturating_record(clock.now_ns() - before);
    }
}

/// Returns `Pending` once after waking itself, so the task goes to the back of the run queue.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
