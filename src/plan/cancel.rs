//! Part of the plan (a leaf): client-side cancellations (`--cancel-rate P --cancel-after
//! SPEC`) — which requests the client aborts, as a browser tab closed mid-answer does, and
//! when. Which ones is a pure function of the run's seed and the request's id, so the same
//! plan cancels the same requests on any number of workers or shards.
//!
//! Exact share, not dice: request `id` is aborted when the golden-ratio (Weyl) sequence's
//! `id`-th point, shifted by the seed, falls below the rate. Its points are equidistributed
//! on any run of ids and on any stride of them (a worker's or a shard's share), so 600
//! requests at 0.3 abort 180 ± 1, where independent coin flips would abort 180 ± 11 (1 sd):
//! the figures then measure the server's handling of aborts, not the luck of the draw — the
//! schedule's own exact-count rule. No I/O, no clock.

use super::workload::splitmix64;
use serde::{Deserialize, Serialize};

/// Mixed into the seed so the choice never follows the schedule's or the prompts' draws.
const CANCEL_TAG: u64 = 0xca9c_e11e_d000_0001;

/// A share of the requests the client aborts by closing their connection.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CancelSpec {
    /// The share of requests aborted, in (0, 1] (`--cancel-rate`).
    pub rate: f64,
    /// When (`--cancel-after`).
    pub after: CancelAfter,
}

/// When an aborted request is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CancelAfter {
    /// This long after the request was written (`D`, e.g. `500ms`).
    Time {
        /// ns after `sent_ns`.
        ns: u64,
    },
    /// Once this many generated tokens arrived (`tokens:N`); a response with fewer ends
    /// whole.
    Tokens {
        /// Tokens received.
        n: u32,
    },
}

impl CancelSpec {
    /// Whether request `id` of a run seeded `seed` is one the client aborts.
    pub fn cancels(&self, seed: u64, id: u64) -> bool {
        /// 2^64 / φ: the step of the golden-ratio sequence in 64-bit fixed point.
        const STEP: u64 = 0x9e37_79b9_7f4a_7c15;
        let point = splitmix64(seed ^ CANCEL_TAG).wrapping_add(id.wrapping_mul(STEP));
        // The point's top 53 bits as a fraction in [0, 1).
        ((point >> 11) as f64) < self.rate * (1u64 << 53) as f64
    }

    /// The spec as `--cancel-after` spells it.
    pub fn after_label(&self) -> String {
        match self.after {
            CancelAfter::Time { ns } => format!("{}ms", ns as f64 / 1e6),
            CancelAfter::Tokens { n } => format!("tokens:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_cancelled_is_the_rate_on_every_run_and_stride_of_ids() {
        let spec = CancelSpec {
            rate: 0.3,
            after: CancelAfter::Tokens { n: 2 },
        };
        let share = |ids: &mut dyn Iterator<Item = u64>, seed| {
            let (mut n, mut hit) = (0, 0);
            for id in ids {
                n += 1;
                hit += u32::from(spec.cancels(seed, id));
            }
            f64::from(hit) / f64::from(n)
        };
        for seed in 0..20 {
            // Independent draws would stray by 1.9 points (1 sd) over 600.
            let s = share(&mut (0..600), seed);
            assert!((s - 0.3).abs() <= 0.005, "seed {seed}: {s}");
            for start in [0u64, 1_000, 123_456] {
                let s = share(&mut (start..start + 1000), seed);
                assert!((s - 0.3).abs() <= 0.004, "seed {seed} from {start}: {s}");
            }
            for stride in 2..8u64 {
                let s = share(&mut (0..4000).map(|i| i * stride + 1), seed);
                assert!((s - 0.3).abs() <= 0.01, "seed {seed} stride {stride}: {s}");
            }
        }
        let same = (0..1000).all(|id| spec.cancels(7, id) == spec.cancels(7, id));
        let other = (0..1000)
            .filter(|&id| spec.cancels(7, id) != spec.cancels(8, id))
            .count();
        assert!(same && other > 100, "another seed, another choice: {other}");
        let all = CancelSpec { rate: 1.0, ..spec };
        assert!((0..1000).all(|id| all.cancels(3, id)));
    }
}
