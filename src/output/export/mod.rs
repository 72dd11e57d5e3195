//! After the summary (… → collector → summary → report → **export**): the same run in other
//! tools' file formats, so that dashboards and scripts built for them read ringbench runs
//! unchanged — vLLM's `--save-result` JSON (`vllm_result.json`), AIPerf's
//! `profile_export_aiperf.json` and `profile_export.jsonl`, and `summary.csv`. Each
//! exporter computes its figures the way that tool defines them (`collector::definitions`)
//! from `requests.jsonl`, streamed one record at a time (several passes rather than lists in
//! memory). Written by `run --out` and `report --out`; never prints.

pub mod aiperf;
pub mod csv;
pub mod vllm;

use super::{write_err, WriteError};
use crate::plan::ExportKind;
use crate::summary::Summary;
use std::path::Path;

/// Writes the chosen exports of the run whose records are in `records_dir` into `out`.
pub fn write_all(
    out: &Path,
    records_dir: &Path,
    summary: &Summary,
    kinds: &[ExportKind],
) -> Result<(), WriteError> {
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    for kind in kinds {
        match kind {
            ExportKind::Vllm => vllm::write(out, records_dir, summary)?,
            ExportKind::Aiperf => aiperf::write(out, records_dir, summary)?,
            ExportKind::Csv => csv::write(out, summary)?,
        }
    }
    Ok(())
}
