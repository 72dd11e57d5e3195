//! Part of the runtime underneath client and simulator: the kernel's software timestamps of a
//! TCP socket (`SO_TIMESTAMPING`), socket-level only — asking for them, a `recvmsg` whose
//! control message carries the receive stamp, and reading transmit stamps back from the
//! socket's error queue. What a stamp is used for belongs to the caller. It holds the `unsafe`
//! of it (socket options, `recvmsg`, control-message parsing), never allocates (control
//! buffers live on the stack of each call) and never blocks (every call is `MSG_DONTWAIT`).
//!
//! **Which byte a receive stamp belongs to (TCP).** `tcp_recvmsg_locked` (net/ipv4/tcp.c)
//! walks the receive queue and, for every buffer it copies bytes from, calls
//! `tcp_update_recv_tstamps(skb, tss)`, which overwrites the one stamp it will report; after
//! the loop `tcp_recv_timestamp` puts that stamp in the `SCM_TIMESTAMPING` message. So a read
//! reports the stamp of the *last* buffer it copied from: the one holding the last byte it
//! returned. When segments were merged in the receive queue (`tcp_try_coalesce` in
//! net/ipv4/tcp_input.c copies the newer segment's `tstamp` onto the buffer it joins), that
//! buffer carries the newest merged segment's stamp. Either way: the arrival of the segment
//! that carried the read's last byte.
//!
//! **Where a software stamp is taken.** Receive: when the packet enters the stack
//! (`net_timestamp_check` in `netif_rx` or `__netif_receive_skb_core`, net/core/dev.c). On
//! loopback that is inside the *sender's* transmit: `loopback_xmit` (drivers/net/loopback.c)
//! takes the sender's transmit stamp (`skb_tx_timestamp`), clears the buffer's time and hands
//! it to `netif_rx`, which stamps it for the receiver. So on loopback a transmit stamp and the
//! peer's receive stamp of the same segment are the same moment, give or take the few hundred
//! nanoseconds between those two calls. Transmit (`SOF_TIMESTAMPING_TX_SOFTWARE`): when the
//! driver takes the packet (`skb_tx_timestamp`); `tcp_tx_timestamp` marks the last buffer of
//! each `sendmsg`, so one stamp per write, for the write's last byte. With
//! `SOF_TIMESTAMPING_OPT_ID` it carries a key, the byte's offset in the stream counted from the
//! first byte written after the option was set (`OPT_ID_TCP`: from `write_seq`), and with
//! `SOF_TIMESTAMPING_OPT_TSONLY` no copy of the data. Stamps are `CLOCK_REALTIME`.

use std::io;
use std::os::fd::RawFd;

/// `SOF_TIMESTAMPING_RX_SOFTWARE` generates receive stamps, `SOF_TIMESTAMPING_SOFTWARE`
/// reports software stamps in control messages.
const RX_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
/// Transmit stamps of each write's last byte, keyed by its stream offset, without the data.
const TX_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_TX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_OPT_ID
    | libc::SOF_TIMESTAMPING_OPT_TSONLY;

/// `ee_info` of a stamp taken when the driver took the packet (linux/errqueue.h).
const SCM_TSTAMP_SND: u32 = 0;

/// Room for one `SCM_TIMESTAMPING` message (a header and three timespecs, 64 bytes on 64-bit
/// Linux) and one `IP(V6)_RECVERR` (an extended error and the offender's address, at most 64
/// bytes), with room to spare; `u64` words keep it aligned for `cmsghdr`.
const CMSG_WORDS: usize = 32;

/// Which stamps a socket is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// Receive stamps on every read (`recv`).
    pub rx: bool,
    /// Transmit stamps of every write's last byte on the error queue (`next_tx`).
    pub tx: bool,
}

/// Asks the kernel to stamp what `want` says on this socket. Transmit keys count from the
/// next byte written, so this is called before the first write. A kernel without
/// `SOF_TIMESTAMPING_OPT_ID_TCP` (before 6.2) gets `OPT_ID` alone, which counts from the
/// oldest unacknowledged byte: the same before any write.
pub fn enable(fd: RawFd, want: Want) -> io::Result<()> {
    let mut flags = 0;
    if want.rx {
        flags |= RX_FLAGS;
    }
    if want.tx {
        flags |= TX_FLAGS;
    }
    match set_flags(
        fd,
        flags
            | if want.tx {
                libc::SOF_TIMESTAMPING_OPT_ID_TCP
            } else {
                0
            },
    ) {
        Err(e) if want.tx && e.raw_os_error() == Some(libc::EINVAL) => set_flags(fd, flags),
        done => done,
    }
}

fn set_flags(fd: RawFd, flags: libc::c_uint) -> io::Result<()> {
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
/// bytes read and the kernel's receive stamp (`CLOCK_REALTIME` ns) of the segment that
/// carried the last of them, when the control message carried one. `WouldBlock` when
/// nothing is there yet.
pub fn recv(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<(usize, Option<u64>)> {
    let mut cmsg = [0u64; CMSG_WORDS];
    let spare = buf.spare_capacity_mut();
    let mut iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: spare.len(),
    };
    let mut msg = header(&mut iov, &mut cmsg);
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

/// One entry of the socket's error queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    /// A transmit stamp: the key of the byte it belongs to (its stream offset, mod 2^32) and
    /// the `CLOCK_REALTIME` ns the driver took the packet.
    Sent { key: u32, rt_ns: u64 },
    /// Anything else (another stamp kind, an ICMP error): read and dropped.
    Other,
}

/// Reads one entry of the error queue (`MSG_ERRQUEUE`), without waiting: `Ok(None)` when it
/// is empty.
pub fn next_tx(fd: RawFd) -> io::Result<Option<Queued>> {
    let mut cmsg = [0u64; CMSG_WORDS];
    let mut iov = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut msg = header(&mut iov, &mut cmsg);
    // SAFETY: `msg_control` points at `cmsg`, live and writable for its stated length; the
    // iovec is empty (`OPT_TSONLY`: no data comes back; anything else is truncated).
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(queued(&msg)))
}

fn header(iov: &mut libc::iovec, cmsg: &mut [u64; CMSG_WORDS]) -> libc::msghdr {
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(cmsg) as _;
    msg
}

/// The software stamp (`ts[0]` of `scm_timestamping`) in the message's control data, if any.
fn software_stamp(msg: &libc::msghdr) -> Option<u64> {
    let mut stamp = None;
    for_each_cmsg(msg, |level, kind, data| {
        if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPING {
            // SAFETY: an `SCM_TIMESTAMPING` message's data starts with three timespecs.
            let ts = unsafe { std::ptr::read_unaligned(data.cast::<libc::timespec>()) };
            stamp = timespec_ns(&ts);
        }
    });
    stamp
}

/// What an error-queue message holds: a send stamp and its key, or something else.
fn queued(msg: &libc::msghdr) -> Queued {
    let (mut stamp, mut key) = (None, None);
    for_each_cmsg(msg, |level, kind, data| match (level, kind) {
        (libc::SOL_SOCKET, libc::SCM_TIMESTAMPING) => {
            // SAFETY: as in `software_stamp`.
            let ts = unsafe { std::ptr::read_unaligned(data.cast::<libc::timespec>()) };
            stamp = timespec_ns(&ts);
        }
        (libc::SOL_IP, libc::IP_RECVERR) | (libc::SOL_IPV6, libc::IPV6_RECVERR) => {
            // SAFETY: an `IP(V6)_RECVERR` message's data starts with a `sock_extended_err`.
            let ee = unsafe { std::ptr::read_unaligned(data.cast::<libc::sock_extended_err>()) };
            let sent = ee.ee_errno == libc::ENOMSG as u32
                && ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                && ee.ee_info == SCM_TSTAMP_SND;
            key = sent.then_some(ee.ee_data);
        }
        _ => {}
    });
    match (key, stamp) {
        (Some(key), Some(rt_ns)) => Queued::Sent { key, rt_ns },
        _ => Queued::Other,
    }
}

/// Calls `f(level, type, data)` for every control message `recvmsg` left in `msg`.
fn for_each_cmsg(msg: &libc::msghdr, mut f: impl FnMut(i32, i32, *const u8)) {
    // SAFETY: `msg` was filled by `recvmsg`; the CMSG_* macros walk only within
    // `msg_controllen` of `msg_control`, which is still live (the caller's stack buffer), and
    // the kernel wrote each message's data whole (`MSG_CTRUNC` drops what did not fit).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            f(h.cmsg_level, h.cmsg_type, libc::CMSG_DATA(c));
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
}

fn timespec_ns(ts: &libc::timespec) -> Option<u64> {
    match (ts.tv_sec, ts.tv_nsec) {
        (0, 0) => None,
        (s, ns) => Some(s as u64 * 1_000_000_000 + ns as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::clock::realtime_ns;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (rx, _) = listener.accept().unwrap();
        tx.set_nodelay(true).unwrap();
        (tx, rx)
    }

    fn recv_blocking(fd: RawFd, buf: &mut Vec<u8>) -> (usize, Option<u64>) {
        loop {
            match recv(fd, buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                r => return r.unwrap(),
            }
        }
    }

    /// Linux switches software stamping on lazily (a static key flipped from a workqueue),
    /// so the first segments after the first socket asks may come unstamped: `f` is retried
    /// until it sees a stamp, up to a second.
    fn retried<T>(mut f: impl FnMut() -> Option<T>) -> T {
        for _ in 0..200 {
            if let Some(t) = f() {
                return t;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("loopback gave no software stamp in a second");
    }

    #[test]
    fn a_read_carries_the_stamp_of_its_last_segment_before_the_read() {
        let (mut tx, rx) = pair();
        enable(
            rx.as_raw_fd(),
            Want {
                rx: true,
                tx: false,
            },
        )
        .unwrap();
        let mut buf = Vec::with_capacity(64);
        let err = recv(rx.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        let before = retried(|| {
            buf.clear();
            tx.write_all(b"hello").unwrap();
            let (n, stamp) = recv_blocking(rx.as_raw_fd(), &mut buf);
            assert_eq!((n, &buf[..]), (5, &b"hello"[..]));
            stamp
        });
        assert!(before <= realtime_ns());
        // Two segments waiting, one read: the stamp is the second's (its last byte's).
        buf.clear();
        tx.write_all(b"a").unwrap();
        let between = realtime_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        tx.write_all(b"b").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (n, stamp) = recv_blocking(rx.as_raw_fd(), &mut buf);
        assert_eq!((n, &buf[..]), (2, &b"ab"[..]));
        let stamp = stamp.expect("stamping is on by now");
        assert!(
            stamp > between,
            "the newer segment's stamp: {stamp} vs {between}"
        );
    }

    #[test]
    fn without_the_option_reads_carry_no_stamp() {
        let (mut tx, rx) = pair();
        tx.write_all(b"x").unwrap();
        let mut buf = Vec::with_capacity(8);
        assert_eq!(recv_blocking(rx.as_raw_fd(), &mut buf), (1, None));
        assert_eq!(next_tx(tx.as_raw_fd()).unwrap(), None);
    }

    #[test]
    fn each_write_gets_a_send_stamp_keyed_by_its_last_byte_before_the_peer_gets_it() {
        let (mut tx, mut rx) = pair();
        enable(
            tx.as_raw_fd(),
            Want {
                rx: false,
                tx: true,
            },
        )
        .unwrap();
        enable(
            rx.as_raw_fd(),
            Want {
                rx: true,
                tx: false,
            },
        )
        .unwrap();
        let mut written = 0u64;
        let mut buf = Vec::with_capacity(4096);
        let (sent, got) = retried(|| {
            let before = realtime_ns();
            tx.write_all(&[b'x'; 100]).unwrap();
            written += 100;
            buf.clear();
            let mut read = 0;
            let mut stamp = None;
            while read < 100 {
                let (n, s) = recv_blocking(rx.as_raw_fd(), &mut buf);
                read += n;
                stamp = s;
            }
            let mut sent = None;
            while let Some(q) = next_tx(tx.as_raw_fd()).unwrap() {
                if let Queued::Sent { key, rt_ns } = q {
                    assert!((key as u64) < written, "key {key}, written {written}");
                    assert!(rt_ns >= before);
                    if key as u64 == written - 1 {
                        sent = Some(rt_ns);
                    }
                }
            }
            Some((sent?, stamp?))
        });
        // Loopback: the peer's receive stamp is taken after the sender's transmit stamp, in
        // the same driver call.
        assert!(sent <= got, "sent {sent} after received {got}");
        assert!(got - sent < 1_000_000_000, "{} ns apart", got - sent);
        // Several writes before a drain: one stamp each, keys in order.
        let mut keys = vec![];
        for len in [10u64, 20, 30] {
            tx.write_all(&vec![b'y'; len as usize]).unwrap();
            written += len;
            keys.push(written - 1);
        }
        let mut seen = vec![];
        for _ in 0..100 {
            while let Some(q) = next_tx(tx.as_raw_fd()).unwrap() {
                if let Queued::Sent { key, .. } = q {
                    seen.push(u64::from(key));
                }
            }
            if seen.len() >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(seen, keys);
        let mut sink = [0u8; 64];
        let mut left = 60;
        while left > 0 {
            left -= rx.read(&mut sink).unwrap();
        }
    }
}
