//! Part of the collector (… → record → **collector** → summary → report): the per-request
//! log, `DIR/requests.jsonl`, written by hand straight into a large `BufWriter` so that a
//! record costs no allocation and memory stays flat however long the run. It writes what the
//! record holds and derives nothing: `ringbench report` recomputes every figure from it.
//!
//! # Format (one JSON object per line, one line per record, warm-up included)
//!
//! ```text
//! {"id":7,"worker":0,"warmup":false,"outcome":"ok","status":200,
//!  "intended_ns":1000,"sent_ns":1200,"head_ns":5000,"first_token_ns":9000,
//!  "first_output_ns":9000,"last_token_ns":19000,"done_ns":19500,
//!  "input_tokens":128,"output_tokens":3,"output_source":"usage",
//!  "usage_prompt_tokens":135,"usage_completion_tokens":3,"cached_tokens":null,
//!  "reads":4,"bytes":912,"events_dropped":0,
//!  "events":[[5100,0,null,0],[9000,1,8950,1],[14000,1,13950,1],[19000,1,18950,1]]}
//! ```
//!
//! - Every stamp is integer nanoseconds on the run clock; `null` means it did not happen.
//! - `outcome` is `Outcome::name` (`ok`, `not_sent`, `cancelled`, `http_status`, …);
//!   `status` is the HTTP status (0 when no head arrived).
//! - `output_source` is `usage`, `tokenizer` or `events`.
//! - `events` are compact arrays `[at_ns, tokens, server_ns_or_null, flags]` in arrival order,
//!   token-bearing or not; `flags` is a bit set: 1 = carried output text, 2 = carried
//!   reasoning text. Events sharing `at_ns` were completed by the same read.

use crate::record::{EventStamp, OslSource, Record};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "requests.jsonl";

/// Big enough that a flush (one `write` syscall) carries thousands of lines.
const BUFFER_BYTES: usize = 1 << 20;

pub const FLAG_OUTPUT: u8 = 1;
pub const FLAG_REASONING: u8 = 2;

pub struct RequestLog {
    path: PathBuf,
    out: BufWriter<File>,
    lines: u64,
}

impl RequestLog {
    /// Creates `dir` if needed and truncates `dir/requests.jsonl`.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let file = File::create(&path)?;
        Ok(RequestLog {
            path,
            out: BufWriter::with_capacity(BUFFER_BYTES, file),
            lines: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        write_line(&mut self.out, rec)?;
        self.lines += 1;
        Ok(())
    }

    /// Flushes the buffer and the file's data to disk.
    pub fn close(mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

pub fn osl_source_name(s: OslSource) -> &'static str {
    match s {
        OslSource::Usage => "usage",
        OslSource::Tokenizer => "tokenizer",
        OslSource::Events => "events",
    }
}

/// One record as one line (see the module doc for the format).
pub fn write_line(w: &mut impl Write, r: &Record) -> io::Result<()> {
    write!(
        w,
        "{{\"id\":{},\"worker\":{},\"warmup\":{},\"outcome\":\"{}\",\"status\":{},\"intended_ns\":{}",
        r.id,
        r.worker,
        r.warmup,
        r.outcome.name(),
        r.status,
        r.intended_ns
    )?;
    field(w, "sent_ns", r.sent_ns)?;
    field(w, "head_ns", r.head_ns)?;
    field(w, "first_token_ns", r.first_token_ns)?;
    field(w, "first_output_ns", r.first_output_ns)?;
    field(w, "last_token_ns", r.last_token_ns)?;
    field(w, "done_ns", r.done_ns)?;
    write!(
        w,
        ",\"input_tokens\":{},\"output_tokens\":{},\"output_source\":\"{}\"",
        r.input_tokens,
        r.output_tokens,
        osl_source_name(r.output_source)
    )?;
    field(w, "usage_prompt_tokens", r.usage_prompt_tokens)?;
    field(w, "usage_completion_tokens", r.usage_completion_tokens)?;
    field(w, "cached_tokens", r.cached_tokens)?;
    write!(
        w,
        ",\"reads\":{},\"bytes\":{},\"events_dropped\":{},\"events\":[",
        r.reads, r.bytes, r.events_dropped
    )?;
    for (i, e) in r.events.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        event(w, e)?;
    }
    w.write_all(b"]}\n")
}

fn field<T: std::fmt::Display>(w: &mut impl Write, key: &str, v: Option<T>) -> io::Result<()> {
    match v {
        Some(v) => write!(w, ",\"{key}\":{v}"),
        None => write!(w, ",\"{key}\":null"),
    }
}

fn event(w: &mut impl Write, e: &EventStamp) -> io::Result<()> {
    let flags =
        if e.output { FLAG_OUTPUT } else { 0 } | if e.reasoning { FLAG_REASONING } else { 0 };
    match e.server_ns {
        Some(s) => write!(w, "[{},{},{},{}]", e.at_ns, e.tokens, s, flags),
        None => write!(w, "[{},{},null,{}]", e.at_ns, e.tokens, flags),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    #[test]
    fn a_line_is_json_and_keeps_every_stamp() {
        let r = Record {
            id: 7,
            outcome: Outcome::Ok,
            status: 200,
            intended_ns: 1_000,
            sent_ns: Some(1_200),
            done_ns: Some(19_500),
            output_tokens: 1,
            output_source: OslSource::Usage,
            usage_completion_tokens: Some(1),
            events: vec![
                EventStamp {
                    at_ns: 9_000,
                    server_ns: Some(8_950),
                    tokens: 1,
                    output: true,
                    reasoning: true,
                },
                EventStamp {
                    at_ns: 9_100,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let mut buf = Vec::new();
        write_line(&mut buf, &r).unwrap();
        assert_eq!(buf.last(), Some(&b'\n'));
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["sent_ns"], 1_200);
        assert_eq!(v["head_ns"], serde_json::Value::Null);
        assert_eq!(v["outcome"], "ok");
        assert_eq!(v["output_source"], "usage");
        assert_eq!(v["usage_completion_tokens"], 1);
        assert_eq!(
            v["events"],
            serde_json::json!([[9000, 1, 8950, 3], [9100, 0, null, 0]])
        );
    }
}
