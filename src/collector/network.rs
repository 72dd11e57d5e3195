//! Part of the collector (… → record → **collector** → summary → output): the summary's
//! `network` block from the workers' connection tallies (`ConnTally`, one per server per
//! worker: `TCP_INFO` read at each connection's close and mid-life on long ones, connect
//! times as they opened). Runs once at the end of the run; never prints.

use super::{Dist, WorkerStats};
use crate::summary::network::{NetFigures, Network};
use crate::summary::workers::ConnTally;

/// The `network` block of a run whose measured part lasted `duration_ns`: `None` when no
/// worker opened a connection (a summary written before the block existed has no tallies).
pub fn network(ws: &[WorkerStats], ps: &[f64], duration_ns: u64) -> Option<Network> {
    let servers = ws.iter().map(|w| w.network.len()).max().unwrap_or(0);
    let per_server: Vec<ConnTally> = (0..servers)
        .map(|k| {
            let mut t = ConnTally::default();
            ws.iter()
                .filter_map(|w| w.network.get(k))
                .for_each(|w| t.add(w));
            t
        })
        .collect();
    let mut all = ConnTally::default();
    per_server.iter().for_each(|t| all.add(t));
    if all.tcp_connect_ns.is_empty() && all.connections_read + all.connections_unread == 0 {
        return None;
    }
    let figures = |t: &ConnTally| figures(t, ps, duration_ns);
    Some(Network {
        all: figures(&all),
        servers: (servers > 1).then(|| per_server.iter().map(figures).collect()),
    })
}

fn figures(t: &ConnTally, ps: &[f64], duration_ns: u64) -> NetFigures {
    let ms = |h: &hdrhistogram::Histogram<u64>| {
        let mut d = Dist::new();
        d.merge_histogram(h);
        d.stats_ms(ps)
    };
    let opened = t.tcp_connect_ns.len();
    let min_rtt_ms = ms(&t.min_rtt_ns);
    NetFigures {
        connections_opened: opened,
        connects_per_s: (duration_ns > 0).then(|| opened as f64 * 1e9 / duration_ns as f64),
        connections_read: t.connections_read,
        connections_unread: t.connections_unread,
        rtt_samples_mid_life: t.rtt_samples_mid_life,
        rtt_ms: ms(&t.rtt_ns),
        rttvar_ms: ms(&t.rttvar_ns),
        base_rtt_ms: min_rtt_ms.p50,
        min_rtt_ms,
        tcp_connect_ms: ms(&t.tcp_connect_ns),
        tls_handshake_ms: (!t.tls_handshake_ns.is_empty()).then(|| ms(&t.tls_handshake_ns)),
        segments_out: t.segments_out,
        retransmitted_segments: t.retransmitted_segments,
        retransmit_percent: (t.segments_out > 0)
            .then(|| t.retransmitted_segments as f64 * 100.0 / t.segments_out as f64),
        lost: t.lost,
        reordering_events: t.reordering_events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(rtts_us: &[u64], connect_us: &[u64], segs: (u64, u64)) -> ConnTally {
        let mut t = ConnTally::default();
        for &r in rtts_us {
            t.rtt_ns.record(r * 1_000).unwrap();
            t.min_rtt_ns.record(r * 500).unwrap();
            t.rttvar_ns.record(r * 100).unwrap();
            t.connections_read += 1;
        }
        for &c in connect_us {
            t.tcp_connect_ns.record(c * 1_000).unwrap();
        }
        (t.segments_out, t.retransmitted_segments) = segs;
        t
    }

    #[test]
    fn servers_add_across_workers_and_the_run_adds_the_servers() {
        let mut w0 = WorkerStats::new(0, 0);
        w0.network = vec![
            tally(&[20_000, 20_000], &[100, 100], (1000, 10)),
            tally(&[], &[], (0, 0)),
        ];
        let mut w1 = WorkerStats::new(1, 1);
        w1.network = vec![
            tally(&[20_000], &[100], (500, 5)),
            tally(&[100_000], &[300], (500, 0)),
        ];
        w1.network[1].rtt_samples_mid_life = 3;
        let n = network(&[w0, w1], &[], 2_000_000_000).unwrap();
        assert_eq!(n.all.rtt_samples_mid_life, 3);
        assert_eq!(n.all.connections_opened, 4);
        assert_eq!(n.all.connects_per_s, Some(2.0));
        assert_eq!(n.all.connections_read, 4);
        assert_eq!(
            (n.all.segments_out, n.all.retransmitted_segments),
            (2000, 15)
        );
        assert_eq!(n.all.retransmit_percent, Some(0.75));
        // Three of four connections at 20 ms: the median is theirs; base = min_rtt's median.
        let p50 = n.all.rtt_ms.p50.unwrap();
        assert!((p50 - 20.0).abs() < 0.02, "{p50}");
        assert!((n.all.base_rtt_ms.unwrap() - 10.0).abs() < 0.01);
        assert!(n.all.tls_handshake_ms.is_none());
        let servers = n.servers.unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].connections_read, 3);
        assert_eq!(servers[1].retransmit_percent, Some(0.0));
        assert!((servers[1].rtt_ms.p50.unwrap() - 100.0).abs() < 0.1);
    }

    #[test]
    fn no_connection_is_no_block_and_one_server_has_no_breakdown() {
        assert_eq!(network(&[WorkerStats::new(0, 0)], &[], 1), None);
        let mut w = WorkerStats::new(0, 0);
        w.network = vec![tally(&[50], &[20], (0, 0))];
        let n = network(&[w], &[], 0).unwrap();
        assert_eq!(n.servers, None);
        assert_eq!(n.all.connects_per_s, None);
        assert_eq!(n.all.retransmit_percent, None);
    }
}
