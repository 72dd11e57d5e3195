//! ringbench: a load generator for LLM inference servers whose own added delay is measured
//! and reported on every run.
//!
//! The modules mirror the data flow, one way only:
//! `cli` → `plan` → `schedule` → `worker` (pacer, connections) → `http` (request bytes,
//! response head, body framing) → `sse` (event splitter) → `extract` (payload fields) →
//! `record` → `collector` → `summary` → `report`. `sim` is the null server the client is
//! checked against; `clock` is the one time line every stamp lives on.

pub mod calibrate;
pub mod catalog;
pub mod cli;
pub mod cli_sweep;
pub mod clock;
pub mod collector;
pub mod compare;
pub mod dataset;
pub mod export;
pub mod extract;
pub mod html;
pub mod http;
pub mod lengths;
pub mod lock;
pub mod netcount;
pub mod outfile;
pub mod plan;
pub mod plot;
pub mod record;
pub mod report;
pub mod run;
pub mod schedule;
pub mod sim;
pub mod sse;
pub mod summary;
pub mod sweep;
pub mod timer;
pub mod tls;
pub mod tokenizer;
pub mod trace;
pub mod worker;
pub mod workload;
pub mod workload_args;
