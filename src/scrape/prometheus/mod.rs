//! Part of `scrape` (the server's side of a run): the server's metrics read after the run
//! from a Prometheus server's HTTP API (`--prometheus URL`, `--prometheus-selector SEL`)
//! instead of scraped beside it — for servers behind a service, where one pod's `/metrics` is
//! not the whole picture. It turns the answers into the same `Scrape`s the scraping thread
//! makes, so `window::summarize`, `join`, the console, `server_metrics.jsonl` and
//! `report DIR` treat both alike; it computes no figure of its own.
//!
//! - `query`: the PromQL of each concept, derived from the engine table, and the API paths;
//! - `answer`: the API's JSON answers (serde_json), errors included;
//! - `pages`: the answers → one `Scrape` per step and target;
//! - `read`: the queries over the run's window (blocking `get::Fetcher`, bounded in time),
//!   and the file.
//!
//! **The query, and why.** For each concept the rows of the detected engine's table give the
//! series names (`vllm:num_requests_running`; a counter with and without `_total`; a
//! histogram's `_bucket` and `_sum`), and one range query reads them all:
//! `sum by (__name__, job, instance, le) ({__name__=~"a|b", <selector's matchers>})` (`avg` for
//! a share, as `parse` combines a page's series). That is the raw gauge and counter values, not
//! `increase()` or `rate()`: grouped by target (`job`, `instance`: one scraped page each), each
//! target's values at each step are what a scrape of its page would have given, and
//! `window::summarize` takes the deltas of its counters and buckets (resets handled as
//! `increase` handles them) exactly as on the direct path. `increase(x[window])` would
//! extrapolate to the window's edges (`promql/functions.go`, `extrapolatedRate`) and give
//! figures that are not whole numbers of tokens; summing counters over targets before the
//! delta would turn one pod's restart into a drop of the whole sum.
//!
//! **The window.** Steps at `t0 + k·step` up to the window's end `t1` (run clock, as wall-clock
//! seconds from the run's wall-clock start), where `t0` is the measured window's start (the
//! run's start, or warm-up's end) and `t1` the moment after the last record. A value at a step
//! is Prometheus's last sample at or before it, so one more point closes the window: read at
//! `t1 + step` (at most 60 s later: the first sample after the last request, when Prometheus
//! scrapes at least once a step), stamped `t1` and tagged `After`, as the direct path's closing
//! round is. The queries wait for that moment (and 250 ms for the sample to be stored).

pub mod answer;
pub mod pages;
pub mod query;
pub mod read;

pub use read::{read, PromSettings, PromWindow};

use serde::{Deserialize, Serialize};

/// Where a line read from Prometheus came from; every such line of `server_metrics.jsonl`
/// carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromSource {
    /// The Prometheus server's base URL (`--prometheus`).
    pub url: String,
    /// The label matchers merged into every query (`--prometheus-selector`); `None`: none.
    #[serde(default)]
    pub selector: Option<String>,
    /// The range queries' step, ns.
    pub step_ns: u64,
}
