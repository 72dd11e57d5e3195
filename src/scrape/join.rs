//! Part of `scrape` (the server's side of a run): the `server` block of a finished run, the
//! one way both `run` and `report DIR` make it — the window from the scrapes' phase tags
//! (`window::measured_window`), the block over it (`window::summarize`), and the client's
//! figures beside the server's (`client_minus_server`) — and the warnings it calls for. It
//! reads no file and prints nothing.

use crate::scrape::Scrape;
use crate::summary::server::ServerSummary;
use crate::summary::{Latency, Summary};

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
    latency_differences(&mut block, &summary.latency_ms);
    let tokens = &summary.tokens;
    // Requests the client aborted on purpose cost the server their prompt and what it sent.
    let aborted = summary.cancellations.as_ref();
    let client_prompt = tokens.input_total_server.unwrap_or(tokens.input_total)
        + aborted.map_or(0, |c| c.input_tokens_total);
    let counts = [
        ("prompt_tokens", client_prompt),
        (
            "generation_tokens",
            tokens.output_total + aborted.map_or(0, |c| c.output_tokens_total),
        ),
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

/// `client_minus_server` for TTFT and E2E p50 / p99, where both sides have a value that is a
/// measurement.
fn latency_differences(block: &mut ServerSummary, lat: &Latency) {
    let pairs: [(&str, Option<f64>, &str, &str); 4] = [
        ("ttft_p50_ms", lat.ttft.p50, "ttft", "p50_ms"),
        ("ttft_p99_ms", lat.ttft.p99, "ttft", "p99_ms"),
        ("e2e_p50_ms", lat.e2e.p50, "e2e", "p50_ms"),
        ("e2e_p99_ms", lat.e2e.p99, "e2e", "p99_ms"),
    ];
    for (key, client, concept, field) in pairs {
        // A percentile placed inside a bucket wider than a quarter of it, or a floor from the `+Inf`
        // bucket, is not a measurement: a difference with it would be one (vLLM's E2E
        // buckets begin at 300 ms, so a 5 ms E2E reads 150 ms and "client − server" −145).
        let server = block
            .histograms
            .get(concept)
            .filter(|h| !h.coarse.iter().chain(&h.capped).any(|k| k == field))
            .and_then(|h| h.get(field));
        if let (Some(c), Some(s)) = (client, server) {
            block.client_minus_server.insert(key.into(), c - s);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::server::HistogramStats;
    use crate::summary::Stats;

    fn stats(p50: f64, p99: f64) -> Stats {
        Stats {
            count: 100,
            p50: Some(p50),
            p99: Some(p99),
            ..Stats::default()
        }
    }

    #[test]
    fn no_difference_is_taken_with_a_percentile_that_is_not_a_measurement() {
        let lat = Latency {
            ttft: stats(12.0, 30.0),
            e2e: stats(5.0, 9.0),
            ..Latency::default()
        };
        let mut block = ServerSummary::default();
        let ttft = HistogramStats {
            p50_ms: Some(10.5),
            p99_ms: Some(27.25),
            capped: vec!["p99_ms".into()],
            ..HistogramStats::default()
        };
        // vLLM's E2E: every observation under its first bound, 300 ms.
        let e2e = HistogramStats {
            p50_ms: Some(150.0),
            p99_ms: Some(297.0),
            coarse: vec!["p50_ms".into(), "p99_ms".into()],
            ..HistogramStats::default()
        };
        block.histograms.insert("ttft".into(), ttft);
        block.histograms.insert("e2e".into(), e2e);
        latency_differences(&mut block, &lat);
        let keys: Vec<&String> = block.client_minus_server.keys().collect();
        assert_eq!(keys, ["ttft_p50_ms"]);
        assert_eq!(block.client_minus_server["ttft_p50_ms"], 1.5);
        block.histograms.get_mut("ttft").unwrap().capped.clear();
        latency_differences(&mut block, &lat);
        assert_eq!(block.client_minus_server["ttft_p99_ms"], 2.75);
        assert!(!block.client_minus_server.contains_key("e2e_p50_ms"));
    }
}
