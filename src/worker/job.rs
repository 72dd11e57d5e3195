//! Part of the worker (schedule → **worker** → http → …): what a lane hands down to the
//! connection (`conn`) and the conversation (`session`) it runs: the job (which request, due
//! when, to which server), and the gate that bounds connects in progress, whose place a new
//! lane's connection holds until its first connect ends. It sits below `lane`, `session` and
//! `conn`, which all import it and which it imports none of, so imports inside `worker/` run
//! one way: lane → session → conn → job. Never prints.

use std::cell::Cell;
use std::rc::Rc;
use std::task::Waker;

/// One request to send: the arrival (or, with `--turns`, the session) `id`, due at
/// `intended_ns` on the run clock.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    pub id: u64,
    pub intended_ns: u64,
    /// The server it goes to (`Ctx::route`): an index of the plan's targets.
    pub to: usize,
}

/// Connections a worker may be opening at once. Past this an arrival that needs a new lane
/// waits (and the wait shows as scheduling lag) instead of opening yet another one: a
/// server slow to accept otherwise gets a storm of connects from an open loop, each new
/// connect costs the client more (the kernel's ephemeral-port search, measured at 80% of
/// the worker's CPU with ~20k lanes) and the server's full accept queue drops the SYNs,
/// which retry for seconds: a collapse caused by the client, not the load. On loopback a
/// connect takes ~50 µs, so 256 at once is never the limit of a healthy run.
pub const MAX_CONNECTING: usize = 256;

/// Counts connections being opened on this worker; the open loop's dispatcher waits on it.
#[derive(Default)]
pub struct ConnectGate {
    pending: Cell<usize>,
    waiter: Cell<Option<Waker>>,
}

impl ConnectGate {
    /// Counts one connect until the guard drops (done, failed, or abandoned mid-way).
    pub fn enter(self: &Rc<Self>) -> ConnectGuard {
        self.pending.set(self.pending.get() + 1);
        ConnectGuard(self.clone())
    }

    pub fn is_full(&self) -> bool {
        self.pending.get() >= MAX_CONNECTING
    }

    /// `waker` is woken when the next connect ends (one waiter: the dispatcher).
    pub fn wake_on_leave(&self, waker: &Waker) {
        self.waiter.set(Some(waker.clone()));
    }
}

pub struct ConnectGuard(Rc<ConnectGate>);

impl Drop for ConnectGuard {
    fn drop(&mut self) {
        self.0.pending.set(self.0.pending.get() - 1);
        if let Some(w) = self.0.waiter.take() {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// A waker that counts its wakes.
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_connect_gate_fills_at_its_bound_and_a_guard_gives_its_place_back() {
        let gate = Rc::new(ConnectGate::default());
        let mut guards: Vec<ConnectGuard> = (0..MAX_CONNECTING - 1).map(|_| gate.enter()).collect();
        assert!(!gate.is_full());
        guards.push(gate.enter());
        assert!(gate.is_full());
        let woken = Arc::new(Counting(AtomicUsize::new(0)));
        gate.wake_on_leave(&Waker::from(woken.clone()));
        drop(guards.pop());
        assert!(!gate.is_full());
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            1,
            "the waiting dispatcher is woken"
        );
        drop(guards);
        assert_eq!(gate.pending.get(), 0);
    }
}
