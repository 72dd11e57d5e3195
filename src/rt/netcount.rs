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
    fn this_host_has_the_counters() {
        // Linux with /proc mounted, as every machine this runs on.
        let now = NetCounters::read();
        assert!(now.backlog_dropped.is_some_and(|v| !v.is_empty()));
        assert!(now.tcp.is_some());
    }
}
