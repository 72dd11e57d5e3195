//! Stage 7 of the flow (… → record → **collector** → summary → report): the one collector
//! thread. It takes every `Record` the workers send (warm-up included), streams it to
//! `requests.jsonl`, and folds the measured ones into fixed-size histograms and counters;
//! `finish` turns those, plus what the workers report about themselves (`RunFacts`), into the
//! `Summary`. Workers never compute percentiles; this module never prints, never blocks a
//! worker, and holds nothing that grows with the number of requests (failure kinds excepted:
//! a handful of keys).
//!
//! Which requests enter which figure follows `docs/metrics.md`: warm-up records are counted and
//! logged, nothing else; failures never enter a latency but are in goodput's denominator;
//! streaming-only metrics (TTFT, TTFO, TPOT, ITL, max stall) are skipped for `--no-stream`
//! and for a pooling endpoint (one body per answer), whose own figures are in `apis`.

mod apis;
#[cfg(test)]
mod apis_tests;
#[cfg(test)]
mod arith_tests;
mod cancels;
pub mod definitions;
mod dist;
mod endpoints;
mod errors;
pub mod exposition;
#[cfg(test)]
mod exposition_tests;
mod finish;
pub mod hlog;
mod isl;
pub mod log;
pub mod merge;
mod network;
pub mod osl;
pub mod parquet;
mod queue;
pub mod replay;
#[cfg(test)]
mod replay_tests;
pub mod series;
mod sessions;
pub(crate) mod settings;
pub mod sidecar;
mod stages;
mod stalls;
pub mod tokens;
mod upload;

pub use dist::{new_histogram, Dist};
pub use settings::{Settings, SettingsError};

use crate::plan::{Plan, Slo, SloMetric};
use crate::record::{OslSource, Outcome, Record};
use crate::summary::{Metric, OutputSource, Tally};
use log::RequestLog;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub use crate::summary::workers::WorkerStats;

/// Facts about the run that records do not carry, handed to `finish`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunFacts {
    /// RFC 3339 wall clock; the report header only.
    pub started_at: String,
    /// `io_uring` or `epoll`.
    pub io_driver: String,
    /// Arrivals in the schedule, warm-up included (closed loop: claimed).
    pub scheduled: u64,
    pub wall_ns: u64,
    pub interrupted: bool,
    pub workers: Vec<WorkerStats>,
    /// The in-process simulator's own stats, if the run used one.
    pub sim: Option<serde_json::Value>,
    pub warnings: Vec<String>,
    /// What the requests asked (lengths, prefixes), for the summary's `workload` block.
    #[serde(default)]
    pub workload: Option<crate::summary::workload::WorkloadStats>,
    /// The host's network drop and retransmit counters over the run.
    #[serde(default)]
    pub kernel_net: Option<crate::summary::NetDelta>,
    /// Which shard of a run over several hosts this is (`--shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::summary::shard::ShardInfo>,
    /// The run clock's wall-clock origin and the kernel's clock-sync estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::summary::shard::ClockSync>,
    /// The shards a merged run is made of (`ringbench merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<crate::summary::shard::MergeInfo>,
    /// What the server said about itself before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<crate::summary::served::Served>,
}

/// A cheap snapshot for the progress line. Counts cover every record so far, warm-up
/// included (`warmup` says how many of them); a record arrives when its request has ended, so
/// `sent` counts ended requests that had been sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// Every record so far by how it ended, warm-up included: `sent` counts ended requests
    /// that had been handed to the kernel.
    pub tally: Tally,
    /// Of the records, how many were warm-up.
    pub warmup: u64,
    /// The latest send stamp and the latest end stamp seen, run-clock ns.
    pub last_sent_ns: u64,
    /// See `last_sent_ns`.
    pub last_done_ns: u64,
    /// Only the workers know what is in flight; the caller fills this in if it tracks it.
    pub in_flight: Option<u64>,
    /// TTFT p50 over the measured successful requests so far, ns (`None` before the first).
    pub ttft_p50_ns: Option<u64>,
}

impl LiveCounts {
    /// Records collected so far, warm-up included.
    pub fn records(&self) -> u64 {
        self.tally.sent + self.tally.not_sent
    }

    fn count(&mut self, rec: &Record) {
        self.tally.add(rec.outcome);
        self.warmup += rec.warmup as u64;
        self.last_sent_ns = self.last_sent_ns.max(rec.sent_ns.unwrap_or(0));
        self.last_done_ns = self.last_done_ns.max(rec.done_ns.unwrap_or(0));
    }
}

/// Every distribution of the summary: one per `Metric`, and the client's own two.
#[derive(Clone, Debug, Default)]
struct Dists {
    /// Indexed by `Metric::index`.
    metrics: [Dist; Metric::ALL.len()],
    sched_lag: Dist,
    delivery_delay: Dist,
}

/// `sample` into `d` under the streaming rule: a metric only a streamed response has takes
/// nothing from a `--no-stream` run. What every breakdown (stages, turns, servers) and the
/// run's own distributions record.
pub(crate) fn record_metric(m: Metric, rec: &Record, stream: bool, d: &mut Dist) {
    if stream || !m.streaming_only() {
        sample(m, rec, |v| d.record(v));
    }
}

/// Every value metric `m` takes from one successful record, in order (none when the record
/// lacks it): the one place each definition of `docs/metrics.md` is applied to a record.
pub(crate) fn sample(m: Metric, rec: &Record, mut each: impl FnMut(u64)) {
    let value = match m {
        Metric::Ttft => rec.ttft_ns(),
        Metric::Ttst => rec.ttst_ns(),
        Metric::Ttfo => rec.ttfo_ns(),
        Metric::Ttfv => rec.ttfv_ns(),
        Metric::Ttfb => rec.ttfb_ns(),
        Metric::Tpot => rec.tpot_ns(),
        Metric::E2e => rec.e2e_ns(),
        Metric::Ntpot => rec.ntpot_ns(),
        Metric::TtftFromIntent => rec.ttft_from_intent_ns(),
        Metric::E2eFromIntent => rec.e2e_from_intent_ns(),
        Metric::MaxStall => rec.max_stall_ns(),
        Metric::TtftUser => rec.ttft_user_ns(),
        Metric::E2eUser => rec.e2e_user_ns(),
        Metric::Upload => rec.upload_ns(),
        Metric::TtftFromUpload => rec.ttft_from_upload_ns(),
        Metric::Itl => return rec.itl_gaps_ns().for_each(each),
        Metric::ItlUser => return rec.itl_user_gaps_ns().for_each(each),
        Metric::ItlPerToken => {
            return tokens::per_token_gaps(rec, |gap, n| (0..n).for_each(|_| each(gap)))
        }
    };
    if let Some(v) = value {
        each(v);
    }
}

/// The first and last of a set of stamps, in whatever order they arrive.
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    first_ns: Option<u64>,
    last_ns: Option<u64>,
}

impl Span {
    fn add(&mut self, ns: u64) {
        self.first_ns = Some(self.first_ns.map_or(ns, |f| f.min(ns)));
        self.last_ns = Some(self.last_ns.map_or(ns, |l| l.max(ns)));
    }

    /// The rate of `n` events spread over this span. n events span n − 1 gaps, so the rate is
    /// (n − 1) / span: exactly R for a constant rate R, where n / span would overstate it by
    /// n / (n − 1). Undefined below two events or for an empty span.
    fn rate_per_s(&self, n: u64) -> Option<f64> {
        let span_ns = self.last_ns?.checked_sub(self.first_ns?)?;
        (n >= 2 && span_ns > 0).then(|| (n - 1) as f64 * 1e9 / span_ns as f64)
    }
}

/// Counters over measured (non-warm-up) records.
#[derive(Clone, Debug, Default)]
struct Measured {
    tally: Tally,
    /// Keyed by outcome and, for HTTP statuses only, the code; turned into strings at the end
    /// so that a failure costs no allocation.
    failed_by_kind: BTreeMap<(Outcome, u16), u64>,
    /// The same failures by the server's message (`summary.json`'s `errors`).
    errors: errors::ErrorTally,
    /// Successful streamed requests without a token-bearing event (not in TTFT, TPOT, ITL),
    /// and those whose tokens all came as empty text (`worker::sink::credit_empty_text`):
    /// each said in a warning with its count.
    no_token: u64,
    empty_text_only: u64,
    /// Send stamps and intended times of measured sent requests.
    sent_span: Span,
    intended_span: Span,
    last_done_ns: Option<u64>,
    /// Σ E2E of every measured request that ended (failures too: they held a slot).
    e2e_all_ns: u128,
    good: u64,
    good_output_tokens: u64,
    /// ISL both sides: the client's count and the server's `usage.prompt_tokens`.
    isl: isl::IslTally,
    output_tokens: u64,
    output_source: OutputSource,
    /// Sent records without `sent_ns`, and successful ones whose stamps run backwards.
    bad_stamps: u64,
    /// Events stamped before the server says it wrote them (the two clocks disagree).
    delivery_negative: u64,
    events_dropped: u64,
    dists: Dists,
    series: series::Series,
    /// Successful requests whose server OSL differs from the `max_tokens` asked for.
    osl_mismatch: u64,
    /// Chunk gaps above `--stall-ms` (streamed runs).
    stalls: stalls::StallTally,
    /// Conversations (`--turns`).
    sessions: Option<sessions::SessionTally>,
    /// Requests aborted by the client on purpose (`--cancel-rate`).
    cancelled_by_client: u64,
    cancels: Option<cancels::CancelTally>,
    /// Several `--url`s: each server's own figures.
    endpoints: Option<endpoints::EndpointTally>,
    /// The tool calls the answers made.
    tools: apis::ToolTally,
    /// A pooling endpoint's answers; `None` for a generating one.
    pooling: Option<apis::PoolingTally>,
    /// What the requests carried: body bytes, images, audio.
    upload: upload::UploadTally,
}

/// The collector thread's state: every figure of the summary as it accumulates (bounded
/// histograms and counters), the request log being written, and what the summary needs from
/// the plan. Fed records by `add`; `finish` turns it into the `Summary`.
pub struct Collector {
    /// What the summary needs from the plan; also written to the `run.json` sidecar.
    settings: Settings,
    /// Where `requests.jsonl` and the `run.json` sidecar go.
    out_dir: Option<std::path::PathBuf>,
    log: Option<RequestLog>,
    /// The first error writing the log; the log stops there and the summary says so.
    log_error: Option<io::Error>,
    /// The `.hlog` interval logs beside `requests.jsonl`, and their first write error.
    hlog: Option<hlog::IntervalLogs>,
    hlog_error: Option<io::Error>,
    /// `--tokenizer`: counts the output text the workers copied (OSL and per-event tokens).
    output_tokenizer: Option<osl::OutputTokenizer>,
    live: LiveCounts,
    warmup: u64,
    warmup_by: crate::summary::WarmupCounts,
    m: Measured,
    /// `--stages`: each stage's own tally.
    stages: Option<stages::StageTally>,
    /// `--metrics-listen`: the live page's histograms (`None` without a listener).
    live_hists: Option<exposition::LiveHists>,
}

impl Collector {
    /// Opens `out_dir/requests.jsonl` when a directory is given.
    pub fn new(plan: &Plan, out_dir: Option<&Path>) -> io::Result<Self> {
        let mut c = Self::from_settings(Settings::from_plan(plan).map_err(io::Error::other)?);
        c.log = out_dir
            .map(|d| RequestLog::create_as(d, plan.records))
            .transpose()?;
        c.hlog = out_dir
            .map(|d| hlog::IntervalLogs::create(d, c.settings.stream))
            .transpose()?;
        c.output_tokenizer = plan
            .workload
            .tokenizer
            .as_deref()
            .map(osl::OutputTokenizer::load)
            .transpose()
            .map_err(io::Error::other)?;
        c.out_dir = out_dir.map(Path::to_path_buf);
        c.live_hists = plan.metrics_listen.as_ref().map(|_| Default::default());
        Ok(c)
    }

    /// A collector with no log, fed from a `requests.jsonl` by `ringbench report`.
    pub fn from_settings(settings: Settings) -> Self {
        let plan = &settings.plan;
        let sessions = plan.sessions.as_ref().map(sessions::SessionTally::new);
        let cancels = plan.cancel.map(cancels::CancelTally::new);
        let endpoints =
            (plan.targets.len() > 1).then(|| endpoints::EndpointTally::new(&plan.targets));
        Collector {
            out_dir: None,
            log: None,
            log_error: None,
            hlog: None,
            hlog_error: None,
            output_tokenizer: None,
            live: LiveCounts::default(),
            warmup: 0,
            warmup_by: Default::default(),
            m: Measured {
                stalls: stalls::StallTally::new(settings.stall_ns),
                sessions,
                cancels,
                endpoints,
                pooling: (!plan.endpoint.generates()).then(Default::default),
                ..Measured::default()
            },
            stages: stages::StageTally::new(&plan.stages, plan.this_shard()),
            live_hists: None,
            settings,
        }
    }

    /// Writes the `.hlog` interval logs into `dir` from the next record on (`ringbench report
    /// --out` and `merge`, from `requests.jsonl`), `BaseTime` `base`: the records go through
    /// the same writer as a live run's.
    pub fn log_intervals(&mut self, dir: &Path, base: std::time::SystemTime) -> io::Result<()> {
        self.hlog = Some(hlog::IntervalLogs::create_at(
            dir,
            self.settings.stream,
            base,
        )?);
        Ok(())
    }

    /// Where the schedule started on the run clock: a `--stages` run places each record in
    /// the stage its intended time falls in. Set before the first record.
    pub fn set_schedule_start(&mut self, start_ns: u64) {
        if let Some(t) = self.stages.as_mut() {
            t.set_start(start_ns);
        }
    }

    /// A record straight from a worker: its output text (if any) is counted by the
    /// tokenizer first, so the log and every figure see the resolved OSL.
    pub fn add_from_worker(&mut self, rec: &mut Record) {
        if let Some(t) = &self.output_tokenizer {
            t.apply(rec);
        }
        self.add(rec);
    }

    /// One record into the log, the live counts and (when measured) every figure.
    pub fn add(&mut self, rec: &Record) {
        self.log_record(rec);
        self.live.count(rec);
        if let Some(t) = self.stages.as_mut() {
            t.add(rec, self.settings.stream);
        }
        if rec.warmup {
            self.warmup += 1;
            let (by, w) = (rec.warmup_by, &mut self.warmup_by);
            w.count += u64::from(by.count);
            w.duration += u64::from(by.duration);
            w.both += u64::from(by.count && by.duration);
            return;
        }
        let plan = &self.settings.plan;
        let asked_osl = plan.fixed_output_tokens();
        self.m
            .add(rec, self.settings.stream, &plan.goodput, asked_osl);
        if let Some(h) = self.live_hists.as_mut() {
            h.add(rec, self.settings.stream);
        }
        if let Some(Err(e)) = self.hlog.as_mut().map(|h| h.add(rec)) {
            self.hlog_error = Some(e);
            self.hlog = None;
        }
    }

    /// The counts so far, for the progress line, with the TTFT median so far (a walk over
    /// one histogram's buckets: the caller asks about once a second).
    pub fn live(&self) -> LiveCounts {
        let ttft = &self.m.dists.metrics[Metric::Ttft.index()];
        LiveCounts {
            ttft_p50_ns: ttft.percentile_ns(50.0),
            ..self.live
        }
    }

    /// Pushes the buffered part of `requests.jsonl` to the kernel (called about once a
    /// second), so an interrupted run keeps what it measured up to then.
    pub fn flush_log(&mut self) {
        if let Some(Err(e)) = self.log.as_mut().map(|l| l.flush()) {
            self.log_error = Some(e);
            self.log = None;
        }
        if let Some(Err(e)) = self.hlog.as_mut().map(|h| h.flush()) {
            self.hlog_error = Some(e);
            self.hlog = None;
        }
    }

    fn log_record(&mut self, rec: &Record) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        if let Err(e) = log.append(rec) {
            // Keep measuring: a full disk should cost the log, not the run's figures.
            self.log_error = Some(e);
            self.log = None;
        }
    }
}

impl Measured {
    fn add(&mut self, rec: &Record, stream: bool, slos: &[Slo], asked_osl: Option<u32>) {
        if let Some(t) = self.sessions.as_mut() {
            t.add(rec, stream);
        }
        if let Some(t) = self.endpoints.as_mut() {
            t.add(rec, stream);
        }
        self.tally.add(rec.outcome);
        if !rec.outcome.was_sent() {
            return;
        }
        self.add_stamps(rec);
        self.series.add(rec, stream);
        match rec.outcome {
            Outcome::Ok => {
                // Only the server's own count can say it stopped early (or ran on).
                let usage = rec.usage_completion_tokens;
                if usage.is_some() && asked_osl.is_some() && usage != asked_osl {
                    self.osl_mismatch += 1;
                }
                self.add_ok(rec, stream, slos)
            }
            Outcome::CancelledByClient => {
                self.cancelled_by_client += 1;
                if let Some(t) = self.cancels.as_mut() {
                    t.add(rec);
                }
            }
            kind if kind.is_failure() => {
                let status = if kind == Outcome::HttpStatus {
                    rec.status
                } else {
                    0
                };
                *self.failed_by_kind.entry((kind, status)).or_insert(0) += 1;
                self.errors.add(rec);
            }
            _ => {}
        }
    }

    /// What every sent request contributes, whatever its outcome.
    fn add_stamps(&mut self, rec: &Record) {
        match rec.sent_ns {
            Some(s) => self.sent_span.add(s),
            // Never reached the socket (the connect failed, or was cut off): nothing to order.
            None if rec.head_ns.is_none() => {}
            None => self.bad_stamps += 1,
        }
        self.intended_span.add(rec.intended_ns);
        if let Some(d) = rec.done_ns {
            self.last_done_ns = Some(self.last_done_ns.map_or(d, |l| l.max(d)));
        }
        if let Some(lag) = rec.sched_lag_ns() {
            self.dists.sched_lag.record(lag);
        }
        if let Some(e2e) = rec.e2e_ns() {
            self.e2e_all_ns += e2e as u128;
        }
        for e in &rec.events {
            let Some(server_ns) = e.server_ns else {
                continue;
            };
            match e.at_ns.checked_sub(server_ns) {
                Some(delay) => self.dists.delivery_delay.record(delay),
                None => self.delivery_negative += 1,
            }
        }
        self.events_dropped += rec.events_dropped as u64;
    }

    fn add_ok(&mut self, rec: &Record, stream: bool, slos: &[Slo]) {
        self.isl.add(rec);
        self.tools.add(rec);
        self.upload.add(rec);
        if let Some(p) = self.pooling.as_mut() {
            p.add(rec);
        }
        self.output_tokens += rec.output_tokens as u64;
        match rec.output_source {
            OslSource::Usage => self.output_source.usage += 1,
            OslSource::Tokenizer => self.output_source.tokenizer += 1,
            OslSource::Events => self.output_source.events += 1,
        }
        if !stamps_in_order(rec) {
            self.bad_stamps += 1;
        }
        if stream {
            self.stalls.add(rec);
            match rec.first_token_ns {
                None => self.no_token += 1,
                Some(_) if rec.token_events().all(|e| !e.output && !e.reasoning) => {
                    self.empty_text_only += 1
                }
                Some(_) => {}
            }
        }
        for m in Metric::ALL {
            record_metric(m, rec, stream, &mut self.dists.metrics[m.index()]);
        }
        if !slos.is_empty() && meets_slos(rec, stream, slos) {
            self.good += 1;
            self.good_output_tokens += rec.output_tokens as u64;
        }
    }
}

/// sent ≤ head ≤ first token ≤ last token ≤ done, over the stamps that exist.
fn stamps_in_order(rec: &Record) -> bool {
    let stamps = [
        rec.sent_ns,
        rec.head_ns,
        rec.first_token_ns,
        rec.last_token_ns,
        rec.done_ns,
    ];
    let mut prev = 0;
    stamps.iter().flatten().all(|&s| {
        let ok = s >= prev;
        prev = s;
        ok
    })
}

/// Does a successful request meet every SLO? A metric the request does not have (TPOT of a
/// one-token answer, TTFT without streaming) does not fail it: vLLM counts such a TPOT as 0.
/// `itl` bounds every chunk gap, i.e. the largest one (vLLM's meaning).
pub fn meets_slos(rec: &Record, stream: bool, slos: &[Slo]) -> bool {
    slos.iter().all(|slo| {
        let value_ns = match slo.metric {
            SloMetric::Ttft if stream => rec.ttft_ns(),
            SloMetric::Tpot if stream => rec.tpot_ns(),
            SloMetric::Itl if stream => rec.max_stall_ns(),
            SloMetric::Ttft | SloMetric::Tpot | SloMetric::Itl => None,
            SloMetric::E2e => rec.e2e_ns(),
            SloMetric::Ntpot => rec.ntpot_ns(),
        };
        value_ns.is_none_or(|v| v as f64 <= slo.max_ms * 1e6)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::EventStamp;

    fn ok_record(sent_ns: u64, gaps_ns: &[u64]) -> Record {
        let mut at = sent_ns + 1_000;
        let mut events = vec![EventStamp {
            at_ns: at,
            tokens: 1,
            output: true,
            ..Default::default()
        }];
        for g in gaps_ns {
            at += g;
            events.push(EventStamp {
                at_ns: at,
                tokens: 1,
                output: true,
                ..Default::default()
            });
        }
        Record {
            outcome: Outcome::Ok,
            status: 200,
            intended_ns: sent_ns,
            sent_ns: Some(sent_ns),
            head_ns: Some(sent_ns + 500),
            first_token_ns: Some(sent_ns + 1_000),
            first_output_ns: Some(sent_ns + 1_000),
            last_token_ns: Some(at),
            done_ns: Some(at + 10),
            output_tokens: events.len() as u32,
            events,
            ..Default::default()
        }
    }

    fn slo(metric: SloMetric, max_ms: f64) -> Slo {
        Slo { metric, max_ms }
    }

    #[test]
    fn itl_slo_bounds_every_gap_not_the_mean() {
        let r = ok_record(0, &[1_000_000, 1_000_000, 5_000_000]);
        assert!(meets_slos(&r, true, &[slo(SloMetric::Itl, 5.0)]));
        assert!(!meets_slos(&r, true, &[slo(SloMetric::Itl, 4.9)]));
        assert!(meets_slos(&r, true, &[slo(SloMetric::Tpot, 2.5)]));
    }

    #[test]
    fn undefined_metrics_do_not_fail_an_slo() {
        let one_token = ok_record(0, &[]);
        assert!(meets_slos(&one_token, true, &[slo(SloMetric::Tpot, 0.0)]));
        assert!(meets_slos(&one_token, false, &[slo(SloMetric::Ttft, 0.0)]));
        assert!(!meets_slos(&one_token, true, &[slo(SloMetric::Ttft, 0.0)]));
    }

    #[test]
    fn a_span_rate_counts_gaps_not_events() {
        let mut span = Span::default();
        assert_eq!(span.rate_per_s(0), None);
        [0, 100_000_000, 200_000_000, 300_000_000]
            .into_iter()
            .rev()
            .for_each(|ns| span.add(ns));
        assert_eq!(span.rate_per_s(4), Some(10.0));
        assert_eq!(span.rate_per_s(1), None);
    }

    #[test]
    fn stamp_order_is_checked() {
        let mut r = ok_record(100, &[10]);
        assert!(stamps_in_order(&r));
        r.done_ns = Some(50);
        assert!(!stamps_in_order(&r));
    }

    #[test]
    fn a_log_that_failed_is_named_in_its_own_format() {
        for format in crate::plan::RecordsFormat::ALL {
            let mut plan = Plan::defaults();
            plan.records = format;
            let mut c = Collector::new(&plan, None).unwrap();
            c.log_error = Some(io::Error::other("disk full"));
            let s = c.finish(RunFacts::default()).unwrap();
            let name = log::file_name(format);
            let said = s.warnings.iter().find(|w| w.contains("is incomplete"));
            assert!(
                said.is_some_and(|w| w.starts_with(&format!("{name} is incomplete"))
                    && w.contains(&format!("(.{name}.tmp.PID)"))),
                "{:?}",
                s.warnings
            );
        }
    }

    #[test]
    fn live_counts_include_warmup_and_not_sent() {
        let mut c = Collector::new(&Plan::defaults(), None).unwrap();
        let mut w = ok_record(0, &[]);
        w.warmup = true;
        c.add(&w);
        c.add(&ok_record(10, &[5]));
        c.add(&Record::default());
        let l = c.live();
        assert_eq!(
            (
                l.records(),
                l.tally.sent,
                l.tally.ok,
                l.tally.not_sent,
                l.warmup
            ),
            (3, 2, 2, 1, 1)
        );
        assert_eq!(l.in_flight, None);
    }
}
