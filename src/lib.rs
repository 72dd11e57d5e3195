//! ringbench: a load generator for LLM inference servers whose own added delay is measured
//! and reported on every run.
//!
//! A run is a [`Plan`] in and a [`Summary`] out:
//!
//! ```no_run
//! let mut plan = ringbench::Plan::defaults(); // the built-in simulator, one user, 100 requests
//! plan.stop.request_count = Some(200);
//! let summary = ringbench::run(&plan).expect("the run ran");
//! println!("TTFT p99 {:?} ms", summary.latency_ms.ttft.p99);
//! ```
//!
//! [`run_with`] takes an interrupt flag and an [`Observer`], called on the calling thread with
//! each [`Record`] as it is collected and a progress snapshot about once a second. `examples/`
//! has a program that embeds a run against the in-process simulator.
//!
//! The modules follow the flow, one way only (`tests/it/layout.rs` holds them to it):
//! `plan` (what to run) → `schedule` (when each request is due) → the workers (pinned
//! threads, one io_uring runtime each) → `http` (response head, chunked body) → `sse` (events)
//! → `extract` (payload fields) → `record` (what one request leaves) → the collector
//! (histograms, counters) → `summary` (the result) → `output` (console, files, exports).
//! `sim` is the simulator the client is measured against, `scrape` the server's own metrics
//! read beside a run, `study` the studies made of runs (calibrate, sweep, search, compare).
//! `schedule`, `http`, `sse`, `extract` and `scrape` are the crate's own (not public), as is
//! what is not listed here.
//!
//! Features (all on by default): `cli` (the `ringbench` binary and its flags), `plot`
//! (`report.html`'s plots), `tokenizer` (`--tokenizer` exact lengths), `tls` (`https://`).

#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod plan;
pub mod summary;

pub(crate) mod rt;

pub mod record;

pub(crate) mod sse;

pub(crate) mod extract;

pub(crate) mod http;

pub(crate) mod prepare;

pub(crate) mod schedule;

pub mod sim;

pub(crate) mod worker;

pub(crate) mod collector;

pub mod output;

pub mod run;

/// The server's side: its Prometheus `/metrics`, scraped beside the run on a thread of its own,
/// mapped to common concepts (running, waiting, KV-cache usage, server-side TTFT, …) and
/// summarized over the measured window.
pub(crate) mod scrape;

pub mod study;

pub use collector::LiveCounts;
pub use plan::{Plan, PlanError};
pub use prepare::WorkloadError;
pub use record::Record;
pub use run::{run, run_with, Observer, RunError};
pub use summary::{Exit, Summary};

/// Facts about this machine that the defaults are made of, and the process limits a run
/// raises.
pub mod host {
    pub use crate::rt::clock::{mono_ns, rfc3339, rfc3339_now};
    pub use crate::rt::cpu::{
        auto_worker_cpus, default_sim_cpus, default_worker_cpus, online_cpus,
    };
    pub use crate::rt::driver::uring_available;
    pub use crate::rt::fd::raise_fd_limit;
}

/// `ringbench report DIR`: a run's summary again from its records alone, with other
/// percentiles, other SLOs, or other tools' definitions of the same figures.
pub mod report {
    pub use crate::collector::definitions::{Definitions, ToolFigures};
    pub use crate::collector::merge::{merge, MergeError, MergeOptions};
    pub use crate::collector::replay::{
        definitions, read_records, recompute, recompute_to, Overrides, ReplayError,
    };
    pub use crate::collector::settings::SettingsError;
}

/// Internals that ringbench's own benches and fuzz targets drive. Not part of the API: they
/// change with the code, without notice.
#[doc(hidden)]
pub mod __private {
    /// The stages below the run, as the crate has them: `http` (response parser, chunked
    /// decoder, TLS configs, the blocking client), `sse`, `extract`, `schedule`, `scrape`.
    pub mod http {
        pub use crate::http::*;
    }
    #[allow(missing_docs)]
    pub mod sse {
        pub use crate::sse::*;
    }
    #[allow(missing_docs)]
    pub mod extract {
        pub use crate::extract::*;
    }
    #[allow(missing_docs)]
    pub mod schedule {
        pub use crate::schedule::*;
    }
    #[allow(missing_docs)]
    pub mod scrape {
        pub use crate::scrape::*;
    }
    /// The `--metrics-listen` page's families and bucket bounds, for the tests that check
    /// the docs and the Grafana dashboard against them.
    pub mod exposition {
        pub use crate::collector::exposition::{Kind, LiveMetric, BUCKET_BOUNDS_NS};
    }
    pub use crate::collector::merge::shift_run;
    pub use crate::collector::Collector;
    pub use crate::record::jsonl::format_line;
    pub use crate::rt::clock::mono_ns;
    pub use crate::rt::driver::{block_on, Ring};
    pub use crate::rt::timer::Timer;
}
