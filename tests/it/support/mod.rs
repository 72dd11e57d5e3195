//! Test support for the modules of `tests/it`, outside the flow: it may only call the
//! library's public API and the built binary, and holds no assertion about what they produce.
//! `common` is the lock, folders, plans, the binary and the JSON readers; `gpt2` writes GPT-2's
//! vocabulary as a `tokenizer.json` (the crate's own unit tests include the same file, see
//! `src/run/testkit.rs`); `wire` is the parser tests' captures, parses and ways of cutting; `relay` a delay relay
//! between client and server (issue 40), `netns` a packet-level delay between two network
//! namespaces (issue 40).

pub mod common;
pub mod gpt2;
pub mod netns;
pub mod parquet;
pub mod relay;
pub mod trace;
pub mod wire;
