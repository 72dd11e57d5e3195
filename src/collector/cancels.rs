//! Part of the collector (… → record → **collector** → summary): what the requests the
//! client aborted on purpose (`--cancel-rate`) had received when they were cut — kept apart
//! from the latency figures, which only successful requests make. Bounded (two
//! distributions, counters); never prints.

use super::dist::Dist;
use crate::plan::CancelSpec;
use crate::record::Record;
use crate::summary::Cancellations;

/// The aborted requests so far.
#[derive(Clone, Debug)]
pub struct CancelTally {
    spec: CancelSpec,
    count: u64,
    tokens: u64,
    input_tokens: u64,
    with_first_token: u64,
    ttft: Dist,
    held: Dist,
}

impl CancelTally {
    pub fn new(spec: CancelSpec) -> Self {
        CancelTally {
            spec,
            count: 0,
            tokens: 0,
            input_tokens: 0,
            with_first_token: 0,
            ttft: Dist::new(),
            held: Dist::new(),
        }
    }

    /// One measured request the client aborted.
    pub fn add(&mut self, rec: &Record) {
        self.count += 1;
        self.tokens += u64::from(rec.output_tokens);
        self.input_tokens += u64::from(rec.prompt_tokens());
        if let Some(t) = rec.ttft_ns() {
            self.with_first_token += 1;
            self.ttft.record(t);
        }
        if let (Some(s), Some(d)) = (rec.sent_ns, rec.done_ns) {
            self.held.record(d.saturating_sub(s));
        }
    }

    /// The summary's `cancellations` block; `sent` is the measured requests sent.
    pub fn summary(&self, sent: u64, percentiles: &[f64]) -> Cancellations {
        Cancellations {
            rate: self.spec.rate,
            after: self.spec.after_label(),
            cancelled_by_client: self.count,
            percent_of_sent: (sent > 0).then(|| 100.0 * self.count as f64 / sent as f64),
            output_tokens_mean: (self.count > 0).then(|| self.tokens as f64 / self.count as f64),
            input_tokens_total: self.input_tokens,
            output_tokens_total: self.tokens,
            with_first_token: self.with_first_token,
            ttft_ms: self.ttft.stats_ms(percentiles),
            held_ms: self.held.stats_ms(percentiles),
        }
    }
}
