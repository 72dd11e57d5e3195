//! Part of the collector (… → record → **collector** → summary → report): the end of a run.
//! Turns the collector's histograms and counters, the workers' own stats and the `Plan` into
//! the `Summary`, checks the bookkeeping invariants and judges whether the client's overhead
//! leaves the figures trustworthy. Runs once, after the last record; never prints.

use super::log::RequestLog;
use super::sidecar::RunSidecar;
use super::{Collector, Dist, Measured, RunFacts, Settings, WorkerStats};
use crate::summary::{
    Achieved, Counts, Exit, Host, InvalidCause, Latency, Overhead, Stats, Summary, TargetLoad,
    Throughput, Tokens, Tool, Verdict, WorkerOverhead, SCHEMA_VERSION,
};
use crate::summary::{Metric, NetDelta, QueueModel};
use std::io;

const NS_PER_S: f64 = 1e9;

/// A worker busier than this share of its wall time was saturated: its stamps waited.
const SATURATED_CPU_FRACTION: f64 = 0.95;
/// Open loop: an achieved rate below this share of the schedule's means the load was not offered.
const MIN_RATE_FRACTION: f64 = 0.99;

impl Collector {
    /// Ends the run: closes `requests.jsonl`, writes the `run.json` sidecar beside it and
    /// builds the summary. (`plan` is the one the collector was made from; its settings were
    /// taken then.)
    pub fn finish(mut self, mut facts: RunFacts) -> io::Result<Summary> {
        let name = super::log::file_name(self.settings.plan.records);
        close_log(
            self.log.take(),
            self.log_error.take(),
            name,
            &mut facts.warnings,
        );
        self.close_interval_logs(&mut facts.warnings);
        let host = Host::detect();
        if let Some(dir) = &self.out_dir {
            let sidecar = RunSidecar::new(&facts, &host, &self.settings.config);
            if let Err(e) = sidecar.write(dir) {
                facts.warnings.push(format!(
                    "{} could not be written ({e}): `ringbench report` cannot reprint this run",
                    super::sidecar::FILE_NAME
                ));
            }
        }
        Ok(self.summarize(facts, host))
    }

    /// The summary of everything added so far. The same function serves a run and
    /// `ringbench report`, which is why the report reproduces `summary.json` exactly.
    pub fn summarize(&self, facts: RunFacts, host: Host) -> Summary {
        let st = &self.settings;
        let (plan, ps) = (&st.plan, &st.plan.percentiles[..]);
        let mut warnings = facts.warnings.clone();
        let m = &self.m;
        let mut counts = counts(m, self.warmup, facts.scheduled, &mut warnings);
        counts.warmup_by = self.warmup_by.clone();
        data_warnings(m, &mut warnings);
        let duration_ns = duration_ns(m);
        let per_s = |n: f64| (duration_ns > 0).then(|| n * NS_PER_S / duration_ns as f64);
        let throughput = throughput(m, !plan.goodput.is_empty(), per_s);
        // Rates come from send stamps alone: the duration also holds the tail of the last
        // responses and would understate the rate offered (badly for short runs of long
        // answers). The schedule's own rate over the same requests is what the client was
        // asked to match; for Poisson arrivals it differs from the target by chance alone.
        let achieved = Achieved {
            request_rate: m.sent_span.rate_per_s(m.tally.sent),
            schedule_rate: m.intended_span.rate_per_s(m.tally.sent),
            // Little's law: mean number in flight = total time in flight / time observed.
            concurrency_mean: per_s(m.e2e_all_ns as f64 / NS_PER_S),
        };
        let overhead = overhead(st, &facts, m, &achieved, &mut warnings);
        let stages = self.stages.as_ref().map(|t| t.summaries(ps, &mut warnings));
        let verdict = verdict(
            &counts,
            &overhead,
            facts.interrupted,
            plan.max_failed_percent,
        );
        Summary {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            started_at: facts.started_at,
            host,
            config: st.config.clone(),
            counts,
            duration_s: duration_ns as f64 / NS_PER_S,
            throughput,
            target: TargetLoad {
                request_rate: st.target_rate(),
                concurrency: plan.target_concurrency(),
            },
            achieved,
            latency_ms: latency(m, ps),
            tokens: tokens(m),
            overhead,
            warnings,
            interrupted: facts.interrupted,
            timeseries: m.series.finish(),
            workload: facts.workload.clone(),
            verdict,
            server: None,
            stalls: m.stalls.summary(),
            sessions: m
                .sessions
                .as_ref()
                .map(|t| t.summary(ps, st.target_session_rate())),
            cancellations: m.cancels.as_ref().map(|t| t.summary(m.tally.sent, ps)),
            endpoints: m.endpoints.as_ref().map(|t| t.summary(ps, duration_ns)),
            stages,
            tools: m
                .tools
                .summary(st.tools_offered() && plan.endpoint.generates()),
            pooling: m.pooling.as_ref().map(|p| p.summary(plan.endpoint, ps)),
            upload: Some(m.upload.summary(ps, per_s)),
            shard: facts.shard,
            clock: facts.clock,
            merge: facts.merge,
            served: facts.served,
            errors: m.errors.summary(),
            network: super::network::network(&facts.workers, ps, duration_ns),
        }
    }
}

/// The rates over the measured duration (`per_s`); goodput's only `with_slos`.
fn throughput(m: &Measured, with_slos: bool, per_s: impl Fn(f64) -> Option<f64>) -> Throughput {
    Throughput {
        requests_per_s: per_s(m.tally.ok as f64),
        output_tokens_per_s: per_s(m.output_tokens as f64),
        total_tokens_per_s: per_s((m.isl.client_total + m.output_tokens) as f64),
        goodput_requests_per_s: per_s(m.good as f64).filter(|_| with_slos),
        goodput_output_tokens_per_s: per_s(m.good_output_tokens as f64).filter(|_| with_slos),
        good_fraction: (with_slos && m.tally.sent > 0).then(|| m.good as f64 / m.tally.sent as f64),
        inputs_per_s: m.pooling.as_ref().and_then(|p| per_s(p.inputs as f64)),
        input_tokens_per_s: per_s(m.isl.client_total as f64),
        server_input_tokens_per_s: m
            .isl
            .server_total_of_all(m.tally.ok)
            .and_then(|n| per_s(n as f64)),
    }
}

/// The token totals: the input side from the ISL tally (both counts), the output side here.
fn tokens(m: &Measured) -> Tokens {
    let mut t = Tokens {
        output_total: m.output_tokens,
        output_source: m.output_source.clone(),
        ..Tokens::default()
    };
    m.isl.fill(&mut t);
    t
}

/// The run's exit status and its reasons, from the counts and the overhead verdict.
fn verdict(c: &Counts, o: &Overhead, interrupted: bool, max_failed: Option<f64>) -> Verdict {
    let mut v = Verdict {
        none_succeeded: c.tally.ok == 0,
        failed_percent: (c.tally.sent > 0)
            .then(|| c.tally.failed as f64 * 100.0 / c.tally.sent as f64),
        max_failed_percent: max_failed,
        ..Verdict::default()
    };
    if interrupted {
        v.reasons.push("a signal stopped the run".into());
    }
    if v.none_succeeded {
        let kinds: Vec<String> = c
            .failed_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        v.reasons.push(match c.tally.sent {
            0 => "no measured request was sent".to_string(),
            sent => format!(
                "no measured request succeeded: {} of {sent} failed ({}), {} cancelled",
                c.tally.failed,
                if kinds.is_empty() {
                    "none".into()
                } else {
                    kinds.join(", ")
                },
                c.tally.cancelled
            ),
        });
    }
    if !o.valid {
        v.reasons.push(
            match o.invalid_cause {
                Some(InvalidCause::HostContention) => {
                    "the machine, not the client, made the run invalid: other programs held the \
                     worker's CPU (host contention; see overhead)"
                }
                Some(InvalidCause::ClientSaturation) => {
                    "the client's own overhead made the run invalid: a worker saturated (see \
                     overhead)"
                }
                _ => "the client's own overhead made the run invalid (see overhead)",
            }
            .into(),
        );
    }
    if v.gate_failed() {
        v.reasons.push(format!(
            "{:.2}% of measured requests failed, above --max-failed {}%",
            v.failed_percent.unwrap_or(0.0),
            max_failed.unwrap_or(0.0)
        ));
    }
    v.exit_code = Exit::of_run(&v, interrupted, o.valid, false).code();
    v
}

/// A log that could not be written costs the log, not the summary: say so loudly.
fn close_log(
    log: Option<RequestLog>,
    error: Option<io::Error>,
    name: &str,
    warnings: &mut Vec<String>,
) {
    let closed = match (log, error) {
        (_, Some(e)) => Err(e),
        (Some(log), None) => log.close(),
        (None, None) => Ok(()),
    };
    if let Err(e) = closed {
        warnings.push(format!(
            "{} is incomplete: writing it failed ({e}); what was written is left under its \
             temporary name (.{name}.tmp.PID); the summary's figures are unaffected",
            name
        ));
    }
}

impl Collector {
    /// Closes the `.hlog` interval logs, if any. They are a convenience beside the records: a
    /// failure is a warning.
    pub(super) fn close_interval_logs(&mut self, warnings: &mut Vec<String>) {
        close_hlogs(self.hlog.take(), self.hlog_error.take(), warnings);
    }
}

fn close_hlogs(
    logs: Option<super::hlog::IntervalLogs>,
    error: Option<io::Error>,
    warnings: &mut Vec<String>,
) {
    let closed = match (logs, error) {
        (_, Some(e)) => Err(e),
        (Some(logs), None) => logs.close(),
        (None, None) => Ok(()),
    };
    if let Err(e) = closed {
        warnings.push(format!(
            "the .hlog interval logs are incomplete: writing them failed ({e}); \
             the request log and the summary are unaffected"
        ));
    }
}

fn counts(m: &Measured, warmup: u64, scheduled_total: u64, warnings: &mut Vec<String>) -> Counts {
    // Records come from workers: one lost or duplicated is a fact to report loudly, not a
    // reason to abort the summary (so a warning, not an assertion).
    let scheduled = scheduled_total.saturating_sub(warmup);
    let t = m.tally;
    if scheduled_total != warmup + t.sent + t.not_sent {
        warnings.push(format!(
            "INVARIANT BROKEN: scheduled {scheduled_total} (warm-up {warmup} included) but \
             {} records arrived: measured scheduled {scheduled} != sent {} + not_sent {}",
            warmup + t.sent + t.not_sent,
            t.sent,
            t.not_sent
        ));
    }
    Counts {
        scheduled,
        tally: t,
        cancelled_by_client: m.cancelled_by_client,
        warmup,
        failed_by_kind: m
            .failed_by_kind
            .iter()
            .map(|(&(kind, status), &n)| (kind.kind_key(status), n))
            .collect(),
        osl_mismatch: m.osl_mismatch,
        warmup_by: Default::default(),
    }
}

fn data_warnings(m: &Measured, warnings: &mut Vec<String>) {
    warnings.extend(m.isl.warning());
    if m.osl_mismatch > 0 {
        warnings.push(format!(
            "{} of {} successful requests got a different number of output tokens than asked \
             (server usage vs max_tokens): the server did not honour ignore_eos/min_tokens, so \
             OSL-dependent figures are not at the asked length",
            m.osl_mismatch, m.tally.ok
        ));
    }
    if m.bad_stamps > 0 {
        warnings.push(format!(
            "{} records had missing or out-of-order stamps (sent ≤ head ≤ first token ≤ last \
             token ≤ done); their latencies are clamped at 0",
            m.bad_stamps
        ));
    }
    if m.events_dropped > 0 {
        warnings.push(format!(
            "{} events exceeded the per-record bound and were not stored: ITL and max stall miss them",
            m.events_dropped
        ));
    }
    if m.no_token > 0 {
        warnings.push(format!(
            "{} of {} successful streamed requests carried no token-bearing event (no text, \
             and no usage to count empty-text tokens by): they are not in TTFT, TTST, TPOT, ITL \
             or max stall",
            m.no_token, m.tally.ok
        ));
    }
    if m.empty_text_only > 0 {
        warnings.push(format!(
            "{} of {} successful streamed requests streamed only empty-text tokens (`\"content\": \
             \"\"` chunks, the server's usage counting tokens): their TTFT is their first such \
             chunk, as vLLM counts it; they have no TTFO or TTFV",
            m.empty_text_only, m.tally.ok
        ));
    }
    if m.delivery_negative > 0 {
        warnings.push(format!(
            "{} events were stamped before the server's write stamp (clocks disagree); left out \
             of delivery delay",
            m.delivery_negative
        ));
    }
    let d = &m.dists;
    let clamped: u64 = d
        .metrics
        .iter()
        .chain([&d.sched_lag, &d.delivery_delay])
        .map(|d| d.clamped())
        .sum::<u64>()
        + m.pooling.as_ref().map_or(0, |p| p.clamped())
        + m.upload.clamped();
    if clamped > 0 {
        warnings.push(format!(
            "{clamped} values above one hour were clamped in the histograms (counted; their \
             percentiles read as 1 h, their mean and max are exact)"
        ));
    }
}

/// Last `done_ns` − first `sent_ns` over measured requests (0 when nothing was measured).
fn duration_ns(m: &Measured) -> u64 {
    match (m.sent_span.first_ns, m.last_done_ns) {
        (Some(first), Some(last)) => last.saturating_sub(first),
        _ => 0,
    }
}

fn latency(m: &Measured, percentiles: &[f64]) -> Latency {
    let mut l = Latency::default();
    for metric in Metric::ALL {
        *l.get_mut(metric) = m.dists.metrics[metric.index()].stats_ms(percentiles);
    }
    l
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

fn overhead(
    plan: &Settings,
    facts: &RunFacts,
    m: &Measured,
    achieved: &Achieved,
    warnings: &mut Vec<String>,
) -> Overhead {
    let ws = &facts.workers;
    let sum = |f: fn(&WorkerStats) -> u64| ws.iter().map(f).sum::<u64>();
    let cpu_ns = sum(|w| w.cpu_ns);
    let busy_ns = ws.iter().map(busy_ns).sum::<u64>();
    let mut loop_lag = Dist::new();
    ws.iter()
        .for_each(|w| loop_lag.merge_histogram(&w.loop_lag));
    let sched_lag_ms = m.dists.sched_lag.stats_ms(&plan.plan.percentiles);
    let loop_lag_ms = loop_lag.stats_ms(&plan.plan.percentiles);
    // A p99 of fewer than 100 probes (under a second of run) is their maximum: a short run's
    // first wake-up, not a finding (the console marks it with `*` like every small sample).
    let judged = !loop_lag_ms.is_small("p99");
    if let Some(p99) = loop_lag_ms
        .p99
        .filter(|&p| judged && p > plan.plan.max_lag_ms)
    {
        warnings.push(format!(
            "event-loop lag p99 {p99:.3} ms is above the {:.3} ms bound: reads may have been \
             stamped late",
            plan.plan.max_lag_ms
        ));
    }
    let workers: Vec<WorkerOverhead> = ws.iter().map(worker_overhead).collect();
    warn_queues(&workers, warnings);
    let mut invalid_reasons = judge_overhead(plan, achieved, sched_lag_ms.p99, ws);
    judge_host(&workers, &mut invalid_reasons);
    if let Some(net) = &facts.kernel_net {
        judge_kernel_net(net, &mut invalid_reasons, warnings);
    }
    if let Some(merge) = &facts.merge {
        judge_shards(merge, &mut invalid_reasons);
    }
    let (kernel_rx_delay_ms, kernel_rx_delay_null_reason) = kernel_rx(plan, ws, warnings);
    let invalid_cause = invalid_cause(&invalid_reasons, &workers);
    let host_wait_percent_max = workers
        .iter()
        .filter_map(|w| w.host_wait_percent)
        .reduce(f64::max);
    Overhead {
        delivery_delay_ms: (m.dists.delivery_delay.count() > 0)
            .then(|| m.dists.delivery_delay.stats_ms(&plan.plan.percentiles)),
        sched_lag_ms,
        loop_lag_ms,
        worker_cpu_percent: ratio(cpu_ns, sum(|w| w.wall_ns)).map(|r| r * 100.0),
        worker_cpu_percent_max: ws.iter().filter_map(cpu_percent).reduce(f64::max),
        pacer_spin_percent_max: ws.iter().filter_map(spin_percent).reduce(f64::max),
        cpu_ns_per_request: ratio(cpu_ns, sum(|w| w.counts.requests)),
        cpu_ns_per_event: ratio(cpu_ns, sum(|w| w.counts.events)),
        busy_cpu_ns_per_request: ratio(busy_ns, sum(|w| w.counts.requests)),
        busy_cpu_ns_per_event: ratio(busy_ns, sum(|w| w.counts.events)),
        events_per_read_mean: ratio(sum(|w| w.counts.events), sum(|w| w.counts.reads)),
        bytes_per_read_mean: ratio(sum(|w| w.counts.bytes), sum(|w| w.counts.reads)),
        io_driver: facts.io_driver.clone(),
        channel_full: sum(|w| w.counts.channel_full),
        workers,
        sim: facts.sim.clone(),
        valid: invalid_reasons.is_empty(),
        invalid_cause,
        host_wait_percent_max,
        invalid_reasons,
        kernel_rx_delay_ms,
        kernel_rx_delay_null_reason,
        kernel_net: facts.kernel_net.clone(),
    }
}

/// A merged run is valid only if every shard was, and only if every shard is there.
fn judge_shards(merge: &crate::summary::shard::MergeInfo, reasons: &mut Vec<String>) {
    for p in merge.parts.iter().filter(|p| !p.valid) {
        reasons.push(format!(
            "shard {}/{} ({}) was invalid: {}",
            p.index,
            merge.shards,
            p.dir,
            p.invalid_reasons.join("; ")
        ));
    }
    if !merge.complete {
        reasons.push(format!(
            "the merge is incomplete: shards missing {:?}, duplicated {:?} (of {})",
            merge.missing, merge.duplicated, merge.shards
        ));
    }
}

/// Packets the kernel dropped on the client's own CPUs make the run invalid: those requests
/// waited for TCP's recovery (a loss probe or a retransmit timeout), not for the server.
/// Retransmits are host-wide and may be the network's, so they are a warning.
fn judge_kernel_net(net: &NetDelta, reasons: &mut Vec<String>, warnings: &mut Vec<String>) {
    if let Some(n) = net.backlog_drops_client_cpus.filter(|&n| n > 0) {
        reasons.push(format!(
            "the kernel dropped {n} packets from the input backlog of the client's CPUs \
             (net.core.netdev_max_backlog full: the core was too busy to run its softirq); \
             the requests they belonged to waited for TCP retransmits"
        ));
    }
    let timeouts = net.tcp_retransmit_timeouts.unwrap_or(0);
    let probes = net.tcp_loss_probes.unwrap_or(0);
    if timeouts + probes > 0 {
        warnings.push(format!(
            "TCP on this host recovered lost segments during the run ({} retransmitted, {timeouts} \
             retransmit timeouts, {probes} loss probes; host-wide counters): some latencies \
             include that recovery",
            net.tcp_retransmitted_segments.unwrap_or(0)
        ));
    }
}

/// The kernel → user delay over all workers, or why there is none. Reads that should have
/// carried a stamp and did not, and stamps dropped after a clock step, are warned about.
fn kernel_rx(
    plan: &Settings,
    ws: &[WorkerStats],
    warnings: &mut Vec<String>,
) -> (Option<Stats>, Option<String>) {
    let mut delay = Dist::new();
    ws.iter()
        .for_each(|w| delay.merge_histogram(&w.kernel_rx.delay_ns));
    let unstamped: u64 = ws.iter().map(|w| w.kernel_rx.unstamped).sum();
    let negative: u64 = ws.iter().map(|w| w.kernel_rx.negative).sum();
    if unstamped > 0 {
        warnings.push(format!(
            "{unstamped} reads carried no kernel receive stamp; kernel_rx_delay_ms leaves them out"
        ));
    }
    if negative > 0 {
        warnings.push(format!(
            "{negative} kernel receive stamps were later than the read's own stamp (a clock \
             step during the run?) and were left out"
        ));
    }
    if delay.count() > 0 {
        return (Some(delay.stats_ms(&plan.plan.percentiles)), None);
    }
    let why = ws
        .iter()
        .find_map(|w| w.kernel_rx.unavailable.clone())
        .unwrap_or_else(|| "no read carried a kernel receive stamp".into());
    (None, Some(why))
}

fn cpu_percent(w: &WorkerStats) -> Option<f64> {
    ratio(w.cpu_ns, w.wall_ns).map(|r| r * 100.0)
}

/// CPU less the pacer's idle polling: the work the worker did. (The idle passes ran on the
/// worker's thread, so they are within its CPU time.)
fn busy_ns(w: &WorkerStats) -> u64 {
    w.cpu_ns.saturating_sub(w.pacer_idle_ns)
}

fn busy_percent(w: &WorkerStats) -> Option<f64> {
    ratio(busy_ns(w), w.wall_ns).map(|r| r * 100.0)
}

/// Share of the worker's wall time it waited, runnable, for its CPU.
fn host_wait_percent(w: &WorkerStats) -> Option<f64> {
    ratio(w.runnable_wait_ns?, w.wall_ns).map(|r| r * 100.0)
}

/// Who made an invalid run invalid: a saturated worker is the client's doing (it had its CPU
/// and used all of it); else a worker held back from its CPU long enough is the host's; else
/// unattributed. `None` when the run is valid.
fn invalid_cause(reasons: &[String], workers: &[WorkerOverhead]) -> Option<InvalidCause> {
    if reasons.is_empty() {
        return None;
    }
    let saturated = workers
        .iter()
        .filter_map(|w| w.busy_percent)
        .any(|p| p > SATURATED_CPU_FRACTION * 100.0);
    let held = workers
        .iter()
        .filter_map(|w| w.host_wait_percent)
        .any(|p| p >= InvalidCause::HOST_WAIT_PERCENT);
    Some(if saturated {
        InvalidCause::ClientSaturation
    } else if held {
        InvalidCause::HostContention
    } else {
        InvalidCause::Unattributed
    })
}

/// The host's share of each held-back worker's wall time, as an invalid reason that says what
/// to do: only when the run broke a bound already (a wait alone does not make a run invalid).
fn judge_host(workers: &[WorkerOverhead], reasons: &mut Vec<String>) {
    if reasons.is_empty() {
        return;
    }
    for w in workers {
        let Some(pct) = w
            .host_wait_percent
            .filter(|&p| p >= InvalidCause::HOST_WAIT_PERCENT)
        else {
            continue;
        };
        reasons.push(format!(
            "host contention: other threads or processes held worker {}'s CPU {} for {pct:.1}% \
             of its run (runnable, not running; {} preemptions): its sends were late for want \
             of the CPU, not for the client's work; pin the client to a quiet CPU (--cpus) or \
             stop what else runs there",
            w.worker, w.cpu, w.involuntary_switches
        ));
    }
}

fn worker_overhead(w: &WorkerStats) -> WorkerOverhead {
    let lag: Stats = {
        let mut d = Dist::new();
        d.merge_histogram(&w.loop_lag);
        d.stats_ms(&[])
    };
    WorkerOverhead {
        worker: w.worker,
        cpu: w.cpu,
        cpu_percent: cpu_percent(w),
        loop_lag_p99_ms: lag.p99,
        counts: w.counts,
        pacer_spin_percent: spin_percent(w),
        pacer_idle_percent: ratio(w.pacer_idle_ns, w.wall_ns).map(|r| r * 100.0),
        busy_percent: busy_percent(w),
        host_wait_percent: host_wait_percent(w),
        involuntary_switches: w.involuntary_switches,
        pacer_spin_budget_us: (w.wall_ns > 0).then(|| w.pacer_spin_budget_ns as f64 / 1e3),
        queue: super::queue::model(w, busy_ns(w)),
    }
}

/// A worker whose utilisation passed `QueueModel::RHO_WARN`: its queueing delay is about to
/// grow faster than its load, before the loop lag shows it.
fn warn_queues(workers: &[WorkerOverhead], warnings: &mut Vec<String>) {
    for w in workers {
        let Some(q) = w.queue.as_ref().filter(|q| q.rho > QueueModel::RHO_WARN) else {
            continue;
        };
        let wait = q
            .predicted_wait_us
            .map_or("unbounded".to_string(), |us| format!("{us:.1} µs"));
        let lag = q
            .loop_lag_mean_us
            .map_or("n/a".to_string(), |us| format!("{us:.1} µs"));
        warnings.push(format!(
            "worker {} (cpu {}): utilisation ρ = {:.2} is above {}: as an M/G/1 queue its mean \
             wait grows as ρ/(1 − ρ) (predicted {wait}, loop lag mean {lag}); more --cpus, or a \
             lower load, keeps the client's own delay out of the figures",
            w.worker,
            w.cpu,
            q.rho,
            QueueModel::RHO_WARN
        ));
    }
}

fn spin_percent(w: &WorkerStats) -> Option<f64> {
    ratio(w.pacer_spun_ns, w.wall_ns).map(|r| r * 100.0)
}

/// Why the client's own overhead makes the run's figures untrustworthy; empty means valid.
/// Each reason names the figure, its value and the bound it broke.
///
/// The rate bound (open loop only) compares the achieved rate with the rate the schedule
/// itself set for the same requests, falling back to the target when that is unknown: a
/// seeded Poisson schedule of n arrivals realizes the target only within about 1/√n (3% at
/// n = 1000), so comparing with the target would fail good runs by chance.
pub fn judge_overhead(
    plan: &Settings,
    achieved: &Achieved,
    sched_lag_p99_ms: Option<f64>,
    workers: &[WorkerStats],
) -> Vec<String> {
    let mut reasons = Vec::new();
    let asked = plan
        .target_rate()
        .map(|t| achieved.schedule_rate.unwrap_or(t));
    if let (Some(asked), Some(got)) = (asked, achieved.request_rate) {
        if got < MIN_RATE_FRACTION * asked {
            reasons.push(format!(
                "achieved rate {got:.2} req/s is below {:.0}% of the {asked:.2} req/s the schedule \
                 asked for",
                MIN_RATE_FRACTION * 100.0
            ));
        }
    }
    if let Some(p99) = sched_lag_p99_ms.filter(|&p| p > plan.plan.max_lag_ms) {
        reasons.push(format!(
            "scheduling lag p99 {p99:.3} ms is above the {:.3} ms bound (--max-lag)",
            plan.plan.max_lag_ms
        ));
    }
    for w in workers {
        let Some(pct) = busy_percent(w) else {
            continue;
        };
        if pct > SATURATED_CPU_FRACTION * 100.0 {
            reasons.push(format!(
                "worker {} (cpu {}) saturated: busy {pct:.1}% of its wall time (CPU less idle \
                 polling; bound {:.0}%)",
                w.worker,
                w.cpu,
                SATURATED_CPU_FRACTION * 100.0
            ));
        }
    }
    let full: u64 = workers.iter().map(|w| w.counts.channel_full).sum();
    if full > 0 {
        reasons.push(format!(
            "{full} records found the collector channel full (the collector fell behind; workers \
             held them)"
        ));
    }
    reasons
}
