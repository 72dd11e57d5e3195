//! Part of the collector (… → record → **collector** → summary → report): the way back from
//! a run's files to its figures. `read_records` streams `requests.jsonl` one line at a time
//! into one reused `Record` (memory stays flat however long the run was); `recompute` feeds
//! them to a fresh `Collector` built from the `run.json` sidecar's config and asks it for
//! the summary through the very function a run uses, so that with no overrides the result
//! serializes to the run's `summary.json` byte for byte. Never prints.

use super::sidecar::{self, RunSidecar};
use super::{Collector, Settings, SettingsError};
use crate::plan::Slo;
use crate::record::{EventStamp, OslSource, Outcome, Record};
use crate::summary::Summary;
use serde::Deserialize;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {path}: {source} (is it a `ringbench run --out` folder?)")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}:{line}: {reason}")]
    Line {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    #[error("{path}: {source} (the file was written by another version or edited)")]
    Settings {
        path: PathBuf,
        source: SettingsError,
    },
}

/// What `ringbench report` may change; `None` keeps the run's own setting.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub percentiles: Option<Vec<f64>>,
    pub goodput: Option<Vec<Slo>>,
}

/// Every outcome by its `requests.jsonl` name.
const OUTCOMES: [Outcome; 12] = [
    Outcome::Ok,
    Outcome::NotSent,
    Outcome::Cancelled,
    Outcome::Connect,
    Outcome::Timeout,
    Outcome::HttpStatus,
    Outcome::ResetBeforeHead,
    Outcome::ResetMidStream,
    Outcome::Malformed,
    Outcome::ErrorEvent,
    Outcome::Oversized,
    Outcome::Io,
];

#[derive(Deserialize)]
struct Line {
    id: u64,
    worker: u16,
    warmup: bool,
    outcome: String,
    status: u16,
    intended_ns: u64,
    sent_ns: Option<u64>,
    head_ns: Option<u64>,
    first_token_ns: Option<u64>,
    first_output_ns: Option<u64>,
    last_token_ns: Option<u64>,
    done_ns: Option<u64>,
    input_tokens: u32,
    output_tokens: u32,
    output_source: String,
    usage_prompt_tokens: Option<u32>,
    usage_completion_tokens: Option<u32>,
    cached_tokens: Option<u32>,
    reads: u32,
    bytes: u64,
    events_dropped: u32,
    events: Vec<EventArray>,
    /// Absent from logs written before it existed: then `warmup` alone is known.
    #[serde(default)]
    warmup_by: Option<String>,
}

/// `[at_ns, tokens, server_ns, flags]`, or with a fifth element, `text_tokens`.
struct EventArray {
    at_ns: u64,
    tokens: u32,
    server_ns: Option<u64>,
    flags: u8,
    text_tokens: u32,
}

impl<'de> Deserialize<'de> for EventArray {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = EventArray;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("[at_ns, tokens, server_ns, flags] or with text_tokens fifth")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<EventArray, A::Error> {
                let missing = |i| serde::de::Error::invalid_length(i, &self);
                let ev = EventArray {
                    at_ns: a.next_element()?.ok_or_else(|| missing(0))?,
                    tokens: a.next_element()?.ok_or_else(|| missing(1))?,
                    server_ns: a.next_element()?.ok_or_else(|| missing(2))?,
                    flags: a.next_element()?.ok_or_else(|| missing(3))?,
                    text_tokens: a.next_element()?.unwrap_or(0),
                };
                match a.next_element::<serde::de::IgnoredAny>()? {
                    None => Ok(ev),
                    Some(_) => Err(serde::de::Error::invalid_length(6, &self)),
                }
            }
        }
        d.deserialize_seq(V)
    }
}

/// Fills `rec` from one line of `requests.jsonl` (the inverse of `jsonl::format_line`).
pub fn parse_line(text: &str, rec: &mut Record) -> Result<(), String> {
    let l: Line = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let outcome = OUTCOMES
        .into_iter()
        .find(|o| o.name() == l.outcome)
        .ok_or_else(|| format!("unknown outcome `{}`", l.outcome))?;
    let output_source = match l.output_source.as_str() {
        "usage" => OslSource::Usage,
        "tokenizer" => OslSource::Tokenizer,
        "events" => OslSource::Events,
        other => return Err(format!("unknown output_source `{other}`")),
    };
    let warmup_by = crate::record::WarmupBy::from_name(l.warmup_by.as_deref())
        .ok_or_else(|| format!("unknown warmup_by `{}`", l.warmup_by.unwrap_or_default()))?;
    let mut events = std::mem::take(&mut rec.events);
    events.clear();
    events.extend(l.events.iter().map(|e| EventStamp {
        at_ns: e.at_ns,
        server_ns: e.server_ns,
        tokens: e.tokens,
        output: e.flags & crate::record::jsonl::FLAG_OUTPUT != 0,
        reasoning: e.flags & crate::record::jsonl::FLAG_REASONING != 0,
        text_bytes: 0,
        text_tokens: e.text_tokens,
    }));
    *rec = Record {
        id: l.id,
        worker: l.worker,
        warmup: l.warmup,
        outcome,
        status: l.status,
        intended_ns: l.intended_ns,
        sent_ns: l.sent_ns,
        head_ns: l.head_ns,
        first_token_ns: l.first_token_ns,
        first_output_ns: l.first_output_ns,
        last_token_ns: l.last_token_ns,
        done_ns: l.done_ns,
        input_tokens: l.input_tokens,
        output_tokens: l.output_tokens,
        output_source,
        usage_prompt_tokens: l.usage_prompt_tokens,
        usage_completion_tokens: l.usage_completion_tokens,
        cached_tokens: l.cached_tokens,
        reads: l.reads,
        bytes: l.bytes,
        events_dropped: l.events_dropped,
        events,
        warmup_by,
        text: std::mem::take(&mut rec.text),
    };
    Ok(())
}

/// Calls `each` with every record of `dir/requests.jsonl`, in file order.
pub fn read_records(dir: &Path, mut each: impl FnMut(&Record)) -> Result<u64, ReplayError> {
    let path = dir.join(crate::record::jsonl::FILE_NAME);
    let io_err = |source| ReplayError::Io {
        path: path.clone(),
        source,
    };
    let mut reader = BufReader::with_capacity(1 << 20, File::open(&path).map_err(io_err)?);
    let mut text = String::new();
    let mut rec = Record::default();
    let mut line = 0;
    loop {
        text.clear();
        if reader.read_line(&mut text).map_err(io_err)? == 0 {
            return Ok(line);
        }
        line += 1;
        if text.trim().is_empty() {
            continue;
        }
        parse_line(&text, &mut rec).map_err(|reason| ReplayError::Line {
            path: path.clone(),
            line,
            reason,
        })?;
        each(&rec);
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
    let (side, settings) = settings(dir, o)?;
    let mut c = Collector::from_settings(settings);
    read_records(dir, |r| c.add(r))?;
    Ok(c.summarize(side.facts(), side.host.clone()))
}
