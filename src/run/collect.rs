//! Part of the run (wiring): the collector thread's loop — the calling thread, pinned off the
//! workers' CPUs for the run — which takes the workers' records into the `Collector`, tells
//! the `Observer`, sends emptied buffers back, and turns an interrupt into the workers' stop
//! and cancel flags. Never prints.

use super::workers::Started;
use super::Observer;
use crate::collector::Collector;
use crate::prepare::WorkloadTally;
use crate::worker::Shared;
use crossbeam_channel::TryRecvError;
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
/// event vector back to the workers, the interrupt watched, and about once a second a
/// progress call and a flush of the request log. Returns once every worker has hung up.
pub(super) fn collect(
    collector: &mut Collector,
    tally: &mut WorkloadTally,
    run: &Started,
    mut stopper: Stopper<'_>,
    observer: &mut impl Observer,
    scraping: &mut super::server::Scraping,
) {
    let mut next_tick_ns = run.start_ns + 1_000_000_000;
    loop {
        stopper.check(run.clock.now_ns());
        let (taken, open) = drain(collector, tally, run, observer);
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
/// far below `RECORD_CHANNEL_CAP`.
const COLLECT_POLL: Duration = Duration::from_millis(2);

/// Takes every record waiting now; false once every worker has hung up and nothing is left.
fn drain(
    collector: &mut Collector,
    tally: &mut WorkloadTally,
    run: &Started,
    observer: &mut impl Observer,
) -> (usize, bool) {
    let mut taken = 0;
    loop {
        match run.records.try_recv() {
            Ok(mut rec) => {
                collector.add_from_worker(&mut rec);
                tally.add(&rec);
                observer.on_record(&rec);
                let _ = run.recycle.try_send(rec.take_spare());
                taken += 1;
            }
            Err(TryRecvError::Empty) => return (taken, true),
            Err(TryRecvError::Disconnected) => return (taken, false),
        }
    }
}
