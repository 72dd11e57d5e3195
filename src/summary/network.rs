//! Part of the summary (a leaf: types only, nothing computed here): `summary.json`'s
//! `network` block, the run's connections as the client's kernel saw them (`TCP_INFO` read
//! at each connection's close) and how long they took to open. The collector fills it from
//! the workers' `ConnTally`s (`collector::network`); `output` prints it. Never prints.

use super::Stats;
use serde::{Deserialize, Serialize};

/// `summary.json`'s `network`: the figures over every connection, and with several `--url`s
/// the same figures per server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// Over every connection of the run.
    #[serde(flatten)]
    pub all: NetFigures,
    /// With several `--url`s: each server's, in `--url`'s order; `null` with one server.
    #[serde(default)]
    pub servers: Option<Vec<NetFigures>>,
}

/// The figures of a set of connections (the run's, or one server's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetFigures {
    /// Connections opened (each one's connect time is in `tcp_connect_ms`).
    pub connections_opened: u64,
    /// Connections opened per second of the run (`duration_s`).
    pub connects_per_s: Option<f64>,
    /// Connections whose `TCP_INFO` was read as they closed.
    pub connections_read: u64,
    /// Connections closed whose `TCP_INFO` the kernel would not give.
    pub connections_unread: u64,
    /// Round trips read from open connections, at most every 5 s each (a connection closed
    /// sooner has none); `rtt_ms`'s samples are these and `connections_read`.
    #[serde(default)]
    pub rtt_samples_mid_life: u64,
    /// The smoothed round trip (`tcpi_rtt`) of each connection when it closed and of each
    /// long-lived one every 5 s, across those samples, ms.
    pub rtt_ms: Stats,
    /// Each connection's round-trip variation (`tcpi_rttvar`), ms.
    pub rttvar_ms: Stats,
    /// Each connection's smallest round trip (`tcpi_min_rtt`, its SYN's included), ms.
    pub min_rtt_ms: Stats,
    /// The path's base round trip: the median over connections of each one's smallest round
    /// trip (`min_rtt_ms.p50`), ms; `null` without a connection read.
    pub base_rtt_ms: Option<f64>,
    /// From the connect's start to the TCP connection's establishment, ms.
    pub tcp_connect_ms: Stats,
    /// The TLS handshake after it (`https://`); `null` for plain connections.
    pub tls_handshake_ms: Option<Stats>,
    /// Segments the connections sent, retransmits included (`tcpi_segs_out`).
    pub segments_out: u64,
    /// Segments they retransmitted (`tcpi_total_retrans`).
    pub retransmitted_segments: u64,
    /// `retransmitted_segments` / `segments_out`, percent; `null` without a segment.
    pub retransmit_percent: Option<f64>,
    /// Segments the kernel held as lost when each connection was read (`tcpi_lost`: a
    /// snapshot at close, not a total; retransmits are the total).
    pub lost: u64,
    /// Times the kernel saw segments reordered (`tcpi_reord_seen`; 0 on kernels before 5.x).
    pub reordering_events: u64,
}
