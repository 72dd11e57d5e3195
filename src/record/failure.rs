//! Part of the record (… → extract → **record** → collector …): why a failed request failed,
//! as the server said it — the response's content type and the first bytes of its body (a
//! non-2xx body, a 2xx body that did not parse, or the payload of an error event inside a
//! stream). Bounded (`MAX_CONTENT_TYPE_BYTES`, `MAX_BODY_BYTES`) and carried in buffers the
//! worker recycles with the record's others (`Spare`), so keeping a reason allocates nothing
//! once the buffers have grown. The worker writes it; `message` (used by the collector, off
//! the hot path) reads the server's message out of it. Pure values: no I/O, no clock.
//!
//! `requests.jsonl` writes it as `"failure"`: `null` for a record without one (every `ok`
//! record, and failures without a response such as `connect` or `timeout`), else
//! `{"content_type":CT,"body":TEXT,"body_hex":HEX}` — `content_type` the head's value (`null`
//! when it had none), and the kept body bytes as `body` when they are UTF-8 (the usual case,
//! a cut character at the bound is dropped) with `body_hex` `null`, else as `body_hex`
//! (lower-case hex of the bytes) with `body` `null`.

use serde::{Deserialize, Serialize};

/// First bytes of a failed response's body kept per record.
pub const MAX_BODY_BYTES: usize = 512;
/// Longest content type kept, bytes.
pub const MAX_CONTENT_TYPE_BYTES: usize = 128;
/// Longest message the summary groups by, characters (`message`).
pub const MAX_MESSAGE_CHARS: usize = 200;

/// A failed response's content type and first body bytes (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    /// The `content-type` header's value: visible ASCII and spaces (`"`, `\` and other bytes
    /// as `?`), cut to `MAX_CONTENT_TYPE_BYTES`; empty when there was none.
    pub content_type: Vec<u8>,
    /// The first `MAX_BODY_BYTES` of the body (or of the error event's payload).
    pub body: Vec<u8>,
}

impl Failure {
    /// Empty buffers with room for their bounds: filling them never grows them.
    pub fn with_capacity() -> Failure {
        Failure {
            content_type: Vec::with_capacity(MAX_CONTENT_TYPE_BYTES),
            body: Vec::with_capacity(MAX_BODY_BYTES),
        }
    }

    /// Nothing kept.
    pub fn is_empty(&self) -> bool {
        self.content_type.is_empty() && self.body.is_empty()
    }

    /// Forget what was kept (capacity kept).
    pub fn clear(&mut self) {
        self.content_type.clear();
        self.body.clear();
    }

    /// Keeps a head's `content-type` value (replacing an earlier one).
    pub fn keep_content_type(&mut self, value: &[u8]) {
        self.content_type.clear();
        let value = value.trim_ascii();
        self.content_type
            .extend(value.iter().take(MAX_CONTENT_TYPE_BYTES).map(|&b| match b {
                b'"' | b'\\' => b'?',
                0x20..=0x7e => b,
                _ => b'?',
            }));
    }

    /// Appends body bytes up to the bound; the rest is not kept.
    pub fn keep_body(&mut self, piece: &[u8]) {
        let room = MAX_BODY_BYTES.saturating_sub(self.body.len());
        self.body.extend_from_slice(&piece[..piece.len().min(room)]);
    }

    /// Keeps `payload` as the body unless a body is kept already (the first error event
    /// of a stream is the one that says why).
    pub fn keep_first(&mut self, payload: &[u8]) {
        if self.body.is_empty() {
            self.keep_body(payload);
        }
    }

    /// Drops a character cut in two by the bound, so a UTF-8 body stays UTF-8.
    pub fn settle(&mut self) {
        if let Err(e) = std::str::from_utf8(&self.body) {
            if e.error_len().is_none() {
                self.body.truncate(e.valid_up_to());
            }
        }
    }

    /// The kept body as text, when it is UTF-8.
    pub fn body_text(&self) -> Option<&str> {
        std::str::from_utf8(&self.body).ok()
    }

    /// The server's message, normalised (white space trimmed and collapsed, numbers kept,
    /// cut to `MAX_MESSAGE_CHARS`): a JSON body's `error.message` (OpenAI, vLLM, llama.cpp,
    /// Anthropic), `response.error.message` (Responses `response.failed`), `message`,
    /// `detail` or a string `error`; an HTML page's `<title>`; else the text itself. A body
    /// that is not text reads as `N bytes, not text`; `None` when there is no body.
    pub fn message(&self) -> Option<String> {
        if self.body.is_empty() {
            return None;
        }
        let Some(text) = self.body_text() else {
            return Some(format!("{} bytes, not text", self.body.len()));
        };
        let raw = json_message(text)
            .or_else(|| html_title(text).map(str::to_string))
            .unwrap_or_else(|| text.to_string());
        Some(normalise(&raw))
    }
}

/// Trims, collapses each run of white space to one space, cuts to `MAX_MESSAGE_CHARS`.
pub fn normalise(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_MESSAGE_CHARS * 2));
    for (i, word) in raw.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    match out.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => out[..at].to_string(),
        None => out,
    }
}

/// The message of a JSON error body: parsed when whole, else read leniently from the first
/// `"message"` key (a body cut by the bound).
fn json_message(text: &str) -> Option<String> {
    let t = text.trim_start();
    if !t.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(t) {
        Ok(v) => message_of(&v),
        Err(_) => lenient_string_after(t, "\"message\""),
    }
}

fn message_of(v: &serde_json::Value) -> Option<String> {
    let s = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_string);
    let error = v.get("error");
    s(error.and_then(|e| e.get("message")))
        .or_else(|| {
            s(v.get("response")
                .and_then(|r| r.get("error"))?
                .get("message"))
        })
        .or_else(|| s(v.get("message")))
        .or_else(|| s(error))
        .or_else(|| match v.get("detail")? {
            serde_json::Value::String(d) => Some(d.clone()),
            // FastAPI's validation errors: a list of `{msg, loc, type}`.
            serde_json::Value::Array(items) => s(items.first()?.get("msg")),
            _ => None,
        })
}

/// The JSON string that follows `key` and a colon in `text`, unescaped as far as it goes.
fn lenient_string_after(text: &str, key: &str) -> Option<String> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let mut chars = rest.strip_prefix('"')?.chars();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n' | 'r' | 't') => out.push(' '),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let c = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(c.unwrap_or('?'));
                }
                Some(c) => out.push(c),
                None => break,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// An HTML page's `<title>` text (a proxy's error or login page).
fn html_title(text: &str) -> Option<&str> {
    let lower_at = |needle: &str| {
        text.as_bytes()
            .windows(needle.len())
            .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    };
    let open = lower_at("<title")?;
    let start = open + text[open..].find('>')? + 1;
    let end = lower_at("</title>").filter(|&e| e >= start)?;
    Some(&text[start..end]).filter(|t| !t.trim().is_empty())
}

impl Serialize for Failure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_empty() {
            return s.serialize_none();
        }
        Wire {
            content_type: (!self.content_type.is_empty())
                .then(|| String::from_utf8_lossy(&self.content_type).into_owned()),
            body: self.body_text().map(str::to_string),
            body_hex: self.body_text().is_none().then(|| hex(&self.body)),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Failure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Some(w) = Option::<Wire>::deserialize(d)? else {
            return Ok(Failure::default());
        };
        let body = match (w.body, w.body_hex) {
            (_, Some(h)) => unhex(&h).ok_or_else(|| {
                serde::de::Error::custom(format!("failure.body_hex `{h}` is not hex"))
            })?,
            (Some(b), None) => b.into_bytes(),
            (None, None) => Vec::new(),
        };
        Ok(Failure {
            content_type: w.content_type.map(String::into_bytes).unwrap_or_default(),
            body,
        })
    }
}

/// `failure`'s JSON object.
#[derive(Serialize, Deserialize)]
struct Wire {
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    body_hex: Option<String>,
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Appends lower-case hex of `bytes` to `out`.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
}

fn unhex(h: &str) -> Option<Vec<u8>> {
    let b = h.as_bytes();
    if b.len() % 2 != 0 {
        return None;
    }
    b.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(b: &[u8]) -> Failure {
        let mut f = Failure::default();
        f.keep_body(b);
        f
    }

    #[test]
    fn messages_come_from_the_servers_own_error_shapes() {
        let m = |b: &str| body(b.as_bytes()).message();
        // OpenAI / vLLM / the simulator.
        assert_eq!(
            m(r#"{"error":{"message":"simulated error","type":"ServerError","code":500}}"#)
                .as_deref(),
            Some("simulated error")
        );
        // vLLM's 400 on a prompt past the context, numbers kept.
        assert_eq!(
            m(r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens.","type":"BadRequestError","code":400}"#).as_deref(),
            Some("This model's maximum context length is 2048 tokens. However, you requested 2100 tokens.")
        );
        // Responses `response.failed`, Anthropic `event: error`.
        assert_eq!(
            m(r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}"#).as_deref(),
            Some("engine died")
        );
        assert_eq!(
            m(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
                .as_deref(),
            Some("Overloaded")
        );
        assert_eq!(
            m(r#"{"error":"plain  text\n error"}"#).as_deref(),
            Some("plain text error")
        );
        assert_eq!(
            m(r#"{"detail":[{"loc":["body"],"msg":"field required","type":"missing"}]}"#)
                .as_deref(),
            Some("field required")
        );
        // A JSON body cut by the bound still gives its message.
        assert_eq!(
            m(r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it\u0021","type":"exceed_context_size_error","n_prompt_tokens":5000"#)
                .as_deref(),
            Some("the request exceeds the available context size, try increasing it!")
        );
        assert_eq!(
            m("<html><head><TITLE>502 Bad Gateway</TITLE></head><body>x</body></html>").as_deref(),
            Some("502 Bad Gateway")
        );
        assert_eq!(
            m("  upstream\r\n connect error  ").as_deref(),
            Some("upstream connect error")
        );
        assert_eq!(
            body(b"\xff\xfe\x00").message().as_deref(),
            Some("3 bytes, not text")
        );
        assert_eq!(Failure::default().message(), None);
        let long = "x ".repeat(400);
        assert_eq!(m(&long).unwrap().chars().count(), MAX_MESSAGE_CHARS);
    }

    #[test]
    fn the_body_is_bounded_and_a_cut_character_is_dropped() {
        let mut f = Failure::with_capacity();
        let cap = f.body.capacity();
        f.keep_body(&[b'a'; MAX_BODY_BYTES - 1]);
        f.keep_body("é and more".as_bytes());
        assert_eq!(f.body.len(), MAX_BODY_BYTES);
        assert_eq!(f.body.capacity(), cap, "never grown");
        assert!(f.body_text().is_none(), "é cut in two");
        f.settle();
        assert_eq!(f.body.len(), MAX_BODY_BYTES - 1);
        assert!(f.body_text().is_some());
        f.keep_first(b"ignored");
        assert_eq!(f.body.len(), MAX_BODY_BYTES - 1, "a body is kept already");
        // Invalid bytes in the middle stay: they are not a cut character.
        let mut bad = body(b"a\xffb\xc3");
        bad.settle();
        assert_eq!(bad.body, b"a\xffb\xc3");
        f.keep_content_type(b" text/html; charset=\"utf-8\"\x01 ");
        assert_eq!(f.content_type, b"text/html; charset=?utf-8??");
    }

    #[test]
    fn the_wire_form_is_text_when_it_can_be_and_hex_otherwise() {
        let mut f = body("<h1>oops\"\n</h1>".as_bytes());
        f.keep_content_type(b"text/html");
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"content_type":"text/html","body":"<h1>oops\"\n</h1>","body_hex":null})
        );
        assert_eq!(serde_json::from_value::<Failure>(v).unwrap(), f);
        let bin = body(b"\x00\xff");
        let v = serde_json::to_value(&bin).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"content_type":null,"body":null,"body_hex":"00ff"})
        );
        assert_eq!(serde_json::from_value::<Failure>(v).unwrap(), bin);
        assert_eq!(
            serde_json::to_value(Failure::default()).unwrap(),
            serde_json::Value::Null
        );
        assert!(serde_json::from_str::<Failure>(r#"{"body_hex":"zz"}"#).is_err());
    }
}
