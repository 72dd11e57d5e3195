//! Part of the worker (schedule → **worker** → http → sse → extract → **record**): what the
//! response parser says, turned into a record's stamps, token counts and outcome — the
//! decisions of docs/metrics.md applied as bytes arrive: which event is a token (content or
//! reasoning; a role-only or empty chunk is not), how many tokens an event carried (exact
//! from cumulative usage, else one), OSL from usage or from the events, the bounds on events
//! and text kept. Counts a server supplies are added saturating: a server's `u32::MAX` stays
//! that, it never wraps to a small number. No I/O and no clock: the caller passes each read's
//! stamp. Never prints.

use crate::extract::EventInfo;
use crate::http::ResponseSink;
use crate::record::{EventStamp, OslSource, Outcome, Record};

/// Events kept per record; more are counted in `events_dropped`, never silently lost.
pub(super) const MAX_EVENTS_PER_RECORD: usize = 1 << 16;

/// Generated text kept per record (only with `--tokenizer` or `--turns`): 4 MiB. A normal
/// answer is far below it: 128k tokens, the longest `max_tokens` of today's models, are about
/// 512 KiB of text at 4 bytes a token, and a conversation whose reply alone is that long is
/// past any model's context, so its session ends at its budget before the next turn. Past the
/// bound the record keeps no text at all (`StreamState::text_cut`, counted per record in
/// `text_cut`): the collector then takes the OSL from usage or the events, never from the
/// tokenizer's count of a cut text.
pub(super) const MAX_TEXT_BYTES_PER_RECORD: usize = 4 << 20;

/// The outcome of a response that ended cleanly by its framing.
pub(super) fn final_outcome(rec: &Record, state: &StreamState) -> Outcome {
    if !(200..300).contains(&rec.status) {
        Outcome::HttpStatus
    } else if state.error_event {
        Outcome::ErrorEvent
    } else if state.wrong_api {
        Outcome::WrongApi
    } else {
        Outcome::Ok
    }
}

/// OSL: the server's `usage.completion_tokens` when reported, else the tokens counted on
/// events (docs/metrics.md); the source is recorded.
pub(super) fn resolve_osl(rec: &mut Record) {
    if let Some(n) = rec.usage_completion_tokens {
        rec.output_tokens = n;
        rec.output_source = OslSource::Usage;
    } else {
        rec.output_tokens = (rec.events.iter()).fold(0, |n, e| n.saturating_add(e.tokens));
        rec.output_source = OslSource::Events;
    }
}

/// A stream that ended with tokens by the server's usage but no event carrying text (vLLM
/// streams `"content": ""` for tokens that decode to no text yet): its empty-text chunks are
/// its tokens, one each, as vLLM's own TTFT counts them — the first is its first token, the
/// last its last. Nothing changes for a stream that carried text or that reported no usage.
pub(super) fn credit_empty_text(rec: &mut Record) {
    if rec.first_token_ns.is_some() || rec.usage_completion_tokens.unwrap_or(0) == 0 {
        return;
    }
    for e in rec.events.iter_mut().filter(|e| e.empty_text) {
        e.tokens = 1;
        if rec.first_token_ns.is_none() {
            rec.first_token_ns = Some(e.at_ns);
            rec.first_token_user_ns = rec.done_user_ns.map(|_| e.user_at_ns());
        }
        rec.last_token_ns = Some(e.at_ns);
    }
}

/// What must survive from one read's events to the next within a response.
#[derive(Default)]
pub(super) struct StreamState {
    pub error_event: bool,
    /// An event or body came in another API's shape than the one asked.
    pub wrong_api: bool,
    /// Output tokens counted so far (to turn cumulative usage into per-event counts).
    tokens: u32,
    /// The text outgrew `MAX_TEXT_BYTES_PER_RECORD`: the record's text was emptied and the
    /// rest of the response's is not kept.
    pub text_cut: bool,
}

/// Turns parser callbacks into stamps on the record. Every event completed by one read gets
/// that read's stamp.
pub(super) struct RecordSink<'a> {
    pub rec: &'a mut Record,
    state: &'a mut StreamState,
    at_ns: u64,
    /// The client's own stamp of the read, on a connection whose `at_ns` is the kernel's
    /// receive stamp (`--rx-timestamps`); `None` otherwise.
    user_ns: Option<u64>,
    origin_mono_ns: u64,
    streaming: bool,
    /// Events seen in this read.
    pub events: u64,
    /// The last `event` was stored (its `text` may follow).
    stored_last: bool,
}

impl<'a> RecordSink<'a> {
    /// A sink for the events of one read stamped `at_ns` (run clock); `origin_mono_ns` turns
    /// the simulator's monotonic stamps into run-clock ones.
    pub(super) fn new(
        rec: &'a mut Record,
        state: &'a mut StreamState,
        at_ns: u64,
        origin_mono_ns: u64,
        streaming: bool,
    ) -> Self {
        RecordSink {
            rec,
            state,
            at_ns,
            user_ns: None,
            origin_mono_ns,
            streaming,
            events: 0,
            stored_last: false,
        }
    }

    /// On a kernel-stamped connection (`--rx-timestamps`): `at_ns` is the kernel's receive
    /// stamp (or the client's, for a read the kernel did not stamp) and `user_ns` the
    /// client's own stamp of the same read, kept beside it.
    pub(super) fn with_user_stamp(mut self, user_ns: Option<u64>) -> Self {
        self.user_ns = user_ns;
        self
    }

    /// Tokens carried: exact when the server streams cumulative usage on every chunk
    /// (vLLM `continuous_usage_stats`), else one per token-bearing event.
    fn tokens_of(&self, ev: &EventInfo) -> u32 {
        if !ev.carries_token() {
            return 0;
        }
        match ev.usage.and_then(|u| u.completion_tokens) {
            Some(cumulative) => cumulative.saturating_sub(self.state.tokens).max(1),
            None => 1,
        }
    }

    fn stamp_tokens(&mut self, ev: &EventInfo) {
        let at = self.at_ns;
        if ev.carries_token() && self.streaming {
            if self.rec.first_token_ns.is_none() {
                self.rec.first_token_ns = Some(at);
                self.rec.first_token_user_ns = self.user_ns;
            }
            self.rec.last_token_ns = Some(at);
        }
        if ev.carries_output() && self.streaming {
            self.rec.first_output_ns.get_or_insert(at);
            if ev.visible {
                self.rec.first_visible_ns.get_or_insert(at);
            }
        }
    }
}

impl ResponseSink for RecordSink<'_> {
    fn head(&mut self, status: u16, _streaming: bool) {
        self.rec.status = status;
        self.rec.head_ns = Some(self.at_ns);
    }

    fn request_id(&mut self, value: &[u8]) {
        crate::record::request_id::keep_echo(&mut self.rec.server_request_id, value);
    }

    // A failure's reason (`record::failure`): bounded copies into the record's recycled
    // buffers. The worker clears them when the request did not fail.
    fn content_type(&mut self, value: &[u8]) {
        self.rec.failure.keep_content_type(value);
    }

    fn failure_body(&mut self, piece: &[u8]) {
        self.rec.failure.keep_body(piece);
    }

    fn error_payload(&mut self, payload: &[u8]) {
        self.rec.failure.keep_first(payload);
    }

    fn event(&mut self, ev: &EventInfo) {
        self.events += 1;
        self.state.error_event |= ev.error;
        self.state.wrong_api |= ev.wrong_api;
        self.rec.tool_calls = self.rec.tool_calls.saturating_add(ev.tool_calls);
        self.rec.items = self.rec.items.saturating_add(ev.items);
        let tokens = if self.streaming {
            self.tokens_of(ev)
        } else {
            0
        };
        self.state.tokens = self.state.tokens.saturating_add(tokens);
        self.stamp_tokens(ev);
        if let Some(u) = ev.usage {
            self.rec.usage_prompt_tokens = u.prompt_tokens.or(self.rec.usage_prompt_tokens);
            self.rec.usage_completion_tokens =
                u.completion_tokens.or(self.rec.usage_completion_tokens);
            self.rec.cached_tokens = u.cached_tokens.or(self.rec.cached_tokens);
        }
        self.stored_last = false;
        if self.rec.events.len() >= MAX_EVENTS_PER_RECORD {
            self.rec.events_dropped = self.rec.events_dropped.saturating_add(1);
            return;
        }
        self.rec.events.push(EventStamp {
            at_ns: self.at_ns,
            server_ns: ev
                .server_mono_ns
                .map(|m| m.saturating_sub(self.origin_mono_ns)),
            tokens,
            reasoning: ev.reasoning_bytes > 0,
            output: ev.carries_output(),
            user_ns: self.user_ns.filter(|&u| u != self.at_ns),
            empty_text: ev.empty_text && self.streaming,
            ..Default::default()
        });
        self.stored_last = true;
    }

    /// The text of the event just stored (never of a dropped one, so the offsets line up).
    /// A text that would pass `MAX_TEXT_BYTES_PER_RECORD` empties the record's: all of it or
    /// none, so no count is taken from a part.
    fn text(&mut self, text: &[u8]) {
        if !self.stored_last || self.state.text_cut {
            return;
        }
        if self.rec.text.len() + text.len() > MAX_TEXT_BYTES_PER_RECORD {
            self.state.text_cut = true;
            self.rec.text.clear();
            self.rec.events.iter_mut().for_each(|e| e.text_bytes = 0);
            return;
        }
        self.rec.text.extend_from_slice(text);
        if let Some(e) = self.rec.events.last_mut() {
            e.text_bytes = u32::try_from(text.len()).unwrap_or(u32::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Usage;

    fn content(bytes: u32) -> EventInfo {
        EventInfo {
            content_bytes: bytes,
            visible: true,
            ..Default::default()
        }
    }

    fn with_usage(mut e: EventInfo, completion: u32) -> EventInfo {
        e.usage = Some(Usage {
            prompt_tokens: Some(7),
            completion_tokens: Some(completion),
            cached_tokens: Some(3),
        });
        e
    }

    /// Feeds `events` as reads: `(at_ns, events of that read)`.
    fn fed(streaming: bool, reads: &[(u64, Vec<EventInfo>)]) -> Record {
        let mut rec = Record::default();
        let mut state = StreamState::default();
        for (at_ns, events) in reads {
            let mut sink = RecordSink::new(&mut rec, &mut state, *at_ns, 1_000, streaming);
            for e in events {
                sink.event(e);
            }
        }
        resolve_osl(&mut rec);
        rec
    }

    /// Reads of a kernel-stamped connection: `(kernel or client stamp, client stamp, events)`.
    #[test]
    fn kernel_stamped_reads_keep_the_clients_own_stamps_beside() {
        let mut rec = Record::default();
        let mut state = StreamState::default();
        let reads = [
            (10, 14, vec![EventInfo::default()]),
            (20, 27, vec![content(3)]),
            // A read the kernel did not stamp: its stamp is the client's.
            (35, 35, vec![content(1)]),
            (40, 49, vec![content(1)]),
        ];
        for (at_ns, user_ns, events) in &reads {
            let mut sink = RecordSink::new(&mut rec, &mut state, *at_ns, 0, true)
                .with_user_stamp(Some(*user_ns));
            events.iter().for_each(|e| sink.event(e));
        }
        rec.sent_ns = Some(5);
        rec.done_ns = Some(40);
        rec.done_user_ns = Some(49);
        assert_eq!(
            (rec.first_token_ns, rec.first_token_user_ns),
            (Some(20), Some(27))
        );
        let user: Vec<Option<u64>> = rec.events.iter().map(|e| e.user_ns).collect();
        assert_eq!(user, [Some(14), Some(27), None, Some(49)]);
        assert_eq!((rec.ttft_ns(), rec.ttft_user_ns()), (Some(15), Some(22)));
        assert_eq!((rec.e2e_ns(), rec.e2e_user_ns()), (Some(35), Some(44)));
        assert_eq!(rec.itl_gaps_ns().collect::<Vec<_>>(), [15, 5]);
        assert_eq!(rec.itl_user_gaps_ns().collect::<Vec<_>>(), [8, 14]);
        // Without kernel stamps there is no user figure at all.
        let plain = fed(true, &[(20, vec![content(1)]), (30, vec![content(1)])]);
        assert_eq!(plain.first_token_user_ns, None);
        assert!(plain.events.iter().all(|e| e.user_ns.is_none()));
        assert_eq!(plain.itl_user_gaps_ns().count(), 0);
    }

    #[test]
    fn a_role_only_or_empty_first_chunk_is_not_a_token() {
        let role = EventInfo::default();
        let rec = fed(
            true,
            &[
                (10, vec![role]),
                (20, vec![content(3)]),
                (30, vec![content(1)]),
            ],
        );
        assert_eq!(rec.first_token_ns, Some(20));
        assert_eq!(rec.first_output_ns, Some(20));
        assert_eq!(rec.last_token_ns, Some(30));
        let tokens: Vec<u32> = rec.events.iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [0, 1, 1]);
        assert_eq!(
            (rec.output_tokens, rec.output_source),
            (2, OslSource::Events)
        );
    }

    #[test]
    fn reasoning_is_a_token_for_ttft_but_not_output_for_ttfo() {
        let thinking = EventInfo {
            reasoning_bytes: 5,
            ..Default::default()
        };
        let rec = fed(true, &[(10, vec![thinking]), (40, vec![content(2)])]);
        assert_eq!(rec.first_token_ns, Some(10));
        assert_eq!(rec.first_output_ns, Some(40));
        assert!(rec.events[0].reasoning && !rec.events[0].output);
    }

    #[test]
    fn white_space_is_output_but_not_yet_visible() {
        let blank = EventInfo {
            content_bytes: 2,
            ..Default::default()
        };
        let thinking = EventInfo {
            reasoning_bytes: 5,
            visible: false,
            ..Default::default()
        };
        let reads = [
            (10, vec![thinking]),
            (20, vec![blank]),
            (30, vec![blank, content(2)]),
            (40, vec![content(1)]),
        ];
        let rec = fed(true, &reads);
        assert_eq!(
            (
                rec.first_token_ns,
                rec.first_output_ns,
                rec.first_visible_ns
            ),
            (Some(10), Some(20), Some(30))
        );
        let unstreamed = fed(false, &reads);
        assert_eq!(unstreamed.first_visible_ns, None, "streamed responses only");
    }

    #[test]
    fn cumulative_usage_gives_exact_tokens_per_event_and_the_osl() {
        // vLLM's continuous usage: 3 tokens in the first event, 1 in the next, 4 in the last.
        let events = vec![
            with_usage(content(9), 3),
            with_usage(content(2), 4),
            with_usage(content(12), 8),
        ];
        let rec = fed(true, &[(10, events)]);
        let tokens: Vec<u32> = rec.events.iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [3, 1, 4]);
        assert_eq!(
            (rec.output_tokens, rec.output_source),
            (8, OslSource::Usage)
        );
        assert_eq!(
            (rec.usage_prompt_tokens, rec.cached_tokens),
            (Some(7), Some(3))
        );
        // Every event of one read carries that read's stamp.
        assert!(rec.events.iter().all(|e| e.at_ns == 10));
    }

    #[test]
    fn usage_without_tokens_after_the_stream_sets_the_osl_not_an_event() {
        let usage_only = with_usage(EventInfo::default(), 5);
        let rec = fed(
            true,
            &[(10, vec![content(1), content(1)]), (20, vec![usage_only])],
        );
        let tokens: Vec<u32> = rec.events.iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [1, 1, 0]);
        assert_eq!(rec.last_token_ns, Some(10));
        assert_eq!(
            (rec.output_tokens, rec.output_source),
            (5, OslSource::Usage)
        );
    }

    #[test]
    fn a_non_streamed_body_stamps_no_token() {
        let rec = fed(false, &[(10, vec![with_usage(content(40), 16)])]);
        assert_eq!(rec.first_token_ns, None);
        assert_eq!(rec.events[0].tokens, 0);
        assert_eq!(
            (rec.output_tokens, rec.output_source),
            (16, OslSource::Usage)
        );
    }

    #[test]
    fn the_simulators_stamp_moves_to_the_run_clock() {
        let stamped = EventInfo {
            server_mono_ns: Some(1_500),
            ..content(1)
        };
        let rec = fed(true, &[(900, vec![stamped])]);
        assert_eq!(rec.events[0].server_ns, Some(500));
    }

    #[test]
    fn events_past_the_bound_are_counted_not_stored_and_their_text_is_dropped() {
        let mut rec = Record::default();
        let mut state = StreamState::default();
        let mut sink = RecordSink::new(&mut rec, &mut state, 1, 0, true);
        for _ in 0..MAX_EVENTS_PER_RECORD {
            sink.event(&content(1));
        }
        sink.text(b"kept");
        sink.event(&content(1));
        sink.text(b"dropped");
        assert_eq!(sink.events, MAX_EVENTS_PER_RECORD as u64 + 1);
        assert_eq!(rec.events.len(), MAX_EVENTS_PER_RECORD);
        assert_eq!(rec.events_dropped, 1);
        assert_eq!(rec.text, b"kept");
        assert_eq!(rec.events.last().unwrap().text_bytes, 4);
    }

    /// Server counts past `u32::MAX` saturate, in release builds too (no overflow checks
    /// there: an unchecked add would wrap to a small count and the next event would be
    /// credited `u32::MAX` tokens again).
    #[test]
    fn server_counts_past_u32_max_saturate() {
        let max = u32::MAX;
        let events = vec![
            with_usage(content(1), max),
            with_usage(content(1), max),
            with_usage(content(1), max),
        ];
        let rec = fed(true, &[(10, events)]);
        let tokens: Vec<u32> = rec.events.iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [max, 1, 1]);
        // Without usage the OSL is the events' sum, which saturates as well.
        let mut rec = fed(true, &[(10, vec![with_usage(content(1), max)])]);
        rec.events.push(rec.events[0]);
        rec.usage_completion_tokens = None;
        resolve_osl(&mut rec);
        assert_eq!(
            (rec.output_tokens, rec.output_source),
            (max, OslSource::Events)
        );
        let mut rec = Record {
            events_dropped: max,
            ..Default::default()
        };
        let mut state = StreamState::default();
        let mut sink = RecordSink::new(&mut rec, &mut state, 1, 0, true);
        (0..=MAX_EVENTS_PER_RECORD).for_each(|_| sink.event(&content(1)));
        assert_eq!(rec.events_dropped, max);
    }

    #[test]
    fn text_past_its_bound_is_dropped_whole_and_counted() {
        let mut rec = Record::default();
        let mut state = StreamState::default();
        let piece = vec![b'a'; MAX_TEXT_BYTES_PER_RECORD / 4];
        let mut sink = RecordSink::new(&mut rec, &mut state, 1, 0, true);
        for _ in 0..4 {
            sink.event(&content(1));
            sink.text(&piece);
        }
        assert_eq!(
            sink.rec.text.len(),
            MAX_TEXT_BYTES_PER_RECORD,
            "up to the bound: kept"
        );
        sink.event(&content(1));
        sink.text(b"b");
        sink.event(&content(1));
        sink.text(b"c");
        assert!(state.text_cut);
        assert!(rec.text.is_empty(), "none of it, not a part");
        assert!(rec.events.iter().all(|e| e.text_bytes == 0));
        assert_eq!(rec.events.len(), 6, "the events themselves are kept");
    }

    /// `wire` through the real parser for `endpoint` into a record, ended as the worker ends
    /// it: the outcome, and the failure kept only for a failure.
    fn parsed(endpoint: crate::plan::Endpoint, wire: &str) -> Record {
        use crate::http::{Limits, Progress, ResponseParser};
        let mut parser = ResponseParser::for_endpoint(Limits::default(), endpoint);
        let mut rec = Record {
            failure: crate::record::Failure::with_capacity(),
            ..Default::default()
        };
        let mut state = StreamState::default();
        let mut sink = RecordSink::new(&mut rec, &mut state, 1, 0, true);
        // Fed in two reads, to cross a read boundary inside the body.
        let (a, b) = wire.as_bytes().split_at(wire.len() / 2);
        let step = parser.feed(a, &mut sink).and_then(|p| match p {
            Progress::NeedMore => parser.feed(b, &mut sink),
            done => Ok(done),
        });
        let step = match step {
            Ok(Progress::NeedMore) => parser.eof(&mut sink),
            other => other,
        };
        rec.outcome = match step {
            Ok(_) => final_outcome(&rec, &state),
            Err(e) => e.outcome(),
        };
        match rec.outcome.is_failure() {
            true => rec.failure.settle(),
            false => rec.failure.clear(),
        }
        rec
    }

    fn sse(events: &str) -> String {
        format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}")
    }

    #[test]
    fn a_stream_of_empty_text_tokens_has_a_ttft_when_the_usage_shows_tokens() {
        use crate::plan::Endpoint;
        let chunk = |content: &str| {
            format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}},\"finish_reason\":null}}]}}\n\n")
        };
        let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        let finish = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"length\"}]}\n\n";
        let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n";
        let stream = |body: String| {
            let mut r = parsed(Endpoint::Chat, &sse(&body));
            credit_empty_text(&mut r);
            resolve_osl(&mut r);
            r
        };
        let empty = stream(format!(
            "{role}{}{}{}{finish}{usage}",
            chunk(""),
            chunk(""),
            chunk("")
        ));
        assert_eq!(empty.outcome, Outcome::Ok);
        let tokens: Vec<u32> = empty.events.iter().map(|e| e.tokens).collect();
        assert_eq!(
            tokens,
            [0, 1, 1, 1, 0, 0, 0],
            "role, three empty tokens, finish, usage, [DONE]"
        );
        assert!(empty.first_token_ns.is_some() && empty.last_token_ns.is_some());
        assert_eq!((empty.output_tokens, empty.first_output_ns), (3, None));
        // With text, empty chunks stay what they were: not tokens.
        let mixed = stream(format!("{role}{}{}{finish}{usage}", chunk("a"), chunk("")));
        let tokens: Vec<u32> = mixed.events.iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [0, 1, 0, 0, 0, 0]);
        // Without usage nothing says tokens came: no TTFT is made up.
        let bare = stream(format!("{role}{}{finish}data: [DONE]\n\n", chunk("")));
        assert_eq!(bare.first_token_ns, None);
    }

    #[test]
    fn a_failed_response_keeps_its_content_type_and_first_body_bytes() {
        use crate::plan::Endpoint;
        let body = r#"{"error":{"message":"simulated error","type":"ServerError","code":500}}"#;
        let wire = format!("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        let r = parsed(Endpoint::Chat, &wire);
        assert_eq!((r.outcome, r.status), (Outcome::HttpStatus, 500));
        assert_eq!(r.failure.content_type, b"application/json");
        assert_eq!(r.failure.body, body.as_bytes());
        assert_eq!(r.failure.message().as_deref(), Some("simulated error"));
        // An HTML page answering 200: malformed, its type and first bytes kept, bounded.
        let page = format!(
            "<html><head><title>Sign in</title></head><body>{}</body></html>",
            "é".repeat(400)
        );
        let wire = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{page}",
            page.len()
        );
        let r = parsed(Endpoint::Chat, &wire);
        assert_eq!(r.outcome, Outcome::Malformed);
        assert_eq!(r.failure.content_type, b"text/html");
        assert!(page.as_bytes().starts_with(&r.failure.body));
        let kept = r.failure.body.len();
        assert!(
            (crate::record::failure::MAX_BODY_BYTES - 1..=crate::record::failure::MAX_BODY_BYTES)
                .contains(&kept),
            "{kept}"
        );
        assert!(r.failure.body_text().is_some(), "the cut é was dropped");
        assert_eq!(r.failure.message().as_deref(), Some("Sign in"));
        // A chunked 404 body over several chunks is kept whole.
        let wire = "HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n5\r\nno su\r\n9\r\nch model\n\r\n0\r\n\r\n";
        let r = parsed(Endpoint::Chat, wire);
        assert_eq!((r.status, r.failure.content_type.len()), (404, 0));
        assert_eq!(r.failure.message().as_deref(), Some("no such model"));
    }

    #[test]
    fn an_error_event_inside_a_stream_keeps_its_message() {
        use crate::plan::Endpoint;
        let content = r#"data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}"#;
        let chat = sse(&format!("{content}\n\ndata: {{\"error\":{{\"message\":\"simulated failure mid-stream\",\"code\":500}}}}\n\ndata: {{\"error\":{{\"message\":\"second\"}}}}\n\ndata: [DONE]\n\n"));
        let r = parsed(Endpoint::Chat, &chat);
        assert_eq!(r.outcome, Outcome::ErrorEvent);
        assert_eq!(r.failure.content_type, b"text/event-stream");
        assert_eq!(
            r.failure.message().as_deref(),
            Some("simulated failure mid-stream"),
            "the first one"
        );
        let responses = sse(concat!(
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\"}}\n\n",
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The engine died.\"}}}\n\n",
        ));
        let r = parsed(Endpoint::Responses, &responses);
        assert_eq!(r.outcome, Outcome::ErrorEvent);
        assert_eq!(r.failure.message().as_deref(), Some("The engine died."));
        let messages = sse("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
        let r = parsed(Endpoint::Messages, &messages);
        assert_eq!(r.outcome, Outcome::ErrorEvent);
        assert_eq!(r.failure.message().as_deref(), Some("Overloaded"));
        // A stream that ends well keeps nothing; a bad event keeps its payload.
        let r = parsed(
            Endpoint::Chat,
            &sse(&format!("{content}\n\ndata: [DONE]\n\n")),
        );
        assert_eq!(r.outcome, Outcome::Ok);
        assert!(r.failure.is_empty());
        let r = parsed(Endpoint::Chat, &sse("data: {\"choices\":[\n\n"));
        assert_eq!(r.outcome, Outcome::Malformed);
        assert_eq!(r.failure.body, b"{\"choices\":[");
    }

    #[test]
    fn the_outcome_of_a_clean_end_follows_status_then_error_events() {
        let mut rec = Record {
            status: 200,
            ..Default::default()
        };
        let state = |error_event, wrong_api| StreamState {
            error_event,
            wrong_api,
            ..Default::default()
        };
        assert_eq!(final_outcome(&rec, &state(false, false)), Outcome::Ok);
        assert_eq!(
            final_outcome(&rec, &state(true, false)),
            Outcome::ErrorEvent
        );
        assert_eq!(final_outcome(&rec, &state(false, true)), Outcome::WrongApi);
        assert_eq!(final_outcome(&rec, &state(true, true)), Outcome::ErrorEvent);
        rec.status = 503;
        assert_eq!(
            final_outcome(&rec, &state(true, false)),
            Outcome::HttpStatus
        );
        rec.status = 199;
        assert_eq!(
            final_outcome(&rec, &state(false, false)),
            Outcome::HttpStatus
        );
        // An error event mid-stream is remembered across reads.
        let err = EventInfo {
            error: true,
            ..Default::default()
        };
        let mut state = StreamState::default();
        let mut r = Record::default();
        RecordSink::new(&mut r, &mut state, 1, 0, true).event(&err);
        RecordSink::new(&mut r, &mut state, 2, 0, true).event(&content(1));
        assert!(state.error_event);
    }
}
