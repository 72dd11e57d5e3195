//! Part of the report stage (… → summary → **output**): the console's "Server (scraped)"
//! block — what the server's own metrics said over the measured window (`summary.server`),
//! scraped directly or read from a Prometheus server (its source row says which),
//! beside the client's figures. Like `console.rs` it only prints what the summary holds; it
//! computes no figure but a ratio of two it shows.

use super::console_rows::{num as n, row, rule};
use crate::summary::server::{HistogramStats, ServerSummary};
use std::io::{self, Write};

/// The block, when the run scraped the server; nothing otherwise.
pub(super) fn server_block(server: Option<&ServerSummary>, out: &mut impl Write) -> io::Result<()> {
    let Some(s) = server else {
        return Ok(());
    };
    writeln!(out, "{}", rule("Server (scraped)", '-'))?;
    let engine = s.engine.as_deref().unwrap_or("unknown engine");
    let source = match &s.prometheus {
        None => format!(
            "{engine} · {} scrapes ({} failed) over {:.1} s",
            s.scrapes_ok + s.scrapes_failed,
            s.scrapes_failed,
            s.window_s
        ),
        Some(p) => format!(
            "Prometheus {}{} · step {} s · {engine} · {} target{}, {} points ({} queries \
             failed) over {:.1} s",
            p.url,
            p.selector
                .as_deref()
                .map_or(String::new(), |sel| format!(" {sel}")),
            p.step_s,
            p.targets.len(),
            if p.targets.len() == 1 { "" } else { "s" },
            s.scrapes_ok,
            s.scrapes_failed,
            s.window_s
        ),
    };
    row(out, "Source:", source)?;
    gauges(s, out)?;
    counters(s, out)?;
    latencies(s, out)
}

fn gauges(s: &ServerSummary, out: &mut impl Write) -> io::Result<()> {
    let g = |k: &str| s.gauges.get(k);
    if let (Some(r), Some(w)) = (g("running"), g("waiting")) {
        row(
            out,
            "Running / waiting, mean (max):",
            format!(
                "{} ({}) / {} ({})",
                n(r.mean, 1),
                n(r.max, 0),
                n(w.mean, 1),
                n(w.max, 0)
            ),
        )?;
    }
    if let Some(kv) = g("kv_cache_usage") {
        let pct = |v: Option<f64>| n(v.map(|v| v * 100.0), 1);
        row(
            out,
            "KV-cache usage % mean / p90 / max:",
            format!("{} / {} / {}", pct(kv.mean), pct(kv.p90), pct(kv.max)),
        )?;
    }
    Ok(())
}

fn counters(s: &ServerSummary, out: &mut impl Write) -> io::Result<()> {
    let c = |k: &str| s.counters.get(k);
    if let (Some(q), Some(h)) = (c("prefix_cache_queries"), c("prefix_cache_hits")) {
        let rate = (q.delta > 0.0).then(|| h.delta / q.delta * 100.0);
        row(
            out,
            "Prefix-cache hit rate (tokens):",
            format!("{}% of {:.0}", n(rate, 2), q.delta),
        )?;
    }
    if let (Some(q), Some(h)) = (c("mm_cache_queries"), c("mm_cache_hits")) {
        let rate = (q.delta > 0.0).then(|| h.delta / q.delta * 100.0);
        row(
            out,
            "MM-cache hits / queries (items):",
            format!("{:.0} / {:.0} ({}%)", h.delta, q.delta, n(rate, 2)),
        )?;
    }
    if let Some(p) = c("preemptions") {
        row(out, "Preemptions:", format!("{:.0}", p.delta))?;
    }
    for (key, label) in [
        ("prompt_tokens", "Prompt tokens (server, client − server):"),
        (
            "generation_tokens",
            "Generated tokens (server, client − server):",
        ),
    ] {
        if let Some(t) = c(key) {
            let diff = s.client_minus_server.get(key).copied();
            row(
                out,
                label,
                format!("{:.0} ({}/s), {}", t.delta, n(t.per_s, 0), n(diff, 0)),
            )?;
        }
    }
    Ok(())
}

fn latencies(s: &ServerSummary, out: &mut impl Write) -> io::Result<()> {
    for (key, label) in [
        ("ttft", "Server TTFT p50 / p99 (ms):"),
        ("e2e", "Server E2E p50 / p99 (ms):"),
        ("queue_time", "Server queue time p50 / p99 (ms):"),
    ] {
        let Some(h) = s.histograms.get(key) else {
            continue;
        };
        let mut value = format!("{} / {}", percentile(h, "p50_ms"), percentile(h, "p99_ms"));
        if !h.coarse.is_empty() {
            value.push_str(&format!(" (mean {})", n(h.mean_ms, 2)));
        }
        let (p50, p99) = (
            s.client_minus_server.get(&format!("{key}_p50_ms")),
            s.client_minus_server.get(&format!("{key}_p99_ms")),
        );
        // A side that is missing or not a measurement (a range, a floor) has no difference.
        if p50.is_some() || p99.is_some() {
            let d = |v: Option<&f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
            value.push_str(&format!(" (client − server {} / {})", d(p50), d(p99)));
        }
        row(out, label, value)?;
    }
    if let Some(t) = &s.ntpot_ms {
        row(
            out,
            "Server NTPOT (ms/token):",
            format!(
                "{} = queue {} + prefill {} + decode {}",
                n(t.total, 3),
                n(t.queue, 3),
                n(t.prefill, 3),
                n(t.decode, 3)
            ),
        )?;
    }
    writeln!(
        out,
        "  (server percentiles interpolated within the server's histogram buckets)"
    )?;
    coarse_note(s, out)
}

/// A percentile as the console shows it: its bucket's range where the bucket is too wide
/// for the figure to mean much (`20.00–40.00`), else its value.
fn percentile(h: &HistogramStats, key: &str) -> String {
    match h.ranges.get(key) {
        Some(r) => format!("{:.2}–{:.2}", r.low_ms, r.high_ms),
        None => n(h.get(key), 2),
    }
}

/// Names the engine histograms whose percentiles were too coarse to be figures.
fn coarse_note(s: &ServerSummary, out: &mut impl Write) -> io::Result<()> {
    let coarse: Vec<String> = s
        .histograms
        .iter()
        .filter(|(_, h)| !h.coarse.is_empty())
        .map(|(k, h)| {
            let keys: Vec<&str> = h.coarse.iter().map(|c| c.trim_end_matches("_ms")).collect();
            format!("{k} {}", keys.join(", "))
        })
        .collect();
    if coarse.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  too coarse (a bucket wider than a quarter of the value; shown as the bucket's \
         range, no client − server): {}",
        coarse.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::server::PrometheusSource;

    fn printed(s: &ServerSummary) -> String {
        let mut out = Vec::new();
        server_block(Some(s), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_coarse_percentile_prints_as_its_range_and_is_named() {
        use crate::summary::server::BucketRange;
        let mut ttft = HistogramStats {
            count: Some(10),
            mean_ms: Some(21.5),
            p50_ms: Some(30.0),
            p99_ms: Some(39.8),
            coarse: vec!["p50_ms".into(), "p99_ms".into()],
            ..Default::default()
        };
        let range = BucketRange {
            low_ms: 20.0,
            high_ms: 40.0,
        };
        ttft.ranges.insert("p50_ms".into(), range);
        ttft.ranges.insert("p99_ms".into(), range);
        let e2e = HistogramStats {
            p50_ms: Some(101.25),
            p99_ms: Some(140.0),
            ..Default::default()
        };
        let mut s = ServerSummary::default();
        s.histograms.insert("ttft".into(), ttft);
        s.histograms.insert("e2e".into(), e2e);
        s.client_minus_server.insert("e2e_p50_ms".into(), 1.5);
        let text = printed(&s);
        assert!(
            text.contains("20.00–40.00 / 20.00–40.00 (mean 21.50)\n"),
            "{text}"
        );
        assert!(
            text.contains("101.25 / 140.00 (client − server 1.50 / —)"),
            "{text}"
        );
        assert!(
            text.contains("no client − server): ttft p50, p99\n"),
            "{text}"
        );
        assert!(
            !text.contains("30.00"),
            "the interpolated guess is not printed: {text}"
        );
    }

    #[test]
    fn the_source_row_says_scraped_or_prometheus() {
        let mut s = ServerSummary {
            source: "scrape".into(),
            engine: Some("vllm".into()),
            window_s: 60.0,
            scrapes_ok: 61,
            scrapes_failed: 1,
            ..ServerSummary::default()
        };
        assert!(printed(&s).contains("vllm · 62 scrapes (1 failed) over 60.0 s"));
        s.source = "prometheus".into();
        s.prometheus = Some(PrometheusSource {
            url: "http://prom:9090".into(),
            selector: Some("{pod=~\"vllm-.*\"}".into()),
            step_s: 1.0,
            targets: vec!["{instance=\"a:1\",job=\"v\"}".into()],
        });
        let text = printed(&s);
        assert!(
            text.contains(
                "Prometheus http://prom:9090 {pod=~\"vllm-.*\"} · step 1 s · vllm · 1 target, \
                 61 points (1 queries failed) over 60.0 s"
            ),
            "{text}"
        );
    }
}
