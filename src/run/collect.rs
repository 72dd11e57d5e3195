//! Part of the run (wiring): the collector thread's loop — the calling thread, pinned off the
//! workers' CPUs for the run — which takes the workers' records off their rings into the
//! `Collector`, tells the `Observer`, sends emptied buffers back to the worker they came
//! from, and turns an interrupt into the workers' stop and cancel flags. Never prints.

use super::workers::Started;
use super::Observer;
use crate::collector::Collector;
use crate::prepare::WorkloadTally;
use crate::record::handoff::CollectorLink;
use crate::worker::Shared;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Turns an interrupt into the workers' two flags: stop scheduling at once, cancel what is
/// still in flight when the grace period ends.
pub(super) struct Stopper<'a> {
    pub interrupt: &'a AtomicBool,
    pub shared: &'a Shared,
    pub grace_ns: u64,
    pub stopped_at_ns: Option<u64>,
}

impl Stopper<'_> {
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

/// The collector thread's loop: every record into the collector (and to the observer), its
/// buffers back to its worker, the interrupt watched, and about once a second a progress
/// call and a flush of the request log. Returns once every worker has hung up.
pub(super) fn collect(
    collector: &mut Collector,
    tally: &mut WorkloadTally,
    run: &Started,
    links: &mut [CollectorLink],
    mut stopper: Stopper<'_>,
    observer: &mut impl Observer,
    scraping: &mut super::server::Scraping,
) {
    collector.set_schedule_start(run.start_ns);
    let mut next_tick_ns = run.start_ns + 1_000_000_000;
    loop {
        stopper.check(run.clock.now_ns());
        let (taken, open) = drain(collector, tally, links, observer);
        scraping.tick(&run.shared, &run.clock, run.start_ns);
        let now = run.clock.now_ns();
        if now >= next_tick_ns {
            next_tick_ns = now + 1_000_000_000;
            collector.flush_log();
            let mut live = collector.live();
            // Handed to the kernel so far, less those whose record is in: still in flight.
            live.in_flight = Some(run.shared.total_sent().saturating_sub(live.sent));
            observer.on_progress(&live, now.saturating_sub(run.start_ns) as f64 / 1e9);
        }
        if !open {
            break;
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
    observer: &mut impl Observer,
) -> (usize, bool) {
    let mut taken = 0;
    let mut open = false;
    for link in links.iter_mut() {
        // Hung up is read before the last drain, so nothing sent before it is missed.
        let done = link.is_hung_up();
        taken += link.drain(|rec| {
            collector.add_from_worker(rec);
            tally.add(rec);
            observer.on_record(rec);
        });
        open |= !(done && link.is_empty());
    }
    (taken, open)
}
