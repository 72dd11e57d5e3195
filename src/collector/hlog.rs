//! Part of the collector (… → record → **collector** → summary → report): the HdrHistogram
//! interval logs `DIR/ttft.hlog`, `itl.hlog`, `tpot.hlog` and `e2e.hlog`, beside
//! `requests.jsonl`, in the standard format of HdrHistogram's `HistogramLogWriter` (V2
//! compressed histograms, base64, one line per interval) so that HistogramLogAnalyzer,
//! `HistogramLogProcessor` or hdrhistogram's `IntervalLogIterator` read them unchanged.
//!
//! What goes in: exactly the samples of the summary's `latency_ms.{ttft,itl,tpot,e2e}` —
//! measured (not warm-up) successful requests, streaming-only metrics skipped for
//! `--no-stream`, values (and the max column) in nanoseconds.
//! Each interval is one second of the run clock, tagged with the metric (`Tag=ttft`), and
//! holds the samples of the requests that *ended* in it (`done_ns`); a record arriving after
//! its second was written (workers hand records over in batches) goes into the second still
//! open. Every second from the first to the last sample gets a line, empty ones included.
//! Timestamps are seconds since the run clock's origin (`BaseTime` in the header is the wall
//! clock of the log's creation, a few ms before that origin, for a live run; the run's recorded
//! clock origin for logs rewritten from `requests.jsonl` by `ringbench report` and `merge`,
//! which feed the records through this same writer in file order).
//!
//! Memory is fixed: one open histogram per metric, written out and reset each second. The
//! files are written under temporary names and renamed when the run ends (`outfile`). Never
//! prints.

use super::dist::new_histogram;
use crate::record::{Outcome, Record};
use crate::rt::file::PendingFile;
use crate::summary::metric::{role, Metric};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The logged metrics (`role::HLOG`), in file order; each file is `KEY.hlog` and each
/// interval `Tag=KEY`.
fn metrics() -> impl Iterator<Item = Metric> {
    Metric::with(role::HLOG)
}

pub const INTERVAL_NS: u64 = 1_000_000_000;
const BUFFER_BYTES: usize = 1 << 16;

pub fn file_name(metric: &str) -> String {
    format!("{metric}.hlog")
}

struct Log {
    metric: Metric,
    file: PendingFile,
    hist: Histogram<u64>,
}

pub struct IntervalLogs {
    logs: Vec<Log>,
    stream: bool,
    serializer: V2DeflateSerializer,
    /// Index of the open second; `None` before the first sample.
    open: Option<u64>,
}

impl IntervalLogs {
    /// Creates the four logs (under temporary names) in `dir` and writes their headers,
    /// `BaseTime` now.
    pub fn create(dir: &Path, stream: bool) -> io::Result<Self> {
        Self::create_at(dir, stream, SystemTime::now())
    }

    /// `create` with `BaseTime` (and `StartTime`) `base`: the wall-clock instant of the run
    /// clock's origin, when the logs are written again from the records.
    pub fn create_at(dir: &Path, stream: bool, base: SystemTime) -> io::Result<Self> {
        let mut serializer = V2DeflateSerializer::new();
        let mut logs = Vec::new();
        for m in metrics() {
            let metric = m.key();
            let mut file = PendingFile::create(&dir.join(file_name(metric)), BUFFER_BYTES)?;
            IntervalLogWriterBuilder::new()
                .add_comment(&format!(
                    "ringbench {} interval log: {metric} in ns of measured successful \
                     requests, by the second they ended in (see docs/guide.md, Outputs)",
                    env!("CARGO_PKG_VERSION")
                ))
                .with_start_time(base)
                .with_base_time(base)
                .begin_log_with(file.writer(), &mut serializer)?;
            writeln!(
                file.writer(),
                "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
            )?;
            logs.push(Log {
                metric: m,
                file,
                hist: new_histogram(),
            });
        }
        Ok(IntervalLogs {
            logs,
            stream,
            serializer,
            open: None,
        })
    }

    /// Adds one record's samples. The caller passes measured records only (warm-up is the
    /// collector's business); failures carry no latency and are skipped here.
    pub fn add(&mut self, rec: &Record) -> io::Result<()> {
        let (Outcome::Ok, Some(done_ns)) = (rec.outcome, rec.done_ns) else {
            return Ok(());
        };
        let second = done_ns / INTERVAL_NS;
        match self.open {
            None => self.open = Some(second),
            Some(open) if second > open => self.write_through(second)?,
            Some(_) => {}
        }
        for log in &mut self.logs {
            if self.stream || !log.metric.streaming_only() {
                super::sample(log.metric, rec, |v| log.hist.saturating_record(v));
            }
        }
        Ok(())
    }

    /// Writes every second before `next` (the open one and any empty ones after it) and opens
    /// `next`.
    fn write_through(&mut self, next: u64) -> io::Result<()> {
        let Some(mut s) = self.open else {
            return Ok(());
        };
        while s < next {
            self.write_interval(s)?;
            s += 1;
        }
        self.open = Some(next);
        Ok(())
    }

    fn write_interval(&mut self, second: u64) -> io::Result<()> {
        let start = Duration::from_nanos(second * INTERVAL_NS);
        let length = Duration::from_nanos(INTERVAL_NS);
        for log in &mut self.logs {
            // An empty builder writes no header: this only borrows the file for one line.
            let mut w = IntervalLogWriterBuilder::new()
                .begin_log_with(log.file.writer(), &mut self.serializer)?;
            w.write_histogram(&log.hist, start, length, Tag::new(log.metric.key()))
                .map_err(|e| io::Error::other(e.to_string()))?;
            log.hist.reset();
        }
        Ok(())
    }

    /// Pushes what is buffered to the kernel (whole lines: each interval is written at once).
    pub fn flush(&mut self) -> io::Result<()> {
        self.logs
            .iter_mut()
            .try_for_each(|l| l.file.writer().flush())
    }

    /// Writes the open second and renames the four files into place.
    pub fn close(mut self) -> io::Result<()> {
        if let Some(open) = self.open {
            self.write_through(open + 1)?;
        }
        self.logs.into_iter().try_for_each(|l| l.file.commit())
    }
}
