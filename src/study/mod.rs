//! Studies made of runs: `calibrate` (the client's own floor), `sweep` (a run per load point,
//! the curve, the knee), `search` (the highest load that meets the SLOs), `compare`.
pub(crate) mod analysis;
pub mod calibrate;
pub mod compare;
pub mod search;
pub mod slo;
pub mod sweep;
