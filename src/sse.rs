//! Stage 4 of the flow (worker → http → **sse** → extract → record): splits a decoded
//! `text/event-stream` body into events and hands out each event's `data` value. It takes
//! body slices as they come (any read boundary, including inside a separator) and may not do
//! I/O or allocate per event once warm.
//!
//! Events that lie wholly inside one slice are handed out borrowed from it (zero-copy); only
//! an event that spans slices is copied, once, into the splitter's own buffer, which is
//! bounded by `max_event_bytes`. Lines end at `\n` or `\r\n` (a lone `\r` is not a line end
//! here: no server we know sends it, and supporting it would make every slice that ends in
//! `\r` ambiguous). An event ends at an empty line, so `\n\n`, `\r\n\r\n` and mixes such as
//! `\n\r\n` all separate events.

use memchr::memchr_iter;

/// An event grew past the bound before its end was seen.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
#[error("SSE event longer than {max_event_bytes} bytes")]
pub struct SseOversized {
    /// The bound that was exceeded, bytes.
    pub max_event_bytes: usize,
}

/// Splits an SSE body into events; one per connection, `reset` between responses.
pub struct SseSplitter {
    max_event_bytes: usize,
    /// Bytes of the event in progress that arrived in earlier slices.
    pending: Vec<u8>,
    /// The last two bytes seen in the event in progress; `\n\n` at an event's start, so an
    /// empty line right there is recognised without looking back into an earlier slice.
    tail: [u8; 2],
    /// Multi-line `data` values joined with `\n` (rare; single lines stay borrowed).
    joined: Vec<u8>,
}

impl SseSplitter {
    /// A splitter that refuses an event longer than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseSplitter {
            max_event_bytes,
            pending: Vec::new(),
            tail: *b"\n\n",
            joined: Vec::new(),
        }
    }

    /// Forget any partial event (before each response on a connection).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.tail = *b"\n\n";
    }

    /// Bytes of an unfinished event held back; at the end of a body these are discarded, as
    /// the SSE spec says for an event without its closing empty line.
    pub fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    /// Feed the next body slice. `on_data` gets the `data` value of every event completed by
    /// it, in order; events without data are skipped. An error from `on_data` stops the push.
    pub fn push<E: From<SseOversized>>(
        &mut self,
        slice: &[u8],
        mut on_data: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut start = 0;
        for lf in memchr_iter(b'\n', slice) {
            if !self.ends_blank_line(slice, start, lf) {
                continue;
            }
            let event_len = self.pending.len() + (lf + 1 - start);
            if event_len > self.max_event_bytes {
                return Err(self.oversized().into());
            }
            let event: &[u8] = if self.pending.is_empty() {
                &slice[start..=lf]
            } else {
                self.pending.extend_from_slice(&slice[start..=lf]);
                &self.pending
            };
            if let Some(data) = event_data(event, &mut self.joined) {
                on_data(data)?;
            }
            self.pending.clear();
            self.tail = *b"\n\n";
            start = lf + 1;
        }
        self.keep_rest(&slice[start..]).map_err(E::from)
    }

    /// Is the `\n` at `slice[lf]` the end of an empty line? Looks back across the slice start
    /// (and the event start) through `tail`.
    fn ends_blank_line(&self, slice: &[u8], start: usize, lf: usize) -> bool {
        let back = |n: usize| -> u8 {
            if lf >= start + n {
                slice[lf - n]
            } else {
                // n - (lf - start) is 1 or 2 here: reach into the carried tail.
                self.tail[2 - (n - (lf - start))]
            }
        };
        match back(1) {
            b'\n' => true,
            b'\r' => back(2) == b'\n',
            _ => false,
        }
    }

    fn keep_rest(&mut self, rest: &[u8]) -> Result<(), SseOversized> {
        if rest.is_empty() {
            return Ok(());
        }
        if self.pending.len() + rest.len() > self.max_event_bytes {
            return Err(self.oversized());
        }
        self.pending.extend_from_slice(rest);
        self.tail = match rest {
            [.., a, b] => [*a, *b],
            [b] => [self.tail[1], *b],
            [] => self.tail,
        };
        Ok(())
    }

    fn oversized(&self) -> SseOversized {
        SseOversized {
            max_event_bytes: self.max_event_bytes,
        }
    }
}

/// The `data` value of one complete event (its lines up to and including the empty line), or
/// `None` when it has no data or only empty data. One `data` line is returned borrowed;
/// several are joined with `\n` into `joined`, as the SSE spec says.
fn event_data<'a>(event: &'a [u8], joined: &'a mut Vec<u8>) -> Option<&'a [u8]> {
    let mut first: Option<&'a [u8]> = None;
    let mut data_lines = 0usize;
    for line in lines(event) {
        let Some(value) = data_value(line.strip_suffix(b"\r").unwrap_or(line)) else {
            continue;
        };
        data_lines += 1;
        match data_lines {
            1 => first = Some(value),
            2 => {
                joined.clear();
                joined.extend_from_slice(first.unwrap_or_default());
                joined.push(b'\n');
                joined.extend_from_slice(value);
            }
            _ => {
                joined.push(b'\n');
                joined.extend_from_slice(value);
            }
        }
    }
    let data = if data_lines > 1 { &joined[..] } else { first? };
    (!data.is_empty()).then_some(data)
}

/// The `\n`-terminated lines of a complete event, found with memchr: a byte-wise split
/// doubled the cost of splitting a 225-byte event.
fn lines(event: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr_iter(b'\n', event).map(move |lf| {
        let line = &event[start..lf];
        start = lf + 1;
        line
    })
}

/// The value of a `data` field line, with the one optional space after the colon removed.
/// Comments (`:`), `event:`, `id:`, `retry:` and unknown fields give `None`.
fn data_value(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"data")?;
    match rest {
        [] => Some(rest),
        [b':', b' ', value @ ..] => Some(value),
        [b':', value @ ..] => Some(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(cuts: &[&[u8]], max: usize) -> Result<Vec<Vec<u8>>, SseOversized> {
        let mut s = SseSplitter::new(max);
        let mut out = Vec::new();
        for c in cuts {
            s.push(c, |d| {
                out.push(d.to_vec());
                Ok::<(), SseOversized>(())
            })?;
        }
        Ok(out)
    }

    fn every_two_way_cut(body: &[u8]) -> Vec<Vec<Vec<u8>>> {
        (0..=body.len())
            .map(|i| split_all(&[&body[..i], &body[i..]], 1 << 20).unwrap())
            .collect()
    }

    #[test]
    fn separators_of_every_kind_split_events() {
        let body = b"data: a\n\ndata: b\r\n\r\ndata: c\n\r\ndata:d\r\n\n";
        let want: Vec<Vec<u8>> = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"d".to_vec()];
        assert_eq!(split_all(&[body], 1024).unwrap(), want);
        for got in every_two_way_cut(body) {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn separator_split_across_three_reads() {
        let got = split_all(&[b"data: x\r", b"\n\r", b"\ndata: y\n", b"\n"], 64).unwrap();
        assert_eq!(got, vec![b"x".to_vec(), b"y".to_vec()]);
    }

    #[test]
    fn single_byte_reads_match_one_read() {
        let body =
            b": keepalive\n\nevent: msg\nid: 7\nretry: 10\ndata: {\"a\":1}\n\ndata: [DONE]\n\n";
        let whole = split_all(&[body], 1024).unwrap();
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(split_all(&bytes, 1024).unwrap(), whole);
        assert_eq!(whole, vec![b"{\"a\":1}".to_vec(), b"[DONE]".to_vec()]);
    }

    #[test]
    fn multi_line_data_is_joined_and_empty_events_are_skipped() {
        let body = b"data: one\ndata:two\ndata\n\n\n\n: only a comment\n\ndata:\n\nid: 3\n\n";
        assert_eq!(
            split_all(&[body], 1024).unwrap(),
            vec![b"one\ntwo\n".to_vec()]
        );
        for got in every_two_way_cut(body) {
            assert_eq!(got, vec![b"one\ntwo\n".to_vec()]);
        }
    }

    #[test]
    fn only_one_space_is_stripped_and_other_fields_ignored() {
        let body = b"data:  two spaces\nevent: data\ndatax: no\n\n";
        assert_eq!(
            split_all(&[body], 1024).unwrap(),
            vec![b" two spaces".to_vec()]
        );
    }

    #[test]
    fn oversized_event_fails_however_it_is_cut() {
        let body = b"data: 0123456789\n\n"; // 18 bytes
        assert!(split_all(&[body], 18).is_ok());
        assert!(split_all(&[body], 17).is_err());
        for i in 0..=body.len() {
            assert!(split_all(&[&body[..i], &body[i..]], 17).is_err(), "cut {i}");
            assert!(split_all(&[&body[..i], &body[i..]], 18).is_ok(), "cut {i}");
        }
    }

    #[test]
    fn unfinished_event_is_held_not_emitted_and_reset_drops_it() {
        let mut s = SseSplitter::new(1024);
        let mut n = 0;
        s.push(b"data: a\n", |_| {
            n += 1;
            Ok::<(), SseOversized>(())
        })
        .unwrap();
        assert_eq!((n, s.pending_bytes()), (0, 8));
        s.reset();
        // After reset a leading "\n" is an (empty) event end, not the end of "data: a".
        s.push(b"\ndata: b\n\n", |d| {
            assert_eq!(d, b"b");
            n += 1;
            Ok::<(), SseOversized>(())
        })
        .unwrap();
        assert_eq!(n, 1);
    }
}
