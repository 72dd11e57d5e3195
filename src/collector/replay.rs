//! Part of the collector (… → record → **collector** → summary → report): the way back from
//! a run's files to its figures. `read_records` streams `requests.jsonl` one line at a time
//! into one reused `Record` (memory stays flat however long the run was); `recompute` feeds
//! them to a fresh `Collector` built from the `run.json` sidecar's config and asks it for
//! the summary through the very function a run uses, so that with no overrides the result
//! serializes to the run's `summary.json` byte for byte; `recompute_to` also writes the
//! `.hlog` interval logs again through the live run's writer (`report --out`, `merge`).
//! Never prints.

use super::sidecar::{self, RunSidecar};
use super::{Collector, Settings, SettingsError};
use crate::plan::Slo;
use crate::record::jsonl::parse_line;
use crate::record::Record;
use crate::summary::Summary;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Why a run's files could not be read back (`ringbench report`).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// `requests.jsonl` or `run.json` could not be opened or read.
    #[error("cannot read {path}: {source} (is it a `ringbench run --out` folder?)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error reading it.
        source: io::Error,
    },
    /// A line of `requests.jsonl` that does not parse.
    #[error("{path}:{line}: {reason}")]
    Line {
        /// The file.
        path: PathBuf,
        /// Its line number, from 1.
        line: u64,
        /// What is wrong with the line.
        reason: String,
    },
    /// `run.json`'s config is not a plan this version reads.
    #[error("{path}: {source} (the file was written by another version or edited)")]
    Settings {
        /// The sidecar file.
        path: PathBuf,
        /// What serde found wrong.
        source: SettingsError,
    },
}

/// What `ringbench report` may change; `None` keeps the run's own setting.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// Percentiles to compute instead of the run's (`report --percentiles`).
    pub percentiles: Option<Vec<f64>>,
    /// Per-request SLOs instead of the run's (`report --goodput`).
    pub goodput: Option<Vec<Slo>>,
}

/// Calls `each` with every record of `dir/requests.jsonl`, in file order; returns the
/// number of lines read.
pub fn read_records(dir: &Path, mut each: impl FnMut(&Record)) -> Result<u64, ReplayError> {
    let mut reader = RecordReader::open(dir, 1 << 20)?;
    let mut rec = Record::default();
    while reader.next_into(&mut rec)? {
        each(&rec);
    }
    Ok(reader.lines)
}

/// `dir/requests.jsonl` (or, without it, `dir/requests.parquet`) read one record at a time,
/// on demand (`merge` holds one open per shard and takes from whichever is due).
pub struct RecordReader {
    path: PathBuf,
    reader: Option<BufReader<File>>,
    parquet: Option<super::parquet::ParquetReader>,
    text: String,
    /// Lines (Parquet: records) read so far (blank lines too).
    pub lines: u64,
}

impl RecordReader {
    /// Opens `dir/requests.jsonl` with a read buffer of `buffer` bytes; a folder with
    /// `requests.parquet` and no `requests.jsonl` is read from its Parquet log.
    pub fn open(dir: &Path, buffer: usize) -> Result<Self, ReplayError> {
        let path = dir.join(crate::record::jsonl::FILE_NAME);
        let pq = dir.join(super::parquet::FILE_NAME);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ReplayError::Io { path, source }
        };
        if !path.exists() && pq.exists() {
            return Ok(RecordReader {
                parquet: Some(super::parquet::ParquetReader::open(&pq).map_err(io(&pq))?),
                path: pq,
                reader: None,
                text: String::new(),
                lines: 0,
            });
        }
        let file = File::open(&path).map_err(io(&path))?;
        Ok(RecordReader {
            path,
            reader: Some(BufReader::with_capacity(buffer, file)),
            parquet: None,
            text: String::new(),
            lines: 0,
        })
    }

    /// The next record into `rec` (reusing its buffers); false at the end of the file.
    pub fn next_into(&mut self, rec: &mut Record) -> Result<bool, ReplayError> {
        if let Some(p) = &mut self.parquet {
            let next = p.next_record().map_err(|reason| ReplayError::Line {
                path: self.path.clone(),
                line: p.read + 1,
                reason,
            })?;
            self.lines = p.read;
            return Ok(next.map(|r| *rec = r).is_some());
        }
        let reader = self
            .reader
            .as_mut()
            .expect("a JSONL reader without Parquet");
        loop {
            self.text.clear();
            let n = reader
                .read_line(&mut self.text)
                .map_err(|source| ReplayError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(false);
            }
            self.lines += 1;
            if self.text.trim().is_empty() {
                continue;
            }
            parse_line(&self.text, rec).map_err(|reason| ReplayError::Line {
                path: self.path.clone(),
                line: self.lines,
                reason,
            })?;
            return Ok(true);
        }
    }
}

/// The run's settings from its sidecar, with the report's overrides applied.
pub fn settings(dir: &Path, o: &Overrides) -> Result<(RunSidecar, Settings), ReplayError> {
    let path = dir.join(sidecar::FILE_NAME);
    let side = RunSidecar::read(dir).map_err(|source| ReplayError::Io {
        path: path.clone(),
        source,
    })?;
    let mut s = Settings::from_config(&side.config)
        .map_err(|source| ReplayError::Settings { path, source })?;
    if let Some(p) = &o.percentiles {
        s = s.with_percentiles(p.clone());
    }
    if let Some(g) = &o.goodput {
        s = s.with_goodput(g.clone());
    }
    Ok((side, s))
}

/// The summary of the run in `dir`, from `requests.jsonl` and `run.json` alone.
pub fn recompute(dir: &Path, o: &Overrides) -> Result<Summary, ReplayError> {
    recompute_to(dir, o, None)
}

/// `recompute`, writing the `.hlog` interval logs into `hlog_dir` as it goes (`report --out`,
/// `merge`): the records go through the live run's writer in file order, `BaseTime` the
/// run's recorded clock origin.
pub fn recompute_to(
    dir: &Path,
    o: &Overrides,
    hlog_dir: Option<&Path>,
) -> Result<Summary, ReplayError> {
    let (side, settings) = settings(dir, o)?;
    let percentiles = settings.plan.percentiles.clone();
    let mut c = Collector::from_settings(settings);
    if let Some(clock) = &side.facts.clock {
        c.set_schedule_start(clock.schedule_start_ns);
    }
    if let Some(out) = hlog_dir {
        let origin_ns = side.facts.clock.as_ref().map_or(0, |k| k.origin_unix_ns);
        let base = match origin_ns {
            0 => std::time::SystemTime::now(),
            ns => std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns),
        };
        std::fs::create_dir_all(out)
            .and_then(|()| c.log_intervals(out, base))
            .map_err(|source| ReplayError::Io {
                path: out.join(super::hlog::file_name("ttft")),
                source,
            })?;
    }
    read_records(dir, |r| c.add(r))?;
    let mut facts = side.facts.clone();
    c.close_interval_logs(&mut facts.warnings);
    let mut summary = c.summarize(facts, side.host.clone());
    server_block(dir, &percentiles, &mut summary)?;
    Ok(summary)
}

/// The `server` block again from `server_metrics.jsonl`, when the run scraped the server
/// (`scrape::join`, as the run made it); the warnings it calls for join the rest.
fn server_block(dir: &Path, percentiles: &[f64], summary: &mut Summary) -> Result<(), ReplayError> {
    use crate::scrape::{join, scraper::DEFAULT_MAX_SCRAPES};
    let path = dir.join(join::FILE_NAME);
    if !path.exists() {
        return Ok(());
    }
    // Room for a full log and its boundary rounds: the window's ends are never dropped.
    let back = crate::scrape::jsonl::read_file(&path, 2 * DEFAULT_MAX_SCRAPES)
        .map_err(|source| ReplayError::Io { path, source })?;
    summary.server = join::server_block(&back.scrapes, percentiles, summary);
    if let Some(block) = &summary.server {
        summary.warnings.extend(join::warnings(block));
    }
    Ok(())
}

/// The run in `dir` as other tools define its figures (`report --definitions`), one
/// `ToolFigures` per tool, from `requests.jsonl` in one pass.
pub fn definitions(
    dir: &Path,
    o: &Overrides,
    tools: &[super::definitions::Definitions],
) -> Result<Vec<super::definitions::ToolFigures>, ReplayError> {
    let (_, settings) = settings(dir, o)?;
    let mut views: Vec<super::definitions::ToolView> = tools
        .iter()
        .map(|&d| super::definitions::ToolView::new(d, settings.stream))
        .collect();
    read_records(dir, |r| views.iter_mut().for_each(|v| v.add(r)))?;
    Ok(views
        .iter()
        .map(|v| v.finish(&settings.plan.percentiles))
        .collect())
}
