//! One listener thread's deadlines (server side; the client flow schedule → worker → http →
//! sse → extract → record → collector → report never reads it): every connection of the
//! thread that waits for an absolute deadline (its next token event, a stall) waits here, on
//! one `timerfd` armed at the earliest deadline of all of them, instead of on a timerfd of its
//! own armed once per event. When it fires, every connection due by then is woken in
//! deadline order in the same pass of the runtime, so their writes go to the kernel in one
//! io_uring submission.
//!
//! Why: at 2,000 streams of a token every 2 ms (a million events per second), a timerfd per
//! connection costs each event a `timerfd_settime` syscall and a poll of its own fd; here it
//! costs a heap push and pop, and the syscalls are one per wake-up of the thread, however many
//! connections it serves. Precision is the timerfd's either way: it is armed at the exact
//! earliest deadline. Nobody is woken early to spin: with deadlines microseconds apart (a
//! million a second) a wake-up that finds the next ones due takes them too, and spinning
//! toward each would burn the core the writes need.
//!
//! This module may not block the thread, and allocates only as the heap and the waker map
//! grow to the thread's number of waiting connections (then they are reused).

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::rt::clock::mono_ns;
use crate::rt::timer::Timer;

/// The thread's deadlines: who waits, until when.
pub(crate) struct Ticker {
    timer: Timer,
    /// (deadline, connection); an entry whose connection no longer waits for that deadline
    /// (woken by stop, or gone) is skipped when it comes up.
    heap: RefCell<BinaryHeap<Reverse<(u64, u64)>>>,
    /// Each waiting connection's deadline and waker.
    waiting: RefCell<HashMap<u64, (u64, Waker)>>,
    /// The deadline the timerfd is armed for; `u64::MAX`: disarmed.
    armed: Cell<u64>,
    stopping: Cell<bool>,
}

impl Ticker {
    /// Makes the thread's ticker and starts its task; must be called inside the runtime.
    pub(crate) fn start() -> io::Result<Rc<Self>> {
        let ticker = Rc::new(Self {
            timer: Timer::new()?,
            heap: RefCell::new(BinaryHeap::new()),
            waiting: RefCell::new(HashMap::new()),
            armed: Cell::new(u64::MAX),
            stopping: Cell::new(false),
        });
        monoio::spawn(ticker.clone().drive());
        Ok(ticker)
    }

    /// Returns once `CLOCK_MONOTONIC` reaches `deadline_ns`, or at stop; `conn` names the
    /// waiter (one wait per connection at a time).
    pub(crate) async fn wait(&self, conn: u64, deadline_ns: u64) {
        std::future::poll_fn(|cx| {
            if self.stopping.get() || mono_ns() >= deadline_ns {
                self.waiting.borrow_mut().remove(&conn);
                return Poll::Ready(());
            }
            let mut waiting = self.waiting.borrow_mut();
            match waiting.get_mut(&conn) {
                Some((d, w)) if *d == deadline_ns => w.clone_from(cx.waker()),
                _ => {
                    waiting.insert(conn, (deadline_ns, cx.waker().clone()));
                    self.heap.borrow_mut().push(Reverse((deadline_ns, conn)));
                    if deadline_ns < self.armed.get() {
                        self.arm(deadline_ns);
                    }
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Forgets a connection that ends (its heap entries are skipped when they come up).
    pub(crate) fn forget(&self, conn: u64) {
        self.waiting.borrow_mut().remove(&conn);
    }

    /// Wakes every waiter and ends the task: the waiters see the stop themselves.
    pub(crate) fn stop(&self) {
        self.stopping.set(true);
        crate::rt::timer::fire_now(self.timer.raw_fd());
    }

    fn arm(&self, deadline_ns: u64) {
        // An arming that fails leaves the waiter to the next wake-up of the timer; it cannot
        // fail on an open timerfd with a valid time.
        let _ = self.timer.arm(deadline_ns);
        self.armed.set(deadline_ns);
    }

    async fn drive(self: Rc<Self>) {
        loop {
            if self.timer.fired().await.is_err() || self.stopping.get() {
                break;
            }
            self.wake_due(mono_ns());
        }
        self.stopping.set(true);
        for (_, (_, waker)) in self.waiting.borrow_mut().drain() {
            waker.wake();
        }
    }

    /// Wakes, in deadline order, every waiter due by `until_ns`; re-arms for the next (or
    /// disarms: one `timerfd_settime` per wake-up either way, which also clears the fd).
    fn wake_due(&self, until_ns: u64) {
        let mut heap = self.heap.borrow_mut();
        let mut waiting = self.waiting.borrow_mut();
        while let Some(&Reverse((deadline, conn))) = heap.peek() {
            if deadline > until_ns {
                break;
            }
            heap.pop();
            if matches!(waiting.get(&conn), Some((d, _)) if *d == deadline) {
                if let Some((_, waker)) = waiting.remove(&conn) {
                    waker.wake();
                }
            }
        }
        let next = heap.peek().map_or(0, |&Reverse((d, _))| d);
        drop((heap, waiting));
        // 0 disarms the timerfd.
        self.arm(next);
        if next == 0 {
            self.armed.set(u64::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on<F: std::future::Future>(f: F) -> F::Output {
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn waiters_wake_in_deadline_order_and_never_early() {
        on(async {
            let ticker = Ticker::start().expect("ticker");
            let order = Rc::new(RefCell::new(Vec::new()));
            let start = mono_ns();
            let mut tasks = Vec::new();
            // Registered in reverse order of their deadlines, 200 µs apart.
            for conn in (0..5u64).rev() {
                let (t, order) = (ticker.clone(), order.clone());
                let deadline = start + 1_000_000 + conn * 200_000;
                tasks.push(monoio::spawn(async move {
                    t.wait(conn, deadline).await;
                    let now = mono_ns();
                    assert!(now >= deadline, "woke {} ns early", deadline - now);
                    order.borrow_mut().push(conn);
                }));
            }
            for t in tasks {
                t.await;
            }
            assert_eq!(*order.borrow(), vec![0, 1, 2, 3, 4]);
            assert!(ticker.waiting.borrow().is_empty());
        });
    }

    #[test]
    fn stop_wakes_every_waiter() {
        on(async {
            let ticker = Ticker::start().expect("ticker");
            let far = mono_ns() + 60_000_000_000;
            let t = ticker.clone();
            let waiter = monoio::spawn(async move { t.wait(7, far).await });
            monoio::time::sleep(std::time::Duration::from_millis(5)).await;
            ticker.stop();
            waiter.await;
            assert!(mono_ns() < far);
        });
    }
}
