//! Part of the collector (… → record → **collector** → summary): the figures of the APIs
//! beyond plain generation, over the measured successful requests — the tool calls the
//! answers made (`Record::tool_calls`) and what a pooling endpoint answered (`Record::items`,
//! `Record::bytes`). Bounded: three counters and one histogram. Never prints.

use super::Dist;
use crate::plan::Endpoint;
use crate::record::Record;
use crate::summary::apis::{Pooling, ToolCalls};

/// Tool calls of the measured successful responses.
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolTally {
    responses: u64,
    with_calls: u64,
    calls: u64,
}

impl ToolTally {
    /// One measured successful response.
    pub fn add(&mut self, rec: &Record) {
        self.responses += 1;
        if rec.tool_calls > 0 {
            self.with_calls += 1;
            self.calls += u64::from(rec.tool_calls);
        }
    }

    /// The `tools` block: when tools were offered or any answer called one, else `None`.
    pub fn summary(&self, offered: bool) -> Option<ToolCalls> {
        if !offered && self.calls == 0 {
            return None;
        }
        Some(ToolCalls {
            responses: self.responses,
            with_calls: self.with_calls,
            with_calls_fraction: ratio(self.with_calls, self.responses),
            calls: self.calls,
            calls_per_response_mean: ratio(self.calls, self.responses),
            calls_per_calling_response_mean: ratio(self.calls, self.with_calls),
        })
    }
}

/// What a pooling endpoint's measured successful answers held.
#[derive(Clone, Debug, Default)]
pub(crate) struct PoolingTally {
    requests: u64,
    /// Σ `Record::items`: `throughput.inputs_per_s`'s numerator.
    pub inputs: u64,
    bytes: Dist,
}

impl PoolingTally {
    /// One measured successful answer.
    pub fn add(&mut self, rec: &Record) {
        self.requests += 1;
        self.inputs += u64::from(rec.items);
        self.bytes.record(rec.bytes);
    }

    /// The `pooling` block of a run against `endpoint`.
    pub fn summary(&self, endpoint: Endpoint, percentiles: &[f64]) -> Pooling {
        Pooling {
            inputs: self.inputs,
            inputs_per_request_mean: ratio(self.inputs, self.requests),
            endpoint: endpoint.name().to_string(),
            response_bytes: self.bytes.stats(percentiles),
        }
    }

    /// Values the histogram clamped (answers above its bound).
    pub fn clamped(&self) -> u64 {
        self.bytes.clamped()
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}
