//! Fuzz target: the whole response path (head, framing, SSE, extractor) fed arbitrary bytes.
//! The first byte picks a cut point; feeding the rest whole and cut in two must give the
//! same heads, events and end (the parser is a push parser: read boundaries may not matter),
//! and nothing may panic. Seeds: `fixtures/sse/*/*.wire.bin`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringbench::__private::extract::EventInfo;
use ringbench::__private::http::{Limits, ResponseParser, ResponseSink};

#[derive(Default, PartialEq, Debug)]
struct Seen {
    heads: Vec<(u16, bool)>,
    events: Vec<(bool, bool, u32, u32)>,
}

impl ResponseSink for Seen {
    fn head(&mut self, status: u16, streaming: bool) {
        self.heads.push((status, streaming));
    }
    fn event(&mut self, ev: &EventInfo) {
        let u = ev.usage.and_then(|u| u.completion_tokens).unwrap_or(0);
        self.events
            .push((ev.done_marker, ev.error, ev.content_bytes as u32, u));
    }
}

/// What the parser made of the reads, and whether it stopped before the last byte.
fn run(parts: &[&[u8]]) -> (Seen, String, bool) {
    let limits = Limits {
        max_head_bytes: 4096,
        max_event_bytes: 4096,
        max_body_bytes: 1 << 16,
    };
    let mut p = ResponseParser::new(limits);
    let mut seen = Seen::default();
    let mut end = String::new();
    for (i, part) in parts.iter().enumerate() {
        match p.feed(part, &mut seen) {
            Ok(ringbench::__private::http::Progress::NeedMore) => continue,
            other => {
                end = format!("{other:?}");
                let unread = parts[i + 1..].iter().any(|rest| !rest.is_empty());
                return (seen, end, unread);
            }
        }
    }
    if end.is_empty() {
        end = format!("{:?}", p.eof(&mut seen));
    }
    (seen, end, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let whole = run(&[rest]);
    let at = (cut as usize * rest.len()) / 255;
    let (a, b) = rest.split_at(at.min(rest.len()));
    let mut split = run(&[a, b]);
    // A response that ends exactly at the cut, with bytes after it in the next read: whole,
    // those bytes forbid reuse; cut, the parser has not read them (see the unit test
    // `bytes_after_a_complete_response_forbid_reuse_when_seen`). Everything else must agree.
    if split.2 && split.1 == "Ok(Done { keep_alive: true })" {
        split.1 = "Ok(Done { keep_alive: false })".to_string();
    }
    assert_eq!((whole.0, whole.1), (split.0, split.1), "cut at {at}");
});
