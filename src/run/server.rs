//! Part of the run (wiring): the server's own metrics beside the run. Which pages (the plan's
//! URLs, or `<base>/metrics` when one probe before the run finds Prometheus text there), the
//! scraping thread (`scrape::Scraper`, on a CPU no worker uses) started before the first
//! request and marked at the phase boundaries — warm-up's end from the collector's loop,
//! without waiting; the end after the last record — and its log handed back. With
//! `--prometheus` nothing is scraped: the same boundaries are kept as run-clock stamps, and
//! after the last record a Prometheus server is asked for the window
//! (`scrape::prometheus::read`). It never prints: what it has to say is returned as notes.

use super::endpoint::{Endpoint, Endpoints};
use crate::plan::Plan;
use crate::rt::clock::RunClock;
use crate::scrape::prometheus::{PromSettings, PromWindow};
use crate::scrape::{GetOptions, Phase, ScrapeLog, ScrapeSettings, Scraper};
use crate::worker::Shared;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// How long the probe before the run may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The scraping of one run, if any.
pub(super) struct Scraping {
    scraper: Option<Scraper>,
    /// Warm-up's end still to be marked.
    warmup_open: bool,
    /// Warm-up as the plan has it: requests, or ns from the schedule's start.
    warmup_requests: u64,
    warmup_ns: u64,
    /// Lines for the reader (whether the server's metrics are scraped, and why not).
    pub notes: Vec<String>,
    /// `--prometheus`: read after the run instead.
    prometheus: Option<Querying>,
}

/// A run whose server metrics a Prometheus server is asked for after it.
struct Querying {
    settings: PromSettings,
    clock: RunClock,
    /// Unix ns at run-clock 0.
    wall_origin_ns: u64,
    /// The measured window's start, run-clock ns (until warm-up's end: the run's start).
    t0_ns: u64,
}

impl Querying {
    fn new(plan: &Plan, url: &str, get: GetOptions, clock: &RunClock) -> Querying {
        let spec = &plan.server_metrics;
        let now_ns = clock.now_ns();
        let wall_ns = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Querying {
            settings: PromSettings {
                url: url.to_string(),
                selector: spec.prometheus_selector.clone(),
                interval_ns: spec.interval_ns,
                get,
                jsonl: plan
                    .out_dir
                    .as_ref()
                    .map(|d| d.join(crate::scrape::join::FILE_NAME)),
            },
            clock: *clock,
            wall_origin_ns: wall_ns.saturating_sub(now_ns),
            t0_ns: now_ns,
        }
    }

    /// What the run's reader is told before the first request.
    fn note(&self) -> String {
        let s = &self.settings;
        format!(
            "server metrics: read from Prometheus {}{} after the run, a step every {} ms (not \
             scraped; the run waits a step for the last samples)",
            s.url,
            s.selector
                .as_deref()
                .map_or(String::new(), |sel| format!(" for {sel}")),
            s.interval_ns / 1_000_000
        )
    }
}

/// `<base>/metrics` of a target, or of the built-in simulator.
fn base_metrics_url(target: Option<&crate::plan::Target>, ep: &Endpoint) -> String {
    match target {
        Some(t) => {
            let scheme = if t.https { "https" } else { "http" };
            let host = match t.host.contains(':') {
                true => format!("[{}]", t.host),
                false => t.host.clone(),
            };
            format!("{scheme}://{host}:{}{}/metrics", t.port, t.base_path)
        }
        None => format!("{}/metrics", ep.base_url),
    }
}

/// `<base>/metrics` of every server that answers one probe with Prometheus text, a note for
/// each saying whether it is scraped and why not.
fn probe_pages(
    plan: &Plan,
    eps: &Endpoints,
    get: &GetOptions,
    every: &str,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let mut found = vec![];
    for (i, ep) in eps.list.iter().enumerate() {
        let url = base_metrics_url(plan.targets.get(i), ep);
        match crate::scrape::probe_with(&url, PROBE_TIMEOUT, get) {
            Ok(info) => {
                let engine = info
                    .engine
                    .map_or("no known engine's".into(), |e| format!("{}'s", e.key()));
                notes.push(format!(
                    "server metrics: {url} answers Prometheus text ({} families, {engine}); \
                     scraped {every} (--no-server-metrics skips it)",
                    info.families
                ));
                found.push(url);
            }
            Err(e) => notes.push(format!(
                "server metrics: not scraped, {url}: {e} (--server-metrics URL names the page)"
            )),
        }
    }
    found
}

impl Scraping {
    /// Starts scraping for `plan` (nothing with `--no-server-metrics`, or when the probe of
    /// `<base>/metrics` finds no Prometheus text there), with one round taken before this
    /// returns so the window opens before the first request. Runs after the output folder
    /// exists (the thread writes `server_metrics.jsonl` there).
    pub(super) fn start(plan: &Plan, eps: &Endpoints, clock: &RunClock) -> Scraping {
        let mut s = Scraping {
            scraper: None,
            warmup_open: plan.warmup_requests > 0 || plan.warmup_duration_ns > 0,
            warmup_requests: plan.this_shard().share(plan.warmup_requests),
            warmup_ns: plan.warmup_duration_ns,
            notes: vec![],
            prometheus: None,
        };
        let spec = &plan.server_metrics;
        if !spec.enabled {
            return s;
        }
        let get = GetOptions {
            cacert: plan.cacert.clone(),
            insecure: plan.insecure,
            max_body_bytes: 0,
        };
        if let Some(url) = &spec.prometheus {
            let q = Querying::new(plan, url, get, clock);
            s.notes.push(q.note());
            s.prometheus = Some(q);
            return s;
        }
        let every = format!("every {} ms", spec.interval_ns / 1_000_000);
        let urls = if spec.urls.is_empty() {
            let found = probe_pages(plan, eps, &get, &every, &mut s.notes);
            if found.is_empty() {
                return s;
            }
            found
        } else {
            spec.urls.clone()
        };
        let start_phase = match s.warmup_open {
            true => Phase::Warmup,
            false => Phase::Measure,
        };
        let settings = ScrapeSettings {
            interval_ns: spec.interval_ns,
            start_phase,
            jsonl: plan
                .out_dir
                .as_ref()
                .map(|d| d.join(crate::scrape::join::FILE_NAME)),
            get,
            ..ScrapeSettings::new(urls.clone())
        };
        match Scraper::start(settings, clock.origin_mono_ns(), &plan.cpus) {
            Ok(scraper) => {
                if !spec.urls.is_empty() {
                    s.notes.push(format!(
                        "server metrics: {} scraped {every}",
                        urls.join(", ")
                    ));
                }
                scraper.mark(start_phase);
                s.scraper = Some(scraper);
            }
            Err(e) => s.notes.push(format!("server metrics: not scraped: {e}")),
        }
        s
    }

    /// Called from the collector's loop: marks warm-up's end
    /// once it has passed. Open loop: the warm-up requests all sent, or its duration over,
    /// without waiting for the round (the schedule does not wait). Closed loop: every
    /// warm-up request ended (`WarmupGate::drained`), then the round is taken while the users
    /// wait, and only then the gate opens, so the server's window starts between the two
    /// phases.
    pub(super) fn tick(&mut self, shared: &Shared, clock: &RunClock, start_ns: u64) {
        if !self.warmup_open {
            return;
        }
        // Read before the counters: a user checking in later finds the warm-up over too.
        let now_ns = clock.now_ns();
        let since_start_ns = now_ns.saturating_sub(start_ns);
        let timed_out = since_start_ns >= self.warmup_ns;
        let gated = shared.gate.open_ns().is_none();
        let over = match gated {
            true => {
                // Acquire: pairs with the claim's Release (`worker::lane::virtual_user`), so
                // every user whose claim this sees is counted in the gate's in-flight count.
                let claimed = shared.claimed.0.load(Ordering::Acquire) >= self.warmup_requests;
                shared.gate.drained(claimed && timed_out)
            }
            false if self.warmup_requests > 0 => shared.total_sent() >= self.warmup_requests,
            false => timed_out,
        };
        if !over {
            return;
        }
        self.warmup_open = false;
        match &self.scraper {
            Some(s) if gated => _ = s.mark(Phase::Measure),
            Some(s) => _ = s.mark_nowait(Phase::Measure),
            None => {}
        }
        if let Some(q) = &mut self.prometheus {
            q.t0_ns = q.clock.now_ns();
        }
        if gated {
            shared.gate.open(clock.now_ns());
        }
    }

    /// After the last record: the closing round, then the thread's log (`None` when nothing
    /// was scraped); with `--prometheus`, the lines its queries gave.
    pub(super) fn finish(self) -> Option<ScrapeLog> {
        if let Some(q) = self.prometheus {
            let window = PromWindow {
                t0_ns: q.t0_ns,
                t1_ns: q.clock.now_ns(),
                wall_origin_ns: q.wall_origin_ns,
            };
            return Some(crate::scrape::prometheus::read(
                &q.settings,
                window,
                &q.clock,
            ));
        }
        let scraper = self.scraper?;
        scraper.mark(Phase::After);
        Some(scraper.stop())
    }
}

/// The `server` block into `summary`, and what it warns of beside the thread's own notes.
pub(super) fn join(summary: &mut crate::summary::Summary, log: &ScrapeLog, percentiles: &[f64]) {
    summary.server = crate::scrape::join::server_block(&log.scrapes, percentiles, summary);
    if let Some(block) = &summary.server {
        summary
            .warnings
            .extend(crate::scrape::join::warnings(block));
    }
    summary
        .warnings
        .extend(log.notes.iter().map(|n| format!("server metrics: {n}")));
}
