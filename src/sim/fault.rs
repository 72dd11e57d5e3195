//! Fault injection for the simulator (server side; the client flow schedule → worker → http
//! → sse → extract → record → collector → report is what has to survive these). This file
//! holds only the names, the `KIND:PROB` syntax and the seeded draw; how each fault is
//! served lives in `conn/faulty.rs`. It may not touch sockets or clocks, and a draw may not
//! allocate (it runs once per request on the simulator's thread).
//!
//! Each request (each accepted connection, for `refuse`) draws one uniform number from a
//! per-thread xorshift generator seeded by `--fault-seed` and the thread index, and takes the
//! first fault whose cumulative probability covers it: at most one fault per request, and the
//! same seed gives the same faults on a single-threaded simulator.

use crate::plan::sim::FaultConfig;
use crate::plan::sim::FaultKind;
use std::cell::Cell;

/// One thread's generator (xorshift64*): no allocation, no lock.
pub(crate) struct FaultDraw {
    state: Cell<u64>,
}

impl FaultDraw {
    pub(crate) fn new(seed: u64, thread: u64) -> Self {
        // splitmix64 of (seed, thread) so that seeds 0 and 1 do not start alike.
        let mut z = seed ^ thread.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        FaultDraw {
            state: Cell::new(z | 1),
        }
    }

    fn uniform(&self) -> f64 {
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The fault for the next request (`per_connection == false`) or connection.
    /// `stop_reading` is drawn apart, when a request's head arrives (`stops_reading`).
    pub(crate) fn pick(&self, cfg: &FaultConfig, per_connection: bool) -> Option<FaultKind> {
        let ours =
            |k: FaultKind| k.per_connection() == per_connection && k != FaultKind::StopReading;
        if !cfg.faults.iter().any(|f| ours(f.kind)) {
            return None;
        }
        let u = self.uniform();
        let mut acc = 0.0;
        for f in &cfg.faults {
            if !ours(f.kind) {
                continue;
            }
            acc += f.prob;
            if u < acc {
                return Some(f.kind);
            }
        }
        None
    }

    /// Whether the request whose head just arrived without its whole body gets
    /// `stop_reading` (no draw when the fault is not asked for).
    pub(crate) fn stops_reading(&self, cfg: &FaultConfig) -> bool {
        cfg.faults
            .iter()
            .find(|f| f.kind == FaultKind::StopReading)
            .is_some_and(|f| self.uniform() < f.prob)
    }

    /// A fair coin (which way an error event ends).
    pub(crate) fn coin(&self) -> bool {
        self.uniform() < 0.5
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sim::{check_faults, FaultSpec};

    #[test]
    fn lists_are_checked_and_draws_follow_the_probabilities() {
        let f = |s: &str| s.parse::<FaultSpec>().unwrap();
        assert!(check_faults(&[f("http_500:0.6"), f("http_503:0.6")]).is_err());
        assert!(check_faults(&[f("http_500:0.1"), f("http_500:0.1")]).is_err());
        assert!(check_faults(&[f("http_500:0.6"), f("refuse:0.6")]).is_ok());
        let cfg = FaultConfig {
            faults: vec![f("http_500:0.2"), f("bad_json:0.3"), f("refuse:0.5")],
            ..FaultConfig::default()
        };
        let draw = FaultDraw::new(7, 0);
        let (mut h, mut b, mut none) = (0, 0, 0);
        for _ in 0..100_000 {
            match draw.pick(&cfg, false) {
                Some(FaultKind::Http500) => h += 1,
                Some(FaultKind::BadJson) => b += 1,
                None => none += 1,
                Some(k) => panic!("{k:?} is per connection"),
            }
        }
        assert!((19_000..21_000).contains(&h), "{h}");
        assert!((29_000..31_000).contains(&b), "{b}");
        assert!((49_000..51_000).contains(&none), "{none}");
        let again = FaultDraw::new(7, 0);
        let first: Vec<_> = (0..50).map(|_| again.pick(&cfg, false)).collect();
        let same = FaultDraw::new(7, 0);
        assert_eq!(
            first,
            (0..50).map(|_| same.pick(&cfg, false)).collect::<Vec<_>>()
        );
    }
}
