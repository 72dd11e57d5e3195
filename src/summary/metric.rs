//! Part of the summary (types only): the one list of the per-request distributions a run
//! reports (`docs/metrics.md`). One macro line per metric makes its `Metric` variant, its key in
//! `summary.json`'s `latency_ms` (the `Latency` field of the same name), its names for people
//! and what it takes part in; the collector, the console, the HTML report, the interval logs,
//! sweeps and SLOs all iterate `Metric::ALL`. Adding a metric is one line here and one arm
//! where the collector computes it from a record (`collector::sample`, which the compiler
//! holds to every variant).

use super::Stats;
use serde::{Deserialize, Serialize};

/// What a metric takes part in (bit flags, combined with `|`).
pub mod role {
    /// Only a streamed response has it (empty for `--no-stream`).
    pub const STREAM: u8 = 1;
    /// The console gives it a block of its own (vLLM's layout).
    pub const BLOCK: u8 = 2;
    /// The console gives it a row under "Other latencies".
    pub const ROW: u8 = 64;
    /// It has an HdrHistogram interval log (`ttft.hlog`, …).
    pub const HLOG: u8 = 4;
    /// `report.html` plots its distribution.
    pub const PLOT: u8 = 8;
    /// A sweep point carries its percentiles for the load curve.
    pub const CURVE: u8 = 16;
    /// `--slo METRIC:STAT<BOUND` may bound it.
    pub const SLO: u8 = 32;
    /// Each stage of a `--stages` run carries it (`stages[].latency_ms`).
    pub const STAGE: u8 = 128;
}

use role::{BLOCK, CURVE, HLOG, PLOT, ROW, SLO, STAGE, STREAM};

macro_rules! metrics {
    ($( $(#[$doc:meta])* $variant:ident $field:ident $name:literal $title:literal $roles:expr; )*) => {
        /// One per-request distribution of `docs/metrics.md`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Metric {
            $( $(#[$doc])* $variant, )*
        }

        impl Metric {
            /// Every metric, in `summary.json`'s order.
            pub const ALL: [Metric; [$(Metric::$variant),*].len()] = [$(Metric::$variant),*];

            /// Its key in `latency_ms` (and in `--slo`, file names, sweep curves).
            pub const fn key(self) -> &'static str {
                match self { $( Metric::$variant => stringify!($field), )* }
            }

            /// Its short name for people (`TTFT`).
            pub const fn name(self) -> &'static str {
                match self { $( Metric::$variant => $name, )* }
            }

            /// Its title for people (`Time to First Token`).
            pub const fn title(self) -> &'static str {
                match self { $( Metric::$variant => $title, )* }
            }

            const fn roles(self) -> u8 {
                match self { $( Metric::$variant => $roles, )* }
            }
        }

        /// The distributions of `docs/metrics.md`, in milliseconds, one field per `Metric` (its
        /// key). Latencies are over measured successful requests; the streaming-only ones are
        /// empty for `--no-stream`.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        pub struct Latency {
            $( $(#[$doc])* #[serde(default)] pub $field: Stats, )*
        }

        impl Latency {
            /// The distribution of `m`.
            pub fn get(&self, m: Metric) -> &Stats {
                match m { $( Metric::$variant => &self.$field, )* }
            }

            /// The distribution of `m`, to fill.
            pub fn get_mut(&mut self, m: Metric) -> &mut Stats {
                match m { $( Metric::$variant => &mut self.$field, )* }
            }
        }
    };
}

metrics! {
    /// Time to first token: first token-bearing event − send.
    Ttft ttft "TTFT" "Time to First Token" STREAM | BLOCK | HLOG | PLOT | CURVE | SLO | STAGE;
    /// Time to second token: the event that brought the request's second token − send (the
    /// first event's, when it carried two or more).
    Ttst ttst "TTST" "Time to Second Token" STREAM | ROW | SLO;
    /// Time to first non-reasoning output (differs from TTFT for reasoning models).
    Ttfo ttfo "TTFO" "TTFO (first non-reasoning output)" STREAM | ROW | SLO;
    /// Time to first visible output: the first output text that is not only white space
    /// (a chat UI shows nothing before it) − send.
    Ttfv ttfv "TTFV" "TTFV (first visible output)" STREAM | ROW | SLO;
    /// Time to the response head.
    Ttfb ttfb "TTFB" "TTFB (response head)" ROW | PLOT | SLO;
    /// (last token − first token) / (OSL − 1).
    Tpot tpot "TPOT" "Time per Output Token (excl. 1st token)" STREAM | BLOCK | HLOG | PLOT | SLO | STAGE;
    /// Every chunk gap of every successful request (vLLM's ITL list).
    Itl itl "ITL" "Inter-token Latency" STREAM | BLOCK | HLOG | PLOT | CURVE | SLO | STAGE;
    /// Done − send: the only latency a non-streamed request has.
    E2e e2e "E2E" "End-to-end Latency" BLOCK | HLOG | PLOT | CURVE | SLO | STAGE;
    /// E2E / OSL: per-token cost, queueing and prefill included.
    Ntpot ntpot "NTPOT" "NTPOT (E2E / OSL)" ROW | SLO;
    /// TTFT from the intended send time (queue-inclusive: no coordinated omission).
    TtftFromIntent ttft_from_intent "TTFT from intent" "TTFT from intended start" STREAM | ROW | PLOT | SLO | STAGE;
    /// E2E from the intended send time.
    E2eFromIntent e2e_from_intent "E2E from intent" "E2E from intended start" ROW | SLO;
    /// TTFT by the client's own stamp of the first token's read, where `ttft` has the
    /// kernel's receive stamp (`--rx-timestamps`); the difference is the client's wake-up
    /// and stamping time. Empty without kernel stamps.
    TtftUser ttft_user "TTFT (user)" "TTFT by the client's own read stamps" STREAM | ROW;
    /// ITL by the client's own read stamps (`--rx-timestamps`).
    ItlUser itl_user "ITL (user)" "ITL by the client's own read stamps" STREAM | ROW;
    /// E2E by the client's own stamp of the last read (`--rx-timestamps`).
    E2eUser e2e_user "E2E (user)" "E2E by the client's own read stamps" ROW;
    /// Largest chunk gap of each request.
    MaxStall max_stall "Max stall" "Max stall per request" STREAM | ROW | SLO;
    /// Per-token ITL: each chunk gap divided by the tokens it delivered, one sample per
    /// token (exact counts when the server streams cumulative usage, else an even split).
    ItlPerToken itl_per_token "ITL per token" "ITL per token" STREAM;
    /// Upload time: the request's first byte (send) to the completion of its last write. A
    /// large body (images, audio) leaves in many writes; the last one completes when the
    /// kernel took its last byte, which may still wait in the socket's send buffer.
    Upload upload "Upload" "Upload (first to last byte sent)" ROW;
    /// TTFT from the request's last byte (`upload`'s end) instead of its first: what the
    /// server took once it could have read the whole request. `ttft` is from the first byte.
    TtftFromUpload ttft_from_upload "TTFT from upload" "TTFT from the last byte sent" STREAM | ROW;
}

impl Metric {
    /// Only a streamed response has it.
    pub const fn streaming_only(self) -> bool {
        self.roles() & STREAM != 0
    }

    /// Whether it takes part in `role` (one of `role::*`).
    pub const fn has(self, role: u8) -> bool {
        self.roles() & role != 0
    }

    /// The metrics that take part in `role`, in `ALL`'s order.
    pub fn with(role: u8) -> impl Iterator<Item = Metric> {
        Metric::ALL.into_iter().filter(move |m| m.has(role))
    }

    /// The metric of a `latency_ms` key.
    pub fn from_key(key: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.key() == key)
    }
}

/// Indexes a per-metric array (`[T; Metric::ALL.len()]`) by metric.
impl Metric {
    /// Its position in `ALL`.
    pub const fn index(self) -> usize {
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_its_field_and_keys_round_trip() {
        let mut l = Latency::default();
        for (i, m) in Metric::ALL.into_iter().enumerate() {
            assert_eq!(m.index(), i);
            assert_eq!(Metric::from_key(m.key()), Some(m));
            l.get_mut(m).count = i as u64 + 1;
        }
        let v = serde_json::to_value(&l).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let want: Vec<&str> = Metric::ALL.iter().map(|m| m.key()).collect();
        // serde_json's map is sorted; the set of keys is what matters here.
        let (mut a, mut b) = (keys.clone(), want.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        for m in Metric::ALL {
            assert_eq!(v[m.key()]["count"], m.index() as u64 + 1);
        }
        let text = serde_json::to_string(&l).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap();
        assert!(
            Metric::ALL
                .windows(2)
                .all(|w| at(w[0].key()) < at(w[1].key())),
            "written in ALL's order"
        );
    }

    #[test]
    fn the_roles_are_the_ones_the_outputs_used() {
        let keys = |r| Metric::with(r).map(Metric::key).collect::<Vec<_>>();
        assert_eq!(keys(BLOCK), ["ttft", "tpot", "itl", "e2e"]);
        assert_eq!(keys(HLOG), ["ttft", "tpot", "itl", "e2e"]);
        assert_eq!(keys(CURVE), ["ttft", "itl", "e2e"]);
        // A stage is a point of a load curve: the curve's metrics, TPOT, and TTFT from
        // intent (a stage above capacity queues, which only the intended time shows).
        assert_eq!(
            keys(STAGE),
            ["ttft", "tpot", "itl", "e2e", "ttft_from_intent"]
        );
        assert_eq!(Metric::with(SLO).count(), 12);
        assert_eq!(
            keys(ROW),
            [
                "ttst",
                "ttfo",
                "ttfv",
                "ttfb",
                "ntpot",
                "ttft_from_intent",
                "e2e_from_intent",
                "ttft_user",
                "itl_user",
                "e2e_user",
                "max_stall",
                "upload",
                "ttft_from_upload"
            ]
        );
        assert_eq!(
            keys(PLOT),
            ["ttft", "ttfb", "tpot", "itl", "e2e", "ttft_from_intent"]
        );
        assert!(!Metric::ItlPerToken.has(SLO));
        let stream = keys(STREAM);
        assert_eq!(
            stream,
            [
                "ttft",
                "ttst",
                "ttfo",
                "ttfv",
                "tpot",
                "itl",
                "ttft_from_intent",
                "ttft_user",
                "itl_user",
                "max_stall",
                "itl_per_token",
                "ttft_from_upload"
            ]
        );
    }
}
