//! Part of the record (… → extract → **record** → collector …): the one schema of the
//! per-request log, `DIR/requests.jsonl` — one line per record, warm-up included. The schema
//! is `Record`'s own serde form (field names, `Outcome`, `InputSource` and `OslSource` names, events as
//! arrays); `parse_line` reads a line through it, and `format_line` writes the same line by
//! hand into one reused buffer, because `serde_json` cost about 4 µs per 16-event record and
//! the collector writes tens of thousands a second. A test holds the two to the same bytes'
//! meaning for arbitrary records. The file itself (buffering, the temporary name) is the
//! collector's (`collector::log`). It writes what the record holds and derives nothing:
//! `ringbench report` recomputes every figure from it.
//!
//! # Format (one JSON object per line, one line per record, warm-up included)
//!
//! ```text
//! {"id":7,"request_id":"5f3a9c01-7","server_request_id":"5f3a9c01-7","worker":0,"endpoint":0,"warmup":false,"outcome":"ok","status":200,
//!  "intended_ns":1000,"sent_ns":1200,"head_ns":5000,"first_token_ns":9000,
//!  "first_output_ns":9000,"first_visible_ns":9000,"last_token_ns":19000,"done_ns":19500,
//!  "first_token_user_ns":null,"done_user_ns":null,
//!  "input_tokens":128,"input_source":"tokenizer","output_tokens":3,"output_source":"usage",
//!  "usage_prompt_tokens":135,"usage_completion_tokens":3,"cached_tokens":null,
//!  "reads":4,"bytes":912,"events_dropped":0,"tool_calls":0,"items":0,"warmup_by":null,
//!  "turn":null,"failure":null,"body_bytes":301,"uploaded_ns":1210,"images":0,"audio_ms":0,
//!  "events":[[5100,0,null,0],[9000,1,8950,1],[14000,1,13950,1],[19000,1,18950,1]]}
//! ```
//!
//! - Every stamp is integer nanoseconds on the run clock; `null` means it did not happen.
//! - `request_id` is the `x-request-id` the request carried, `<run id>-<id>` (the run id is
//!   `summary.json`'s `config.run_id`), `null` when none of ours went out (`--no-request-id`, a
//!   `--header` of that name, or never sent); `server_request_id` is the `x-request-id` the
//!   server's response head carried (the same when it echoes ours, its own when it made one),
//!   `null` when it sent none. Lines without them (written before they existed) read as `null`.
//! - `endpoint` is the server it went to: an index of `--url`'s in the order given
//!   (`summary.json`'s `config.targets` and `endpoints`), 0 with one server; a line without
//!   it (written before it existed) reads as 0.
//! - `outcome` is `Outcome::name` (`ok`, `not_sent`, `cancelled`, `http_status`, …);
//!   `status` is the HTTP status (0 when no head arrived).
//! - `input_source` is `tokenizer` (the client tokenizer's exact count) or `approximate` (one
//!   token per synthetic word, or per 4 bytes of dataset text); a line without it (written
//!   before it existed) reads as `approximate`. `usage_prompt_tokens` is the server's own
//!   count of the same prompt, `null` when it sent none.
//! - `tool_calls` is how many tool calls the answer made (`--tools`), `items` how many
//!   embeddings, rerank results or scores a pooling answer held; lines written before they
//!   existed read as 0.
//! - `output_source` is `usage`, `tokenizer` or `events`.
//! - `warmup_by` says which warm-up rule excluded a record: `count` (`--warmup-requests`),
//!   `duration` (`--warmup-duration`), `both`, or `null` for a measured one.
//! - `turn` is `null` for an independent request; a conversation's turn (`--turns`) is
//!   `{"session":S,"index":K,"session_start_ns":T,"think_ns":P,"end":E}`: turn K (from 0) of
//!   session S, the session's first send at T, the pause P drawn before this turn, and on
//!   the session's last turn why it ended (`completed`, `context`, `failed`, `abandoned`, `run_end`; else
//!   `null`). Lines without it (written before it existed) read as `null`.
//! - `failure` is `null` unless a failed request's response said why: then
//!   `{"content_type":CT,"body":TEXT,"body_hex":HEX}` — the head's content type (`null`
//!   without one) and the first 512 bytes of a non-2xx body, of a 2xx body that did not
//!   parse, or of an error event's payload: as text in `body` when UTF-8 (`body_hex` `null`),
//!   else as lower-case hex in `body_hex` (`body` `null`). See `record::failure`. Lines
//!   without it read as `null`.
//! - `body_bytes` is the request body's length as written (its `Content-Length`);
//!   `uploaded_ns` the completion of the request's last write (its last byte handed to the
//!   kernel; `null` when it was never written whole): upload time is `uploaded_ns − sent_ns`.
//!   `images` and `audio_ms` are the images and the milliseconds of audio it carried. Lines
//!   without them (written before they existed) read as 0 and `null`.
//! - `events` are compact arrays `[at_ns, tokens, server_ns_or_null, flags]` in arrival order,
//!   token-bearing or not; `flags` is a bit set: 1 = carried output text, 2 = carried
//!   reasoning text. Events sharing `at_ns` were completed by the same read. With
//!   `--tokenizer`, an event the client tokenizer credited with tokens has a fifth element,
//!   that count (`[at_ns, tokens, server_ns, flags, text_tokens]`).
//! - With `--rx-timestamps`, the stamps of reads (`head_ns` to `done_ns`, each event's
//!   `at_ns`) are the kernel's receive stamps, and the client's own stamps of the same reads
//!   are kept beside them: `first_token_user_ns` and `done_user_ns` (else `null`), and a
//!   sixth element `user_ns` on each event whose `at_ns` is the kernel's (its fifth,
//!   `text_tokens`, is then written even when 0). Lines without them read as `null`.

use super::{EventStamp, Record};

/// The log's name in a run's folder.
pub const FILE_NAME: &str = "requests.jsonl";

/// Fills `rec` from one line of `requests.jsonl` (the inverse of `format_line`); `rec`'s text
/// buffer is kept for reuse.
pub fn parse_line(text: &str, rec: &mut Record) -> Result<(), String> {
    let parsed: Record = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let buf = std::mem::take(&mut rec.text);
    *rec = Record {
        text: buf,
        ..parsed
    };
    Ok(())
}

/// Appends one record as one line, newline included (see the module doc for the format).
/// Numbers are formatted by hand: `write!` cost about 4 µs per 16-event record, this a
/// fraction of it.
pub fn format_line(buf: &mut Vec<u8>, r: &Record) {
    push(buf, "{\"id\":");
    push_u64(buf, r.id);
    key(buf, "request_id");
    match &r.request_id {
        Some(id) => {
            buf.push(b'"');
            id.write(buf);
            buf.push(b'"');
        }
        None => push(buf, "null"),
    }
    key(buf, "server_request_id");
    // Visible ASCII without `"` or `\` (`request_id::keep_echo`): nothing to escape.
    push_plain_or_null(buf, &r.server_request_id);
    key_u64(buf, "worker", r.worker.into());
    key_u64(buf, "endpoint", r.endpoint.into());
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
    key_opt(buf, "first_visible_ns", r.first_visible_ns);
    key_opt(buf, "last_token_ns", r.last_token_ns);
    key_opt(buf, "done_ns", r.done_ns);
    key_opt(buf, "first_token_user_ns", r.first_token_user_ns);
    key_opt(buf, "done_user_ns", r.done_user_ns);
    key_u64(buf, "input_tokens", r.input_tokens.into());
    key_str(buf, "input_source", r.input_source.name());
    key_u64(buf, "output_tokens", r.output_tokens.into());
    key_str(buf, "output_source", r.output_source.name());
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
    key_u64(buf, "tool_calls", r.tool_calls.into());
    key_u64(buf, "items", r.items.into());
    match r.warmup_by.name() {
        Some(name) => key_str(buf, "warmup_by", name),
        None => push(buf, ",\"warmup_by\":null"),
    }
    turn(buf, r.turn.as_ref());
    failure(buf, &r.failure);
    upload(buf, r);
    push(buf, ",\"events\":[");
    for (i, e) in r.events.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        event(buf, e);
    }
    push(buf, "]}\n");
}

/// `,"turn":{...}` or `,"turn":null`.
fn turn(buf: &mut Vec<u8>, turn: Option<&super::Turn>) {
    let Some(t) = turn else {
        push(buf, ",\"turn\":null");
        return;
    };
    push(buf, ",\"turn\":{\"session\":");
    push_u64(buf, t.session);
    key_u64(buf, "index", t.index.into());
    key_u64(buf, "session_start_ns", t.session_start_ns);
    key_u64(buf, "think_ns", t.think_ns);
    match t.end {
        Some(end) => key_str(buf, "end", end.name()),
        None => push(buf, ",\"end\":null"),
    }
    buf.push(b'}');
}

/// `,"failure":null` or `,"failure":{"content_type":..,"body":..,"body_hex":..}` (see
/// `failure` for the rule: the body as text when it is UTF-8, else as hex).
fn failure(buf: &mut Vec<u8>, f: &super::Failure) {
    if f.is_empty() {
        push(buf, ",\"failure\":null");
        return;
    }
    push(buf, ",\"failure\":{\"content_type\":");
    // Visible ASCII and spaces without `"` or `\` (`Failure::keep_content_type`).
    push_plain_or_null(buf, &f.content_type);
    match f.body_text() {
        Some(text) => {
            push(buf, ",\"body\":");
            push_json_str(buf, text);
            push(buf, ",\"body_hex\":null}");
        }
        None => {
            push(buf, ",\"body\":null,\"body_hex\":\"");
            super::failure::push_hex(buf, &f.body);
            push(buf, "\"}");
        }
    }
}

/// Bytes that need no escaping (the caller kept only visible ASCII without `"` or `\`) as a
/// JSON string; `null` when there are none.
fn push_plain_or_null(buf: &mut Vec<u8>, plain: &[u8]) {
    if plain.is_empty() {
        push(buf, "null");
    } else {
        buf.push(b'"');
        buf.extend_from_slice(plain);
        buf.push(b'"');
    }
}

/// `text` as a JSON string: `"` and `\` escaped, control characters as `\u00XX`.
fn push_json_str(buf: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    buf.push(b'"');
    for &b in text.as_bytes() {
        match b {
            b'"' => push(buf, "\\\""),
            b'\\' => push(buf, "\\\\"),
            0..=0x1f => {
                push(buf, "\\u00");
                buf.push(HEX[usize::from(b >> 4)]);
                buf.push(HEX[usize::from(b & 15)]);
            }
            _ => buf.push(b),
        }
    }
    buf.push(b'"');
}

/// The upload and media fields (issue 34): body bytes, the last write's stamp, images,
/// audio.
fn upload(buf: &mut Vec<u8>, r: &Record) {
    key_u64(buf, "body_bytes", r.body_bytes);
    key_opt(buf, "uploaded_ns", r.uploaded_ns);
    key_u64(buf, "images", r.images.into());
    key_u64(buf, "audio_ms", r.audio_ms.into());
}

fn event(buf: &mut Vec<u8>, e: &EventStamp) {
    buf.push(b'[');
    push_u64(buf, e.at_ns);
    buf.push(b',');
    push_u64(buf, e.tokens.into());
    buf.push(b',');
    push_opt(buf, e.server_ns);
    buf.push(b',');
    push_u64(buf, e.flags().into());
    if e.text_tokens > 0 || e.user_ns.is_some() {
        buf.push(b',');
        push_u64(buf, e.text_tokens.into());
    }
    if let Some(user_ns) = e.user_ns {
        buf.push(b',');
        push_u64(buf, user_ns);
    }
    buf.push(b']');
}

fn push(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(s.as_bytes());
}

/// `v` in decimal (also the request id's number: `request_id::RequestId::write`).
pub(super) fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
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
pub(crate) mod tests {
    use super::*;
    use crate::record::{InputSource, OslSource, Outcome};
    use proptest::prelude::*;

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
                EventStamp {
                    at_ns: 9_150,
                    user_ns: Some(9_180),
                    ..Default::default()
                },
            ],
            done_user_ns: Some(19_530),
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
            serde_json::json!([
                [9000, 1, 8950, 3],
                [9100, 0, null, 0],
                [9150, 0, null, 0, 0, 9180]
            ])
        );
        assert_eq!(v["done_user_ns"], 19_530);
        assert_eq!(v["first_token_user_ns"], serde_json::Value::Null);
    }

    fn arb_event() -> impl Strategy<Value = EventStamp> {
        (
            any::<u64>(),
            any::<u32>(),
            proptest::option::of(any::<u64>()),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0u32), any::<u32>()],
            proptest::option::of(any::<u64>()),
        )
            .prop_map(
                |(at_ns, tokens, server_ns, reasoning, output, text_tokens, user_ns)| EventStamp {
                    at_ns,
                    server_ns,
                    tokens,
                    reasoning,
                    output,
                    text_bytes: 0,
                    text_tokens,
                    user_ns,
                    empty_text: false,
                },
            )
    }

    pub(crate) fn arb_record() -> impl Strategy<Value = Record> {
        let stamps = proptest::collection::vec(proptest::option::of(any::<u64>()), 9);
        let usage = proptest::collection::vec(proptest::option::of(any::<u32>()), 3);
        let counts = (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
        );
        (
            (
                (
                    any::<u64>(),
                    any::<u16>(),
                    any::<bool>(),
                    any::<bool>(),
                    any::<u16>(),
                ),
                (
                    any::<u64>(),
                    proptest::option::of(any::<u64>()),
                    any::<u32>(),
                    any::<u32>(),
                ),
            ),
            (
                0..Outcome::ALL.len(),
                any::<u16>(),
                any::<u64>(),
                0..3usize,
                any::<bool>(),
            ),
            stamps,
            usage,
            counts,
            proptest::collection::vec(arb_event(), 0..6),
            (
                proptest::option::of(("[A-Za-z0-9._-]{1,23}", any::<u64>())),
                "[!#-\\[\\]-~]{0,40}",
            ),
            proptest::option::of((
                any::<u64>(),
                any::<u32>(),
                any::<u64>(),
                any::<u64>(),
                proptest::option::of(0..crate::plan::SessionEnd::ALL.len()),
            )),
            (
                "[ !#-\\[\\]-~]{0,20}",
                prop_oneof![
                    "\\PC{0,30}".prop_map(String::into_bytes),
                    proptest::collection::vec(any::<u8>(), 0..30),
                ],
            ),
        )
            .prop_map(
                |((ids, media), kinds, st, us, c, events, rid, turn, fail)| Record {
                    id: ids.0,
                    request_id: rid.0.map(|(run, n)| crate::record::RequestId {
                        run: crate::record::RunId::new(&run).unwrap(),
                        n,
                    }),
                    server_request_id: rid.1.into_bytes(),
                    worker: ids.1,
                    endpoint: ids.4,
                    warmup: ids.2 || ids.3,
                    warmup_by: crate::record::WarmupBy {
                        count: ids.2,
                        duration: ids.3,
                    },
                    outcome: Outcome::ALL[kinds.0],
                    status: kinds.1,
                    intended_ns: kinds.2,
                    sent_ns: st[0],
                    head_ns: st[1],
                    first_token_ns: st[2],
                    first_output_ns: st[3],
                    first_visible_ns: st[6],
                    last_token_ns: st[4],
                    done_ns: st[5],
                    first_token_user_ns: st[7],
                    done_user_ns: st[8],
                    input_tokens: c.0,
                    input_source: match kinds.4 {
                        true => InputSource::Tokenizer,
                        false => InputSource::Approximate,
                    },
                    output_tokens: c.1,
                    output_source: [OslSource::Usage, OslSource::Tokenizer, OslSource::Events]
                        [kinds.3],
                    usage_prompt_tokens: us[0],
                    usage_completion_tokens: us[1],
                    cached_tokens: us[2],
                    reads: c.2,
                    bytes: c.3,
                    events_dropped: c.4,
                    tool_calls: c.5,
                    items: c.6,
                    turn: turn.map(|t| crate::record::Turn {
                        session: t.0,
                        index: t.1,
                        session_start_ns: t.2,
                        think_ns: t.3,
                        end: t.4.map(|i| crate::plan::SessionEnd::ALL[i]),
                    }),
                    body_bytes: media.0,
                    uploaded_ns: media.1,
                    images: media.2,
                    audio_ms: media.3,
                    failure: crate::record::Failure {
                        content_type: fail.0.into_bytes(),
                        body: fail.1,
                    },
                    events,
                    text: vec![],
                },
            )
    }

    proptest! {
        /// The hand-written line and `Record`'s serde form are the same JSON, and reading the
        /// line back gives the record: one schema, written fast.
        #[test]
        fn the_fast_writer_writes_the_serde_schema(r in arb_record()) {
            let mut buf = Vec::new();
            format_line(&mut buf, &r);
            let written: serde_json::Value = serde_json::from_slice(&buf).unwrap();
            prop_assert_eq!(&written, &serde_json::to_value(&r).unwrap());
            let mut back = Record::default();
            parse_line(std::str::from_utf8(&buf).unwrap(), &mut back).unwrap();
            prop_assert_eq!(back, r);
        }
    }

    #[test]
    fn the_input_source_is_written_read_back_and_defaults_for_old_logs() {
        let r = Record {
            id: 3,
            outcome: Outcome::Ok,
            input_tokens: 64,
            input_source: InputSource::Tokenizer,
            usage_prompt_tokens: Some(115),
            ..Default::default()
        };
        let mut buf = Vec::new();
        format_line(&mut buf, &r);
        let line = std::str::from_utf8(&buf).unwrap();
        assert!(
            line.contains(r#""input_tokens":64,"input_source":"tokenizer","#),
            "{line}"
        );
        assert!(line.contains(r#""usage_prompt_tokens":115,"#), "{line}");
        let mut back = Record::default();
        parse_line(line, &mut back).unwrap();
        assert_eq!(back, r);
        // A line written before `input_source` existed: the weaker claim, approximate.
        let old = line.replace(r#""input_source":"tokenizer","#, "");
        assert!(!old.contains("input_source"));
        parse_line(&old, &mut back).unwrap();
        assert_eq!(back.input_source, InputSource::Approximate);
        assert_eq!(back.usage_prompt_tokens, Some(115));
        let bad = line.replace(r#""tokenizer""#, r#""guess""#);
        assert!(parse_line(&bad, &mut back).unwrap_err().contains("guess"));
    }

    #[test]
    fn upload_fields_are_written_and_old_lines_read_without_them() {
        let r = Record {
            id: 4,
            body_bytes: 4_194_304,
            uploaded_ns: Some(9_000),
            images: 2,
            audio_ms: 1_500,
            ..Default::default()
        };
        let mut buf = Vec::new();
        format_line(&mut buf, &r);
        let line = std::str::from_utf8(&buf).unwrap();
        let fields = r#""body_bytes":4194304,"uploaded_ns":9000,"images":2,"audio_ms":1500,"#;
        assert!(line.contains(fields), "{line}");
        let mut back = Record::default();
        parse_line(line, &mut back).unwrap();
        assert_eq!(back, r);
        parse_line(&line.replace(fields, ""), &mut back).unwrap();
        assert_eq!(
            (
                back.body_bytes,
                back.uploaded_ns,
                back.images,
                back.audio_ms
            ),
            (0, None, 0, 0)
        );
    }

    #[test]
    fn every_outcome_is_written_and_read_by_its_name() {
        for o in Outcome::ALL {
            assert_eq!(serde_json::to_value(o).unwrap(), o.name());
        }
        let mut rec = Record::default();
        let e = parse_line(r#"{"id":1,"outcome":"vibes"}"#, &mut rec).unwrap_err();
        assert!(e.contains("vibes") || e.contains("missing"), "{e}");
    }
}
