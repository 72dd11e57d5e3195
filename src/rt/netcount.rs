//! Beside the flow (schedule → worker → http → sse → extract → record → collector → report):
//! the host kernel's network drop and retransmit counters, read once before the workers start
//! and once after they end (never on the hot path), so a run can say when the kernel, not
//! the server, held its packets back.
//!
//! Why: on loopback every packet the client sends is queued on the sending CPU's backlog
//! (`net.core.netdev_max_backlog`, 1,000 by default) until that CPU's softirq runs. A busy
//! client core drains it late, the queue overflows, the packet is dropped, and TCP recovers
//! only by a loss probe or a retransmit timeout: a request that "took" 10–200 ms whose server
//! answered in microseconds. The counters are host-wide (other traffic counts too), so they
//! are reported as what the host did during the run, and only the backlog drops on the
//! client's own CPUs make the run invalid.
//!
//! Per connection, the same kernel's own view of one TCP connection (`TCP_INFO`: smoothed
//! round trip, retransmits, reordering), read by the worker once when the
//! connection closes (`tcp_info`): one `getsockopt`, no allocation, never per request.

use crate::summary::NetDelta;

/// One reading of the counters; `None` fields were not readable here (not Linux, no /proc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetCounters {
    /// `/proc/net/softnet_stat` column 2 per CPU: packets dropped because the CPU's input
    /// backlog was full.
    pub backlog_dropped: Option<Vec<u64>>,
    pub tcp: Option<TcpCounters>,
}

/// Host-wide TCP counters from `/proc/net/snmp` and `/proc/net/netstat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    pub retrans_segs: u64,
    pub timeouts: u64,
    pub loss_probes: u64,
    pub listen_drops: u64,
}

impl NetCounters {
    /// Reads the counters now; whatever cannot be read is `None`.
    pub fn read() -> Self {
        NetCounters {
            backlog_dropped: std::fs::read_to_string("/proc/net/softnet_stat")
                .ok()
                .and_then(|t| parse_softnet(&t)),
            tcp: tcp_counters(),
        }
    }

    /// `later − self`, with the backlog drops of `client_cpus` apart.
    pub fn delta(&self, later: &NetCounters, client_cpus: &[usize]) -> NetDelta {
        let drops = match (&self.backlog_dropped, &later.backlog_dropped) {
            (Some(a), Some(b)) if a.len() == b.len() => Some((a, b)),
            _ => None,
        };
        let per_cpu = |cpu: usize| drops.map_or(0, |(a, b)| b[cpu].saturating_sub(a[cpu]));
        let tcp = self.tcp.zip(later.tcp);
        let d = |f: fn(&TcpCounters) -> u64| tcp.map(|(a, b)| f(&b).saturating_sub(f(&a)));
        NetDelta {
            backlog_drops_client_cpus: drops.map(|(a, _)| {
                client_cpus
                    .iter()
                    .filter(|&&c| c < a.len())
                    .map(|&c| per_cpu(c))
                    .sum()
            }),
            backlog_drops_all_cpus: drops.map(|(a, _)| (0..a.len()).map(per_cpu).sum()),
            tcp_retransmitted_segments: d(|t| t.retrans_segs),
            tcp_retransmit_timeouts: d(|t| t.timeouts),
            tcp_loss_probes: d(|t| t.loss_probes),
            tcp_listen_drops: d(|t| t.listen_drops),
        }
    }
}

/// What the kernel knows of one TCP connection (`getsockopt(TCP_INFO)`), in the units the
/// summary keeps: round trips in ns (the kernel's are µs), counts as they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// The connection's state (`tcpi_state`: 1 established, 8 close-wait, …).
    pub state: u8,
    /// Smoothed round trip (`tcpi_rtt`), ns.
    pub rtt_ns: u64,
    /// Its mean deviation (`tcpi_rttvar`), ns.
    pub rttvar_ns: u64,
    /// The smallest round trip the connection saw (`tcpi_min_rtt`), ns; 0 when unknown.
    pub min_rtt_ns: u64,
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub retransmitted_segments: u64,
    /// Segments sent (`tcpi_segs_out`, retransmits included).
    pub segments_out: u64,
    /// Segments the kernel held as lost when read (`tcpi_lost`: a snapshot, not a total).
    pub lost: u64,
    /// Times the kernel saw reordering (`tcpi_reord_seen`, Linux 5.x+; 0 before).
    pub reordering_events: u64,
}

/// The kernel's `struct tcp_info` (include/uapi/linux/tcp.h) up to `tcpi_reord_seen`: libc's
/// glibc copy stops at `tcpi_total_retrans`. The kernel copies `min(len, its size)` bytes, so
/// an older kernel leaves the newer fields zero.
#[repr(C)]
#[derive(Default)]
struct RawTcpInfo {
    head: [u8; 8],
    rto_ato_mss: [u32; 4],
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last: [u32; 4],
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
}

/// `tcpi_state` of an established connection (`TCP_ESTABLISHED`).
pub const TCP_ESTABLISHED: u8 = 1;

/// `TCP_INFO` of the TCP socket `fd`, or `None` when the kernel will not say (not TCP, not
/// Linux). No allocation.
pub fn tcp_info(fd: std::os::fd::RawFd) -> Option<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let mut len = std::mem::size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: `raw` is a plain, writable `repr(C)` struct of `len` bytes; the kernel writes
    // at most `len` bytes and says how many in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    // Fewer bytes than up to `total_retrans` is no `tcp_info` this code knows.
    if rc != 0 || (len as usize) < std::mem::offset_of!(RawTcpInfo, pacing_rate) {
        return None;
    }
    let us = |v: u32| u64::from(v) * 1_000;
    Some(TcpInfo {
        state: raw.head[0],
        rtt_ns: us(raw.rtt),
        rttvar_ns: us(raw.rttvar),
        min_rtt_ns: us(raw.min_rtt),
        retransmitted_segments: raw.total_retrans.into(),
        segments_out: raw.segs_out.into(),
        lost: raw.lost.into(),
        reordering_events: raw.reord_seen.into(),
    })
}

/// Column 2 (hex) of each line, one line per CPU in CPU order.
fn parse_softnet(text: &str) -> Option<Vec<u64>> {
    text.lines()
        .map(|l| {
            let col = l.split_whitespace().nth(1)?;
            u64::from_str_radix(col, 16).ok()
        })
        .collect()
}

fn tcp_counters() -> Option<TcpCounters> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    Some(TcpCounters {
        retrans_segs: field(&snmp, "Tcp:", "RetransSegs")?,
        timeouts: field(&netstat, "TcpExt:", "TCPTimeouts")?,
        loss_probes: field(&netstat, "TcpExt:", "TCPLossProbes")?,
        listen_drops: field(&netstat, "TcpExt:", "ListenDrops")?,
    })
}

/// A counter from the `/proc/net/snmp` layout: a line of names, then a line of values, both
/// starting with `prefix`.
fn field(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut rows = text.lines().filter(|l| l.starts_with(prefix));
    let names = rows.next()?;
    let values = rows.next()?;
    let at = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(at)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RetransSegs InErrs\nTcp: 1 200 1493 0\n";
    const NETSTAT: &str = "TcpExt: SyncookiesSent ListenDrops TCPTimeouts TCPLossProbes\n\
        TcpExt: 0 18960 364 1120\nIpExt: InNoRoutes\nIpExt: 0\n";

    #[test]
    fn proc_layouts_parse() {
        let t = "0520f638 0000076e 00000011 00000000\n0582530a 00000000 00000009 00000000\n";
        assert_eq!(parse_softnet(t), Some(vec![0x76e, 0]));
        assert_eq!(field(SNMP, "Tcp:", "RetransSegs"), Some(1493));
        assert_eq!(field(NETSTAT, "TcpExt:", "ListenDrops"), Some(18960));
        assert_eq!(field(NETSTAT, "TcpExt:", "TCPLossProbes"), Some(1120));
        assert_eq!(field(NETSTAT, "TcpExt:", "NoSuchCounter"), None);
        assert_eq!(parse_softnet("0 not-hex\n"), None);
    }

    #[test]
    fn delta_splits_client_cpus_from_the_rest() {
        let tcp = TcpCounters {
            retrans_segs: 10,
            timeouts: 1,
            loss_probes: 5,
            listen_drops: 0,
        };
        let before = NetCounters {
            backlog_dropped: Some(vec![100, 7, 0]),
            tcp: Some(tcp),
        };
        let after = NetCounters {
            backlog_dropped: Some(vec![130, 9, 0]),
            tcp: Some(TcpCounters {
                retrans_segs: 25,
                timeouts: 3,
                ..tcp
            }),
        };
        let d = before.delta(&after, &[0]);
        assert_eq!(d.backlog_drops_client_cpus, Some(30));
        assert_eq!(d.backlog_drops_all_cpus, Some(32));
        assert_eq!(d.tcp_retransmitted_segments, Some(15));
        assert_eq!(d.tcp_retransmit_timeouts, Some(2));
        assert_eq!(d.tcp_loss_probes, Some(0));
        let unread = NetCounters::default().delta(&after, &[0]);
        assert_eq!(unread, NetDelta::default());
    }

    #[test]
    fn tcp_info_reads_a_loopback_connection_and_refuses_a_non_tcp_socket() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        for _ in 0..20 {
            tx.write_all(&[7; 1000]).unwrap();
            let mut buf = [0; 1000];
            rx.read_exact(&mut buf).unwrap();
            rx.write_all(b"k").unwrap();
            tx.read_exact(&mut buf[..1]).unwrap();
        }
        let info = tcp_info(tx.as_raw_fd()).expect("Linux reads TCP_INFO");
        // Loopback: a round trip of microseconds, never a second; 20 writes went out.
        assert!(
            (1_000..1_000_000_000).contains(&info.rtt_ns),
            "rtt {} ns",
            info.rtt_ns
        );
        assert!(info.min_rtt_ns > 0 && info.min_rtt_ns <= info.rtt_ns + info.rttvar_ns * 4);
        assert!(info.segments_out >= 20, "{info:?}");
        assert_eq!(info.retransmitted_segments, 0, "loopback loses nothing");
        assert_eq!(info.state, TCP_ESTABLISHED);
        drop(tx);
        let mut end = [0; 1];
        assert_eq!(rx.read(&mut end).unwrap(), 0);
        let closed = tcp_info(rx.as_raw_fd()).unwrap();
        assert_ne!(closed.state, TCP_ESTABLISHED, "the peer's close is seen");
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(tcp_info(udp.as_raw_fd()), None);
    }

    #[test]
    fn this_host_has_the_counters() {
        // Linux with /proc mounted, as every machine this runs on.
        let now = NetCounters::read();
        assert!(now.backlog_dropped.is_some_and(|v| !v.is_empty()));
        assert!(now.tcp.is_some());
    }
}
