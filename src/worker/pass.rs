//! Part of the worker (schedule → **worker** → http → …): one pass of the runtime — the tasks
//! that run between two trips through the driver — and what happens once per pass: the read
//! stamps, and the end of the pass, where the records of the pass leave in one batch.
//!
//! **Stamps.** A runtime pass runs, one after the other, every lane whose read the driver
//! just returned. Stamping each read when its lane gets to run would charge it with the
//! parsing of every lane ahead of it in the pass (~0.3 µs per event; ~20 µs behind a
//! 60-event read). So no lane parses before every read of the pass has its stamp:
//! - a read the driver completed (io_uring: the kernel received the bytes before the driver
//!   returned them) gets the *pass stamp*, taken by the first such read of the pass and
//!   shared by all the others: the time user space first ran after the driver returned;
//! - a read the lane performs itself (the epoll driver's `recv`, `--rx-timestamps`'
//!   `recvmsg`) may return bytes that arrived after the pass began, so a shared stamp could
//!   be earlier than its bytes: it is stamped when its `recv` returns, and the lane then
//!   waits for the end of the pass's stamps (it goes behind every task already queued) before
//!   parsing. Its stamp waits for the other reads' `recv` calls, never for their parsing.
//!
//! **The end of a pass** is one task (`tail`), woken by the first stamp, send or record of a pass;
//! monoio queues a woken task behind every task already queued, so it runs after the lanes of
//! the pass. It forgets the pass stamp, lets the deferred lanes parse, and hands the pass's
//! records to the collector in one batch (see `Ctx::flush`). One extra task poll per pass.
//!
//! monoio 0.2.4 has no hook at the driver's return (its `Driver` and `Runtime` are not
//! built from outside the crate), hence a task at the back of the queue instead. Single
//! thread (`Cell`s); the deferred list is made with room for every lane (`with_lanes`), so
//! nothing here allocates during a run.
//! Never prints.

use crate::rt::clock::RunClock;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

/// One worker's pass state.
#[derive(Default)]
pub struct Pass {
    /// The stamp of the reads the driver completed in this pass, once one was taken.
    stamp: Cell<Option<u64>>,
    /// Lanes that performed their read in this pass, waiting for its end to parse.
    deferred: RefCell<Vec<Waker>>,
    /// The end-of-pass task, while it waits.
    tail: Cell<Option<Waker>>,
    /// The end-of-pass task has work in this pass.
    due: Cell<bool>,
    /// The worker is done: the end-of-pass task returns.
    closed: Cell<bool>,
    /// The first stamp of the pass's work (a read's or a send's), once one was taken.
    began: Cell<Option<u64>>,
    /// Reads and sends of the pass: its work items (`Sample`).
    items: Cell<u32>,
}

/// One pass as the client's queue model sees it (`worker::queue`): its work items and when
/// the first of them was stamped. `began` is `None` for a pass with no item (a record of a
/// failure, a nudge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub began: Option<u64>,
    pub items: u32,
}

impl Pass {
    /// A pass state whose list of deferred lanes has room for `lanes` (each lane has at most
    /// one read at a time), so it never grows mid-run: with kernel receive stamps every read
    /// is performed by its lane and deferred, and growing the list when a pass first saw more
    /// of them was an allocation in the middle of a run.
    pub fn with_lanes(lanes: usize) -> Self {
        Pass {
            deferred: RefCell::new(Vec::with_capacity(lanes)),
            ..Pass::default()
        }
    }

    /// The stamp of a read the driver completed: the pass's (taken now if this is the first).
    #[inline]
    pub fn completed(&self, clock: &RunClock) -> u64 {
        let t = match self.stamp.get() {
            Some(t) => t,
            None => {
                let t = clock.now_ns();
                self.stamp.set(Some(t));
                t
            }
        };
        self.item(t);
        t
    }

    /// The pass's stamp (taken now if this is the first) for a completion the driver
    /// returned that is not a work item of its own: a request's last write (its send was
    /// the item).
    #[inline]
    pub fn stamp(&self, clock: &RunClock) -> u64 {
        match self.stamp.get() {
            Some(t) => t,
            None => {
                let t = clock.now_ns();
                self.stamp.set(Some(t));
                // The end of the pass forgets the stamp.
                self.wake_tail();
                t
            }
        }
    }

    /// A send stamped at `t` (its `sent_ns`): a work item of this pass.
    #[inline]
    pub fn sent(&self, t: u64) {
        self.item(t);
    }

    /// One work item whose stamp is `t`; wakes the end-of-pass task, which closes the sample.
    #[inline]
    fn item(&self, t: u64) {
        if self.began.get().is_none() {
            self.began.set(Some(t));
        }
        self.items.set(self.items.get().saturating_add(1));
        self.wake_tail();
    }

    /// The stamp of a read the lane performed itself: now, returned once every other task
    /// queued in this pass has run (so its reads are stamped before this lane parses).
    pub async fn performed(&self, clock: &RunClock) -> u64 {
        let t = clock.now_ns();
        let mut queued = false;
        poll_fn(|cx| {
            if queued {
                return Poll::Ready(());
            }
            queued = true;
            self.deferred.borrow_mut().push(cx.waker().clone());
            self.item(t);
            Poll::Pending
        })
        .await;
        t
    }

    /// Asks for the end-of-pass task to run once the tasks queued now have run.
    #[inline]
    pub fn wake_tail(&self) {
        if self.due.replace(true) {
            return;
        }
        if let Some(w) = self.tail.take() {
            w.wake();
        }
    }

    /// The worker is done: the end-of-pass task returns after one last pass.
    pub fn close(&self) {
        self.closed.set(true);
        if let Some(w) = self.tail.take() {
            w.wake();
        }
    }

    /// The end-of-pass task's wait: true at the end of a pass that had work, false once
    /// closed.
    async fn next_end(&self) -> bool {
        poll_fn(|cx| {
            if self.due.replace(false) {
                return Poll::Ready(true);
            }
            if self.closed.get() {
                return Poll::Ready(false);
            }
            self.tail.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }

    /// Ends the pass's stamps: the next completed read takes a new one, and the deferred
    /// lanes go on (queued behind everything, in the order they read). Returns the pass's
    /// sample; the next item begins a new one.
    fn end(&self) -> Sample {
        self.stamp.set(None);
        let mut deferred = self.deferred.borrow_mut();
        for w in deferred.drain(..) {
            w.wake();
        }
        Sample {
            began: self.began.take(),
            items: self.items.replace(0),
        }
    }
}

/// The end-of-pass task: at the end of every pass that stamped a read or a send or emitted a
/// record, ends the pass's stamps and runs `at_end` with the pass's sample (the worker hands
/// the pass's records to the collector there and closes the sample). Returns when `pass` is
/// closed.
pub async fn tail(pass: &Pass, mut at_end: impl FnMut(Sample)) {
    while pass.next_end().await {
        let sample = pass.end();
        at_end(sample);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::IoDriver;
    use crate::rt::driver::{block_on, DriverUsed, Ring};
    use std::rc::Rc;

    /// Busy work standing for a lane's parsing.
    fn parse_for(clock: &RunClock, ns: u64) {
        let until = clock.now_ns() + ns;
        while clock.now_ns() < until {
            std::hint::spin_loop();
        }
    }

    /// `LANES` loopback connections whose replies are all written before the runtime next
    /// enters the driver, so one pass returns every read; each lane stamps its read as the
    /// worker does and then "parses" for `PARSE_NS`. Returns the spread of the stamps (last −
    /// first) and the driver. Before this module, each lane's stamp came after the parsing of
    /// the lanes ahead of it: a spread of (LANES − 1) × PARSE_NS.
    fn spread_of_one_pass(driver: IoDriver) -> (u64, DriverUsed) {
        use monoio::io::AsyncReadRent;
        const LANES: usize = 16;
        const PARSE_NS: u64 = 200_000;
        let (used, spread) = block_on(driver, Ring::Sleeping, || async {
            let clock = RunClock::start();
            let pass = Rc::new(Pass::default());
            let uring = crate::rt::driver::current() == Some(DriverUsed::IoUring);
            let tail_task = {
                let pass = pass.clone();
                monoio::spawn(async move { tail(&pass, |_| {}).await })
            };
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let stamps = Rc::new(RefCell::new(Vec::new()));
            let mut servers = vec![];
            let mut lanes = vec![];
            for _ in 0..LANES {
                let mut client = monoio::net::TcpStream::connect_addr(addr).await.unwrap();
                servers.push(listener.accept().unwrap().0);
                let (pass, stamps) = (pass.clone(), stamps.clone());
                lanes.push(monoio::spawn(async move {
                    let (res, _buf) = client.read(Vec::with_capacity(64)).await;
                    assert_eq!(res.unwrap(), 1);
                    let at = match uring {
                        true => pass.completed(&clock),
                        false => pass.performed(&clock).await,
                    };
                    parse_for(&clock, PARSE_NS);
                    stamps.borrow_mut().push(at);
                }));
            }
            // Every lane waits in its read: let them all start, then answer all at once.
            monoio::time::sleep(std::time::Duration::from_millis(5)).await;
            for s in &mut servers {
                std::io::Write::write_all(s, b"x").unwrap();
            }
            for l in lanes {
                l.await;
            }
            pass.close();
            tail_task.await;
            let s = stamps.borrow();
            s.iter().max().unwrap() - s.iter().min().unwrap()
        })
        .expect("a runtime");
        (spread, used)
    }

    #[test]
    fn reads_returned_by_one_pass_are_stamped_before_any_lane_parses() {
        for driver in [IoDriver::Auto, IoDriver::Epoll] {
            let (spread, used) = spread_of_one_pass(driver);
            // Stamped after the lanes ahead parsed, the spread would be 15 × 200 µs = 3 ms;
            // the bound leaves room for a preempted test thread on a shared machine.
            assert!(
                spread < 200_000,
                "{}: stamps of one pass spread over {spread} ns",
                used.name()
            );
        }
    }

    #[test]
    fn the_pass_stamp_is_shared_until_the_pass_ends() {
        block_on(IoDriver::Epoll, Ring::Sleeping, || async {
            let clock = RunClock::start();
            let pass = Rc::new(Pass::default());
            let p = pass.clone();
            let ends = Rc::new(RefCell::new(Vec::new()));
            let e = ends.clone();
            let tail_task =
                monoio::spawn(async move { tail(&p, |s| e.borrow_mut().push(s)).await });
            let a = pass.completed(&clock);
            parse_for(&clock, 1_000);
            assert_eq!(pass.completed(&clock), a, "the same pass, the same stamp");
            // Let the end-of-pass task run.
            monoio::time::sleep(std::time::Duration::from_millis(2)).await;
            let first = Sample {
                began: Some(a),
                items: 2,
            };
            assert_eq!(
                *ends.borrow(),
                [first],
                "one end for the pass, two reads in it"
            );
            let b = pass.completed(&clock);
            assert!(b > a, "a new pass takes a new stamp");
            pass.sent(b + 5);
            pass.close();
            tail_task.await;
            let second = Sample {
                began: Some(b),
                items: 2,
            };
            assert_eq!(
                *ends.borrow(),
                [first, second],
                "the second pass (a read, then a send) ends before the task returns"
            );
        })
        .expect("a runtime");
    }
}
