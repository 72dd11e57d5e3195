//! Part of `scrape` (the server's side of a run): the scraping thread. One thread,
//! `ringbench-scrape`, pinned to a CPU none of the caller's (the workers') CPUs, scrapes every
//! URL once a round, a round every `interval`, each scrape stamped on the run clock
//! (`rt::clock::mono_ns` less the run's origin) before the request and after the response,
//! and tagged with the run's phase. `mark` asks for a round at once at a phase boundary;
//! `stop` ends the thread and hands back the log.
//!
//! Nothing here can hold the caller up: `mark` and `stop` wait at most the scrape timeout
//! (which never exceeds the interval), whatever the endpoints do; a GET that stalls, resets,
//! answers 500 or garbage is one counted failure. The log is bounded (`max_scrapes`, plus
//! room for the boundary rounds so the window's ends are never lost), and so is every page
//! (`parse`). The thread writes `server_metrics.jsonl` itself when given a path, so the raw
//! families need not stay in memory. Nothing here prints; what a reader should know (running
//! unpinned, a file that could not be written) is in `ScrapeLog::notes`.

use super::get::{Fetcher, GetOptions, MetricsUrl};
use super::parse::parse_page;
use super::{cut, jsonl, Failure, Phase, Scrape, ScrapeError, MAX_MESSAGE_BYTES};
use crate::rt::clock::mono_ns;
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The default time between rounds: 1 s.
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000_000;
/// The shortest interval allowed: 100 ms (what AIPerf scrapes at).
pub const MIN_INTERVAL_NS: u64 = 100_000_000;
/// The longest interval allowed: 1 h.
pub const MAX_INTERVAL_NS: u64 = 3_600_000_000_000;
/// The shortest timeout a scrape gets: 10 ms.
pub const MIN_TIMEOUT_NS: u64 = 10_000_000;
/// Default bound on the scrapes kept: 10 h at 1 s, 1 h at 100 ms.
pub const DEFAULT_MAX_SCRAPES: usize = 36_000;
/// Default bound on a page's raw series.
pub const DEFAULT_RAW_SERIES_MAX: usize = 256;
/// Scrapes of boundary rounds kept past `max_scrapes`, so a full log still has its window's ends.
const MARK_RESERVE: usize = 64;
/// Most notes the log keeps.
const MAX_NOTES: usize = 16;
/// What `stop` waits beyond the timeout for the thread to finish a round in progress.
const STOP_SLACK: Duration = Duration::from_millis(50);

/// What to scrape, how often, and the bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScrapeSettings {
    /// The `/metrics` URLs, each scraped once a round, in order.
    pub urls: Vec<String>,
    /// Time between rounds, ns: default 1 s, at least 100 ms, at most 1 h.
    pub interval_ns: u64,
    /// The deadline of one scrape (connect, TLS, request and whole response), ns. `None`: the
    /// interval. Never more than the interval (so a stalled endpoint cannot make rounds pile
    /// up) nor less than 10 ms; a round of N stalled URLs takes N timeouts and the ticks it
    /// overran are counted in `missed_ticks`, not made up.
    pub timeout_ns: Option<u64>,
    /// Raw (unmapped) series kept per page.
    pub raw_series_max: usize,
    /// Scrapes kept in the log; later periodic ones are counted in `dropped`.
    pub max_scrapes: usize,
    /// The phase of the scrapes before the first `mark`.
    pub start_phase: Phase,
    /// Where to write `server_metrics.jsonl` as scrapes are taken (`None`: no file). With a
    /// file, the log's scrapes leave their raw series out; without one, they keep them, up to
    /// `raw_series_max` a page (about 15 KiB a vLLM page: lower it for long runs at 100 ms).
    pub jsonl: Option<PathBuf>,
    /// TLS roots and the page bound.
    pub get: GetOptions,
}

impl ScrapeSettings {
    /// The defaults for `urls`.
    pub fn new(urls: Vec<String>) -> Self {
        ScrapeSettings {
            urls,
            interval_ns: DEFAULT_INTERVAL_NS,
            timeout_ns: None,
            raw_series_max: DEFAULT_RAW_SERIES_MAX,
            max_scrapes: DEFAULT_MAX_SCRAPES,
            start_phase: Phase::Warmup,
            jsonl: None,
            get: GetOptions::default(),
        }
    }

    /// The timeout one scrape gets (see `timeout_ns`).
    pub fn timeout(&self) -> Duration {
        let t = self.timeout_ns.unwrap_or(self.interval_ns);
        Duration::from_nanos(t.clamp(MIN_TIMEOUT_NS, self.interval_ns.max(MIN_TIMEOUT_NS)))
    }

    /// What is wrong with the settings, if anything.
    pub fn validate(&self) -> Result<(), ScrapeError> {
        if self.urls.is_empty() {
            return Err(ScrapeError::Setup("no URL to scrape".into()));
        }
        if !(MIN_INTERVAL_NS..=MAX_INTERVAL_NS).contains(&self.interval_ns) {
            return Err(ScrapeError::Setup(format!(
                "interval {} ms: must be at least {} ms and at most an hour",
                self.interval_ns / 1_000_000,
                MIN_INTERVAL_NS / 1_000_000
            )));
        }
        for url in &self.urls {
            MetricsUrl::parse(url)?;
        }
        Ok(())
    }
}

/// What the scraping thread did: every scrape kept, in order, and the counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScrapeLog {
    /// Scrapes in the order taken (with `jsonl` set, without their raw series: the file has
    /// them).
    pub scrapes: Vec<Scrape>,
    /// Periodic scrapes taken but not kept (past `max_scrapes`).
    pub dropped: u64,
    /// Scrapes that succeeded.
    pub ok: u64,
    /// Scrapes that failed.
    pub failed: u64,
    /// Failed scrapes by `ScrapeError::kind_key`.
    pub failures_by_kind: BTreeMap<String, u64>,
    /// The first error message of each kind.
    pub first_error: BTreeMap<String, String>,
    /// Rounds not started because the one before overran their tick.
    pub missed_ticks: u64,
    /// The CPU the thread ran on; `None`: unpinned.
    pub cpu: Option<usize>,
    /// What a reader should know: running unpinned, a file that could not be written, a
    /// thread that did not stop in time.
    pub notes: Vec<String>,
    /// Lines written to `server_metrics.jsonl`.
    pub jsonl_lines: u64,
    /// The thread ended within `stop`'s bound (else the log holds what it had by then).
    pub stopped: bool,
}

impl ScrapeLog {
    /// Keeps a note for the reader (bounded).
    pub(crate) fn note(&mut self, text: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text);
        }
    }

    /// Counts and keeps one scrape (bounded).
    pub(crate) fn add(&mut self, scrape: Scrape, max: usize) {
        match &scrape.error {
            None => self.ok += 1,
            Some(f) => {
                self.failed += 1;
                *self.failures_by_kind.entry(f.kind.clone()).or_default() += 1;
                self.first_error
                    .entry(f.kind.clone())
                    .or_insert_with(|| f.message.clone());
            }
        }
        let room = if scrape.mark {
            max.saturating_add(MARK_RESERVE)
        } else {
            max
        };
        if self.scrapes.len() < room {
            self.scrapes.push(scrape);
        } else {
            self.dropped += 1;
        }
    }
}

enum Cmd {
    Mark(Sender<()>),
    Stop,
}

/// What the caller and the thread share: the stop flag, the phase and the log.
struct Shared {
    stop: AtomicBool,
    phase: AtomicU8,
    log: Mutex<ScrapeLog>,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, ScrapeLog> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn phase(&self) -> Phase {
        let i = usize::from(self.phase.load(Ordering::Acquire));
        Phase::ALL.get(i).copied().unwrap_or_default()
    }
}

fn phase_index(p: Phase) -> u8 {
    Phase::ALL.iter().position(|&q| q == p).unwrap_or(0) as u8
}

/// The scraping thread, seen from the caller.
pub struct Scraper {
    cmd: Sender<Cmd>,
    shared: Arc<Shared>,
    done: Receiver<()>,
    thread: Option<JoinHandle<()>>,
    timeout: Duration,
}

impl Scraper {
    /// Starts the thread; it scrapes at once, then every interval. `origin_mono_ns` is the
    /// run clock's origin (`mono_ns` at the run's start); `avoid_cpus` the CPUs it must not
    /// run on (the workers'). Refused (`Setup`) for bad settings or URLs, TLS that cannot be
    /// set up, a file that cannot be created or a thread that cannot be started.
    pub fn start(
        settings: ScrapeSettings,
        origin_mono_ns: u64,
        avoid_cpus: &[usize],
    ) -> Result<Scraper, ScrapeError> {
        settings.validate()?;
        let fetchers = settings
            .urls
            .iter()
            .map(|u| Fetcher::new(MetricsUrl::parse(u)?, &settings.get))
            .collect::<Result<Vec<_>, _>>()?;
        let jsonl = match &settings.jsonl {
            Some(path) => {
                Some(BufWriter::new(File::create(path).map_err(|e| {
                    ScrapeError::Setup(format!("{}: {e}", path.display()))
                })?))
            }
            None => None,
        };
        let cpu = crate::rt::cpu::online_cpus()
            .into_iter()
            .find(|c| !avoid_cpus.contains(c));
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            phase: AtomicU8::new(phase_index(settings.start_phase)),
            log: Mutex::new(ScrapeLog::default()),
        });
        let timeout = settings.timeout();
        let (cmd, cmd_rx) = bounded(16);
        let (done_tx, done) = bounded(1);
        let mut worker = Worker {
            fetchers,
            settings,
            origin_mono_ns,
            shared: Arc::clone(&shared),
            round: 0,
            jsonl,
            line: Vec::new(),
        };
        let avoid = avoid_cpus.to_vec();
        let thread = std::thread::Builder::new()
            .name("ringbench-scrape".into())
            .spawn(move || {
                worker.pin(cpu, &avoid);
                worker.run(&cmd_rx);
                let _ = done_tx.send(());
            })
            .map_err(|e| ScrapeError::Setup(format!("cannot start the scraping thread: {e}")))?;
        Ok(Scraper {
            cmd,
            shared,
            done,
            thread: Some(thread),
            timeout,
        })
    }

    /// The timeout of one scrape, which also bounds `mark` and `stop`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A phase boundary: every later scrape is tagged `phase`, and a round is taken at once.
    /// True once that round is done; false when it was not done within the timeout (it is
    /// then taken as soon as the thread is free, still tagged `phase`).
    pub fn mark(&self, phase: Phase) -> bool {
        let deadline = Instant::now() + self.timeout;
        self.shared
            .phase
            .store(phase_index(phase), Ordering::Release);
        let (tx, rx) = bounded(1);
        if self.cmd.send_deadline(Cmd::Mark(tx), deadline).is_err() {
            return false;
        }
        rx.recv_deadline(deadline).is_ok()
    }

    /// `mark` without waiting (for a caller that must not block, like the collector's loop):
    /// the phase changes at once and the round is taken as soon as the thread is free. False
    /// when the thread's queue is full (the phase still changed).
    pub fn mark_nowait(&self, phase: Phase) -> bool {
        self.shared
            .phase
            .store(phase_index(phase), Ordering::Release);
        // The reply goes to a receiver dropped here: `try_send` on it fails quietly.
        let (tx, _) = bounded(1);
        self.cmd.try_send(Cmd::Mark(tx)).is_ok()
    }

    /// Ends the thread (within the timeout and a little) and returns its log.
    pub fn stop(mut self) -> ScrapeLog {
        self.shared.stop.store(true, Ordering::Release);
        let _ = self.cmd.try_send(Cmd::Stop);
        let finished = self.done.recv_timeout(self.timeout + STOP_SLACK).is_ok();
        if finished {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        let mut log = std::mem::take(&mut *self.shared.log());
        log.stopped = finished;
        if !finished {
            log.note(
                "the scraping thread did not stop in time; its last scrape is left out".into(),
            );
        }
        log
    }
}

impl Drop for Scraper {
    /// Tells the thread to end without waiting for it.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        let _ = self.cmd.try_send(Cmd::Stop);
    }
}

/// The thread's own state.
struct Worker {
    fetchers: Vec<Fetcher>,
    settings: ScrapeSettings,
    origin_mono_ns: u64,
    shared: Arc<Shared>,
    round: u64,
    jsonl: Option<BufWriter<File>>,
    line: Vec<u8>,
}

impl Worker {
    fn pin(&self, cpu: Option<usize>, avoid: &[usize]) {
        let mut log = self.shared.log();
        match cpu {
            Some(id) if core_affinity::set_for_current(core_affinity::CoreId { id }) => {
                log.cpu = Some(id);
            }
            Some(id) => log.note(format!("pinning to CPU {id} failed: running unpinned")),
            None => log.note(format!(
                "every CPU is one of {avoid:?} (the workers'): running unpinned"
            )),
        }
    }

    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire)
    }

    fn run(&mut self, cmd: &Receiver<Cmd>) {
        let interval = Duration::from_nanos(self.settings.interval_ns);
        let mut next = Instant::now();
        while !self.stopping() {
            match cmd.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(Cmd::Mark(reply)) => {
                    self.take_round(true);
                    let _ = reply.try_send(());
                }
                Ok(Cmd::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    self.take_round(false);
                    next += interval;
                    let now = Instant::now();
                    if next < now {
                        let behind = (now - next).as_nanos() / interval.as_nanos().max(1) + 1;
                        let behind = u32::try_from(behind).unwrap_or(u32::MAX);
                        self.shared.log().missed_ticks += u64::from(behind);
                        next += interval * behind;
                    }
                }
            }
        }
        if let Some(w) = self.jsonl.as_mut() {
            if let Err(e) = w.flush() {
                self.shared.log().note(format!("server_metrics.jsonl: {e}"));
            }
        }
    }

    fn now_ns(&self) -> u64 {
        mono_ns().saturating_sub(self.origin_mono_ns)
    }

    fn take_round(&mut self, mark: bool) {
        self.round += 1;
        for i in 0..self.fetchers.len() {
            if self.stopping() {
                return;
            }
            let scrape = self.scrape(i, mark);
            self.record(scrape);
        }
    }

    fn scrape(&mut self, i: usize, mark: bool) -> Scrape {
        let phase = self.shared.phase();
        let timeout = self.settings.timeout();
        let raw_max = self.settings.raw_series_max;
        let start_ns = self.now_ns();
        let fetcher = &mut self.fetchers[i];
        let result = fetcher
            .get(timeout)
            .and_then(|text| parse_page(text, raw_max));
        let end_ns = self.now_ns();
        let (page, error) = match result {
            Ok(page) => (Some(page), None),
            Err(e) => (None, Some(Failure::from(&e))),
        };
        Scrape {
            start_ns,
            end_ns,
            url: self.fetchers[i].url().url.clone(),
            phase,
            round: self.round,
            mark,
            error,
            page,
            prometheus: None,
        }
    }

    /// Writes the scrape's line (then lets its raw series go) and adds it to the log.
    fn record(&mut self, mut scrape: Scrape) {
        let mut wrote = false;
        if let Some(w) = self.jsonl.as_mut() {
            match jsonl::write_line(w, &scrape, &mut self.line) {
                Ok(()) => wrote = true,
                Err(e) => {
                    let why = cut(&e.to_string(), MAX_MESSAGE_BYTES);
                    self.jsonl = None;
                    self.shared.log().note(format!(
                        "server_metrics.jsonl: {why}; no more lines written"
                    ));
                }
            }
        }
        if wrote {
            if let Some(p) = scrape.page.as_mut() {
                p.raw = BTreeMap::new();
            }
        }
        let max = self.settings.max_scrapes;
        let mut log = self.shared.log();
        log.jsonl_lines += u64::from(wrote);
        log.add(scrape, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_follows_the_interval_and_its_bounds() {
        let mut s = ScrapeSettings::new(vec!["http://127.0.0.1:1/metrics".into()]);
        assert_eq!(s.timeout(), Duration::from_secs(1));
        s.timeout_ns = Some(5_000_000_000);
        assert_eq!(s.timeout(), Duration::from_secs(1));
        s.timeout_ns = Some(1);
        assert_eq!(s.timeout(), Duration::from_millis(10));
        s.interval_ns = 50_000_000;
        assert!(s.validate().is_err());
        s.interval_ns = MIN_INTERVAL_NS;
        assert!(s.validate().is_ok());
        s.urls = vec!["ftp://x".into()];
        assert!(matches!(s.validate(), Err(ScrapeError::Setup(_))));
        s.urls.clear();
        assert!(s.validate().is_err());
    }

    fn scrape(mark: bool, error: Option<&str>) -> Scrape {
        Scrape {
            start_ns: 0,
            end_ns: 0,
            url: "u".into(),
            phase: Phase::Measure,
            round: 0,
            mark,
            error: error.map(|k| Failure {
                kind: k.into(),
                message: format!("{k} happened"),
            }),
            page: None,
            prometheus: None,
        }
    }

    #[test]
    fn the_log_is_bounded_but_keeps_boundary_rounds() {
        let mut log = ScrapeLog::default();
        for _ in 0..5 {
            log.add(scrape(false, None), 3);
        }
        log.add(scrape(true, Some("timeout")), 3);
        log.add(scrape(false, Some("timeout")), 3);
        log.add(scrape(false, Some("http_500")), 3);
        assert_eq!(log.scrapes.len(), 4);
        assert!(log.scrapes[3].mark);
        assert_eq!((log.ok, log.failed, log.dropped), (5, 3, 4));
        assert_eq!(log.failures_by_kind["timeout"], 2);
        assert_eq!(log.first_error["http_500"], "http_500 happened");
    }
}
