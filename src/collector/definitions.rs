//! Part of the collector (… → record → **collector** → summary → report): the same records
//! measured the way other tools define their words (the table at the end of `docs/metrics.md`),
//! so that `ringbench report --definitions vllm,aiperf` prints their TTFT, ITL, TPOT, E2E,
//! duration and throughputs beside ours. Only measured successful requests count, for every
//! tool. Where a record cannot tell two things apart that a tool does, the approximation is
//! named on the definition. Never prints.

use super::Dist;
use crate::record::Record;
use crate::summary::Stats;
use serde::{Deserialize, Serialize};

/// Whose definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Definitions {
    /// `docs/metrics.md`: TTFT at the first token (reasoning counts), ITL = chunk gaps between
    /// token-bearing events, TPOT = (last token − first token)/(OSL − 1).
    Ringbench,
    /// `vllm bench serve`: TTFT at the first event with non-empty `choices` (a role-only
    /// chunk counts; we take the first event up to the first token, since trailing
    /// token-less events are usage/finish chunks), ITL = gaps between those events,
    /// TPOT = (E2E − TTFT)/(OSL − 1), duration from the first dispatch.
    Vllm,
    /// AIPerf: TTFT at the first content or reasoning; its ITL and TPOT are both
    /// (E2E − TTFT)/(OSL − 1); duration = min request start → max response end.
    Aiperf,
    /// SGLang `bench_serving`: TTFT at the first non-empty (non-reasoning) text, ITL = gaps
    /// between text-bearing events, TPOT = (E2E − TTFT)/(OSL − 1), duration as vLLM.
    Sglang,
    /// GuideLLM: TTFT at the first event with a token, ITL = (last − first)/(OSL − 1),
    /// TPOT = (last token − start)/OSL (TTFT included).
    Guidellm,
    /// inference-perf: TTFT at the first content chunk (reasoning excluded), ITL per token
    /// (the chunk gap on its first token, 0 on the rest), TPOT = (last − first)/(OSL − 1),
    /// duration = max end − min start.
    InferencePerf,
}

impl Definitions {
    /// Its `--definitions` name (`vllm`, `inference-perf`, …).
    pub fn name(self) -> &'static str {
        match self {
            Definitions::Ringbench => "ringbench",
            Definitions::Vllm => "vllm",
            Definitions::Aiperf => "aiperf",
            Definitions::Sglang => "sglang",
            Definitions::Guidellm => "guidellm",
            Definitions::InferencePerf => "inference-perf",
        }
    }

    /// The stamp this tool calls the first token.
    fn first_ns(self, r: &Record) -> Option<u64> {
        match self {
            Definitions::Ringbench | Definitions::Aiperf | Definitions::Guidellm => {
                r.first_token_ns
            }
            Definitions::Vllm => {
                let first_event = r.events.first().map(|e| e.at_ns);
                match (first_event, r.first_token_ns) {
                    (Some(e), Some(t)) => Some(e.min(t)),
                    (_, t) => t,
                }
            }
            Definitions::Sglang | Definitions::InferencePerf => r.first_output_ns,
        }
    }

    /// This tool's TTFT of one record: its first-token stamp − send; `None` when either is missing.
    pub fn ttft_ns(self, r: &Record) -> Option<u64> {
        Some(self.first_ns(r)?.saturating_sub(r.sent_ns?))
    }

    /// This tool's TPOT of one record (see the variant); `None` when it is undefined (too few
    /// output tokens, a missing stamp).
    pub fn tpot_ns(self, r: &Record) -> Option<u64> {
        let n = r.output_tokens as u64;
        match self {
            Definitions::Ringbench | Definitions::InferencePerf => r.tpot_ns(),
            Definitions::Vllm | Definitions::Aiperf | Definitions::Sglang => {
                let after_first = r.e2e_ns()?.checked_sub(self.ttft_ns(r)?)?;
                (n >= 2).then(|| after_first / (n - 1))
            }
            Definitions::Guidellm => {
                let to_last = r.last_token_ns?.checked_sub(r.sent_ns?)?;
                (n >= 1).then(|| to_last / n)
            }
        }
    }

    /// Feeds this tool's ITL samples of one request to `d`.
    fn itl(self, r: &Record, d: &mut Dist) {
        match self {
            Definitions::Ringbench => r.itl_gaps_ns().for_each(|g| d.record(g)),
            Definitions::Vllm => {
                let last = r.events.iter().rposition(|e| e.carries_token());
                let Some(last) = last else { return };
                gaps(r.events[..=last].iter().map(|e| e.at_ns), d);
            }
            Definitions::Sglang => gaps(r.events.iter().filter(|e| e.output).map(|e| e.at_ns), d),
            Definitions::Aiperf => {
                if let Some(v) = self.tpot_ns(r) {
                    d.record(v);
                }
            }
            Definitions::Guidellm => {
                if let Some(v) = r.tpot_ns() {
                    d.record(v);
                }
            }
            Definitions::InferencePerf => {
                let mut prev: Option<u64> = None;
                for e in r.events.iter().filter(|e| e.output) {
                    if let Some(p) = prev {
                        d.record(e.at_ns.saturating_sub(p));
                        (1..e.tokens).for_each(|_| d.record(0));
                    }
                    prev = Some(e.at_ns);
                }
            }
        }
    }

    /// Where this tool's duration starts for one request: the dispatch (intended) time for
    /// tools that start their clock before sending, the send stamp otherwise.
    fn start_ns(self, r: &Record) -> Option<u64> {
        match self {
            Definitions::Vllm | Definitions::Sglang => Some(r.intended_ns.min(r.sent_ns?)),
            _ => r.sent_ns,
        }
    }
}

fn gaps(stamps: impl Iterator<Item = u64>, d: &mut Dist) {
    let mut prev: Option<u64> = None;
    for at in stamps {
        if let Some(p) = prev {
            d.record(at.saturating_sub(p));
        }
        prev = Some(at);
    }
}

/// One tool's figures for a run, in the units their keys name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolFigures {
    /// Whose definitions these are.
    pub definitions: Definitions,
    /// TTFT as this tool defines it, ms (empty for `--no-stream`).
    pub ttft_ms: Stats,
    /// TPOT as this tool defines it, ms (empty for `--no-stream`).
    pub tpot_ms: Stats,
    /// ITL as this tool defines it, ms (empty for `--no-stream`).
    pub itl_ms: Stats,
    /// E2E (done − send), ms: the same for every tool.
    pub e2e_ms: Stats,
    /// The run's duration as this tool measures it, s: its earliest start to the last response's
    /// end.
    pub duration_s: f64,
    /// Successful requests / `duration_s`; `None` when the duration is 0.
    pub requests_per_s: Option<f64>,
    /// Σ OSL of successful requests / `duration_s`; `None` when the duration is 0.
    pub output_tokens_per_s: Option<f64>,
}

/// Folds records into one tool's figures. Memory is fixed (histograms), like the collector.
pub struct ToolView {
    defs: Definitions,
    stream: bool,
    ttft: Dist,
    tpot: Dist,
    itl: Dist,
    e2e: Dist,
    start_ns: Option<u64>,
    end_ns: Option<u64>,
    ok: u64,
    output_tokens: u64,
}

impl ToolView {
    pub fn new(defs: Definitions, stream: bool) -> Self {
        ToolView {
            defs,
            stream,
            ttft: Dist::new(),
            tpot: Dist::new(),
            itl: Dist::new(),
            e2e: Dist::new(),
            start_ns: None,
            end_ns: None,
            ok: 0,
            output_tokens: 0,
        }
    }

    pub fn add(&mut self, r: &Record) {
        if r.warmup || r.outcome != crate::record::Outcome::Ok {
            return;
        }
        let d = self.defs;
        self.ok += 1;
        self.output_tokens += r.output_tokens as u64;
        if let Some(s) = d.start_ns(r) {
            self.start_ns = Some(self.start_ns.map_or(s, |v| v.min(s)));
        }
        if let Some(e) = r.done_ns {
            self.end_ns = Some(self.end_ns.map_or(e, |v| v.max(e)));
        }
        if let Some(v) = r.e2e_ns() {
            self.e2e.record(v);
        }
        if !self.stream {
            return;
        }
        if let Some(v) = d.ttft_ns(r) {
            self.ttft.record(v);
        }
        if let Some(v) = d.tpot_ns(r) {
            self.tpot.record(v);
        }
        d.itl(r, &mut self.itl);
    }

    pub fn finish(&self, percentiles: &[f64]) -> ToolFigures {
        let duration_ns = match (self.start_ns, self.end_ns) {
            (Some(s), Some(e)) => e.saturating_sub(s),
            _ => 0,
        };
        let per_s = |n: u64| (duration_ns > 0).then(|| n as f64 * 1e9 / duration_ns as f64);
        ToolFigures {
            definitions: self.defs,
            ttft_ms: self.ttft.stats_ms(percentiles),
            tpot_ms: self.tpot.stats_ms(percentiles),
            itl_ms: self.itl.stats_ms(percentiles),
            e2e_ms: self.e2e.stats_ms(percentiles),
            duration_s: duration_ns as f64 / 1e9,
            requests_per_s: per_s(self.ok),
            output_tokens_per_s: per_s(self.output_tokens),
        }
    }
}
