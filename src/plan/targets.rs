//! Part of the plan (a leaf): several servers behind one benchmark (`--url` repeated,
//! `--url-file`, `--url-policy`) — which server each request (or each conversation) goes to.
//! Round-robin and random are pure functions of the run's seed and the request's id, so the
//! same plan sends the same request to the same server on any number of workers or shards;
//! least-in-flight reads the worker's own counts, which only the worker holds. No I/O, no
//! clock.

use super::workload::splitmix64;
use serde::{Deserialize, Serialize};

/// Most servers one run sends to (each is a connection pool per worker and a row of the
/// summary's `endpoints`).
pub const MAX_TARGETS: usize = 64;

/// How requests are spread over several `--url`s (`--url-policy`). A conversation's turns all
/// go where its first turn went (`x-session-id` names it for a session-aware router).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum UrlPolicy {
    /// Request (or session) `i` of the run's schedule goes to server `i mod N`: each gets
    /// exactly its share, the way a round-robin load balancer deals. A shard deals its own
    /// requests in turn (`i / shards mod N`), so each shard reaches every server.
    #[default]
    RoundRobin,
    /// Each request to a server drawn from the seed and its id, uniformly.
    Random,
    /// Each request (or session) to the server with the fewest of the worker's own requests
    /// (sessions) in flight; a tie goes round-robin (request `i` looks from server `i mod N`
    /// on), as nginx's `least_conn` does, so a light load is still spread. Workers share
    /// nothing, so this is per worker: across W workers the servers' loads can differ by up
    /// to W − 1 more.
    LeastInFlight,
}

/// Mixed into the seed so the draw never follows the schedule's, prompts' or cancels' draws.
const RANDOM_TAG: u64 = 0x7a26_e75e_1ec7_0001;

impl UrlPolicy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [UrlPolicy; 3] = [
        UrlPolicy::RoundRobin,
        UrlPolicy::Random,
        UrlPolicy::LeastInFlight,
    ];

    /// The policy as `--url-policy` spells it.
    pub fn name(self) -> &'static str {
        match self {
            UrlPolicy::RoundRobin => "round-robin",
            UrlPolicy::Random => "random",
            UrlPolicy::LeastInFlight => "least-in-flight",
        }
    }

    /// The server (of `n`) request or session `id` of a run seeded `seed` and split into
    /// `shards` goes to; `None` for `LeastInFlight`, which the worker decides from its counts
    /// (`least`).
    pub fn pick(self, seed: u64, id: u64, shards: u32, n: usize) -> Option<usize> {
        let n = n.max(1) as u64;
        match self {
            UrlPolicy::RoundRobin => Some((id / u64::from(shards.max(1)) % n) as usize),
            UrlPolicy::Random => {
                let draw = splitmix64(seed ^ RANDOM_TAG ^ splitmix64(id));
                // Lemire's multiply-shift: uniform over n without a modulo's bias.
                Some(((u128::from(draw) * u128::from(n)) >> 64) as usize)
            }
            UrlPolicy::LeastInFlight => None,
        }
    }
}

/// The index of the smallest of `in_flight` (`LeastInFlight`), looking from `from mod N`
/// on and wrapping: the first of the smallest from there; 0 for none.
pub fn least(in_flight: &[u32], from: u64) -> usize {
    let n = in_flight.len();
    if n == 0 {
        return 0;
    }
    let start = (from % n as u64) as usize;
    let mut best = (start, u32::MAX);
    for k in 0..n {
        let i = (start + k) % n;
        if in_flight[i] < best.1 {
            best = (i, in_flight[i]);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(
        policy: UrlPolicy,
        ids: impl Iterator<Item = u64>,
        shards: u32,
        n: usize,
    ) -> Vec<u64> {
        let mut c = vec![0; n];
        for id in ids {
            c[policy.pick(42, id, shards, n).unwrap()] += 1;
        }
        c
    }

    #[test]
    fn round_robin_deals_exact_shares_to_every_server_from_every_shard() {
        assert_eq!(counts(UrlPolicy::RoundRobin, 0..3000, 1, 3), [1000; 3]);
        // Two shards, two servers: shard 0 holds the even ids, and still reaches both.
        let shard0 = (0..4000).filter(|i| i % 2 == 0);
        assert_eq!(counts(UrlPolicy::RoundRobin, shard0, 2, 2), [1000, 1000]);
        let shard1 = (0..4000).filter(|i| i % 2 == 1);
        assert_eq!(counts(UrlPolicy::RoundRobin, shard1, 2, 2), [1000, 1000]);
    }

    #[test]
    fn random_is_seeded_and_uniform_within_poisson_error() {
        let n = 4;
        let c = counts(UrlPolicy::Random, 0..40_000, 1, n);
        // 10,000 expected each; sd = sqrt(40,000 · 1/4 · 3/4) ≈ 87: 5 sd is 433.
        for k in c {
            assert!(k.abs_diff(10_000) < 433, "{k}");
        }
        let a: Vec<_> = (0..100)
            .map(|i| UrlPolicy::Random.pick(1, i, 1, 5))
            .collect();
        let b: Vec<_> = (0..100)
            .map(|i| UrlPolicy::Random.pick(1, i, 1, 5))
            .collect();
        let c: Vec<_> = (0..100)
            .map(|i| UrlPolicy::Random.pick(2, i, 1, 5))
            .collect();
        assert_eq!(a, b, "the same seed picks the same servers");
        assert_ne!(a, c, "another seed picks others");
        assert_eq!(UrlPolicy::LeastInFlight.pick(1, 7, 1, 5), None);
    }

    #[test]
    fn least_takes_the_smallest_and_deals_ties_in_turn() {
        assert_eq!(least(&[3, 1, 1, 2], 0), 1);
        assert_eq!(least(&[3, 1, 1, 2], 2), 2);
        assert_eq!(least(&[3, 1, 1, 2], 3), 1, "wraps round");
        assert_eq!(least(&[5, 4, 3], 1), 2);
        assert_eq!(least(&[], 7), 0);
        // All idle: request i goes to server i mod N, as round-robin would.
        let picks: Vec<usize> = (0..6).map(|i| least(&[0, 0, 0], i)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn every_policy_has_a_distinct_name_that_serde_spells_the_same() {
        for p in UrlPolicy::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
    }
}
