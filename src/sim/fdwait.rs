//! Kernel-timed waits for the simulator (server side, not part of the client flow
//! schedule → worker → http → sse → extract → record → collector → report): a `timerfd`
//! armed at an absolute `CLOCK_MONOTONIC` deadline, and an `eventfd` that another thread
//! rings to stop a listener thread. Both are awaited through monoio's readiness wait, so they
//! work on the io_uring driver (a `PollAdd`) and on the epoll driver alike. This module may
//! not spin for longer than [`SPIN_NS`] and may not touch a connection's socket.
//!
//! Why not monoio's own timer: its wheel ticks at 1 ms and rounds every deadline up to the
//! next tick, then parks for whole ticks from a floored "now", so a wake lands anywhere in
//! [deadline, deadline + ~2 ms). A timerfd is an hrtimer: with the thread's timer slack set
//! to 1 ns it fires some tens of µs after the deadline, and it costs nothing while waiting.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use crate::rt::clock::mono_ns;

/// Deadlines closer than this are met by a short busy wait instead of a kernel timer: a
/// timer wake-up costs more than this and would land later.
pub(crate) const SPIN_NS: u64 = 10_000;

/// A readiness-waitable fd. monoio exposes readiness waits only on its socket types, so the
/// fd is carried in a `TcpStream` whose socket methods are never called; it is closed on drop.
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

    /// Consumes the fd's 8-byte counter so the next wait blocks again.
    fn drain(&self) {
        let mut count = [0u8; 8];
        // SAFETY: reading 8 bytes into a valid 8-byte buffer from an fd we own; the fd is
        // non-blocking, so an empty counter returns EAGAIN, which is fine to ignore.
        unsafe { libc::read(self.raw(), count.as_mut_ptr().cast(), count.len()) };
    }
}

/// A per-connection precise sleep on an absolute `CLOCK_MONOTONIC` deadline.
pub(crate) struct Timer {
    fd: Waitable,
}

impl Timer {
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; a negative return is turned into an error below.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Self {
            fd: Waitable::new(fd)?,
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.raw()
    }

    /// Returns at or after `deadline_ns`, or earlier if the timer was fired by [`fire_now`]
    /// (the caller re-checks its stop flag). Errors only if the kernel refuses the timer.
    pub(crate) async fn sleep_until(&self, deadline_ns: u64) -> io::Result<()> {
        let now = mono_ns();
        if deadline_ns <= now {
            return Ok(());
        }
        if deadline_ns - now <= SPIN_NS {
            spin_until(deadline_ns);
            return Ok(());
        }
        arm(self.raw_fd(), deadline_ns)?;
        self.fd.readable().await?;
        self.fd.drain();
        Ok(())
    }
}

/// Makes a pending or future wait on `timer_fd` return at once (used by stop).
pub(crate) fn fire_now(timer_fd: RawFd) {
    // 1 ns absolute is in the past: the kernel fires the timer immediately.
    let _ = arm(timer_fd, 1);
}

use crate::rt::timer::arm_abs as arm;

fn spin_until(deadline_ns: u64) {
    while mono_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

/// The stop bell: rung from the controlling thread, awaited by a listener thread.
pub(crate) struct StopBell {
    ringer: OwnedFd,
}

/// The listener thread's side of a [`StopBell`].
pub(crate) struct StopWait {
    fd: Waitable,
}

impl StopBell {
    pub(crate) fn new() -> io::Result<(Self, StopWaitSeed)> {
        // SAFETY: plain syscall; a negative return is turned into an error below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let ringer = unsafe { OwnedFd::from_raw_fd(raw) };
        let waiter = ringer.try_clone()?;
        Ok((Self { ringer }, StopWaitSeed(waiter)))
    }

    pub(crate) fn ring(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes from a valid buffer to an eventfd we own.
        unsafe { libc::write(self.ringer.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

/// The waiting end before it is handed to a runtime (it crosses threads as a plain fd).
pub(crate) struct StopWaitSeed(OwnedFd);

impl StopWaitSeed {
    /// Must be called inside the listener thread's monoio runtime.
    pub(crate) fn into_wait(self) -> io::Result<StopWait> {
        Ok(StopWait {
            fd: Waitable::new(self.0)?,
        })
    }
}

impl StopWait {
    pub(crate) async fn wait(&self) -> io::Result<()> {
        self.fd.readable().await
    }
}

/// Timer slack to 1 ns so hrtimer wake-ups (timerfd) are not batched up to 50 µs late.
pub(crate) use crate::rt::timer::lower_timer_slack as tighten_timer_slack;

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> monoio::FusionRuntime<
        monoio::time::TimeDriver<monoio::IoUringDriver>,
        monoio::time::TimeDriver<monoio::LegacyDriver>,
    > {
        monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
            .enable_timer()
            .build()
            .expect("a monoio runtime")
    }

    #[test]
    fn timer_never_wakes_early_and_fire_now_wakes() {
        runtime().block_on(async {
            let timer = Timer::new().unwrap();
            for offset_ns in [0, 5_000, 300_000, 2_000_000] {
                let deadline = mono_ns() + offset_ns;
                timer.sleep_until(deadline).await.unwrap();
                assert!(mono_ns() >= deadline);
            }
            fire_now(timer.raw_fd());
            let began = mono_ns();
            // Fired already: the wait returns without reaching the far deadline.
            timer.fd.readable().await.unwrap();
            timer.fd.drain();
            assert!(mono_ns() - began < 1_000_000_000);
        });
    }

    /// Lateness of monoio's wheel vs the timerfd on absolute deadlines 3.3 ms apart.
    /// `cargo test --release --lib sim::fdwait -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn measure_wake_lateness() {
        tighten_timer_slack();
        runtime().block_on(async {
            let timer = Timer::new().unwrap();
            let (mut wheel, mut tfd) = (vec![], vec![]);
            let start = mono_ns() + 1_000_000;
            for i in 0..300u64 {
                let deadline = start + i * 3_300_000;
                if i % 2 == 0 {
                    let wait = std::time::Duration::from_nanos(deadline.saturating_sub(mono_ns()));
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
        });
    }
}
