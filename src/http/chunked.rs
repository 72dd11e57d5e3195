//! Part of stage 3 of the flow (worker → **http** → sse → extract → record): the
//! `Transfer-Encoding: chunked` decoder. It turns raw body bytes into borrowed slices of
//! chunk data, whatever the read boundaries (inside a size line, an extension, a CRLF or a
//! trailer). A byte-at-a-time state machine for the framing, whole-slice hand-out for the
//! data; it may not do I/O, allocate, or panic on any input.

/// Why the chunked framing could not be decoded.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkError {
    /// A size line without hex digits, with junk, or a size that does not fit in 64 bits.
    #[error("bad chunk size line")]
    BadSize,
    /// Chunk data not followed by CRLF.
    #[error("chunk data not followed by CRLF")]
    BadTerminator,
    /// A size line (with extensions) or the trailer section past its bound.
    #[error("chunk size line or trailer too long")]
    LineTooLong,
}

/// Longest size line (with extensions) accepted; real servers send under 20 bytes.
const MAX_SIZE_LINE_BYTES: u32 = 4096;
/// Largest trailer section accepted.
const MAX_TRAILER_BYTES: u32 = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Hex digits of the size; `digits` counts them to reject empty and overlong sizes.
    Size {
        size: u64,
        digits: u8,
    },
    /// After the digits: optional whitespace and `;ext` up to CR/LF.
    Ext {
        size: u64,
    },
    SizeLf {
        size: u64,
    },
    Data {
        left: u64,
    },
    DataCr,
    DataLf,
    /// Start of a trailer line (an empty one ends the body).
    TrailerStart,
    TrailerStartLf,
    TrailerLine,
    Done,
}

/// What one `step` did: `consumed` input bytes, of which `data` (possibly empty) is body.
#[derive(Debug, PartialEq, Eq)]
pub struct Step<'a> {
    /// Input bytes used, framing included.
    pub consumed: usize,
    /// Body bytes among them, borrowed from the input; empty when the step read only framing.
    pub data: &'a [u8],
}

/// Decoder state for one chunked body.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    state: State,
    /// Bytes of the current size line or of the whole trailer, for the bounds.
    line_bytes: u32,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        ChunkedDecoder {
            state: State::Size { size: 0, digits: 0 },
            line_bytes: 0,
        }
    }

    /// Back to the start of a body, for the next response.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// The terminating `0\r\n\r\n` (and any trailers) has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The zero-size last chunk has been read; only (optional) trailers and the final CRLF
    /// remain. Servers that close here (llama.cpp was captured doing so) sent the whole body.
    pub fn in_trailer(&self) -> bool {
        matches!(
            self.state,
            State::TrailerStart | State::TrailerStartLf | State::TrailerLine | State::Done
        )
    }

    /// Decode from `input` until one data slice is found, the input runs out or the body
    /// ends. Call again with `&input[consumed..]` while input remains and `!is_done()`.
    pub fn step<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, ChunkError> {
        let mut i = 0;
        while i < input.len() {
            if let State::Data { left } = self.state {
                let take =
                    usize::try_from(left).map_or(input.len() - i, |l| l.min(input.len() - i));
                self.state = match left - take as u64 {
                    0 => State::DataCr,
                    rest => State::Data { left: rest },
                };
                return Ok(Step {
                    consumed: i + take,
                    data: &input[i..i + take],
                });
            }
            if self.state == State::Done {
                break;
            }
            self.framing_byte(input[i])?;
            i += 1;
        }
        Ok(Step {
            consumed: i,
            data: &[],
        })
    }

    fn framing_byte(&mut self, b: u8) -> Result<(), ChunkError> {
        self.state = match self.state {
            State::Size { size, digits } => self.size_byte(size, digits, b)?,
            State::Ext { size } => self.ext_byte(size, b)?,
            State::SizeLf { size } if b == b'\n' => after_size_line(size),
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataCr | State::DataLf if b == b'\n' => State::Size { size: 0, digits: 0 },
            State::TrailerStart | State::TrailerLine => self.trailer_byte(b)?,
            State::TrailerStartLf if b == b'\n' => State::Done,
            State::SizeLf { .. } | State::TrailerStartLf => return Err(ChunkError::BadSize),
            State::DataCr | State::DataLf => return Err(ChunkError::BadTerminator),
            State::Data { .. } | State::Done => self.state,
        };
        if matches!(self.state, State::Size { digits: 0, .. }) {
            // A new size line starts: its own bound.
            self.line_bytes = 0;
        }
        Ok(())
    }

    fn size_byte(&mut self, size: u64, digits: u8, b: u8) -> Result<State, ChunkError> {
        self.count_line_byte(MAX_SIZE_LINE_BYTES)?;
        let Some(d) = hex_value(b) else {
            if digits == 0 {
                return Err(ChunkError::BadSize);
            }
            return self.ext_byte(size, b);
        };
        // 16 hex digits fill 64 bits; a 17th (non-zero-padded) one would overflow.
        if size >> 60 != 0 {
            return Err(ChunkError::BadSize);
        }
        Ok(State::Size {
            size: size << 4 | u64::from(d),
            digits: digits.saturating_add(1),
        })
    }

    fn ext_byte(&mut self, size: u64, b: u8) -> Result<State, ChunkError> {
        self.count_line_byte(MAX_SIZE_LINE_BYTES)?;
        match b {
            b'\r' => Ok(State::SizeLf { size }),
            b'\n' => Ok(after_size_line(size)),
            // Extensions (`;name=value`) and whitespace before them carry nothing we use.
            b';' | b' ' | b'\t' => Ok(State::Ext { size }),
            _ if self.state_is_ext() => Ok(State::Ext { size }),
            _ => Err(ChunkError::BadSize),
        }
    }

    fn state_is_ext(&self) -> bool {
        matches!(self.state, State::Ext { .. })
    }

    fn trailer_byte(&mut self, b: u8) -> Result<State, ChunkError> {
        self.count_line_byte(MAX_TRAILER_BYTES)?;
        let at_start = self.state == State::TrailerStart;
        Ok(match b {
            b'\r' if at_start => State::TrailerStartLf,
            b'\n' if at_start => State::Done,
            b'\n' => State::TrailerStart,
            _ => State::TrailerLine,
        })
    }

    fn count_line_byte(&mut self, max: u32) -> Result<(), ChunkError> {
        self.line_bytes += 1;
        if self.line_bytes > max {
            return Err(ChunkError::LineTooLong);
        }
        Ok(())
    }
}

/// A zero size starts the trailer; the line counter then bounds the whole trailer section.
fn after_size_line(size: u64) -> State {
    if size == 0 {
        State::TrailerStart
    } else {
        State::Data { left: size }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode `reads` in order; the body bytes and whether the terminator was seen.
    fn decode(reads: &[&[u8]]) -> Result<(Vec<u8>, bool), ChunkError> {
        let mut d = ChunkedDecoder::new();
        let mut body = Vec::new();
        for read in reads {
            let mut rest = *read;
            while !rest.is_empty() && !d.is_done() {
                let step = d.step(rest)?;
                body.extend_from_slice(step.data);
                rest = &rest[step.consumed..];
            }
        }
        Ok((body, d.is_done()))
    }

    const WIRE: &[u8] =
        b"5\r\nhello\r\n1A;name=\"v\"\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n";

    #[test]
    fn sizes_extensions_and_trailers() {
        let (body, done) = decode(&[WIRE]).unwrap();
        assert_eq!(body, b"helloabcdefghijklmnopqrstuvwxyz");
        assert!(done);
    }

    #[test]
    fn every_cut_point_and_byte_reads_give_the_same_body() {
        let whole = decode(&[WIRE]).unwrap();
        for i in 0..=WIRE.len() {
            assert_eq!(decode(&[&WIRE[..i], &WIRE[i..]]).unwrap(), whole, "cut {i}");
        }
        let bytes: Vec<&[u8]> = WIRE.chunks(1).collect();
        assert_eq!(decode(&bytes).unwrap(), whole);
    }

    #[test]
    fn stops_at_the_terminator_and_leaves_the_rest() {
        let mut d = ChunkedDecoder::new();
        let input = b"0\r\n\r\nHTTP/1.1";
        let step = d.step(input).unwrap();
        assert_eq!((step.consumed, d.is_done()), (5, true));
    }

    #[test]
    fn bare_lf_line_ends_are_accepted() {
        assert_eq!(
            decode(&[b"3\nabc\n0\n\n"]).unwrap(),
            (b"abc".to_vec(), true)
        );
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert_eq!(decode(&[b"\r\n"]), Err(ChunkError::BadSize));
        assert_eq!(decode(&[b"zz\r\n"]), Err(ChunkError::BadSize));
        assert_eq!(decode(&[b"5x\r\n"]), Err(ChunkError::BadSize));
        assert_eq!(decode(&[b"5\rx"]), Err(ChunkError::BadSize));
        assert_eq!(
            decode(&[b"1ffffffffffffffff\r\n"]),
            Err(ChunkError::BadSize)
        );
        assert!(decode(&[b"0000000000000000000005\r\nhello\r\n0\r\n\r\n"]).is_ok());
        assert!(decode(&[b"ffffffffffffffff\r\n"]).is_ok());
    }

    #[test]
    fn data_must_end_with_crlf() {
        assert_eq!(decode(&[b"3\r\nabcX"]), Err(ChunkError::BadTerminator));
        assert_eq!(decode(&[b"3\r\nabc\rX"]), Err(ChunkError::BadTerminator));
    }

    #[test]
    fn overlong_extension_and_trailer_are_bounded() {
        let mut ext = b"1;".to_vec();
        ext.resize(5000, b'a');
        assert_eq!(decode(&[&ext]), Err(ChunkError::LineTooLong));
        let mut trailer = b"0\r\n".to_vec();
        trailer.extend(std::iter::repeat_n(b"X: y\r\n".as_slice(), 4000).flatten());
        assert_eq!(decode(&[&trailer]), Err(ChunkError::LineTooLong));
    }

    #[test]
    fn incomplete_body_is_not_done() {
        assert_eq!(decode(&[b"5\r\nhel"]).unwrap(), (b"hel".to_vec(), false));
        assert_eq!(decode(&[b"0\r\n"]).unwrap(), (Vec::new(), false));
    }

    #[test]
    fn trailer_section_is_known_once_the_last_chunk_is_read() {
        let mut d = ChunkedDecoder::new();
        for (read, in_trailer) in [
            (&b"3\r\nabc\r\n0"[..], false),
            (b"\r", false),
            (b"\n", true),
        ] {
            let mut rest = read;
            while !rest.is_empty() {
                rest = &rest[d.step(rest).unwrap().consumed..];
            }
            assert_eq!(d.in_trailer(), in_trailer);
        }
        assert!(!d.is_done());
    }
}
