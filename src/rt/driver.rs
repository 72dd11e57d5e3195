//! The worker's runtime: monoio on io_uring set up with `SINGLE_ISSUER | DEFER_TASKRUN` (the
//! default ring setup cost 40–70% more per wake-up than epoll on this kernel; these flags
//! bring it level), falling back to epoll where io_uring is refused (container seccomp
//! profiles, `io_uring_disabled`). The driver actually used is returned so the summary says it.
//!
//! A worker that polls (see `spin`) gets `SINGLE_ISSUER | COOP_TASKRUN | TASKRUN_FLAG`. Why: with
//! `DEFER_TASKRUN` a completion's task work runs only inside a waiting `io_uring_enter`, and a
//! poll pass returns as soon as its own completion is in, so some sockets' reads waited:
//! at 30,000/s, 41–3,284 responses of 300,000 per 10 s run were read 5–105 ms after the
//! simulator wrote them (epoll: 0–4). With `COOP_TASKRUN` task work runs on every entry to
//! the kernel, which a polling worker makes constantly, and no IPI is sent for it: 0–26 such
//! reads, and 15–30% less busy CPU than epoll at the same rate.

use crate::plan::IoDriver;
use std::future::Future;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverUsed {
    IoUring,
    Epoll,
}

impl DriverUsed {
    pub fn name(self) -> &'static str {
        match self {
            DriverUsed::IoUring => "io_uring",
            DriverUsed::Epoll => "epoll",
        }
    }
}

thread_local! {
    /// The driver of the runtime this thread is running, set by `block_on`.
    static CURRENT: std::cell::Cell<Option<DriverUsed>> = const { std::cell::Cell::new(None) };
}

/// The driver of the runtime running on this thread (`None` outside `block_on`).
pub fn current() -> Option<DriverUsed> {
    CURRENT.with(|c| c.get())
}

/// Ring entries: enough submissions for thousands of in-flight reads per worker.
const RING_ENTRIES: u32 = 4096;

fn uring_builder(polls: bool) -> io_uring::Builder {
    let mut b = io_uring::IoUring::builder();
    b.setup_single_issuer();
    if polls {
        b.setup_coop_taskrun().setup_taskrun_flag();
    } else {
        b.setup_defer_taskrun();
    }
    b
}

/// Runs `make()`'s future to completion on a fresh runtime of the asked driver.
/// With `Uring` the caller asked for io_uring explicitly; if the kernel refuses it, that is a
/// hard error (panics the worker with the reason) rather than a silent change of driver.
pub fn block_on<F, Fut>(driver: IoDriver, make: F) -> (DriverUsed, Fut::Output)
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    block_on_polling(driver, false, make)
}

/// `block_on` for a worker that polls (`polls`) or sleeps between its sends.
pub fn block_on_polling<F, Fut>(driver: IoDriver, polls: bool, make: F) -> (DriverUsed, Fut::Output)
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    if driver != IoDriver::Epoll {
        let rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .with_entries(RING_ENTRIES)
            .uring_builder(uring_builder(polls))
            .enable_timer()
            .build();
        match rt {
            Ok(mut rt) => {
                CURRENT.with(|c| c.set(Some(DriverUsed::IoUring)));
                return (DriverUsed::IoUring, rt.block_on(make()));
            }
            Err(e) if driver == IoDriver::Uring => {
                panic!("--io-driver uring: io_uring setup refused by the kernel: {e}")
            }
            Err(_) => {}
        }
    }
    let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()
        .expect("an epoll runtime can always be built");
    CURRENT.with(|c| c.set(Some(DriverUsed::Epoll)));
    (DriverUsed::Epoll, rt.block_on(make()))
}

/// Whether io_uring with our flags can be set up here (tests skip io_uring cases otherwise).
pub fn uring_available() -> bool {
    uring_builder(false).build(8).is_ok()
}
