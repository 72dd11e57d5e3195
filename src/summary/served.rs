//! Part of the summary (a leaf): `summary.json`'s `served`, what the server said about itself
//! before the run — the model the requests named and where that name came from, its context
//! window, and its version. Types only; asking is `run`'s, and nothing here prints.

use serde::{Deserialize, Serialize};

/// Where a fact about the server came from: the plan, or the route that answered it.
pub mod from {
    /// `--model` named it.
    pub const PLAN: &str = "--model";
    /// vLLM's (and every OpenAI-compatible server's) model list.
    pub const MODELS: &str = "/v1/models";
    /// vLLM's version route.
    pub const VERSION: &str = "/version";
    /// llama.cpp's properties (`build_info`, `default_generation_settings.n_ctx`).
    pub const PROPS: &str = "/props";
}

/// What the (first) server said about itself before anything was sent. Every field but the
/// model is best effort: a server that does not say is `null`, never an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Served {
    /// The model every request named.
    pub model: String,
    /// Where that name came from (`from::PLAN` or `from::MODELS`).
    pub model_from: String,
    /// The context window, tokens: vLLM's `max_model_len` (`/v1/models`), or llama.cpp's
    /// context per slot (`/props`' `default_generation_settings.n_ctx`).
    pub max_model_len: Option<u64>,
    /// Which route told `max_model_len`.
    pub max_model_len_from: Option<String>,
    /// The server's version: vLLM's `/version`, llama.cpp's `build_info` (`/props`).
    pub version: Option<String>,
    /// Which route told `version`.
    pub version_from: Option<String>,
    /// Conversations were capped to `max_model_len`: a session whose next prompt plus its
    /// `max_tokens` would not fit ended before it (counted in `sessions`' ends as `context`)
    /// instead of being refused by the server.
    pub sessions_capped: bool,
}
