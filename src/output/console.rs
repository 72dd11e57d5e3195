//! Stage 9, the end of the flow (… → record → collector → summary → **report**): turns a
//! finished `Summary` into what people and programs read — the console block, the live
//! progress line, `summary.json`. It is the only library module that prints, and it only
//! prints: every figure it shows is already in the `Summary`; it computes none.
//!
//! The console block follows `vllm bench serve`'s layout (`{:<40} {:<10}` rows, 50-column
//! rules) so that readers coming from it find their figures where they expect them.

use super::console_rows::{num, row, rule, WIDTH};
use crate::collector::definitions::ToolFigures;
use crate::collector::LiveCounts;
use crate::plan::workload::TraceLoad;
use crate::plan::{Load, Plan};
use crate::record::Outcome;
use crate::summary::apis::{Pooling, ToolCalls};
use crate::summary::figure::{Figure, FigureValue};
use crate::summary::metric::{role, Metric};
use crate::summary::stages::StageSummary;
use crate::summary::upload::Upload;
use crate::summary::workload::{Realized, WorkloadStats};
use crate::summary::{percentile_label, Overhead, Stats, Summary, FIXED_PERCENTILES};
use std::io::{self, Write};
use std::path::Path;

/// The run's summary file, written in the `--out` folder.
pub const SUMMARY_FILE: &str = "summary.json";
const SMALL_MARK: &str = " *";

/// Writes the run's report block to `out`, in vLLM's layout: results, a block each for TTFT,
/// TPOT, ITL and E2E, the other latencies, the client's overhead and the warnings.
pub fn print_console(summary: &Summary, out: &mut impl Write) -> io::Result<()> {
    print_run_console(summary, false, out)
}

/// `print_console` for a run whose exit status `--allow-invalid` may change: the verdict
/// row says what the process will exit with (`INVALID (allowed, exit 0)`).
pub fn print_run_console(
    summary: &Summary,
    allow_invalid: bool,
    out: &mut impl Write,
) -> io::Result<()> {
    let s = summary;
    writeln!(out, "{}", rule(" Serving Benchmark Result ", '='))?;
    results(s, out)?;
    let mut small = false;
    for m in Metric::with(role::BLOCK) {
        small |= section(
            out,
            m.title(),
            m.name(),
            s.latency_ms.get(m),
            &percentiles_shown(s),
        )?;
    }
    small |= other_section(s, out)?;
    small |= pooling_block(s, out)?;
    small |= upload_block(s.upload.as_ref(), out)?;
    tools_block(s.tools.as_ref(), out)?;
    super::console_users::sessions_block(s.sessions.as_ref(), out)?;
    super::console_users::cancellations_block(s.cancellations.as_ref(), out)?;
    super::console_users::endpoints_block(s.endpoints.as_deref(), out)?;
    small |= stages_block(s, out)?;
    super::console_server::server_block(s.server.as_ref(), out)?;
    let ttft = Some(s.latency_ms.get(Metric::Ttft)).filter(|t| t.count > 0);
    super::console_net::network_block(s.network.as_ref(), ttft, out)?;
    overhead(s, out)?;
    verdict(s, allow_invalid, out)?;
    if !s.warnings.is_empty() {
        writeln!(out, "{}", rule("Warnings", '-'))?;
        for w in &s.warnings {
            writeln!(out, "  - {w}")?;
        }
    }
    writeln!(out, "{}", "=".repeat(WIDTH))?;
    if small {
        writeln!(
            out,
            "{} from fewer samples than the percentile needs (p99: 100, p99.9: 1000)",
            SMALL_MARK.trim()
        )?;
    }
    Ok(())
}

/// Backlog drops on the client's CPUs and host-wide TCP retransmits over the run.
fn kernel_net(o: &Overhead) -> String {
    let Some(n) = &o.kernel_net else {
        return "n/a".into();
    };
    let c = |v: Option<u64>| v.map_or("n/a".into(), |v| v.to_string());
    format!(
        "{} / {} (host-wide)",
        c(n.backlog_drops_client_cpus),
        c(n.tcp_retransmitted_segments)
    )
}

fn results(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    let c = &s.counts;
    let t = &c.tally;
    if s.interrupted {
        row(out, "INTERRUPTED:", "figures cover the run until the stop")?;
    }
    row(out, "Successful requests:", t.ok)?;
    row(out, "Failed requests:", t.failed)?;
    failures(s, out)?;
    if t.cancelled > 0 || t.not_sent > 0 {
        row(
            out,
            "Cancelled / not sent:",
            format!("{} / {}", t.cancelled, t.not_sent),
        )?;
    }
    if c.warmup > 0 {
        row(out, "Warm-up requests (excluded):", c.warmup)?;
        let w = &c.warmup_by;
        row(
            out,
            "  by count / by duration / both:",
            format!("{} / {} / {}", w.count, w.duration, w.both),
        )?;
    }
    row(
        out,
        "Benchmark duration (s):",
        format!("{:.2}", s.duration_s),
    )?;
    if !streamed(s) {
        row(out, "Streaming:", not_streamed(s))?;
    }
    row(out, "Total input tokens:", input_tokens(s))?;
    if s.pooling.is_none() {
        row(out, "Total generated tokens:", s.tokens.output_total)?;
    }
    prefix_reuse(s, out)?;
    let t = &s.throughput;
    row(out, "Request throughput (req/s):", num(t.requests_per_s, 2))?;
    if t.goodput_requests_per_s.is_some() {
        row(
            out,
            "Request goodput (req/s):",
            num(t.goodput_requests_per_s, 2),
        )?;
        row(
            out,
            "Good fraction (%):",
            num(t.good_fraction.map(|f| f * 100.0), 2),
        )?;
    }
    if s.pooling.is_none() {
        row(
            out,
            "Output token throughput (tok/s):",
            num(t.output_tokens_per_s, 2),
        )?;
        row(
            out,
            "Total Token throughput (tok/s):",
            num(t.total_tokens_per_s, 2),
        )?;
    }
    if let Some(target) = s.target.request_rate {
        let achieved = num(s.achieved.request_rate, 2);
        let schedule = num(s.achieved.schedule_rate, 2);
        let rates = format!("{achieved} / {target:.2} (schedule {schedule})");
        row(out, "Achieved / target rate (req/s):", rates)?;
    }
    row(
        out,
        "Mean concurrency (Little's law):",
        num(s.achieved.concurrency_mean, 2),
    )
}

/// Longest message the console prints of a failure group, characters.
const CONSOLE_MESSAGE_CHARS: usize = 100;

/// The failure counts by kind, then the three most frequent reasons (`errors`) and, when
/// the server refused prompts as longer than its context, the flags that cap them.
fn failures(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    for (kind, n) in &s.counts.failed_by_kind {
        row(out, &format!("  {}:", failure_label(kind)), n)?;
    }
    for g in s.errors.iter().take(3) {
        let status = match g.status {
            Some(st) if !g.kind.starts_with("http_") => format!(" (status {st})"),
            _ => String::new(),
        };
        let message = match &g.message {
            Some(m) if m.chars().count() > CONSOLE_MESSAGE_CHARS => {
                format!(
                    "{}…",
                    m.chars().take(CONSOLE_MESSAGE_CHARS).collect::<String>()
                )
            }
            Some(m) => m.clone(),
            None => "(no message from the server)".into(),
        };
        writeln!(out, "    {} × {}{status}: {message}", g.count, g.kind)?;
    }
    let refused: u64 = s
        .errors
        .iter()
        .filter(|g| g.is_context_overflow())
        .map(|g| g.count)
        .sum();
    if refused > 0 {
        writeln!(out, "{}", context_hint(s, refused))?;
    }
    Ok(())
}

/// What to do about prompts the server refused as longer than its context window.
fn context_hint(s: &Summary, refused: u64) -> String {
    let window = s.errors.iter().find_map(|g| g.context_tokens());
    let window_text = window.map_or(String::new(), |n| format!(" of {n} tokens"));
    let turns = s.sessions.is_some();
    let cap = match (turns, window) {
        (true, Some(n)) => format!("cap the conversations' history with --max-context-tokens {n} (less the answer's --output-tokens)"),
        (true, None) => "cap the conversations' history with --max-context-tokens N (the server's context less --output-tokens)".into(),
        (false, _) => "shorten the prompts with --input-tokens or the answers with --output-tokens".into(),
    };
    format!("  hint: the server refused {refused} request(s) as longer than its context{window_text}: {cap}")
}

/// A failure kind as the console names it: the `failed_by_kind` key, or what it means where
/// the key alone would puzzle a reader.
fn failure_label(kind: &str) -> &str {
    match kind {
        k if k == Outcome::WrongApi.name() => "answers in another API's shape",
        k => k,
    }
}

/// The responses came as a stream: `--stream` (the default) on a generating endpoint.
fn streamed(s: &Summary) -> bool {
    s.pooling.is_none() && s.config["stream"].as_bool().unwrap_or(true)
}

/// Why the stream's figures (TTFT, TPOT, ITL, output tokens) are not shown, said once.
fn not_streamed(s: &Summary) -> String {
    match &s.pooling {
        Some(p) => format!(
            "not streamed ({} answers one body: E2E-type latencies only)",
            p.endpoint
        ),
        None => "not streamed (--no-stream: E2E-type latencies only)".to_string(),
    }
}

/// One row per figure of a `figure_block`, under the block's rule.
fn figure_rows(out: &mut impl Write, figures: &[Figure], values: &[FigureValue]) -> io::Result<()> {
    for (f, v) in figures.iter().zip(values) {
        let shown = match *v {
            FigureValue::Count(n) => n.to_string(),
            FigureValue::Number(x) => num(x, 2),
        };
        row(out, f.label, shown)?;
    }
    Ok(())
}

/// A pooling run's own figures: inputs answered, input rates both counts, answer sizes.
/// Returns whether a shown percentile is marked as from too few samples.
fn pooling_block(s: &Summary, out: &mut impl Write) -> io::Result<bool> {
    let Some(p) = s.pooling.as_ref() else {
        return Ok(false);
    };
    writeln!(out, "{}", rule(&format!("Pooling ({})", p.endpoint), '-'))?;
    figure_rows(out, &Pooling::FIGURES, &p.values())?;
    let t = &s.throughput;
    row(out, "Input throughput (inputs/s):", num(t.inputs_per_s, 2))?;
    row(
        out,
        "Input token throughput (tok/s):",
        format!(
            "{} (client) · {} (server)",
            num(t.input_tokens_per_s, 2),
            num(t.server_input_tokens_per_s, 2)
        ),
    )?;
    bytes_row(
        out,
        "Response bytes mean / median / P99:",
        &p.response_bytes,
    )
}

/// A byte-size distribution as mean / median / P99; whether a shown percentile is marked as
/// from too few samples.
fn bytes_row(out: &mut impl Write, label: &str, b: &Stats) -> io::Result<bool> {
    row(
        out,
        label,
        format!(
            "{} / {} / {}",
            num(b.mean, 0),
            marked_n(b, "p50", 0),
            marked_n(b, "p99", 0)
        ),
    )?;
    Ok(b.count > 0 && (b.is_small("p50") || b.is_small("p99")))
}

/// What the requests carried: body bytes always; images and audio when any was sent.
/// Returns whether a shown percentile is marked as from too few samples.
fn upload_block(u: Option<&Upload>, out: &mut impl Write) -> io::Result<bool> {
    let Some(u) = u.filter(|u| u.body_bytes.count > 0) else {
        return Ok(false);
    };
    writeln!(out, "{}", rule("Upload", '-'))?;
    let small = bytes_row(
        out,
        "Request body bytes mean / median / P99:",
        &u.body_bytes,
    )?;
    let media = u.images > 0 || u.audio_ms > 0;
    let (figures, values): (Vec<Figure>, Vec<FigureValue>) = Upload::FIGURES
        .into_iter()
        .zip(u.values())
        .filter(|(f, _)| media || f.key.starts_with("body_bytes"))
        .unzip();
    figure_rows(out, &figures, &values)?;
    Ok(small)
}

/// The tool calls the answers made (`--tools`, or any answer that called one).
fn tools_block(t: Option<&ToolCalls>, out: &mut impl Write) -> io::Result<()> {
    let Some(t) = t else {
        return Ok(());
    };
    writeln!(out, "{}", rule("Tool calls", '-'))?;
    figure_rows(out, &ToolCalls::FIGURES, &t.values())
}

/// The client's input total and how it was counted, then the server's `usage.prompt_tokens`
/// total beside it when the server reported one: `64000 (client, approximate) · server 115000
/// (×1.80)`, with `over N of M requests` when not every request reported.
fn input_tokens(s: &Summary) -> String {
    let t = &s.tokens;
    let how = match (t.input_source.tokenizer, t.input_source.approximate) {
        (0, 0) => return t.input_total.to_string(),
        (_, 0) => "client, tokenizer",
        (0, _) => "client, approximate",
        _ => "client",
    };
    let mut line = format!("{} ({how})", t.input_total);
    if let (Some(server), Some(ratio)) = (t.input_total_server, t.input_server_ratio) {
        line.push_str(&format!(" · server {server}"));
        if t.input_server_reports < s.counts.tally.ok {
            let (n, of) = (t.input_server_reports, s.counts.tally.ok);
            line.push_str(&format!(" over {n} of {of} requests"));
        }
        line.push_str(&format!(" (×{ratio:.2})"));
    }
    line
}

/// The four blocks `vllm bench serve` prints, in its order.
/// With shared prefixes: the reuse the workload was built for beside what the server says
/// it served from its cache (`usage.prompt_tokens_details.cached_tokens`).
/// Without them: what the server said it served from cache, when it said.
/// And how many distinct prompts the run sent.
fn prefix_reuse(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    let Some(w) = s.workload.as_ref() else {
        return Ok(());
    };
    if let (Some(sent), Some(distinct)) = (w.prompts_sent, w.distinct_prompts_sent) {
        let how = match (&w.salt, s.config["workload"]["prompt_nonce"].as_u64()) {
            (Some(salt), Some(nonce)) => {
                format!(" (salt {} tokens, --prompt-nonce {nonce})", salt.tokens)
            }
            (None, _) => " (unsalted)".to_string(),
            _ => String::new(),
        };
        row(
            out,
            "Distinct prompts sent:",
            format!("{distinct} of {sent}{how}"),
        )?;
    }
    if let (Some(sent), Some(distinct)) = (w.images_sent, w.distinct_images_sent) {
        let how = match s.config["workload"]["media"]["salt"].as_bool() {
            Some(false) => " (--no-media-salt)",
            _ if distinct == sent => " (salted per request)",
            _ => "",
        };
        row(
            out,
            "Distinct images sent:",
            format!("{distinct} of {sent}{how}"),
        )?;
    }
    let observed = match w.observed_cached_rate {
        Some(r) => format!("{:.1}% ({} reports)", r * 100.0, w.observed_reports),
        None => "not reported by the server".to_string(),
    };
    match &w.prefix {
        Some(p) => row(
            out,
            "Prefix reuse intended / cached:",
            format!("{:.1}% / {observed}", p.intended_reuse_rate * 100.0),
        )?,
        None if w.observed_cached_rate.is_some() => {
            row(out, "Prompt tokens served from cache:", observed)?
        }
        None => {}
    }
    sim_engine(s, out)
}

/// The built-in simulator's engine, when its model was on: how long requests queued, and
/// whether its KV cache had to evict (which lowers the reuse a workload intended).
fn sim_engine(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    let Some(sim) = s.overhead.sim.as_ref() else {
        return Ok(());
    };
    let n = |k: &str| sim[k].as_u64().unwrap_or(0);
    let queued = n("completions") > 0 && sim["queue_us"]["count"].as_u64().unwrap_or(0) > 0;
    if !queued && n("kv_evictions") == 0 && n("queue_full") == 0 {
        return Ok(());
    }
    let ms = |k: &str| {
        sim["queue_us"][k]
            .as_f64()
            .map_or("-".into(), |us| format!("{:.2}", us / 1e3))
    };
    row(
        out,
        "Simulator queue p50 / p99 (ms):",
        format!("{} / {}", ms("p50"), ms("p99")),
    )?;
    row(
        out,
        "Simulator KV evictions / 429s:",
        format!(
            "{} blocks / {} (queue full){}",
            n("kv_evictions"),
            n("queue_full"),
            match n("kv_evictions") {
                0 => "",
                _ => ": the cache evicted, so reuse is below what fits",
            }
        ),
    )
}

fn other_section(s: &Summary, out: &mut impl Write) -> io::Result<bool> {
    let shown: Vec<_> = Metric::with(role::ROW)
        .map(|m| (m.title(), s.latency_ms.get(m)))
        .filter(|(_, st)| st.count > 0)
        .collect();
    if shown.is_empty() {
        return Ok(false);
    }
    writeln!(
        out,
        "{}",
        rule("Other latencies (ms): mean / median / P99", '-')
    )?;
    for (name, st) in &shown {
        let v = format!(
            "{} / {} / {}",
            num(st.mean, 2),
            marked(st, "p50"),
            marked(st, "p99")
        );
        row(out, &format!("{name}:"), v)?;
    }
    if let Some(st) = &s.stalls {
        let v = format!(
            "{} of gaps, {} of requests (most {})",
            pct(st.gaps_above_percent),
            pct(Some(st.requests_with_stall_percent)),
            st.per_request_max
        );
        row(out, &format!("Stalls > {} ms:", st.stall_ms), v)?;
    }
    Ok(shown
        .iter()
        .any(|(_, st)| st.is_small("p50") || st.is_small("p99")))
}

/// `--stages`: one line per stage (`stage_line`); returns whether a shown percentile is
/// marked as from too few samples.
fn stages_block(s: &Summary, out: &mut impl Write) -> io::Result<bool> {
    let Some(stages) = s.stages.as_ref().filter(|v| !v.is_empty()) else {
        return Ok(false);
    };
    writeln!(out, "{}", rule("Stages: target / achieved req/s, ms", '-'))?;
    let mut small = false;
    for st in stages {
        writeln!(out, "{}", stage_line(st))?;
        let (ttft, e2e) = (stage_stats(st, Metric::Ttft), stage_stats(st, Metric::E2e));
        small |= ttft.is_some_and(|t| t.is_small("p50") || t.is_small("p99"))
            || e2e.is_some_and(|e| e.is_small("p50"));
    }
    Ok(small)
}

fn stage_stats(st: &StageSummary, m: Metric) -> Option<&Stats> {
    st.latency_ms.get(m.key()).filter(|s| s.count > 0)
}

/// One stage in a line: `0  200.00 / 200.00  TTFT p50 1.20 p99 3.40  E2E p50 9.10`
/// (TTFT is left out of a `--no-stream` run, which has none).
pub fn stage_line(st: &StageSummary) -> String {
    let mut line = format!(
        "  {:<2} {:>8.2} / {:<8}",
        st.index,
        st.target_request_rate,
        num(st.achieved_request_rate, 2)
    );
    if let Some(t) = stage_stats(st, Metric::Ttft) {
        line += &format!("  TTFT p50 {} p99 {}", marked(t, "p50"), marked(t, "p99"));
    }
    if let Some(e) = stage_stats(st, Metric::E2e) {
        line += &format!("  E2E p50 {}", marked(e, "p50"));
    }
    line
}

fn pct(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.2}%"))
}

/// The configured percentiles (p50 is shown as the median), or the fixed ones by default.
fn percentiles_shown(s: &Summary) -> Vec<String> {
    let configured: Vec<f64> = s
        .config
        .get("percentiles")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_else(|| FIXED_PERCENTILES.to_vec());
    configured
        .iter()
        .filter(|&&p| p != 50.0)
        .map(|&p| crate::summary::percentile_key(p))
        .collect()
}

/// One metric's block; returns whether it showed a small-sample percentile.
fn section(
    out: &mut impl Write,
    title: &str,
    name: &str,
    stats: &Stats,
    keys: &[String],
) -> io::Result<bool> {
    if stats.count == 0 {
        return Ok(false);
    }
    writeln!(out, "{}", rule(title, '-'))?;
    row(out, &format!("Mean {name} (ms):"), num(stats.mean, 2))?;
    row(out, &format!("Median {name} (ms):"), marked(stats, "p50"))?;
    for key in keys {
        let label = format!("{} {name} (ms):", percentile_label(key));
        row(out, &label, marked(stats, key))?;
    }
    Ok(keys
        .iter()
        .chain(["p50".to_string()].iter())
        .any(|k| stats.is_small(k)))
}

fn marked(stats: &Stats, key: &str) -> String {
    let mark = if stats.is_small(key) { SMALL_MARK } else { "" };
    format!("{}{mark}", num(stats.get(key), 2))
}

/// The busiest worker's queue model: ρ, the mean wait Pollaczek–Khinchine predicts and the
/// loop lag measured beside it.
fn queue(o: &crate::summary::Overhead) -> String {
    let busiest = o
        .workers
        .iter()
        .filter_map(|w| w.queue.as_ref())
        .max_by(|a, b| a.rho.total_cmp(&b.rho));
    let Some(q) = busiest else {
        return "n/a".to_string();
    };
    let us = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |v| format!("{v:.1} us"));
    format!(
        "rho {:.2}, predicted wait {}, loop lag mean {}",
        q.rho,
        us(q.predicted_wait_us, "unbounded"),
        us(q.loop_lag_mean_us, "n/a")
    )
}

fn overhead(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    let o = &s.overhead;
    let p50_p99 = |st: &Stats| format!("{} / {}", num(st.p50, 3), num(st.p99, 3));
    writeln!(out, "{}", rule("Client overhead", '-'))?;
    row(out, "I/O driver:", &o.io_driver)?;
    row(out, "Sched lag p50 / p99 (ms):", p50_p99(&o.sched_lag_ms))?;
    row(out, "Loop lag p50 / p99 (ms):", p50_p99(&o.loop_lag_ms))?;
    let delivery = o
        .delivery_delay_ms
        .as_ref()
        .map_or("n/a".to_string(), p50_p99);
    row(out, "Delivery delay p50 / p99 (ms):", delivery)?;
    let kernel_rx = match (&o.kernel_rx_delay_ms, &o.kernel_rx_delay_null_reason) {
        (Some(st), _) => p50_p99(st),
        (None, Some(why)) => format!("n/a: {why}"),
        (None, None) => "n/a".to_string(),
    };
    row(out, "Kernel-to-user delay p50 / p99 (ms):", kernel_rx)?;
    let cpu = format!(
        "{} (max {})",
        num(o.worker_cpu_percent, 1),
        num(o.worker_cpu_percent_max, 1)
    );
    row(out, "Worker CPU (%):", cpu)?;
    row(
        out,
        "Host held the worker's CPU (%, max):",
        num(o.host_wait_percent_max, 1),
    )?;
    row(
        out,
        "Pacer spin (% of wall, max):",
        num(o.pacer_spin_percent_max, 1),
    )?;
    let per_request = format!(
        "{} (busy {})",
        num(o.cpu_ns_per_request.map(|n| n / 1e3), 2),
        num(o.busy_cpu_ns_per_request.map(|n| n / 1e3), 2)
    );
    row(out, "CPU per request (us):", per_request)?;
    row(out, "Events per read:", num(o.events_per_read_mean, 2))?;
    row(out, "Client as M/G/1 (busiest worker):", queue(o))?;
    row(out, "Kernel drops / TCP retransmits:", kernel_net(o))?;
    row(out, "Valid:", if o.valid { "yes" } else { "NO" })?;
    for r in &o.invalid_reasons {
        writeln!(out, "  - {r}")?;
    }
    Ok(())
}

/// The run's verdict, in the words of the exit status the process will end with (one word
/// per kind of status, the same in every command: `ok`, `INVALID`, `FAILED` (a gate, or none
/// succeeded), `INTERRUPTED`); an invalid run let through by `--allow-invalid` says so.
fn verdict(s: &Summary, allow_invalid: bool, out: &mut impl Write) -> io::Result<()> {
    let v = &s.verdict;
    let exit = s.exit(allow_invalid);
    row(out, "Verdict:", verdict_words(exit, !s.overhead.valid))?;
    for r in &v.reasons {
        writeln!(out, "  - {r}")?;
    }
    Ok(())
}

/// The verdict row's words for `exit`; `invalid`: the client's overhead made the run
/// invalid (said even when `--allow-invalid` let it exit otherwise).
pub fn verdict_words(exit: crate::summary::Exit, invalid: bool) -> String {
    use crate::summary::Exit;
    let code = exit.code();
    let word = match exit {
        Exit::Ok if invalid => return format!("INVALID (allowed, exit {code})"),
        Exit::Gate if invalid => return format!("INVALID (allowed), FAILED (exit {code})"),
        Exit::Ok => "ok",
        Exit::Invalid => "INVALID",
        Exit::Gate => "FAILED",
        Exit::NoneSucceeded => "FAILED",
        Exit::Interrupted => "INTERRUPTED",
        Exit::Error | Exit::Usage => "ERROR",
    };
    format!("{word} (exit {code})")
}

type StatsOf = fn(&ToolFigures) -> &Stats;
type ScalarOf = fn(&ToolFigures) -> Option<f64>;

/// Other tools' definitions side by side: one column per tool, one row per figure
/// (mean / P50 / P99 for distributions). The percentiles shown are the fixed ones.
pub fn print_definitions(figures: &[ToolFigures], out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{}", rule(" Same run, other tools' definitions ", '='))?;
    let mut head = format!("{:<24}", "figure");
    figures
        .iter()
        .for_each(|f| head += &format!(" {:>14}", f.definitions.name()));
    writeln!(out, "{head}")?;
    let dists: [(&str, StatsOf); 4] = [
        ("TTFT", |f| &f.ttft_ms),
        ("TPOT", |f| &f.tpot_ms),
        ("ITL", |f| &f.itl_ms),
        ("E2E", |f| &f.e2e_ms),
    ];
    for (name, get) in dists {
        for (stat, key) in [("mean", "mean"), ("P50", "p50"), ("P99", "p99")] {
            let mut line = format!("{:<24}", format!("{name} {stat} (ms)"));
            for f in figures {
                let st = get(f);
                let v = if key == "mean" {
                    num(st.mean, 3)
                } else {
                    marked_n(st, key, 3)
                };
                line += &format!(" {v:>14}");
            }
            writeln!(out, "{line}")?;
        }
    }
    let scalars: [(&str, ScalarOf); 3] = [
        ("Duration (s)", |f| Some(f.duration_s)),
        ("Requests/s", |f| f.requests_per_s),
        ("Output tokens/s", |f| f.output_tokens_per_s),
    ];
    for (name, get) in scalars {
        let mut line = format!("{name:<24}");
        figures
            .iter()
            .for_each(|f| line += &format!(" {:>14}", num(get(f), 3)));
        writeln!(out, "{line}")?;
    }
    writeln!(out, "{}", "=".repeat(WIDTH))
}

fn marked_n(stats: &Stats, key: &str, decimals: usize) -> String {
    let mark = if stats.is_small(key) { SMALL_MARK } else { "" };
    format!("{}{mark}", num(stats.get(key), decimals))
}

/// `summary.json` in `dir` (created if missing), whole or not at all (`rt::file`).
pub fn write_summary_json(dir: &Path, summary: &Summary) -> io::Result<()> {
    crate::rt::file::write_json(dir, SUMMARY_FILE, summary)
}

/// One line per calibration point, as it finishes.
pub fn calibrate_point_line(p: &crate::summary::study::CalibratePoint) -> String {
    let lag = &p.sched_lag_ms;
    let dd = p.delivery_delay_ms.as_ref();
    format!(
        "rate {:>8.0}/s  achieved {:>9}  lag p50/p99 {}/{} ms  delivery p50/p99 {}/{} ms  cpu {}%  {}",
        p.target_rate,
        num(p.achieved_rate, 1),
        num(lag.p50, 3),
        num(lag.p99, 3),
        num(dd.and_then(|d| d.p50), 3),
        num(dd.and_then(|d| d.p99), 3),
        num(p.worker_cpu_percent, 1),
        if p.held { "held".to_string() } else { format!("NOT held: {}", p.why_not.join("; ")) }
    )
}

/// The calibration's verdict block.
pub fn print_calibration(
    c: &crate::summary::study::Calibration,
    out: &mut impl Write,
) -> io::Result<()> {
    writeln!(out, "{}", rule(" Client calibration ", '='))?;
    row(
        out,
        "CPU / kernel",
        format!("{} / {}", c.host_cpu, c.kernel),
    )?;
    row(
        out,
        "Client CPUs / simulator CPUs",
        format!("{} / {}", c.config["client_cpus"], c.config["sim_cpus"]),
    )?;
    let held = c
        .highest_rate_held
        .map_or("none".to_string(), |r| format!("{r:.0} req/s"));
    row(out, "Highest rate held", held)?;
    if let Some(f) = &c.floor {
        row(
            out,
            format!("TTFT p50 / p99 at {:.0}/s (ms)", f.at_rate).as_str(),
            format!("{} / {}", num(f.ttft_ms.p50, 3), num(f.ttft_ms.p99, 3)),
        )?;
        row(
            out,
            "ITL p50 / p99 (ms)",
            format!("{} / {}", num(f.itl_ms.p50, 3), num(f.itl_ms.p99, 3)),
        )?;
        if let Some(d) = &f.delivery_delay_ms {
            row(
                out,
                "Delivery delay p50 / p99 (ms)",
                format!("{} / {}", num(d.p50, 3), num(d.p99, 3)),
            )?;
        }
    }
    writeln!(out, "{}", rule("", '='))
}

/// The lines a run's workload is stated in before anything is sent: the trace's shape when
/// it replays one, then the prompts' lengths and how they were counted.
pub fn workload_lines(plan: &Plan, w: &WorkloadStats) -> Vec<String> {
    let mut out = vec![];
    if let Load::Trace(t) = &plan.load {
        trace_lines(t, &mut out);
    }
    let r = |x: &Realized| {
        format!(
            "p50 {} p90 {} p99 {} (min {} mean {:.1} max {})",
            x.p50, x.p90, x.p99, x.min, x.mean, x.max
        )
    };
    out.extend([
        format!(
            "workload: {} prompts from {}, cycled by request id",
            w.distinct_prompts, w.source
        ),
        format!("  input tokens  {}", r(&w.input_tokens)),
        format!("  output tokens {} (max_tokens asked)", r(&w.output_tokens)),
        format!("  input lengths: {}", w.input_method),
    ]);
    match &w.salt {
        Some(salt) => out.push(format!(
            "  salted: {} tokens {} (of {}: {}), from the request id and --prompt-nonce {}; \
             --no-prompt-salt lets prompts repeat",
            salt.tokens,
            salt.at,
            salt.pool_words,
            salt.pool,
            plan.workload
                .prompt_nonce
                .map_or("(drawn at the start)".to_string(), |n| n.to_string()),
        )),
        None if matches!(plan.load, Load::Trace(_)) => {}
        None => out.push(format!(
            "  unsalted (--no-prompt-salt): a run over {} requests repeats prompts, and so does \
             every rerun; a prefix cache will serve them",
            w.distinct_prompts
        )),
    }
    if let Some(p) = &w.prefix {
        out.push(format!(
            "  shared prefixes: {} groups × {} tokens{}; intended reuse {:.1}% of input tokens",
            p.groups,
            p.tokens,
            p.zipf.map_or(String::new(), |s| format!(", Zipf s={s}")),
            p.intended_reuse_rate * 100.0
        ));
    }
    out
}

fn trace_lines(t: &TraceLoad, out: &mut Vec<String>) {
    let s = &t.stats;
    out.push(format!(
        "trace: {} requests over {:.3} s (speed-up {}×): {:.3} req/s, gap CV {:.2} \
             (1 is Poisson, above 1 burstier)",
        s.requests, s.span_s, t.speedup, s.rate_per_s, s.gap_cv
    ));
    if s.lines_with_hash_ids > 0 {
        out.push(format!(
            "  hash_ids: {} lines, {} distinct blocks of {} tokens, every line's count \
                 matches ceil(input_length / {}); intended block reuse {:.1}% of input tokens",
            s.lines_with_hash_ids,
            s.distinct_blocks,
            t.block_size,
            t.block_size,
            s.block_reuse_rate * 100.0
        ));
    }
}

/// `ringbench sim --stats-interval`: one JSON line of counters every `every_ns`, on absolute
/// deadlines so the lines do not drift, until `out` is closed (the reader went away).
pub fn sim_stats_lines(
    handle: &crate::sim::SimHandle,
    every_ns: u64,
    out: &mut impl Write,
) -> io::Result<()> {
    let start_ns = crate::rt::clock::mono_ns();
    for tick in 1u64.. {
        let due_ns = start_ns + tick * every_ns;
        let now_ns = crate::rt::clock::mono_ns();
        if due_ns > now_ns {
            std::thread::sleep(std::time::Duration::from_nanos(due_ns - now_ns));
        }
        let line = serde_json::json!({
            "mono_ns": crate::rt::clock::mono_ns(),
            "stats": handle.stats(),
        });
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What a run counts to, for the progress display: its `--duration` (after the warm-up
/// duration) and its `--request-count` (with the warm-up requests), as the plan says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProgressGoal {
    /// Seconds from the schedule's start to the end of sending.
    pub duration_s: Option<f64>,
    /// Requests to collect, warm-up included.
    pub requests: Option<u64>,
}

impl ProgressGoal {
    /// The plan's stop as a goal (a trace's is its line count).
    pub fn of(plan: &Plan) -> Self {
        ProgressGoal {
            duration_s: plan
                .stop
                .duration_ns
                .map(|d| d.saturating_add(plan.warmup_duration_ns) as f64 / 1e9),
            requests: plan
                .stop
                .request_count
                .map(|n| n.saturating_add(plan.warmup_requests)),
        }
    }

    /// How much of the run is done, 0 to 1: the nearer end when both are set; `None` when the
    /// plan sets neither.
    pub fn fraction(&self, live: &LiveCounts, elapsed_s: f64) -> Option<f64> {
        let by_time = self.duration_s.filter(|d| *d > 0.0).map(|d| elapsed_s / d);
        let by_count = self
            .requests
            .filter(|n| *n > 0)
            .map(|n| live.records() as f64 / n as f64);
        let f = match (by_time, by_count) {
            (Some(a), Some(b)) => a.max(b),
            (a, b) => a.or(b)?,
        };
        Some(f.clamp(0.0, 1.0))
    }

    /// `12.0/30 s`, `1.0/3.5 s` or `12.0 s, 560/1000 requests`.
    fn done(&self, live: &LiveCounts, elapsed_s: f64) -> String {
        match (self.duration_s, self.requests) {
            (Some(d), _) if d.fract() == 0.0 => format!("{elapsed_s:.1}/{d:.0} s"),
            (Some(d), _) => format!("{elapsed_s:.1}/{d:.1} s"),
            (None, Some(n)) => format!("{elapsed_s:.1} s, {}/{n} requests", live.records()),
            (None, None) => format!("{elapsed_s:.1} s"),
        }
    }
}

/// `12.0/30 s | sent 1246 | in flight 12 | ok 1200 | failed 0 | 998.7 req/s | TTFT p50
/// 21.30 ms`: elapsed against the goal; `sent` every request handed to the kernel (those
/// still in flight included); the rate is successful requests per second so far, the live
/// counterpart of the summary's request throughput; the TTFT median is over the measured
/// requests so far.
pub fn progress_line(live: &LiveCounts, elapsed_s: f64, goal: &ProgressGoal) -> String {
    let mut line = goal.done(live, elapsed_s);
    line += &format!(" | sent {}", live.tally.sent + live.in_flight.unwrap_or(0));
    if let Some(n) = live.in_flight {
        line += &format!(" | in flight {n}");
    }
    line += &format!(" | ok {} | failed {}", live.tally.ok, live.tally.failed);
    if live.warmup > 0 {
        line += &format!(" | warm-up {}", live.warmup);
    }
    let rate = if elapsed_s > 0.0 {
        live.tally.ok as f64 / elapsed_s
    } else {
        0.0
    };
    line += &format!(" | {rate:.1} req/s");
    if let Some(ns) = live.ttft_p50_ns {
        line += &format!(" | TTFT p50 {:.2} ms", ns as f64 / 1e6);
    }
    line
}

/// The line before a demo run (`ringbench run` with no `--url` nor load flags): what runs.
pub fn demo_intro(plan: &Plan) -> String {
    let sim = plan.sim.clone().unwrap_or_default();
    let rate = plan.target_rate().unwrap_or_default();
    let secs = plan.stop.duration_ns.unwrap_or_default() as f64 / 1e9;
    format!(
        "No --url: a {secs:.0} s demo against the built-in simulator at a small model's pace \
         (TTFT {} ms, ITL {} ms, {} tokens) at {rate} req/s. --self-check runs the zero-delay \
         self-check instead.",
        sim.ttft_ms, sim.itl_ms, plan.output_tokens
    )
}

/// The line after a demo run's report: how to point ringbench at a server.
pub fn demo_outro() -> &'static str {
    "That was ringbench's built-in simulator. Point it at your server: ringbench run --url \
     http://HOST:PORT --request-rate 10 --duration 60s (see ringbench run -h)."
}

/// The lines after a run's report: for the demo, how to point ringbench at a server; for an
/// invalid demo or self-check, why it still ends 0. Empty for a measurement.
pub fn closing(s: &Summary, demo: bool, not_measured: bool) -> String {
    let mut out = String::new();
    if not_measured && s.exit(false) == crate::summary::Exit::Invalid {
        out += &not_a_measurement(demo);
        out.push('\n');
    }
    if demo {
        out += demo_outro();
        out.push('\n');
    }
    out
}

/// After an invalid demo or self-check: why it still ends 0.
fn not_a_measurement(demo: bool) -> String {
    format!(
        "The {} is not a measurement, so it ends with exit 0; a measurement with the verdict \
         above would exit 4 (INVALID). Where the reason is host contention, the figures are the \
         machine's, not the client's: run it again on a quiet machine or on pinned, idle CPUs.",
        if demo { "demo" } else { "self-check" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Tally;

    #[test]
    fn the_verdict_says_the_exit_status_in_its_word() {
        use crate::summary::Exit;
        let cases = [
            (Exit::Ok, false, "ok (exit 0)"),
            (Exit::Ok, true, "INVALID (allowed, exit 0)"),
            (Exit::Invalid, true, "INVALID (exit 4)"),
            (Exit::Gate, false, "FAILED (exit 3)"),
            (Exit::Gate, true, "INVALID (allowed), FAILED (exit 3)"),
            (Exit::NoneSucceeded, false, "FAILED (exit 5)"),
            (Exit::Interrupted, true, "INTERRUPTED (exit 130)"),
        ];
        for (exit, invalid, words) in cases {
            assert_eq!(verdict_words(exit, invalid), words, "{exit:?} {invalid}");
        }
    }

    #[test]
    fn rules_are_fifty_columns_and_centred() {
        let r = rule(" Serving Benchmark Result ", '=');
        assert_eq!(r.chars().count(), WIDTH);
        assert_eq!(r, "============ Serving Benchmark Result ============");
    }

    #[test]
    fn progress_line_shows_what_is_known() {
        let live = LiveCounts {
            tally: Tally {
                sent: 1234,
                ok: 1200,
                ..Tally::default()
            },
            in_flight: Some(12),
            ttft_p50_ns: Some(21_304_000),
            ..Default::default()
        };
        let goal = ProgressGoal {
            duration_s: Some(30.0),
            requests: None,
        };
        assert_eq!(
            progress_line(&live, 1.2, &goal),
            "1.2/30 s | sent 1246 | in flight 12 | ok 1200 | failed 0 | 1000.0 req/s | TTFT \
             p50 21.30 ms"
        );
        let live = LiveCounts {
            warmup: 3,
            in_flight: None,
            ttft_p50_ns: None,
            ..live
        };
        let goal = ProgressGoal {
            duration_s: None,
            requests: Some(2000),
        };
        assert_eq!(
            progress_line(&live, 0.0, &goal),
            "0.0 s, 1234/2000 requests | sent 1234 | ok 1200 | failed 0 | warm-up 3 | 0.0 req/s"
        );
    }

    #[test]
    fn the_goal_is_the_nearer_end() {
        let mut plan = Plan::defaults();
        plan.stop.request_count = Some(100);
        plan.stop.duration_ns = Some(10_000_000_000);
        plan.warmup_requests = 10;
        plan.warmup_duration_ns = 2_000_000_000;
        let goal = ProgressGoal::of(&plan);
        assert_eq!(goal.duration_s, Some(12.0));
        assert_eq!(goal.requests, Some(110));
        let live = LiveCounts {
            tally: Tally {
                not_sent: 55,
                ..Tally::default()
            },
            ..Default::default()
        };
        assert_eq!(goal.fraction(&live, 3.0), Some(0.5));
        assert_eq!(goal.fraction(&live, 9.0), Some(0.75));
        assert_eq!(goal.fraction(&live, 99.0), Some(1.0));
        assert_eq!(ProgressGoal::default().fraction(&live, 1.0), None);
    }
}
