//! Part of stage 2 (worker): the closed loop's warm-up gate. A closed-loop run's measured
//! requests start only once every warm-up request has ended (as `vllm bench serve` runs its
//! warm-ups to the end before its benchmark), and once the collector has opened the measured
//! phase (after the server's metrics were scraped at that boundary, so the server's window
//! holds the measured requests and nothing of the warm-up). Open loop never waits here: its
//! schedule is fixed in advance. Only atomics; it touches a shared cache line only while
//! warm-up lasts (afterwards one read of a line nobody writes). It neither prints nor blocks a
//! thread: users wait by sleeping on their own runtime.

use crate::plan::{Load, Plan};
use std::sync::atomic::{AtomicU64, Ordering};

/// True when `plan`'s measured requests wait for its warm-up to drain: a closed loop with a
/// warm-up (by count or by duration).
pub fn drains(plan: &Plan) -> bool {
    matches!(plan.load, Load::Closed { .. })
        && (plan.warmup_requests > 0 || plan.warmup_duration_ns > 0)
}

/// `open_ns` while the measured phase is not open yet.
const CLOSED: u64 = u64::MAX;

/// The gate between a closed loop's warm-up and its measured requests.
#[derive(Debug)]
pub struct WarmupGate {
    /// Warm-up requests started and not yet ended, plus users between their check-in and
    /// knowing which phase their request is in.
    in_flight: AtomicU64,
    /// Run-clock ns at which the measured phase opened; `CLOSED` until then.
    open_ns: AtomicU64,
}

/// What `WarmupGate::enter` found for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// The gate is open (or was never shut): send at once.
    Open,
    /// A warm-up request: send at once, and call `WarmupGate::left` when it has ended.
    Warmup,
    /// A measured request before the phase opened: wait for `WarmupGate::open_ns`.
    Wait,
}

impl WarmupGate {
    /// A gate, shut when `shut` (a closed loop with a warm-up), else open from the start.
    pub fn new(shut: bool) -> Self {
        WarmupGate {
            in_flight: AtomicU64::new(0),
            open_ns: AtomicU64::new(if shut { CLOSED } else { 0 }),
        }
    }

    /// When the measured phase opened; `None` while it is shut.
    pub fn open_ns(&self) -> Option<u64> {
        let t = self.open_ns.load(Ordering::Acquire);
        (t != CLOSED).then_some(t)
    }

    /// A user about to claim a request id: `claim` claims it, `warmup` says (from the id and
    /// the time read after the claim) whether it is warm-up. The check-in happens before the
    /// claim and the clock read, so `drained` cannot miss a warm-up request about to start.
    pub fn enter<T>(
        &self,
        claim: impl FnOnce() -> T,
        warmup: impl FnOnce(&T) -> bool,
    ) -> (T, Entry) {
        if self.open_ns().is_some() {
            return (claim(), Entry::Open);
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let claimed = claim();
        if warmup(&claimed) {
            return (claimed, Entry::Warmup);
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        (claimed, Entry::Wait)
    }

    /// A warm-up request has ended (its record emitted).
    pub fn left(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// True when no warm-up request is running or can start any more. `over` says that no
    /// new request can be warm-up (every warm-up id claimed, the warm-up duration passed); it
    /// must be read before this call, so a user checking in after it finds `over` too.
    pub fn drained(&self, over: bool) -> bool {
        over && self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// Opens the measured phase at `now_ns`; waiting users go.
    pub fn open(&self, now_ns: u64) {
        self.open_ns
            .store(now_ns.min(CLOSED - 1), Ordering::Release);
    }

    /// Closed loop: whether `plan`'s `--duration` of measured requests has passed at `now_ns`
    /// (counted from the measured phase's opening, and not before the warm-up duration from
    /// `start_ns` ended; never while the gate is shut).
    pub fn past_duration(&self, plan: &Plan, start_ns: u64, now_ns: u64) -> bool {
        let Some(d) = plan.stop.duration_ns else {
            return false;
        };
        let from = match self.open_ns() {
            Some(t) => t.max(start_ns + plan.warmup_duration_ns),
            None => return false,
        };
        now_ns >= from.saturating_add(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn an_open_gate_never_counts_and_a_shut_one_counts_only_warmup() {
        let open = WarmupGate::new(false);
        assert_eq!(open.enter(|| 7u64, |_| true), (7, Entry::Open));
        assert_eq!(open.open_ns(), Some(0));
        let gate = WarmupGate::new(true);
        assert_eq!(gate.open_ns(), None);
        assert_eq!(gate.enter(|| 0u64, |id| *id < 2), (0, Entry::Warmup));
        assert_eq!(gate.enter(|| 1u64, |id| *id < 2), (1, Entry::Warmup));
        assert_eq!(gate.enter(|| 2u64, |id| *id < 2), (2, Entry::Wait));
        assert!(!gate.drained(true), "two warm-up requests still run");
        gate.left();
        assert!(!gate.drained(true));
        gate.left();
        assert!(!gate.drained(false), "warm-up is not over");
        assert!(gate.drained(true));
        gate.open(1_234);
        assert_eq!(gate.open_ns(), Some(1_234));
        assert_eq!(gate.enter(|| 3u64, |_| true), (3, Entry::Open));
    }

    /// Threads claim ids from one counter, the first `WARMUP` of them warm-up, while a checker
    /// opens the gate as soon as it finds it drained: no warm-up request may still be running
    /// when it opens, and every warm-up request must have started before.
    #[test]
    fn the_gate_never_opens_while_a_warmup_request_runs() {
        const WARMUP: u64 = 200;
        const TOTAL: u64 = 2_000;
        for _ in 0..20 {
            let gate = Arc::new(WarmupGate::new(true));
            let claimed = Arc::new(AtomicU64::new(0));
            let running = Arc::new(AtomicU64::new(0));
            let violated = Arc::new(AtomicBool::new(false));
            let users: Vec<_> = (0..4)
                .map(|_| {
                    let (gate, claimed, running, violated) = (
                        gate.clone(),
                        claimed.clone(),
                        running.clone(),
                        violated.clone(),
                    );
                    std::thread::spawn(move || loop {
                        let claim = || claimed.fetch_add(1, Ordering::SeqCst);
                        let (id, entry) = gate.enter(claim, |id| *id < WARMUP);
                        if id >= TOTAL {
                            if entry == Entry::Warmup {
                                gate.left();
                            }
                            break;
                        }
                        match entry {
                            Entry::Warmup => {
                                running.fetch_add(1, Ordering::SeqCst);
                                if gate.open_ns().is_some() {
                                    violated.store(true, Ordering::SeqCst);
                                }
                                std::hint::spin_loop();
                                running.fetch_sub(1, Ordering::SeqCst);
                                gate.left();
                            }
                            Entry::Wait => {
                                while gate.open_ns().is_none() {
                                    std::hint::spin_loop();
                                }
                            }
                            Entry::Open => {}
                        }
                    })
                })
                .collect();
            loop {
                let over = claimed.load(Ordering::SeqCst) >= WARMUP;
                if gate.drained(over) {
                    if running.load(Ordering::SeqCst) != 0 {
                        violated.store(true, Ordering::SeqCst);
                    }
                    gate.open(1);
                    break;
                }
                std::hint::spin_loop();
            }
            for u in users {
                u.join().unwrap();
            }
            assert!(!violated.load(Ordering::SeqCst));
        }
    }
}
