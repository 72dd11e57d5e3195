//! Part of the collector (… → record → **collector** → summary …): the measured failures
//! grouped by kind, status and the server's message (`Record::failure`), for `summary.json`'s
//! `errors`. The message is read out of the kept bytes here, off the hot path; the number of
//! distinct groups is bounded (`MAX_GROUPS`), the rest counted under one message that says so.

use crate::record::{Outcome, Record};
use crate::summary::errors::{ErrorGroup, MAX_ERROR_GROUPS};
use std::collections::BTreeMap;

/// Distinct (kind, status, message) groups kept while a run goes on.
const MAX_GROUPS: usize = 1024;
/// The message of failures whose own message came after `MAX_GROUPS` others.
const TOO_MANY: &str = "(a message past the 1024 distinct ones kept)";

/// Failures by (outcome, status) and message.
#[derive(Clone, Debug, Default)]
pub(super) struct ErrorTally {
    groups: BTreeMap<(Outcome, u16), BTreeMap<Option<String>, u64>>,
    distinct: usize,
}

impl ErrorTally {
    /// One measured failure.
    pub(super) fn add(&mut self, rec: &Record) {
        let by_message = self.groups.entry((rec.outcome, rec.status)).or_default();
        let message = rec.failure.message();
        if let Some(n) = by_message.get_mut(&message) {
            *n += 1;
            return;
        }
        let key = match self.distinct < MAX_GROUPS {
            true => message,
            false => Some(TOO_MANY.to_string()),
        };
        let n = by_message.entry(key).or_insert(0);
        self.distinct += usize::from(*n == 0);
        *n += 1;
    }

    /// The `MAX_ERROR_GROUPS` most frequent groups: by count, then kind, status, message.
    pub(super) fn summary(&self) -> Vec<ErrorGroup> {
        let mut all: Vec<ErrorGroup> = self
            .groups
            .iter()
            .flat_map(|(&(outcome, status), by_message)| {
                by_message.iter().map(move |(message, &count)| ErrorGroup {
                    kind: outcome.kind_key(status),
                    status: (status != 0).then_some(status),
                    message: message.clone(),
                    count,
                })
            })
            .collect();
        all.sort_by(|a, b| {
            (b.count, &a.kind, a.status, &a.message).cmp(&(a.count, &b.kind, b.status, &b.message))
        });
        all.truncate(MAX_ERROR_GROUPS);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(outcome: Outcome, status: u16, body: &str) -> Record {
        let mut rec = Record {
            outcome,
            status,
            ..Default::default()
        };
        rec.failure.keep_body(body.as_bytes());
        rec
    }

    #[test]
    fn failures_group_by_kind_status_and_message_most_frequent_first() {
        let mut t = ErrorTally::default();
        let e500 = r#"{"error":{"message":"  simulated   error ","code":500}}"#;
        for _ in 0..3 {
            t.add(&failed(Outcome::HttpStatus, 500, e500));
        }
        t.add(&failed(
            Outcome::HttpStatus,
            500,
            r#"{"error":{"message":"other"}}"#,
        ));
        t.add(&failed(Outcome::Malformed, 200, "<title>Login</title>"));
        t.add(&failed(Outcome::Malformed, 200, "<title>Login</title>"));
        t.add(&failed(Outcome::Timeout, 0, ""));
        let s = t.summary();
        let row = |i: usize| {
            let g = &s[i];
            (g.kind.as_str(), g.status, g.message.as_deref(), g.count)
        };
        assert_eq!(row(0), ("http_500", Some(500), Some("simulated error"), 3));
        assert_eq!(row(1), ("malformed", Some(200), Some("Login"), 2));
        assert_eq!(row(2), ("http_500", Some(500), Some("other"), 1));
        assert_eq!(row(3), ("timeout", None, None, 1));
        assert_eq!(s.len(), 4);
    }

    /// Through the collector to the console: the top three reasons under the failure
    /// counts, and for vLLM's context refusal the flags that cap it.
    #[test]
    fn the_console_shows_the_top_three_and_the_flags_for_a_context_refusal() {
        let plan = crate::plan::Plan::defaults();
        let mut c = super::super::Collector::new(&plan, None).unwrap();
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens.","type":"BadRequestError","code":400}"#;
        let rows = [
            (Outcome::HttpStatus, 400, vllm, 4),
            (
                Outcome::HttpStatus,
                503,
                r#"{"error":{"message":"busy"}}"#,
                3,
            ),
            (Outcome::Malformed, 200, "<title>Sign in</title>", 2),
            (Outcome::ResetMidStream, 200, "", 1),
        ];
        let mut id = 0;
        for (outcome, status, body, n) in rows {
            for _ in 0..n {
                let mut r = failed(outcome, status, body);
                (r.id, r.sent_ns, r.done_ns) = (id, Some(id * 1_000), Some(id * 1_000 + 500));
                c.add(&r);
                id += 1;
            }
        }
        let facts = crate::collector::RunFacts {
            scheduled: id,
            ..Default::default()
        };
        let s = c.finish(facts).unwrap();
        assert_eq!(s.errors.len(), 4);
        let mut out = Vec::new();
        crate::output::console::print_console(&s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in [
            "    4 × http_400: This model's maximum context length is 2048 tokens. However, you requested 2100 tokens.\n",
            "    3 × http_503: busy\n",
            "    2 × malformed (status 200): Sign in\n",
            "  hint: the server refused 4 request(s) as longer than its context of 2048 tokens: shorten the prompts with --input-tokens or the answers with --output-tokens\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(
            !text.contains("× reset_mid_stream"),
            "three reasons only:\n{text}"
        );
    }

    #[test]
    fn groups_are_bounded_and_the_summary_keeps_ten() {
        let mut t = ErrorTally::default();
        for i in 0..MAX_GROUPS + 5 {
            t.add(&failed(Outcome::HttpStatus, 400, &format!("bad {i}")));
        }
        t.add(&failed(Outcome::HttpStatus, 400, "bad 7"));
        let s = t.summary();
        assert_eq!(s.len(), MAX_ERROR_GROUPS);
        assert_eq!((s[0].message.as_deref(), s[0].count), (Some(TOO_MANY), 5));
        assert_eq!((s[1].message.as_deref(), s[1].count), (Some("bad 7"), 2));
        assert_eq!(t.distinct, MAX_GROUPS + 1);
    }
}
