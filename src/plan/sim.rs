//! Part of the plan (a leaf: it imports nothing of the flow): the settings of the simulator,
//! one type for `ringbench sim`, `run --sim-*` and `calibrate`, and the faults it can inject.
//! The simulator itself (`crate::sim`) turns them into its running form.

use serde::{Deserialize, Serialize};

/// What a faulted request or connection does instead of a normal answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Accepted connection reset at once (`SO_LINGER 0`), before a byte is read: the closest
    /// a listening server can come to refusing (a kernel-level refusal needs no listener).
    Refuse,
    /// Request read, then the connection reset with no response byte.
    ResetBeforeHead,
    /// Head and two events sent, then the connection reset.
    ResetMidStream,
    /// Request read, then HTTP 500 with an OpenAI-style error body.
    Http500,
    /// With `Retry-After`.
    Http503,
    /// With `Retry-After`.
    Http429,
    /// HTTP 200, two events, then `data: {"error": ...}` (half the time followed by `[DONE]`);
    /// in a Responses stream an `error` or (half the time) `response.failed` event, in a
    /// Messages stream Anthropic's `event: error`, each ending the stream.
    ErrorEvent,
    /// No byte for the stall time before the head; then the normal answer.
    StallHead,
    /// Head and two events, then no byte for the stall time, then the connection closed.
    StallMid,
    /// One event whose JSON does not parse.
    BadJson,
    /// A chunk that declares more bytes than it carries, then the connection closed.
    TruncatedChunk,
    /// One event with invalid UTF-8 inside a JSON string.
    BadUtf8,
    /// One event larger than the client's event bound (2 MiB against the default 1 MiB).
    OversizedEvent,
    /// The head trickled out in pieces over the slow-head time; then the normal answer.
    SlowHead,
    /// The normal answer, then the connection closed although the head said keep-alive
    /// (what llama.cpp does): a client must reconnect without counting a failure.
    CloseAfterResponse,
    /// Request read, then HTTP 200 with an HTML page instead of an answer (a proxy's error
    /// or login page in front of the server).
    Html200,
    /// Head sent, then one byte every 10 ms for ever (an SSE comment, one byte a chunk): a
    /// response that never ends, until the client gives up.
    Dribble,
    /// The request's head and about half its body read, then nothing more read and nothing
    /// answered until the client gives up (a server stuck mid-upload). Drawn when the head
    /// arrives without the whole body; a body that comes whole with its head is served.
    StopReading,
}

const ALL: [(FaultKind, &str); 18] = [
    (FaultKind::Refuse, "refuse"),
    (FaultKind::ResetBeforeHead, "reset_before_head"),
    (FaultKind::ResetMidStream, "reset_mid_stream"),
    (FaultKind::Http500, "http_500"),
    (FaultKind::Http503, "http_503"),
    (FaultKind::Http429, "http_429"),
    (FaultKind::ErrorEvent, "error_event"),
    (FaultKind::StallHead, "stall_head"),
    (FaultKind::StallMid, "stall_mid"),
    (FaultKind::BadJson, "bad_json"),
    (FaultKind::TruncatedChunk, "truncated_chunk"),
    (FaultKind::BadUtf8, "bad_utf8"),
    (FaultKind::OversizedEvent, "oversized_event"),
    (FaultKind::SlowHead, "slow_head"),
    (FaultKind::CloseAfterResponse, "close_after_response"),
    (FaultKind::Html200, "html_200"),
    (FaultKind::Dribble, "dribble"),
    (FaultKind::StopReading, "stop_reading"),
];

impl FaultKind {
    /// Its `--fault` name (`reset_mid_stream`, `http_503`, …).
    pub fn name(self) -> &'static str {
        ALL.iter().find(|(k, _)| *k == self).map_or("?", |(_, n)| n)
    }

    /// Every kind, in declaration order.
    pub fn all() -> impl Iterator<Item = FaultKind> {
        ALL.iter().map(|(k, _)| *k)
    }

    fn from_name(s: &str) -> Option<FaultKind> {
        ALL.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
    }

    /// Drawn per accepted connection rather than per request.
    pub fn per_connection(self) -> bool {
        self == FaultKind::Refuse
    }
}

/// One `--fault KIND:PROB`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// What the fault does.
    pub kind: FaultKind,
    /// Probability per request (per connection for `refuse`), in [0, 1].
    pub prob: f64,
}

impl std::str::FromStr for FaultSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let names = || ALL.map(|(_, n)| n).join(", ");
        let (k, p) = s.split_once(':').ok_or_else(|| {
            format!("--fault '{s}': expected KIND:PROB, like reset_mid_stream:0.1")
        })?;
        let kind = FaultKind::from_name(k.trim())
            .ok_or_else(|| format!("--fault '{s}': unknown kind '{k}' (kinds: {})", names()))?;
        let prob: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("--fault '{s}': '{p}' is not a probability (like 0.05)"))?;
        if !(0.0..=1.0).contains(&prob) {
            return Err(format!("--fault '{s}': the probability must be in [0, 1]"));
        }
        Ok(FaultSpec { kind, prob })
    }
}

/// Checks a whole `--fault` list: each kind once, per-request probabilities summing to ≤ 1
/// (one uniform draw picks at most one fault).
pub fn check_faults(faults: &[FaultSpec]) -> Result<(), String> {
    for (i, f) in faults.iter().enumerate() {
        if faults[..i].iter().any(|g| g.kind == f.kind) {
            return Err(format!("--fault {}: given twice", f.kind.name()));
        }
    }
    let sum: f64 = faults
        .iter()
        .filter(|f| !f.kind.per_connection())
        .map(|f| f.prob)
        .sum();
    if sum > 1.0 + 1e-9 {
        return Err(format!(
            "--fault: per-request probabilities sum to {sum} (must be ≤ 1; refuse is per connection)"
        ));
    }
    Ok(())
}

/// How faults are drawn and timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultConfig {
    /// Each kind at most once, with its probability.
    pub faults: Vec<FaultSpec>,
    /// Seeds the fault draws, with each listener thread's index (`ringbench sim --fault-seed`; a
    /// run's `--seed`).
    pub seed: u64,
    /// How long `stall_head` and `stall_mid` send nothing.
    pub stall_ms: u64,
    /// How long `slow_head` takes to trickle the head out.
    pub slow_head_ms: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            faults: vec![],
            seed: 0,
            stall_ms: 5_000,
            slow_head_ms: 200,
        }
    }
}

/// How the simulator answers: the one settings type behind `ringbench sim`'s flags, `run
/// --sim-*` (the in-process simulator a run without `--url` starts) and `calibrate`. Every
/// delay is off (0) by default, so the simulator costs nothing it was not asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimSettings {
    /// Delay from a request's arrival to its first token, ms.
    pub ttft_ms: f64,
    /// Delay between events after the first, ms (one event per `itl_ms`, whatever
    /// `tokens_per_chunk` is).
    pub itl_ms: f64,
    /// Tokens carried by one content event (at least 1).
    pub tokens_per_chunk: u32,
    /// One listener thread per CPU, pinned to it; empty: one unpinned thread.
    pub cpus: Vec<usize>,
    /// Faults injected (`--fault` / `--sim-fault`), none by default.
    pub faults: FaultConfig,
    /// Load model (0 = off): extra TTFT ms per other request in flight.
    pub ttft_per_inflight_ms: f64,
    /// Load model (0 = off): extra ITL ms per other request in flight.
    pub itl_per_inflight_ms: f64,
    /// Served by `/v1/models` and echoed when a request names none.
    pub model: String,
    /// Engine model: running-sequence slots per simulator CPU (each CPU is one engine
    /// replica); a request beyond them waits in a FIFO queue. 0 = no limit (off).
    pub max_num_seqs: u32,
    /// Engine model: longest waiting queue per replica; a request beyond it is answered
    /// HTTP 429. 0 = no limit (the queue is still bounded by the open connections).
    pub max_waiting: u32,
    /// Engine model: prefill time per prompt token not served from the KV cache, ms.
    pub prefill_ms_per_token: f64,
    /// Engine model: fixed prefill time per request, ms.
    pub prefill_overhead_ms: f64,
    /// Engine model: KV-cache blocks per replica; 0 = no cache (off). A request holds the
    /// blocks of its prompt and `max_tokens` while it runs; full blocks are kept, hashed,
    /// for later prefix hits until evicted (least recently used first).
    pub kv_cache_blocks: u32,
    /// Engine model: tokens per KV-cache block (vLLM's default 16).
    pub block_size: u32,
    /// Whose wire format and `/metrics` names the simulator copies.
    pub flavor: Flavor,
    /// Of each chat reply's tokens, how many come first as reasoning (vLLM's
    /// `delta.reasoning`, llama.cpp's `delta.reasoning_content`); at most `max_tokens`.
    /// 0 = none. Completions have no reasoning field and ignore it.
    pub reasoning_tokens: u32,
    /// Every response carries `x-request-id`: the request's own, or one the simulator makes
    /// when it sent none (vLLM's `--enable-request-id-headers`).
    pub request_id_headers: bool,
    /// Which of its own stamps the simulator takes from the kernel (`--kernel-stamps`): the
    /// receive stamp of each request's last segment, and the transmit stamp of each write.
    pub kernel_stamps: KernelStamps,
    /// Arrivals each listener thread keeps for the arrival statistics (`--arrivals-kept`),
    /// rounded up to a power of two: 16 bytes each, in memory touched only as it fills. A
    /// window with more arrivals is summarized over the newest, and the rest counted.
    pub arrivals_kept: u32,
    /// Of the chat, Responses and Messages requests that carry `tools` with `tool_choice`
    /// `auto` (or none), the share answered with a tool call, in [0, 1]; drawn per request,
    /// deterministically from the seed and the request. `required` or a named tool always
    /// calls; `none` never does.
    pub tool_call_rate: f64,
    /// Length of the vectors `POST /v1/embeddings` answers with.
    pub embedding_dim: u32,
    /// Prompt tokens each image of a request counts for (prefill cost and usage): 576, a
    /// ViT-L/14 at 336 px (LLaVA-1.5's 24 × 24 patches). The image is never decoded.
    pub image_tokens: u32,
    /// Prompt tokens per second of audio: 25, Qwen2-Audio's (Whisper's 100 mel frames a
    /// second, halved by its encoder's stride and again by its pooling, as vLLM counts them).
    /// A WAV's length comes from its header.
    pub audio_tokens_per_s: u32,
    /// The model's context window, tokens, as vLLM's `--max-model-len`: `/v1/models` reports
    /// it as `max_model_len`, and a request whose prompt (images and audio included) plus
    /// `max_tokens` exceeds it is refused with vLLM's 400 ("This model's maximum context
    /// length is N tokens. …"). 0: no limit, and none reported.
    pub max_model_len: u32,
}

/// Largest context window the simulator may be given, tokens.
pub const MAX_MODEL_LEN: u32 = 1 << 30;

/// Most prompt tokens one image may count for.
pub const MAX_IMAGE_TOKENS: u32 = 1 << 16;

/// Longest embedding vector the simulator makes.
pub const MAX_EMBEDDING_DIM: u32 = 1 << 16;

/// The response header that carries the simulator's write stamp (`ringbench_ns`, its
/// monotonic clock's nanoseconds) on an answer whose shape has no room for it in the body:
/// TEI's bare-array `/rerank`. Header names are case-insensitive.
pub const STAMP_HEADER: &str = "x-ringbench-ns";

/// Most arrivals a listener thread may keep (256 MiB of stamps).
pub const MAX_ARRIVALS_KEPT: u32 = 1 << 24;

/// Which socket stamps the simulator asks the kernel for (`--kernel-stamps`); what they start
/// and end is in `crate::sim`'s truth. Plain `http://` only: TLS connections are never
/// stamped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum KernelStamps {
    /// Its own clock only: a request arrives when its read returns, a write leaves when it
    /// returns.
    Off,
    /// Requests arrive at the kernel's receive stamp of their last segment; writes leave
    /// when they return.
    #[default]
    Rx,
    /// And writes leave at the kernel's transmit stamp of their last byte.
    RxTx,
}

impl KernelStamps {
    /// Receive stamps are asked for.
    pub fn rx(self) -> bool {
        self != KernelStamps::Off
    }

    /// Transmit stamps are asked for.
    pub fn tx(self) -> bool {
        self == KernelStamps::RxTx
    }
}

/// The engine whose wire format the simulator copies (`--flavor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Flavor {
    /// vLLM's OpenAI server (`fixtures/sse/vllm-cpu`), `vllm:` metrics.
    #[default]
    Vllm,
    /// llama.cpp's `llama-server`: null role content, finish in its own event, a close after
    /// every response, `llamacpp:` metrics.
    LlamaCpp,
}

/// Most KV-cache blocks one replica may have (each costs the simulator 24 bytes).
pub const MAX_KV_BLOCKS: u32 = 1 << 22;
/// Most running slots or waiting places one replica may have.
pub const MAX_SEQS: u32 = 1 << 20;
/// Largest KV-cache block, tokens.
pub const MAX_BLOCK_SIZE: u32 = 1 << 12;

/// Longest delay any setting may ask for: one hour bounds every deadline far below u64
/// overflow in nanoseconds, whatever `max_tokens` is.
pub const MAX_DELAY_MS: f64 = 3_600_000.0;

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            ttft_ms: 0.0,
            itl_ms: 0.0,
            tokens_per_chunk: 1,
            cpus: vec![],
            faults: FaultConfig::default(),
            ttft_per_inflight_ms: 0.0,
            itl_per_inflight_ms: 0.0,
            model: "ringbench-sim".into(),
            max_num_seqs: 0,
            max_waiting: 0,
            prefill_ms_per_token: 0.0,
            prefill_overhead_ms: 0.0,
            kv_cache_blocks: 0,
            block_size: 16,
            flavor: Flavor::Vllm,
            reasoning_tokens: 0,
            request_id_headers: false,
            kernel_stamps: KernelStamps::default(),
            arrivals_kept: 1 << 20,
            tool_call_rate: 0.0,
            embedding_dim: 1024,
            image_tokens: 576,
            audio_tokens_per_s: 25,
            max_model_len: 0,
        }
    }
}

impl SimSettings {
    /// Every rule the settings must meet, checked once (the simulator refuses what fails):
    /// delays in [0, `MAX_DELAY_MS`], at least one token per chunk, faults each named once
    /// with probabilities summing to at most 1. `prefix` is how the flags are spelled where
    /// the settings came from (`--` for `ringbench sim`, `--sim-` for `run`), so the message
    /// names the flag to fix.
    pub fn validate(&self, prefix: &str) -> Result<(), String> {
        let delays = [
            ("ttft-ms", self.ttft_ms),
            ("itl-ms", self.itl_ms),
            ("ttft-per-inflight-ms", self.ttft_per_inflight_ms),
            ("itl-per-inflight-ms", self.itl_per_inflight_ms),
            ("prefill-ms-per-token", self.prefill_ms_per_token),
            ("prefill-overhead-ms", self.prefill_overhead_ms),
        ];
        for (name, ms) in delays {
            if !(0.0..=MAX_DELAY_MS).contains(&ms) {
                return Err(format!(
                    "{prefix}{name} {ms}: must be a number of ms from 0 to {MAX_DELAY_MS}"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.tool_call_rate) {
            return Err(format!(
                "{prefix}tool-call-rate {}: must be a probability from 0 to 1 (like 0.25)",
                self.tool_call_rate
            ));
        }
        if self.tokens_per_chunk == 0 {
            return Err(format!("{prefix}tokens-per-chunk 0: must be at least 1"));
        }
        let counts = [
            ("max-num-seqs", self.max_num_seqs, 0, MAX_SEQS),
            ("max-waiting", self.max_waiting, 0, MAX_SEQS),
            ("kv-cache-blocks", self.kv_cache_blocks, 0, MAX_KV_BLOCKS),
            ("block-size", self.block_size, 1, MAX_BLOCK_SIZE),
            ("arrivals-kept", self.arrivals_kept, 2, MAX_ARRIVALS_KEPT),
            ("embedding-dim", self.embedding_dim, 1, MAX_EMBEDDING_DIM),
            ("image-tokens", self.image_tokens, 0, MAX_IMAGE_TOKENS),
            (
                "audio-tokens-per-s",
                self.audio_tokens_per_s,
                0,
                MAX_IMAGE_TOKENS,
            ),
            ("max-model-len", self.max_model_len, 0, MAX_MODEL_LEN),
        ];
        for (name, n, low, high) in counts {
            if !(low..=high).contains(&n) {
                return Err(format!("{prefix}{name} {n}: must be from {low} to {high}"));
            }
        }
        if self.max_waiting > 0 && self.max_num_seqs == 0 && self.kv_cache_blocks == 0 {
            return Err(format!(
                "{prefix}max-waiting {}: nothing waits without {prefix}max-num-seqs or \
                 {prefix}kv-cache-blocks; give one of them",
                self.max_waiting
            ));
        }
        check_faults(&self.faults.faults)
            .map_err(|e| e.replace("--fault", &format!("{prefix}fault")))
    }
}

impl SimSettings {
    /// Whether any part of the engine model is on (slots, a queue bound, prefill cost or the
    /// KV cache); with none, a request is answered at arrival + `ttft_ms` as before.
    pub fn engine_on(&self) -> bool {
        self.max_num_seqs > 0
            || self.kv_cache_blocks > 0
            || self.prefill_ms_per_token > 0.0
            || self.prefill_overhead_ms > 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_by_its_name() {
        for k in FaultKind::all() {
            let spec: FaultSpec = format!("{}:0.25", k.name()).parse().unwrap();
            assert_eq!(
                spec,
                FaultSpec {
                    kind: k,
                    prob: 0.25
                }
            );
        }
        assert!("http_500"
            .parse::<FaultSpec>()
            .unwrap_err()
            .contains("KIND:PROB"));
        assert!("nope:0.1"
            .parse::<FaultSpec>()
            .unwrap_err()
            .contains("unknown kind"));
        assert!("http_500:1.5"
            .parse::<FaultSpec>()
            .unwrap_err()
            .contains("[0, 1]"));
        assert!("http_500:NaN".parse::<FaultSpec>().is_err());
    }

    #[test]
    fn tool_rate_and_embedding_dim_are_checked_by_their_flag() {
        let ok = SimSettings::default();
        assert_eq!(ok.validate("--"), Ok(()));
        for rate in [-0.1, 1.5, f64::NAN] {
            let s = SimSettings {
                tool_call_rate: rate,
                ..SimSettings::default()
            };
            assert!(s
                .validate("--sim-")
                .unwrap_err()
                .starts_with("--sim-tool-call-rate"));
        }
        for dim in [0, MAX_EMBEDDING_DIM + 1] {
            let s = SimSettings {
                embedding_dim: dim,
                ..SimSettings::default()
            };
            assert!(s.validate("--").unwrap_err().starts_with("--embedding-dim"));
        }
    }
}
