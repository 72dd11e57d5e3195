//! Part of the run (wiring): the collector thread's loop — the calling thread, pinned off the
//! workers' CPUs for the run — which takes the workers' records off their rings into the
//! `Collector`, tells the `Observer`, sends emptied buffers back to the worker they came
//! from, and turns an interrupt into the workers' stop and cancel flags — or a server that does
//! not serve the endpoint asked (`ApiGuard`) into an early end. Never prints.

use super::workers::Started;
use super::Observer;
use crate::collector::Collector;
use crate::plan::Endpoint;
use crate::prepare::WorkloadTally;
use crate::record::handoff::CollectorLink;
use crate::record::{Outcome, Record};
use crate::worker::Shared;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Turns an interrupt into the workers' two flags: stop scheduling at once, cancel what is
/// still in flight when the grace period ends.
pub(super) struct Stopper<'a> {
    pub interrupt: &'a AtomicBool,
    /// Ends the run early when the server does not serve the endpoint.
    pub guard: ApiGuard,
    pub shared: &'a Shared,
    pub grace_ns: u64,
    pub stopped_at_ns: Option<u64>,
}

impl<'a> Stopper<'a> {
    pub fn new(
        interrupt: &'a AtomicBool,
        guard: ApiGuard,
        shared: &'a Shared,
        grace_ns: u64,
    ) -> Self {
        Stopper {
            interrupt,
            guard,
            shared,
            grace_ns,
            stopped_at_ns: None,
        }
    }

    fn check(&mut self, now_ns: u64) {
        match self.stopped_at_ns {
            None if self.interrupt.load(Ordering::Relaxed) => {
                self.shared.stop.store(true, Ordering::Relaxed);
                self.stopped_at_ns = Some(now_ns);
            }
            Some(at) if now_ns.saturating_sub(at) >= self.grace_ns => {
                self.shared.cancel.store(true, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// Ends a run whose server does not serve the endpoint asked: until a first request
/// succeeds, an answer of 404 or 405, or a 2xx answer in another API's shape
/// (`Outcome::WrongApi`), stops sending and cancels what is in flight at once — every later
/// request would fail the same way. What was measured is kept; the reason names the endpoint.
pub(super) struct ApiGuard {
    endpoint: Endpoint,
    /// The servers' URLs by index (none for the run's own simulator), for the line.
    servers: Vec<String>,
    /// A request succeeded: the endpoint is served; nothing ends the run early after it.
    served: bool,
    /// Why the run was ended, once it was.
    pub refused: Option<String>,
}

impl ApiGuard {
    pub fn new(endpoint: Endpoint, servers: Vec<String>) -> ApiGuard {
        ApiGuard {
            endpoint,
            servers,
            served: false,
            refused: None,
        }
    }

    /// Looks at one finished record; true when it ends the run (the first time only).
    fn see(&mut self, rec: &Record) -> bool {
        if self.served || self.refused.is_some() {
            return false;
        }
        let server = (self.servers)
            .get(rec.endpoint as usize)
            .map_or("", String::as_str);
        let (path, name) = (self.endpoint.path(), self.endpoint.name());
        let why = match (rec.outcome, rec.status) {
            (Outcome::Ok, _) => {
                self.served = true;
                return false;
            }
            (Outcome::HttpStatus, 404 | 405) => format!(
                "answered HTTP {} to POST {path}: it does not serve --endpoint {name}",
                rec.status
            ),
            (Outcome::WrongApi, _) => format!(
                "answered POST {path} in another API's shape: it does not serve --endpoint \
                 {name} as asked"
            ),
            _ => return false,
        };
        self.refused = Some(format!(
            "the server{}{server} {why}; the run was ended after its first answers (nothing \
             measured is lost: see the failures)",
            if server.is_empty() { "" } else { " at " }
        ));
        true
    }
}

/// What the collector thread tends beside the records: the server's scrapes and, with
/// `--metrics-listen`, the live page.
pub(super) struct Beside<'a> {
    pub scraping: &'a mut super::server::Scraping,
    pub live: Option<&'a mut super::live::LiveServer>,
}

impl<'a> Beside<'a> {
    pub fn new(
        scraping: &'a mut super::server::Scraping,
        live: Option<&'a mut super::live::LiveServer>,
    ) -> Self {
        Beside { scraping, live }
    }
}

/// The collector thread's loop: every record into the collector (and to the observer), its
/// buffers back to its worker, the interrupt (and `guard`) watched, and about once a second
/// a progress call and a flush of the request log. Returns once every worker has hung up,
/// with the reason the run was ended early, if it was (`ApiGuard`).
pub(super) fn collect(
    collector: &mut Collector,
    tally: &mut WorkloadTally,
    run: &Started,
    links: &mut [CollectorLink],
    mut stopper: Stopper<'_>,
    observer: &mut impl Observer,
    beside: &mut Beside<'_>,
) -> Option<String> {
    collector.set_schedule_start(run.start_ns);
    let mut next_tick_ns = run.start_ns + 1_000_000_000;
    loop {
        stopper.check(run.clock.now_ns());
        let mut refused = false;
        let (taken, open) = drain(collector, tally, links, &mut |rec| {
            observer.on_record(rec);
            refused |= stopper.guard.see(rec);
        });
        if refused {
            if let Some(why) = &stopper.guard.refused {
                observer.on_note(why);
            }
            run.shared.stop.store(true, Ordering::Relaxed);
            run.shared.cancel.store(true, Ordering::Relaxed);
        }
        beside.scraping.tick(&run.shared, &run.clock, run.start_ns);
        let now = run.clock.now_ns();
        if let Some(live) = beside.live.as_mut() {
            live.tick(collector, run, now);
        }
        if now >= next_tick_ns {
            next_tick_ns = now + 1_000_000_000;
            collector.flush_log();
            let mut live = collector.live();
            // Handed to the kernel so far, less those whose record is in: still in flight.
            live.in_flight = Some(run.shared.total_sent().saturating_sub(live.tally.sent));
            observer.on_progress(&live, now.saturating_sub(run.start_ns) as f64 / 1e9);
        }
        if !open {
            return stopper.guard.refused;
        }
        if taken == 0 {
            // Polled, not woken per record: a blocking `recv` made every record a futex wake
            // from the worker, and the woken collector was placed on the worker's own core
            // (wake-affine), preempting it 30,000 times a second. Records carry their stamps,
            // so collecting them in batches changes no figure.
            std::thread::sleep(COLLECT_POLL);
        }
    }
}

/// How long the collector sleeps when it finds no record: at 30,000 records/s a batch of ~60,
/// far below a worker's ring (`workers::RECORD_RING_TOTAL`).
const COLLECT_POLL: Duration = Duration::from_millis(2);

/// Takes every record waiting now on every worker's ring; false once every worker has hung
/// up and nothing is left.
fn drain(
    collector: &mut Collector,
    tally: &mut WorkloadTally,
    links: &mut [CollectorLink],
    on_record: &mut impl FnMut(&Record),
) -> (usize, bool) {
    let mut taken = 0;
    let mut open = false;
    for link in links.iter_mut() {
        // Hung up is read before the last drain, so nothing sent before it is missed.
        let done = link.is_hung_up();
        taken += link.drain(|rec| {
            collector.add_from_worker(rec);
            tally.add(rec);
            on_record(rec);
        });
        open |= !(done && link.is_empty());
    }
    (taken, open)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(outcome: Outcome, status: u16) -> Record {
        Record {
            outcome,
            status,
            endpoint: 1,
            ..Record::default()
        }
    }

    #[test]
    fn a_404_405_or_wrong_shape_before_any_success_ends_the_run_once() {
        let servers = ["http://a:1".to_string(), "http://b:2".to_string()];
        for (outcome, status) in [
            (Outcome::HttpStatus, 404),
            (Outcome::HttpStatus, 405),
            (Outcome::WrongApi, 200),
        ] {
            let mut g = ApiGuard::new(Endpoint::Responses, servers.to_vec());
            // Other failures first do not decide anything.
            assert!(!g.see(&rec(Outcome::HttpStatus, 503)));
            assert!(!g.see(&rec(Outcome::Timeout, 0)));
            assert!(g.see(&rec(outcome, status)), "{outcome:?}");
            let why = g.refused.clone().unwrap();
            assert!(
                why.contains("/v1/responses") && why.contains("http://b:2"),
                "{why}"
            );
            assert!(!g.see(&rec(outcome, status)), "once only");
        }
    }

    #[test]
    fn after_a_success_nothing_ends_the_run() {
        let mut g = ApiGuard::new(Endpoint::Chat, vec![]);
        assert!(!g.see(&rec(Outcome::Ok, 200)));
        assert!(!g.see(&rec(Outcome::HttpStatus, 404)));
        assert!(!g.see(&rec(Outcome::WrongApi, 200)));
        assert_eq!(g.refused, None);
    }
}
