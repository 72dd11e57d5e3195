//! Part of the summary (a leaf): the figures of the APIs beyond plain generation —
//! `summary.json`'s `tools` block (the tool calls the answers made) and `pooling` block (what
//! an embeddings, rerank or score run was answered). Only data; the collector fills them over
//! the measured successful requests, and `ringbench report` fills them again from
//! `requests.jsonl` through the same code.

use super::figure::figure_block;
use super::Stats;

figure_block! {
    /// `summary.json`'s `tools`: the tool calls of the measured successful responses. Present
    /// when the run offered tools (`--tools`) or any answer called one; `null` otherwise.
    pub struct ToolCalls {
        /// Measured successful responses.
        responses: u64 => "Responses:",
        /// Of them, those that made at least one tool call.
        with_calls: u64 => "Responses with a tool call:",
        /// `with_calls` / `responses`; `null` without responses.
        with_calls_fraction: Option<f64> => "Responses with a tool call (fraction):",
        /// Tool calls made, over every response.
        calls: u64 => "Tool calls:",
        /// `calls` / `responses`; `null` without responses.
        calls_per_response_mean: Option<f64> => "Tool calls per response (mean):",
        /// `calls` / `with_calls`: how many calls a response that called made; `null` when
        /// none did.
        calls_per_calling_response_mean: Option<f64> => "Tool calls per calling response (mean):",
    }
}

figure_block! {
    /// `summary.json`'s `pooling`: a run against a pooling endpoint (embeddings, rerank, score),
    /// whose answers are one JSON body each — no stream, so its latencies are the E2E kind
    /// only (`latency_ms.e2e`, `e2e_from_intent`, `ttfb`). Its rates are in `throughput`
    /// (`inputs_per_s`, `input_tokens_per_s`, `server_input_tokens_per_s`). `null` for a
    /// generating endpoint.
    pub struct Pooling {
        /// Σ items the measured successful answers held: embeddings, rerank results
        /// (documents scored), scores.
        inputs: u64 => "Inputs answered:",
        /// `inputs` / successful requests; `null` without one.
        inputs_per_request_mean: Option<f64> => "Inputs per request (mean):",
    }
    other {
        /// The endpoint (`embeddings`, `rerank`, `score`, `tei-rerank`).
        endpoint: String,
        /// Bytes read for each measured successful answer (head and body as received).
        response_bytes: Stats,
    }
}
