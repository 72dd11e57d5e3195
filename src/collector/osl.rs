//! Part of the collector (… → record → **collector** → summary → report): the middle rung
//! of `docs/metrics.md`'s OSL ladder — server usage, else **the tokenizer's count of the
//! generated text**, else the token-bearing events. With `--tokenizer`, workers copy each
//! event's unescaped text into the record (one memcpy, no parsing); here, on the collector
//! thread and never on a worker, the text is encoded once, each token is credited to the
//! event that completed it (the event holding its last byte), and the record gets
//! `EventStamp::text_tokens` per event and, when the server sent no usage, its OSL with
//! source `tokenizer`. The text is then dropped: `requests.jsonl` keeps the counts, so
//! `ringbench report` needs no tokenizer. Never prints.
//!
//! Cost: encoding runs at 0.3–1.7 M tokens/s (stack.md), so a run producing more output
//! tokens per second than that makes the collector fall behind (counted as `channel_full`,
//! never lost).

use crate::prepare::tokenizer::Tokenizer;
use crate::record::{OslSource, Outcome, Record};
use std::path::Path;

/// A tokenizer that could not be loaded for output counting (the same file already loaded
/// for prompts, so this is rare: a file changed under the run).
#[derive(Debug, thiserror::Error)]
#[error("--tokenizer {path}: cannot load it for output counting ({why})")]
pub struct OutputTokenizerError {
    pub path: String,
    pub why: String,
}

pub struct OutputTokenizer {
    tok: Tokenizer,
}

impl OutputTokenizer {
    pub fn load(path: &Path) -> Result<Self, OutputTokenizerError> {
        let tok = Tokenizer::from_file(path).map_err(|e| OutputTokenizerError {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        Ok(OutputTokenizer { tok })
    }

    /// Counts the tokens of `rec.text`, per event and in all, and empties the text. A record
    /// without text (no tokenizer asked, a failure before any token) is left as it is.
    pub fn apply(&self, rec: &mut Record) {
        if rec.text.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&rec.text);
        // Every string the extractor copied came through simd-json's UTF-8 check, so the
        // lossy conversion never changes a byte and the offsets are the record's.
        let Ok(enc) = self.tok.encode(text.as_ref(), false) else {
            rec.text.clear();
            return;
        };
        let ends: Vec<usize> = enc.get_offsets().iter().map(|&(_, end)| end).collect();
        credit_tokens(&ends, rec);
        let total: u32 = rec.events.iter().map(|e| e.text_tokens).sum();
        let no_usage = rec.usage_completion_tokens.is_none();
        if rec.outcome == Outcome::Ok && no_usage && total > 0 {
            rec.output_tokens = total;
            rec.output_source = OslSource::Tokenizer;
        }
        rec.text.clear();
    }
}

/// Credits each token (given by the byte offset just past its last byte, in order) to the
/// event whose text holds that last byte. Events carry their share of the text in order
/// (`text_bytes`), so one pass over both suffices.
pub fn credit_tokens(token_ends: &[usize], rec: &mut Record) {
    let mut tokens = token_ends.iter().peekable();
    let mut event_end = 0usize;
    for e in rec.events.iter_mut() {
        event_end += e.text_bytes as usize;
        let mut n = 0u32;
        while tokens.next_if(|&&end| end <= event_end).is_some() {
            n += 1;
        }
        e.text_tokens = n;
    }
    // Tokens past the last stored event's text cannot happen (the text is the events'); if
    // they did, they go to the last event rather than vanish.
    let rest = tokens.count() as u32;
    if let Some(last) = rec.events.iter_mut().rev().find(|e| e.text_bytes > 0) {
        last.text_tokens += rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::EventStamp;

    fn rec(bytes: &[u32]) -> Record {
        Record {
            events: bytes
                .iter()
                .map(|&b| EventStamp {
                    text_bytes: b,
                    tokens: u32::from(b > 0),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_token_belongs_to_the_event_that_completed_it() {
        // Events of 3, 0 (role-only), 4 and 2 bytes: text bytes 0..3, 3..7, 7..9.
        let mut r = rec(&[3, 0, 4, 2]);
        // Tokens ending at bytes 2 and 3 (first event), 5 (third), 8 and 9 (fourth; the one
        // ending at 8 started in the third).
        credit_tokens(&[2, 3, 5, 8, 9], &mut r);
        let got: Vec<u32> = r.events.iter().map(|e| e.text_tokens).collect();
        assert_eq!(got, vec![2, 0, 1, 2]);
        // A token split over two events counts once, for the later one.
        let mut r = rec(&[2, 2]);
        credit_tokens(&[4], &mut r);
        let got: Vec<u32> = r.events.iter().map(|e| e.text_tokens).collect();
        assert_eq!(got, vec![0, 1]);
    }
}
