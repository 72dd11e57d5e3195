//! Stage 3 of the flow (worker → **http** → sse → extract → record): one HTTP/1.1 response
//! head, read with httparse into the few facts its body needs (status, framing, whether the
//! connection may carry the next request, where the values a record keeps are). The one place
//! heads are framed: the worker's `ResponseParser` (`response.rs`) and the blocking client
//! (`blocking.rs`) both read through it. It may not do I/O or allocate.

use crate::plan::sim::STAMP_HEADER;
use crate::record::request_id::HEADER as REQUEST_ID_HEADER;

/// Why a head could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// Status line or headers do not parse, or contradict each other (two lengths).
    Bad,
    /// More than 64 headers.
    TooLarge,
}

/// How a body ends (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    Chunked,
    Length {
        left: u64,
    },
    /// Ends when the peer closes.
    Close,
}

/// The few head facts the body needs, copied out of httparse's borrowed view.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Head {
    pub len: usize,
    pub status: u16,
    pub http11: bool,
    /// Some `Transfer-Encoding` was given; `chunked`: its last coding is `chunked`.
    pub transfer_coding: bool,
    pub chunked: bool,
    pub content_length: Option<u64>,
    pub close: bool,
    pub keep_alive: bool,
    pub sse: bool,
    /// Where the first `x-request-id` value is in the parsed bytes: (offset, length).
    pub request_id: Option<(u32, u32)>,
    /// Where the last `content-type` value is in the parsed bytes: (offset, length).
    pub content_type: Option<(u32, u32)>,
    /// `STAMP_HEADER`'s value, when it is a decimal.
    pub stamp_ns: Option<u64>,
}

impl Head {
    /// Whether the connection may carry the next request once a body of `framing` ended.
    #[inline]
    pub(crate) fn reusable(&self, framing: Framing) -> bool {
        framing != Framing::Close && !self.close && (self.http11 || self.keep_alive)
    }
}

/// RFC 9112 §6.3, for a response to a non-HEAD request.
pub(crate) fn framing_of(head: &Head) -> Framing {
    match head.status {
        204 | 304 => Framing::Length { left: 0 },
        _ if head.transfer_coding && head.chunked => Framing::Chunked,
        _ if head.transfer_coding => Framing::Close,
        _ => head
            .content_length
            .map_or(Framing::Close, |left| Framing::Length { left }),
    }
}

/// `Some(head)` once `buf` holds a whole head, `None` while it does not.
pub(crate) fn parse_head_bytes(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(_) => return Err(HeadError::Bad),
    };
    let mut head = Head {
        len,
        status: resp.code.ok_or(HeadError::Bad)?,
        http11: resp.version == Some(1),
        ..Head::default()
    };
    for h in resp.headers.iter() {
        read_header(&mut head, h.name, h.value)?;
        // httparse's value is a slice of `buf`.
        let range = || {
            let at = h.value.as_ptr() as usize - buf.as_ptr() as usize;
            Some((at as u32, h.value.len() as u32))
        };
        if head.request_id.is_none() && h.name.eq_ignore_ascii_case(REQUEST_ID_HEADER) {
            head.request_id = range();
        }
        if h.name.eq_ignore_ascii_case("content-type") {
            head.content_type = range();
        }
    }
    Ok(Some(head))
}

/// The bytes of a header value found at `range` of `from` (see `Head`).
pub(crate) fn value_at(from: &[u8], range: Option<(u32, u32)>) -> Option<&[u8]> {
    let (at, len) = range?;
    from.get(at as usize..at as usize + len as usize)
}

fn read_header(head: &mut Head, name: &str, value: &[u8]) -> Result<(), HeadError> {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if is("transfer-encoding") {
        // Only a final `chunked` frames the body; any other coding means close-delimited.
        for coding in tokens(value) {
            head.transfer_coding = true;
            head.chunked = coding.eq_ignore_ascii_case(b"chunked");
        }
    } else if is("content-length") {
        let n = parse_decimal(value.trim_ascii()).ok_or(HeadError::Bad)?;
        if head.content_length.is_some_and(|m| m != n) {
            return Err(HeadError::Bad);
        }
        head.content_length = Some(n);
    } else if is("connection") {
        for t in tokens(value) {
            head.close |= t.eq_ignore_ascii_case(b"close");
            head.keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
        }
    } else if is(STAMP_HEADER) {
        head.stamp_ns = parse_decimal(value.trim_ascii());
    } else if is("content-type") {
        let v = value.trim_ascii_start();
        head.sse = v
            .get(..17)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"text/event-stream"));
    }
    Ok(())
}

/// Comma-separated list members, trimmed, empties skipped.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        let d = d.is_ascii_digit().then(|| u64::from(d - b'0'))?;
        n.checked_mul(10)?.checked_add(d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Head {
        parse_head_bytes(s.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn heads_give_framing_and_reuse() {
        let a = head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(framing_of(&a), Framing::Length { left: 5 });
        assert!(a.reusable(framing_of(&a)));
        let b = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(framing_of(&b), Framing::Chunked);
        let c = head("HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!(framing_of(&c), Framing::Close);
        assert!(!c.reusable(framing_of(&c)));
        let d = head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
        assert!(d.reusable(framing_of(&d)));
        let e = head("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n");
        assert!(!e.reusable(framing_of(&e)));
        let f = head("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n");
        assert_eq!(framing_of(&f), Framing::Length { left: 0 });
        assert!(parse_head_bytes(b"HTTP/1.1 200 OK\r\n").unwrap().is_none());
        assert_eq!(
            parse_head_bytes(b"garbage\r\n\r\n").err(),
            Some(HeadError::Bad)
        );
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(parse_head_bytes(two).err(), Some(HeadError::Bad));
        let x = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(parse_head_bytes(x).err(), Some(HeadError::Bad));
    }

    #[test]
    fn values_are_found_where_the_head_put_them() {
        let wire = b"HTTP/1.1 200 OK\r\nX-Request-Id: a\r\nx-request-id: b\r\n\
                     Content-Type: text/event-stream\r\n\r\n";
        let h = parse_head_bytes(wire).unwrap().unwrap();
        assert_eq!(value_at(wire, h.request_id), Some(&b"a"[..]));
        assert_eq!(
            value_at(wire, h.content_type),
            Some(&b"text/event-stream"[..])
        );
        assert!(h.sse);
        let many = format!("HTTP/1.1 200 OK\r\n{}\r\n", "a: b\r\n".repeat(65));
        assert_eq!(
            parse_head_bytes(many.as_bytes()).err(),
            Some(HeadError::TooLarge)
        );
    }
}
