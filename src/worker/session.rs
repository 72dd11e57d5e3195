//! Part of the worker (schedule → **worker** → http → …): conversations (`--turns`). A session
//! is one lane's (or one closed-loop user's) run of turns on its one keep-alive connection:
//! each turn's request is the catalog's request for the turn's new user message with the
//! session's history — every earlier user message and the assistant's actual streamed reply,
//! as a chat app sends them — put before that message, and an `x-session-id` header for
//! session-aware routers. Between a reply's end and the next turn the user thinks
//! (`--think-time`); the next turn's intended time is that reply's `done_ns` plus the pause,
//! so a late send shows as scheduling lag like any request's.
//!
//! The history and the request being built live in buffers the lane keeps from session to
//! session: they grow to the longest conversation once, then nothing is allocated per turn.
//! Never prints.

use super::conn::{Conn, Payload};
use super::job::Job;
use super::Ctx;
use crate::plan::{SessionEnd, SessionSpec};
use crate::prepare::catalog::Entry;
use crate::record::{Outcome, Turn, WarmupBy};
use crate::rt::timer::Timer;
use std::cell::Cell;
use std::io::Write as _;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::Waker;

/// The header naming the conversation: `<run id>-<session>` (or `<session>` without a run id).
const SESSION_HEADER: &[u8] = b"x-session-id: ";

/// A lane's conversation buffers, reused from session to session.
pub(super) struct SessionBufs {
    /// The history: message elements of earlier turns, each followed by a comma.
    history: Vec<u8>,
    /// The catalog's request for the turn's new message, before the history goes in.
    single: Vec<u8>,
    /// Think-time waits; `None` where no timerfd could be made (then the 1 ms wheel).
    timer: Option<Timer>,
    cancel_slot: Rc<Cell<Option<Waker>>>,
}

impl SessionBufs {
    pub(super) fn new(ctx: &Ctx) -> Self {
        SessionBufs {
            history: Vec::new(),
            single: Vec::with_capacity(ctx.setup.catalog.max_request_bytes()),
            timer: Timer::new().ok(),
            cancel_slot: ctx.cancel.slot(),
        }
    }

    /// Turn `id` of `session`, to server `to`, into `out` (see `build_turn`); its catalog
    /// entry and what the turn carries (its prompt tokens are the entry's alone: the caller
    /// adds the history's).
    fn write_turn(
        &mut self,
        ctx: &Ctx,
        session: u64,
        id: u64,
        to: usize,
        out: &mut Vec<u8>,
    ) -> (Entry, Payload) {
        let catalog = &ctx.setup.catalog;
        let entry = *catalog.write(id, to, &mut self.single);
        let turn = TurnParts {
            single: &self.single,
            entry: &entry,
            head_len: catalog.head_len(to),
            history: &self.history,
        };
        let history = build_turn(turn, session, catalog.request_id(session), out);
        (entry, Payload::of(&entry, history))
    }
}

/// Runs session `start.id`, its first turn due at `start.intended_ns`, every turn to server
/// `start.to`: every turn is one record (emitted), the last one carrying why the session
/// ended. Returns the last turn's end, the intended time of whatever the user does next.
pub(super) async fn run(ctx: &Ctx, conn: &mut Conn, bufs: &mut SessionBufs, start: Job) -> u64 {
    let (session, intended_ns) = (start.id, start.intended_ns);
    let s = &ctx.setup;
    let spec = s
        .plan
        .sessions
        .as_ref()
        .expect("a session run has a session spec");
    let mut rng = spec.rng(s.plan.seed, session);
    let drawn = spec.turns_of(&mut rng);
    // A dataset's conversation has as many turns as it has, at most the drawn count.
    let turns = s
        .catalog
        .conversation_turns(session)
        .map_or(drawn, |n| drawn.min(n));
    let shared = &s.shared;
    shared.sessions_begun[s.index]
        .0
        .fetch_add(1, Ordering::Relaxed);
    bufs.history.clear();
    let mut intended = intended_ns;
    let (mut think_ns, mut context_tokens, mut start_ns) = (0, 0u32, None);
    for k in 0..turns {
        let id = spec.turn_id(session, k);
        shared.turns_begun[s.index]
            .0
            .fetch_add(1, Ordering::Relaxed);
        let (entry, mut payload) = bufs.write_turn(ctx, session, id, start.to, conn.out_mut());
        payload.input_tokens = context_tokens.saturating_add(entry.input_tokens);
        let job = Job {
            id,
            intended_ns: intended,
            to: start.to,
        };
        let mut rec = conn
            .exchange_written(ctx, job, payload, warmup_of(ctx, session, job))
            .await;
        let started = *start_ns.get_or_insert(rec.sent_ns.unwrap_or(intended));
        let done_ns = rec.done_ns.unwrap_or_else(|| s.clock.now_ns());
        let next_think = spec.think_time.sample(&mut rng);
        // The history the next turn carries: this prompt (the server's count) and its reply.
        context_tokens = rec.prompt_tokens().saturating_add(rec.output_tokens);
        let end = match rec.outcome {
            _ if k + 1 == turns && rec.outcome == Outcome::Ok => Some(SessionEnd::Completed),
            Outcome::Ok => {
                let next = s.catalog.get(spec.turn_id(session, k + 1));
                next_end(ctx, spec, context_tokens, next, done_ns + next_think)
            }
            Outcome::CancelledByClient => Some(SessionEnd::Abandoned),
            _ => Some(SessionEnd::Failed),
        };
        if end.is_none() {
            remember(&mut bufs.history, &bufs.single, &entry, &rec.text);
        }
        rec.turn = Some(Turn {
            session,
            index: k,
            session_start_ns: started,
            think_ns,
            end,
        });
        ctx.emit(rec);
        if end.is_some() {
            return done_ns;
        }
        think_ns = next_think;
        intended = done_ns + think_ns;
        think(ctx, bufs, intended).await;
    }
    intended
}

/// A turn's warm-up rules: `--warmup-requests` counts sessions, `--warmup-duration` the
/// turn's own intended time.
fn warmup_of(ctx: &Ctx, session: u64, job: Job) -> WarmupBy {
    WarmupBy {
        count: session < ctx.setup.plan.warmup_requests,
        duration: ctx.warmup_by(job.id, job.intended_ns).duration,
    }
}

/// Whether the session ends before its next turn (due at `due_ns`, with `context` tokens of
/// history before the turn's own message): over the context budget, or the run is ending.
fn next_end(
    ctx: &Ctx,
    spec: &SessionSpec,
    context: u32,
    next: &Entry,
    due_ns: u64,
) -> Option<SessionEnd> {
    let prompt = u64::from(context) + u64::from(next.input_tokens);
    let answer = u64::from(next.output_tokens);
    if spec
        .max_context_tokens
        .is_some_and(|max| prompt > u64::from(max))
        || (ctx.setup.catalog.context_window).is_some_and(|w| prompt + answer > u64::from(w))
    {
        return Some(SessionEnd::Context);
    }
    let s = &ctx.setup;
    if s.shared.stop.load(Ordering::Relaxed) || run_over_at(ctx, due_ns) {
        return Some(SessionEnd::RunEnd);
    }
    None
}

/// Whether `--duration` of measured time has passed at run-clock time `at_ns` (open loop:
/// from the schedule's start after the warm-up time; closed loop: from the measured phase's
/// opening, as its users count it).
fn run_over_at(ctx: &Ctx, at_ns: u64) -> bool {
    let s = &ctx.setup;
    let Some(d) = s.plan.stop.duration_ns else {
        return false;
    };
    match s.plan.load {
        crate::plan::Load::Closed { .. } => s.shared.gate.past_duration(&s.plan, s.start_ns, at_ns),
        _ => at_ns >= s.start_ns + s.plan.warmup_duration_ns + d,
    }
}

/// The user's pause until `due_ns` (run clock), cut short when the run's grace period ends.
async fn think(ctx: &Ctx, bufs: &SessionBufs, due_ns: u64) {
    let s = &ctx.setup;
    let now = s.clock.now_ns();
    if due_ns <= now {
        return;
    }
    let cancel = ctx.cancel.wait(&bufs.cancel_slot);
    match &bufs.timer {
        Some(timer) => {
            let sleep = timer.sleep_until(s.clock.origin_mono_ns() + due_ns);
            monoio::select! {
                _ = sleep => {},
                _ = cancel => {},
            }
        }
        None => {
            let sleep = monoio::time::sleep(std::time::Duration::from_nanos(due_ns - now));
            monoio::select! {
                _ = sleep => {},
                _ = cancel => {},
            }
        }
    }
}

/// What a turn's request is made of.
pub(super) struct TurnParts<'a> {
    /// The catalog's request for the turn's new message (`Catalog::write`: the server's
    /// request line and `Host:`, then the entry with its `x-request-id` and salt written).
    pub single: &'a [u8],
    /// Its catalog entry.
    pub entry: &'a Entry,
    /// How long the request line and `Host:` before the entry are (`Catalog::head_len`).
    pub head_len: usize,
    /// The earlier turns' messages, each followed by a comma.
    pub history: &'a [u8],
}

/// The turn's request into `out`: `single` with `x-session-id` as the head's last header,
/// the history before the new message, and `Content-Length` grown by the history's bytes.
/// Returns the bytes the history added to the body.
pub(super) fn build_turn(
    parts: TurnParts<'_>,
    session: u64,
    session_id: Option<crate::record::RequestId>,
    out: &mut Vec<u8>,
) -> usize {
    let TurnParts {
        single,
        entry,
        head_len,
        history,
    } = parts;
    out.clear();
    let Some(messages) = entry.messages else {
        // Not a chat body (`validate` refuses sessions then): sent as it is.
        out.extend_from_slice(single);
        return 0;
    };
    // The request line and `Host:` went in before the entry, `x-request-id` before its
    // blank line: what follows that moved by both.
    let shift = single.len() - entry.byte_len();
    let blank = entry.head_end as usize + shift;
    let body_len = super::conn::body_len(entry) + history.len();
    let cl = entry.content_length;
    let (cl_at, cl_end) = (
        head_len + cl.at as usize,
        head_len + (cl.at + cl.len) as usize,
    );
    let at = messages.at as usize + shift;
    out.extend_from_slice(&single[..cl_at]);
    let _ = write!(out, "{body_len}");
    out.extend_from_slice(&single[cl_end..blank]);
    out.extend_from_slice(SESSION_HEADER);
    match session_id {
        Some(sid) => sid.write(out),
        None => {
            let _ = write!(out, "{session}");
        }
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&single[blank..at]);
    out.extend_from_slice(history);
    out.extend_from_slice(&single[at..]);
    history.len()
}

/// After a turn's reply: its user message(s) and the reply join the history.
fn remember(history: &mut Vec<u8>, single: &[u8], entry: &Entry, reply: &[u8]) {
    let Some(messages) = entry.messages else {
        return;
    };
    let at = messages.at as usize + (single.len() - entry.byte_len());
    history.extend_from_slice(&single[at..at + messages.len as usize]);
    history.extend_from_slice(b",{\"role\":\"assistant\",\"content\":\"");
    escape_json(reply, history);
    history.extend_from_slice(b"\"},");
}

/// `text` (UTF-8) as the inside of a JSON string: `"`, `\` and control characters escaped.
pub(super) fn escape_json(text: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut from = 0;
    for (i, &b) in text.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&text[from..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        from = i + 1;
    }
    out.extend_from_slice(&text[from..]);
}

/// The record id a session's first turn has (what an arrival never sent is recorded as).
pub(super) fn first_id(spec: Option<&SessionSpec>, arrival: u64) -> u64 {
    spec.map_or(arrival, |s| s.turn_id(arrival, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, RunId};
    use crate::prepare::catalog::Catalog;
    use crate::prepare::prepare;
    use crate::record::RequestId;

    fn split(req: &[u8]) -> (Vec<(String, String)>, serde_json::Value) {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut r = httparse::Request::new(&mut headers);
        let n = match r.parse(req).unwrap() {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => panic!("head incomplete"),
        };
        let hs = r
            .headers
            .iter()
            .map(|h| {
                let v = String::from_utf8(h.value.to_vec()).unwrap();
                (h.name.to_ascii_lowercase(), v)
            })
            .collect::<Vec<_>>();
        let len: usize = hs
            .iter()
            .find(|(k, _)| k == "content-length")
            .unwrap()
            .1
            .parse()
            .unwrap();
        assert_eq!(len, req.len() - n, "Content-Length is the body's length");
        (hs, serde_json::from_slice(&req[n..]).unwrap())
    }

    #[test]
    fn a_turn_carries_the_exact_history_before_its_new_message() {
        let mut plan = Plan::defaults();
        plan.input_tokens = 12;
        plan.run_id = Some("r1".into());
        let prepared = prepare(&plan).unwrap();
        let catalog = Catalog::build(&plan, &prepared, "localhost", "m");
        let run = RunId::new("r1").unwrap();
        let (mut single, mut out, mut history) = (vec![], vec![], vec![]);
        let reply = "Hi \"there\"\n\\ tab\t and \u{1}é".as_bytes();
        let mut firsts = vec![];
        for (k, id) in [40u64, 41, 42].into_iter().enumerate() {
            let entry = *catalog.write(id, 0, &mut single);
            let sid = Some(RequestId { run, n: 9 });
            let parts = TurnParts {
                single: &single,
                entry: &entry,
                head_len: catalog.head_len(0),
                history: &history,
            };
            let added = build_turn(parts, 9, sid, &mut out);
            let blank = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
            assert_eq!(
                Payload::of(&entry, added).body_bytes as usize,
                out.len() - blank - 4,
                "the record's body bytes are the body written"
            );
            let (heads, body) = split(&out);
            let header = |name: &str| heads.iter().find(|(k, _)| k == name).map(|h| h.1.clone());
            assert_eq!(header("x-session-id").as_deref(), Some("r1-9"));
            assert_eq!(header("x-request-id"), Some(format!("r1-{id}")));
            let msgs = body["messages"].as_array().unwrap();
            assert_eq!(msgs.len(), 2 * k + 1, "turn {k}");
            let (_, alone) = split(&single);
            let new = &alone["messages"][0];
            assert_eq!(&msgs[2 * k], new, "the new message comes last");
            for (j, first) in firsts.iter().enumerate() {
                assert_eq!(&msgs[2 * j], first, "earlier user messages, exactly");
                assert_eq!(msgs[2 * j + 1]["role"], "assistant");
                let text = msgs[2 * j + 1]["content"].as_str().unwrap();
                assert_eq!(text.as_bytes(), reply, "the reply, unescaped by the server");
            }
            // Everything but the messages is the single request's.
            let mut rest = body.clone();
            rest["messages"] = alone["messages"].clone();
            assert_eq!(rest, alone);
            firsts.push(new.clone());
            remember(&mut history, &single, &entry, reply);
        }
    }

    #[test]
    fn escaping_round_trips_through_a_json_parser() {
        let texts: [&[u8]; 4] = [
            b"",
            b"plain",
            "q\"b\\n\n\r\t\u{0}\u{1f}é€😀".as_bytes(),
            b"\\",
        ];
        for t in texts {
            let mut out = b"\"".to_vec();
            escape_json(t, &mut out);
            out.push(b'"');
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back.as_bytes(), t);
        }
    }
}
