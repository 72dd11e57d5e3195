//! Part of `scrape` (the server's side of a run): the `server` block of a finished run, the
//! one way both `run` and `report DIR` make it — the window from the scrapes' phase tags
//! (`window::measured_window`), the block over it (`window::summarize`), and the client's
//! figures beside the server's (`client_minus_server`) — and the warnings it calls for. It
//! reads no file and prints nothing.

use crate::scrape::Scrape;
use crate::summary::server::ServerSummary;
use crate::summary::Summary;

/// File name of the scrapes beside `summary.json`.
pub const FILE_NAME: &str = "server_metrics.jsonl";

/// The `server` block for `summary` from its run's scrapes; `None` without a measured
/// window (no scrape was tagged `measure`).
pub fn server_block(
    scrapes: &[Scrape],
    percentiles: &[f64],
    summary: &Summary,
) -> Option<ServerSummary> {
    let (t0, t1) = crate::scrape::measured_window(scrapes)?;
    let mut block = crate::scrape::summarize(scrapes, t0, t1, percentiles);
    let lat = &summary.latency_ms;
    let pairs: [(&str, Option<f64>, &str, &str); 4] = [
        ("ttft_p50_ms", lat.ttft.p50, "ttft", "p50_ms"),
        ("ttft_p99_ms", lat.ttft.p99, "ttft", "p99_ms"),
        ("e2e_p50_ms", lat.e2e.p50, "e2e", "p50_ms"),
        ("e2e_p99_ms", lat.e2e.p99, "e2e", "p99_ms"),
    ];
    for (key, client, concept, field) in pairs {
        let server = block.histograms.get(concept).and_then(|h| h.get(field));
        if let (Some(c), Some(s)) = (client, server) {
            block.client_minus_server.insert(key.into(), c - s);
        }
    }
    let tokens = &summary.tokens;
    let client_prompt = tokens.input_total_server.unwrap_or(tokens.input_total);
    let counts = [
        ("prompt_tokens", client_prompt),
        ("generation_tokens", tokens.output_total),
    ];
    for (key, client) in counts {
        if let Some(c) = block.counters.get(key) {
            block
                .client_minus_server
                .insert(key.into(), client as f64 - c.delta);
        }
    }
    Some(block)
}

/// What a reader of the figures should know about the scrapes: failed ones (by kind), and
/// token counts the two sides disagree on.
pub fn warnings(block: &ServerSummary) -> Vec<String> {
    let mut out = vec![];
    let kinds: Vec<String> = block
        .failures_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if block.scrapes_failed > 0 && block.prometheus.is_some() {
        out.push(format!(
            "server metrics: Prometheus queries failed: {} ({}); the concepts they asked for \
             are missing or cover less of the window, the client's figures are unaffected",
            block.scrapes_failed,
            kinds.join(", ")
        ));
    } else if block.scrapes_failed > 0 {
        out.push(format!(
            "server metrics: {} of {} scrapes in the measured window failed ({}); the \
             server's figures cover the rest, the client's are unaffected",
            block.scrapes_failed,
            block.scrapes_failed + block.scrapes_ok,
            kinds.join(", ")
        ));
    }
    for key in ["prompt_tokens", "generation_tokens"] {
        let (Some(diff), Some(server)) = (
            block.client_minus_server.get(key),
            block.counters.get(key).map(|c| c.delta),
        ) else {
            continue;
        };
        if server > 0.0 && (diff / server).abs() > 0.05 {
            out.push(format!(
                "server metrics: the server counted {server:.0} {} over the window and the \
                 client {:.0} ({:+.1}%): other traffic on the server, or requests of the \
                 warm-up still running at its end",
                key.replace('_', " "),
                server + diff,
                diff / server * 100.0
            ));
        }
    }
    out
}
