//! Part of the summary (types both the worker and the collector use, so neither imports the
//! other): what one worker reports about itself when it ends — the one `WorkerStats` type —
//! and the histogram every ringbench distribution is made with. The worker fills it; the
//! collector turns it into the summary's per-worker figures (`WorkerOverhead`) and stores it
//! as it is in the run's `run.json` (its histograms as `[highest value of the bucket, count]`
//! pairs, which rebuild the very same buckets), so `ringbench report` reprints them. Its
//! counters are `WorkerCounts`, the tally the worker keeps while it runs. Never prints.

use super::WorkerCounts;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value a histogram tracks exactly: one hour. Larger values are clamped and counted.
pub const HIST_MAX_NS: u64 = 3_600_000_000_000;
/// Significant digits every histogram keeps (percentiles within 0.1%).
pub const HIST_SIGFIG: u8 = 3;

/// A histogram with the bounds every ringbench distribution uses (the workers' own and the
/// collector's), so that merging them is exact.
pub fn new_histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG) {
        Ok(h) => h,
        // The bounds are constants that hdrhistogram accepts; this cannot happen.
        Err(e) => unreachable!("constant histogram bounds rejected: {e}"),
    }
}

/// What one worker reports about itself when it ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// The worker's index.
    pub worker: u16,
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Thread CPU time while the worker ran.
    pub cpu_ns: u64,
    /// Wall time while the worker ran.
    pub wall_ns: u64,
    /// Wall time the worker's thread was runnable but not running (another thread or process
    /// held its CPU: the kernel's `schedstat`), ns; `null` when the kernel does not say.
    #[serde(default)]
    pub runnable_wait_ns: Option<u64>,
    /// Times the kernel switched the worker out while it still wanted its CPU.
    #[serde(default)]
    pub involuntary_switches: u64,
    /// Event-loop lag probe samples, ns (made with `new_histogram`, so merging is exact).
    #[serde(rename = "loop_lag_ns", with = "buckets")]
    pub loop_lag: Histogram<u64>,
    /// What it did: requests, reads, events, bytes, connections, waits.
    #[serde(flatten)]
    pub counts: WorkerCounts,
    /// Kernel receive stamp → the worker's stamp of the same read (`--rx-timestamps`).
    #[serde(flatten)]
    pub kernel_rx: KernelRx,
    /// Wall time the pacer spent spinning before sends (see `worker::spin`), the driver
    /// passes that took, and the spin budget at the end, ns.
    #[serde(default)]
    pub pacer_spun_ns: u64,
    /// The driver passes the pacer's spins took.
    #[serde(default)]
    pub pacer_passes: u64,
    /// The part of `pacer_spun_ns` in passes that served nothing (idle polling), ns.
    #[serde(default)]
    pub pacer_idle_ns: u64,
    /// The spin budget at the end, ns.
    #[serde(default)]
    pub pacer_spin_budget_ns: u64,
    /// The runtime passes that served work items, for the client's queue model.
    #[serde(default)]
    pub queue: QueueTally,
    /// Its connections as the kernel saw them (`TCP_INFO` at each close) and their connect
    /// times, one entry per server in `--url`'s order.
    #[serde(default)]
    pub network: Vec<ConnTally>,
}

/// One worker's connections to one server: the kernel's `TCP_INFO` read once per connection
/// when it closes, and the connect time of each connection it opened (the TCP connect and
/// the TLS handshake apart). Histograms made with `new_histogram`, so merging is exact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnTally {
    /// Connections whose `TCP_INFO` was read at close.
    pub connections_read: u64,
    /// Connections closed whose `TCP_INFO` the kernel would not give.
    pub connections_unread: u64,
    /// Round trips read from long-lived connections before their close (at most every
    /// 5 s each), in `rtt_ns` and `rttvar_ns` beside the one read at each close.
    pub rtt_samples_mid_life: u64,
    /// Smoothed round trip of each connection (`tcpi_rtt`) at its close and mid-life, ns.
    #[serde(with = "buckets")]
    pub rtt_ns: Histogram<u64>,
    /// Its mean deviation (`tcpi_rttvar`), ns.
    #[serde(with = "buckets")]
    pub rttvar_ns: Histogram<u64>,
    /// The smallest round trip each connection saw (`tcpi_min_rtt`), ns.
    #[serde(with = "buckets")]
    pub min_rtt_ns: Histogram<u64>,
    /// From the connect's start to the TCP connection's establishment, ns.
    #[serde(with = "buckets")]
    pub tcp_connect_ns: Histogram<u64>,
    /// The TLS handshake after it (`https://`), ns.
    #[serde(with = "buckets")]
    pub tls_handshake_ns: Histogram<u64>,
    /// Segments sent, summed over the connections read (`tcpi_segs_out`).
    pub segments_out: u64,
    /// Of them, retransmitted (`tcpi_total_retrans`).
    pub retransmitted_segments: u64,
    /// Segments the kernel held as lost when each was read (`tcpi_lost`, a snapshot).
    pub lost: u64,
    /// Times the kernel saw reordering (`tcpi_reord_seen`).
    pub reordering_events: u64,
}

impl Default for ConnTally {
    fn default() -> Self {
        ConnTally {
            connections_read: 0,
            connections_unread: 0,
            rtt_samples_mid_life: 0,
            rtt_ns: new_histogram(),
            rttvar_ns: new_histogram(),
            min_rtt_ns: new_histogram(),
            tcp_connect_ns: new_histogram(),
            tls_handshake_ns: new_histogram(),
            segments_out: 0,
            retransmitted_segments: 0,
            lost: 0,
            reordering_events: 0,
        }
    }
}

impl ConnTally {
    /// Adds `other`'s connections (another worker's, another shard's) to these.
    pub fn add(&mut self, other: &ConnTally) {
        self.connections_read += other.connections_read;
        self.connections_unread += other.connections_unread;
        self.rtt_samples_mid_life += other.rtt_samples_mid_life;
        for (to, from) in [
            (&mut self.rtt_ns, &other.rtt_ns),
            (&mut self.rttvar_ns, &other.rttvar_ns),
            (&mut self.min_rtt_ns, &other.min_rtt_ns),
            (&mut self.tcp_connect_ns, &other.tcp_connect_ns),
            (&mut self.tls_handshake_ns, &other.tls_handshake_ns),
        ] {
            // Same bounds (`new_histogram`): adding cannot fail.
            let _ = to.add(from);
        }
        self.segments_out += other.segments_out;
        self.retransmitted_segments += other.retransmitted_segments;
        self.lost += other.lost;
        self.reordering_events += other.reordering_events;
    }
}

/// The worker's runtime passes that served work items (reads and sends), as the client's
/// M/G/1 model reads them (`summary::QueueModel`): each pass's busy time runs from the stamp
/// of its first item to the end of the pass (the records' hand-off included), shared evenly
/// among its items. Plain sums, so shards and workers add.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueTally {
    /// Passes with at least one item.
    pub passes: u64,
    /// Items over those passes.
    pub items: u64,
    /// Busy time over those passes, ns.
    pub busy_ns: u64,
    /// Σ busy² / items over the passes, ns² (the items' second moment × `items`).
    pub busy_sq_per_item_ns2: f64,
}

impl QueueTally {
    /// One pass of `items` items (none: nothing to add) busy for `busy_ns`.
    pub fn add(&mut self, busy_ns: u64, items: u32) {
        if items == 0 {
            return;
        }
        self.passes += 1;
        self.items += u64::from(items);
        self.busy_ns = self.busy_ns.saturating_add(busy_ns);
        self.busy_sq_per_item_ns2 += (busy_ns as f64) * (busy_ns as f64) / f64::from(items);
    }
}

/// One worker's kernel → user delays: one sample per read that carried a kernel receive
/// stamp, the delay from the kernel's software stamp of the newest segment the read returned
/// to the worker's stamp of the read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelRx {
    /// Delays, ns (made with `new_histogram`, so merging is exact).
    #[serde(
        rename = "kernel_rx_delay_ns",
        with = "buckets",
        default = "new_histogram"
    )]
    pub delay_ns: Histogram<u64>,
    /// Reads with data but no stamp, on connections that asked for stamps.
    #[serde(rename = "kernel_rx_unstamped", default)]
    pub unstamped: u64,
    /// Stamps later than the worker's own (a clock step after the worker started): dropped.
    #[serde(rename = "kernel_rx_negative", default)]
    pub negative: u64,
    /// Why nothing was measured (flag off, TLS, the socket refused), if so.
    #[serde(rename = "kernel_rx_unavailable", default)]
    pub unavailable: Option<String>,
}

impl Default for KernelRx {
    fn default() -> Self {
        KernelRx {
            delay_ns: new_histogram(),
            unstamped: 0,
            negative: 0,
            unavailable: None,
        }
    }
}

impl WorkerStats {
    /// All counters zero, empty histograms with the standard bounds.
    pub fn new(worker: u16, cpu: usize) -> Self {
        WorkerStats {
            worker,
            cpu,
            cpu_ns: 0,
            wall_ns: 0,
            runnable_wait_ns: None,
            involuntary_switches: 0,
            loop_lag: new_histogram(),
            counts: WorkerCounts::default(),
            kernel_rx: KernelRx::default(),
            pacer_spun_ns: 0,
            pacer_passes: 0,
            pacer_idle_ns: 0,
            pacer_spin_budget_ns: 0,
            queue: QueueTally::default(),
            network: Vec::new(),
        }
    }
}

/// A histogram as `[highest value of the bucket, count]` for each non-empty bucket, and back,
/// bucket for bucket.
mod buckets {
    use super::new_histogram;
    use hdrhistogram::Histogram;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        let pairs: Vec<[u64; 2]> = h
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect();
        pairs.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let mut h = new_histogram();
        for [value, count] in Vec::<[u64; 2]>::deserialize(d)? {
            h.saturating_record_n(value, count);
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(w: &WorkerStats) -> WorkerStats {
        serde_json::from_str(&serde_json::to_string(w).unwrap()).unwrap()
    }

    #[test]
    fn loop_lag_histograms_rebuild_bucket_for_bucket() {
        let mut w = WorkerStats::new(3, 1);
        for v in [1_000u64, 1_001, 55_555, 9_999_999, 123_456_789] {
            w.loop_lag.record(v).unwrap();
        }
        let back = round_trip(&w);
        assert_eq!(back.loop_lag, w.loop_lag);
        assert_eq!(back.loop_lag.min(), w.loop_lag.min());
        assert_eq!(back.loop_lag.max(), w.loop_lag.max());
        assert_eq!(back.loop_lag.mean(), w.loop_lag.mean());
    }

    #[test]
    fn kernel_rx_delays_and_every_count_round_trip_under_their_names() {
        let mut w = WorkerStats::new(0, 0);
        for v in [0u64, 7_000, 25_431, 2_000_000] {
            w.kernel_rx.delay_ns.record(v).unwrap();
        }
        w.kernel_rx.unstamped = 3;
        w.kernel_rx.negative = 1;
        w.kernel_rx.unavailable = Some("off".into());
        w.counts.event_vecs_allocated = 9;
        w.counts.cap_waits = 2;
        let text = serde_json::to_string(&w).unwrap();
        for key in [
            "kernel_rx_delay_ns",
            "kernel_rx_unstamped",
            "event_vecs_allocated",
            "cap_waits",
        ] {
            assert!(text.contains(key), "{key} in {text}");
        }
        let back = round_trip(&w);
        assert_eq!(back.kernel_rx.delay_ns, w.kernel_rx.delay_ns);
        assert_eq!(back.kernel_rx.delay_ns.max(), w.kernel_rx.delay_ns.max());
        assert_eq!((back.kernel_rx.unstamped, back.kernel_rx.negative), (3, 1));
        assert_eq!(back.kernel_rx.unavailable.as_deref(), Some("off"));
        assert_eq!(back.counts, w.counts);
    }
}
