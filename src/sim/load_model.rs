//! The simulator's optional load model (server side; no client module may depend on it):
//! time to first token and inter-token delay that grow with the number of requests in
//! flight, so a sweep against the simulator has a knee and an SLO crossing to find.
//!
//! A request that arrives when `n` requests are in flight (itself included) gets
//! `ttft + ttft_per_inflight·(n − 1)` and `itl + itl_per_inflight·(n − 1)`, fixed for its
//! whole response. In a closed loop of `c` users `n ≈ c`, so E2E grows linearly with `c`
//! and throughput `c / E2E(c)` saturates at `1 / (ttft_per_inflight + (osl − 1)·itl_per_inflight)`:
//! a server that runs out of capacity. The count is shared by every simulator thread (one
//! atomic add per request, none per event); with both slopes at 0 nothing is counted.
//! It may not block and may not allocate.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Slopes of the load model, in nanoseconds per extra request in flight.
#[derive(Debug, Default)]
pub(crate) struct LoadModel {
    pub ttft_per_inflight_ns: u64,
    pub itl_per_inflight_ns: u64,
    in_flight: AtomicU64,
}

/// Holds one request's place in the in-flight count until it drops (response sent, or the
/// connection failed), so the count never leaks.
pub(crate) struct InFlight<'a> {
    model: Option<&'a LoadModel>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(m) = self.model {
            m.in_flight.fetch_sub(1, Relaxed);
        }
    }
}

impl LoadModel {
    pub(crate) fn new(ttft_per_inflight_ns: u64, itl_per_inflight_ns: u64) -> Self {
        Self {
            ttft_per_inflight_ns,
            itl_per_inflight_ns,
            in_flight: AtomicU64::new(0),
        }
    }

    fn enabled(&self) -> bool {
        self.ttft_per_inflight_ns != 0 || self.itl_per_inflight_ns != 0
    }

    /// Counts a request in and returns its (ttft, itl) given the base delays.
    pub(crate) fn admit(&self, ttft_ns: u64, itl_ns: u64) -> (u64, u64, InFlight<'_>) {
        if !self.enabled() {
            return (ttft_ns, itl_ns, InFlight { model: None });
        }
        let others = self.in_flight.fetch_add(1, Relaxed);
        let ttft = ttft_ns + self.ttft_per_inflight_ns * others;
        let itl = itl_ns + self.itl_per_inflight_ns * others;
        (ttft, itl, InFlight { model: Some(self) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_with_requests_in_flight_and_fall_back_when_they_end() {
        let m = LoadModel::new(1_000, 10);
        let (t0, i0, a) = m.admit(5_000, 100);
        assert_eq!((t0, i0), (5_000, 100));
        let (t1, i1, b) = m.admit(5_000, 100);
        assert_eq!((t1, i1), (6_000, 110));
        let (t2, _, c) = m.admit(5_000, 100);
        assert_eq!(t2, 7_000);
        drop((a, b));
        let (t3, _, _d) = m.admit(5_000, 100);
        assert_eq!(t3, 6_000, "one other still in flight");
        drop(c);
    }

    #[test]
    fn off_by_default_counts_nothing() {
        let m = LoadModel::default();
        let (_, _, a) = m.admit(1, 2);
        let (t, i, _b) = m.admit(1, 2);
        assert_eq!((t, i), (1, 2));
        drop(a);
        assert_eq!(m.in_flight.load(Relaxed), 0);
    }
}
