//! Part of `scrape` (the server's side of a run): a blocking HTTP/1.1 `GET` of one `/metrics`
//! URL on a connection of its own (std `TcpStream`, never a worker's runtime), kept alive
//! across scrapes while the server allows and opened again when it does not; `https://`
//! through rustls with the client config `http::tls` builds. Every `GET` has one deadline
//! (connect, TLS handshake, write and every read together), a bound on the head and on the
//! body, and must answer 200. It asks for the 0.0.4 text format (`Accept`), never for
//! OpenMetrics, and no compression. `get_any` is the same `GET` of another path on the same
//! host (a Prometheus server's API), asking for JSON and handing back the body whatever the
//! status (Prometheus answers a refused query with 400, 422 or 503 and a JSON error). Used
//! only off the hot path (the scraping thread, a probe before the run, the Prometheus queries
//! after it); it may not print.
//!
//! The response head is read with httparse and a chunked body with the crate's own
//! `http::ChunkedDecoder`. `http::ResponseParser` is not used: it drives SSE and JSON
//! extraction and has no plain-text body.
//!
//! A kept-alive connection the server closed between scrapes (it shows as a close or reset
//! before any byte of the answer) is opened again once within the same deadline, not counted
//! as a failure. Name resolution (`getaddrinfo`) has no timeout of its own; the scraper's
//! callers never wait on it (`Scraper::mark` and `stop` are bounded by their own timeout).

use super::engines::Engine;
use super::parse::parse_page;
use super::ScrapeError;
use crate::http::chunked::ChunkedDecoder;
use crate::http::tls::{self, ClientConfig};
use crate::plan::Target;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default bound on a page: vLLM's is about 60 KiB, a data-parallel one a few times that.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Bound on the response head.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Bytes asked of one read.
const READ_BYTES: usize = 64 * 1024;

/// A `/metrics` URL, checked: `http://host[:port]/path` or `https://…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsUrl {
    /// As given.
    pub url: String,
    /// `https://`.
    pub https: bool,
    /// Host name or address (no brackets).
    pub host: String,
    /// Port; the scheme's default when the URL has none.
    pub port: u16,
    /// Path and query, `/` when the URL has none.
    pub path: String,
}

impl MetricsUrl {
    /// Checks `url` with the rules of `--url` (scheme, host, port, no credentials).
    pub fn parse(url: &str) -> Result<MetricsUrl, ScrapeError> {
        let target = Target::parse(url)
            .map_err(|e| ScrapeError::Setup(e.to_string().replace("--url", "metrics URL")))?;
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let path = rest.find('/').map_or("/", |at| &rest[at..]);
        Ok(MetricsUrl {
            url: url.to_string(),
            https: target.https,
            host: target.host,
            port: target.port,
            path: path.to_string(),
        })
    }

    /// The `Host` header's value (`Target::host_header`'s rule).
    fn authority(&self) -> String {
        Target {
            url: String::new(),
            https: self.https,
            host: self.host.clone(),
            port: self.port,
            base_path: String::new(),
        }
        .host_header()
    }
}

/// What a page's `GET` accepts: the 0.0.4 text format, never OpenMetrics.
const PAGE_ACCEPT: &str = "text/plain;version=0.0.4";
/// What an API `GET` (`get_any`) accepts.
const JSON_ACCEPT: &str = "application/json";

/// The bytes of a `GET` of `path` on `url`'s host, asking for `accept` and no compression.
fn request_for(url: &MetricsUrl, path: &str, accept: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ringbench/{}\r\n\
         Accept: {accept}\r\nAccept-Encoding: identity\r\n\r\n",
        url.authority(),
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes()
}

/// How `https://` URLs are checked, and the body bound.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOptions {
    /// A private CA's PEM file instead of the system's roots (`--cacert`).
    pub cacert: Option<PathBuf>,
    /// Accept any certificate (`--insecure`).
    pub insecure: bool,
    /// Bound on the body; 0 means `DEFAULT_MAX_BODY_BYTES`.
    pub max_body_bytes: usize,
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
            // A close without close_notify ends a close-delimited page like a plain close
            // (a page's truncation is caught by its framing or by the parser).
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

/// The one deadline of a `GET`.
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    timeout: Duration,
}

impl Deadline {
    fn timeout_error(&self) -> ScrapeError {
        ScrapeError::Timeout(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX))
    }

    /// Time left, or the timeout error when none is.
    fn left(&self) -> Result<Duration, ScrapeError> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timeout_error());
        }
        Ok(left)
    }

    /// The socket's read and write timeouts set to the time left.
    fn arm(&self, tcp: &TcpStream) -> Result<(), ScrapeError> {
        let left = self.left()?;
        tcp.set_read_timeout(Some(left))
            .and_then(|()| tcp.set_write_timeout(Some(left)))
            .map_err(|e| ScrapeError::Io(e.to_string()))
    }

    /// An I/O error of this `GET` as a scrape error.
    fn io_error(&self, e: &io::Error) -> ScrapeError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => self.timeout_error(),
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => ScrapeError::Reset(e.to_string()),
            _ => ScrapeError::Io(e.to_string()),
        }
    }
}

/// A failed attempt, and whether it may be a kept-alive connection the server had closed.
struct Failed {
    error: ScrapeError,
    stale: bool,
}

impl From<ScrapeError> for Failed {
    fn from(error: ScrapeError) -> Self {
        Failed {
            error,
            stale: false,
        }
    }
}

/// Repeated `GET`s of one URL over one kept-alive connection; its buffers are reused.
pub struct Fetcher {
    url: MetricsUrl,
    tls: Option<Arc<ClientConfig>>,
    conn: Option<Conn>,
    request: Vec<u8>,
    /// The path `request` asks for.
    request_path: String,
    max_body: usize,
    head: Vec<u8>,
    body: Vec<u8>,
    scratch: Vec<u8>,
    /// Connections opened so far.
    pub connections: u64,
}

impl Fetcher {
    /// A fetcher for `url`; for `https://`, the TLS config is built here (refused without the
    /// `tls` feature or without usable roots).
    pub fn new(url: MetricsUrl, opts: &GetOptions) -> Result<Fetcher, ScrapeError> {
        let tls = match url.https {
            true => Some(
                tls::client_config(opts.cacert.as_deref(), opts.insecure)
                    .map_err(|e| ScrapeError::Setup(e.to_string()))?,
            ),
            false => None,
        };
        let request = request_for(&url, &url.path, PAGE_ACCEPT);
        let max_body = match opts.max_body_bytes {
            0 => DEFAULT_MAX_BODY_BYTES,
            n => n,
        };
        Ok(Fetcher {
            request_path: url.path.clone(),
            url,
            tls,
            conn: None,
            request,
            max_body,
            head: Vec::with_capacity(4096),
            body: Vec::new(),
            scratch: vec![0; READ_BYTES],
            connections: 0,
        })
    }

    /// Its URL.
    pub fn url(&self) -> &MetricsUrl {
        &self.url
    }

    /// `GET` the page within `timeout`: its body as text (borrowed until the next call).
    pub fn get(&mut self, timeout: Duration) -> Result<&str, ScrapeError> {
        if self.request_path != self.url.path {
            self.request = request_for(&self.url, &self.url.path, PAGE_ACCEPT);
            self.request_path.clone_from(&self.url.path);
        }
        self.exchange(timeout, false)?;
        std::str::from_utf8(&self.body)
            .map_err(|_| ScrapeError::NotPrometheus("the body is not UTF-8".into()))
    }

    /// `GET path` (path and query, already percent-encoded) on the URL's host within
    /// `timeout`, asking for JSON: the status and the body as text, whatever the status.
    pub fn get_any(&mut self, path: &str, timeout: Duration) -> Result<(u16, &str), ScrapeError> {
        if self.request_path != path {
            self.request = request_for(&self.url, path, JSON_ACCEPT);
            self.request_path = path.to_string();
        }
        let status = self.exchange(timeout, true)?;
        let text = std::str::from_utf8(&self.body)
            .map_err(|_| ScrapeError::NotApi("the body is not UTF-8".into()))?;
        Ok((status, text))
    }

    /// The request, once more on a fresh connection when a kept-alive one turned out closed;
    /// the final status.
    fn exchange(&mut self, timeout: Duration, any_status: bool) -> Result<u16, ScrapeError> {
        let deadline = Deadline {
            at: Instant::now() + timeout,
            timeout,
        };
        let reused = self.conn.is_some();
        let mut result = self.attempt(deadline, any_status);
        if let Err(Failed { stale: true, .. }) = result {
            if reused {
                result = self.attempt(deadline, any_status);
            }
        }
        result.map_err(|f| f.error)
    }

    /// One request and response; the connection is kept only when both ended cleanly and the
    /// server allows it. A status but 200 is an error unless `any_status`.
    fn attempt(&mut self, deadline: Deadline, any_status: bool) -> Result<u16, Failed> {
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
        if head.status != 200 && !any_status {
            return Err(ScrapeError::Status(head.status).into());
        }
        let keep = self.read_body(&mut conn, &head, deadline)?;
        if keep && head.keep_alive {
            self.conn = Some(conn);
        }
        Ok(head.status)
    }

    fn connect(&mut self, deadline: Deadline) -> Result<Conn, ScrapeError> {
        let addrs: Vec<_> = (self.url.host.as_str(), self.url.port)
            .to_socket_addrs()
            .map_err(|e| ScrapeError::Connect(format!("{}: {e}", self.url.host)))?
            .collect();
        let mut last = ScrapeError::Connect(format!("{}: no address", self.url.host));
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, deadline.left()?) {
                Ok(tcp) => {
                    self.connections += 1;
                    let _ = tcp.set_nodelay(true);
                    return self.secure(tcp, deadline);
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => last = deadline.timeout_error(),
                Err(e) => last = ScrapeError::Connect(format!("{addr}: {e}")),
            }
        }
        Err(last)
    }

    /// The plain connection, or TLS over it for `https://`.
    fn secure(&self, tcp: TcpStream, deadline: Deadline) -> Result<Conn, ScrapeError> {
        match &self.tls {
            None => Ok(Conn::Plain(tcp)),
            Some(config) => handshake(tcp, config, &self.url, deadline),
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
            if let Some(head) = parse_head(&self.head)? {
                if (100..200).contains(&head.status) {
                    self.head.drain(..head.len);
                    continue;
                }
                return Ok(head);
            }
            if self.head.len() >= MAX_HEAD_BYTES {
                return Err(ScrapeError::Parse("response head over 16 KiB".into()).into());
            }
            let n = read(conn, &mut self.scratch, deadline).map_err(|error| Failed {
                stale: reused && self.head.is_empty() && matches!(error, ScrapeError::Reset(_)),
                error,
            })?;
            if n == 0 {
                return Err(Failed {
                    stale: reused && self.head.is_empty(),
                    error: ScrapeError::Reset("closed before the response head".into()),
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
        deadline: Deadline,
    ) -> Result<bool, ScrapeError> {
        if let Framing::Length(n) = head.framing {
            if n > self.max_body as u64 {
                return Err(ScrapeError::TooLarge(self.max_body));
            }
        }
        self.body.clear();
        let mut body = Body::new(head.framing, self.max_body);
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

fn read(conn: &mut Conn, buf: &mut [u8], deadline: Deadline) -> Result<usize, ScrapeError> {
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
    url: &MetricsUrl,
    deadline: Deadline,
) -> Result<Conn, ScrapeError> {
    let (host, port) = (url.host.as_str(), url.port);
    let name = tls::server_name(host).map_err(|e| ScrapeError::Setup(e.to_string()))?;
    let mut conn = rustls::ClientConnection::new(Arc::clone(config), name)
        .map_err(|e| ScrapeError::Connect(format!("TLS: {e}")))?;
    while conn.is_handshaking() {
        deadline.arm(&tcp)?;
        conn.complete_io(&mut tcp)
            .map_err(|e| match deadline.io_error(&e) {
                ScrapeError::Timeout(ms) => ScrapeError::Timeout(ms),
                // The same words as the run's own check: what failed and what to do.
                _ => ScrapeError::Connect(tls::handshake_failure(host, port, &e).to_string()),
            })?;
    }
    Ok(Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
}

/// Never called: without the `tls` feature no client config exists.
#[cfg(not(feature = "tls"))]
fn handshake(
    _: TcpStream,
    config: &Arc<ClientConfig>,
    _: &MetricsUrl,
    _: Deadline,
) -> Result<Conn, ScrapeError> {
    match **config {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    Close,
}

/// The head facts the body needs.
#[derive(Clone, Copy, Debug)]
struct Head {
    len: usize,
    status: u16,
    framing: Framing,
    keep_alive: bool,
}

/// `Some(head)` once `buf` holds a whole head.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, ScrapeError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ScrapeError::Parse(format!("response head: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    let (mut length, mut coding, mut close, mut keep) = (None, None, false, false);
    for h in resp.headers.iter() {
        let value = String::from_utf8_lossy(h.value).to_ascii_lowercase();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .trim()
                .parse()
                .map_err(|_| ScrapeError::Parse(format!("content-length '{value}'")))?;
            if length.is_some_and(|m| m != n) {
                return Err(ScrapeError::Parse("two content-lengths".into()));
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            coding = value.rsplit(',').next().map(|c| c.trim().to_string());
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= value.split(',').any(|t| t.trim() == "close");
            keep |= value.split(',').any(|t| t.trim() == "keep-alive");
        }
    }
    let framing = match (status, coding.as_deref(), length) {
        (204 | 304, _, _) | (100..=199, _, _) => Framing::Length(0),
        (_, Some("chunked"), _) => Framing::Chunked,
        (_, Some(_), _) => Framing::Close,
        (_, None, Some(n)) => Framing::Length(n),
        (_, None, None) => Framing::Close,
    };
    let http11 = resp.version == Some(1);
    Ok(Some(Head {
        len,
        status,
        framing,
        keep_alive: framing != Framing::Close && !close && (http11 || keep),
    }))
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
            Framing::Length(n) => n,
            _ => 0,
        };
        Body {
            framing,
            left,
            chunked: ChunkedDecoder::new(),
            max,
            done: framing == Framing::Length(0),
            extra: false,
        }
    }

    fn keep(&self, out: &mut Vec<u8>, piece: &[u8]) -> Result<(), ScrapeError> {
        if out.len() + piece.len() > self.max {
            return Err(ScrapeError::TooLarge(self.max));
        }
        out.extend_from_slice(piece);
        Ok(())
    }

    fn feed(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<(), ScrapeError> {
        if self.done {
            self.extra |= !data.is_empty();
            return Ok(());
        }
        match self.framing {
            Framing::Close => self.keep(out, data),
            Framing::Length(_) => {
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
                        .map_err(|e| ScrapeError::Parse(format!("chunked body: {e}")))?;
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
    fn eof(&self) -> Result<(), ScrapeError> {
        match self.framing {
            Framing::Close => Ok(()),
            Framing::Chunked if self.chunked.in_trailer() => Ok(()),
            _ => Err(ScrapeError::Reset("closed before the body ended".into())),
        }
    }
}

/// What a probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeInfo {
    /// The URL probed.
    pub url: String,
    /// The engine whose families the page has; `None` for Prometheus text of no known engine.
    pub engine: Option<Engine>,
    /// Metric families on the page.
    pub families: u32,
    /// How long the `GET` took, ns.
    pub elapsed_ns: u64,
}

/// One `GET` of `url` within `timeout`: `Ok` when the answer is Prometheus text with at least
/// one family (system TLS roots; see `probe_with`).
pub fn probe(url: &str, timeout: Duration) -> Result<ProbeInfo, ScrapeError> {
    probe_with(url, timeout, &GetOptions::default())
}

/// `probe` with TLS options and a body bound.
pub fn probe_with(
    url: &str,
    timeout: Duration,
    opts: &GetOptions,
) -> Result<ProbeInfo, ScrapeError> {
    let mut fetcher = Fetcher::new(MetricsUrl::parse(url)?, opts)?;
    let started = Instant::now();
    let text = fetcher.get(timeout)?;
    let elapsed_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let page = parse_page(text, 0)?;
    Ok(ProbeInfo {
        url: url.to_string(),
        engine: page.engine,
        families: page.families,
        elapsed_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn urls_keep_their_path_and_default_port() {
        let u = MetricsUrl::parse("http://127.0.0.1:8000/metrics").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8000, "/metrics")
        );
        assert_eq!(u.authority(), "127.0.0.1:8000");
        let u = MetricsUrl::parse("https://[::1]:443/m?x=1").unwrap();
        assert_eq!((u.port, u.path.as_str(), u.https), (443, "/m?x=1", true));
        assert_eq!(u.authority(), "[::1]");
        assert_eq!(
            MetricsUrl::parse("http://[::1]:9/").unwrap().authority(),
            "[::1]:9"
        );
        assert_eq!(MetricsUrl::parse("http://h").unwrap().path, "/");
        let e = MetricsUrl::parse("h:1/metrics").unwrap_err();
        assert!(e.to_string().contains("metrics URL"), "{e}");
    }

    #[test]
    fn heads_give_framing_and_reuse() {
        let h = |s: &str| parse_head(s.as_bytes()).unwrap().unwrap();
        let a = h("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        assert_eq!((a.framing, a.keep_alive), (Framing::Length(5), true));
        let b = h("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(b.framing, Framing::Chunked);
        let c = h("HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!((c.framing, c.keep_alive), (Framing::Close, false));
        let d = h("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n");
        assert!(!d.keep_alive);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\n").unwrap().is_none());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn bodies_end_by_their_framing_and_are_bounded() {
        let mut out = Vec::new();
        let mut b = Body::new(Framing::Chunked, 100);
        b.feed(b"3\r\nabc\r\n0\r\n\r\nX", &mut out).unwrap();
        assert_eq!((out.as_slice(), b.done, b.extra), (&b"abc"[..], true, true));
        let mut out = Vec::new();
        let mut b = Body::new(Framing::Length(4), 100);
        b.feed(b"ab", &mut out).unwrap();
        assert!(!b.done && b.eof().is_err());
        b.feed(b"cd", &mut out).unwrap();
        assert!(b.done && !b.extra);
        let mut b = Body::new(Framing::Close, 3);
        assert_eq!(
            b.feed(b"abcd", &mut Vec::new()),
            Err(ScrapeError::TooLarge(3))
        );
    }

    /// A server that answers each connection's requests with `replies` in turn, then closes;
    /// `trickle`: one byte a write.
    fn serve_with(replies: Vec<&'static str>, per_conn: usize, trickle: bool) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for conn in l.incoming() {
                let Ok(mut conn) = conn else { return };
                for _ in 0..per_conn {
                    let mut buf = [0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let Some(r) = replies.next() else { return };
                    let _ = conn.set_nodelay(true);
                    if trickle {
                        for b in r.as_bytes().chunks(1) {
                            let _ = conn.write_all(b);
                        }
                    } else {
                        let _ = conn.write_all(r.as_bytes());
                    }
                }
            }
        });
        format!("http://{addr}/metrics")
    }

    fn serve(replies: Vec<&'static str>, per_conn: usize) -> String {
        serve_with(replies, per_conn, false)
    }

    #[test]
    fn a_response_cut_into_single_bytes_reads_the_same() {
        const CHUNKED: &str =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na 1\r\n3\r\n.0\n\r\n0\r\n\r\n";
        let url = serve_with(vec![CHUNKED, CHUNKED], 2, true);
        let mut f = Fetcher::new(MetricsUrl::parse(&url).unwrap(), &GetOptions::default()).unwrap();
        for _ in 0..2 {
            assert_eq!(f.get(Duration::from_secs(2)).unwrap(), "a 1.0\n");
        }
        assert_eq!(f.connections, 1);
    }

    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\na 1.0\n";

    #[test]
    fn get_any_asks_its_path_and_hands_back_any_status() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/metrics", l.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut conn, _) = l.accept().unwrap();
            let replies = [
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n{}",
                OK,
            ];
            for reply in replies {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = conn.read(&mut buf).unwrap();
                    got.extend_from_slice(&buf[..n]);
                }
                let head = String::from_utf8_lossy(&got).into_owned();
                tx.send(head).unwrap();
                conn.write_all(reply.as_bytes()).unwrap();
            }
        });
        let mut f = Fetcher::new(MetricsUrl::parse(&url).unwrap(), &GetOptions::default()).unwrap();
        let t = Duration::from_secs(2);
        assert_eq!(f.get_any("/api/v1/series?x=%7B", t).unwrap(), (400, "{}"));
        let head = rx.recv().unwrap();
        assert!(
            head.starts_with("GET /api/v1/series?x=%7B HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(head.contains("Accept: application/json\r\n"), "{head}");
        // The page's own path again, on the same connection.
        assert_eq!(f.get(t).unwrap(), "a 1.0\n");
        assert!(rx.recv().unwrap().starts_with("GET /metrics HTTP/1.1\r\n"));
        assert_eq!(f.connections, 1);
    }

    #[test]
    fn a_kept_alive_connection_serves_the_next_scrape_and_a_closed_one_is_reopened() {
        let url = serve(vec![OK, OK, OK], 2);
        let mut f = Fetcher::new(MetricsUrl::parse(&url).unwrap(), &GetOptions::default()).unwrap();
        for _ in 0..3 {
            assert_eq!(f.get(Duration::from_secs(2)).unwrap(), "a 1.0\n");
        }
        // Two requests on the first connection; the server closed it, the third reopened.
        assert_eq!(f.connections, 2);
    }

    #[test]
    fn status_garbage_and_size_are_typed() {
        let url = serve(
            vec![
                "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
                "SSH-2.0-OpenSSH\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
            ],
            1,
        );
        let opts = GetOptions {
            max_body_bytes: 10,
            ..GetOptions::default()
        };
        let mut f = Fetcher::new(MetricsUrl::parse(&url).unwrap(), &opts).unwrap();
        let t = Duration::from_secs(2);
        assert_eq!(f.get(t), Err(ScrapeError::Status(500)));
        assert!(matches!(f.get(t), Err(ScrapeError::Parse(_))));
        assert_eq!(f.get(t), Err(ScrapeError::TooLarge(10)));
    }
}
