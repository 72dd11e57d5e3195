//! Stage 3 of the flow (worker → **http** → sse → extract → record): a push parser for one
//! HTTP/1.1 response, reused across the requests of a connection. The worker feeds whatever
//! each read returned; the parser finds the head (httparse), frames the body (chunked,
//! `Content-Length` or close-delimited), splits SSE events and extracts their fields, and
//! reports through a `ResponseSink`. The head is read by `head.rs`, the one framing of
//! heads the blocking client shares. It may not do I/O, await, or allocate per event once its
//! buffers have grown; every buffer has a bound from `Limits`, and no input makes it panic.
//!
//! A 2xx non-streamed answer of a pooling endpoint (embeddings, rerank, score) is not
//! gathered: `PooledScanner` reads its slices as they arrive, and its bytes are only counted
//! against `Limits::max_body_bytes`. Every other 2xx JSON body is gathered whole (bounded
//! the same way) and read at its end. A pooling answer whose shape has no room for the
//! simulator's `ringbench_ns` stamp (TEI's bare array) takes it from the head's
//! `x-ringbench-ns` header.
//!
//! Non-2xx responses: the sink gets `head(status, ..)` and **no events**; the body is read
//! to its end by its framing so the connection can be reused, and handed to the sink only as
//! a failure's reason (`failure_body`). The status alone decides the record's outcome, so a
//! server's error body cannot be miscounted as output. A 2xx body or event that does not
//! parse, and an error event's payload, go to the sink the same way before the error (or
//! the event) is reported.
//!
//! Bytes after the end of a response in the same feed (which a non-pipelining client never
//! asked for) make `keep_alive` false: the connection's framing can no longer be trusted.

use crate::extract::{EventInfo, ExtractError, Extractor, PooledScanner};
use crate::http::chunked::{ChunkError, ChunkedDecoder};
use crate::http::head::{framing_of, parse_head_bytes, value_at, Framing, Head, HeadError};
use crate::record::Outcome;
use crate::sse::{SseOversized, SseSplitter};
use std::cell::RefCell;
use std::rc::Rc;

/// Bounds on what one response may make the parser hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Status line plus headers (default 16 KiB).
    pub max_head_bytes: usize,
    /// One SSE event, separators included (default 1 MiB).
    pub max_event_bytes: usize,
    /// A whole non-streamed JSON body (default 16 MiB).
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 16 * 1024,
            max_event_bytes: 1024 * 1024,
            max_body_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Where a response stands after a feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The response has not ended: feed the next read.
    NeedMore,
    /// The response ended.
    Done {
        /// The connection may carry the next request.
        keep_alive: bool,
    },
}

/// Receives what the parser finds, in wire order.
pub trait ResponseSink {
    /// Once, when the status line and headers are parsed (1xx interim heads are skipped).
    /// `streaming`: the content type is `text/event-stream`.
    fn head(&mut self, status: u16, streaming: bool);
    /// Once per SSE event with data (streaming, 2xx), or once for a whole non-streamed 2xx
    /// JSON body.
    fn event(&mut self, ev: &EventInfo);
    /// Right after `event`, the generated text it carried (unescaped), only when
    /// `ResponseParser::capture_text` is on and the text is not empty.
    fn text(&mut self, _text: &[u8]) {}
    /// Just before `head`, the value of the final head's `x-request-id` header, if it has
    /// one (the first, when several).
    fn request_id(&mut self, _value: &[u8]) {}
    /// Just before `head`, the value of the final head's `content-type` header, if it has
    /// one (the last, when several).
    fn content_type(&mut self, _value: &[u8]) {}
    /// A piece of a failure's body, in order: a non-2xx body as it arrives, or the bytes of a
    /// 2xx body or SSE event that did not parse, just before the error. The sink keeps what
    /// its bound allows.
    fn failure_body(&mut self, _piece: &[u8]) {}
    /// Right after an `event` that is an error (`EventInfo::error`), its payload.
    fn error_payload(&mut self, _payload: &[u8]) {}
}

/// Why a response could not be read; `outcome` names the record outcome it ends in.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseError {
    /// Status line or headers do not parse, or contradict each other (two lengths, 101).
    #[error("malformed response head")]
    BadHead,
    /// Head longer than `Limits::max_head_bytes`, or more than 64 headers.
    #[error("response head too large")]
    HeadTooLarge,
    /// Chunked framing broken (or a size line / trailer past its bound).
    #[error("bad chunked framing: {0}")]
    BadChunk(ChunkError),
    /// An SSE event's `data` is not a JSON object (nor `[DONE]`).
    #[error("bad SSE event: {0}")]
    BadEvent(ExtractError),
    /// A non-streamed body is not a JSON object (or not a valid pooling answer).
    #[error("bad JSON body: {0}")]
    BadBody(ExtractError),
    /// One SSE event longer than `Limits::max_event_bytes`.
    #[error("SSE event too large")]
    EventTooLarge,
    /// A non-streamed body longer than `Limits::max_body_bytes`.
    #[error("response body too large")]
    BodyTooLarge,
    /// The peer closed before a complete head arrived.
    #[error("connection closed before the response head")]
    ClosedBeforeHead,
    /// The peer closed before a chunked or length-framed body ended.
    #[error("connection closed before the body ended")]
    Truncated,
}

impl ResponseError {
    /// The record outcome this error ends in: `oversized` for a bound, `malformed` for bad framing
    /// or JSON, a reset for an early close.
    pub fn outcome(self) -> Outcome {
        match self {
            ResponseError::HeadTooLarge
            | ResponseError::EventTooLarge
            | ResponseError::BodyTooLarge
            | ResponseError::BadChunk(ChunkError::LineTooLong) => Outcome::Oversized,
            ResponseError::BadHead
            | ResponseError::BadChunk(_)
            | ResponseError::BadEvent(_)
            | ResponseError::BadBody(_) => Outcome::Malformed,
            ResponseError::ClosedBeforeHead => Outcome::ResetBeforeHead,
            ResponseError::Truncated => Outcome::ResetMidStream,
        }
    }
}

impl From<HeadError> for ResponseError {
    fn from(e: HeadError) -> Self {
        match e {
            HeadError::Bad => ResponseError::BadHead,
            HeadError::TooLarge => ResponseError::HeadTooLarge,
        }
    }
}

impl From<SseOversized> for ResponseError {
    fn from(_: SseOversized) -> Self {
        ResponseError::EventTooLarge
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Head,
    Body,
    Done,
    Failed(ResponseError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyKind {
    Sse,
    Json,
    /// A pooling endpoint's JSON answer, scanned as it arrives.
    Pooled,
    /// Non-2xx: read to the end by framing, then dropped.
    Discard,
}

/// Parser for the responses of one connection; `reset` before each request.
pub struct ResponseParser {
    limits: Limits,
    phase: Phase,
    head_seen: bool,
    status: u16,
    keep_alive: bool,
    framing: Framing,
    kind: BodyKind,
    /// Head bytes carried over while a head spans reads (≤ `max_head_bytes`).
    head_buf: Vec<u8>,
    chunked: ChunkedDecoder,
    sse: SseSplitter,
    /// A non-streamed body, gathered whole (≤ `max_body_bytes`).
    json: Vec<u8>,
    /// Scratch for reading each payload, kept between payloads only for its capacity: one a
    /// worker's connections share (`sharing`), so an open stream does not hold the ~20 KB
    /// simd-json's buffers grow to. Borrowed only inside `feed`/`eof`, which never await.
    extractor: Rc<RefCell<Extractor>>,
    /// Reads a pooling answer as it arrives (`BodyKind::Pooled`).
    pooled: PooledScanner,
    /// Bytes of the pooling answer so far (≤ `max_body_bytes`).
    pooled_bytes: usize,
    /// The head's `STAMP_HEADER`: the server's write stamp of a body with no room for it.
    head_stamp_ns: Option<u64>,
}

impl ResponseParser {
    /// A parser waiting for a response head, held to `limits`, reading chat (or
    /// completions) answers.
    pub fn new(limits: Limits) -> Self {
        Self::for_endpoint(limits, crate::plan::Endpoint::Chat)
    }

    /// `new`, reading the answers of `endpoint`.
    pub fn for_endpoint(limits: Limits, endpoint: crate::plan::Endpoint) -> Self {
        let extractor = Rc::new(RefCell::new(Extractor::for_endpoint(endpoint)));
        Self::sharing(limits, extractor)
    }

    /// `new`, reading payloads with `extractor` (which other parsers of the same thread may
    /// share: its buffers are scratch, its endpoint and text capture the parsers'),
    /// reading its endpoint's answers. The head carry-over grows on first need (a head split
    /// across reads), not up front, so a connection waiting for its first byte holds little.
    pub fn sharing(limits: Limits, extractor: Rc<RefCell<Extractor>>) -> Self {
        let endpoint = extractor.borrow().endpoint();
        ResponseParser {
            limits,
            phase: Phase::Head,
            head_seen: false,
            status: 0,
            keep_alive: false,
            framing: Framing::Close,
            kind: BodyKind::Discard,
            head_buf: Vec::new(),
            chunked: ChunkedDecoder::new(),
            sse: SseSplitter::new(limits.max_event_bytes),
            json: Vec::new(),
            extractor,
            pooled: PooledScanner::new(endpoint),
            pooled_bytes: 0,
            head_stamp_ns: None,
        }
    }

    /// Forget the previous response (buffers keep their capacity).
    pub fn reset(&mut self) {
        self.phase = Phase::Head;
        self.head_seen = false;
        self.status = 0;
        self.keep_alive = false;
        self.head_buf.clear();
        self.chunked.reset();
        self.sse.reset();
        self.json.clear();
        self.pooled.reset();
        self.pooled_bytes = 0;
        self.head_stamp_ns = None;
    }

    /// Hand each event's generated text to the sink (for a client-side token count).
    pub fn capture_text(&mut self, on: bool) {
        self.extractor.borrow_mut().capture_text(on);
    }

    /// A final (non-1xx) response head has been parsed.
    pub fn head_seen(&self) -> bool {
        self.head_seen
    }

    /// Status of the final head, 0 before it.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Bytes of one read. After an error every later call returns the same error.
    pub fn feed(
        &mut self,
        data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<Progress, ResponseError> {
        let result = match self.phase {
            Phase::Failed(e) => return Err(e),
            Phase::Done => return Ok(self.after_done(data)),
            Phase::Head => match self.parse_head(data, sink) {
                Ok(Some(used)) => self.body_bytes(data.get(used..).unwrap_or_default(), sink),
                Ok(None) => Ok(Progress::NeedMore),
                Err(e) => Err(e),
            },
            Phase::Body => self.body_bytes(data, sink),
        };
        self.fail_on(result)
    }

    /// A feed after the end: an empty read changes nothing, stray bytes forbid reuse.
    fn after_done(&mut self, data: &[u8]) -> Progress {
        self.keep_alive &= data.is_empty();
        Progress::Done {
            keep_alive: self.keep_alive,
        }
    }

    /// The peer closed the connection: ends a close-delimited body, else an error.
    pub fn eof(&mut self, sink: &mut impl ResponseSink) -> Result<Progress, ResponseError> {
        let result = match self.phase {
            Phase::Failed(e) => return Err(e),
            Phase::Done => return Ok(Progress::Done { keep_alive: false }),
            Phase::Head => Err(ResponseError::ClosedBeforeHead),
            Phase::Body if self.body_complete_at_eof() => self.finish_body(false, sink),
            Phase::Body => Err(ResponseError::Truncated),
        };
        self.fail_on(result)
    }

    /// A close-delimited body ends at eof by definition; a chunked one is complete once its
    /// zero-size last chunk arrived, even if the peer closed before the final CRLF (a
    /// llama.cpp capture does exactly that: counting it as a reset would invent a failure).
    fn body_complete_at_eof(&self) -> bool {
        match self.framing {
            Framing::Close => true,
            Framing::Chunked => self.chunked.in_trailer(),
            Framing::Length { .. } => false,
        }
    }

    fn fail_on(
        &mut self,
        result: Result<Progress, ResponseError>,
    ) -> Result<Progress, ResponseError> {
        if let Err(e) = result {
            self.phase = Phase::Failed(e);
        }
        result
    }

    /// Find the final head in `data` (after any carried bytes); `Some(bytes of data used)`.
    fn parse_head(
        &mut self,
        data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<Option<usize>, ResponseError> {
        let mut used = 0;
        loop {
            let input = data.get(used..).unwrap_or_default();
            let Some((carried, head)) = self.next_head(input)? else {
                return Ok(None);
            };
            if !(100..200).contains(&head.status) {
                // Parsed from the carried bytes when there were any, else from `input`: a
                // value is a range of that buffer.
                let from = if carried > 0 {
                    &self.head_buf[..]
                } else {
                    input
                };
                if let Some(v) = value_at(from, head.request_id) {
                    sink.request_id(v);
                }
                if let Some(v) = value_at(from, head.content_type) {
                    sink.content_type(v);
                }
            }
            // A head found in the carried bytes alone would have been found a read ago.
            used += head
                .len
                .checked_sub(carried)
                .ok_or(ResponseError::BadHead)?;
            self.head_buf.clear();
            match head.status {
                101 => return Err(ResponseError::BadHead),
                // Interim heads (100 Continue, 103 Early Hints) precede the real one.
                100..=199 => continue,
                _ => {
                    self.apply_head(&head, sink);
                    return Ok(Some(used));
                }
            }
        }
    }

    /// Parse straight from `input` when nothing is carried (the common case), else from the
    /// carried bytes plus as much of `input` as the bound allows. Returns how many bytes were
    /// carried from earlier reads with the head.
    fn next_head(&mut self, input: &[u8]) -> Result<Option<(usize, Head)>, ResponseError> {
        let max = self.limits.max_head_bytes;
        if self.head_buf.is_empty() {
            // Never look past the bound: a fault beyond it must read the same (HeadTooLarge)
            // whether the head came in one read or was cut (a fuzzing finding).
            let window = &input[..input.len().min(max)];
            if let Some(head) = parse_head_bytes(window)? {
                return Ok(Some((0, head)));
            }
            return self.carry(input).map(|()| None);
        }
        let carried = self.head_buf.len();
        let take = input.len().min(max.saturating_sub(carried));
        self.head_buf.extend_from_slice(&input[..take]);
        match parse_head_bytes(&self.head_buf)? {
            Some(head) => Ok(Some((carried, head))),
            None if self.head_buf.len() >= max => Err(ResponseError::HeadTooLarge),
            None => Ok(None),
        }
    }

    fn carry(&mut self, partial: &[u8]) -> Result<(), ResponseError> {
        if partial.len() >= self.limits.max_head_bytes {
            return Err(ResponseError::HeadTooLarge);
        }
        self.head_buf.extend_from_slice(partial);
        Ok(())
    }

    fn apply_head(&mut self, head: &Head, sink: &mut impl ResponseSink) {
        self.framing = framing_of(head);
        self.keep_alive = head.reusable(self.framing);
        self.kind = match head.status {
            // No content: nothing to extract, and not a stream to judge.
            204 | 304 => BodyKind::Discard,
            200..=299 if head.sse => BodyKind::Sse,
            200..=299 if !self.extractor.borrow().endpoint().generates() => BodyKind::Pooled,
            200..=299 => BodyKind::Json,
            _ => BodyKind::Discard,
        };
        self.status = head.status;
        self.head_stamp_ns = head.stamp_ns;
        self.head_seen = true;
        self.phase = Phase::Body;
        sink.head(head.status, head.sse);
    }

    fn body_bytes(
        &mut self,
        data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<Progress, ResponseError> {
        match self.framing {
            Framing::Close => self.deliver(data, sink).map(|()| Progress::NeedMore),
            Framing::Length { left } => self.length_bytes(left, data, sink),
            Framing::Chunked => self.chunked_bytes(data, sink),
        }
    }

    fn length_bytes(
        &mut self,
        left: u64,
        data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<Progress, ResponseError> {
        let take = usize::try_from(left).map_or(data.len(), |l| l.min(data.len()));
        self.deliver(&data[..take], sink)?;
        let left = left - take as u64;
        self.framing = Framing::Length { left };
        if left > 0 {
            return Ok(Progress::NeedMore);
        }
        self.finish_body(take == data.len(), sink)
    }

    fn chunked_bytes(
        &mut self,
        mut data: &[u8],
        sink: &mut impl ResponseSink,
    ) -> Result<Progress, ResponseError> {
        while !data.is_empty() {
            let step = self.chunked.step(data).map_err(ResponseError::BadChunk)?;
            self.deliver(step.data, sink)?;
            data = &data[step.consumed..];
            if self.chunked.is_done() {
                return self.finish_body(data.is_empty(), sink);
            }
        }
        Ok(Progress::NeedMore)
    }

    /// Hand decoded body bytes to the consumer chosen by status and content type.
    fn deliver(&mut self, piece: &[u8], sink: &mut impl ResponseSink) -> Result<(), ResponseError> {
        match self.kind {
            BodyKind::Discard => {
                if self.status >= 300 {
                    sink.failure_body(piece);
                }
                Ok(())
            }
            BodyKind::Json => {
                if self.json.len() + piece.len() > self.limits.max_body_bytes {
                    sink.failure_body(&self.json);
                    return Err(ResponseError::BodyTooLarge);
                }
                self.json.extend_from_slice(piece);
                Ok(())
            }
            BodyKind::Pooled => {
                self.pooled_bytes += piece.len();
                if self.pooled_bytes > self.limits.max_body_bytes {
                    return Err(ResponseError::BodyTooLarge);
                }
                self.pooled.push(piece);
                Ok(())
            }
            BodyKind::Sse => {
                let mut guard = self.extractor.borrow_mut();
                let extractor = &mut *guard;
                self.sse.push(piece, |payload| {
                    let ev = match extractor.event(payload) {
                        Ok(ev) => ev,
                        Err(e) => {
                            sink.failure_body(payload);
                            return Err(ResponseError::BadEvent(e));
                        }
                    };
                    sink.event(&ev);
                    if !extractor.text().is_empty() {
                        sink.text(extractor.text());
                    }
                    if ev.error {
                        sink.error_payload(payload);
                    }
                    Ok(())
                })
            }
        }
    }

    /// The body ended. An unfinished SSE event is dropped, as the SSE spec says.
    fn finish_body(
        &mut self,
        clean_end: bool,
        sink: &mut impl ResponseSink,
    ) -> Result<Progress, ResponseError> {
        if self.kind == BodyKind::Json {
            let mut guard = self.extractor.borrow_mut();
            let extractor = &mut *guard;
            let ev = match extractor.body(&self.json) {
                Ok(ev) => ev,
                Err(e) => {
                    sink.failure_body(&self.json);
                    return Err(ResponseError::BadBody(e));
                }
            };
            sink.event(&ev);
            if !extractor.text().is_empty() {
                sink.text(extractor.text());
            }
            if ev.error {
                sink.error_payload(&self.json);
            }
        } else if self.kind == BodyKind::Pooled {
            let mut ev = self.pooled.finish().map_err(ResponseError::BadBody)?;
            ev.server_mono_ns = ev.server_mono_ns.or(self.head_stamp_ns);
            sink.event(&ev);
        }
        self.phase = Phase::Done;
        self.keep_alive &= clean_end;
        Ok(Progress::Done {
            keep_alive: self.keep_alive,
        })
    }
}

#[cfg(test)]
mod regression_tests {
    use super::*;

    struct Nothing;
    impl ResponseSink for Nothing {
        fn head(&mut self, _: u16, _: bool) {}
        fn event(&mut self, _: &EventInfo) {}
    }

    /// The fuzz target's limits (a 4 KiB head bound).
    fn outcome(reads: &[&[u8]]) -> Result<Progress, ResponseError> {
        let limits = Limits {
            max_head_bytes: 4096,
            max_event_bytes: 4096,
            max_body_bytes: 1 << 16,
        };
        let mut p = ResponseParser::new(limits);
        for r in reads {
            if let Progress::Done { keep_alive } = p.feed(r, &mut Nothing)? {
                return Ok(Progress::Done { keep_alive });
            }
        }
        p.eof(&mut Nothing)
    }

    /// cargo fuzz `response_head` found a head both malformed and over the bound that read
    /// as BadHead whole but HeadTooLarge when cut at byte 2456. Every cut must agree.
    #[test]
    fn a_head_error_does_not_depend_on_where_reads_are_cut() {
        // The fuzz input's first byte picks the cut; the rest is the response.
        let input: &[u8] =
            include_bytes!("../../fuzz/regressions/response_head_cut_changes_head_error.bin");
        let wire = &input[1..];
        let whole = outcome(&[wire]);
        for cut in 1..wire.len() {
            assert_eq!(
                outcome(&[&wire[..cut], &wire[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
    }

    /// cargo fuzz `response_head` found a response followed by stray bytes (a 404 with a
    /// content-length, then more). Read whole, the stray bytes are seen with the end of the
    /// body and the connection is not reused; cut exactly where the body ends, the parser
    /// cannot see bytes not yet read and reports a clean end. That is the one cut that may
    /// differ; the stray bytes then fail the next response on that connection, as their own.
    #[test]
    fn bytes_after_a_complete_response_forbid_reuse_when_seen() {
        let input: &[u8] =
            include_bytes!("../../fuzz/regressions/response_head_bytes_after_end_keep_alive.bin");
        let wire = &input[1..];
        let body_end = 305;
        assert_eq!(outcome(&[wire]), Ok(Progress::Done { keep_alive: false }));
        for cut in 1..wire.len() {
            let clean = cut == body_end;
            assert_eq!(
                outcome(&[&wire[..cut], &wire[cut..]]),
                Ok(Progress::Done { keep_alive: clean }),
                "cut at {cut}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug, PartialEq)]
    struct Seen {
        heads: Vec<(u16, bool)>,
        events: Vec<EventInfo>,
        request_ids: Vec<Vec<u8>>,
    }

    impl ResponseSink for Seen {
        fn head(&mut self, status: u16, streaming: bool) {
            self.heads.push((status, streaming));
        }
        fn event(&mut self, ev: &EventInfo) {
            self.events.push(*ev);
        }
        fn request_id(&mut self, value: &[u8]) {
            self.request_ids.push(value.to_vec());
        }
    }

    type Run = (Seen, Result<Progress, ResponseError>);

    fn run_with(limits: Limits, reads: &[&[u8]], eof: bool) -> Run {
        let mut p = ResponseParser::new(limits);
        let mut seen = Seen::default();
        let mut last = Ok(Progress::NeedMore);
        for r in reads {
            last = p.feed(r, &mut seen);
            if last.is_err() {
                return (seen, last);
            }
        }
        if eof {
            last = p.eof(&mut seen);
        }
        (seen, last)
    }

    fn run(reads: &[&[u8]]) -> Run {
        run_with(Limits::default(), reads, false)
    }

    /// The same result for one read, every two-way cut and byte-at-a-time reads.
    fn same_at_every_cut(limits: Limits, wire: &[u8], eof: bool) -> Run {
        let whole = run_with(limits, &[wire], eof);
        for i in 0..=wire.len() {
            assert_eq!(
                run_with(limits, &[&wire[..i], &wire[i..]], eof),
                whole,
                "cut {i}"
            );
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(run_with(limits, &bytes, eof), whole, "byte reads");
        whole
    }

    const SSE_CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
        transfer-encoding: chunked\r\n\r\n\
        23\r\ndata: {\"choices\":[{\"text\":\"ab\"}]}\n\n\r\n\
        8\r\ndata: {\"\r\n30;ext=1\r\nchoices\":[{\"text\":\"c\",\"finish_reason\":\"x\"}]}\r\n\r\n\r\n\
        e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";

    #[test]
    fn chunked_sse_same_events_at_every_cut() {
        let (seen, end) = same_at_every_cut(Limits::default(), SSE_CHUNKED, false);
        assert_eq!(end, Ok(Progress::Done { keep_alive: true }));
        assert_eq!(seen.heads, vec![(200, true)]);
        let bytes: Vec<u32> = seen.events.iter().map(|e| e.content_bytes).collect();
        assert_eq!(bytes, vec![2, 1, 0]);
        assert!(seen.events[1].finish && seen.events[2].done_marker);
    }

    #[test]
    fn connection_close_and_http10_rules() {
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(run(&[close]).1, Ok(Progress::Done { keep_alive: false }));
        let old = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(run(&[old]).1, Ok(Progress::Done { keep_alive: false }));
        let old_ka = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(run(&[old_ka]).1, Ok(Progress::Done { keep_alive: true }));
        let listed =
            b"HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(run(&[listed]).1, Ok(Progress::Done { keep_alive: false }));
    }

    #[test]
    fn close_delimited_body_ends_at_eof_only() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"hey\"}}]}\r\n\r\n";
        let (seen, end) = same_at_every_cut(Limits::default(), wire, false);
        assert_eq!((seen.events.len(), end), (1, Ok(Progress::NeedMore)));
        let (_, end) = same_at_every_cut(Limits::default(), wire, true);
        assert_eq!(end, Ok(Progress::Done { keep_alive: false }));
        let json = b"HTTP/1.0 200 OK\r\n\r\n{\"choices\":[{\"message\":{\"content\":\"abc\"}}]}";
        let (seen, end) = run_with(Limits::default(), &[json], true);
        assert_eq!(
            (seen.events[0].content_bytes, end),
            (3, Ok(Progress::Done { keep_alive: false }))
        );
    }

    #[test]
    fn content_length_json_body_is_one_event() {
        let wire =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 55\r\n\r\n\
            {\"choices\":[{\"message\":{\"content\":\"hi\"}}],\"usage\":null}";
        let (seen, end) = same_at_every_cut(Limits::default(), wire, false);
        assert_eq!(end, Ok(Progress::Done { keep_alive: true }));
        assert_eq!(seen.heads, vec![(200, false)]);
        assert_eq!(seen.events.len(), 1);
        assert_eq!(seen.events[0].content_bytes, 2);
    }

    #[test]
    fn the_final_heads_first_request_id_is_handed_over_at_every_cut() {
        let wire = b"HTTP/1.1 100 Continue\r\nX-Request-Id: interim\r\n\r\n\
            HTTP/1.1 200 OK\r\nx-request-id:  ab12-7 \r\nX-REQUEST-ID: second\r\n\
            Content-Length: 2\r\n\r\n{}";
        let (seen, end) = same_at_every_cut(Limits::default(), wire, false);
        assert_eq!(end, Ok(Progress::Done { keep_alive: true }));
        assert_eq!(seen.request_ids, vec![b"ab12-7".to_vec()], "trimmed, once");
        let none = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert!(run(&[none]).0.request_ids.is_empty());
    }

    #[test]
    fn interim_heads_are_skipped() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n\
            HTTP/1.1 204 No Content\r\n\r\n";
        let (seen, end) = same_at_every_cut(Limits::default(), wire, false);
        assert_eq!(seen.heads, vec![(204, false)]);
        assert_eq!(end, Ok(Progress::Done { keep_alive: true }));
        assert!(seen.events.is_empty());
    }

    #[test]
    fn error_status_reads_body_and_emits_no_events() {
        let wire = b"HTTP/1.1 404 Not Found\r\ncontent-length: 20\r\ncontent-type: application/json\r\n\r\n\
            {\"error\":{\"code\":4}}";
        let (seen, end) = same_at_every_cut(Limits::default(), wire, false);
        assert_eq!(seen.heads, vec![(404, false)]);
        assert!(seen.events.is_empty());
        assert_eq!(end, Ok(Progress::Done { keep_alive: true }));
        let sse = b"HTTP/1.1 500 Oops\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
            7\r\ndata: x\r\n0\r\n\r\n";
        let (seen, end) = run(&[sse]);
        assert_eq!((seen.heads, seen.events.len()), (vec![(500, true)], 0));
        assert_eq!(end, Ok(Progress::Done { keep_alive: true }));
    }

    #[test]
    fn eof_cases_map_to_reset_outcomes() {
        let (_, end) = run_with(Limits::default(), &[], true);
        assert_eq!(end, Err(ResponseError::ClosedBeforeHead));
        let (_, end) = run_with(Limits::default(), &[b"HTTP/1.1 200 OK\r\nConte"], true);
        assert_eq!(end.unwrap_err().outcome(), Outcome::ResetBeforeHead);
        let (seen, end) = run_with(Limits::default(), &[&SSE_CHUNKED[..150]], true);
        assert_eq!(end, Err(ResponseError::Truncated));
        assert_eq!(end.unwrap_err().outcome(), Outcome::ResetMidStream);
        assert_eq!(seen.heads.len(), 1);
        let no_final_crlf = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n";
        let (_, end) = same_at_every_cut(Limits::default(), no_final_crlf, true);
        assert_eq!(end, Err(ResponseError::BadBody(ExtractError::BadJson)));
        let (_, end) = run_with(
            Limits::default(),
            &[&no_final_crlf[..no_final_crlf.len() - 1]],
            true,
        );
        assert_eq!(end, Err(ResponseError::Truncated));
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}";
        assert_eq!(
            run_with(Limits::default(), &[short], true).1,
            Err(ResponseError::Truncated)
        );
    }

    #[test]
    fn malformed_input_is_an_error_and_stays_one() {
        let mut p = ResponseParser::new(Limits::default());
        let mut seen = Seen::default();
        let bad = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n";
        let err = p.feed(bad, &mut seen).unwrap_err();
        assert_eq!(err, ResponseError::BadChunk(ChunkError::BadSize));
        assert_eq!(err.outcome(), Outcome::Malformed);
        assert_eq!(p.feed(b"0\r\n\r\n", &mut seen), Err(err));
        assert_eq!(p.eof(&mut seen), Err(err));
        assert_eq!(
            run(&[b"HTTP/1.1 abc\r\n\r\n"]).1,
            Err(ResponseError::BadHead)
        );
        assert_eq!(run(&[b"garbage\r\n\r\n"]).1, Err(ResponseError::BadHead));
        let two_lengths = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(run(&[two_lengths]).1, Err(ResponseError::BadHead));
        let bad_json = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {nope\n\n";
        let err = run(&[bad_json]).1.unwrap_err();
        assert!(matches!(err, ResponseError::BadEvent(_)));
        assert_eq!(err.outcome(), Outcome::Malformed);
    }

    #[test]
    fn limits_give_oversized_however_it_is_cut() {
        let head_limit = Limits {
            max_head_bytes: 40,
            ..Limits::default()
        };
        let long_head = b"HTTP/1.1 200 OK\r\nX-Padding: aaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        let (_, end) = same_at_every_cut(head_limit, long_head, false);
        assert_eq!(end, Err(ResponseError::HeadTooLarge));
        assert_eq!(end.unwrap_err().outcome(), Outcome::Oversized);
        let fits = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert!(same_at_every_cut(head_limit, fits, false).1.is_ok());

        let event_limit = Limits {
            max_event_bytes: 20,
            ..Limits::default()
        };
        let (_, end) = same_at_every_cut(event_limit, SSE_CHUNKED, false);
        assert_eq!(end, Err(ResponseError::EventTooLarge));

        let body_limit = Limits {
            max_body_bytes: 3,
            ..Limits::default()
        };
        let body = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n{  }";
        assert_eq!(
            run_with(body_limit, &[body], false).1,
            Err(ResponseError::BodyTooLarge)
        );
    }

    #[test]
    fn reset_reuses_the_parser_for_the_next_response() {
        let mut p = ResponseParser::new(Limits::default());
        for _ in 0..3 {
            let mut seen = Seen::default();
            p.reset();
            assert!(!p.head_seen());
            assert_eq!(
                p.feed(SSE_CHUNKED, &mut seen),
                Ok(Progress::Done { keep_alive: true })
            );
            assert!(p.head_seen());
            assert_eq!((p.status(), seen.events.len()), (200, 3));
        }
    }

    #[test]
    fn bytes_after_the_response_forbid_reuse() {
        let mut wire = SSE_CHUNKED.to_vec();
        wire.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        assert_eq!(run(&[&wire]).1, Ok(Progress::Done { keep_alive: false }));
    }

    #[test]
    fn a_bare_pooling_answer_takes_its_stamp_from_the_head() {
        let tei = b"HTTP/1.1 200 OK\r\nX-Ringbench-Ns: 123456789\r\nContent-Length: 23\r\n\r\n\
            [{\"index\":0,\"score\":1}]";
        let scores = b"HTTP/1.1 200 OK\r\nx-ringbench-ns: 5\r\nContent-Length: 47\r\n\r\n\
            {\"data\":[{\"score\":1}],\"ringbench_ns\":123456789}";
        for (endpoint, wire) in [
            (crate::plan::Endpoint::TeiRerank, &tei[..]),
            // The body's own stamp wins.
            (crate::plan::Endpoint::Score, &scores[..]),
        ] {
            let mut p = ResponseParser::for_endpoint(Limits::default(), endpoint);
            for cut in 0..wire.len() {
                p.reset();
                let mut seen = Seen::default();
                assert_eq!(p.feed(&wire[..cut], &mut seen), Ok(Progress::NeedMore));
                let end = p.feed(&wire[cut..], &mut seen);
                assert_eq!(end, Ok(Progress::Done { keep_alive: true }), "cut {cut}");
                let ev = seen.events[0];
                assert_eq!((ev.items, ev.server_mono_ns), (1, Some(123_456_789)));
            }
        }
        // None where the server sent none; a stamp does not outlive its response.
        let mut p =
            ResponseParser::for_endpoint(Limits::default(), crate::plan::Endpoint::TeiRerank);
        let mut seen = Seen::default();
        p.feed(tei, &mut seen).unwrap();
        p.reset();
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]", &mut seen)
            .unwrap();
        assert_eq!(seen.events[1].server_mono_ns, None);
    }

    #[test]
    fn other_transfer_codings_are_close_delimited() {
        let wire =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 2\r\n\r\n{}";
        let (_, end) = run_with(Limits::default(), &[wire], false);
        assert_eq!(end, Ok(Progress::NeedMore));
    }
}
