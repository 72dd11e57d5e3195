//! Part of the report stage (… → summary → **output**): the console's "Network" block, the
//! run's connections as the client's kernel saw them (`summary.network`: `TCP_INFO` read at
//! each connection's close and every 5 s of a long one, connect times), and the line that
//! puts the TTFT beside the path's base round trip ("TTFT p50 182 ms, of which network RTT
//! ~61 ms"). Like `console.rs` it only prints what the summary holds.

use super::console_rows::{num as n, row, rule};
use crate::summary::network::{NetFigures, Network};
use crate::summary::Stats;
use std::io::{self, Write};

/// The block, for a run that opened connections; nothing otherwise. `ttft` is the run's
/// TTFT (`None` for an endpoint without one).
pub(super) fn network_block(
    net: Option<&Network>,
    ttft: Option<&Stats>,
    out: &mut impl Write,
) -> io::Result<()> {
    let Some(net) = net else {
        return Ok(());
    };
    writeln!(out, "{}", rule("Network (kernel TCP_INFO)", '-'))?;
    if let Some(line) = ttft_share(ttft, &net.all) {
        writeln!(out, "{line}")?;
    }
    figures(&net.all, out)?;
    for (k, f) in net.servers.iter().flatten().enumerate() {
        let rtt = format!("{} / {}", n(f.rtt_ms.p50, 3), n(f.rtt_ms.p99, 3));
        row(out, &format!("  --url #{k} RTT p50 / p99 (ms):"), rtt)?;
    }
    Ok(())
}

/// "TTFT p50 182 ms, of which network RTT ~61 ms": the TTFT's median beside the path's base
/// round trip (`base_rtt_ms`), the least a first token waits for the network.
pub fn ttft_share(ttft: Option<&Stats>, f: &NetFigures) -> Option<String> {
    let (t, rtt) = (ttft?.p50?, f.base_rtt_ms?);
    let d = |v: f64| if v < 10.0 { 3 } else { 0 };
    Some(format!(
        "TTFT p50 {t:.0$} ms, of which network RTT ~{rtt:.1$} ms",
        d(t),
        d(rtt)
    ))
}

fn figures(f: &NetFigures, out: &mut impl Write) -> io::Result<()> {
    let p50_p99 = |s: &Stats| format!("{} / {}", n(s.p50, 3), n(s.p99, 3));
    row(
        out,
        "Connections opened (per s):",
        format!("{} ({})", f.connections_opened, n(f.connects_per_s, 1)),
    )?;
    row(
        out,
        "Connect TCP p50 / p99 (ms):",
        p50_p99(&f.tcp_connect_ms),
    )?;
    if let Some(tls) = &f.tls_handshake_ms {
        row(out, "TLS handshake p50 / p99 (ms):", p50_p99(tls))?;
    }
    row(out, "RTT p50 / p99 (ms):", p50_p99(&f.rtt_ms))?;
    row(
        out,
        "RTT samples at close / mid-life:",
        format!("{} / {}", f.connections_read, f.rtt_samples_mid_life),
    )?;
    row(out, "RTT base / var p50 (ms):", {
        format!("{} / {}", n(f.base_rtt_ms, 3), n(f.rttvar_ms.p50, 3))
    })?;
    row(
        out,
        "Retransmitted (% of segments):",
        format!(
            "{} ({})",
            n(f.retransmit_percent, 3),
            f.retransmitted_segments
        ),
    )?;
    row(
        out,
        "Lost / reordering seen:",
        format!("{} / {}", f.lost, f.reordering_events),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttft_line_reads_as_the_issue_writes_it() {
        let mut ttft = Stats {
            p50: Some(182.4),
            ..Default::default()
        };
        let f = NetFigures {
            base_rtt_ms: Some(61.2),
            ..Default::default()
        };
        assert_eq!(
            ttft_share(Some(&ttft), &f).as_deref(),
            Some("TTFT p50 182 ms, of which network RTT ~61 ms")
        );
        let lan = NetFigures {
            base_rtt_ms: Some(0.021),
            ..Default::default()
        };
        ttft.p50 = Some(2.5);
        assert_eq!(
            ttft_share(Some(&ttft), &lan).as_deref(),
            Some("TTFT p50 2.500 ms, of which network RTT ~0.021 ms")
        );
        assert_eq!(ttft_share(None, &f), None);
        assert_eq!(ttft_share(Some(&ttft), &NetFigures::default()), None);
    }

    #[test]
    fn the_block_names_each_server_only_with_several() {
        let mut out = Vec::new();
        network_block(None, None, &mut out).unwrap();
        assert!(out.is_empty());
        let one = Network {
            all: NetFigures {
                connections_opened: 3,
                connections_read: 2,
                rtt_samples_mid_life: 7,
                ..Default::default()
            },
            servers: Some(vec![NetFigures::default(), NetFigures::default()]),
        };
        network_block(Some(&one), None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let opened = format!("{:<40} 3 (n/a)", "Connections opened (per s):");
        assert!(text.lines().any(|l| l == opened), "{text}");
        let samples = format!("{:<40} 2 / 7", "RTT samples at close / mid-life:");
        assert!(text.lines().any(|l| l == samples), "{text}");
        assert!(text.contains("--url #1 RTT"), "{text}");
        assert!(!text.contains("TLS handshake"), "{text}");
    }
}
