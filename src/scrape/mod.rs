//! The server's side of a run (beside the flow plan → … → summary, never inside it): the
//! server's own Prometheus `/metrics`, fetched on a thread of its own, parsed, mapped to
//! common concepts and summarized over the measured window.
//!
//! - `engines`: the concepts (running, waiting, KV-cache usage, token counters, server-side
//!   latency histograms) and each engine's table of family names;
//! - `parse`: one page of Prometheus text → a `Page` of concept values (with
//!   `prom_text_format_parser`, never by hand);
//! - `get`: a blocking HTTP/1.1 `GET` on a connection of its own, and `probe`;
//! - `scraper`: the scraping thread, its phase marks and its bounded log;
//! - `window`: a `summary::server::ServerSummary` from the scrapes of a window;
//! - `jsonl`: the `server_metrics.jsonl` line, written and read back;
//! - `join`: the `server` block of a finished run beside the client's figures (run and report);
//! - `prometheus`: the same scrapes read instead from a Prometheus server's query API over the
//!   run's window (`--prometheus`), one per step and target.
//!
//! It may use `plan`, `summary`, `http` and `rt`, nothing that imports it (`run` and `output`
//! do); it never prints, and a slow, stalling or failing endpoint costs the caller nothing but
//! counted failures.

pub mod engines;
pub mod get;
pub mod join;
pub mod jsonl;
pub mod parse;
pub mod prometheus;
pub mod scraper;
pub mod window;

pub use engines::{Concept, Engine, Kind, Unit};
pub use get::{probe, probe_with, Fetcher, GetOptions, MetricsUrl, ProbeInfo};
pub use parse::{parse_page, Hist, Page};
pub use scraper::{ScrapeLog, ScrapeSettings, Scraper};
pub use window::{measured_window, summarize};

use serde::{Deserialize, Serialize};

/// Longest error message kept (per scrape and per kind); the rest is cut.
const MAX_MESSAGE_BYTES: usize = 300;

/// Why a scrape (or setting one up) failed. Each failed scrape counts under its `kind_key`.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum ScrapeError {
    /// Refused before any scrape: a bad URL or setting, TLS that cannot be set up, a thread
    /// that cannot be started. The text says what to change.
    #[error("server metrics: {0}")]
    Setup(String),
    /// No TCP connection (refused, unreachable, name not resolved) or no TLS handshake.
    #[error("cannot connect: {0} (is the server up, and is /metrics on this port?)")]
    Connect(String),
    /// The whole `GET` did not finish within the timeout (in ms).
    #[error("no complete answer within {0} ms (a busy server: raise the interval)")]
    Timeout(u64),
    /// The server reset or closed the connection before the response ended.
    #[error("connection reset or closed: {0}")]
    Reset(String),
    /// Any other I/O error.
    #[error("I/O error: {0}")]
    Io(String),
    /// The server answered, but not 200 (llama.cpp answers 501 without `--metrics`).
    #[error("HTTP {0}, not 200 (llama.cpp needs --metrics; check the URL's path)")]
    Status(u16),
    /// The body is longer than the bound (in bytes).
    #[error("the page is over {0} bytes")]
    TooLarge(usize),
    /// The response is not HTTP/1.1 as it should be (bad head or chunked framing).
    #[error("malformed HTTP response: {0}")]
    Parse(String),
    /// The body is not Prometheus text (the parser refused it, it is not UTF-8, or it has no
    /// metric family).
    #[error("not Prometheus text: {0}")]
    NotPrometheus(String),
    /// A Prometheus server answered a query with `{"status":"error"}`: its `errorType` and
    /// `error` (a bad selector is `bad_data`).
    #[error("Prometheus refused the query ({error_type}): {error}")]
    Query {
        /// The answer's `errorType` (`bad_data`, `execution`, `timeout`, …).
        error_type: String,
        /// The answer's `error`.
        error: String,
    },
    /// The answer is not the JSON of Prometheus's HTTP API (is the URL a Prometheus server's?).
    #[error("not a Prometheus API answer: {0} (is --prometheus a Prometheus server's base URL?)")]
    NotApi(String),
}

/// The kinds of failure, one per `ScrapeError` variant: the keys of `failures_by_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// `ScrapeError::Setup`.
    Setup,
    /// `ScrapeError::Connect`.
    Connect,
    /// `ScrapeError::Timeout`.
    Timeout,
    /// `ScrapeError::Reset`.
    Reset,
    /// `ScrapeError::Io`.
    Io,
    /// `ScrapeError::Status` (counted as `http_<status>`).
    Status,
    /// `ScrapeError::TooLarge`.
    TooLarge,
    /// `ScrapeError::Parse`.
    Parse,
    /// `ScrapeError::NotPrometheus`.
    NotPrometheus,
    /// `ScrapeError::Query` (counted as `query_<errorType>`).
    Query,
    /// `ScrapeError::NotApi`.
    NotApi,
}

impl FailureKind {
    /// Every kind.
    pub const ALL: [FailureKind; 11] = [
        FailureKind::Setup,
        FailureKind::Connect,
        FailureKind::Timeout,
        FailureKind::Reset,
        FailureKind::Io,
        FailureKind::Status,
        FailureKind::TooLarge,
        FailureKind::Parse,
        FailureKind::NotPrometheus,
        FailureKind::Query,
        FailureKind::NotApi,
    ];

    /// Its key (a status counts as `http_<status>` instead, see `ScrapeError::kind_key`).
    pub const fn key(self) -> &'static str {
        match self {
            FailureKind::Setup => "setup",
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::Reset => "reset",
            FailureKind::Io => "io",
            FailureKind::Status => "http_status",
            FailureKind::TooLarge => "too_large",
            FailureKind::Parse => "parse",
            FailureKind::NotPrometheus => "not_prometheus",
            FailureKind::Query => "query_error",
            FailureKind::NotApi => "not_api",
        }
    }
}

impl ScrapeError {
    /// Its kind.
    pub fn kind(&self) -> FailureKind {
        match self {
            ScrapeError::Setup(_) => FailureKind::Setup,
            ScrapeError::Connect(_) => FailureKind::Connect,
            ScrapeError::Timeout(_) => FailureKind::Timeout,
            ScrapeError::Reset(_) => FailureKind::Reset,
            ScrapeError::Io(_) => FailureKind::Io,
            ScrapeError::Status(_) => FailureKind::Status,
            ScrapeError::TooLarge(_) => FailureKind::TooLarge,
            ScrapeError::Parse(_) => FailureKind::Parse,
            ScrapeError::NotPrometheus(_) => FailureKind::NotPrometheus,
            ScrapeError::Query { .. } => FailureKind::Query,
            ScrapeError::NotApi(_) => FailureKind::NotApi,
        }
    }

    /// The key it counts under: its kind's, `http_<status>` (as the client's
    /// `failed_by_kind` counts statuses), or `query_<errorType>` when the server's `errorType`
    /// is a short lower-case word (`query_bad_data`).
    pub fn kind_key(&self) -> String {
        match self {
            ScrapeError::Status(code) => format!("http_{code}"),
            ScrapeError::Query { error_type, .. }
                if (1..=32).contains(&error_type.len())
                    && error_type
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'_') =>
            {
                format!("query_{error_type}")
            }
            other => other.kind().key().to_string(),
        }
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Where a run stood when a scrape started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Before the measured window (warm-up).
    #[default]
    Warmup,
    /// The measured window.
    Measure,
    /// After it (cool-down, the run's end).
    After,
}

impl Phase {
    /// Every phase, in a run's order.
    pub const ALL: [Phase; 3] = [Phase::Warmup, Phase::Measure, Phase::After];

    /// Its key in `server_metrics.jsonl`.
    pub const fn key(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
            Phase::After => "after",
        }
    }

    /// The phase of a key.
    pub fn from_key(key: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.key() == key)
    }
}

/// Serializes a keyed enum as its `key()` and reads it back with `from_key`, so the key is
/// written in one place only.
macro_rules! serde_by_key {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.key())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let key = std::borrow::Cow::<'de, str>::deserialize(d)?;
                <$ty>::from_key(&key).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "unknown {} '{key}'",
                        stringify!($ty)
                    ))
                })
            }
        }
    )*};
}

serde_by_key!(Concept, Engine, Phase);

/// Why one scrape failed, as its line keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// `ScrapeError::kind_key`: `timeout`, `http_500`, …
    pub kind: String,
    /// The error's text, cut to a few hundred bytes.
    pub message: String,
}

impl From<&ScrapeError> for Failure {
    fn from(e: &ScrapeError) -> Self {
        Failure {
            kind: e.kind_key(),
            message: cut(&e.to_string(), MAX_MESSAGE_BYTES),
        }
    }
}

/// One scrape of one URL: when (run clock), of what, in which phase, and what the page said.
/// Exactly one of `page` and `error` is set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scrape {
    /// Run-clock ns just before the request was written.
    pub start_ns: u64,
    /// Run-clock ns when the response had been read whole (or the failure was known).
    pub end_ns: u64,
    /// The URL scraped.
    pub url: String,
    /// The phase when the scrape started.
    pub phase: Phase,
    /// Which round of the scraper it belongs to (every URL is scraped once per round).
    pub round: u64,
    /// The round was asked for by `Scraper::mark` at a phase boundary.
    #[serde(default)]
    pub mark: bool,
    /// Why it failed; `None` when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
    /// What the page said; `None` when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<Page>,
    /// Read from a Prometheus server (`--prometheus`), not scraped: which, with what selector
    /// and step. `url` is then the target's labels (or the server's URL, for a failed query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<prometheus::PromSource>,
}

impl Scrape {
    /// The value of a gauge or counter concept on this scrape's page.
    pub fn value(&self, c: Concept) -> Option<f64> {
        self.page.as_ref()?.values.get(&c).copied()
    }

    /// A histogram concept on this scrape's page.
    pub fn hist(&self, c: Concept) -> Option<&Hist> {
        self.page.as_ref()?.histograms.get(&c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_keys() {
        assert_eq!(ScrapeError::Status(503).kind_key(), "http_503");
        assert_eq!(ScrapeError::Timeout(5).kind_key(), "timeout");
        let query = |t: &str| ScrapeError::Query {
            error_type: t.into(),
            error: "e".into(),
        };
        assert_eq!(query("bad_data").kind_key(), "query_bad_data");
        assert_eq!(query("Weird Type!").kind_key(), "query_error");
        assert_eq!(query("").kind_key(), "query_error");
        let mut keys: Vec<_> = FailureKind::ALL.iter().map(|k| k.key()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), FailureKind::ALL.len());
        for p in Phase::ALL {
            assert_eq!(Phase::from_key(p.key()), Some(p));
        }
    }

    #[test]
    fn keyed_enums_serialize_as_their_keys() {
        assert_eq!(
            serde_json::to_string(&Concept::KvCacheUsage).unwrap(),
            "\"kv_cache_usage\""
        );
        let e: Engine = serde_json::from_str("\"llama.cpp\"").unwrap();
        assert_eq!(e, Engine::LlamaCpp);
        assert!(serde_json::from_str::<Phase>("\"later\"").is_err());
        let mut m = std::collections::BTreeMap::new();
        m.insert(Concept::Running, 2.0);
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(text, "{\"running\":2.0}");
        let back: std::collections::BTreeMap<Concept, f64> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn cut_stays_on_a_character_boundary() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("abc", 10), "abc");
    }
}
