//! Part of the collector (… → record → **collector** → summary → report): `docs/metrics.md`'s ISL
//! row — the client's prompt count (known before the run: exact with `--tokenizer`, else an
//! approximation) with the server's `usage.prompt_tokens` kept beside it, never in its place.
//! Tallied over measured successful requests; what the summary's `tokens` block says about
//! input, and the warning when the two counts disagree. Never prints.

use crate::record::{InputSource, Record};
use crate::summary::{InputSourceCounts, Tokens};

/// The server's count may differ from the client's by up to 1/`QUIET_DENOM` (5%) unremarked.
const QUIET_DENOM: u64 = 20;

/// Input tokens of measured successful requests, both sides.
#[derive(Clone, Debug, Default)]
pub(crate) struct IslTally {
    /// Σ the client's ISL: `tokens.input_total`.
    pub client_total: u64,
    source: InputSourceCounts,
    /// Requests that reported `usage.prompt_tokens`, Σ of it, and Σ the client's ISL of
    /// the same requests (the ratio's denominator).
    reports: u64,
    server_total: u64,
    client_reported: u64,
}

impl IslTally {
    /// One measured successful request.
    pub fn add(&mut self, rec: &Record) {
        let isl = u64::from(rec.input_tokens);
        self.client_total += isl;
        match rec.input_source {
            InputSource::Tokenizer => self.source.tokenizer += 1,
            InputSource::Approximate => self.source.approximate += 1,
        }
        if let Some(server) = rec.usage_prompt_tokens {
            self.reports += 1;
            self.server_total += u64::from(server);
            self.client_reported += isl;
        }
    }

    /// The input side of `tokens`; the output side is left as `tokens` has it.
    pub fn fill(&self, tokens: &mut Tokens) {
        tokens.input_total = self.client_total;
        tokens.input_source = self.source.clone();
        tokens.input_total_server = (self.reports > 0).then_some(self.server_total);
        tokens.input_server_reports = self.reports;
        tokens.input_server_ratio = self.ratio();
    }

    /// Σ the server's count, when all of the run's `ok` successful requests reported it (a
    /// partial sum would understate a rate); `None` otherwise.
    pub fn server_total_of_all(&self, ok: u64) -> Option<u64> {
        (self.reports > 0 && self.reports == ok).then_some(self.server_total)
    }

    /// Server / client over the requests that reported; `None` when none did.
    fn ratio(&self) -> Option<f64> {
        (self.reports > 0 && self.client_reported > 0)
            .then(|| self.server_total as f64 / self.client_reported as f64)
    }

    /// A warning when the server's count, over the requests that reported one, is more than
    /// 5% away from the client's: both totals, the ratio, the likely cause and the flag.
    pub fn warning(&self) -> Option<String> {
        let (server, client) = (self.server_total, self.client_reported);
        let ratio = self.ratio()?;
        if server.abs_diff(client).saturating_mul(QUIET_DENOM) <= client {
            return None;
        }
        let exact = self.source.approximate == 0;
        let far = server >= client.saturating_mul(2) || server.saturating_mul(2) <= client;
        let why = match (far, exact, server > client) {
            (true, true, _) => {
                "looks like a wrong tokenizer: give --tokenizer the server's tokenizer.json"
            }
            (true, false, _) => {
                "the client's approximation is far off: give --tokenizer the server's \
                 tokenizer.json"
            }
            (false, true, true) => {
                "expected: the chat template and special tokens, which --tokenizer counts \
                 leave out"
            }
            (false, true, false) => {
                "fewer than the client's exact count: a different tokenizer? give --tokenizer \
                 the server's tokenizer.json"
            }
            (false, false, _) => {
                "the client's count is approximate: give --tokenizer the server's \
                 tokenizer.json for exact counts"
            }
        };
        let (n, requests) = match self.reports {
            1 => (1, "request"),
            n => (n, "requests"),
        };
        Some(format!(
            "input tokens: the server counted {server}, the client {client} (×{ratio:.2}, over \
             {n} {requests} reporting usage.prompt_tokens): {why}"
        ))
    }
}
