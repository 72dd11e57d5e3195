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

use crate::collector::replay::ReplayError;
use crate::summary::Summary;
use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};

/// One export format (`--export vllm,aiperf,csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportKind {
    Vllm,
    Aiperf,
    Csv,
}

pub const ALL: [ExportKind; 3] = [ExportKind::Vllm, ExportKind::Aiperf, ExportKind::Csv];

impl ExportKind {
    pub fn name(self) -> &'static str {
        match self {
            ExportKind::Vllm => "vllm",
            ExportKind::Aiperf => "aiperf",
            ExportKind::Csv => "csv",
        }
    }
}

/// `vllm,csv` → kinds; `all` or nothing → every kind; `none` → no export.
pub fn parse_list(items: &[String]) -> Result<Vec<ExportKind>, String> {
    let mut kinds = Vec::new();
    for item in items.iter().map(|s| s.trim().to_ascii_lowercase()) {
        match item.as_str() {
            "all" => kinds.extend(ALL),
            "none" => {}
            other => match ALL.into_iter().find(|k| k.name() == other) {
                Some(k) => kinds.push(k),
                None => {
                    return Err(format!(
                        "--export: unknown format '{other}' (use vllm, aiperf, csv, all or none)"
                    ))
                }
            },
        }
    }
    kinds.dedup();
    Ok(kinds)
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Records(#[from] ReplayError),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

pub(crate) fn write_err(path: &Path) -> impl FnOnce(io::Error) -> ExportError + '_ {
    move |source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the chosen exports of the run whose records are in `records_dir` into `out`.
pub fn write_all(
    out: &Path,
    records_dir: &Path,
    summary: &Summary,
    kinds: &[ExportKind],
) -> Result<(), ExportError> {
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
