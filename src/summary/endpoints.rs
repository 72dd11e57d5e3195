//! Part of the summary (a leaf): `summary.json`'s `endpoints` block — with several `--url`s,
//! every server's own counts, throughput and latencies, from the records that went to it, so
//! a slow replica shows instead of vanishing into the run's percentiles. Only data; the
//! collector fills it.

use super::{Stats, Tally};
use serde::{Deserialize, Serialize};

/// One server's measured requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointRow {
    /// Its index in `config.targets` (and every record's `endpoint`).
    pub endpoint: u16,
    /// The URL as given.
    pub url: String,
    /// Its measured requests by how they ended (as the run's `counts`; `not_sent` is 0: a
    /// request never sent went to no server).
    #[serde(flatten)]
    pub tally: Tally,
    /// Its share of the measured requests sent, percent.
    pub share_percent: Option<f64>,
    /// Successful requests per second over the run's measured duration.
    pub requests_per_s: Option<f64>,
    /// Output tokens per second of its successful requests over the same duration.
    pub output_tokens_per_s: Option<f64>,
    /// TTFT of its successful requests, ms (streamed runs).
    pub ttft_ms: Stats,
    /// Chunk gaps of its successful requests, ms (streamed runs).
    pub itl_ms: Stats,
    /// E2E of its successful requests, ms.
    pub e2e_ms: Stats,
}
