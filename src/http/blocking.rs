//! Stage 3 of the flow (worker → **http** → sse → extract → record), its blocking side: the
//! one small HTTP/1.1 client for what is not the worker's hot path — the `/metrics` scraper
//! and the Prometheus API (`scrape`), the model asked of `GET /v1/models` and `--wait-ready`
//! (`run::endpoint`). A std `TcpStream` (never a worker's runtime), `https://` through rustls
//! with the client config `http::tls` builds. Every exchange has one deadline (connect, TLS
//! handshake, write and every read together), a bound on the head and on the body. The head
//! is framed by `head.rs` (the same code as the worker's), a chunked body decoded by
//! `chunked.rs`; no compression is asked for.
//!
//! A connection is kept alive while the server allows. A kept-alive connection the server
//! closed between requests (a close or reset before any byte of the answer) is opened again
//! once within the same deadline, for a `GET` only. Name resolution (`getaddrinfo`) has no
//! timeout of its own. It may not print.

use crate::http::chunked::ChunkedDecoder;
use crate::http::head::{framing_of, parse_head_bytes, Framing, Head, HeadError};
use crate::http::tls::{self, ClientConfig, TlsError};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bound on the response head.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Bytes asked of one read.
const READ_BYTES: usize = 64 * 1024;

/// Where a client connects, and what it says it connects to.
#[derive(Clone, Debug)]
pub struct Origin {
    /// Host name or address (no brackets): resolved at each connect unless `addr` is given,
    /// and the name a TLS certificate must carry.
    pub host: String,
    /// Port.
    pub port: u16,
    /// The `Host` header's value.
    pub authority: String,
    /// An address already resolved, connected to instead of resolving `host`.
    pub addr: Option<SocketAddr>,
    /// `https://`: the client config.
    pub tls: Option<Arc<ClientConfig>>,
}

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// No TCP connection (refused, unreachable, name not resolved).
    #[error("{0}")]
    Connect(String),
    /// The TLS handshake was refused (what and what to do), or the host is no TLS name.
    #[error(transparent)]
    Tls(TlsError),
    /// The exchange did not finish within its timeout (in ms).
    #[error("no complete answer within {0} ms")]
    Timeout(u64),
    /// The server reset or closed the connection before the response ended.
    #[error("{0}")]
    Reset(String),
    /// Any other I/O error.
    #[error("{0}")]
    Io(String),
    /// A status the caller does not take (the body is not read).
    #[error("HTTP {0}")]
    Status(u16),
    /// The body is longer than the bound (in bytes).
    #[error("the body is over {0} bytes")]
    TooLarge(usize),
    /// The response is not HTTP/1.1 as it should be (bad head or chunked framing).
    #[error("{0}")]
    Parse(String),
}

/// One request: method, path (and query, already percent-encoded), headers beyond `Host`,
/// `User-Agent` and `Accept-Encoding`, and a body (sent with its `Content-Length` when the
/// method is not `GET`).
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `GET`, `POST`, …
    pub method: &'a str,
    /// Path and query.
    pub path: &'a str,
    /// Further headers, name and value.
    pub headers: &'a [(&'a str, &'a str)],
    /// The body.
    pub body: &'a [u8],
}

impl<'a> Request<'a> {
    /// `GET path` with `headers`.
    pub fn get(path: &'a str, headers: &'a [(&'a str, &'a str)]) -> Self {
        Request {
            method: "GET",
            path,
            headers,
            body: &[],
        }
    }
}

/// One connection to a server (TLS or not), with its TCP socket reachable for timeouts.
enum Conn {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            #[cfg(feature = "tls")]
            Conn::Tls(s) => &s.sock,
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            // A close without close_notify ends a close-delimited body like a plain close
            // (a truncation is caught by the body's framing).
            #[cfg(feature = "tls")]
            Conn::Tls(s) => match s.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// The one deadline of an exchange.
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    timeout: Duration,
}

impl Deadline {
    fn timeout_error(&self) -> GetError {
        GetError::Timeout(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX))
    }

    /// Time left, or the timeout error when none is.
    fn left(&self) -> Result<Duration, GetError> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timeout_error());
        }
        Ok(left)
    }

    /// The socket's read and write timeouts set to the time left.
    fn arm(&self, tcp: &TcpStream) -> Result<(), GetError> {
        let left = self.left()?;
        tcp.set_read_timeout(Some(left))
            .and_then(|()| tcp.set_write_timeout(Some(left)))
            .map_err(|e| GetError::Io(e.to_string()))
    }

    /// An I/O error of this exchange, typed.
    fn io_error(&self, e: &io::Error) -> GetError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => self.timeout_error(),
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => GetError::Reset(e.to_string()),
            _ => GetError::Io(e.to_string()),
        }
    }
}

/// A failed attempt, and whether it may be a kept-alive connection the server had closed.
struct Failed {
    error: GetError,
    stale: bool,
}

impl From<GetError> for Failed {
    fn from(error: GetError) -> Self {
        Failed {
            error,
            stale: false,
        }
    }
}

/// Requests to one origin over one kept-alive connection; its buffers are reused.
pub struct Client {
    origin: Origin,
    conn: Option<Conn>,
    request: Vec<u8>,
    max_body: usize,
    head: Vec<u8>,
    body: Vec<u8>,
    scratch: Vec<u8>,
    /// Connections opened so far.
    pub connections: u64,
}

impl Client {
    /// A client of `origin` taking bodies of at most `max_body` bytes.
    pub fn new(origin: Origin, max_body: usize) -> Client {
        Client {
            origin,
            conn: None,
            request: Vec::with_capacity(256),
            max_body,
            head: Vec::with_capacity(4096),
            body: Vec::new(),
            scratch: vec![0; READ_BYTES],
            connections: 0,
        }
    }

    /// `req` within `timeout`: the final status and the body (borrowed until the next call).
    /// A status `takes` refuses is `GetError::Status`, its body left unread.
    pub fn send(
        &mut self,
        req: &Request<'_>,
        timeout: Duration,
        takes: impl Fn(u16) -> bool,
    ) -> Result<(u16, &[u8]), GetError> {
        self.write_request(req);
        let deadline = Deadline {
            at: Instant::now() + timeout,
            timeout,
        };
        let reused = self.conn.is_some();
        let mut result = self.attempt(deadline, &takes);
        if let Err(Failed { stale: true, .. }) = result {
            if reused && req.method == "GET" {
                result = self.attempt(deadline, &takes);
            }
        }
        let status = result.map_err(|f| f.error)?;
        Ok((status, &self.body))
    }

    /// The request's bytes into `self.request`.
    fn write_request(&mut self, req: &Request<'_>) {
        let r = &mut self.request;
        r.clear();
        // Writing into a Vec cannot fail.
        let _ = write!(
            r,
            "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ringbench/{}\r\nAccept-Encoding: identity\r\n",
            req.method,
            req.path,
            self.origin.authority,
            env!("CARGO_PKG_VERSION")
        );
        for (name, value) in req.headers {
            let _ = write!(r, "{name}: {value}\r\n");
        }
        if req.method != "GET" {
            let _ = write!(r, "Content-Length: {}\r\n", req.body.len());
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(req.body);
    }

    /// One request and response; the connection is kept only when both ended cleanly and the
    /// server allows it.
    fn attempt(&mut self, deadline: Deadline, takes: &impl Fn(u16) -> bool) -> Result<u16, Failed> {
        let (mut conn, reused) = match self.conn.take() {
            Some(c) => (c, true),
            None => (self.connect(deadline)?, false),
        };
        deadline.arm(conn.tcp())?;
        if let Err(e) = conn.write_all(&self.request) {
            return Err(Failed {
                stale: reused,
                error: deadline.io_error(&e),
            });
        }
        let head = self.read_head(&mut conn, deadline, reused)?;
        if !takes(head.status) {
            return Err(GetError::Status(head.status).into());
        }
        let framing = framing_of(&head);
        let keep = self.read_body(&mut conn, &head, framing, deadline)?;
        if keep && head.reusable(framing) {
            self.conn = Some(conn);
        }
        Ok(head.status)
    }

    fn connect(&mut self, deadline: Deadline) -> Result<Conn, GetError> {
        let host = &self.origin.host;
        let addrs: Vec<SocketAddr> = match self.origin.addr {
            Some(addr) => vec![addr],
            None => (host.as_str(), self.origin.port)
                .to_socket_addrs()
                .map_err(|e| GetError::Connect(format!("{host}: {e}")))?
                .collect(),
        };
        let mut last = GetError::Connect(format!("{host}: no address"));
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, deadline.left()?) {
                Ok(tcp) => {
                    self.connections += 1;
                    let _ = tcp.set_nodelay(true);
                    return self.secure(tcp, deadline);
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => last = deadline.timeout_error(),
                Err(e) => last = GetError::Connect(format!("{addr}: {e}")),
            }
        }
        Err(last)
    }

    /// The plain connection, or TLS over it for `https://`.
    fn secure(&self, tcp: TcpStream, deadline: Deadline) -> Result<Conn, GetError> {
        match &self.origin.tls {
            None => Ok(Conn::Plain(tcp)),
            Some(config) => handshake(tcp, config, &self.origin, deadline),
        }
    }

    /// Reads until a final (non-1xx) head is complete; the bytes after it stay in `self.head`
    /// from `Head::len` on.
    fn read_head(
        &mut self,
        conn: &mut Conn,
        deadline: Deadline,
        reused: bool,
    ) -> Result<Head, Failed> {
        self.head.clear();
        loop {
            let parsed = parse_head_bytes(&self.head).map_err(|e| {
                GetError::Parse(match e {
                    HeadError::Bad => "malformed response head".into(),
                    HeadError::TooLarge => "more than 64 headers".into(),
                })
            })?;
            if let Some(head) = parsed {
                if (100..200).contains(&head.status) {
                    self.head.drain(..head.len);
                    continue;
                }
                return Ok(head);
            }
            if self.head.len() >= MAX_HEAD_BYTES {
                return Err(GetError::Parse("response head over 16 KiB".into()).into());
            }
            let n = read(conn, &mut self.scratch, deadline).map_err(|error| Failed {
                stale: reused && self.head.is_empty() && matches!(error, GetError::Reset(_)),
                error,
            })?;
            if n == 0 {
                return Err(Failed {
                    stale: reused && self.head.is_empty(),
                    error: GetError::Reset("closed before the response head".into()),
                });
            }
            self.head.extend_from_slice(&self.scratch[..n]);
        }
    }

    /// Reads the body into `self.body`; true when it ended exactly (the connection can carry
    /// the next request).
    fn read_body(
        &mut self,
        conn: &mut Conn,
        head: &Head,
        framing: Framing,
        deadline: Deadline,
    ) -> Result<bool, GetError> {
        if let Framing::Length { left } = framing {
            if left > self.max_body as u64 {
                return Err(GetError::TooLarge(self.max_body));
            }
        }
        self.body.clear();
        let mut body = Body::new(framing, self.max_body);
        body.feed(&self.head[head.len..], &mut self.body)?;
        while !body.done {
            let n = read(conn, &mut self.scratch, deadline)?;
            if n == 0 {
                body.eof()?;
                return Ok(false);
            }
            body.feed(&self.scratch[..n], &mut self.body)?;
        }
        Ok(!body.extra)
    }
}

fn read(conn: &mut Conn, buf: &mut [u8], deadline: Deadline) -> Result<usize, GetError> {
    deadline.arm(conn.tcp())?;
    loop {
        match conn.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other.map_err(|e| deadline.io_error(&e)),
        }
    }
}

#[cfg(feature = "tls")]
fn handshake(
    mut tcp: TcpStream,
    config: &Arc<ClientConfig>,
    origin: &Origin,
    deadline: Deadline,
) -> Result<Conn, GetError> {
    let (host, port) = (origin.host.as_str(), origin.port);
    let name = tls::server_name(host).map_err(GetError::Tls)?;
    let mut conn = rustls::ClientConnection::new(Arc::clone(config), name)
        .map_err(|e| GetError::Connect(format!("TLS: {e}")))?;
    while conn.is_handshaking() {
        deadline.arm(&tcp)?;
        conn.complete_io(&mut tcp)
            .map_err(|e| match deadline.io_error(&e) {
                GetError::Timeout(ms) => GetError::Timeout(ms),
                // What failed and what to do, as the run's own check says it.
                _ => GetError::Tls(tls::handshake_failure(host, port, &e)),
            })?;
    }
    Ok(Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
}

/// Never called: without the `tls` feature no client config exists.
#[cfg(not(feature = "tls"))]
fn handshake(
    _: TcpStream,
    config: &Arc<ClientConfig>,
    _: &Origin,
    _: Deadline,
) -> Result<Conn, GetError> {
    match **config {}
}

/// A body being read by its framing, held to its bound.
struct Body {
    framing: Framing,
    left: u64,
    chunked: ChunkedDecoder,
    max: usize,
    done: bool,
    /// Bytes came after the body's end (never asked for): the connection is not reused.
    extra: bool,
}

impl Body {
    fn new(framing: Framing, max: usize) -> Body {
        let left = match framing {
            Framing::Length { left } => left,
            _ => 0,
        };
        Body {
            framing,
            left,
            chunked: ChunkedDecoder::new(),
            max,
            done: framing == Framing::Length { left: 0 },
            extra: false,
        }
    }

    fn keep(&self, out: &mut Vec<u8>, piece: &[u8]) -> Result<(), GetError> {
        if out.len() + piece.len() > self.max {
            return Err(GetError::TooLarge(self.max));
        }
        out.extend_from_slice(piece);
        Ok(())
    }

    fn feed(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<(), GetError> {
        if self.done {
            self.extra |= !data.is_empty();
            return Ok(());
        }
        match self.framing {
            Framing::Close => self.keep(out, data),
            Framing::Length { .. } => {
                let take = usize::try_from(self.left).map_or(data.len(), |l| l.min(data.len()));
                self.keep(out, &data[..take])?;
                self.left -= take as u64;
                self.done = self.left == 0;
                self.extra |= take < data.len();
                Ok(())
            }
            Framing::Chunked => {
                while !data.is_empty() && !self.done {
                    let step = self
                        .chunked
                        .step(data)
                        .map_err(|e| GetError::Parse(format!("chunked body: {e}")))?;
                    self.keep(out, step.data)?;
                    data = &data[step.consumed..];
                    self.done = self.chunked.is_done();
                }
                self.extra |= !data.is_empty();
                Ok(())
            }
        }
    }

    /// The peer closed: the end of a close-delimited body, or of a chunked one whose last
    /// chunk came (llama.cpp was seen closing before the final CRLF); else a truncation.
    fn eof(&self) -> Result<(), GetError> {
        match self.framing {
            Framing::Close => Ok(()),
            Framing::Chunked if self.chunked.in_trailer() => Ok(()),
            _ => Err(GetError::Reset("closed before the body ended".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn bodies_end_by_their_framing_and_are_bounded() {
        let mut out = Vec::new();
        let mut b = Body::new(Framing::Chunked, 100);
        b.feed(b"3\r\nabc\r\n0\r\n\r\nX", &mut out).unwrap();
        assert_eq!((out.as_slice(), b.done, b.extra), (&b"abc"[..], true, true));
        let mut out = Vec::new();
        let mut b = Body::new(Framing::Length { left: 4 }, 100);
        b.feed(b"ab", &mut out).unwrap();
        assert!(!b.done && b.eof().is_err());
        b.feed(b"cd", &mut out).unwrap();
        assert!(b.done && !b.extra);
        let mut b = Body::new(Framing::Close, 3);
        assert!(matches!(
            b.feed(b"abcd", &mut Vec::new()),
            Err(GetError::TooLarge(3))
        ));
    }

    /// A server that reads one request head and answers `reply` in the pieces given, with a
    /// pause between them so that each arrives in a read of its own; the request it got.
    fn serve(pieces: Vec<&'static [u8]>) -> (Origin, std::sync::mpsc::Receiver<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut conn, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
            let _ = conn.set_nodelay(true);
            for p in pieces {
                let _ = conn.write_all(p);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let origin = Origin {
            host: "127.0.0.1".into(),
            port: addr.port(),
            authority: addr.to_string(),
            addr: Some(addr),
            tls: None,
        };
        (origin, rx)
    }

    #[test]
    fn a_chunked_body_cut_anywhere_arrives_whole_with_its_headers_sent() {
        let (origin, rx) = serve(vec![
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-",
            b"Encoding: chunked\r\n\r\n7\r\n{\"a\":[1",
            b"\r\n3\r\n,2]\r\n1\r\n}\r\n0\r\n\r\n",
        ]);
        let mut c = Client::new(origin, 1 << 20);
        let req = Request::get("/v1/models", &[("Authorization", "Bearer k")]);
        let (status, body) = c.send(&req, Duration::from_secs(5), |_| true).unwrap();
        assert_eq!((status, body), (200, &b"{\"a\":[1,2]}"[..]));
        let head = rx.recv().unwrap();
        assert!(
            head.starts_with("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:"),
            "{head}"
        );
        assert!(head.contains("\r\nAuthorization: Bearer k\r\n"), "{head}");
    }

    #[test]
    fn a_refused_status_and_a_short_body_are_typed() {
        let (origin, _rx) = serve(vec![b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"]);
        let mut c = Client::new(origin, 10);
        let t = Duration::from_secs(5);
        let req = Request::get("/health", &[]);
        assert!(matches!(
            c.send(&req, t, |s| s == 200),
            Err(GetError::Status(503))
        ));
        let (origin, _rx) = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"]);
        let mut c = Client::new(origin, 10);
        assert!(matches!(c.send(&req, t, |_| true), Err(GetError::Reset(_))));
    }
}
