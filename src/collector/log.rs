//! Part of the collector (… → record → **collector** → summary → output): the per-request log
//! file, `DIR/requests.jsonl` (written as `DIR/.requests.jsonl.tmp.PID` while the run goes and
//! renamed when it ends, interrupted or not; see `rt::file`). Each line is formatted by
//! `record::jsonl::format_line` into one reused buffer and copied into a 1 MiB `BufWriter`, so
//! a record costs no allocation, the disk sees one write per thousand-odd lines, and memory
//! stays flat however long the run. Never prints.

use crate::record::jsonl::{format_line, FILE_NAME};
use crate::record::Record;
use crate::rt::file::PendingFile;
use std::io::{self, Write};
use std::path::Path;

/// Big enough that a flush (one `write` syscall) carries thousands of lines.
const BUFFER_BYTES: usize = 1 << 20;

/// The open log of a run.
pub struct RequestLog {
    /// Written as `.requests.jsonl.tmp.PID`, renamed to `requests.jsonl` by `close`.
    out: PendingFile,
    /// One line under construction, reused: once it has grown, a record allocates nothing.
    line: Vec<u8>,
    lines: u64,
}

impl RequestLog {
    /// Creates `dir` if needed and the log under its temporary name there.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(RequestLog {
            out: PendingFile::create(&dir.join(FILE_NAME), BUFFER_BYTES)?,
            line: Vec::with_capacity(4096),
            lines: 0,
        })
    }

    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        self.line.clear();
        format_line(&mut self.line, rec);
        self.out.writer().write_all(&self.line)?;
        self.lines += 1;
        Ok(())
    }

    /// Hands what is buffered to the kernel. `BufWriter` only ever writes whole lines here
    /// (a line that does not fit flushes the buffer first), so a process killed after this
    /// leaves a file of complete lines.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.writer().flush()
    }

    /// Flushes the buffer and the file's data to disk and renames it to `requests.jsonl`.
    pub fn close(self) -> io::Result<()> {
        self.out.commit()
    }
}
