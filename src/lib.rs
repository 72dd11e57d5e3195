//! ringbench (being reshaped)

pub mod cli;
pub mod collector;
pub mod extract;
pub mod http;
pub mod output;
pub mod plan;
pub mod prepare;
pub mod record;
pub mod rt;
pub mod run;
pub mod schedule;
pub mod sim;
pub mod sse;
pub mod study;
pub mod summary;
pub mod worker;
