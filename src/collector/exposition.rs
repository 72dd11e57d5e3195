//! Part of the collector (… → record → **collector** → summary → report): the run's live
//! figures as Prometheus text exposition format 0.0.4, for `--metrics-listen`. The collector
//! thread renders the page a few times a second from what it already holds (the measured
//! tally, the rates' spans, the scheduling lag's distribution) and from `LiveHists`, three
//! fixed-bucket histograms it fills only when a listener was asked for; the run's wiring
//! (`run::live`) serves the last page. Every family is a line of `live_metrics!` below (name,
//! type, help): the page, `docs/metrics.md` and the Grafana dashboard's queries are checked
//! against that list. Nothing here runs on a worker; it never prints.

use super::{sample, Collector, Measured, Metric};
use crate::record::{Outcome, Record};
use std::fmt::Write;

/// A family's Prometheus type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Any value.
    Gauge,
    /// Cumulative buckets, sum and count.
    Histogram,
}

impl Kind {
    /// The `# TYPE` word.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One line per family the page serves: its variant, its name, its type and its help text.
macro_rules! live_metrics {
    ($( $variant:ident $name:literal $kind:ident $help:literal; )*) => {
        /// A family of the `--metrics-listen` page.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum LiveMetric {
            $( #[doc = $help] $variant, )*
        }

        impl LiveMetric {
            /// Every family, in the page's order.
            pub const ALL: [LiveMetric; [$(LiveMetric::$variant),*].len()] =
                [$(LiveMetric::$variant),*];

            /// Its name on the page (`ringbench_…`); a histogram's series add `_bucket`,
            /// `_sum` and `_count`.
            pub const fn name(self) -> &'static str {
                match self { $( LiveMetric::$variant => $name, )* }
            }

            /// Counter, gauge or histogram.
            pub const fn kind(self) -> Kind {
                match self { $( LiveMetric::$variant => Kind::$kind, )* }
            }

            /// The `# HELP` text.
            pub const fn help(self) -> &'static str {
                match self { $( LiveMetric::$variant => $help, )* }
            }
        }
    };
}

live_metrics! {
    Info "ringbench_info" Gauge
        "The run: labels version, model, url (the servers, comma-separated), run_id; always 1.";
    Sent "ringbench_requests_sent_total" Counter
        "Measured requests handed to the kernel whose record is in (warm-up excluded).";
    Ok "ringbench_requests_ok_total" Counter
        "Measured requests that ended with a complete 2xx response.";
    Failed "ringbench_requests_failed_total" Counter
        "Measured requests that failed, by kind (label kind: the requests.jsonl outcome).";
    Cancelled "ringbench_requests_cancelled_total" Counter
        "Measured requests sent then abandoned: by the run's stop, or by --cancel-rate.";
    NotSent "ringbench_requests_not_sent_total" Counter
        "Measured arrivals never sent (the run stopped first).";
    Warmup "ringbench_warmup_requests_total" Counter
        "Warm-up requests whose record is in, any outcome (in no other family).";
    InFlight "ringbench_requests_in_flight" Gauge
        "Requests handed to the kernel whose record is not in yet (warm-up included).";
    OutputTokens "ringbench_output_tokens_total" Counter
        "Output tokens (OSL) of the measured successful requests.";
    Ttft "ringbench_ttft_seconds" Histogram
        "Time to first token of the measured successful streamed requests.";
    Itl "ringbench_itl_seconds" Histogram
        "Inter-token latency: every gap between token-bearing events, measured requests.";
    E2e "ringbench_e2e_seconds" Histogram
        "End-to-end latency (sent to last byte) of the measured successful requests.";
    AchievedRate "ringbench_achieved_requests_per_second" Gauge
        "Measured sends over their span, (n - 1) / (last - first): summary achieved.request_rate.";
    ScheduleRate "ringbench_schedule_requests_per_second" Gauge
        "The same over the sent requests' intended times: summary achieved.schedule_rate.";
    SchedLagP99 "ringbench_schedule_lag_p99_seconds" Gauge
        "Scheduling lag (send stamp minus intended time) p99 over the measured sends.";
    SchedLag "ringbench_schedule_lag_seconds" Histogram
        "Scheduling lag of every measured send: its p99 over a recent window by histogram_quantile.";
    WorkerCpu "ringbench_worker_cpu_seconds_total" Counter
        "CPU time of each worker thread (labels worker, cpu), from the kernel's thread clock.";
}

/// The histograms' upper bounds, ns: vLLM's TTFT buckets (so a panel can set client and
/// server side by side) with finer ones below 1 ms for inter-token gaps and scheduling lag
/// (10 µs steps to 100 µs: the lag's p99 on a quiet machine is tens of µs, and
/// `histogram_quantile` interpolates within a bucket). `+Inf` is implied.
pub const BUCKET_BOUNDS_NS: [u64; 37] = [
    10_000,
    20_000,
    30_000,
    40_000,
    50_000,
    60_000,
    70_000,
    80_000,
    90_000,
    100_000,
    150_000,
    200_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    20_000_000,
    40_000_000,
    60_000_000,
    80_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    750_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    7_500_000_000,
    10_000_000_000,
    20_000_000_000,
    40_000_000_000,
    80_000_000_000,
    160_000_000_000,
    640_000_000_000,
    2_560_000_000_000,
];

/// One Prometheus histogram: a count per bucket (the last one `+Inf`), exact sum and count.
#[derive(Clone, Debug)]
struct Buckets {
    counts: [u64; BUCKET_BOUNDS_NS.len() + 1],
    sum_ns: u128,
    count: u64,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            counts: [0; BUCKET_BOUNDS_NS.len() + 1],
            sum_ns: 0,
            count: 0,
        }
    }
}

impl Buckets {
    fn add(&mut self, ns: u64) {
        // `le` is inclusive: a value equal to a bound lands in that bound's bucket.
        self.counts[BUCKET_BOUNDS_NS.partition_point(|&b| b < ns)] += 1;
        self.sum_ns += u128::from(ns);
        self.count += 1;
    }
}

/// TTFT, ITL and E2E as Prometheus histograms, over the measured successful requests, taken
/// by the summary's own definitions (`collector::sample`) and streaming rule; and the
/// scheduling lag of every measured send, whatever its outcome (as `overhead.sched_lag_ms`).
#[derive(Clone, Debug, Default)]
pub(super) struct LiveHists {
    hists: [Buckets; 3],
    sched_lag: Buckets,
}

/// The histogram families, in `LiveHists::hists`' order, with the metric each one takes.
const HISTOGRAMS: [(LiveMetric, Metric); 3] = [
    (LiveMetric::Ttft, Metric::Ttft),
    (LiveMetric::Itl, Metric::Itl),
    (LiveMetric::E2e, Metric::E2e),
];

impl LiveHists {
    /// One measured record: a successful one adds its values.
    pub(super) fn add(&mut self, rec: &Record, stream: bool) {
        if let Some(lag) = rec.sched_lag_ns() {
            self.sched_lag.add(lag);
        }
        if rec.outcome != Outcome::Ok {
            return;
        }
        for (h, (_, m)) in self.hists.iter_mut().zip(HISTOGRAMS) {
            if stream || !m.streaming_only() {
                sample(m, rec, |v| h.add(v));
            }
        }
    }
}

/// What the page says that the collector does not hold: from the workers and the run.
#[derive(Clone, Debug, Default)]
pub struct LiveFacts {
    /// Requests handed to the kernel, all workers (`Shared::total_sent`), warm-up included.
    pub total_sent: u64,
    /// Each worker's (CPU, thread CPU time so far in ns), in worker order.
    pub worker_cpu_ns: Vec<(usize, u64)>,
    /// The model asked for, the servers' base URLs (comma-separated) and the run's id.
    pub model: String,
    pub url: String,
    pub run_id: String,
}

impl Collector {
    /// The page for `--metrics-listen`, written into `out` (cleared first). A rate or a p99
    /// that does not exist yet (fewer than two sends, no send) has no sample, only its
    /// `# HELP` and `# TYPE`.
    pub fn exposition(&self, facts: &LiveFacts, out: &mut String) {
        out.clear();
        let m = &self.m;
        let records_sent = self.live.tally.sent;
        let empty = LiveHists::default();
        let hists = self.live_hists.as_ref().unwrap_or(&empty);
        for family in LiveMetric::ALL {
            let name = family.name();
            let _ = writeln!(out, "# HELP {name} {}", family.help());
            let _ = writeln!(out, "# TYPE {name} {}", family.kind().name());
            let one = |out: &mut String, v: f64| {
                let _ = writeln!(out, "{name} {v}");
            };
            match family {
                LiveMetric::Info => info(out, facts),
                LiveMetric::Sent => one(out, m.tally.sent as f64),
                LiveMetric::Ok => one(out, m.tally.ok as f64),
                LiveMetric::Failed => failed(out, m),
                LiveMetric::Cancelled => one(out, m.tally.cancelled as f64),
                LiveMetric::NotSent => one(out, m.tally.not_sent as f64),
                LiveMetric::Warmup => one(out, self.warmup as f64),
                LiveMetric::InFlight => {
                    one(out, facts.total_sent.saturating_sub(records_sent) as f64)
                }
                LiveMetric::OutputTokens => one(out, m.output_tokens as f64),
                LiveMetric::Ttft | LiveMetric::Itl | LiveMetric::E2e => {
                    let at = HISTOGRAMS.iter().position(|(f, _)| *f == family);
                    histogram(out, name, &hists.hists[at.unwrap_or(0)]);
                }
                LiveMetric::AchievedRate => {
                    if let Some(r) = m.sent_span.rate_per_s(m.tally.sent) {
                        one(out, r);
                    }
                }
                LiveMetric::ScheduleRate => {
                    if let Some(r) = m.intended_span.rate_per_s(m.tally.sent) {
                        one(out, r);
                    }
                }
                LiveMetric::SchedLagP99 => {
                    if let Some(ns) = m.dists.sched_lag.percentile_ns(99.0) {
                        one(out, ns as f64 / 1e9);
                    }
                }
                LiveMetric::SchedLag => histogram(out, name, &hists.sched_lag),
                LiveMetric::WorkerCpu => {
                    for (i, (cpu, ns)) in facts.worker_cpu_ns.iter().enumerate() {
                        let s = *ns as f64 / 1e9;
                        let _ = writeln!(out, "{name}{{worker=\"{i}\",cpu=\"{cpu}\"}} {s}");
                    }
                }
            }
        }
    }
}

fn info(out: &mut String, facts: &LiveFacts) {
    let _ = write!(
        out,
        "{}{{version=\"{}\",model=\"",
        LiveMetric::Info.name(),
        env!("CARGO_PKG_VERSION")
    );
    escape(out, &facts.model);
    out.push_str("\",url=\"");
    escape(out, &facts.url);
    out.push_str("\",run_id=\"");
    escape(out, &facts.run_id);
    out.push_str("\"} 1\n");
}

/// A label value as the format wants it: `\`, `"` and newlines escaped.
fn escape(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Every failure outcome (`Outcome::ALL`'s list), zero included, so each series exists
/// from the first page on.
fn failed(out: &mut String, m: &Measured) {
    let name = LiveMetric::Failed.name();
    for kind in Outcome::ALL.into_iter().filter(|o| o.is_failure()) {
        let n: u64 = (m.failed_by_kind.iter())
            .filter(|((o, _), _)| *o == kind)
            .map(|(_, n)| n)
            .sum();
        let _ = writeln!(out, "{name}{{kind=\"{}\"}} {n}", kind.name());
    }
}

/// Cumulative `_bucket{le=…}`, `_sum` (seconds) and `_count`.
fn histogram(out: &mut String, name: &str, h: &Buckets) {
    let mut cumulative = 0;
    for (i, n) in h.counts.iter().enumerate() {
        cumulative += n;
        match BUCKET_BOUNDS_NS.get(i) {
            Some(&le) => {
                let le = le as f64 / 1e9;
                let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
            }
            None => {
                let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
            }
        }
    }
    let _ = writeln!(out, "{name}_sum {}", h.sum_ns as f64 / 1e9);
    let _ = writeln!(out, "{name}_count {}", h.count);
}
