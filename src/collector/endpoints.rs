//! Part of the collector (… → record → **collector** → summary): the per-server figures of a
//! run with several `--url`s, from each record's `endpoint`. Bounded: one row per server,
//! at most `plan::MAX_TARGETS`, made up front. Never prints.

use super::dist::Dist;
use super::record_metric;
use crate::plan::{Target, MAX_TARGETS};
use crate::record::{Outcome, Record};
use crate::summary::endpoints::EndpointRow;
use crate::summary::{Metric, Tally};

/// One server's sums.
#[derive(Clone, Debug, Default)]
struct Row {
    tally: Tally,
    output_tokens: u64,
    ttft: Dist,
    itl: Dist,
    e2e: Dist,
}

/// Every server's measured records so far.
#[derive(Clone, Debug)]
pub struct EndpointTally {
    urls: Vec<String>,
    rows: Vec<Row>,
}

impl EndpointTally {
    /// For a run sending to `targets` (in `--url`'s order).
    pub fn new(targets: &[Target]) -> Self {
        let urls: Vec<String> = targets
            .iter()
            .take(MAX_TARGETS)
            .map(|t| t.url.clone())
            .collect();
        EndpointTally {
            rows: vec![Row::default(); urls.len()],
            urls,
        }
    }

    /// One measured record; one never sent, or naming a server the run has not (a log
    /// edited by hand), is left out.
    pub fn add(&mut self, rec: &Record, stream: bool) {
        let Some(row) = self.rows.get_mut(usize::from(rec.endpoint)) else {
            return;
        };
        if !rec.outcome.was_sent() {
            return;
        }
        row.tally.add(rec.outcome);
        if rec.outcome != Outcome::Ok {
            return;
        }
        row.output_tokens += u64::from(rec.output_tokens);
        record_metric(Metric::Ttft, rec, stream, &mut row.ttft);
        record_metric(Metric::Itl, rec, stream, &mut row.itl);
        record_metric(Metric::E2e, rec, stream, &mut row.e2e);
    }

    /// The summary's `endpoints` rows; `duration_ns` is the run's measured duration (the
    /// throughput's).
    pub fn summary(&self, percentiles: &[f64], duration_ns: u64) -> Vec<EndpointRow> {
        let sent: u64 = self.rows.iter().map(|r| r.tally.sent).sum();
        let per_s = |n: u64| (duration_ns > 0).then(|| n as f64 * 1e9 / duration_ns as f64);
        (self.rows.iter().zip(&self.urls).enumerate())
            .map(|(i, (r, url))| EndpointRow {
                endpoint: i as u16,
                url: url.clone(),
                tally: r.tally,
                share_percent: (sent > 0).then(|| 100.0 * r.tally.sent as f64 / sent as f64),
                requests_per_s: per_s(r.tally.ok),
                output_tokens_per_s: per_s(r.output_tokens),
                ttft_ms: r.ttft.stats_ms(percentiles),
                itl_ms: r.itl.stats_ms(percentiles),
                e2e_ms: r.e2e.stats_ms(percentiles),
            })
            .collect()
    }
}
