//! Part of the worker's pacer (schedule → **worker** → http → …): how long before a deadline
//! the pacer stops sleeping and spins through the driver instead. A timer wake-up arrives
//! late by an amount the machine decides (tens of µs in a VM, where the interrupt is
//! injected and the vCPU has to leave halt; a few µs on bare metal). Spinning for that long
//! before each deadline turns the lateness into a spin, at the price of the spin's CPU.
//!
//! `auto` learns the budget: the 95th percentile of the timer's own lateness over the last
//! `WINDOW` wake-ups, plus a margin, within `[MIN_NS, MAX_NS]`, and at most `GAP_SHARE` of
//! the worker's mean gap between arrivals.
//!
//! Above 10,000 arrivals/s per worker (`MIN_GAP_NS`) `auto` *polls*: it spins through every
//! gap shorter than `POLL_NS` and the worker's core never goes idle between sends. Why: on
//! this VM each wake-up costs the worker ~15–22 µs of its own CPU (measured with a timerfd
//! armed in the past: 15 µs per arm and fire; a sleep-and-wake cycle 22 µs at any gap), and
//! every response that lands while the core is idle costs another (a wake-up IPI). At
//! 20,000/s that was ~0.8 interrupts per request, more than half the worker's CPU. Polling
//! does the same work for ~16 µs per request and sends within a few µs of each deadline, at
//! the price of a busy core; the idle share of it is measured (see `Pacer`) and reported
//! apart, so the saturation verdict and the "busy" CPU figures leave it out.
//!
//! (An earlier note here said a spin at 20,000/s collapsed runs. Those runs were made under
//! `chrt -f`: a real-time thread that never sleeps is throttled by the kernel for 50 ms of
//! every second (`sched_rt_runtime_us`), which was the collapse. Without it, two 10 s runs
//! polling at 30,000/s had lag p99 42 and 450 µs.) Fixed state, no allocation.

/// Wake-ups per re-estimate.
const WINDOW: usize = 256;
/// Spin until the first window is in.
const START_NS: u64 = 50_000;
/// Added to the estimate: a wake-up's own cost after the lateness is measured.
const MARGIN_NS: u64 = 10_000;
const MIN_NS: u64 = 5_000;
/// Longest spin before a send (`plan::MAX_SPIN_NS`, which `--pacer-spin-us` is checked against).
pub const MAX_NS: u64 = crate::plan::MAX_SPIN_NS;
/// The most of a mean gap `auto` spends spinning.
const GAP_SHARE: f64 = 0.3;
/// Under this mean gap (above 10,000/s per worker) `auto` polls.
const MIN_GAP_NS: f64 = 100_000.0;
/// When polling, gaps shorter than this are spun through; a longer one (rare at these rates:
/// e^-10 at 10,000/s) sleeps until this long before its deadline.
pub const POLL_NS: u64 = 1_000_000;

/// Whether a worker with this budget setting and mean gap spins through most gaps (polls)
/// rather than sleeping in them: `auto` above 10,000/s, or a fixed budget as long as the gap.
pub fn polls(fixed_ns: Option<u64>, mean_gap_ns: Option<f64>) -> bool {
    match (fixed_ns, mean_gap_ns) {
        (None, Some(g)) => g < MIN_GAP_NS,
        (Some(spin), Some(g)) => spin as f64 >= g,
        (_, None) => false,
    }
}

/// The spin budget: fixed, or learned from the timer's lateness.
#[derive(Clone, Debug)]
pub struct SpinBudget {
    fixed: Option<u64>,
    /// `GAP_SHARE` of the mean gap between this worker's arrivals (open loop).
    cap_ns: u64,
    current_ns: u64,
    late_ns: [u32; WINDOW],
    n: usize,
}

impl SpinBudget {
    /// `fixed_ns`: `Some(n)` spins exactly n ns before each deadline (0: never spin);
    /// `None` learns the budget, or polls above 10,000/s. `mean_gap_ns`: between this
    /// worker's arrivals, if known.
    pub fn new(fixed_ns: Option<u64>, mean_gap_ns: Option<f64>) -> Self {
        let auto_polls = fixed_ns.is_none() && polls(None, mean_gap_ns);
        let fixed_ns = fixed_ns.or(auto_polls.then_some(POLL_NS));
        let cap_ns = match mean_gap_ns {
            None => MAX_NS,
            Some(g) => (g * GAP_SHARE) as u64,
        };
        SpinBudget {
            fixed: fixed_ns,
            cap_ns,
            current_ns: fixed_ns.unwrap_or(START_NS.min(cap_ns)),
            late_ns: [0; WINDOW],
            n: 0,
        }
    }

    pub fn ns(&self) -> u64 {
        self.current_ns
    }

    /// A timer wake-up `late_ns` after the time it was armed for.
    pub fn observe(&mut self, late_ns: u64) {
        if self.fixed.is_some() {
            return;
        }
        self.late_ns[self.n] = late_ns.min(u32::MAX as u64) as u32;
        self.n += 1;
        if self.n == WINDOW {
            self.n = 0;
            let mut w = self.late_ns;
            let k = WINDOW * 95 / 100;
            let (_, p95, _) = w.select_nth_unstable(k);
            let learned = (u64::from(*p95) + MARGIN_NS).clamp(MIN_NS, MAX_NS);
            self.current_ns = learned.min(self.cap_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_budget_never_moves() {
        let mut b = SpinBudget::new(Some(0), None);
        for _ in 0..1000 {
            b.observe(80_000);
        }
        assert_eq!(b.ns(), 0);
    }

    #[test]
    fn auto_budget_follows_the_95th_percentile_of_lateness() {
        let mut b = SpinBudget::new(None, None);
        assert_eq!(b.ns(), START_NS);
        // 90% of wake-ups 20 µs late, 10% 60 µs: p95 is 60 µs.
        for i in 0..WINDOW {
            b.observe(if i % 10 == 0 { 60_000 } else { 20_000 });
        }
        assert_eq!(b.ns(), 60_000 + MARGIN_NS);
        // A quiet machine: 2 µs late, the floor applies.
        for _ in 0..WINDOW {
            b.observe(2_000);
        }
        assert_eq!(b.ns(), MIN_NS.max(2_000 + MARGIN_NS));
        // Preemption (ms late) is capped, not chased.
        for _ in 0..WINDOW {
            b.observe(5_000_000);
        }
        assert_eq!(b.ns(), MAX_NS);
    }

    #[test]
    fn auto_budget_spends_at_most_a_share_of_the_gap() {
        // 5,000/s on one worker: 200 µs gaps, at most 60 µs of spin however late timers are.
        let mut b = SpinBudget::new(None, Some(200_000.0));
        assert_eq!(b.ns(), START_NS);
        for _ in 0..WINDOW {
            b.observe(150_000);
        }
        assert_eq!(b.ns(), 60_000);
        // 10,000/s: still learned, capped.
        let mut b = SpinBudget::new(None, Some(100_000.0));
        for _ in 0..WINDOW {
            b.observe(80_000);
        }
        assert_eq!(b.ns(), 30_000);
        // A fixed budget is what was asked, cap or not.
        assert_eq!(SpinBudget::new(Some(40_000), Some(50_000.0)).ns(), 40_000);
    }

    #[test]
    fn auto_polls_above_ten_thousand_per_second() {
        // 20,000/s: every gap under POLL_NS is spun through, whatever the timer does.
        let mut b = SpinBudget::new(None, Some(50_000.0));
        assert_eq!(b.ns(), POLL_NS);
        for _ in 0..WINDOW {
            b.observe(2_000);
        }
        assert_eq!(b.ns(), POLL_NS);
        // An explicit budget wins, including 0.
        assert_eq!(SpinBudget::new(Some(0), Some(50_000.0)).ns(), 0);
        // No known rate (closed loop): learned as before.
        assert_eq!(SpinBudget::new(None, None).ns(), START_NS);
        assert!(polls(None, Some(50_000.0)));
        assert!(!polls(None, Some(100_000.0)));
        assert!(!polls(None, None));
        assert!(polls(Some(200_000), Some(50_000.0)));
        assert!(!polls(Some(20_000), Some(50_000.0)));
    }

    #[test]
    fn a_partial_window_keeps_the_previous_budget() {
        let mut b = SpinBudget::new(None, None);
        for _ in 0..WINDOW - 1 {
            b.observe(1_000);
        }
        assert_eq!(b.ns(), START_NS);
    }
}
