//! Stage 3 of the flow (worker → **http** → sse → extract → record): HTTP/1.1 bytes in and
//! out of one connection. `head` frames a response head (the one place heads are read);
//! `response` is a push parser for one response head and body (framing by chunked, length or
//! close), driving `sse` and `extract` and reporting through a sink; `chunked` is its body
//! decoder. Nothing of these does I/O, awaits, or allocates per event: the worker owns the
//! socket and feeds what it read. `blocking` is the small blocking client of everything off
//! the hot path (the scraper, model discovery, `--wait-ready`), on the same framing.

pub mod blocking;
pub mod chunked;
pub(crate) mod head;
pub mod response;
pub mod tls;

pub use chunked::{ChunkError, ChunkedDecoder};
pub use response::{Limits, Progress, ResponseError, ResponseParser, ResponseSink};
