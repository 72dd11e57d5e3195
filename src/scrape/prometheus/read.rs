//! Part of `scrape::prometheus`: the queries of one run, after it — the series match that
//! finds the engine and the targets, then one range query per concept of that engine's table
//! (in runs of steps the server allows) and one for the closing point — over `get::Fetcher`
//! (blocking, a connection of its own, a timeout per query and one deadline for them all),
//! then the lines as a `ScrapeLog` like the scraping thread's, and `server_metrics.jsonl`.
//!
//! A failed query is a failed line and a note, and the others are still asked; a server that
//! cannot be reached or does not answer in time ends the reading at that failure (every other
//! query would wait as long). Nothing here can fail the run, and it never prints.

use super::answer::{parse_matrix, parse_series, Answer};
use super::pages::{target_key, Grid, Pages};
use super::query::{concept_query, family_of, presence_names, range_path, series_path};
use super::PromSource;
use crate::rt::clock::RunClock;
use crate::scrape::get::{Fetcher, GetOptions, MetricsUrl};
use crate::scrape::scraper::DEFAULT_MAX_SCRAPES;
use crate::scrape::{engines, jsonl, Concept, Engine, ScrapeError, ScrapeLog};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The longest one query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest all of a run's queries may take together.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);
/// The latest the closing point is read after the window's end, ns.
const MAX_AFTER_NS: u64 = 60_000_000_000;
/// Time for Prometheus to store the closing point's sample once scraped, ns.
const SETTLE_NS: u64 = 250_000_000;
/// Points of one series one range query asks for, for one target: well under Prometheus's
/// 11,000 points a series, and about 7 MB of a 24-bucket histogram's answer.
const POINTS_PER_QUERY: u64 = 10_000;
/// Most lines (steps × targets) kept: the scraping thread's bound.
const MAX_LINES: usize = DEFAULT_MAX_SCRAPES;

/// Which Prometheus server, with what selector and step, where to write the lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromSettings {
    /// Its base URL (`--prometheus`).
    pub url: String,
    /// Label matchers merged into every query (`--prometheus-selector`).
    pub selector: Option<String>,
    /// The step, ns (`--server-metrics-interval`).
    pub interval_ns: u64,
    /// TLS roots and the answer bound.
    pub get: GetOptions,
    /// Where to write `server_metrics.jsonl` (`None`: no file).
    pub jsonl: Option<PathBuf>,
}

/// The run's measured window on the run clock, and the run clock's origin as Unix ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromWindow {
    /// The window's start, run-clock ns.
    pub t0_ns: u64,
    /// Its end (after the last record), run-clock ns.
    pub t1_ns: u64,
    /// Unix ns at run-clock 0.
    pub wall_origin_ns: u64,
}

/// Reads the window's figures from the server in `settings`: waits for the closing point
/// (`t1` + a step, at most 60 s, and 250 ms), asks, and returns the lines.
pub fn read(settings: &PromSettings, window: PromWindow, clock: &RunClock) -> ScrapeLog {
    let after_ns = settings.interval_ns.min(MAX_AFTER_NS);
    let ready_ns = window.t1_ns.saturating_add(after_ns + SETTLE_NS);
    std::thread::sleep(Duration::from_nanos(
        ready_ns.saturating_sub(clock.now_ns()),
    ));
    let mut log = ScrapeLog {
        stopped: true,
        ..ScrapeLog::default()
    };
    let span = (window.t0_ns, window.t1_ns);
    let grid_of = |max_points| {
        let step = settings.interval_ns;
        Grid::new(span, step, after_ns, window.wall_origin_ns, max_points)
    };
    let probe = grid_of(2);
    let found = Asker::new(settings).and_then(|mut a| Ok((find(&mut a, probe)?, a)));
    let (engine, targets, mut asker) = match found {
        Ok((Some((engine, targets)), asker)) => (engine, targets, asker),
        Ok((None, _)) => {
            log.note(format!(
                "Prometheus {} has no series of vLLM's, SGLang's, TGI's or llama.cpp's \
                 families matching {} over the run's window: no server block",
                settings.url,
                settings.selector.as_deref().unwrap_or("any labels")
            ));
            return log;
        }
        Err(e) => {
            log.note(format!("not read from Prometheus {}: {e}", settings.url));
            let mut pages = Pages::new(Engine::Vllm, probe, 0);
            pages.fail(&e, false);
            return finish(settings, probe.step_ns, pages, log);
        }
    };
    let grid = grid_of(u64::try_from(MAX_LINES / targets.max(1)).unwrap_or(u64::MAX));
    if grid.widened {
        log.note(format!(
            "Prometheus read every {} ms, not every {} ms: {targets} targets over the window \
             would pass {MAX_LINES} points",
            grid.step_ms,
            settings.interval_ns / 1_000_000
        ));
    }
    let per_query = (POINTS_PER_QUERY / targets.max(1) as u64).max(1);
    let mut pages = Pages::new(engine, grid, MAX_LINES);
    for concept in Concept::ALL {
        let c = (concept, engine);
        ask_concept(&mut asker, c, grid, per_query, &mut pages, &mut log);
    }
    asker.tell(settings, &mut log);
    if pages.dropped > 0 {
        let n = pages.dropped;
        log.note(format!("{n} Prometheus points past {MAX_LINES} left out"));
    }
    finish(settings, grid.step_ns, pages, log)
}

/// The engine and the number of targets of the series that match the selector over the
/// window; `None` when none is a known engine's.
fn find(asker: &mut Asker, grid: Grid) -> Result<Option<(Engine, usize)>, ScrapeError> {
    let names = presence_names();
    let selector = asker.selector.clone();
    let path = series_path(
        &asker.base,
        &names,
        selector.as_deref(),
        grid.start_ms,
        grid.after_ms,
    );
    let found = asker.ask(&path, parse_series)?.data;
    let families: BTreeSet<&str> = found
        .iter()
        .filter_map(|labels| Some(family_of(labels.get("__name__")?)))
        .collect();
    let Some(engine) = engines::detect(families.iter().copied()) else {
        return Ok(None);
    };
    let targets: BTreeSet<String> = found.iter().map(target_key).collect();
    Ok(Some((engine, targets.len())))
}

/// The range queries of one concept over the grid, then its closing point's.
fn ask_concept(
    asker: &mut Asker,
    (concept, engine): (Concept, Engine),
    grid: Grid,
    per_query: u64,
    pages: &mut Pages,
    log: &mut ScrapeLog,
) {
    let Some(query) = concept_query(engine, concept, asker.selector.as_deref()) else {
        return;
    };
    let mut ranges: Vec<(i64, i64, bool)> = grid
        .chunks(per_query)
        .into_iter()
        .map(|(first, last)| (grid.ms(first), grid.ms(last), false))
        .collect();
    ranges.push((grid.after_ms, grid.after_ms, true));
    for (start, end, closing) in ranges {
        if asker.gave_up {
            asker.skipped += 1;
            continue;
        }
        let path = range_path(&asker.base, &query, start, end, grid.step_ms);
        match asker.ask(&path, parse_matrix) {
            Ok(answer) => {
                if let Some(w) = answer.warnings.first() {
                    asker.warning.get_or_insert_with(|| w.clone());
                }
                pages.add(concept, &answer.data, closing);
            }
            Err(e) => {
                if asker.noted.insert(e.kind_key()) {
                    log.note(format!("the Prometheus query for {}: {e}", concept.key()));
                }
                pages.fail(&e, closing);
            }
        }
    }
}

/// The lines into the log, and into the file.
fn finish(settings: &PromSettings, step_ns: u64, pages: Pages, mut log: ScrapeLog) -> ScrapeLog {
    let source = PromSource {
        url: settings.url.clone(),
        selector: settings.selector.clone(),
        step_ns,
    };
    let scrapes = pages.into_scrapes(&source);
    if let Some(path) = &settings.jsonl {
        match write_file(path, &scrapes) {
            Ok(n) => log.jsonl_lines = n,
            Err(e) => log.note(format!("{}: {e}", path.display())),
        }
    }
    for s in scrapes {
        log.add(s, MAX_LINES);
    }
    log
}

/// The lines as `server_metrics.jsonl`; how many were written.
fn write_file(path: &std::path::Path, scrapes: &[crate::scrape::Scrape]) -> std::io::Result<u64> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut buf = Vec::new();
    for s in scrapes {
        jsonl::write_line(&mut w, s, &mut buf)?;
    }
    w.flush()?;
    Ok(scrapes.len() as u64)
}

/// The queries' connection, their shared deadline, and what they met.
struct Asker {
    fetcher: Fetcher,
    /// The server URL's path, where `/api/v1/…` goes.
    base: String,
    selector: Option<String>,
    started: Instant,
    /// A query could not reach the server or timed out: no more are asked.
    gave_up: bool,
    /// Queries not asked since.
    skipped: u64,
    /// The first warning an answer carried.
    warning: Option<String>,
    /// Kinds of failure already in a note.
    noted: BTreeSet<String>,
}

impl Asker {
    fn new(settings: &PromSettings) -> Result<Asker, ScrapeError> {
        let url = MetricsUrl::parse(&settings.url)?;
        let base = url.path.trim_end_matches('/').to_string();
        Ok(Asker {
            fetcher: Fetcher::new(url, &settings.get)?,
            base,
            selector: settings.selector.clone(),
            started: Instant::now(),
            gave_up: false,
            skipped: 0,
            warning: None,
            noted: BTreeSet::new(),
        })
    }

    /// What the reader should know of the queries: those not asked, a warning.
    fn tell(&self, settings: &PromSettings, log: &mut ScrapeLog) {
        if self.skipped > 0 {
            log.note(format!(
                "{} Prometheus queries not asked after {} did not answer",
                self.skipped, settings.url
            ));
        }
        if let Some(w) = &self.warning {
            log.note(format!("Prometheus warned: {w}"));
        }
    }

    /// One `GET` within what is left of the deadline, its answer parsed.
    fn ask<T>(
        &mut self,
        path: &str,
        parse: fn(u16, &str) -> Result<Answer<T>, ScrapeError>,
    ) -> Result<Answer<T>, ScrapeError> {
        let left = TOTAL_TIMEOUT.saturating_sub(self.started.elapsed());
        let result = match left.is_zero() {
            true => Err(ScrapeError::Timeout(TOTAL_TIMEOUT.as_millis() as u64)),
            false => self
                .fetcher
                .get_any(path, left.min(QUERY_TIMEOUT))
                .and_then(|(status, body)| parse(status, body)),
        };
        if let Err(e) = &result {
            self.gave_up |= matches!(
                e,
                ScrapeError::Connect(_) | ScrapeError::Timeout(_) | ScrapeError::Setup(_)
            );
        }
        result
    }
}
