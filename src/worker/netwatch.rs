//! Part of the worker (schedule → **worker** → http → …): what the kernel knew of each of
//! this worker's connections. A connection's `TCP_INFO` (round trip, retransmits,
//! reordering: `rt::netcount::tcp_info`) is read as it closes, whatever closed it (the
//! server, a timeout, the run's end): its stream's `Drop` calls `closed`. Its connect time,
//! the TCP connect and the TLS handshake apart, is tallied as it opens. A connection kept
//! alive for the whole run is read at the run's end, when its lane closes it, so its
//! counters cover its whole life; its round trip is also sampled mid-life, at most every
//! `MID_LIFE_EVERY_NS` (`tick`, from the worker's idle path: the loop-lag probe's nudge
//! every 10 ms), so an hour-long connection's RTT is not one reading at its end.
//!
//! Nothing here runs per request. The open connections' table grows only when a connection
//! opens past the most ever open at once (which allocates its buffers anyway), so a warm
//! worker allocates nothing here; the histograms are made when the worker starts. Never
//! prints.

use crate::rt::netcount::tcp_info;
use crate::summary::workers::ConnTally;
use std::cell::RefCell;
use std::os::fd::RawFd;

/// A long-lived connection's round trip is read at most this often (5 s). The kernel's
/// smoothed RTT is an average over the last ~8 acknowledgements, so reading it more often
/// reads the same value again; every 5 s gives a one-minute connection 12 readings and an
/// hour-long one 720, at one `getsockopt` (~1 µs) per connection per 5 s.
pub const MID_LIFE_EVERY_NS: u64 = 5_000_000_000;
/// How often `tick` looks at the table (100 ms), so a sample is due at most this late.
const SCAN_EVERY_NS: u64 = 100_000_000;
/// At most this many `getsockopt`s per scan (≤ 640/s), so a worker with thousands of
/// connections spreads them over scans (each one then read less often than every 5 s)
/// rather than stall its loop; and at most `SCAN_SLOTS` entries looked at per scan.
const SAMPLES_PER_SCAN: usize = 64;
const SCAN_SLOTS: usize = 4096;

/// One open connection, as `tick` sees it.
#[derive(Clone, Copy)]
struct Open {
    fd: RawFd,
    server: usize,
    /// When it opened or was last sampled, run clock ns.
    sampled_ns: u64,
}

/// The open connections: a slot per connection, freed slots reused.
#[derive(Default)]
struct Table {
    slots: Vec<Option<Open>>,
    free: Vec<usize>,
    /// Where the next scan starts.
    cursor: usize,
    /// When the next scan is due, run clock ns.
    next_scan_ns: u64,
}

/// One worker's connections, by server.
pub struct NetWatch {
    servers: RefCell<Vec<ConnTally>>,
    open: RefCell<Table>,
}

impl NetWatch {
    /// For `servers` servers (at least one).
    pub fn new(servers: usize) -> Self {
        NetWatch {
            servers: RefCell::new((0..servers.max(1)).map(|_| ConnTally::default()).collect()),
            open: RefCell::default(),
        }
    }

    /// A connection `fd` to `server` opened at `now_ns`: its TCP connect took `tcp_ns`, its
    /// TLS handshake (`https://`) `tls_ns`. Returns its slot, for `closed`.
    pub fn opened(
        &self,
        server: usize,
        fd: RawFd,
        now_ns: u64,
        tcp_ns: u64,
        tls_ns: Option<u64>,
    ) -> usize {
        if let Some(t) = self.servers.borrow_mut().get_mut(server) {
            t.tcp_connect_ns.saturating_record(tcp_ns.max(1));
            if let Some(ns) = tls_ns {
                t.tls_handshake_ns.saturating_record(ns.max(1));
            }
        }
        let open = Some(Open {
            fd,
            server,
            sampled_ns: now_ns,
        });
        let mut table = self.open.borrow_mut();
        match table.free.pop() {
            Some(slot) => {
                table.slots[slot] = open;
                slot
            }
            None => {
                table.slots.push(open);
                table.slots.len() - 1
            }
        }
    }

    /// From the worker's idle path, every few ms: every `SCAN_EVERY_NS`, the round trip of
    /// the open connections not read for `MID_LIFE_EVERY_NS` (at most `SAMPLES_PER_SCAN`).
    pub fn tick(&self, now_ns: u64) {
        let mut table = self.open.borrow_mut();
        if now_ns < table.next_scan_ns || table.slots.is_empty() {
            return;
        }
        table.next_scan_ns = now_ns + SCAN_EVERY_NS;
        let n = table.slots.len();
        let (mut read, mut k) = (0, table.cursor % n);
        for _ in 0..n.min(SCAN_SLOTS) {
            if read == SAMPLES_PER_SCAN {
                break;
            }
            if let Some(o) = table.slots[k].as_mut() {
                if now_ns.saturating_sub(o.sampled_ns) >= MID_LIFE_EVERY_NS {
                    o.sampled_ns = now_ns;
                    read += 1;
                    self.mid_life(o.server, o.fd);
                }
            }
            k = (k + 1) % n;
        }
        table.cursor = k;
    }

    /// One mid-life reading: the round trip and its variation only (the counters are read
    /// at close, whole).
    fn mid_life(&self, server: usize, fd: RawFd) {
        let Some(i) = tcp_info(fd) else { return };
        let mut all = self.servers.borrow_mut();
        let Some(t) = all.get_mut(server) else {
            return;
        };
        t.rtt_samples_mid_life += 1;
        t.rtt_ns.saturating_record(i.rtt_ns.max(1));
        t.rttvar_ns.saturating_record(i.rttvar_ns.max(1));
    }

    /// The connection `fd` to `server` (in `slot`, from `opened`) is about to close: its
    /// `TCP_INFO`, once.
    pub fn closed(&self, server: usize, fd: RawFd, slot: usize) {
        {
            let mut table = self.open.borrow_mut();
            if let Some(s @ Some(_)) = table.slots.get_mut(slot) {
                *s = None;
                table.free.push(slot);
            }
        }
        let info = tcp_info(fd);
        let mut all = self.servers.borrow_mut();
        let Some(t) = all.get_mut(server) else {
            return;
        };
        let Some(i) = info else {
            t.connections_unread += 1;
            return;
        };
        t.connections_read += 1;
        t.rtt_ns.saturating_record(i.rtt_ns.max(1));
        t.rttvar_ns.saturating_record(i.rttvar_ns.max(1));
        if i.min_rtt_ns > 0 {
            t.min_rtt_ns.saturating_record(i.min_rtt_ns);
        }
        t.segments_out += i.segments_out;
        t.retransmitted_segments += i.retransmitted_segments;
        t.lost += i.lost;
        t.reordering_events += i.reordering_events;
    }

    /// What the worker reports, by server.
    pub fn finish(&self) -> Vec<ConnTally> {
        self.servers.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_closed_connection_is_read_once_and_counted_by_server() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        tx.write_all(b"ping").unwrap();
        rx.read_exact(&mut [0; 4]).unwrap();
        let watch = NetWatch::new(2);
        let slot = watch.opened(1, tx.as_raw_fd(), 0, 25_000, Some(400_000));
        watch.closed(1, tx.as_raw_fd(), slot);
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        watch.closed(0, udp.as_raw_fd(), usize::MAX);
        // An unknown server index is ignored, not a panic.
        watch.closed(9, tx.as_raw_fd(), slot);
        let t = watch.finish();
        assert_eq!((t[0].connections_read, t[0].connections_unread), (0, 1));
        assert_eq!((t[1].connections_read, t[1].connections_unread), (1, 0));
        assert_eq!(t[1].rtt_ns.len(), 1);
        assert!(t[1].segments_out >= 1);
        assert_eq!(
            t[1].tcp_connect_ns.max(),
            t[1].tcp_connect_ns.highest_equivalent(25_000)
        );
        assert_eq!(t[1].tls_handshake_ns.len(), 1);
        assert!(t[0].tcp_connect_ns.is_empty());
        assert_eq!(t[1].rtt_samples_mid_life, 0);
    }

    #[test]
    fn a_long_connection_is_sampled_every_5_s_and_a_closed_one_no_more() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let conns: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap())
            .collect();
        let watch = NetWatch::new(1);
        let s: Vec<usize> = (0..3)
            .map(|k| watch.opened(0, conns[k].as_raw_fd(), k as u64 * 1_000_000_000, 1, None))
            .collect();
        assert_eq!(s, [0, 1, 2]);
        let e = MID_LIFE_EVERY_NS;
        watch.tick(e - 1); // none due
        watch.tick(e + 1_000_000_000); // the first two, and no scan again for 100 ms
        watch.tick(e + 1_050_000_000);
        watch.tick(e + 2_000_000_000); // the third
        watch.closed(0, conns[1].as_raw_fd(), s[1]);
        watch.tick(2 * e + 1_500_000_000); // the first only: the second closed, the third
                                           // read 4.5 s ago
                                           // A freed slot is taken again.
        assert_eq!(watch.opened(0, conns[1].as_raw_fd(), 3 * e, 1, None), 1);
        let t = &watch.finish()[0];
        assert_eq!((t.rtt_samples_mid_life, t.connections_read), (4, 1));
        assert_eq!(t.rtt_ns.len(), 5);
        assert_eq!(t.min_rtt_ns.len(), 1, "the minimum only at close");
    }

    #[test]
    fn a_scan_reads_at_most_its_share_and_the_next_goes_on() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let watch = NetWatch::new(1);
        for _ in 0..SAMPLES_PER_SCAN + 10 {
            watch.opened(0, c.as_raw_fd(), 0, 1, None);
        }
        watch.tick(MID_LIFE_EVERY_NS);
        let read = |w: &NetWatch| w.servers.borrow()[0].rtt_samples_mid_life;
        assert_eq!(read(&watch), SAMPLES_PER_SCAN as u64);
        watch.tick(MID_LIFE_EVERY_NS + SCAN_EVERY_NS);
        assert_eq!(read(&watch), SAMPLES_PER_SCAN as u64 + 10);
    }
}
