//! Part of the worker (schedule → **worker** → http → …): what the kernel knew of each of
//! this worker's connections. A connection's `TCP_INFO` (round trip, retransmits,
//! reordering: `rt::netcount::tcp_info`) is read once, as it closes, whatever closed it (the
//! server, a timeout, the run's end): its stream's `Drop` calls `closed`. Its connect time,
//! the TCP connect and the TLS handshake apart, is tallied as it opens. Nothing here runs per
//! request; it never allocates (the histograms are made when the worker starts) and never
//! prints. A connection kept alive for the whole run is read at the run's end, when its lane
//! closes it, so its figures cover its whole life.

use crate::rt::netcount::tcp_info;
use crate::summary::workers::ConnTally;
use std::cell::RefCell;
use std::os::fd::RawFd;

/// One worker's connections, by server.
pub struct NetWatch {
    servers: RefCell<Vec<ConnTally>>,
}

impl NetWatch {
    /// For `servers` servers (at least one).
    pub fn new(servers: usize) -> Self {
        NetWatch {
            servers: RefCell::new((0..servers.max(1)).map(|_| ConnTally::default()).collect()),
        }
    }

    /// A connection to `server` opened: its TCP connect took `tcp_ns`, its TLS handshake
    /// (`https://`) `tls_ns`.
    pub fn opened(&self, server: usize, tcp_ns: u64, tls_ns: Option<u64>) {
        let mut all = self.servers.borrow_mut();
        let Some(t) = all.get_mut(server) else {
            return;
        };
        t.tcp_connect_ns.saturating_record(tcp_ns.max(1));
        if let Some(ns) = tls_ns {
            t.tls_handshake_ns.saturating_record(ns.max(1));
        }
    }

    /// The connection `fd` to `server` is about to close: its `TCP_INFO`, once.
    pub fn closed(&self, server: usize, fd: RawFd) {
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
        watch.opened(1, 25_000, Some(400_000));
        watch.closed(1, tx.as_raw_fd());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        watch.closed(0, udp.as_raw_fd());
        // An unknown server index is ignored, not a panic.
        watch.closed(9, tx.as_raw_fd());
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
    }
}
