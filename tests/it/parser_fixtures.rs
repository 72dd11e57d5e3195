//! Integration test of stage 3–5 of the flow (worker → **http → sse → extract** → record)
//! against real bytes: every `*.wire.bin` captured from vLLM, llama.cpp and GuideLLM's mock
//! (`tests/data/sse`) is fed to `ringbench::__private::http::ResponseParser` whole, cut at every
//! byte, and cut into many small random reads; the heads, events and outcome must not depend
//! on the cuts. Known facts of each capture are then checked. No I/O beyond reading the
//! fixture files; the folder must exist (a missing folder fails, it never passes silently).

use crate::support::common;
pub(crate) use crate::support::wire::{parse, readings, wire_files, Rng, Trace};
use ringbench::__private::extract::{EventInfo, Usage};
use ringbench::__private::http::{Limits, Progress, ResponseError, ResponseParser, ResponseSink};

impl Trace {
    pub(crate) fn tokens(&self) -> usize {
        self.events.iter().filter(|e| e.carries_token()).count()
    }
    pub(crate) fn content_bytes(&self) -> u32 {
        self.events.iter().map(|e| e.content_bytes).sum()
    }
    fn usage(&self) -> Vec<Usage> {
        self.events.iter().filter_map(|e| e.usage).collect()
    }
    fn done_markers(&self) -> usize {
        self.events.iter().filter(|e| e.done_marker).count()
    }
    fn finishes(&self) -> usize {
        self.events.iter().filter(|e| e.finish).count()
    }
}

/// Every `<server>/<name>.wire.bin`, as ("server/name", bytes), sorted.
fn wire_fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = common::fixtures_dir();
    let out: Vec<(String, Vec<u8>)> = wire_files(&dir)
        .into_iter()
        .map(|(name, path)| (name, std::fs::read(path).expect("read fixture")))
        .collect();
    assert!(
        out.len() >= 17,
        "expected at least 17 wire fixtures in {}, found {}",
        dir.display(),
        out.len()
    );
    out
}

fn fixture(name: &str) -> Trace {
    let (_, bytes) = wire_fixtures()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("fixture {name} missing"));
    let mut p = ResponseParser::new(Limits::default());
    parse(&mut p, &mut std::iter::once(&bytes[..]))
}

#[test]
fn every_fixture_parses_the_same_at_every_single_cut() {
    let mut p = ResponseParser::new(Limits::default());
    for (name, wire) in wire_fixtures() {
        let whole = parse(&mut p, &mut std::iter::once(&wire[..]));
        assert!(
            matches!(whole.end, Some(Ok(Progress::Done { .. }))),
            "{name}: {whole:?}"
        );
        for (how, reads) in readings(&wire, &mut Rng(0), true, 0) {
            assert_eq!(
                parse(&mut p, &mut reads.into_iter()),
                whole,
                "{name}: {how}"
            );
        }
    }
}

#[test]
fn every_fixture_parses_the_same_in_random_small_reads() {
    let mut p = ResponseParser::new(Limits::default());
    let mut rng = Rng(0x5eed_cafe);
    for (name, wire) in wire_fixtures() {
        let whole = parse(&mut p, &mut std::iter::once(&wire[..]));
        for (how, reads) in readings(&wire, &mut rng, false, 200) {
            assert_eq!(
                parse(&mut p, &mut reads.into_iter()),
                whole,
                "{name}: {how}"
            );
        }
    }
}

fn usage(prompt: u32, completion: u32, cached: Option<u32>) -> Usage {
    Usage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        cached_tokens: cached,
    }
}

const DONE_KEEP: Option<Result<Progress, ResponseError>> =
    Some(Ok(Progress::Done { keep_alive: true }));

/// `t` (of capture `name`), checked to be one head of `status`, streamed or not, and a clean
/// end that keeps the connection.
pub(crate) fn clean(t: Trace, name: &str, status: u16, streamed: bool) -> Trace {
    assert_eq!(
        (t.heads.clone(), t.end),
        (vec![(status, streamed)], DONE_KEEP),
        "{name}"
    );
    t
}

#[test]
fn vllm_chat_stream_usage() {
    let t = clean(
        fixture("vllm-cpu/chat_stream_usage"),
        "vllm-cpu/chat_stream_usage",
        200,
        true,
    );
    assert_eq!((t.events.len(), t.tokens(), t.content_bytes()), (11, 8, 37));
    // Role-only first chunk ("content":""): an event, not a token.
    assert!(!t.events[0].carries_token() && !t.events[0].finish);
    // finish_reason on the last content chunk, usage on its own chunk with empty choices.
    assert!(t.events[8].finish && t.events[8].carries_token());
    assert!(t.events[9].usage.is_some() && !t.events[9].carries_token());
    assert_eq!(t.usage(), vec![usage(19, 8, None)]);
    assert!(t.events[10].done_marker);
    assert_eq!((t.done_markers(), t.finishes()), (1, 1));
    assert!(t
        .events
        .iter()
        .all(|e| !e.error && e.server_mono_ns.is_none()));
}

#[test]
fn vllm_merges_tokens_into_fewer_events() {
    let t = fixture("vllm-cpu/chat_stream_usage_64");
    assert_eq!((t.events.len(), t.tokens()), (24, 21));
    assert_eq!(t.usage(), vec![usage(41, 64, None)]);
    let stop = fixture("vllm-cpu/chat_stream_stop");
    assert_eq!(
        (stop.tokens(), stop.usage()),
        (10, vec![usage(14, 11, None)])
    );
    let completions = fixture("vllm-cpu/completions_stream_usage");
    assert_eq!((completions.tokens(), completions.content_bytes()), (8, 33));
    assert_eq!(completions.usage(), vec![usage(4, 8, None)]);
}

#[test]
fn llama_cpp_completions_attach_usage_to_the_last_chunk() {
    let t = fixture("llama-cpp-server/completions_stream_usage");
    assert_eq!(t.end, DONE_KEEP);
    assert_eq!((t.events.len(), t.tokens(), t.content_bytes()), (10, 8, 31));
    let last = t.events[8];
    assert!(last.finish && last.usage.is_some() && !last.carries_token());
    assert_eq!(t.usage(), vec![usage(4, 8, Some(3))]);
    assert!(t.events[9].done_marker);
}

#[test]
fn llama_cpp_chat_null_role_chunk_and_separate_usage() {
    let t = fixture("llama-cpp-server/chat_stream_usage");
    // Two events share the first HTTP chunk; the role chunk has "content":null.
    assert_eq!((t.events.len(), t.tokens(), t.content_bytes()), (12, 8, 45));
    assert!(!t.events[0].carries_token() && t.events[1].carries_token());
    assert!(t.events[9].finish && !t.events[9].carries_token());
    assert!(t.events[10].usage.is_some() && !t.events[10].finish);
    assert_eq!(t.usage(), vec![usage(19, 8, Some(18))]);
    let long = fixture("llama-cpp-server/chat_stream_usage_64");
    assert_eq!((long.events.len(), long.tokens()), (68, 64));
    assert_eq!(long.usage(), vec![usage(41, 64, Some(0))]);
}

#[test]
fn llama_cpp_close_after_last_chunk_is_a_complete_response() {
    // This capture ends "0\r\n" without the final CRLF: the server closed right after the
    // last chunk. All data arrived; it must not count as a reset.
    let t = fixture("llama-cpp-server/chat_stream_stop");
    assert_eq!(t.end, Some(Ok(Progress::Done { keep_alive: false })));
    assert_eq!((t.tokens(), t.done_markers()), (11, 1));
    assert_eq!(t.usage(), vec![usage(14, 11, Some(4))]);
}

#[test]
fn guidellm_mock_streams() {
    let t = clean(
        fixture("guidellm-mock/chat_stream_usage"),
        "guidellm-mock/chat_stream_usage",
        200,
        true,
    );
    assert_eq!((t.events.len(), t.tokens(), t.content_bytes()), (11, 8, 25));
    assert_eq!(t.usage(), vec![usage(9, 8, None)]);
    let c = fixture("guidellm-mock/completions_stream_usage");
    assert_eq!((c.tokens(), c.usage()), (8, vec![usage(7, 8, None)]));
    let long = fixture("guidellm-mock/chat_stream_usage_64");
    assert_eq!(
        (long.tokens(), long.usage()),
        (16, vec![usage(23, 16, None)])
    );
}

#[test]
fn nostream_bodies_are_exactly_one_event_with_content_and_usage() {
    for (name, content_bytes, want) in [
        ("vllm-cpu/chat_nostream", 35, usage(19, 8, None)),
        ("llama-cpp-server/chat_nostream", 41, usage(19, 8, Some(18))),
        ("guidellm-mock/chat_nostream", 25, usage(9, 8, None)),
    ] {
        let t = clean(fixture(name), name, 200, false);
        assert_eq!(t.events.len(), 1, "{name}");
        let ev = t.events[0];
        assert_eq!(
            (ev.content_bytes, ev.usage, ev.finish),
            (content_bytes, Some(want), true)
        );
    }
}

#[test]
fn bad_model_is_404_without_events_or_a_stream_for_lenient_servers() {
    let name = "vllm-cpu/err_bad_model_stream";
    let vllm = clean(fixture(name), name, 404, false);
    assert!(vllm.events.is_empty());
    // llama.cpp and the GuideLLM mock ignore the model name and stream anyway.
    assert_eq!(fixture("llama-cpp-server/err_bad_model_stream").tokens(), 4);
    assert_eq!(fixture("guidellm-mock/err_bad_model_stream").tokens(), 4);
}

#[test]
fn no_fixture_carries_reasoning_or_error_events() {
    for (name, _) in wire_fixtures() {
        let t = fixture(&name);
        assert!(
            t.events.iter().all(|e| e.reasoning_bytes == 0 && !e.error),
            "{name}"
        );
    }
}

mod cutting {
    //! Property: any cutting of a synthetic chunked SSE response into reads gives the same
    //! heads, events and outcome as one read, and those events are the ones encoded.

    use super::*;
    use proptest::prelude::*;
    use proptest::sample::{select, Index};

    /// One synthetic event: which field carries the text, and the text.
    #[derive(Clone, Debug)]
    enum Ev {
        Content(String),
        Reasoning(String),
        Text(String),
        Usage(u32),
        Done,
    }

    fn text() -> impl Strategy<Value = String> {
        let chars = vec!['a', 'Z', ' ', '"', '\\', '\n', '/', 'é', '中', '🙂', ':'];
        prop::collection::vec(select(chars), 0..10).prop_map(|c| c.into_iter().collect())
    }

    fn event() -> impl Strategy<Value = Ev> {
        prop_oneof![
            4 => text().prop_map(Ev::Content),
            1 => text().prop_map(Ev::Reasoning),
            1 => text().prop_map(Ev::Text),
            1 => (0u32..100_000).prop_map(Ev::Usage),
            1 => Just(Ev::Done),
        ]
    }

    fn json_str(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    fn payload(ev: &Ev) -> String {
        let choice = |inner: String| {
            format!(
                r#"{{"choices":[{{"index":0,{inner},"logprobs":{{"content":"xx"}},"finish_reason":null}}]}}"#
            )
        };
        match ev {
            Ev::Content(s) => choice(format!(r#""delta":{{"content":{}}}"#, json_str(s))),
            Ev::Reasoning(s) => choice(format!(
                r#""delta":{{"reasoning_content":{}}}"#,
                json_str(s)
            )),
            Ev::Text(s) => choice(format!(r#""text":{}"#, json_str(s))),
            Ev::Usage(n) => {
                format!(r#"{{"choices":[],"usage":{{"prompt_tokens":3,"completion_tokens":{n}}}}}"#)
            }
            Ev::Done => "[DONE]".to_string(),
        }
    }

    fn expected(ev: &Ev) -> EventInfo {
        let len = |s: &String| s.len() as u32;
        match ev {
            Ev::Content(s) | Ev::Text(s) => EventInfo {
                content_bytes: len(s),
                visible: s.chars().any(|c| !c.is_whitespace()),
                // `"content": ""` without a role: a token whose text is not decodable yet.
                empty_text: s.is_empty(),
                ..EventInfo::default()
            },
            Ev::Reasoning(s) => EventInfo {
                reasoning_bytes: len(s),
                ..EventInfo::default()
            },
            Ev::Usage(n) => EventInfo {
                usage: Some(Usage {
                    prompt_tokens: Some(3),
                    completion_tokens: Some(*n),
                    cached_tokens: None,
                }),
                ..EventInfo::default()
            },
            Ev::Done => EventInfo {
                done_marker: true,
                ..EventInfo::default()
            },
        }
    }

    /// SSE body: each event with optional comment / `event:` / `id:` lines before its data,
    /// ended by one of the separators real servers use.
    fn sse_body(events: &[Ev], style: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for (i, ev) in events.iter().enumerate() {
            let s = style.get(i).copied().unwrap_or(0);
            let eol: &[u8] = if s & 1 == 0 { b"\n" } else { b"\r\n" };
            if s & 2 != 0 {
                body.extend_from_slice(b": ping");
                body.extend_from_slice(eol);
            }
            if s & 4 != 0 {
                body.extend_from_slice(b"event: message\r\nid: 9");
                body.extend_from_slice(eol);
            }
            body.extend_from_slice(b"data: ");
            body.extend_from_slice(payload(ev).as_bytes());
            body.extend_from_slice(eol);
            body.extend_from_slice(if s & 8 != 0 { b"\r\n" } else { eol });
        }
        body
    }

    /// Chunked framing with the given chunk sizes (cycled), cutting events anywhere.
    fn chunked(body: &[u8], sizes: &[usize]) -> Vec<u8> {
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for (i, chunk) in split_var(body, sizes).into_iter().enumerate() {
            let ext = if i % 3 == 1 { ";x=y" } else { "" };
            wire.extend_from_slice(format!("{:X}{ext}\r\n", chunk.len()).as_bytes());
            wire.extend_from_slice(chunk);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(b"0\r\n\r\n");
        wire
    }

    /// `body` cut into pieces of the given sizes, cycled.
    fn split_var<'a>(body: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut rest = body;
        for &n in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (a, b) = rest.split_at(n.min(rest.len()));
            out.push(a);
            rest = b;
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn any_cutting_gives_the_events_of_one_read(
            events in prop::collection::vec(event(), 0..12),
            style in prop::collection::vec(0u8..16, 12),
            chunk_sizes in prop::collection::vec(1usize..80, 1..8),
            cuts in prop::collection::vec(any::<Index>(), 0..24),
        ) {
            let wire = chunked(&sse_body(&events, &style), &chunk_sizes);
            let mut p = ResponseParser::new(Limits::default());
            let whole = parse(&mut p, &mut std::iter::once(&wire[..]));
            let want: Vec<EventInfo> = events.iter().map(expected).collect();
            prop_assert_eq!(&whole.events, &want);
            prop_assert_eq!(whole.end, DONE_KEEP);

            let mut at: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
            at.push(0);
            at.push(wire.len());
            at.sort_unstable();
            let mut reads = at.windows(2).map(|w| &wire[w[0]..w[1]]);
            let got = parse(&mut p, &mut reads);
            prop_assert_eq!(got, whole);
        }
    }
}

mod steady_state {
    //! The hot path may not allocate per event once warm: a thread-local allocation counter
    //! (so parallel tests do not disturb it) around a second pass over every fixture.

    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    struct Counting;

    fn count() {
        // try_with: the counter may be gone while a thread is torn down.
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    }

    // SAFETY: every call forwards unchanged to the system allocator; counting touches only
    // a const-initialised thread-local Cell, which never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count();
            // SAFETY: same contract as the caller's.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;

    #[derive(Default)]
    struct Tally(u64);
    impl ResponseSink for Tally {
        fn head(&mut self, status: u16, _: bool) {
            self.0 += u64::from(status);
        }
        fn event(&mut self, ev: &EventInfo) {
            self.0 += u64::from(ev.content_bytes) + 1;
        }
    }

    fn run(p: &mut ResponseParser, wire: &[u8], read_size: usize) -> u64 {
        let mut sink = Tally::default();
        p.reset();
        for read in wire.chunks(read_size) {
            if p.feed(read, &mut sink) != Ok(Progress::NeedMore) {
                return sink.0;
            }
        }
        let _ = p.eof(&mut sink);
        sink.0
    }

    #[test]
    fn parsing_allocates_nothing_once_warm() {
        let fixtures = wire_fixtures();
        let mut p = ResponseParser::new(Limits::default());
        let mut warm = Vec::with_capacity(fixtures.len() * 3);
        for (_, wire) in &fixtures {
            for size in [wire.len(), 7, 1] {
                warm.push(run(&mut p, wire, size));
            }
        }
        let mut again = Vec::with_capacity(warm.len());
        let before = ALLOCS.with(Cell::get);
        for (_, wire) in &fixtures {
            for size in [wire.len(), 7, 1] {
                again.push(run(&mut p, wire, size));
            }
        }
        let allocs = ALLOCS.with(Cell::get) - before;
        assert_eq!(again, warm);
        assert_eq!(
            allocs, 0,
            "allocations in the second pass over every fixture"
        );
    }

    /// The other APIs' captures too, each through a parser for the endpoint it answered
    /// (pooling answers through the scanner, which never gathers the body).
    #[test]
    fn the_other_apis_allocate_nothing_once_warm() {
        let captures = crate::parser_apis::captures();
        let mut parsers: Vec<ResponseParser> = captures
            .iter()
            .map(|c| ResponseParser::for_endpoint(Limits::default(), c.endpoint))
            .collect();
        let mut pass = |out: &mut Vec<u64>| {
            for (c, p) in captures.iter().zip(parsers.iter_mut()) {
                for size in [c.wire.len(), 7, 1] {
                    out.push(run(p, &c.wire, size));
                }
            }
        };
        let mut warm = Vec::with_capacity(captures.len() * 3);
        pass(&mut warm);
        let mut again = Vec::with_capacity(warm.len());
        let before = ALLOCS.with(Cell::get);
        pass(&mut again);
        let allocs = ALLOCS.with(Cell::get) - before;
        assert_eq!(again, warm);
        assert_eq!(
            allocs, 0,
            "allocations in the second pass over every capture"
        );
    }
}

mod garbage {
    //! No input may make the parser panic (these paths will be fuzzed), and none may make what
    //! it reports depend on how the bytes were cut: arbitrary bytes and fixtures with flipped
    //! bytes, cut into arbitrary reads, end in a result, never a panic, and give the heads,
    //! events (so usage and token counts) and outcome of the same bytes in one read.

    use super::*;
    use proptest::prelude::*;
    use proptest::sample::Index;

    /// Small bounds, so that garbage reaches each limit's error path too.
    const LIMITS: Limits = Limits {
        max_head_bytes: 512,
        max_event_bytes: 512,
        max_body_bytes: 1024,
    };

    /// Parses `wire` in one read, then cut at all of `cuts` at once, at each one alone, and
    /// one byte at a time: every cutting must give the one read's trace (its heads, its events
    /// with their usage and token flags, its outcome).
    fn same_at_every_cut(wire: &[u8], cuts: &[Index]) -> Result<(), TestCaseError> {
        let mut p = ResponseParser::new(LIMITS);
        let whole = parse(&mut p, &mut std::iter::once(wire));
        prop_assert!(whole.end.is_some(), "the parse ended: {:?}", whole);
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        at.extend([0, wire.len()]);
        at.sort_unstable();
        let got = parse(&mut p, &mut at.windows(2).map(|w| &wire[w[0]..w[1]]));
        prop_assert_eq!(&got, &whole, "cut at {:?}", at);
        prop_assert_eq!(
            (got.tokens(), got.usage()),
            (whole.tokens(), whole.usage()),
            "cut at {:?}",
            at
        );
        for &cut in &at {
            let (a, b) = wire.split_at(cut);
            let got = parse(&mut p, &mut [a, b].into_iter());
            prop_assert_eq!(&got, &whole, "cut at byte {}", cut);
        }
        let bytes = parse(&mut p, &mut wire.chunks(1));
        prop_assert_eq!(&bytes, &whole, "byte-at-a-time");
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn arbitrary_bytes_after_a_head_parse_alike_at_every_cut(
            head in prop::sample::select(vec![
                &b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"[..],
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
                b"HTTP/1.1 200 OK\r\ncontent-length: 40\r\n\r\n",
                b"",
            ]),
            body in prop::collection::vec(any::<u8>(), 0..600),
            cuts in prop::collection::vec(any::<Index>(), 0..8),
        ) {
            let mut wire = head.to_vec();
            wire.extend_from_slice(&body);
            same_at_every_cut(&wire, &cuts)?;
        }

        #[test]
        fn fixtures_with_flipped_bytes_parse_alike_at_every_cut(
            which in any::<Index>(),
            flips in prop::collection::vec((any::<Index>(), any::<u8>()), 1..6),
            cuts in prop::collection::vec(any::<Index>(), 0..8),
        ) {
            let fixtures = wire_fixtures();
            let mut wire = fixtures[which.index(fixtures.len())].1.clone();
            for (at, byte) in flips {
                let i = at.index(wire.len());
                wire[i] = byte;
            }
            same_at_every_cut(&wire, &cuts)?;
        }
    }
}
