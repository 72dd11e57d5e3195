//! When to send: the worker's pacer, and the probe that measures how late its event loop runs.
//!
//! The pacer waits on the thread's `rt::timer::Timer` (an absolute timerfd, tens of
//! microseconds late where monoio's 1 ms wheel is a millisecond late) until a spin budget
//! before the deadline (see `spin`), then spins through the driver, which keeps other I/O
//! moving, until the deadline itself. It sends every arrival
//! already due at once, and never lets a late arrival shift the ones after it: times are
//! absolute. Whatever lateness remains is never hidden: it is each record's
//! `sent_ns − intended_ns`, reported as scheduling lag. Only one task (the open-loop
//! dispatcher, or the closed loop before it starts its users) waits on a pacer.

use super::spin::SpinBudget;
use super::Ctx;
use crate::rt::clock::RunClock;
use crate::rt::timer::{DriverPass, Timer};
use hdrhistogram::Histogram;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// Waits for run-clock deadlines.
pub struct Pacer {
    clock: RunClock,
    /// `None` where no timerfd (or no driver pass) could be made: then monoio's coarse timer
    /// is used, and the cost shows in the scheduling lag.
    timer: Option<(Timer, DriverPass)>,
    /// The last this-many ns before a deadline are spent in driver passes, not asleep.
    budget: RefCell<SpinBudget>,
    /// Time spent in those passes, how many there were (see `DriverPass::pass`), and the
    /// time of the passes during which the worker made no progress (idle polling).
    spun_ns: Cell<u64>,
    passes: Cell<u64>,
    idle_ns: Cell<u64>,
}

/// What the pacer's spins cost over a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpinTally {
    /// Wall time spent spinning before deadlines, ns (includes the I/O served meanwhile).
    pub spun_ns: u64,
    pub passes: u64,
    /// The part of `spun_ns` in passes that served nothing: CPU the worker could have given
    /// up, which the saturation verdict leaves out.
    pub idle_ns: u64,
    /// The budget at the end, ns.
    pub budget_ns: u64,
}

impl Pacer {
    /// Must be called inside the worker's runtime.
    /// `spin_ns`: the fixed spin budget, or `None` to learn it (see `spin`);
    /// `mean_gap_ns`: between the arrivals this pacer will wait for, when known.
    pub fn new(clock: RunClock, spin_ns: Option<u64>, mean_gap_ns: Option<f64>) -> Self {
        Pacer {
            clock,
            timer: Timer::new().and_then(|t| Ok((t, DriverPass::new()?))).ok(),
            budget: RefCell::new(SpinBudget::new(spin_ns, mean_gap_ns)),
            spun_ns: Cell::new(0),
            passes: Cell::new(0),
            idle_ns: Cell::new(0),
        }
    }

    pub fn spun(&self) -> SpinTally {
        SpinTally {
            spun_ns: self.spun_ns.get(),
            passes: self.passes.get(),
            idle_ns: self.idle_ns.get(),
            budget_ns: self.budget.borrow().ns(),
        }
    }

    pub fn is_precise(&self) -> bool {
        self.timer.is_some()
    }

    /// Waits until the run clock reaches `due_ns` (returns at once when already due).
    /// `progress` is any count that moves when the worker does work (reads, sends,
    /// connects): a spin pass across which it stays put was idle.
    pub async fn until(&self, due_ns: u64, progress: impl Fn() -> u64) {
        let now = self.clock.now_ns();
        if due_ns <= now {
            return;
        }
        let Some((timer, pass)) = &self.timer else {
            monoio::time::sleep(Duration::from_nanos(due_ns - now)).await;
            return;
        };
        let wake_ns = due_ns.saturating_sub(self.budget.borrow().ns());
        if wake_ns > now {
            let origin = self.clock.origin_mono_ns();
            if timer.sleep_until(origin + wake_ns).await.is_err() {
                let left = due_ns.saturating_sub(self.clock.now_ns());
                monoio::time::sleep(Duration::from_nanos(left)).await;
                return;
            }
            let late_ns = self.clock.now_ns().saturating_sub(wake_ns);
            self.budget.borrow_mut().observe(late_ns);
        }
        self.spin(pass, due_ns, progress).await;
    }

    /// One trip through the driver without sleeping: the completions that are ready now (and
    /// the tasks they wake) run before this returns. Without a precise timer it is a no-op.
    pub async fn pass(&self) {
        if let Some((_, pass)) = &self.timer {
            pass.pass().await;
        }
    }

    /// Why spin at all: a timer wake-up in this VM costs 20–100 µs (interrupt injection, the
    /// vCPU's halt), where a pass through the driver costs about a microsecond. Every pass
    /// also processes whatever I/O is ready, so other requests are not held up by it.
    async fn spin(&self, pass: &DriverPass, due_ns: u64, progress: impl Fn() -> u64) {
        let start = self.clock.now_ns();
        let (mut now, mut idle_ns, mut passes) = (start, 0, 0);
        while now < due_ns {
            let before = progress();
            pass.pass().await;
            passes += 1;
            let then = self.clock.now_ns();
            if progress() == before {
                idle_ns += then - now;
            }
            now = then;
        }
        self.passes.set(self.passes.get() + passes);
        self.idle_ns.set(self.idle_ns.get() + idle_ns);
        self.spun_ns.set(self.spun_ns.get() + (now - start));
    }
}

/// Interval between event-loop lag samples.
const PROBE_EVERY: Duration = Duration::from_millis(10);

/// A task that, every `PROBE_EVERY`, sleeps on its own precise timer and records how late
/// it was polled after the deadline (`docs/metrics.md`: how late a periodic timer fires). That
/// is the timer's own wake-up latency plus the time other ready work kept the loop busy:
/// what any sleeping wake-up on this worker would have suffered at that moment. (A yield
/// could not measure it: monoio polls a task that woke itself first, ahead of the queue.)
pub struct LoopLagProbe {
    done: Rc<Cell<bool>>,
    lag: Rc<RefCell<Histogram<u64>>>,
    task: monoio::task::JoinHandle<()>,
}

impl LoopLagProbe {
    pub fn start(ctx: Rc<Ctx>) -> Self {
        let done = Rc::new(Cell::new(false));
        let lag = Rc::new(RefCell::new(crate::summary::workers::new_histogram()));
        let task = monoio::spawn(probe_loop(ctx, done.clone(), lag.clone()));
        LoopLagProbe { done, lag, task }
    }

    pub async fn stop(self) -> Histogram<u64> {
        self.done.set(true);
        self.task.await;
        self.lag.replace(crate::summary::workers::new_histogram())
    }
}

async fn probe_loop(ctx: Rc<Ctx>, done: Rc<Cell<bool>>, lag: Rc<RefCell<Histogram<u64>>>) {
    let clock = ctx.setup.clock;
    let timer = Timer::new().ok();
    while !done.get() {
        let due_ns = clock.now_ns() + PROBE_EVERY.as_nanos() as u64;
        let precise = match &timer {
            Some(t) => t.sleep_until(clock.origin_mono_ns() + due_ns).await.is_ok(),
            None => false,
        };
        if !precise {
            monoio::time::sleep(PROBE_EVERY).await;
        }
        lag.borrow_mut()
            .saturating_record(clock.now_ns().saturating_sub(due_ns));
        ctx.nudge();
    }
}
