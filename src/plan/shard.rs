//! Part of the plan (a leaf): one shard of a run spread over several hosts (`--shard I/N`).
//! The global schedule the plan and seed define is the same on every shard; shard I keeps
//! exactly the arrivals i with i mod N = I, so the union of the shards is the single-host
//! arrival process. Counts split the same way (the first `total mod N` shards get one more),
//! which is how closed-loop users and a `--max-concurrency` cap are shared out. Also the
//! plan hash that `ringbench merge` uses to tell that shards belong to one run. Pure
//! arithmetic; no I/O, no clock.

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (`--shard I/N`). `count` 1 is the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
}

impl Shard {
    /// The whole run on one host.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// True when global arrival (or request id) `i` is this shard's.
    pub fn owns(self, i: u64) -> bool {
        i % u64::from(self.count.max(1)) == u64::from(self.index)
    }

    /// How many of the global indices `0..total` are this shard's: `total / N`, plus one for
    /// the first `total mod N` shards.
    pub fn share(self, total: u64) -> u64 {
        let n = u64::from(self.count.max(1));
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// This shard's share of a count of users or of a cap (at least 1 when `total` ≥ 1,
    /// so a shard is never left with a cap of 0 in flight).
    pub fn share_u32(self, total: u32) -> u32 {
        u32::try_from(self.share(u64::from(total))).unwrap_or(u32::MAX)
    }

    /// The global index of this shard's `local`-th arrival.
    pub fn global(self, local: u64) -> u64 {
        u64::from(self.index) + u64::from(self.count.max(1)) * local
    }

    /// `I/N`, as `--shard` takes it.
    pub fn label(self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// The settings that may differ between the shards of one run without changing what the
/// run is: where it runs and writes, which shard it is, its ids and nonce, how it paces.
/// Everything else in `config` must be equal for shards to merge.
const PER_SHARD_KEYS: [&str; 12] = [
    "shard",
    "out_dir",
    "cpus",
    "args",
    "run_id",
    "progress",
    "io_driver",
    "pacer_spin_ns",
    "allow_concurrent",
    "rx_timestamps",
    "vllm_result",
    "metrics_listen",
];

/// A hash of what defines a run (the serialized plan, `summary.json`'s `config`, without
/// `PER_SHARD_KEYS` and the prompt nonce), as 16 hex digits: shards of one run have the same.
/// FNV-1a over the canonical JSON (serde_json writes object keys sorted).
pub fn plan_hash(config: &serde_json::Value) -> String {
    let mut c = config.clone();
    if let Some(map) = c.as_object_mut() {
        for k in PER_SHARD_KEYS {
            map.remove(k);
        }
        if let Some(w) = map.get_mut("workload").and_then(|w| w.as_object_mut()) {
            w.remove("prompt_nonce");
        }
    }
    let text = serde_json::to_string(&c).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_index_once() {
        for count in 1..=7u32 {
            for total in 0..=40u64 {
                let mut seen = vec![0u32; total as usize];
                let mut sum = 0;
                for index in 0..count {
                    let s = Shard { index, count };
                    let mine: Vec<u64> = (0..total).filter(|&i| s.owns(i)).collect();
                    assert_eq!(mine.len() as u64, s.share(total), "{count} {total} {index}");
                    for (local, &i) in mine.iter().enumerate() {
                        assert_eq!(s.global(local as u64), i);
                        seen[i as usize] += 1;
                    }
                    sum += s.share(total);
                }
                assert_eq!(sum, total);
                assert!(seen.iter().all(|&n| n == 1));
            }
        }
    }

    #[test]
    fn users_split_with_the_first_shards_taking_one_more() {
        let split: Vec<u32> = (0..3)
            .map(|index| Shard { index, count: 3 }.share_u32(8))
            .collect();
        assert_eq!(split, [3, 3, 2]);
    }

    #[test]
    fn the_plan_hash_ignores_per_shard_keys_but_not_the_seed() {
        let a = serde_json::json!({"seed": 1, "shard": {"index": 0, "count": 2},
            "out_dir": "/a", "workload": {"prompt_nonce": 5, "x": 1}});
        let b = serde_json::json!({"seed": 1, "shard": {"index": 1, "count": 2},
            "out_dir": "/b", "workload": {"prompt_nonce": 9, "x": 1}});
        let c = serde_json::json!({"seed": 2, "shard": {"index": 1, "count": 2},
            "out_dir": "/b", "workload": {"prompt_nonce": 9, "x": 1}});
        assert_eq!(plan_hash(&a), plan_hash(&b));
        assert_ne!(plan_hash(&a), plan_hash(&c));
        assert_eq!(plan_hash(&a).len(), 16);
    }
}
