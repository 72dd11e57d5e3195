//! Part of the CLI (raw flags → settings): the simulator's flags, written once. `ringbench sim`
//! spells them `--ttft-ms`, `--fault`, …; `run` (whose in-process simulator answers when no
//! `--url` is given) spells the same flags `--sim-ttft-ms`, `--sim-fault`, …. One macro makes
//! both flag sets from one list, and each becomes `plan::SimSettings` through one function, so
//! a new simulator setting is one entry here and one field there.

use super::parse::parse_duration_ns;
use super::UsageError;
use ringbench::plan::sim::{FaultConfig, FaultSpec, Flavor, KernelStamps, SimSettings};
use ringbench::plan::IoDriver;
use std::path::PathBuf;

fn parse_fault(s: &str) -> Result<FaultSpec, String> {
    s.parse()
}

/// One flag set per spelling: `$name` with every flag's long name prefixed by `$prefix`.
macro_rules! sim_flags {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, clap::Args)]
        pub struct $name {
            /// Simulator: time to first token, ms.
            #[arg(long = concat!($prefix, "ttft-ms"), value_name = "MS", default_value_t = 0.0)]
            pub ttft_ms: f64,
            /// Simulator: delay between events after the first, ms.
            #[arg(long = concat!($prefix, "itl-ms"), value_name = "MS", default_value_t = 0.0)]
            pub itl_ms: f64,
            /// Simulator: tokens carried by one content event.
            #[arg(long = concat!($prefix, "tokens-per-chunk"), value_name = "N", default_value_t = 1)]
            pub tokens_per_chunk: u32,
            /// Simulator: inject a fault KIND with probability PROB per request (per
            /// connection for refuse); repeatable. Kinds: refuse, reset_before_head,
            /// reset_mid_stream, http_500, http_503, http_429, error_event, stall_head,
            /// stall_mid, bad_json, truncated_chunk, bad_utf8, oversized_event, slow_head,
            /// close_after_response.
            #[arg(long = concat!($prefix, "fault"), value_name = "KIND:PROB", value_parser = parse_fault)]
            pub faults: Vec<FaultSpec>,
            /// Simulator: how long stall_head/stall_mid send nothing, ms.
            #[arg(long = concat!($prefix, "fault-stall-ms"), value_name = "MS", default_value_t = 5_000)]
            pub fault_stall_ms: u64,
            /// Simulator: how long slow_head takes to trickle the head out, ms.
            #[arg(long = concat!($prefix, "fault-slow-head-ms"), value_name = "MS", default_value_t = 200)]
            pub fault_slow_head_ms: u64,
            /// Simulator's load model: extra TTFT ms per other request in flight (0 = off).
            #[arg(long = concat!($prefix, "ttft-per-inflight-ms"), value_name = "MS", default_value_t = 0.0)]
            pub ttft_per_inflight_ms: f64,
            /// Simulator's load model: extra ITL ms per other request in flight (0 = off).
            #[arg(long = concat!($prefix, "itl-per-inflight-ms"), value_name = "MS", default_value_t = 0.0)]
            pub itl_per_inflight_ms: f64,
            /// Simulator's engine model: running-sequence slots per simulator CPU (one engine
            /// replica each); more requests wait in a FIFO queue (0 = no limit).
            #[arg(long = concat!($prefix, "max-num-seqs"), value_name = "N", default_value_t = 0)]
            pub max_num_seqs: u32,
            /// Simulator's engine model: longest waiting queue per replica; beyond it HTTP 429
            /// (0 = no limit). Needs max-num-seqs or kv-cache-blocks.
            #[arg(long = concat!($prefix, "max-waiting"), value_name = "N", default_value_t = 0)]
            pub max_waiting: u32,
            /// Simulator's engine model: prefill ms per prompt token not served from the KV
            /// cache (0 = off).
            #[arg(long = concat!($prefix, "prefill-ms-per-token"), value_name = "MS", default_value_t = 0.0)]
            pub prefill_ms_per_token: f64,
            /// Simulator's engine model: fixed prefill ms per request (0 = off).
            #[arg(long = concat!($prefix, "prefill-overhead-ms"), value_name = "MS", default_value_t = 0.0)]
            pub prefill_overhead_ms: f64,
            /// Simulator's engine model: KV-cache blocks per replica, with prefix caching
            /// (0 = no cache).
            #[arg(long = concat!($prefix, "kv-cache-blocks"), value_name = "N", default_value_t = 0)]
            pub kv_cache_blocks: u32,
            /// Simulator's engine model: tokens per KV-cache block (the simulator's token is a
            /// word of the prompt).
            #[arg(long = concat!($prefix, "block-size"), value_name = "B", default_value_t = 16)]
            pub block_size: u32,
            /// Simulator: whose wire format and /metrics names to copy.
            #[arg(long = concat!($prefix, "flavor"), value_enum, default_value = "vllm")]
            pub flavor: Flavor,
            /// Simulator: of each chat reply's tokens, how many come first as reasoning
            /// (`delta.reasoning` for vllm, `delta.reasoning_content` for llama-cpp).
            #[arg(long = concat!($prefix, "reasoning-tokens"), value_name = "N", default_value_t = 0)]
            pub reasoning_tokens: u32,
            /// Simulator: every response carries x-request-id, the request's own or one it
            /// makes (vLLM's --enable-request-id-headers).
            #[arg(long = concat!($prefix, "enable-request-id-headers"))]
            pub request_id_headers: bool,
            /// Simulator: which of its stamps come from the kernel: rx (a request arrives at
            /// the receive stamp of its last segment), rx-tx (and a write leaves at its
            /// transmit stamp), off (its own clock only).
            #[arg(long = concat!($prefix, "kernel-stamps"), value_enum, value_name = "WHICH", default_value = "rx")]
            pub kernel_stamps: KernelStamps,
            /// Simulator: arrivals each simulator CPU keeps for the arrival statistics of
            /// /sim/truth (rounded up to a power of two; 16 bytes each).
            #[arg(long = concat!($prefix, "arrivals-kept"), value_name = "N", default_value_t = 1 << 20)]
            pub arrivals_kept: u32,
        }

        impl $name {
            /// The settings these flags give; the CPUs, the model name and the fault seed
            /// come from the command's other flags.
            pub fn settings(&self, cpus: Vec<usize>, model: String, fault_seed: u64) -> SimSettings {
                SimSettings {
                    ttft_ms: self.ttft_ms,
                    itl_ms: self.itl_ms,
                    tokens_per_chunk: self.tokens_per_chunk,
                    cpus,
                    faults: FaultConfig {
                        faults: self.faults.clone(),
                        seed: fault_seed,
                        stall_ms: self.fault_stall_ms,
                        slow_head_ms: self.fault_slow_head_ms,
                    },
                    ttft_per_inflight_ms: self.ttft_per_inflight_ms,
                    itl_per_inflight_ms: self.itl_per_inflight_ms,
                    model,
                    max_num_seqs: self.max_num_seqs,
                    max_waiting: self.max_waiting,
                    prefill_ms_per_token: self.prefill_ms_per_token,
                    prefill_overhead_ms: self.prefill_overhead_ms,
                    kv_cache_blocks: self.kv_cache_blocks,
                    block_size: self.block_size,
                    flavor: self.flavor,
                    reasoning_tokens: self.reasoning_tokens,
                    request_id_headers: self.request_id_headers,
                    kernel_stamps: self.kernel_stamps,
                    arrivals_kept: self.arrivals_kept,
                }
            }
        }
    };
}

sim_flags!(
    /// `ringbench sim`'s answering flags.
    SimFlags,
    ""
);
sim_flags!(
    /// `ringbench run`'s flags for its built-in simulator (no `--url`).
    RunSimFlags,
    "sim-"
);

impl RunSimFlags {
    /// Whether any flag was moved off its default (which only makes sense without `--url`).
    pub fn any_set(&self) -> bool {
        let defaults = SimSettings::default();
        self.settings(vec![], defaults.model.clone(), 0) != defaults
    }
}

/// `ringbench sim`.
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// 0 picks a free port.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// CPUs, one listener thread each (default: the first CPU this process may use).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Served by /v1/models and echoed when a request names none.
    #[arg(long, default_value = "ringbench-sim")]
    pub model: String,
    #[arg(long, value_enum, default_value = "auto")]
    pub io_driver: IoDriver,
    /// Seed of the fault draws (same seed, same faults on a one-thread simulator).
    #[arg(long, default_value_t = 0)]
    pub fault_seed: u64,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Every D (like 100ms; at least 1ms), print the counters so far as one JSON line on
    /// stdout, after the `listening on` line: {"mono_ns": N, "stats": {...}}. For outside
    /// tools that want the server's own count of what it received (tools/compare-peers).
    #[arg(long, value_name = "D", value_parser = parse_stats_interval_ns)]
    pub stats_interval: Option<u64>,
    #[command(flatten)]
    pub flags: SimFlags,
}

/// `--stats-interval`: a duration of at least 1 ms (a shorter one would only burn the CPU the
/// simulator shares with its listener thread).
fn parse_stats_interval_ns(s: &str) -> Result<u64, String> {
    match parse_duration_ns(s)? {
        ns if ns >= 1_000_000 => Ok(ns),
        _ => Err(format!("'{s}' is under 1ms; use 1ms or more")),
    }
}

impl SimArgs {
    /// The simulator to start: where it listens and what it answers, checked as a whole.
    pub fn config(&self) -> Result<ringbench::sim::SimConfig, UsageError> {
        let online = ringbench::host::online_cpus();
        let cpus = match &self.cpus {
            Some(s) => super::parse::parse_cpus("--cpus", s, &online)?,
            None => ringbench::host::default_sim_cpus(&online, &[]),
        };
        let settings = self
            .flags
            .settings(cpus, self.model.clone(), self.fault_seed);
        settings.validate("--").map_err(UsageError)?;
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                Some(ringbench::sim::tls_config(cert, key).map_err(|e| UsageError(e.to_string()))?)
            }
            _ => None,
        };
        Ok(ringbench::sim::SimConfig {
            host: self.host.clone(),
            port: self.port,
            io_driver: self.io_driver,
            tls,
            settings,
        })
    }
}
