//! Part of the worker (schedule → **worker** → http → …): kernel receive timestamps. With
//! `--rx-timestamps` each plain TCP connection asks the kernel for software RX timestamps
//! (`SO_TIMESTAMPING`), and its reads go through `recvmsg`, whose control message carries the
//! kernel's stamp (`CLOCK_REALTIME`) of the newest segment the read returned. The lane
//! compares it with its own stamp of the same read, giving the kernel → user delay.
//!
//! Why a raw `recvmsg` and not monoio's read: monoio 0.2.4 reads a `TcpStream` with an
//! io_uring `Read`/`Recv` op (epoll: `recv`) that has no control buffer; its own `RecvMsg`
//! op (UDP only) leaves `msg_control` null, and its op trait is crate-private, so no custom
//! op can be submitted from outside. So a timestamped read waits for readiness through
//! monoio (`readable`: a `PollAdd` on io_uring, the epoll readiness plus a `poll(0)` on the
//! fallback) and then calls `recvmsg(MSG_DONTWAIT)` itself. That costs an extra syscall per
//! read, which is why it is a flag.
//!
//! This module holds the `unsafe` of it (socket option, `recvmsg`, control-message parsing).
//! It never allocates: the control buffer lives on the stack of each call.

use super::stats::{new_histogram, KernelRx};
use hdrhistogram::Histogram;
use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::RawFd;

/// One worker's kernel → user delays, tallied read by read (no allocation: the histogram is
/// made when the worker starts).
pub struct Tally {
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC`, ns, taken when the worker started.
    realtime_offset_ns: i64,
    delay_ns: RefCell<Histogram<u64>>,
    unstamped: Cell<u64>,
    negative: Cell<u64>,
    refused: RefCell<Option<String>>,
}

impl Tally {
    pub fn new() -> Self {
        Tally {
            realtime_offset_ns: realtime_offset_ns(),
            delay_ns: RefCell::new(new_histogram()),
            unstamped: Cell::new(0),
            negative: Cell::new(0),
            refused: RefCell::new(None),
        }
    }

    /// One read of a stamped connection, `user_mono_ns` being the lane's own stamp of it
    /// (absolute monotonic). End of stream and errors carry no data and are not counted.
    #[inline]
    pub fn read(&self, res: &io::Result<usize>, kernel_rt_ns: Option<u64>, user_mono_ns: u64) {
        if !matches!(res, Ok(n) if *n > 0) {
            return;
        }
        let Some(kernel_rt_ns) = kernel_rt_ns else {
            self.unstamped.set(self.unstamped.get() + 1);
            return;
        };
        let kernel_mono_ns = kernel_rt_ns as i64 - self.realtime_offset_ns;
        match u64::try_from(user_mono_ns as i64 - kernel_mono_ns) {
            Ok(d) => self.delay_ns.borrow_mut().saturating_record(d),
            Err(_) => self.negative.set(self.negative.get() + 1),
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

/// `SOF_TIMESTAMPING_RX_SOFTWARE` generates the stamps, `SOF_TIMESTAMPING_SOFTWARE` reports
/// them in the control message.
const TIMESTAMPING_FLAGS: libc::c_uint =
    libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;

/// Room for one `SCM_TIMESTAMPING` message (a header and three timespecs, 64 bytes on 64-bit
/// Linux) and one more of any kind; `u64` words keep it aligned for `cmsghdr`.
const CMSG_WORDS: usize = 16;

/// Asks the kernel to stamp every segment this socket receives.
pub fn enable(fd: RawFd) -> io::Result<()> {
    let flags = TIMESTAMPING_FLAGS;
    // SAFETY: `flags` is a live c_uint and its exact size is passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&flags as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One non-blocking `recvmsg` into `buf`'s spare capacity (from its length on). Returns the
/// bytes read and the kernel's receive stamp in `CLOCK_REALTIME` nanoseconds when the
/// control message carried one. `WouldBlock` when nothing is there yet.
pub fn recv(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<(usize, Option<u64>)> {
    let mut cmsg = [0u64; CMSG_WORDS];
    let spare = buf.spare_capacity_mut();
    let mut iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: spare.len(),
    };
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cmsg) as _;
    // SAFETY: `iov` points at `buf`'s spare capacity and `msg_control` at `cmsg`, both live
    // and writable for their stated lengths for the whole call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: the kernel initialized the first `n` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok((n, software_stamp(&msg)))
}

/// The software stamp (`ts[0]` of `scm_timestamping`) in the message's control data, if any.
fn software_stamp(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: `msg` was filled by `recvmsg`; the CMSG_* macros walk only within
    // `msg_controllen` of `msg_control`, which is still live (the caller's stack buffer).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPING {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                if ts.tv_sec == 0 && ts.tv_nsec == 0 {
                    return None;
                }
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// `CLOCK_REALTIME − CLOCK_MONOTONIC` in nanoseconds, read once per worker: the kernel
/// stamps in real time, the run clock is monotonic. The realtime read sits between two
/// monotonic ones, so the error is half their gap (tens of ns). A clock step during the run
/// would shift it; a delay that comes out negative is counted, never reported as a figure.
pub fn realtime_offset_ns() -> i64 {
    let a = crate::rt::clock::mono_ns();
    let rt = realtime_ns();
    let b = crate::rt::clock::mono_ns();
    rt as i64 - (a / 2 + b / 2) as i64
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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
        let offset = realtime_offset_ns();
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

    #[test]
    fn without_the_option_reads_carry_no_stamp() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (rx, _) = listener.accept().unwrap();
        tx.write_all(b"x").unwrap();
        let mut buf = Vec::with_capacity(8);
        let got = loop {
            match recv(rx.as_raw_fd(), &mut buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                r => break r.unwrap(),
            }
        };
        assert_eq!(got, (1, None));
    }
}
