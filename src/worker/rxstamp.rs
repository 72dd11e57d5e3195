//! Part of the worker (schedule → **worker** → http → …): kernel receive timestamps. With
//! `--rx-timestamps` each plain TCP connection asks the kernel for software RX timestamps
//! (`SO_TIMESTAMPING`), and its reads go through `recvmsg`, whose control message carries the
//! kernel's stamp (`CLOCK_REALTIME`) of the newest segment the read returned. That stamp,
//! moved onto the run clock, is the read's primary stamp (TTFT, ITL, E2E are computed from
//! it); the lane's own stamp of the same read is kept beside it (the `*_user` figures), and
//! their difference, the kernel → user delay, is tallied per read. `CLOCK_REALTIME` and
//! `CLOCK_MONOTONIC` are slewed alike by NTP, so one offset taken when the worker starts
//! converts every stamp of the run; only a step of the wall clock would move it.
//!
//! Why a raw `recvmsg` and not monoio's read: monoio 0.2.4 reads a `TcpStream` with an
//! io_uring `Read`/`Recv` op (epoll: `recv`) that has no control buffer; its own `RecvMsg`
//! op (UDP only) leaves `msg_control` null, and its op trait is crate-private, so no custom
//! op can be submitted from outside. So a timestamped read waits for readiness through
//! monoio (`readable`: a `PollAdd` on io_uring, the epoll readiness plus a `poll(0)` on the
//! fallback) and then calls `recvmsg(MSG_DONTWAIT)` itself. That costs an extra syscall per
//! read, which is why it is a flag.
//!
//! The socket-level part (the option, `recvmsg`, the control message, which byte a stamp
//! belongs to) is `rt::tstamp`, shared with the simulator; this module is what the worker
//! does with the stamps. It never allocates.

use crate::rt::tstamp;
use crate::summary::workers::{new_histogram, KernelRx};
use hdrhistogram::Histogram;
use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One worker's kernel → user delays, tallied read by read (no allocation: the histogram is
/// made when the worker starts).
pub struct Tally {
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC`, ns, taken when the worker started.
    realtime_offset_ns: i64,
    delay_ns: RefCell<Histogram<u64>>,
    unstamped: Cell<u64>,
    negative: Cell<u64>,
    refused: RefCell<Option<String>>,
    /// A socket that asked for receive stamps when the worker started and is kept open until
    /// it ends (see `switch_on`).
    _switch: Option<OwnedFd>,
}

impl Tally {
    /// `on`: the run stamps reads (`--rx-timestamps`, the default).
    pub fn new(on: bool) -> Self {
        Tally {
            realtime_offset_ns: crate::rt::clock::realtime_offset_ns(),
            delay_ns: RefCell::new(new_histogram()),
            unstamped: Cell::new(0),
            negative: Cell::new(0),
            refused: RefCell::new(None),
            _switch: on.then(switch_on).flatten(),
        }
    }

    /// One read of a stamped connection, `user_mono_ns` being the lane's own stamp of it
    /// (absolute monotonic). Returns the kernel's stamp of the read on the run clock (whose
    /// origin is `origin_mono_ns`): the read's primary stamp, when the kernel gave one that is
    /// not later than the lane's own (a later one, possible only if the wall clock was
    /// stepped since the worker started, is counted in `negative` and not used). End of
    /// stream and errors carry no data and are not counted.
    #[inline]
    pub fn read(
        &self,
        res: &io::Result<usize>,
        kernel_rt_ns: Option<u64>,
        user_mono_ns: u64,
        origin_mono_ns: u64,
    ) -> Option<u64> {
        if !matches!(res, Ok(n) if *n > 0) {
            return None;
        }
        let Some(kernel_rt_ns) = kernel_rt_ns else {
            self.unstamped.set(self.unstamped.get() + 1);
            return None;
        };
        let kernel_mono_ns = kernel_rt_ns as i64 - self.realtime_offset_ns;
        match u64::try_from(user_mono_ns as i64 - kernel_mono_ns) {
            Ok(d) => {
                self.delay_ns.borrow_mut().saturating_record(d);
                Some((user_mono_ns - d).saturating_sub(origin_mono_ns))
            }
            Err(_) => {
                self.negative.set(self.negative.get() + 1);
                None
            }
        }
    }

    /// The socket would not take `SO_TIMESTAMPING` (the first reason is kept).
    pub fn refused(&self, e: &io::Error) {
        self.refused
            .borrow_mut()
            .get_or_insert_with(|| format!("the socket refused SO_TIMESTAMPING ({e})"));
    }

    /// What the worker reports. `off` says why nothing was measured when the run did not ask
    /// for it or could not (TLS).
    pub fn finish(&self, off: Option<String>) -> KernelRx {
        let delay_ns = self.delay_ns.replace(new_histogram());
        let unavailable = match off {
            Some(why) => Some(why),
            None if delay_ns.is_empty() => self.refused.borrow().clone(),
            None => None,
        };
        KernelRx {
            delay_ns,
            unstamped: self.unstamped.get(),
            negative: self.negative.get(),
            unavailable,
        }
    }
}

/// Linux stamps received packets only while some socket wants it, and the first socket to
/// ask turns stamping on lazily (`net_enable_timestamp` defers the switch to a workqueue), so
/// the first segments a run's first connections receive could come unstamped. A UDP socket
/// that asks when the worker starts, before its first connection, and stays open for the run
/// has the switch on by the time a response arrives. `None` if the socket cannot be made:
/// the connections then ask for themselves, as before.
fn switch_on() -> Option<OwnedFd> {
    // SAFETY: `socket` takes no pointers; a non-negative result is a descriptor we now own.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by `socket` and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    enable(fd.as_raw_fd()).ok().map(|()| fd)
}

/// Asks the kernel to stamp every segment this socket receives (`rt::tstamp`).
pub fn enable(fd: RawFd) -> io::Result<()> {
    tstamp::enable(
        fd,
        tstamp::Want {
            rx: true,
            tx: false,
        },
    )
}

/// One non-blocking `recvmsg` into `buf`'s spare capacity, with the kernel's receive stamp
/// (`CLOCK_REALTIME` ns) of the segment carrying the read's last byte: `rt::tstamp::recv`.
pub use crate::rt::tstamp::recv;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn loopback_reads_carry_a_kernel_stamp_just_before_the_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (rx, _) = listener.accept().unwrap();
        enable(rx.as_raw_fd()).unwrap();
        let mut buf = Vec::with_capacity(64);
        let err = recv(rx.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        let offset = crate::rt::clock::realtime_offset_ns();
        // Linux switches RX stamping on lazily (a workqueue), so the first segments after the
        // first socket asks may come unstamped: retry until one is stamped.
        let mut stamped = None;
        for _ in 0..200 {
            buf.clear();
            tx.write_all(b"hello").unwrap();
            let (n, stamp) = loop {
                match recv(rx.as_raw_fd(), &mut buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                    r => break r.unwrap(),
                }
            };
            assert_eq!((n, &buf[..]), (5, &b"hello"[..]));
            if stamp.is_some() {
                stamped = stamp;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let user_mono = crate::rt::clock::mono_ns() as i64;
        let kernel_mono = stamped.expect("loopback gives software RX stamps") as i64 - offset;
        let delay = user_mono - kernel_mono;
        assert!(
            (0..1_000_000_000).contains(&delay),
            "kernel → user delay {delay} ns"
        );
    }
}
