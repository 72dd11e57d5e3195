//! Stage 3 of the flow (worker → **http** → sse → extract → record): HTTP/1.1 bytes in and
//! out of one connection. `response` is a push parser for one response head and body
//! (framing by chunked, length or close), driving `sse` and `extract` and reporting through a
//! sink; `chunked` is its body decoder. Nothing here does I/O, awaits, or allocates per event:
//! the worker owns the socket and feeds what it read.

pub mod chunked;
pub mod response;
pub mod tls;

pub use chunked::{ChunkError, ChunkedDecoder};
pub use response::{Limits, Progress, ResponseError, ResponseParser, ResponseSink};
