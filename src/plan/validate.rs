//! Part of the plan (a leaf: it imports nothing of the flow): every rule a `Plan` must meet
//! before anything runs, in one place. The CLI maps flags to a `Plan` and calls
//! `Plan::validate`; `crate::run` calls it again, so a plan built by hand is refused with a
//! `PlanError`, never a panic. Each message names the flag that sets the value and how to fix
//! it (the library's users read the field names in the same words).
//!
//! Bounds that are not about meaning but about cost (how many workers, how many arrivals a
//! schedule may hold) are here too: a typo like `--request-rate 1e9 --duration 60s` is an
//! error at once, not minutes of building a schedule.

use super::workload::LengthDist;
use super::{bad, Arrival, Endpoint, Load, Plan};

/// Most workers (pinned CPUs) a run may ask for.
pub const MAX_WORKERS: usize = 1024;
/// Most shards a run may be split into (`--shard I/N`).
pub const MAX_SHARDS: u32 = 65_536;
/// Most CPU number a worker or the simulator may be pinned to (the kernel's `CPU_SETSIZE`).
pub const MAX_CPU: usize = 1023;
/// Most arrivals an open-loop schedule may hold (warm-up included). Each worker walks the
/// whole schedule twice before and during the run (~10 ns an arrival), so this is about a
/// second of walking: 100,000 req/s for 1,000 s.
pub const MAX_ARRIVALS: u64 = 100_000_000;
/// Longest a stop or warm-up duration may be (a week, in ns).
pub const MAX_DURATION_NS: u64 = 7 * 24 * 3600 * 1_000_000_000;

/// A plan that cannot run as given; the message names the flag and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// `--prometheus URL [--prometheus-selector SEL]`: one source of the server's metrics, an
/// http(s) base URL, a selector in braces.
fn check_prometheus(
    m: &super::ServerMetricsSpec,
    url: &str,
    selector: Option<&str>,
) -> Result<(), PlanError> {
    if !m.urls.is_empty() {
        return bad(format!(
            "--prometheus and --server-metrics {} both say where the server's metrics come \
             from: --prometheus queries a Prometheus server instead of scraping /metrics; give \
             one of them",
            m.urls.join(" ")
        ));
    }
    if !m.enabled {
        return bad(
            "--prometheus with --no-server-metrics: give one of them (--no-server-metrics \
                    reads no server metrics at all)",
        );
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return bad(format!(
            "--prometheus {url}: give the http:// or https:// base URL of a Prometheus server, \
             like http://prometheus:9090"
        ));
    }
    super::Target::parse(url).map_err(|e| PlanError(e.0.replace("--url", "--prometheus")))?;
    if url.contains(['?', '#']) {
        return bad(format!(
            "--prometheus {url}: give the server's base URL without a query (ringbench adds \
             /api/v1/query_range?...)"
        ));
    }
    match selector {
        Some(sel) if selector_matchers(sel).is_none() => bad(format!(
            "--prometheus-selector {sel}: must look like {{label=\"value\",...}}, PromQL label \
             matchers in braces without a metric name, e.g. '{{pod=~\"vllm-.*\"}}'"
        )),
        _ => Ok(()),
    }
}

/// The label matchers inside a selector `{…}` (trimmed; empty for `{}`), or `None` when it is
/// not one: not in braces, a brace or an unclosed quote inside. The quotes are PromQL's (`"`,
/// `'` with backslash escapes, and raw `` ` ``); what the matchers say is the Prometheus
/// server's to judge.
pub fn selector_matchers(sel: &str) -> Option<&str> {
    let inner = sel.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in inner.chars() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(q) if c == '\\' && q != '`' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '"' | '\'' | '`') => quote = Some(c),
            None if matches!(c, '{' | '}') => return None,
            None => {}
        }
    }
    quote.is_none().then(|| inner.trim())
}

impl Plan {
    /// Checks every rule that involves more than one setting, and every bound, in the order a
    /// user would fix them. Reads the file system only to check that the files the plan names
    /// exist (`--cacert`) and that `--out` is not a file.
    pub fn validate(&self) -> Result<(), PlanError> {
        self.check_load()?;
        self.check_stop()?;
        self.check_shape()?;
        self.check_lengths()?;
        self.check_simulator()?;
        self.check_target()?;
        self.check_figures()?;
        self.check_run_id()?;
        self.check_server_metrics()?;
        self.check_metrics_listen()?;
        self.check_vllm_result()?;
        self.check_shard()?;
        self.check_sessions()?;
        self.check_cancel()?;
        self.check_api()?;
        self.check_media()?;
        self.check_cpus()
    }

    /// Synthetic images and audio: counts, sizes and lengths in bounds, one request's media
    /// of a size a server takes, and an endpoint that sends them (images: chat, Responses,
    /// Messages; audio: chat).
    fn check_media(&self) -> Result<(), PlanError> {
        use super::workload::{ImageSize, MAX_SAMPLE_RATE_HZ};
        use super::workload::{MAX_AUDIO_CLIPS, MAX_AUDIO_MS, MAX_IMAGES, MAX_IMAGE_SIDE};
        let m = &self.workload.media;
        if let Some(c) = m
            .image_count
            .as_ref()
            .filter(|c| c.upper_bound() > MAX_IMAGES)
        {
            return bad(format!(
                "--image-count: up to {} images per request; give at most {MAX_IMAGES}",
                c.upper_bound()
            ));
        }
        if let ImageSize::Drawn { width, height } = &m.image_size {
            check_dist("--image-width", Some(width))?;
            check_dist("--image-height", Some(height))?;
        }
        let (w, h) = m.image_size.upper_bound();
        if m.images() && (w.max(h) > MAX_IMAGE_SIDE || w.min(h) == 0) {
            return bad(format!(
                "--image-size (or --image-width, --image-height): {w}x{h} px is not an image \
                 ringbench makes: give sides of 1 to {MAX_IMAGE_SIDE} px"
            ));
        }
        if let Some(ms) = &m.audio_ms {
            check_dist("--audio-seconds", Some(ms))?;
            if ms.upper_bound() > MAX_AUDIO_MS || !(1..=MAX_AUDIO_CLIPS).contains(&m.audio_count) {
                return bad(format!(
                    "--audio-seconds and --audio-count: clips of at most {} s, 1 to \
                     {MAX_AUDIO_CLIPS} per request",
                    MAX_AUDIO_MS / 1000
                ));
            }
        }
        let rates = &m.audio_sample_rates_hz;
        if rates.is_empty()
            || rates
                .iter()
                .any(|r| !(1000..=MAX_SAMPLE_RATE_HZ).contains(r))
        {
            return bad(format!(
                "--audio-sample-rates {rates:?}: give rates of 1 to {} kHz",
                MAX_SAMPLE_RATE_HZ / 1000
            ));
        }
        self.check_media_endpoint()
    }

    /// Images go to chat, Responses and Messages; audio to chat.
    fn check_media_endpoint(&self) -> Result<(), PlanError> {
        let m = &self.workload.media;
        let e = self.endpoint;
        let images_ok = matches!(e, Endpoint::Chat | Endpoint::Responses | Endpoint::Messages);
        if m.images() && !images_ok {
            return bad(format!(
                "--image-count: images go to --endpoint chat, responses or messages, not {} \
                 (vLLM's --backend openai-chat)",
                e.name()
            ));
        }
        if m.audio() && e != Endpoint::Chat {
            return bad(format!(
                "--audio-seconds: audio goes to --endpoint chat (input_audio parts), not {}",
                e.name()
            ));
        }
        Ok(())
    }

    /// Tools go to an endpoint that takes them, batches to one that pools its inputs; a
    /// pooling answer is not streamed, so nothing may wait on its tokens.
    fn check_api(&self) -> Result<(), PlanError> {
        let (e, api) = (self.endpoint, &self.api);
        if !(1..=super::api::MAX_BATCH_SIZE).contains(&api.batch_size) {
            return bad(format!(
                "--batch-size {}: give 1 to {} inputs per request",
                api.batch_size,
                super::api::MAX_BATCH_SIZE
            ));
        }
        if api.batch_size > 1 && !e.batches() {
            return bad(format!(
                "--batch-size {} is for --endpoint embeddings, rerank, score or tei-rerank; \
                 --endpoint {} sends one prompt per request",
                api.batch_size,
                e.name()
            ));
        }
        if (!api.tools.is_empty() || api.tool_choice.is_some()) && !e.takes_tools() {
            return bad(format!(
                "--tools and --tool-choice are for --endpoint chat, responses or messages, not \
                 {}",
                e.name()
            ));
        }
        if api.tool_choice.is_some() && api.tools.is_empty() {
            return bad(
                "--tool-choice needs --tools FILE (the tools the model may call)".to_string(),
            );
        }
        if !e.generates() {
            if self.stream {
                return bad(format!(
                    "--endpoint {} answers with one JSON body: it cannot stream (give \
                     --no-stream)",
                    e.name()
                ));
            }
            if self
                .cancel
                .as_ref()
                .is_some_and(|c| matches!(c.after, super::CancelAfter::Tokens { .. }))
            {
                return bad(format!(
                    "--cancel-after tokens:N counts generated tokens; --endpoint {} generates \
                     none: cut by time (--cancel-after 500ms)",
                    e.name()
                ));
            }
        }
        Ok(())
    }

    /// A share in (0, 1], and a cut that can happen.
    fn check_cancel(&self) -> Result<(), PlanError> {
        let Some(c) = &self.cancel else {
            return Ok(());
        };
        if !(c.rate > 0.0 && c.rate <= 1.0) {
            return bad(format!(
                "--cancel-rate must be a share in (0, 1] (got {}): 0.3 aborts 30% of requests",
                c.rate
            ));
        }
        if c.after == (super::CancelAfter::Tokens { n: 0 }) {
            return bad("--cancel-after tokens:N needs N of at least 1".to_string());
        }
        if !self.stream && matches!(c.after, super::CancelAfter::Tokens { .. }) {
            return bad(
                "--cancel-after tokens:N counts streamed tokens: drop --no-stream, or cut by \
                 time (--cancel-after 500ms)"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// Conversations need a chat endpoint (a history is messages) and a schedule of session
    /// starts (not a trace's requests), and their draws must be ones the parser could make.
    fn check_sessions(&self) -> Result<(), PlanError> {
        let Some(spec) = &self.sessions else {
            return Ok(());
        };
        check_dist("--turns", Some(&spec.turns))?;
        if self.endpoint != Endpoint::Chat {
            return bad(
                "--turns sends each turn's history as chat messages: use --endpoint chat (the \
                 default)"
                    .to_string(),
            );
        }
        if matches!(self.load, Load::Trace(_)) {
            return bad(
                "--turns and --trace both decide what is sent when: give one of them".to_string(),
            );
        }
        let lengths_only = |d: &super::workload::DatasetSpec| !d.has_text();
        if spec.all_turns && self.workload.dataset.as_ref().is_none_or(lengths_only) {
            return bad(
                "--turns all takes each session's turns from a conversation: give --dataset \
                 FILE of conversations (ShareGPT, or JSONL {\"turns\": [...]}), or --turns N"
                    .to_string(),
            );
        }
        if spec.max_context_tokens == Some(0) {
            return bad("--max-context-tokens must be at least 1 (or leave it out)".to_string());
        }
        if let super::ThinkTime::Lognormal { median_ns, p99_ns } = spec.think_time {
            if p99_ns <= median_ns || median_ns == 0 {
                return bad(format!(
                    "--think-time lognormal: the p99 ({p99_ns} ns) must be above the median \
                     ({median_ns} ns), which must be above 0"
                ));
            }
        }
        Ok(())
    }

    fn check_shard(&self) -> Result<(), PlanError> {
        let Some(shard) = self.shard else {
            return Ok(());
        };
        if shard.count == 0 || shard.count > MAX_SHARDS {
            return bad(format!(
                "--shard {}: the shard count must be 1 to {MAX_SHARDS}",
                shard.label()
            ));
        }
        if shard.index >= shard.count {
            return bad(format!(
                "--shard {}: the index must be below the count (0 to {})",
                shard.label(),
                shard.count - 1
            ));
        }
        let (what, total) = match self.load {
            Load::Closed { concurrency } => ("--concurrency", concurrency),
            Load::Open {
                max_concurrency: Some(cap),
                ..
            } => ("--max-concurrency", cap),
            _ => return Ok(()),
        };
        if total < shard.count {
            return bad(format!(
                "{what} {total} is split over {} shards: each needs at least 1 (give {what} \
                 {} or more, or fewer shards)",
                shard.count, shard.count
            ));
        }
        Ok(())
    }

    fn check_vllm_result(&self) -> Result<(), PlanError> {
        let Some(v) = &self.vllm_result else {
            return Ok(());
        };
        if self.out_dir.is_none() {
            return bad(
                "--save-result needs the run's folder (out_dir, --out DIR): vLLM's figures are \
                 computed from its requests.jsonl",
            );
        }
        if let Some(m) = v
            .metrics
            .iter()
            .find(|m| !super::VLLM_METRICS.contains(&m.as_str()))
        {
            return bad(format!(
                "--percentile-metrics: unknown metric '{m}' (use ttft, tpot, itl, e2el, \
                 comma-separated)"
            ));
        }
        if v.path.file_name().is_none() {
            return bad(format!(
                "--result-filename: '{}' names no file, like raw.json",
                v.path.display()
            ));
        }
        Ok(())
    }

    fn check_server_metrics(&self) -> Result<(), PlanError> {
        let m = &self.server_metrics;
        if !(super::MIN_SCRAPE_INTERVAL_NS..=3_600_000_000_000).contains(&m.interval_ns) {
            return bad(format!(
                "--server-metrics-interval {} ms: must be from 100 ms to 1 h",
                m.interval_ns / 1_000_000
            ));
        }
        for url in &m.urls {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return bad(format!(
                    "--server-metrics {url}: give an http:// or https:// URL of a /metrics page"
                ));
            }
        }
        match (&m.prometheus, &m.prometheus_selector) {
            (Some(url), selector) => check_prometheus(m, url, selector.as_deref()),
            (None, Some(_)) => bad(
                "--prometheus-selector needs --prometheus URL (the Prometheus server whose \
                 queries it narrows)",
            ),
            (None, None) => Ok(()),
        }
    }

    /// `--metrics-listen`: an address with a port, as `std::net` binds it (a name is not
    /// resolved here: the listener binds what the line says).
    fn check_metrics_listen(&self) -> Result<(), PlanError> {
        match &self.metrics_listen {
            Some(a) if a.parse::<std::net::SocketAddr>().is_err() => bad(format!(
                "--metrics-listen '{a}': give an address and port to listen on, like \
                 127.0.0.1:9464 or 0.0.0.0:9464 (port 0: any free port)"
            )),
            _ => Ok(()),
        }
    }

    fn check_run_id(&self) -> Result<(), PlanError> {
        match &self.run_id {
            Some(id) => super::RunId::new(id)
                .map(|_| ())
                .or_else(|e| bad(format!("--run-id {id}: {e}"))),
            None => Ok(()),
        }
    }

    fn check_load(&self) -> Result<(), PlanError> {
        match &self.load {
            Load::Closed { concurrency: 0 } => bad("--concurrency 0: must be at least 1"),
            Load::Closed { .. } => Ok(()),
            Load::Open {
                request_rate,
                arrival,
                max_concurrency,
            } => {
                if !(request_rate.is_finite() && *request_rate > 0.0) {
                    return bad(format!(
                        "--request-rate {request_rate}: must be a number above 0"
                    ));
                }
                if let Arrival::Gamma { burstiness } = arrival {
                    if !(burstiness.is_finite() && *burstiness > 0.0) {
                        return bad(format!(
                            "--burstiness {burstiness}: must be above 0 (1 is Poisson)"
                        ));
                    }
                }
                if *max_concurrency == Some(0) {
                    return bad("--max-concurrency 0: must be at least 1");
                }
                self.check_arrivals(*request_rate)
            }
            Load::Trace(t) => match t.max_concurrency {
                Some(0) => bad("--max-concurrency 0: must be at least 1"),
                _ => Ok(()),
            },
        }
    }

    /// Open loop: the schedule's length, bounded before it is built.
    fn check_arrivals(&self, rate: f64) -> Result<(), PlanError> {
        let by_count = self
            .stop
            .request_count
            .map(|c| c as f64 + self.warmup_requests as f64);
        let by_time = self
            .stop
            .duration_ns
            .map(|d| rate * (d as f64 + self.warmup_duration_ns as f64) / 1e9);
        let n = match (by_count, by_time) {
            (Some(c), Some(t)) => c.min(t),
            (Some(c), None) => c,
            (None, Some(t)) => t,
            (None, None) => {
                return bad("the schedule needs an end: give --request-count or --duration")
            }
        };
        if n > MAX_ARRIVALS as f64 {
            return bad(format!(
                "--request-rate {rate} with this --duration/--request-count schedules {n:.3e} \
                 arrivals, above the {MAX_ARRIVALS:.0e} a run may hold (the schedule is walked \
                 before the first send): lower the rate, the duration or the count"
            ));
        }
        Ok(())
    }

    fn check_stop(&self) -> Result<(), PlanError> {
        if self.stop.request_count.is_none() && self.stop.duration_ns.is_none() {
            return bad("give --request-count or --duration (when to stop sending)");
        }
        if self.stop.request_count == Some(0) {
            return bad("--request-count 0: must be at least 1");
        }
        if self.stop.duration_ns == Some(0) {
            return bad("--duration 0: must be above 0, like 30s");
        }
        let long = |d: Option<u64>| d.is_some_and(|d| d > MAX_DURATION_NS);
        if long(self.stop.duration_ns) || long(Some(self.warmup_duration_ns)) {
            return bad("--duration/--warmup-duration: at most a week (7d = 168h)");
        }
        Ok(())
    }

    fn check_lengths(&self) -> Result<(), PlanError> {
        if self.input_tokens == 0 {
            return bad("--input-tokens 0: must be at least 1");
        }
        if self.output_tokens == 0 {
            return bad("--output-tokens 0: must be at least 1");
        }
        let w = &self.workload;
        check_dist("--input-dist", w.input.as_ref())?;
        check_dist("--output-dist", w.output.as_ref())?;
        if let Some(t) = w.request.temperature {
            if !(t.is_finite() && t >= 0.0) {
                return bad(format!("--temperature {t}: must be a number ≥ 0"));
            }
        }
        let Some(p) = &w.prefix else {
            return Ok(());
        };
        if p.groups == 0 || p.tokens == 0 {
            return bad("--prefix-groups and --prefix-tokens must be at least 1");
        }
        if let Some(s) = p.zipf {
            if !(s.is_finite() && s > 0.0) {
                return bad(format!(
                    "--prefix-zipf {s}: must be above 0 (1 is classic Zipf)"
                ));
            }
        }
        let longest = w
            .input
            .as_ref()
            .map_or(self.input_tokens, LengthDist::upper_bound);
        if w.dataset.is_none() && p.tokens >= longest {
            return bad(format!(
                "--prefix-tokens {}: must be below the longest input ({longest} tokens), \
                 or no prompt has anything of its own",
                p.tokens
            ));
        }
        Ok(())
    }

    fn check_simulator(&self) -> Result<(), PlanError> {
        let Some(sim) = &self.sim else {
            return Ok(());
        };
        sim.validate("--sim-").map_err(PlanError)?;
        if !self.targets.is_empty() {
            return bad(
                "--sim-* flags (--sim-ttft-ms, --sim-itl-ms, --sim-tokens-per-chunk, --sim-fault, \
                 --sim-cpus, ...) configure the built-in simulator, which does not run with \
                 --url (drop one or the other)",
            );
        }
        if let Some(c) = sim.cpus.iter().find(|&&c| c > MAX_CPU) {
            return bad(format!(
                "--sim-cpus: CPU {c} is beyond the highest CPU number {MAX_CPU}"
            ));
        }
        Ok(())
    }

    fn check_target(&self) -> Result<(), PlanError> {
        if let Some(out) = &self.out_dir {
            if out.exists() && !out.is_dir() {
                return bad(format!(
                    "--out {}: is a file; give a folder (it is created if missing)",
                    out.display()
                ));
            }
        }
        if self.targets.len() > super::MAX_TARGETS {
            return bad(format!(
                "--url: {} servers; at most {} in one run (split them over shards or runs)",
                self.targets.len(),
                super::MAX_TARGETS
            ));
        }
        let https = self.targets.iter().any(|t| t.https);
        if (self.cacert.is_some() || self.insecure) && !https {
            return bad("--cacert/--insecure apply to https:// URLs only");
        }
        if self.cacert.is_some() && self.insecure {
            return bad("--cacert and --insecure: give one (a CA to trust, or no check at all)");
        }
        if let Some(ca) = &self.cacert {
            if !ca.is_file() {
                return bad(format!(
                    "--cacert {}: no such file (give the CA certificate as a PEM file)",
                    ca.display()
                ));
            }
        }
        if self.request_timeout_ns == 0 || self.connect_timeout_ns == 0 {
            return bad("--request-timeout/--connect-timeout must be above 0");
        }
        Ok(())
    }

    fn check_figures(&self) -> Result<(), PlanError> {
        if let Some(p) = self
            .percentiles
            .iter()
            .find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0))
        {
            return bad(format!(
                "--percentiles: {p} is not a percentile (use values in (0, 100], like 50,99,99.9)"
            ));
        }
        if let Some(s) = self
            .goodput
            .iter()
            .find(|s| !(s.max_ms.is_finite() && s.max_ms > 0.0))
        {
            return bad(format!(
                "--goodput {}:{}: the bound must be above 0",
                s.metric.key(),
                s.max_ms
            ));
        }
        if !(self.max_lag_ms.is_finite() && self.max_lag_ms > 0.0) {
            return bad("--max-lag: must be a number of ms above 0");
        }
        if !(self.stall_ms.is_finite() && self.stall_ms > 0.0) {
            return bad("--stall-ms: must be a number of ms above 0 (e.g. 250)");
        }
        if let Some(ns) = self.pacer_spin_ns.filter(|&ns| ns > super::MAX_SPIN_NS) {
            return bad(format!(
                "--pacer-spin-us {}: at most {} µs (or auto)",
                ns / 1000,
                super::MAX_SPIN_NS / 1000
            ));
        }
        if let Some(p) = self.max_failed_percent {
            if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
                return bad(format!(
                    "--max-failed {p}: must be a percentage from 0 to 100, like 1"
                ));
            }
        }
        Ok(())
    }

    fn check_cpus(&self) -> Result<(), PlanError> {
        if self.cpus.is_empty() {
            return bad("--cpus: give at least one CPU for a worker, like 0");
        }
        if self.cpus.len() > MAX_WORKERS {
            return bad(format!(
                "--cpus: {} workers asked, at most {MAX_WORKERS}",
                self.cpus.len()
            ));
        }
        if let Some(c) = self.cpus.iter().find(|&&c| c > MAX_CPU) {
            return bad(format!(
                "--cpus: CPU {c} is beyond the highest CPU number {MAX_CPU}"
            ));
        }
        Ok(())
    }
}

/// A length distribution `LengthDist::parse` could have made (a hand-built one may not be):
/// lengths in `[1, MAX_LENGTH]`, a ratio in `[0, 1)`, a finite spread, a p99 above the median.
fn check_dist(flag: &str, d: Option<&LengthDist>) -> Result<(), PlanError> {
    use super::workload::MAX_LENGTH;
    let len_ok = |v: f64| (1.0..=MAX_LENGTH as f64).contains(&v);
    let ok = match d {
        None => true,
        Some(LengthDist::Fixed { tokens }) => len_ok(f64::from(*tokens)),
        Some(LengthDist::Range { lo, hi }) => {
            len_ok(f64::from(*lo)) && len_ok(f64::from(*hi)) && lo <= hi
        }
        Some(LengthDist::Uniform { mean, range_ratio }) => {
            len_ok(f64::from(*mean)) && (0.0..1.0).contains(range_ratio)
        }
        Some(LengthDist::Normal { mean, sd, max }) => {
            len_ok(*mean) && sd.is_finite() && *sd >= 0.0 && len_ok(f64::from(*max))
        }
        Some(LengthDist::Lognormal { median, p99, max }) => {
            len_ok(*median) && p99.is_finite() && p99 > median && len_ok(f64::from(*max))
        }
    };
    match ok {
        true => Ok(()),
        false => bad(format!(
            "{flag}: {d:?} is not a distribution ringbench can draw from (lengths in [1, \
             {MAX_LENGTH}], a range ratio in [0, 1), a finite sd ≥ 0, a p99 above the median)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Slo, SloMetric, Stop};

    fn err(p: &Plan) -> String {
        p.validate().unwrap_err().0
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(Plan::defaults().validate(), Ok(()));
    }

    #[test]
    fn a_hand_built_plan_is_refused_not_run() {
        let mut p = Plan::defaults();
        p.cpus.clear();
        assert!(err(&p).contains("--cpus"));
        let mut p = Plan::defaults();
        p.load = Load::Closed { concurrency: 0 };
        assert!(err(&p).contains("--concurrency"));
        let mut p = Plan::defaults();
        p.stop = Stop::default();
        assert!(err(&p).contains("--request-count or --duration"));
        let mut p = Plan::defaults();
        p.goodput = vec![Slo {
            metric: SloMetric::Ttft,
            max_ms: f64::NAN,
        }];
        assert!(err(&p).contains("--goodput ttft"));
        let mut p = Plan::defaults();
        p.sim.as_mut().unwrap().tokens_per_chunk = 0;
        assert!(err(&p).contains("--sim-tokens-per-chunk"));
        // A length distribution that would panic the draw.
        let mut p = Plan::defaults();
        p.workload.output = Some(LengthDist::Normal {
            mean: 100.0,
            sd: f64::NAN,
            max: 200,
        });
        assert!(err(&p).contains("--output-dist"));
        p.workload.output = Some(LengthDist::Lognormal {
            median: 100.0,
            p99: 50.0,
            max: 200,
        });
        assert!(err(&p).contains("--output-dist"));
    }

    #[test]
    fn a_schedule_too_long_to_build_is_refused_at_once() {
        let mut p = Plan::defaults();
        p.load = Load::Open {
            request_rate: 1e9,
            arrival: Arrival::Poisson,
            max_concurrency: None,
        };
        p.stop = Stop {
            request_count: None,
            duration_ns: Some(60_000_000_000),
        };
        let e = err(&p);
        assert!(
            e.contains("6.000e10") && e.contains("--request-rate"),
            "{e}"
        );
        // The same rate for a handful of requests is fine: the count bounds it.
        p.stop.request_count = Some(100);
        assert_eq!(p.validate(), Ok(()));
        // Exactly at the bound is allowed, one more is not.
        p.stop = Stop {
            request_count: Some(MAX_ARRIVALS),
            duration_ns: None,
        };
        assert_eq!(p.validate(), Ok(()));
        p.warmup_requests = 1;
        assert!(p.validate().is_err());
    }

    #[test]
    fn a_plan_reads_back_from_its_config_secrets_excepted() {
        use crate::plan::workload::PrefixSpec;
        let mut p = Plan::defaults();
        p.load = Load::Open {
            request_rate: 12.5,
            arrival: Arrival::Gamma { burstiness: 0.5 },
            max_concurrency: Some(7),
        };
        p.headers = vec![
            ("X-Zeta".into(), "z".into()),
            ("Authorization".into(), "Bearer sk-x".into()),
            ("X-Alpha".into(), "a".into()),
        ];
        p.api_key = Some("sk-secret".into());
        p.goodput = vec![Slo {
            metric: SloMetric::Ntpot,
            max_ms: 0.1,
        }];
        p.workload.prefix = Some(PrefixSpec {
            groups: 4,
            tokens: 64,
            zipf: Some(1.1),
        });
        p.workload.output = Some(LengthDist::Uniform {
            mean: 100,
            range_ratio: 0.5,
        });
        p.max_failed_percent = Some(2.5);
        let config = serde_json::to_value(&p).unwrap();
        let back: Plan = serde_json::from_value(config.clone()).unwrap();
        // Secrets are never written, so they do not come back: the key is gone, the header
        // value stays redacted. (A `serde_json::Value` sorts its keys, so the headers come
        // back by name.)
        let mut want = p.clone();
        want.api_key = None;
        want.headers[1].1 = crate::plan::REDACTED.into();
        want.headers.sort();
        assert_eq!(back, want);
        assert_eq!(
            serde_json::to_value(&back).unwrap()["headers"],
            config["headers"]
        );
        // A config from before a key existed reads with that key's default.
        let mut old = config;
        old.as_object_mut().unwrap().remove("max_failed_percent");
        let back: Plan = serde_json::from_value(old).unwrap();
        assert_eq!(back.max_failed_percent, None);
    }
}
