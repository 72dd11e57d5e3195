//! Part of the collector (… → record → **collector** → summary → report): the per-request
//! log, `DIR/requests.jsonl` (written as `DIR/.requests.jsonl.tmp.PID` while the run goes and
//! renamed when it ends, interrupted or not; see `outfile`). Each line is formatted by hand into one reused buffer and
//! copied into a 1 MiB `BufWriter`, so a record costs no allocation, the disk sees one write
//! per thousand-odd lines, and memory stays flat however long the run. It writes what the
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
//!  "reads":4,"bytes":912,"events_dropped":0,"warmup_by":null,
//!  "events":[[5100,0,null,0],[9000,1,8950,1],[14000,1,13950,1],[19000,1,18950,1]]}
//! ```
//!
//! - Every stamp is integer nanoseconds on the run clock; `null` means it did not happen.
//! - `outcome` is `Outcome::name` (`ok`, `not_sent`, `cancelled`, `http_status`, …);
//!   `status` is the HTTP status (0 when no head arrived).
//! - `output_source` is `usage`, `tokenizer` or `events`.
//! - `warmup_by` says which warm-up rule excluded a record: `count` (`--warmup-requests`),
//!   `duration` (`--warmup-duration`), `both`, or `null` for a measured one.
//! - `events` are compact arrays `[at_ns, tokens, server_ns_or_null, flags]` in arrival order,
//!   token-bearing or not; `flags` is a bit set: 1 = carried output text, 2 = carried
//!   reasoning text. Events sharing `at_ns` were completed by the same read. With
//!   `--tokenizer`, an event the client tokenizer credited with tokens has a fifth element,
//!   that count (`[at_ns, tokens, server_ns, flags, text_tokens]`).

use crate::output::files::PendingFile;
use crate::record::{EventStamp, OslSource, Record};
use std::io::{self, Write};
use std::path::Path;

pub const FILE_NAME: &str = "requests.jsonl";

/// Big enough that a flush (one `write` syscall) carries thousands of lines.
const BUFFER_BYTES: usize = 1 << 20;

pub const FLAG_OUTPUT: u8 = 1;
pub const FLAG_REASONING: u8 = 2;

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

    /// The final path (the file is there once `close` has run).
    pub fn path(&self) -> &Path {
        self.out.path()
    }

    pub fn lines(&self) -> u64 {
        self.lines
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

pub fn osl_source_name(s: OslSource) -> &'static str {
    match s {
        OslSource::Usage => "usage",
        OslSource::Tokenizer => "tokenizer",
        OslSource::Events => "events",
    }
}

/// Appends one record as one line, newline included (see the module doc for the format).
/// Numbers are formatted by hand: `write!` cost about 4 µs per 16-event record, this a
/// fraction of it.
pub fn format_line(buf: &mut Vec<u8>, r: &Record) {
    push(buf, "{\"id\":");
    push_u64(buf, r.id);
    key_u64(buf, "worker", r.worker.into());
    push(
        buf,
        if r.warmup {
            ",\"warmup\":true"
        } else {
            ",\"warmup\":false"
        },
    );
    key_str(buf, "outcome", r.outcome.name());
    key_u64(buf, "status", r.status.into());
    key_u64(buf, "intended_ns", r.intended_ns);
    key_opt(buf, "sent_ns", r.sent_ns);
    key_opt(buf, "head_ns", r.head_ns);
    key_opt(buf, "first_token_ns", r.first_token_ns);
    key_opt(buf, "first_output_ns", r.first_output_ns);
    key_opt(buf, "last_token_ns", r.last_token_ns);
    key_opt(buf, "done_ns", r.done_ns);
    key_u64(buf, "input_tokens", r.input_tokens.into());
    key_u64(buf, "output_tokens", r.output_tokens.into());
    key_str(buf, "output_source", osl_source_name(r.output_source));
    key_opt(
        buf,
        "usage_prompt_tokens",
        r.usage_prompt_tokens.map(u64::from),
    );
    key_opt(
        buf,
        "usage_completion_tokens",
        r.usage_completion_tokens.map(u64::from),
    );
    key_opt(buf, "cached_tokens", r.cached_tokens.map(u64::from));
    key_u64(buf, "reads", r.reads.into());
    key_u64(buf, "bytes", r.bytes);
    key_u64(buf, "events_dropped", r.events_dropped.into());
    match r.warmup_by.name() {
        Some(name) => key_str(buf, "warmup_by", name),
        None => push(buf, ",\"warmup_by\":null"),
    }
    push(buf, ",\"events\":[");
    for (i, e) in r.events.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        event(buf, e);
    }
    push(buf, "]}\n");
}

fn event(buf: &mut Vec<u8>, e: &EventStamp) {
    let flags =
        if e.output { FLAG_OUTPUT } else { 0 } | if e.reasoning { FLAG_REASONING } else { 0 };
    buf.push(b'[');
    push_u64(buf, e.at_ns);
    buf.push(b',');
    push_u64(buf, e.tokens.into());
    buf.push(b',');
    push_opt(buf, e.server_ns);
    buf.push(b',');
    push_u64(buf, flags.into());
    if e.text_tokens > 0 {
        buf.push(b',');
        push_u64(buf, e.text_tokens.into());
    }
    buf.push(b']');
}

fn push(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(s.as_bytes());
}

fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

fn push_opt(buf: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => push_u64(buf, v),
        None => push(buf, "null"),
    }
}

/// `,"key":` — keys and the enum names are plain ASCII, nothing to escape.
fn key(buf: &mut Vec<u8>, key: &str) {
    push(buf, ",\"");
    push(buf, key);
    push(buf, "\":");
}

fn key_u64(buf: &mut Vec<u8>, k: &str, v: u64) {
    key(buf, k);
    push_u64(buf, v);
}

fn key_opt(buf: &mut Vec<u8>, k: &str, v: Option<u64>) {
    key(buf, k);
    push_opt(buf, v);
}

fn key_str(buf: &mut Vec<u8>, k: &str, v: &str) {
    key(buf, k);
    buf.push(b'"');
    push(buf, v);
    buf.push(b'"');
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
                    ..Default::default()
                },
                EventStamp {
                    at_ns: 9_100,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let mut buf = Vec::new();
        format_line(&mut buf, &r);
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
