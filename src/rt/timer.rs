//! Part of the runtime underneath client and simulator: kernel-timed waits, one type each —
//! `Timer`, a `timerfd` armed at an absolute `CLOCK_MONOTONIC` deadline; `Bell`, an `eventfd`
//! another thread rings; and `DriverPass`, one trip through the runtime's driver without
//! sleeping. All are awaited through monoio's own readiness (a `PollAdd` on io_uring, epoll on
//! the legacy driver), with the thread's timer slack lowered to 1 ns.
//!
//! Why not `monoio::time::sleep`: its wheel ticks every millisecond and rounds a sleep up by a
//! tick, so a 0–200 µs sleep takes about 1 ms, and a wake lands anywhere in [deadline,
//! deadline + ~2 ms). Measured here (300 waits each, idle machine): monoio sleep p50
//! 0.84–1.10 ms late; the timerfd p50 18 µs (50 µs gaps) to 134 µs (10 ms gaps, where the core
//! has gone idle), on both drivers. Deadlines are absolute, so a late wake-up never shifts the
//! ones after it.
//!
//! The fds are wrapped in monoio's `TcpStream` only to borrow its readiness machinery:
//! `readable()` is the one method ever called on them; reads go through `libc::read`.

use std::cell::Cell;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::rt::clock::mono_ns;

/// Lowers the calling thread's timer slack (default 50 µs) so wake-ups are not batched.
pub fn lower_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Arms timerfd `fd` to fire once at the absolute `CLOCK_MONOTONIC` time `deadline_mono_ns`
/// (a time already past fires at once).
fn arm_abs(fd: RawFd, deadline_mono_ns: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (deadline_mono_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_mono_ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: the caller's `fd` is an open timerfd and `spec` a valid itimerspec; a null
    // old-value pointer is allowed.
    let r =
        unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A readiness-waitable fd, closed on drop. Must be made inside a monoio runtime.
struct Waitable {
    stream: monoio::net::TcpStream,
}

impl Waitable {
    fn new(fd: OwnedFd) -> io::Result<Self> {
        // SAFETY: `fd` is an owned, open descriptor; ownership moves into the std wrapper,
        // which monoio takes over and closes on drop. Only readiness is ever asked of it.
        let std = unsafe { std::net::TcpStream::from_raw_fd(fd.into_raw_fd()) };
        Ok(Self {
            stream: monoio::net::TcpStream::from_std(std)?,
        })
    }

    fn raw(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    async fn readable(&self) -> io::Result<()> {
        self.stream.readable(false).await
    }

    /// Reads (and so clears) the fd's 8-byte counter: 0 when there was nothing to read.
    fn take_count(&self) -> u64 {
        let mut count = [0u8; 8];
        // SAFETY: reading 8 bytes into a valid 8-byte buffer from an fd we own; the fd is
        // non-blocking, so an empty counter returns EAGAIN, which reads as 0.
        let n = unsafe { libc::read(self.raw(), count.as_mut_ptr().cast(), count.len()) };
        if n == 8 {
            u64::from_ne_bytes(count)
        } else {
            0
        }
    }
}

/// A fresh fd from a syscall's return value.
fn owned(raw: libc::c_int) -> io::Result<OwnedFd> {
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// A precise sleep on absolute `CLOCK_MONOTONIC` deadlines. Not `Send`: it belongs to the
/// runtime that made it.
pub struct Timer {
    fd: Waitable,
}

impl Timer {
    /// Must be called inside a monoio runtime; lowers the thread's timer slack.
    pub fn new() -> io::Result<Self> {
        lower_timer_slack();
        let flags = libc::TFD_CLOEXEC | libc::TFD_NONBLOCK;
        // SAFETY: plain syscall; the result is checked by `owned`.
        let fd = owned(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) })?;
        Ok(Timer {
            fd: Waitable::new(fd)?,
        })
    }

    /// The timerfd, for `fire_now` from whoever stops the sleeper.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.raw()
    }

    /// Arms the timer for `deadline_mono_ns` without waiting (0 disarms it); either way its
    /// expiration count is cleared. For a timer that one task waits on (`fired`) for deadlines
    /// other tasks set (the simulator's per-thread ticker).
    pub fn arm(&self, deadline_mono_ns: u64) -> io::Result<()> {
        arm_abs(self.fd.raw(), deadline_mono_ns)
    }

    /// Returns once the timer has fired (or `fire_now` fired it) since it was last armed;
    /// it stays fired until armed again.
    pub async fn fired(&self) -> io::Result<()> {
        self.fd.readable().await
    }

    /// Returns once `CLOCK_MONOTONIC` reaches `deadline_mono_ns` (at once if it has), or
    /// earlier when `fire_now` fired the timer (the caller re-checks why it slept).
    ///
    /// On the normal path the expiration count is never read: arming the timerfd again resets
    /// it (so the fd is not readable until the next deadline), and the clock tells a fired
    /// timer from a spurious wake. That saves a `read` syscall per wake, ~0.6 per request at
    /// 20,000/s. Only a wake before the deadline reads the count, to tell `fire_now` (a count)
    /// from a spurious wake (none).
    pub async fn sleep_until(&self, deadline_mono_ns: u64) -> io::Result<()> {
        if mono_ns() >= deadline_mono_ns {
            return Ok(());
        }
        arm_abs(self.fd.raw(), deadline_mono_ns)?;
        loop {
            self.fd.readable().await?;
            if mono_ns() >= deadline_mono_ns || self.fd.take_count() > 0 {
                return Ok(());
            }
        }
    }
}

/// Makes a pending or future wait on timerfd `timer_fd` return at once (used by stop).
pub fn fire_now(timer_fd: RawFd) {
    // 1 ns absolute is in the past: the kernel fires the timer immediately.
    let _ = arm_abs(timer_fd, 1);
}

/// The stop bell: rung from the controlling thread, awaited by a listener thread.
pub struct Bell {
    ringer: OwnedFd,
}

/// The listener thread's side of a [`Bell`].
pub struct BellWait {
    fd: Waitable,
}

impl Bell {
    pub fn new() -> io::Result<(Self, BellSeed)> {
        // SAFETY: plain syscall; a negative return is turned into an error below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let ringer = unsafe { OwnedFd::from_raw_fd(raw) };
        let waiter = ringer.try_clone()?;
        Ok((Self { ringer }, BellSeed(waiter)))
    }

    pub fn ring(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes from a valid buffer to an eventfd we own.
        unsafe { libc::write(self.ringer.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

/// The waiting end before it is handed to a runtime (it crosses threads as a plain fd).
pub struct BellSeed(OwnedFd);

impl BellSeed {
    /// Must be called inside the listener thread's monoio runtime.
    pub fn into_wait(self) -> io::Result<BellWait> {
        Ok(BellWait {
            fd: Waitable::new(self.0)?,
        })
    }
}

impl BellWait {
    pub async fn wait(&self) -> io::Result<()> {
        self.fd.readable().await
    }
}

/// One trip through the runtime's driver without sleeping (see `pass`). Not `Send`.
pub struct DriverPass {
    passer: Passer,
}

enum Passer {
    /// io_uring: an eventfd that is always readable, whose PollAdd completes at once.
    Ring(Waitable),
    /// epoll: a task that wakes the passing task from outside its poll.
    Bounce(Bouncer),
}

impl DriverPass {
    /// Must be called inside a runtime started by `rt::driver` (it asks which driver runs).
    pub fn new() -> io::Result<Self> {
        let passer = match crate::rt::driver::current() {
            Some(crate::rt::driver::DriverUsed::IoUring) => {
                // SAFETY: plain syscall; an eventfd holding 1, never read: readable forever.
                let fd =
                    owned(unsafe { libc::eventfd(1, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
                Passer::Ring(Waitable::new(fd)?)
            }
            _ => Passer::Bounce(Bouncer::start()),
        };
        Ok(DriverPass { passer })
    }

    /// One trip through the runtime's driver without sleeping: completions that are ready
    /// now are processed (their tasks run) before this returns. A spin made of these passes
    /// keeps the I/O moving, where a spin of task yields would not: monoio's between-tasks
    /// submit on io_uring enters the kernel without GETEVENTS, so with DEFER_TASKRUN no
    /// completion would arrive until the spin ended. A PollAdd on an always-readable fd
    /// makes the runtime park (GETEVENTS: deferred work runs) and return at once. On epoll
    /// the between-tasks submit is a zero-timeout `epoll_wait`, so going to the back of the
    /// run queue is enough, but a plain yield would not get there: monoio puts a task that
    /// woke itself at the front. Another task (the bouncer) wakes it instead.
    pub async fn pass(&self) {
        match &self.passer {
            Passer::Ring(fd) => {
                let _ = fd.readable().await;
            }
            Passer::Bounce(b) => b.bounce().await,
        }
    }
}

/// A task whose one job is to wake, from its own poll, whoever handed it a waker: that
/// task is then scheduled behind everything already queued.
struct Bouncer {
    slots: Rc<BounceSlots>,
}

#[derive(Default)]
struct BounceSlots {
    /// The task to wake, and the bouncer's own waker.
    asked: Cell<Option<Waker>>,
    bouncer: Cell<Option<Waker>>,
    closed: Cell<bool>,
}

impl Bouncer {
    fn start() -> Self {
        let slots = Rc::new(BounceSlots::default());
        let s = slots.clone();
        monoio::spawn(poll_fn(move |cx| {
            if let Some(w) = s.asked.take() {
                w.wake();
            }
            if s.closed.get() {
                return Poll::Ready(());
            }
            s.bouncer.set(Some(cx.waker().clone()));
            Poll::Pending
        }));
        Bouncer { slots }
    }

    async fn bounce(&self) {
        let mut asked = false;
        poll_fn(|cx| {
            if asked {
                return Poll::Ready(());
            }
            asked = true;
            self.slots.asked.set(Some(cx.waker().clone()));
            if let Some(b) = self.slots.bouncer.take() {
                b.wake();
            }
            Poll::Pending
        })
        .await
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        self.slots.closed.set(true);
        if let Some(b) = self.slots.bouncer.take() {
            b.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a test future on a runtime of `driver`.
    fn on<F: std::future::Future>(
        driver: crate::plan::IoDriver,
        ring: crate::rt::driver::Ring,
        make: impl FnOnce() -> F,
    ) -> (crate::rt::driver::DriverUsed, F::Output) {
        crate::rt::driver::block_on(driver, ring, make).expect("a runtime")
    }
    use crate::rt::clock::mono_ns;

    fn lateness_us(driver: crate::plan::IoDriver) -> Vec<u64> {
        let (_, lates) = on(driver, crate::rt::driver::Ring::Sleeping, || async {
            let t = Timer::new().expect("timerfd");
            let mut lates = vec![];
            for _ in 0..50 {
                let due = mono_ns() + 300_000;
                t.sleep_until(due).await.unwrap();
                let woke = mono_ns();
                assert!(woke >= due, "woke {} ns early", due - woke);
                lates.push((woke - due) / 1000);
            }
            lates
        });
        lates
    }

    #[test]
    fn wakes_after_the_deadline_and_well_under_a_millisecond_late() {
        for driver in [crate::plan::IoDriver::Auto, crate::plan::IoDriver::Epoll] {
            let mut lates = lateness_us(driver);
            lates.sort();
            // On a shared CI box only the median is held to a bound, loosely; never early is
            // asserted for every wait where it is measured.
            assert!(
                lates[lates.len() / 2] < 700,
                "{driver:?}: median {} us late",
                lates[25]
            );
        }
    }

    /// A spin of passes must keep other I/O moving: a loopback exchange started by another
    /// task completes while this task does nothing but pass.
    #[test]
    fn a_spin_of_passes_lets_other_io_complete() {
        for driver in [crate::plan::IoDriver::Auto, crate::plan::IoDriver::Epoll] {
            let (_, (passes, done)) = on(driver, crate::rt::driver::Ring::Sleeping, || async {
                let t = DriverPass::new().expect("a driver pass");
                let listener = monoio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let done = Rc::new(Cell::new(false));
                let flag = done.clone();
                monoio::spawn(async move {
                    use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
                    let mut c = monoio::net::TcpStream::connect(addr).await.unwrap();
                    let (mut s, _) = listener.accept().await.unwrap();
                    let (r, _) = c.write_all(b"ping".to_vec()).await;
                    r.unwrap();
                    let (r, buf) = s.read(Vec::with_capacity(16)).await;
                    assert_eq!(&buf[..r.unwrap()], b"ping");
                    flag.set(true);
                });
                let deadline = mono_ns() + 2_000_000_000;
                let mut passes = 0u64;
                while !done.get() && mono_ns() < deadline {
                    t.pass().await;
                    passes += 1;
                }
                (passes, done.get())
            });
            assert!(
                done,
                "{driver:?}: the exchange starved during {passes} passes"
            );
        }
    }

    #[test]
    fn timer_never_wakes_early_and_fire_now_wakes() {
        on(
            crate::plan::IoDriver::Auto,
            crate::rt::driver::Ring::Sleeping,
            || async {
                let timer = Timer::new().unwrap();
                for offset_ns in [0, 5_000, 300_000, 2_000_000] {
                    let deadline = mono_ns() + offset_ns;
                    timer.sleep_until(deadline).await.unwrap();
                    assert!(mono_ns() >= deadline);
                }
                // Fired by another task during a far sleep: the sleep returns at once.
                let fd = timer.raw_fd();
                monoio::spawn(async move {
                    let other = Timer::new().unwrap();
                    other.sleep_until(mono_ns() + 2_000_000).await.unwrap();
                    fire_now(fd);
                });
                let began = mono_ns();
                timer.sleep_until(began + 60_000_000_000).await.unwrap();
                assert!(
                    mono_ns() - began < 1_000_000_000,
                    "fire_now did not wake the sleeper"
                );
            },
        );
    }

    /// Lateness of monoio's wheel vs the timerfd on absolute deadlines 3.3 ms apart.
    /// `cargo test --release --lib rt::timer -- --ignored --nocapture`
    #[test]
    #[ignore]
    #[allow(clippy::print_stderr)] // a measurement to read, run by hand
    fn measure_wake_lateness() {
        lower_timer_slack();
        on(
            crate::plan::IoDriver::Auto,
            crate::rt::driver::Ring::Sleeping,
            || async {
                let timer = Timer::new().unwrap();
                let (mut wheel, mut tfd) = (vec![], vec![]);
                let start = mono_ns() + 1_000_000;
                for i in 0..300u64 {
                    let deadline = start + i * 3_300_000;
                    if i % 2 == 0 {
                        let wait =
                            std::time::Duration::from_nanos(deadline.saturating_sub(mono_ns()));
                        monoio::time::sleep_until(monoio::time::Instant::now() + wait).await;
                        wheel.push(mono_ns() - deadline);
                    } else {
                        timer.sleep_until(deadline).await.unwrap();
                        tfd.push(mono_ns() - deadline);
                    }
                }
                for (name, v) in [("monoio sleep_until", &mut wheel), ("timerfd", &mut tfd)] {
                    v.sort_unstable();
                    let at = |p: f64| v[((v.len() - 1) as f64 * p) as usize] as f64 / 1e3;
                    eprintln!(
                        "{name}: lateness p50 {:.1} µs, p90 {:.1} µs, max {:.1} µs",
                        at(0.5),
                        at(0.9),
                        at(1.0)
                    );
                }
            },
        );
    }
}
