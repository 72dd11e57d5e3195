//! Part of `scrape::prometheus`: the text of every request made to a Prometheus server — each
//! concept's PromQL, derived from the engine table (`engines`: its families, kinds and ways of
//! reading), never from a table of its own; the series match that finds the engine and the
//! targets; the API paths with their percent-encoded parameters. Pure text: no I/O, and it
//! may not print.

use crate::plan::selector_matchers;
use crate::scrape::engines::{Combine, Concept, Engine, Kind, Read, Row};

/// The labels that tell one scraped target from another in Prometheus (every target gets
/// them): each target's series are summed as one page of its own.
pub const TARGET_LABELS: [&str; 2] = ["job", "instance"];

/// The series names Prometheus stores a row's family under: a gauge's own; a counter's with
/// and without `_total`; a histogram's `_bucket` and `_sum` (its count is the `+Inf` bucket's,
/// as `parse` reads it), or only `_sum` where the row reads the sum as a counter.
pub fn series_names(row: &Row) -> Vec<String> {
    let f = row.family;
    match (row.kind, row.read) {
        (Kind::Gauge, _) => vec![f.to_string()],
        (Kind::Counter, _) => vec![f.to_string(), format!("{f}_total")],
        (Kind::Histogram, Read::HistogramSum) => vec![format!("{f}_sum")],
        (Kind::Histogram, _) => vec![format!("{f}_bucket"), format!("{f}_sum")],
    }
}

/// Whether the row is read from a histogram's buckets (grouped by `le` too).
pub fn has_buckets(row: &Row) -> bool {
    row.kind == Kind::Histogram && row.read != Read::HistogramSum
}

/// The rows of `engine`'s table that give `concept`, in the table's order (for each target,
/// the first with series wins, as the first family present on a page does).
pub fn rows(engine: Engine, concept: Concept) -> Vec<&'static Row> {
    engine
        .table()
        .iter()
        .filter(|r| r.concept == concept)
        .collect()
}

/// `{__name__=~"a|b",<the selector's matchers>}`. Metric names hold no regex metacharacter
/// (`[a-zA-Z_:][a-zA-Z0-9_:]*`), so they go in as they are.
pub fn series_selector(names: &[String], selector: Option<&str>) -> String {
    let mut out = format!("{{__name__=~\"{}\"", names.join("|"));
    if let Some(m) = selector
        .and_then(selector_matchers)
        .filter(|m| !m.is_empty())
    {
        out.push(',');
        out.push_str(m);
    }
    out.push('}');
    out
}

/// The PromQL that reads `concept` of `engine` at every step: every row's series, summed per
/// target and name (and bucket), or averaged for a share; `None` when the table has no row.
pub fn concept_query(engine: Engine, concept: Concept, selector: Option<&str>) -> Option<String> {
    let rows = rows(engine, concept);
    let mut names: Vec<String> = Vec::new();
    for name in rows.iter().flat_map(|r| series_names(r)) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if names.is_empty() {
        return None;
    }
    let agg = match concept.combine() {
        Combine::Sum => "sum",
        Combine::Mean => "avg",
    };
    let mut by = vec!["__name__"];
    by.extend(TARGET_LABELS);
    if rows.iter().any(|r| has_buckets(r)) {
        by.push("le");
    }
    let matchers = series_selector(&names, selector);
    Some(format!("{agg} by ({}) ({matchers})", by.join(", ")))
}

/// The series whose presence tells the engine and the targets: every engine's gauges and
/// counters (with and without `_total`) and its histograms' `_count`.
pub fn presence_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for row in Engine::ALL.iter().flat_map(|e| e.table()) {
        let these = match row.kind {
            Kind::Histogram => vec![format!("{}_count", row.family)],
            _ => series_names(row),
        };
        for name in these {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The family a presence name stands for (a histogram's `_count` → the histogram), as
/// `engines::detect` matches families.
pub fn family_of(name: &str) -> &str {
    let histogram = |f: &str| {
        Engine::ALL
            .iter()
            .flat_map(|e| e.table())
            .any(|r| r.kind == Kind::Histogram && r.family == f)
    };
    match name.strip_suffix("_count") {
        Some(f) if histogram(f) => f,
        _ => name,
    }
}

/// Unix milliseconds as the API's seconds (`1733000000.125`).
pub fn seconds(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// `/api/v1/series` under `base` (the server URL's path): the series of `names` matching the
/// selector that had samples between `start_ms` and `end_ms`.
pub fn series_path(
    base: &str,
    names: &[String],
    selector: Option<&str>,
    start_ms: i64,
    end_ms: i64,
) -> String {
    format!(
        "{}/api/v1/series?match%5B%5D={}&start={}&end={}",
        base.trim_end_matches('/'),
        encode(&series_selector(names, selector)),
        seconds(start_ms),
        seconds(end_ms)
    )
}

/// `/api/v1/query_range` under `base`: `query` at `start_ms`, every `step_ms`, up to `end_ms`.
pub fn range_path(base: &str, query: &str, start_ms: i64, end_ms: i64, step_ms: i64) -> String {
    format!(
        "{}/api/v1/query_range?query={}&start={}&end={}&step={}",
        base.trim_end_matches('/'),
        encode(query),
        seconds(start_ms),
        seconds(end_ms),
        seconds(step_ms)
    )
}

/// `text` percent-encoded for a query string: RFC 3986's unreserved characters as they are,
/// every other byte as `%XX`.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEL: Option<&str> = Some("{pod=~\"vllm-.*\"}");

    #[test]
    fn each_concept_reads_its_rows_series_per_target() {
        let q = |c| concept_query(Engine::Vllm, c, SEL).unwrap();
        assert_eq!(
            q(Concept::Running),
            "sum by (__name__, job, instance) \
             ({__name__=~\"vllm:num_requests_running\",pod=~\"vllm-.*\"})"
        );
        // A share is averaged; the older name of the concept is read where the newer is not.
        assert_eq!(
            q(Concept::KvCacheUsage),
            "avg by (__name__, job, instance) ({__name__=~\"vllm:kv_cache_usage_perc|\
             vllm:gpu_cache_usage_perc\",pod=~\"vllm-.*\"})"
        );
        assert_eq!(
            q(Concept::GenerationTokens),
            "sum by (__name__, job, instance) ({__name__=~\"vllm:generation_tokens|\
             vllm:generation_tokens_total\",pod=~\"vllm-.*\"})"
        );
        assert_eq!(
            q(Concept::Ttft),
            "sum by (__name__, job, instance, le) ({__name__=~\"\
             vllm:time_to_first_token_seconds_bucket|vllm:time_to_first_token_seconds_sum\",\
             pod=~\"vllm-.*\"})"
        );
        assert!(q(Concept::Itl).contains("vllm:time_per_output_token_seconds_bucket"));
        // TGI's token counters are its histograms' sums; llama.cpp's prefill time a counter.
        let tgi = concept_query(Engine::Tgi, Concept::PromptTokens, None).unwrap();
        assert_eq!(
            tgi,
            "sum by (__name__, job, instance) ({__name__=~\"tgi_request_input_length_sum\"})"
        );
        let llama = concept_query(Engine::LlamaCpp, Concept::PrefillTime, Some("{}")).unwrap();
        assert_eq!(
            llama,
            "sum by (__name__, job, instance) ({__name__=~\"llamacpp:prompt_seconds|\
             llamacpp:prompt_seconds_total\"})"
        );
        assert_eq!(concept_query(Engine::Tgi, Concept::Ttft, None), None);
    }

    #[test]
    fn every_name_is_a_plain_metric_name_and_presence_finds_each_engine() {
        let plain = |n: &str| {
            let mut b = n.bytes();
            b.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b':')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
        };
        let names = presence_names();
        for e in Engine::ALL {
            for r in e.table() {
                for n in series_names(r) {
                    assert!(plain(&n), "{n}");
                }
            }
            // The engine's own presence names detect it.
            let own: Vec<&str> = names
                .iter()
                .map(|n| family_of(n))
                .filter(|f| e.table().iter().any(|r| r.matches(f)))
                .collect();
            assert_eq!(crate::scrape::engines::detect(own.into_iter()), Some(e));
        }
        assert_eq!(
            family_of("vllm:time_to_first_token_seconds_count"),
            "vllm:time_to_first_token_seconds"
        );
        assert_eq!(family_of("tgi_request_count"), "tgi_request_count");
        assert!(names.contains(&"vllm:generation_tokens_total".to_string()));
    }

    #[test]
    fn paths_encode_their_parameters() {
        assert_eq!(seconds(1_733_000_000_125), "1733000000.125");
        assert_eq!(seconds(1_000), "1.000");
        assert_eq!(
            encode("sum(a{b=~\"c.*\"}) é"),
            "sum%28a%7Bb%3D~%22c.%2A%22%7D%29%20%C3%A9"
        );
        assert_eq!(
            range_path("/", "up", 1_000, 61_000, 1_000),
            "/api/v1/query_range?query=up&start=1.000&end=61.000&step=1.000"
        );
        let names = ["up".to_string()];
        assert_eq!(
            series_path("/prom/", &names, SEL, 0, 2_500),
            "/prom/api/v1/series?match%5B%5D=%7B__name__%3D~%22up%22%2Cpod%3D~%22vllm-.%2A%22%7D\
             &start=0.000&end=2.500"
        );
    }
}
