//! The simulator's counters' one write (server side; the client flow never reads them): a
//! relaxed load and store on an atomic only its own thread writes. Used by `stats`,
//! `metrics`, `truth` and the serving path; it may not block or allocate.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Adds one to a counter only its own thread writes.
#[inline]
pub(crate) fn bump(counter: &AtomicU64, by: u64) {
    // A load and a store, not a locked add: this thread is the only writer.
    counter.store(counter.load(Relaxed) + by, Relaxed);
}
