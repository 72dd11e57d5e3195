//! Part of the collector (… → record → **collector** → summary → output): the per-request log
//! file, `DIR/requests.jsonl` (written as `DIR/.requests.jsonl.tmp.PID` while the run goes and
//! renamed when it ends, interrupted or not; see `rt::file`). Each line is formatted by
//! `record::jsonl::format_line` into one reused buffer and copied into a 1 MiB `BufWriter`, so
//! a record costs no allocation, the disk sees one write per thousand-odd lines, and memory
//! stays flat however long the run. With `--records parquet` the same records go to
//! `DIR/requests.parquet` instead (`collector::parquet`). Never prints.

use super::parquet::ParquetLog;
use crate::plan::RecordsFormat;
use crate::record::jsonl::{format_line, FILE_NAME};
use crate::record::Record;
use crate::rt::file::PendingFile;
use std::io::{self, Write};
use std::path::Path;

/// Big enough that a flush (one `write` syscall) carries thousands of lines.
const BUFFER_BYTES: usize = 1 << 20;

/// The open log of a run.
pub struct RequestLog {
    sink: Sink,
    /// One line under construction, reused: once it has grown, a record allocates nothing.
    line: Vec<u8>,
    lines: u64,
}

enum Sink {
    /// Written as `.requests.jsonl.tmp.PID`, renamed to `requests.jsonl` by `close`.
    Jsonl(PendingFile),
    /// `--records parquet`.
    Parquet(Box<ParquetLog>),
}

/// The log's file name in `format`: what a warning about it names.
pub fn file_name(format: RecordsFormat) -> &'static str {
    match format {
        RecordsFormat::Jsonl => FILE_NAME,
        RecordsFormat::Parquet => super::parquet::FILE_NAME,
    }
}

impl RequestLog {
    /// Creates `dir` if needed and the log under its temporary name there.
    pub fn create(dir: &Path) -> io::Result<Self> {
        Self::create_as(dir, RecordsFormat::Jsonl)
    }

    /// Creates `dir` if needed and the log in `format` under its temporary name there.
    pub fn create_as(dir: &Path, format: RecordsFormat) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        // A run let over another (`--overwrite`) leaves no log of the other format behind,
        // which `report` would read in place of this one's.
        let other = match format {
            RecordsFormat::Jsonl => super::parquet::FILE_NAME,
            RecordsFormat::Parquet => FILE_NAME,
        };
        match std::fs::remove_file(dir.join(other)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let sink = match format {
            RecordsFormat::Jsonl => {
                Sink::Jsonl(PendingFile::create(&dir.join(FILE_NAME), BUFFER_BYTES)?)
            }
            RecordsFormat::Parquet => Sink::Parquet(Box::new(ParquetLog::create(dir)?)),
        };
        Ok(RequestLog {
            sink,
            line: Vec::with_capacity(4096),
            lines: 0,
        })
    }

    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        self.lines += 1;
        match &mut self.sink {
            Sink::Jsonl(out) => {
                self.line.clear();
                format_line(&mut self.line, rec);
                out.writer().write_all(&self.line)
            }
            Sink::Parquet(p) => p.append(rec),
        }
    }

    /// Hands what is buffered to the kernel. `BufWriter` only ever writes whole lines here
    /// (a line that does not fit flushes the buffer first), so a process killed after this
    /// leaves a file of complete lines. A Parquet log is readable only once closed: its row
    /// groups go out as they fill.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Jsonl(out) => out.writer().flush(),
            Sink::Parquet(_) => Ok(()),
        }
    }

    /// Flushes the buffer and the file's data to disk and renames it to `requests.jsonl`
    /// (`requests.parquet`).
    pub fn close(self) -> io::Result<()> {
        match self.sink {
            Sink::Jsonl(out) => out.commit(),
            Sink::Parquet(p) => p.close(),
        }
    }
}
