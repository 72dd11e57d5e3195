//! Part of the runtime underneath client and simulator: the one way a thread gets its monoio
//! runtime — io_uring set up with `SINGLE_ISSUER | DEFER_TASKRUN` (the
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
use std::io;

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

/// A runtime of either driver.
pub type Runtime = monoio::FusionRuntime<
    monoio::time::TimeDriver<monoio::IoUringDriver>,
    monoio::time::TimeDriver<monoio::LegacyDriver>,
>;

/// How the thread waits, which decides the io_uring setup (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ring {
    /// The thread sleeps between its events: `DEFER_TASKRUN`.
    Sleeping,
    /// The thread polls (spins through the driver): `COOP_TASKRUN | TASKRUN_FLAG`.
    Polling,
}

fn uring_builder(ring: Ring) -> io_uring::Builder {
    let mut b = io_uring::IoUring::builder();
    b.setup_single_issuer();
    match ring {
        Ring::Polling => b.setup_coop_taskrun().setup_taskrun_flag(),
        Ring::Sleeping => b.setup_defer_taskrun(),
    };
    b
}

/// A runtime of the asked driver for this thread: io_uring with the tuned setup, or epoll
/// (`Epoll`, or `Auto` where the kernel refuses io_uring). With `Uring` a refusal is an
/// error naming the flag, never a silent change of driver. The same for client and simulator.
pub fn build(driver: IoDriver, ring: Ring) -> io::Result<(Runtime, DriverUsed)> {
    if driver != IoDriver::Epoll {
        let rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .with_entries(RING_ENTRIES)
            .uring_builder(uring_builder(ring))
            .enable_timer()
            .build();
        match rt {
            Ok(rt) => return Ok((rt.into(), DriverUsed::IoUring)),
            Err(e) if driver == IoDriver::Uring => {
                let why = format!("--io-driver uring: io_uring setup refused by the kernel: {e}");
                return Err(io::Error::new(e.kind(), why));
            }
            Err(_) => {}
        }
    }
    let rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()?;
    Ok((rt.into(), DriverUsed::Epoll))
}

/// Runs `make()`'s future to completion on a fresh runtime of the asked driver (`build`), and
/// says which driver ran it.
pub fn block_on<F, Fut>(
    driver: IoDriver,
    ring: Ring,
    make: F,
) -> io::Result<(DriverUsed, Fut::Output)>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let (mut rt, used) = build(driver, ring)?;
    CURRENT.with(|c| c.set(Some(used)));
    let out = rt.block_on(make());
    CURRENT.with(|c| c.set(None));
    Ok((used, out))
}

/// Whether io_uring with our flags can be set up here (tests skip io_uring cases otherwise).
pub fn uring_available() -> bool {
    uring_builder(Ring::Sleeping).build(8).is_ok()
}
