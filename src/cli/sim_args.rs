//! Part of the CLI (raw flags → settings): the simulator's flags, written once. `ringbench sim`
//! spells them `--ttft-ms`, `--fault`, …; `run` (whose in-process simulator answers when no
//! `--url` is given) spells the same flags `--sim-ttft-ms`, `--sim-fault`, …. One macro makes
//! both flag sets from one list, and each becomes `plan::SimSettings` through one function, so
//! a new simulator setting is one entry here and one field there.

use super::parse::{parse_duration_ns, parse_ms, parse_whole_ms};
use super::UsageError;
use ringbench::plan::sim::{FaultConfig, FaultSpec, Flavor, KernelStamps, SimSettings};
use ringbench::plan::IoDriver;
use std::path::PathBuf;

fn parse_fault(s: &str) -> Result<FaultSpec, String> {
    s.parse()
}

/// One flag set per spelling: `$name` with every flag's long name prefixed by `$prefix`,
/// shown under the headings `$pace`, `$faults` and `$engine`; `$rare` hides the rarely used
/// ones from `-h` (they stay in `--help`).
macro_rules! sim_flags {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $pace:expr, $faults:expr, $engine:expr, $rare:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, clap::Args)]
        pub struct $name {
            /// Time to first token (bare: ms)
            #[arg(long = concat!($prefix, "ttft-ms"), value_name = "D", value_parser = parse_ms, default_value = "0ms", help_heading = $pace)]
            pub ttft_ms: f64,
            /// Inter-token latency (bare: ms)
            ///
            /// The time between content events after the first.
            #[arg(long = concat!($prefix, "itl-ms"), value_name = "D", value_parser = parse_ms, default_value = "0ms", help_heading = $pace)]
            pub itl_ms: f64,
            /// Tokens in one content event
            #[arg(long = concat!($prefix, "tokens-per-chunk"), value_name = "N", default_value_t = 1, hide_short_help = $rare, help_heading = $pace)]
            pub tokens_per_chunk: u32,
            /// Tokens of each chat reply sent first as reasoning
            ///
            /// Sent as `delta.reasoning` (vllm) or `delta.reasoning_content` (llama-cpp).
            #[arg(long = concat!($prefix, "reasoning-tokens"), value_name = "N", default_value_t = 0, hide_short_help = $rare, help_heading = $pace)]
            pub reasoning_tokens: u32,
            /// Wire format and /metrics names: vllm or llama-cpp
            #[arg(long = concat!($prefix, "flavor"), value_enum, value_name = "NAME", hide_possible_values = true, default_value = "vllm", hide_short_help = $rare, help_heading = $pace)]
            pub flavor: Flavor,
            /// Send x-request-id on every response (as vLLM can)
            ///
            /// The request's own, or one the simulator makes when the request has none.
            #[arg(long = concat!($prefix, "enable-request-id-headers"), hide_short_help = $rare, help_heading = $pace)]
            pub request_id_headers: bool,
            /// A fault KIND with probability PROB per request, repeatable
            ///
            /// Per connection for refuse. Kinds: refuse, reset_before_head, reset_mid_stream,
            /// http_500, http_503, http_429, error_event, stall_head, stall_mid, bad_json,
            /// truncated_chunk, bad_utf8, oversized_event, slow_head, close_after_response,
            /// html_200, dribble, stop_reading.
            #[arg(long = concat!($prefix, "fault"), value_name = "KIND:PROB", value_parser = parse_fault, help_heading = $faults)]
            pub faults: Vec<FaultSpec>,
            /// How long stall_head/stall_mid send nothing (bare: ms)
            #[arg(long = concat!($prefix, "fault-stall-ms"), value_name = "D", value_parser = parse_whole_ms, default_value = "5s", hide_short_help = $rare, help_heading = $faults)]
            pub fault_stall_ms: u64,
            /// How long slow_head trickles the head out (bare: ms)
            #[arg(long = concat!($prefix, "fault-slow-head-ms"), value_name = "D", value_parser = parse_whole_ms, default_value = "200ms", hide_short_help = $rare, help_heading = $faults)]
            pub fault_slow_head_ms: u64,
            /// Extra TTFT per other request in flight (bare: ms)
            #[arg(long = concat!($prefix, "ttft-per-inflight-ms"), value_name = "D", value_parser = parse_ms, default_value = "0ms", hide_short_help = $rare, help_heading = $engine)]
            pub ttft_per_inflight_ms: f64,
            /// Extra ITL per other request in flight (bare: ms)
            #[arg(long = concat!($prefix, "itl-per-inflight-ms"), value_name = "D", value_parser = parse_ms, default_value = "0ms", hide_short_help = $rare, help_heading = $engine)]
            pub itl_per_inflight_ms: f64,
            /// Running sequences per replica, 0: no limit
            ///
            /// One engine replica per simulator CPU; more requests wait in a FIFO queue.
            #[arg(long = concat!($prefix, "max-num-seqs"), value_name = "N", default_value_t = 0, hide_short_help = $rare, help_heading = $engine)]
            pub max_num_seqs: u32,
            /// Waiting queue per replica, then 429; 0: no limit
            ///
            /// Needs max-num-seqs or kv-cache-blocks.
            #[arg(long = concat!($prefix, "max-waiting"), value_name = "N", default_value_t = 0, hide_short_help = $rare, help_heading = $engine)]
            pub max_waiting: u32,
            /// Prefill time per uncached prompt token (bare: ms)
            #[arg(long = concat!($prefix, "prefill-ms-per-token"), value_name = "D", value_parser = parse_ms, default_value = "0ms", hide_short_help = $rare, help_heading = $engine)]
            pub prefill_ms_per_token: f64,
            /// Fixed prefill time per request (bare: ms)
            #[arg(long = concat!($prefix, "prefill-overhead-ms"), value_name = "D", value_parser = parse_ms, default_value = "0ms", hide_short_help = $rare, help_heading = $engine)]
            pub prefill_overhead_ms: f64,
            /// KV-cache blocks per replica (prefix cache); 0: none
            #[arg(long = concat!($prefix, "kv-cache-blocks"), value_name = "N", default_value_t = 0, hide_short_help = $rare, help_heading = $engine)]
            pub kv_cache_blocks: u32,
            /// Tokens per KV-cache block
            ///
            /// The simulator's token is a word of the prompt.
            #[arg(long = concat!($prefix, "block-size"), value_name = "B", default_value_t = 16, hide_short_help = $rare, help_heading = $engine)]
            pub block_size: u32,
            /// Share of requests with tools (tool_choice auto) answered with a tool call
            ///
            /// From 0 to 1; tool_choice required or a named tool always calls, none never.
            #[arg(long = concat!($prefix, "tool-call-rate"), value_name = "P", default_value_t = 0.0, hide_short_help = $rare, help_heading = $pace)]
            pub tool_call_rate: f64,
            /// Length of the vectors /v1/embeddings answers with
            #[arg(long = concat!($prefix, "embedding-dim"), value_name = "N", default_value_t = 1024, hide_short_help = $rare, help_heading = $pace)]
            pub embedding_dim: u32,
            /// Prompt tokens each image counts for
            ///
            /// 576: a ViT-L/14 at 336 px. Images are hashed, never decoded; identical ones
            /// hit the multimodal cache (vllm:mm_cache_hits).
            #[arg(long = concat!($prefix, "image-tokens"), value_name = "N", default_value_t = 576, hide_short_help = $rare, help_heading = $engine)]
            pub image_tokens: u32,
            /// Prompt tokens per second of audio
            ///
            /// 25: Qwen2-Audio's. The length comes from the WAV header.
            #[arg(long = concat!($prefix, "audio-tokens-per-s"), value_name = "N", default_value_t = 25, hide_short_help = $rare, help_heading = $engine)]
            pub audio_tokens_per_s: u32,
            /// Context window, tokens (vLLM's --max-model-len); 0: none
            ///
            /// Reported by /v1/models; a prompt plus max_tokens above it gets vLLM's 400.
            #[arg(long = concat!($prefix, "max-model-len"), value_name = "N", default_value_t = 0, hide_short_help = $rare, help_heading = $engine)]
            pub max_model_len: u32,
            /// Which of its stamps come from the kernel: rx, rx-tx or off
            ///
            /// rx: a request arrives at the kernel's receive stamp of its last segment; rx-tx:
            /// and a write leaves at its transmit stamp; off: the simulator's own clock only.
            #[arg(long = concat!($prefix, "kernel-stamps"), value_enum, value_name = "WHICH", hide_possible_values = true, default_value = "rx", hide_short_help = $rare, help_heading = $pace)]
            pub kernel_stamps: KernelStamps,
            /// Arrivals kept per simulator CPU for /sim/truth's statistics
            ///
            /// Rounded up to a power of two; 16 bytes each.
            #[arg(long = concat!($prefix, "arrivals-kept"), value_name = "N", default_value_t = 1 << 20, hide_short_help = $rare, help_heading = $pace)]
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
                    tool_call_rate: self.tool_call_rate,
                    embedding_dim: self.embedding_dim,
                    image_tokens: self.image_tokens,
                    audio_tokens_per_s: self.audio_tokens_per_s,
                    max_model_len: self.max_model_len,
                }
            }
        }
    };
}

sim_flags!(
    /// `ringbench sim`'s answering flags.
    SimFlags,
    "",
    "Answers",
    "Faults",
    "Engine model",
    false
);
sim_flags!(
    /// `ringbench run`'s flags for its built-in simulator (no `--url`).
    RunSimFlags,
    "sim-",
    super::heading::SIM,
    super::heading::SIM,
    super::heading::SIM,
    true
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
#[command(next_help_heading = "Listener")]
pub struct SimArgs {
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port; 0 picks a free one, named on stdout's first line
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// CPUs, one listener and engine replica each [default: the first]
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Model name of /v1/models and of the answers
    ///
    /// Also the model answered when a request names none.
    #[arg(long, value_name = "NAME", default_value = "ringbench-sim")]
    pub model: String,
    /// The listeners' I/O driver: auto, uring or epoll
    #[arg(
        long,
        value_enum,
        value_name = "DRIVER",
        hide_possible_values = true,
        default_value = "auto"
    )]
    pub io_driver: IoDriver,
    /// Seed of the fault draws
    ///
    /// Same seed, same faults on a one-CPU simulator.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_seed: u64,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) for --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Every D (1ms or more), the counters as a JSON line on stdout
    ///
    /// After the `listening on` line: {"mono_ns": N, "stats": {...}}. For outside tools that
    /// want the server's own count of what it received (tools/compare-peers).
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
