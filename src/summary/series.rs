//! Part of the summary (types only): the run as a time line (`summary.json`'s `timeseries`).

use serde::{Deserialize, Serialize};

/// The run in fixed-width intervals (`timeseries` in `summary.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    /// Width of each interval, s (1 unless the run was longer than `MAX_POINTS` s).
    pub interval_s: f64,
    /// The intervals in time order, from the first in which anything was in flight or ended.
    pub points: Vec<Point>,
}

/// One interval. `t_s` is its start on the run clock (seconds since the run began).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Start of the interval, seconds since the run began.
    pub t_s: f64,
    /// Successful requests that ended in the interval, per second.
    pub requests_per_s: f64,
    /// Output tokens whose events arrived in the interval, per second.
    pub output_tokens_per_s: f64,
    /// Mean number of measured requests in flight (Σ overlap / width).
    pub in_flight_mean: f64,
    /// TTFT of requests whose first token arrived in the interval.
    pub ttft_count: u64,
    /// Median of those TTFTs, ms; `null` when there were none.
    pub ttft_p50_ms: Option<f64>,
    /// p99 of those TTFTs, ms; `null` when there were none.
    pub ttft_p99_ms: Option<f64>,
    /// Chunk gaps that ended in the interval.
    pub itl_count: u64,
    /// Median of those chunk gaps, ms; `null` when there were none.
    pub itl_p50_ms: Option<f64>,
    /// p99 of those chunk gaps, ms; `null` when there were none.
    pub itl_p99_ms: Option<f64>,
}
