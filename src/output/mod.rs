//! The end of the flow (… → collector → summary → **output**): what people and programs read,
//! and the only library code that renders text. It computes no figure: everything it shows is
//! in a `Summary` (or a study's result) already.
//!
//! - `console`: the run's report block (vLLM's layout), the progress line, other tools'
//!   definitions side by side, the calibration;
//! - `console_study`: what sweeps, searches and comparisons print;
//! - `export`: the run in vLLM's, AIPerf's and CSV form;
//! - `html`, `html_context`, `plot`, `chart` and `draw`: `report.html` with its context and
//!   charts (`plot` makes them, `draw` renders them);
//! - `study`: a sweep's and a search's files.

mod chart;
pub mod console;
mod console_net;
mod console_rows;
mod console_server;
pub mod console_study;
mod console_users;
#[cfg(feature = "plot")]
mod draw;
pub mod export;
pub mod html;
mod html_context;
pub mod plot;
pub mod study;

use crate::collector::replay::ReplayError;
use crate::plan::ExportKind;
use crate::summary::Summary;
use std::io;
use std::path::{Path, PathBuf};

/// A file of the results that could not be written (the run's figures are in the `Summary`
/// returned beside it in the caller's hands).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The run's records could not be read back for an export that needs them.
    #[error(transparent)]
    Records(#[from] ReplayError),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error writing it.
        source: io::Error,
    },
}

pub(crate) fn write_err(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |source| WriteError::Write {
        path: path.to_path_buf(),
        source,
    }
}

pub use crate::rt::file::write_json;

/// `summary.json` and the chosen exports in `out`, computed from the records in
/// `records_dir` (a run's own folder, or another for `report --out`).
pub fn write_summary_and_exports(
    out: &Path,
    records_dir: &Path,
    summary: &Summary,
    exports: &[ExportKind],
) -> Result<(), WriteError> {
    console::write_summary_json(out, summary)
        .map_err(write_err(&out.join(console::SUMMARY_FILE)))?;
    export::write_all(out, records_dir, summary, exports)
}

/// `write_run`, with vLLM's `--save-result` file when `vllm_result` asks for it: the
/// exports and `report.html`'s charts from one read of `requests.jsonl`.
pub fn write_run_with(
    dir: &Path,
    summary: &Summary,
    exports: &[ExportKind],
    vllm_result: Option<&crate::plan::VllmResult>,
) -> Result<(), WriteError> {
    console::write_summary_json(dir, summary)
        .map_err(write_err(&dir.join(console::SUMMARY_FILE)))?;
    let records = export::write_files(dir, dir, summary, exports, vllm_result, true)?;
    html::write_run_report_from(dir, summary, records.as_ref())
        .map_err(write_err(&dir.join("report.html")))?;
    Ok(())
}

/// A sweep's files in `dir`: `sweep.json`, `sweep.csv` and `report.html` with its plots;
/// returns the report's path.
pub fn write_sweep(dir: &Path, sweep: &crate::summary::study::Sweep) -> io::Result<PathBuf> {
    study::write_sweep(dir, sweep)?;
    html::write_sweep_report(dir, sweep)
}

/// Every file a finished run leaves in `dir` beside its `requests.jsonl` and `run.json`:
/// `summary.json`, the chosen exports, and `report.html` with `plots/`. The same for `ringbench
/// run --out` and a library run with `Plan::out_dir`.
pub fn write_run(dir: &Path, summary: &Summary, exports: &[ExportKind]) -> Result<(), WriteError> {
    write_run_with(dir, summary, exports, None)
}
