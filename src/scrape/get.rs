//! Part of `scrape` (the server's side of a run): a blocking HTTP/1.1 `GET` of one `/metrics`
//! URL on a connection of its own, through the crate's blocking client (`http::blocking`: one
//! deadline for connect, TLS handshake, write and every read, the head framed as the worker
//! frames it, a chunked body by `http::ChunkedDecoder`), kept alive across scrapes while the
//! server allows and opened again when it does not; `https://` through rustls with the client
//! config `http::tls` builds. Every page `GET` has a bound on the body and must answer 200. It
//! asks for the 0.0.4 text format (`Accept`), never for OpenMetrics, and no compression.
//! `get_any` is the same `GET` of another path on the same host (a Prometheus server's API),
//! asking for JSON and handing back the body whatever the status (Prometheus answers a
//! refused query with 400, 422 or 503 and a JSON error). Used only off the hot path (the
//! scraping thread, a probe before the run, the Prometheus queries after it); it may not
//! print. Name resolution has no timeout of its own; the scraper's callers never wait on it
//! (`Scraper::mark` and `stop` are bounded by their own timeout).

use super::engines::Engine;
use super::parse::parse_page;
use super::ScrapeError;
use crate::http::blocking::{Client, GetError, Origin, Request};
use crate::http::tls::{self, TlsError};
use crate::plan::Target;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The default bound on a page: vLLM's is about 60 KiB, a data-parallel one a few times that.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

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

impl From<GetError> for ScrapeError {
    fn from(e: GetError) -> Self {
        match e {
            GetError::Connect(why) => ScrapeError::Connect(why),
            GetError::Tls(TlsError::Name(host)) => {
                ScrapeError::Setup(TlsError::Name(host).to_string())
            }
            GetError::Tls(e) => ScrapeError::Connect(e.to_string()),
            GetError::Timeout(ms) => ScrapeError::Timeout(ms),
            GetError::Reset(why) => ScrapeError::Reset(why),
            GetError::Io(why) => ScrapeError::Io(why),
            GetError::Status(code) => ScrapeError::Status(code),
            GetError::TooLarge(max) => ScrapeError::TooLarge(max),
            GetError::Parse(why) => ScrapeError::Parse(why),
        }
    }
}

/// Repeated `GET`s of one URL over one kept-alive connection; its buffers are reused.
pub struct Fetcher {
    url: MetricsUrl,
    client: Client,
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
        let max_body = match opts.max_body_bytes {
            0 => DEFAULT_MAX_BODY_BYTES,
            n => n,
        };
        let origin = Origin {
            host: url.host.clone(),
            port: url.port,
            authority: url.authority(),
            addr: None,
            tls,
        };
        Ok(Fetcher {
            url,
            client: Client::new(origin, max_body),
        })
    }

    /// Its URL.
    pub fn url(&self) -> &MetricsUrl {
        &self.url
    }

    /// Connections opened so far.
    pub fn connections(&self) -> u64 {
        self.client.connections
    }

    /// `GET` the page within `timeout`: its body as text (borrowed until the next call).
    pub fn get(&mut self, timeout: Duration) -> Result<&str, ScrapeError> {
        let req = Request::get(&self.url.path, &[("Accept", PAGE_ACCEPT)]);
        let (_, body) = self.client.send(&req, timeout, |s| s == 200)?;
        std::str::from_utf8(body)
            .map_err(|_| ScrapeError::NotPrometheus("the body is not UTF-8".into()))
    }

    /// `GET path` (path and query, already percent-encoded) on the URL's host within
    /// `timeout`, asking for JSON: the status and the body as text, whatever the status.
    pub fn get_any(&mut self, path: &str, timeout: Duration) -> Result<(u16, &str), ScrapeError> {
        let req = Request::get(path, &[("Accept", JSON_ACCEPT)]);
        let (status, body) = self.client.send(&req, timeout, |_| true)?;
        let text = std::str::from_utf8(body)
            .map_err(|_| ScrapeError::NotApi("the body is not UTF-8".into()))?;
        Ok((status, text))
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
    use std::io::{Read, Write};
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
        assert_eq!(f.connections(), 1);
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
        assert_eq!(f.connections(), 1);
    }

    #[test]
    fn a_kept_alive_connection_serves_the_next_scrape_and_a_closed_one_is_reopened() {
        let url = serve(vec![OK, OK, OK], 2);
        let mut f = Fetcher::new(MetricsUrl::parse(&url).unwrap(), &GetOptions::default()).unwrap();
        for _ in 0..3 {
            assert_eq!(f.get(Duration::from_secs(2)).unwrap(), "a 1.0\n");
        }
        // Two requests on the first connection; the server closed it, the third reopened.
        assert_eq!(f.connections(), 2);
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
