//! Part of the summary (… → collector → **summary** → report): `summary.json`'s `errors`,
//! the run's failures grouped by kind, status and the server's message, most frequent first,
//! and the rule that reads a context-length refusal out of a group. Types and reading rules
//! only: the grouping is the collector's (`collector::errors`); never prints.

use serde::{Deserialize, Serialize};

/// Groups `errors` keeps: the most frequent.
pub const MAX_ERROR_GROUPS: usize = 10;

/// One group of measured failures with the same kind, status and message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorGroup {
    /// `counts.failed_by_kind`'s key: `http_400`, `malformed`, `error_event`, `timeout`, …
    pub kind: String,
    /// The response's HTTP status; `null` when no head arrived.
    pub status: Option<u16>,
    /// The server's message (`record::failure::Failure::message`: a JSON error's message, an
    /// HTML page's title, else the body's text; trimmed, white space collapsed, numbers
    /// kept); `null` when the response said nothing (no body, no response).
    pub message: Option<String>,
    /// Measured failures in the group.
    pub count: u64,
}

/// Substrings (lower case) of the messages servers refuse an over-long prompt with: vLLM
/// (`serving_engine.py`: "This model's maximum context length is N tokens. However, you
/// requested …"), llama.cpp (`server`: "the request exceeds the available context size, try
/// increasing it"), SGLang and OpenAI (`context_length_exceeded`, "… longer than the
/// model's context length …").
const CONTEXT_PHRASES: [&str; 4] = [
    "maximum context length",
    "exceeds the available context size",
    "context_length_exceeded",
    "context length",
];

impl ErrorGroup {
    /// The server refused the prompt as longer than its context window (a 400 or 413 whose
    /// message says so).
    pub fn is_context_overflow(&self) -> bool {
        let Some(m) = &self.message else {
            return false;
        };
        let m = m.to_ascii_lowercase();
        matches!(self.status, Some(400 | 413)) && CONTEXT_PHRASES.iter().any(|p| m.contains(p))
    }

    /// The context window the message names, tokens (vLLM's "maximum context length is N
    /// tokens"; llama.cpp's `n_ctx` field, when it is in the kept bytes).
    pub fn context_tokens(&self) -> Option<u64> {
        let m = self.message.as_deref()?.to_ascii_lowercase();
        [
            "maximum context length is ",
            "n_ctx\":",
            "n_ctx = ",
            "n_ctx: ",
        ]
        .iter()
        .find_map(|p| {
            let rest = &m[m.find(p)? + p.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(status: u16, message: &str) -> ErrorGroup {
        ErrorGroup {
            kind: format!("http_{status}"),
            status: Some(status),
            message: Some(message.to_string()),
            count: 1,
        }
    }

    #[test]
    fn context_refusals_of_vllm_and_llama_cpp_are_recognised() {
        let vllm = group(
            400,
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (1900 in the messages, 200 in the completion). Please reduce the length of the messages or completion.",
        );
        assert!(vllm.is_context_overflow());
        assert_eq!(vllm.context_tokens(), Some(2048));
        let llama = group(
            400,
            "the request exceeds the available context size, try increasing it",
        );
        assert!(llama.is_context_overflow());
        assert_eq!(llama.context_tokens(), None);
        assert!(!group(500, "maximum context length is 2048 tokens").is_context_overflow());
        assert!(!group(400, "invalid temperature").is_context_overflow());
        let none = ErrorGroup {
            message: None,
            ..group(400, "")
        };
        assert!(!none.is_context_overflow());
    }
}
