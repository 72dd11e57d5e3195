//! Part of the worker (schedule → **worker** → http → sse → extract → **record**): what the
//! response parser says, turned into a record's stamps, token counts and outcome — the
//! decisions of docs/metrics.md applied as bytes arrive: which event is a token (content or
//! reasoning; a role-only or empty chunk is not), how many tokens an event carried (exact
//! from cumulative usage, else one), OSL from usage or from the events, the bound on events
//! kept. No I/O and no clock: the caller passes each read's stamp. Never prints.

use crate::extract::EventInfo;
use crate::http::ResponseSink;
use crate::record::{EventStamp, OslSource, Outcome, Record};

/// Events kept per record; more are counted in `events_dropped`, never silently lost.
pub(super) const MAX_EVENTS_PER_RECORD: usize = 1 << 16;

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
        rec.output_tokens = rec.events.iter().map(|e| e.tokens).sum();
        rec.output_source = OslSource::Events;
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
        self.state.tokens += tokens;
        self.stamp_tokens(ev);
        if let Some(u) = ev.usage {
            self.rec.usage_prompt_tokens = u.prompt_tokens.or(self.rec.usage_prompt_tokens);
            self.rec.usage_completion_tokens =
                u.completion_tokens.or(self.rec.usage_completion_tokens);
            self.rec.cached_tokens = u.cached_tokens.or(self.rec.cached_tokens);
        }
        self.stored_last = false;
        if self.rec.events.len() >= MAX_EVENTS_PER_RECORD {
            self.rec.events_dropped += 1;
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
            ..Default::default()
        });
        self.stored_last = true;
    }

    /// The text of the event just stored (never of a dropped one, so the offsets line up).
    fn text(&mut self, text: &[u8]) {
        if !self.stored_last {
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
