//! The simulator's counters (server side; the client flow schedule → worker → http → sse →
//! extract → record → collector → report never reads them). One set per listener thread,
//! written only by that thread with relaxed atomics (no contention) and summed when asked.
//! Nothing here may block or allocate on the counting path.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use super::arrivals::{ArrivalRing, ArrivalSummary};
use super::metrics::ReplicaMetrics;
use super::truth::{TruthHist, TruthPair, TruthSummary};
use crate::plan::sim::KernelStamps;

/// What every simulator thread did, summed. Counted, never silent.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct SimStats {
    /// Listener threads running (or run).
    pub threads: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Requests answered, errors included.
    pub requests: u64,
    /// Completion requests answered with a stream.
    pub stream_requests: u64,
    /// SSE events written (role, content, usage and `[DONE]` each count one).
    pub events: u64,
    /// Socket writes (one `write_all` each).
    pub writes: u64,
    /// Bytes those writes carried.
    pub bytes_written: u64,
    /// Request heads or bodies that did not parse (answered 4xx).
    pub parse_errors: u64,
    /// Requests for a path or method the simulator does not serve.
    pub not_found: u64,
    /// Writes or reads that failed (peer gone mid-response, reset).
    pub io_errors: u64,
    /// Accepts that failed (e.g. out of file descriptors).
    pub accept_errors: u64,
    /// Sum of the threads' `CLOCK_THREAD_CPUTIME`.
    pub cpu_ns: u64,
    /// `"io_uring"`, `"epoll"`, or `"mixed"` if threads ended up on different drivers.
    pub io_driver: String,
    /// Faults injected (`--fault`), requests and refused connections together.
    pub faults: u64,
    /// Which stamps the kernel gave (`--kernel-stamps`; `off` when serving TLS).
    pub kernel_stamps: KernelStamps,
    /// Streamed completions, server side: from the arrival of the request's last byte (the
    /// kernel's receive stamp) to the departure of the first content token (the kernel's
    /// transmit stamp with `rx-tx`, else the return of its write); see `truth.rs`.
    pub ttft_us: TruthSummary,
    /// The same, to the departure of the response's last byte.
    pub e2e_us: TruthSummary,
    /// TTFT on the simulator's own clock only: from the return of the read that completed
    /// the request to the return of the write carrying the first content token.
    pub ttft_user_us: TruthSummary,
    /// E2E on its own clock only, to the return of the last write.
    pub e2e_user_us: TruthSummary,
    /// The simulator's own wake-up per streamed completion: from the kernel's receive stamp
    /// to the return of the read (stamped reads only).
    pub wake_us: TruthSummary,
    /// Completion requests whose read came without a kernel stamp although stamps were
    /// asked for (their figures start at the read's return).
    pub unstamped_reads: u64,
    /// With `rx-tx`: first and last writes of streams whose transmit stamp was not there
    /// when the write returned (their figures end at the write's return).
    pub unstamped_writes: u64,
    /// The arrival process: completion requests' arrivals and the gaps between them, by the
    /// kernel's stamps and by the threads' own.
    pub arrivals: ArrivalSummary,
    /// Engine model: time completions spent waiting for a slot or KV blocks, from the read
    /// that completed them to their admission (streamed or not; 0 for those admitted at once).
    pub queue_us: TruthSummary,
    /// Completions the engine admitted.
    pub completions: u64,
    /// The prompt tokens they carried (the simulator's tokens: words, see `request.rs`).
    pub prompt_tokens: u64,
    /// Of those prompt tokens, how many the KV cache served (0 without `--kv-cache-blocks`).
    pub cached_tokens: u64,
    /// Distinct prompts (by their token hash) among the admitted completions; counted only
    /// with the KV cache on, up to `DISTINCT_BOUND`, beyond which `distinct_overflow` counts.
    pub distinct_prompts: u64,
    /// New prompt hashes not kept because the set was full.
    pub distinct_overflow: u64,
    /// Cached KV blocks evicted to make room.
    pub kv_evictions: u64,
    /// Answered 429: `--max-waiting` requests were waiting.
    pub queue_full: u64,
    /// Answered 400: prompt and `max_tokens` need more KV blocks than the cache has.
    pub too_large: u64,
    /// Streams whose client closed the connection before the answer ended (a write of the
    /// stream failed): a browser tab closed, `run --cancel-rate`. Their engine slot is freed.
    pub aborted_mid_stream: u64,
}

/// One thread's counters.
#[derive(Default, Debug)]
pub(crate) struct ThreadStats {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub stream_requests: AtomicU64,
    pub events: AtomicU64,
    pub writes: AtomicU64,
    pub bytes_written: AtomicU64,
    pub parse_errors: AtomicU64,
    pub not_found: AtomicU64,
    pub io_errors: AtomicU64,
    pub accept_errors: AtomicU64,
    /// Set by the thread as it exits; while it runs, its CPU clock is read from outside.
    pub final_cpu_ns: AtomicU64,
    pub faults: AtomicU64,
    /// Per-request truth of streamed completions (`truth.rs`).
    pub ttft: TruthHist,
    pub e2e: TruthHist,
    pub ttft_user: TruthHist,
    pub e2e_user: TruthHist,
    pub wake: TruthHist,
    pub unstamped_reads: AtomicU64,
    pub unstamped_writes: AtomicU64,
    /// Every completion request's arrival (`arrivals.rs`).
    pub arrivals: ArrivalRing,
    /// Per-request queue time of every admitted completion.
    pub queue: TruthHist,
    pub completions: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub cached_tokens: AtomicU64,
    /// This replica's `/metrics` figures (`metrics.rs`).
    pub prom: ReplicaMetrics,
    /// The engine's count of requests that could never fit (written by `publish`).
    pub too_large: AtomicU64,
    pub aborted_mid_stream: AtomicU64,
}

impl ThreadStats {
    /// Adds this thread's truth histograms and counts into `pair`.
    pub(crate) fn add_truth(&self, pair: &mut TruthPair) {
        let t = self;
        pair.ttft.add(&t.ttft);
        pair.e2e.add(&t.e2e);
        pair.ttft_user.add(&t.ttft_user);
        pair.e2e_user.add(&t.e2e_user);
        pair.wake.add(&t.wake);
        pair.unstamped_reads += t.unstamped_reads.load(Relaxed);
        pair.unstamped_writes += t.unstamped_writes.load(Relaxed);
        pair.queue.add(&t.queue);
        pair.completions += t.completions.load(Relaxed);
        pair.prompt_tokens += t.prompt_tokens.load(Relaxed);
        pair.cached_tokens += t.cached_tokens.load(Relaxed);
    }

    /// A thread's counters, its arrival ring holding `arrivals_kept` (rounded up to a power
    /// of two).
    pub(crate) fn new(arrivals_kept: u32) -> Self {
        Self {
            arrivals: ArrivalRing::with_capacity((arrivals_kept as usize).next_power_of_two()),
            ..Self::default()
        }
    }

    pub(crate) fn add_into(&self, sum: &mut SimStats) {
        sum.threads += 1;
        sum.connections += self.connections.load(Relaxed);
        sum.requests += self.requests.load(Relaxed);
        sum.stream_requests += self.stream_requests.load(Relaxed);
        sum.events += self.events.load(Relaxed);
        sum.writes += self.writes.load(Relaxed);
        sum.bytes_written += self.bytes_written.load(Relaxed);
        sum.parse_errors += self.parse_errors.load(Relaxed);
        sum.not_found += self.not_found.load(Relaxed);
        sum.io_errors += self.io_errors.load(Relaxed);
        sum.accept_errors += self.accept_errors.load(Relaxed);
        sum.faults += self.faults.load(Relaxed);
        sum.completions += self.completions.load(Relaxed);
        sum.prompt_tokens += self.prompt_tokens.load(Relaxed);
        sum.cached_tokens += self.cached_tokens.load(Relaxed);
        sum.kv_evictions += self.prom.kv_evictions.load(Relaxed);
        sum.queue_full += self.prom.rejected.load(Relaxed);
        sum.too_large += self.too_large.load(Relaxed);
        sum.aborted_mid_stream += self.aborted_mid_stream.load(Relaxed);
        sum.unstamped_reads += self.unstamped_reads.load(Relaxed);
        sum.unstamped_writes += self.unstamped_writes.load(Relaxed);
    }
}

/// Sums the threads' counters and truth histograms and merges their arrivals since the
/// start (`cpu_ns`, `io_driver` and `kernel_stamps` are the caller's: the first two are read
/// differently while running and once stopped). Off the serving path: the merge sorts every
/// arrival the rings hold.
pub(crate) fn sum_threads<'a>(threads: impl Iterator<Item = &'a ThreadStats> + Clone) -> SimStats {
    let mut sum = SimStats::default();
    let mut truth = TruthPair::default();
    for t in threads.clone() {
        t.add_into(&mut sum);
        t.add_truth(&mut truth);
    }
    sum.ttft_us = truth.ttft.summary();
    sum.e2e_us = truth.e2e.summary();
    sum.ttft_user_us = truth.ttft_user.summary();
    sum.e2e_user_us = truth.e2e_user.summary();
    sum.wake_us = truth.wake.summary();
    sum.queue_us = truth.queue.summary();
    sum.arrivals = super::arrivals::summary(threads.map(|t| &t.arrivals), &[]);
    sum
}
