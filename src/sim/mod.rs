//! `ringbench sim`: the null server the client is checked against. It is the server side;
//! the client flow (schedule → worker → http → sse → extract → record → collector → report)
//! only ever talks to it over loopback. It serves OpenAI-compatible `POST
//! /v1/chat/completions` and `POST /v1/completions` (streaming and not); OpenAI's Responses
//! API `POST /v1/responses` and Anthropic's Messages API `POST /v1/messages` (streaming and
//! not, `format/apis.rs`); tool calls on chat, Responses and Messages (`tool_choice`
//! `required` or a named tool always, `auto` with `--tool-call-rate`); the pooling endpoints
//! `POST /v1/embeddings` (`--embedding-dim` floats or base64), `/v1/rerank`, TEI's
//! `/rerank` and `/v1/score` (`format/pool.rs`: one answer after queue, prefill and ttft);
//! `GET /v1/models`
//! and `GET /health` (plus `GET /sim/truth` and `POST /sim/truth/reset`: its own measured
//! per-request TTFT, E2E and queue time, see `truth.rs`, and the arrival process it saw, see
//! `arrivals.rs`; and `GET /metrics`: Prometheus text
//! in vLLM's names, see `metrics.rs`) over HTTP/1.1 keep-alive, in vLLM's exact wire
//! format, and stamps every event with `"ringbench_ns"` (absolute `CLOCK_MONOTONIC`, taken
//! just before the write that carries it) so a client on the same host can measure delivery
//! delay. It may not depend on any client module, may not print, and must stay cheap: the
//! point of a calibration run is that the client, not this server, is what gets measured.
//!
//! Threads: one per entry of `cpus`, pinned, each its own monoio runtime and its own
//! `SO_REUSEPORT` listener on the one shared port; threads share nothing but counters.
//!
//! Timing: the first content event is due at arrival + `ttft_ms` (arrival = the kernel's
//! receive stamp of the segment that carried the request's last byte, `--kernel-stamps`, on
//! plain connections; else when the read that completed the request returned; for pipelined
//! requests, when the previous response finished), event `i` at arrival + ttft +
//! i·`itl_ms` — absolute deadlines, so rounding
//! never accumulates. Whatever is due when the thread wakes goes out in one write (with zero
//! delays the whole response is one write). monoio's 1 ms timer wheel rounds a deadline up
//! to the next tick and parks for whole ticks, so a wake lands anywhere in
//! [deadline, deadline + 2 ms): too coarse for a 10 ms ITL checked to ±0.5 ms. Each
//! connection instead sleeps on its own `timerfd` armed with the absolute deadline
//! (`TFD_TIMER_ABSTIME`, the same clock as the stamps) and awaited through monoio's
//! readiness wait, with the thread's timer slack cut to 1 ns; deadlines under 10 µs away
//! are met by a short spin. No spinning otherwise, so io_uring can keep its cheaper
//! `SINGLE_ISSUER | DEFER_TASKRUN` setup (a yield-spin would not reap completions under
//! `DEFER_TASKRUN`), and waiting costs no CPU. See `rt::timer`. Measured here (2 shared
//! vCPUs): monoio `sleep_until` on absolute deadlines woke p50 0.8 ms / p90 1.8 ms late; the
//! timerfd p50 50 µs / p90 61 µs late, the floor of this VM (a 1 ns-slack `nanosleep` is
//! 45 µs late). Seen by a client with ttft 50 ms, itl 10 ms: TTFT p50 50.15 ms, gap p50
//! 10.00 ms (p10–p90 9.93–10.08).
//!
//! Engine model (`engine/`, off unless a flag asks for it): each thread is one engine replica
//! with `--max-num-seqs` running slots, a FIFO waiting queue bounded by `--max-waiting`
//! (429 beyond), prefill time per uncached prompt token, and a KV cache of `--kv-cache-blocks`
//! blocks with chained block hashes, prefix hits and LRU eviction. Off, every request is
//! admitted at arrival and nothing waits: the same timing as before, plus the replica's
//! `/metrics` counters (a few relaxed single-writer stores per request and one per write).
//!
//! Approximations, said once: there is no tokenizer, so the simulator's token is a word —
//! a run of bytes above 0x20 — of the prompt (message `content` strings and content parts'
//! `text`), or one id of a token-id prompt; `prompt_tokens` counts those. The non-streaming body carries `ringbench_ns` as well.
//! Images and audio in content parts are never decoded: each image counts `--image-tokens`
//! prompt tokens and each second of audio (from the WAV header) `--audio-tokens-per-s`, and
//! each image's payload hash is looked up in the replica's multimodal cache (`mm_cache`).

mod api;
mod arrivals;
mod board;
mod conn;
mod counter;
mod engine;
pub mod fault;
mod format;
mod load_model;
mod metrics;
mod mm_cache;
mod request;
mod server;
mod stats;
mod tick;
mod tls_stream;
mod truth;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

pub use crate::http::tls::server_config as tls_config;
pub use arrivals::{ArrivalSummary, GapSummary};
pub use stats::SimStats;
pub use truth::TruthSummary;

use crate::plan::sim::{FaultConfig, KernelStamps, SimSettings};
use crate::plan::IoDriver;
use crate::rt::driver::DriverUsed;
use crate::rt::timer::Bell;
use board::TruthBoard;
use server::ThreadSetup;
use stats::ThreadStats;

/// Where and how the simulator listens; what it answers is `settings`, the one settings type
/// (`plan::SimSettings`) that `ringbench sim`, `run --sim-*` and `calibrate` all fill.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Address to listen on (`127.0.0.1` by default).
    pub host: String,
    /// 0 picks a free port, shared by every thread.
    pub port: u16,
    /// The listener threads' I/O driver.
    pub io_driver: IoDriver,
    /// Serve TLS with this config (`--tls-cert/--tls-key`; see `crate::http::tls::server_config`).
    pub tls: Option<Arc<crate::http::tls::ServerConfig>>,
    /// How it answers: delays, faults, load model, model name, CPUs.
    pub settings: SimSettings,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 0,
            io_driver: IoDriver::Auto,
            tls: None,
            settings: SimSettings::default(),
        }
    }
}

/// The validated, integer form the threads run from.
#[derive(Debug)]
pub(crate) struct Settings {
    pub ttft_ns: u64,
    pub itl_ns: u64,
    pub tokens_per_chunk: u32,
    pub model: String,
    pub faults: FaultConfig,
    pub load: load_model::LoadModel,
    pub tls: Option<Arc<crate::http::tls::ServerConfig>>,
    /// The stamps asked of the kernel: none for TLS (rustls reads the socket itself).
    pub kernel_stamps: KernelStamps,
    /// The settings as given: the engine model's and the flavour's parts are read from here.
    pub sim: SimSettings,
}

impl Settings {
    fn from_config(cfg: &SimConfig) -> io::Result<Self> {
        let s = &cfg.settings;
        s.validate("--").map_err(invalid)?;
        let ns = |ms: f64| (ms * 1e6).round() as u64;
        Ok(Self {
            ttft_ns: ns(s.ttft_ms),
            itl_ns: ns(s.itl_ms),
            tokens_per_chunk: s.tokens_per_chunk,
            model: s.model.clone(),
            faults: s.faults.clone(),
            load: load_model::LoadModel::new(ns(s.ttft_per_inflight_ms), ns(s.itl_per_inflight_ms)),
            tls: cfg.tls.clone(),
            kernel_stamps: match cfg.tls {
                Some(_) => KernelStamps::Off,
                None => s.kernel_stamps,
            },
            sim: s.clone(),
        })
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// A running simulator. Dropping it stops it too.
pub struct SimHandle {
    /// Where it listens (the actual port when 0 was asked for).
    pub addr: SocketAddr,
    threads: Vec<ThreadHandle>,
    board: Arc<TruthBoard>,
}

struct ThreadHandle {
    join: JoinHandle<()>,
    stats: Arc<ThreadStats>,
    bell: Bell,
    driver: DriverUsed,
}

/// Starts every listener thread; returns once all of them are listening.
pub fn start(cfg: SimConfig) -> io::Result<SimHandle> {
    let settings = Arc::new(Settings::from_config(&cfg)?);
    let addr = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| invalid(format!("{} resolves to no address", cfg.host)))?;
    let cpus: Vec<Option<usize>> = match cfg.settings.cpus.is_empty() {
        true => vec![None],
        false => cfg.settings.cpus.iter().copied().map(Some).collect(),
    };
    // Made before any thread starts, so each can serve `GET /sim/truth` for all of them.
    let kept = cfg.settings.arrivals_kept;
    let stats: Vec<_> = cpus
        .iter()
        .map(|_| Arc::new(ThreadStats::new(kept)))
        .collect();
    let board = Arc::new(TruthBoard::new(
        stats.clone(),
        settings.kernel_stamps,
        crate::rt::clock::mono_ns(),
    ));
    let mut handle = SimHandle {
        addr,
        threads: Vec::with_capacity(cpus.len()),
        board: board.clone(),
    };
    for (index, (cpu, stats)) in cpus.into_iter().zip(stats).enumerate() {
        // Threads after the first bind the port the first one got.
        let (thread, bound) = spawn_thread(
            index as u64,
            &settings,
            cpu,
            handle.addr,
            cfg.io_driver,
            stats,
            &board,
        )?;
        handle.addr = bound;
        handle.threads.push(thread);
    }
    Ok(handle)
}

fn spawn_thread(
    index: u64,
    settings: &Arc<Settings>,
    cpu: Option<usize>,
    addr: SocketAddr,
    driver: IoDriver,
    stats: Arc<ThreadStats>,
    board: &Arc<TruthBoard>,
) -> io::Result<(ThreadHandle, SocketAddr)> {
    let (bell, seed) = Bell::new()?;
    let (ready, ready_rx) = mpsc::channel();
    let setup = ThreadSetup {
        index,
        settings: settings.clone(),
        cpu,
        addr,
        driver,
        stop: seed,
        stats: stats.clone(),
        ready,
        board: board.clone(),
    };
    let join = std::thread::Builder::new()
        .name(format!("ringbench-sim-{index}"))
        .spawn(move || server::run_thread(setup))?;
    let (bound, driver) = match ready_rx.recv() {
        Ok(Ok(started)) => started,
        Ok(Err(e)) => return Err(joined(join, e)),
        Err(_) => return Err(joined(join, io::Error::other("simulator thread died"))),
    };
    let thread = ThreadHandle {
        join,
        stats,
        bell,
        driver,
    };
    Ok((thread, bound))
}

fn joined(join: JoinHandle<()>, e: io::Error) -> io::Error {
    let _ = join.join();
    e
}

impl SimHandle {
    /// Counters so far, summed over threads (CPU time read live from each thread's clock).
    pub fn stats(&self) -> SimStats {
        let mut sum = stats::sum_threads(self.threads.iter().map(|t| &*t.stats));
        sum.cpu_ns = self.threads.iter().map(live_cpu_ns).sum();
        sum.io_driver = driver_name(&self.threads);
        self.add_distinct(&mut sum);
        sum
    }

    fn add_distinct(&self, sum: &mut SimStats) {
        sum.kernel_stamps = self.board.kernel_stamps;
        sum.distinct_prompts = self.board.distinct.count();
        sum.distinct_overflow = self.board.distinct.overflow();
    }

    /// Stops every thread (accept loops end, connections are shut and woken), joins them
    /// and returns the final counters.
    pub fn stop(mut self) -> SimStats {
        self.shutdown()
    }

    fn shutdown(&mut self) -> SimStats {
        for t in &self.threads {
            t.bell.ring();
        }
        let io_driver = driver_name(&self.threads);
        let mut stopped = Vec::with_capacity(self.threads.len());
        for t in self.threads.drain(..) {
            let _ = t.join.join();
            stopped.push(t.stats);
        }
        let mut sum = stats::sum_threads(stopped.iter().map(|s| &**s));
        sum.cpu_ns = stopped.iter().map(|s| s.final_cpu_ns.load(Relaxed)).sum();
        sum.io_driver = io_driver;
        self.add_distinct(&mut sum);
        sum
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.shutdown();
        }
    }
}

/// A running thread's CPU time, read through its CPU-time clock without disturbing it.
fn live_cpu_ns(t: &ThreadHandle) -> u64 {
    let done = t.stats.final_cpu_ns.load(Relaxed);
    if done != 0 {
        return done;
    }
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the pthread is joinable and not yet joined (we own its JoinHandle), so its
    // id is valid; `clock` is a valid out-pointer.
    if unsafe { libc::pthread_getcpuclockid(t.join.as_pthread_t(), &mut clock) } != 0 {
        return t.stats.final_cpu_ns.load(Relaxed);
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return t.stats.final_cpu_ns.load(Relaxed);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn driver_name(threads: &[ThreadHandle]) -> String {
    let mut names = threads.iter().map(|t| t.driver.name());
    let first = names.next().unwrap_or("none");
    match names.all(|n| n == first) {
        true => first.into(),
        false => "mixed".into(),
    }
}
