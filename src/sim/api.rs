//! Part of the simulator (a leaf of its folder): which API a request came in on, and the
//! stand-in words every generated token is. `request` (parsing), `engine` (the KV cache's
//! hashes) and `format` (the answers) read these; this file imports nothing of theirs, so
//! the simulator's files import one way. No I/O, no clock.

/// Which OpenAI endpoint a completion request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Completions,
    /// OpenAI's Responses API (`POST /v1/responses`, `apis.rs`).
    Responses,
    /// Anthropic's Messages API (`POST /v1/messages`, `apis.rs`).
    Messages,
}

impl Api {
    /// Its streams end with `data: [DONE]` (OpenAI chat and completions do; Responses and
    /// Messages end with their own closing events).
    pub(crate) fn done_marker(self) -> bool {
        matches!(self, Api::Chat | Api::Completions)
    }
}

/// Which pooling endpoint a request came in on (`pool.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pool {
    Embeddings,
    Rerank,
    Score,
}

/// Deterministic stand-in text: one short word per token.
pub(crate) const WORDS: [&str; 16] = [
    " lorem", " ipsum", " dolor", " sit", " amet", " sed", " do", " eius", " mod", " tempor",
    " in", " ut", " labore", " et", " magna", " aliqua",
];

/// Generated token `i`'s word, without its leading space (what the KV cache hashes).
pub(crate) fn word(i: u32) -> &'static [u8] {
    &WORDS[i as usize % WORDS.len()].as_bytes()[1..]
}
