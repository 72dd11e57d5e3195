//! The simulator's counters (server side; the client flow schedule → worker → http → sse →
//! extract → record → collector → report never reads them). One set per listener thread,
//! written only by that thread with relaxed atomics (no contention) and summed when asked.
//! Nothing here may block or allocate on the counting path.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use super::metrics::ReplicaMetrics;
use super::truth::{TruthHist, TruthPair, TruthSummary};

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
    /// Streamed completions, server side: from the read that completed the request to the
    /// return of the write carrying the first content token (see `truth.rs`).
    pub ttft_us: TruthSummary,
    /// The same, to the return of the response's last write.
    pub e2e_us: TruthSummary,
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
    /// Per-request queue time of every admitted completion.
    pub queue: TruthHist,
    pub completions: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub cached_tokens: AtomicU64,
    /// This replica's `/metrics` figures (`metrics.rs`).
    pub prom: ReplicaMetrics,
    /// The engine's count of requests that could never fit (written by `publish`).
    pub too_large: AtomicU64,
}

/// Adds one to a counter only its own thread writes.
#[inline]
pub(crate) fn bump(counter: &AtomicU64, by: u64) {
    // A load and a store, not a locked add: this thread is the only writer.
    counter.store(counter.load(Relaxed) + by, Relaxed);
}

impl ThreadStats {
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
    }
}

/// Sums the threads' counters and truth histograms (`cpu_ns` and `io_driver` are the
/// caller's: they are read differently while running and once stopped).
pub(crate) fn sum_threads<'a>(threads: impl Iterator<Item = &'a ThreadStats>) -> SimStats {
    let mut sum = SimStats::default();
    let mut truth = TruthPair::default();
    for t in threads {
        t.add_into(&mut sum);
        truth.add(t);
    }
    sum.ttft_us = truth.ttft.summary();
    sum.e2e_us = truth.e2e.summary();
    sum.queue_us = truth.queue.summary();
    sum
}
