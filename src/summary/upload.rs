//! Part of the summary (a leaf): `summary.json`'s `upload` block — what the measured
//! successful requests carried to the server (body bytes, images, audio) and at what rate.
//! How long they took to leave is in `latency_ms.upload` (first to last byte of each
//! request) and `latency_ms.ttft_from_upload` (TTFT from the last byte; `ttft` is from the
//! first). Only data; the collector fills it, and `ringbench report` fills it again from
//! `requests.jsonl` through the same code.

use super::figure::figure_block;
use super::Stats;

figure_block! {
    /// `summary.json`'s `upload`: over the measured successful requests. Rates are over
    /// `duration_s`; a rate or mean that cannot be computed is `null`.
    pub struct Upload {
        /// Σ request body bytes (each request's `Content-Length`).
        body_bytes_total: u64 => "Request body bytes (total):",
        /// `body_bytes_total` / `duration_s`.
        body_bytes_per_s: Option<f64> => "Request body throughput (bytes/s):",
        /// Images the requests carried.
        images: u64 => "Images sent:",
        /// `images` / successful requests.
        images_per_request_mean: Option<f64> => "Images per request (mean):",
        /// `images` / `duration_s`.
        images_per_s: Option<f64> => "Images per second:",
        /// Audio the requests carried, milliseconds.
        audio_ms: u64 => "Audio sent (ms):",
        /// Audio seconds / successful requests.
        audio_s_per_request_mean: Option<f64> => "Audio seconds per request (mean):",
        /// Audio seconds / `duration_s`.
        audio_s_per_s: Option<f64> => "Audio seconds per second:",
    }
    other {
        /// Each request's body bytes (mean, p50, p99, …).
        body_bytes: Stats,
    }
}
