//! Part of the collector (… → record → **collector** → summary → output): the per-request log
//! as Parquet, `DIR/requests.parquet` (`--records parquet`), in place of `requests.jsonl`.
//! Records are gathered into typed Arrow columns (`record::arrow`, the one schema) and
//! handed to parquet's `ArrowWriter` a batch at a time; a row group closes every
//! `ROW_GROUP_ROWS` records, so the memory held is one row group's encoded pages however long
//! the run. Snappy-compressed (pyarrow's default), dictionary-encoded where it pays.
//! Written as `DIR/.requests.parquet.tmp.PID` and renamed when the run ends, like the JSONL
//! log (a Parquet file is readable only once its footer is written). Never prints.

use crate::record::arrow::{schema, Columns};
use crate::record::Record;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

/// The file's name in a run's folder.
pub const FILE_NAME: &str = "requests.parquet";

/// Records per row group: about 10 MB of encoded pages for streamed records of 100 events.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// The open Parquet log of a run.
pub struct ParquetLog {
    tmp: PathBuf,
    path: PathBuf,
    writer: ArrowWriter<BufWriter<File>>,
    columns: Columns,
}

fn other(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e)
}

impl ParquetLog {
    /// Creates the log under its temporary name in `dir` (which exists).
    pub fn create(dir: &Path) -> io::Result<Self> {
        let path = dir.join(FILE_NAME);
        let tmp = crate::rt::file::tmp_path(&path);
        let file = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("ringbench {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = ArrowWriter::try_new(file, schema(), Some(props)).map_err(other)?;
        Ok(ParquetLog {
            tmp,
            path,
            writer,
            columns: Columns::new(),
        })
    }

    /// Adds one record; a full batch goes to the writer (and a full row group to the file).
    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        match self.columns.push(rec) {
            Some(batch) => self.writer.write(&batch).map_err(other),
            None => Ok(()),
        }
    }

    /// Writes what is gathered, the footer, syncs the data and renames the file into place.
    pub fn close(mut self) -> io::Result<()> {
        if self.columns.rows() > 0 {
            let batch = self.columns.finish();
            self.writer.write(&batch).map_err(other)?;
        }
        let file = self.writer.into_inner().map_err(other)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_data()?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)
    }
}

/// A Parquet log read back one record at a time (a batch decoded at a time).
pub struct ParquetReader {
    batches: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    rows: std::vec::IntoIter<Record>,
    /// Records handed out so far.
    pub read: u64,
}

impl ParquetReader {
    /// Opens the Parquet log `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let batches = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)
            .map_err(other)?
            .with_batch_size(crate::record::arrow::BATCH_ROWS)
            .build()
            .map_err(other)?;
        Ok(ParquetReader {
            batches,
            rows: Vec::new().into_iter(),
            read: 0,
        })
    }

    /// The next record; `None` at the end. An error says what is wrong with the file.
    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        loop {
            if let Some(r) = self.rows.next() {
                self.read += 1;
                return Ok(Some(r));
            }
            match self.batches.next() {
                None => return Ok(None),
                Some(b) => {
                    let b = b.map_err(|e| e.to_string())?;
                    self.rows = crate::record::arrow::read_batch(&b)?.into_iter();
                }
            }
        }
    }
}
