//! ringbench's integration tests, one binary: the library's public API, the built binary
//! (`CARGO_BIN_EXE_ringbench`) and the simulator, seen from outside the crate. What needs the
//! crate's internals is a unit test beside the code instead (`cargo test --lib`).
//!
//! Every module runs in this one process, two test threads at a time on a 2-core machine:
//! a test that starts a run, a simulator under load, the built binary, or anything timed
//! takes `support::common::lock()` first, so no timing assertion measures another test's
//! load. Pure parsing needs no lock.
//!
//! `parser_fixtures` installs this binary's global allocator (a thread-local allocation
//! counter, so parallel tests do not disturb its count).
//!
//! Run one module: `cargo test --release --test it e2e::`; the layout edges:
//! `cargo test --release --test it layout:: -- --nocapture`.

mod support;

mod apis;
mod cancel;
mod cli_gate;
mod compat;
mod contention;
mod conversations;
mod docs;
mod e2e;
mod endpoints;
mod engine;
mod faults;
mod help;
mod hf_datasets;
mod interrupt;
mod k8s;
mod layout;
mod live_metrics;
mod media;
mod multimodal;
mod network;
mod open_streams;
mod osl;
mod outputs;
mod parser_apis;
mod parser_fixtures;
mod progress;
mod prometheus;
mod records;
mod report_html;
mod request_ids;
mod rerun;
mod rx_timestamps;
mod scrape;
mod secrets;
mod served;
mod server_metrics;
mod sessions;
mod shape;
mod shards;
mod sim_apis;
mod sim_truth;
mod sim_wire;
mod stages;
mod sweep_cli;
mod sweep_search;
mod tls;
mod wait_ready;
mod workload;
