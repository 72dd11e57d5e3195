//! After the summary (… → collector → summary → report → **export**): the same run in other
//! tools' file formats, so that dashboards and scripts built for them read ringbench runs
//! unchanged — vLLM's `--save-result` JSON (`vllm_result.json`), AIPerf's
//! `profile_export_aiperf.json` and `profile_export.jsonl`, and `summary.csv`. Each
//! exporter computes its figures the way that tool defines them (`collector::definitions`)
//! from `requests.jsonl`, streamed one record at a time: one read feeds every exporter and
//! `report.html`'s charts (`write_files`), per-request lists are spooled to files rather than
//! kept in memory, and only vLLM's per-second peaks read the file a second time (their
//! seconds start at a send the whole file tells). Written by `run --out` and `report --out`;
//! never prints.

pub mod aiperf;
pub mod csv;
pub mod vllm;

use super::plot::RunRecords;
use super::{write_err, WriteError};
use crate::collector::replay::read_records;
use crate::plan::{ExportKind, VllmResult};
use crate::summary::Summary;
use std::path::Path;

/// Writes the chosen exports of the run whose records are in `records_dir` into `out`.
pub fn write_all(
    out: &Path,
    records_dir: &Path,
    summary: &Summary,
    kinds: &[ExportKind],
) -> Result<(), WriteError> {
    write_files(out, records_dir, summary, kinds, None, false).map(|_| ())
}

/// `write_all`, with vLLM's `--save-result` file when `vllm_result` asks for it, from one
/// read of the records for them all (and for `report.html`'s charts when `charts`, which it
/// returns; `None` without them, or when only they wanted records that cannot be read).
pub fn write_files(
    out: &Path,
    records_dir: &Path,
    summary: &Summary,
    kinds: &[ExportKind],
    vllm_result: Option<&VllmResult>,
    charts: bool,
) -> Result<Option<RunRecords>, WriteError> {
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    let mut vllm = vec![];
    if kinds.contains(&ExportKind::Vllm) {
        vllm.push(vllm::Fold::new(&out.join(vllm::FILE_NAME), summary, None)?);
    }
    if let Some(spec) = vllm_result {
        vllm.push(vllm::Fold::new(&spec.path, summary, Some(spec))?);
    }
    let mut aiperf = match kinds.contains(&ExportKind::Aiperf) {
        true => Some(aiperf::Fold::new(out, summary)?),
        false => None,
    };
    let mut plot = charts.then(RunRecords::new);
    let exports = !vllm.is_empty() || aiperf.is_some();
    if exports || plot.is_some() {
        let read = read_records(records_dir, |r| {
            vllm.iter_mut().for_each(|f| f.add(r));
            aiperf.iter_mut().for_each(|f| f.add(r));
            plot.iter_mut().for_each(|f| f.add(r));
        });
        match read {
            Err(e) if exports => return Err(e.into()),
            Err(_) => plot = None,
            Ok(_) => {}
        }
    }
    if let Some(first) = vllm.first() {
        let peaks = match summary.pooling {
            Some(_) => (0.0, 0),
            None => vllm::peaks(records_dir, first.first_sent())?,
        };
        for f in vllm {
            f.write(summary, peaks)?;
        }
    }
    if let Some(a) = aiperf {
        a.write(summary)?;
    }
    if kinds.contains(&ExportKind::Csv) {
        csv::write(out, summary)?;
    }
    Ok(plot)
}
