//! Part of `scrape` (the server's side of a run): one page of Prometheus text (exposition
//! format 0.0.4) → a `Page`. The text is parsed by `openmetrics-parser`, never by hand; this
//! file only reads the parsed families through the engine's table (`engines`). It does no I/O
//! and may not print; every collection it fills is bounded.
//!
//! Series are combined per concept: summed over every series of the family (vLLM and the
//! simulator label each data-parallel replica `engine="0"`, `"1"`, …, and label each model),
//! except a share (KV-cache usage), which is the mean over the series: each replica reports its
//! own cache's share. Histograms are summed bucket by bucket (`le`), with their sums and counts.
//! Non-finite samples (`NaN`, `±Inf`) are left out. Families the table does not map are kept
//! raw, at most `raw_max` series a page (histograms and summaries as their `_sum` and
//! `_count`), the rest counted.
//!
//! What the parser refuses (checked against it): consecutive samples of different names with
//! no `# TYPE` line between them (it groups them into one family), and a counter declared
//! `foo` whose samples say `foo_total` (OpenMetrics style). No engine ringbench knows prints
//! either in the 0.0.4 format, which is the one `get` asks for. One thing real pages do that
//! it refuses is handled: a page whose last line has no newline gets one.

use super::engines::{detect, Combine, Concept, Engine, Kind, Read, Row};
use super::{cut, ScrapeError, MAX_MESSAGE_BYTES};
use openmetrics_parser::{
    MetricFamily, MetricsExposition, PrometheusType, PrometheusValue, Sample,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Most finite buckets a histogram may have (vLLM's largest has 22, TGI's duration ones 35);
/// a family with more is kept raw instead.
pub const MAX_BUCKETS: usize = 256;
/// Longest raw series name (with its labels) kept; longer ones are counted, not kept. vLLM's
/// `cache_config_info` (its cache settings as labels) is about 1.2 KiB.
const MAX_RAW_KEY_BYTES: usize = 2048;

type Exposition = MetricsExposition<PrometheusType, PrometheusValue>;
type Family = MetricFamily<PrometheusType, PrometheusValue>;

/// A histogram, summed over its series: cumulative counts by upper bound (finite bounds,
/// ascending), the count (the `+Inf` bucket's, which the format makes equal to `_count`) and
/// the sum. A histogram concept known only by its sum (llama.cpp's seconds counters) has no
/// buckets and no count. `le` and `cum` have one entry per bucket (a line read back with
/// lengths that differ is read up to the shorter).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hist {
    /// Finite upper bounds, ascending.
    pub le: Vec<f64>,
    /// Cumulative count at each bound of `le`.
    pub cum: Vec<f64>,
    /// Every observation (the `+Inf` bucket); `None` when only the sum is known.
    pub count: Option<f64>,
    /// Sum of the observations, in the concept's unit; `None` when the page has no `_sum`.
    pub sum: Option<f64>,
}

impl Hist {
    /// The cumulative count at `bound`: that of the largest own bound not above it (a lower
    /// bound where this histogram has no bucket at `bound`); the count at `+Inf`.
    pub fn cum_at(&self, bound: f64) -> f64 {
        if bound == f64::INFINITY {
            return self.count.unwrap_or(0.0);
        }
        let i = self.le.partition_point(|&le| le <= bound);
        i.checked_sub(1)
            .and_then(|i| self.cum.get(i).copied())
            .unwrap_or(0.0)
    }

    /// Several histograms as one: counts at the union of their bounds added up (each at its own
    /// largest bound not above a bound it lacks), counts and sums added (`None` if any lacks).
    pub fn merge(parts: &[Hist]) -> Hist {
        let mut le: Vec<f64> = parts.iter().flat_map(|h| h.le.iter().copied()).collect();
        le.sort_by(f64::total_cmp);
        le.dedup();
        let cum = le
            .iter()
            .map(|&b| parts.iter().map(|h| h.cum_at(b)).sum())
            .collect();
        let total = |f: fn(&Hist) -> Option<f64>| parts.iter().map(f).sum::<Option<f64>>();
        Hist {
            le,
            cum,
            count: total(|h| h.count),
            sum: total(|h| h.sum),
        }
    }
}

/// What one page said: the engine, each concept's value, and the raw rest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Page {
    /// The engine whose families the page has (`None`: no known one).
    #[serde(default)]
    pub engine: Option<Engine>,
    /// Metric families on the page.
    #[serde(default)]
    pub families: u32,
    /// Gauge and counter concepts: the value combined over the family's series.
    #[serde(default)]
    pub values: BTreeMap<Concept, f64>,
    /// Histogram concepts, summed over the family's series.
    #[serde(default)]
    pub histograms: BTreeMap<Concept, Hist>,
    /// Families the table does not map: series (`name{label="value",…}`) → value.
    #[serde(default)]
    pub raw: BTreeMap<String, f64>,
    /// Families with at least one series in `raw`.
    #[serde(default)]
    pub raw_families: u32,
    /// Raw series not kept: past `raw_max`, or a name longer than the bound.
    #[serde(default)]
    pub raw_dropped: u32,
}

/// One page of Prometheus text as a `Page`, keeping at most `raw_max` raw series. Refused
/// (`NotPrometheus`) when the parser rejects it or it has no family.
pub fn parse_page(text: &str, raw_max: usize) -> Result<Page, ScrapeError> {
    let exposition = exposition(text)?;
    let mut names: Vec<&str> = exposition.families.keys().map(String::as_str).collect();
    names.sort_unstable();
    let engine = detect(names.iter().copied());
    let mut page = Page {
        engine,
        families: u32::try_from(names.len()).unwrap_or(u32::MAX),
        ..Page::default()
    };
    let mut mapped: BTreeSet<&str> = BTreeSet::new();
    for row in engine.map_or(&[][..], Engine::table) {
        let known = match row.concept.kind() {
            Kind::Histogram => page.histograms.contains_key(&row.concept),
            _ => page.values.contains_key(&row.concept),
        };
        let Some(name) = names.iter().copied().find(|n| row.matches(n)) else {
            continue;
        };
        if !known && read_row(row, &exposition.families[name], &mut page) {
            mapped.insert(name);
        }
    }
    for name in names.iter().copied().filter(|n| !mapped.contains(n)) {
        keep_raw(&exposition.families[name], raw_max, &mut page);
    }
    Ok(page)
}

fn exposition(text: &str) -> Result<Exposition, ScrapeError> {
    let owned;
    let text = if text.is_empty() || text.ends_with('\n') {
        text
    } else {
        owned = format!("{text}\n");
        &owned
    };
    // The parser has `unwrap`s inside; a page that reached one is refused like a bad page
    // instead of ending the scraping thread.
    let parsed =
        std::panic::catch_unwind(|| openmetrics_parser::prometheus::parse_prometheus(text));
    match parsed {
        Ok(Ok(e)) if !e.families.is_empty() => Ok(e),
        Ok(Ok(_)) => Err(ScrapeError::NotPrometheus("no metric family".into())),
        Ok(Err(e)) => {
            let why = e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            Err(ScrapeError::NotPrometheus(cut(&why, MAX_MESSAGE_BYTES)))
        }
        Err(_) => Err(ScrapeError::NotPrometheus(
            "the parser failed on this page".into(),
        )),
    }
}

/// The declared type fits the row's: the same, or untyped where a plain value is wanted.
fn type_fits(row: Kind, declared: &PrometheusType) -> bool {
    matches!(
        (row, declared),
        (Kind::Gauge, PrometheusType::Gauge | PrometheusType::Unknown)
            | (
                Kind::Counter,
                PrometheusType::Counter | PrometheusType::Unknown
            )
            | (Kind::Histogram, PrometheusType::Histogram)
    )
}

/// Fills the row's concept from `fam`; false when the family cannot give it (wrong type, no
/// finite sample, too many buckets), so that it is kept raw instead.
fn read_row(row: &Row, fam: &Family, page: &mut Page) -> bool {
    if !type_fits(row.kind, &fam.family_type) {
        return false;
    }
    match row.read {
        Read::AsIs if row.kind == Kind::Histogram => match histogram(fam) {
            Some(h) => page.histograms.insert(row.concept, h).is_none(),
            None => false,
        },
        Read::AsIs => match combined(fam.iter_samples().filter_map(scalar), row.concept) {
            Some(v) => page.values.insert(row.concept, v).is_none(),
            None => false,
        },
        Read::HistogramSum => {
            let sums = histograms(fam).filter_map(|h| h.sum);
            match combined(sums, row.concept) {
                Some(v) => page.values.insert(row.concept, v).is_none(),
                None => false,
            }
        }
        Read::CounterAsSum => {
            let Some(sum) = combined(fam.iter_samples().filter_map(scalar), row.concept) else {
                return false;
            };
            let h = Hist {
                sum: Some(sum),
                ..Hist::default()
            };
            page.histograms.insert(row.concept, h).is_none()
        }
    }
}

/// The series' values as the concept combines them; `None` without any.
fn combined(values: impl Iterator<Item = f64>, concept: Concept) -> Option<f64> {
    let (n, total) = values.fold((0u32, 0.0), |(n, t), v| (n + 1, t + v));
    match (n, concept.combine()) {
        (0, _) => None,
        (_, Combine::Sum) => Some(total),
        (n, Combine::Mean) => Some(total / f64::from(n)),
    }
}

/// A gauge's, counter's or untyped sample's value, when finite.
fn scalar(s: &Sample<PrometheusValue>) -> Option<f64> {
    let v = match &s.value {
        PrometheusValue::Gauge(n) | PrometheusValue::Unknown(n) => n.as_f64(),
        PrometheusValue::Counter(c) => c.value.as_f64(),
        PrometheusValue::Histogram(_) | PrometheusValue::Summary(_) => return None,
    };
    v.is_finite().then_some(v)
}

/// Each series of a histogram family as a `Hist` (non-finite counts and bounds left out).
fn histograms(fam: &Family) -> impl Iterator<Item = Hist> + '_ {
    fam.iter_samples().filter_map(|s| {
        let PrometheusValue::Histogram(h) = &s.value else {
            return None;
        };
        let mut buckets: Vec<(f64, f64)> = h
            .buckets
            .iter()
            .map(|b| (b.upper_bound, b.count.as_f64()))
            .filter(|(_, c)| c.is_finite())
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let count = buckets
            .iter()
            .find(|(le, _)| *le == f64::INFINITY)
            .map(|&(_, c)| c);
        buckets.retain(|(le, _)| le.is_finite());
        Some(Hist {
            le: buckets.iter().map(|b| b.0).collect(),
            cum: buckets.iter().map(|b| b.1).collect(),
            count,
            sum: h.sum.map(|s| s.as_f64()).filter(|s| s.is_finite()),
        })
    })
}

/// The family's series summed; `None` without series or past `MAX_BUCKETS`.
fn histogram(fam: &Family) -> Option<Hist> {
    let parts: Vec<Hist> = histograms(fam).collect();
    if parts.is_empty() {
        return None;
    }
    let h = Hist::merge(&parts);
    (h.le.len() <= MAX_BUCKETS).then_some(h)
}

/// Keeps the family's series raw while the page's bound allows, counting the rest.
fn keep_raw(fam: &Family, raw_max: usize, page: &mut Page) {
    let mut kept_any = false;
    for s in fam.iter_samples() {
        let labels = labels(s);
        let series: Vec<(String, Option<f64>)> = match &s.value {
            PrometheusValue::Histogram(h) => vec![
                ("_sum", h.sum.map(|v| v.as_f64())),
                ("_count", h.count.map(|c| c as f64)),
            ],
            PrometheusValue::Summary(h) => vec![
                ("_sum", h.sum.map(|v| v.as_f64())),
                ("_count", h.count.map(|c| c as f64)),
            ],
            _ => vec![("", scalar(s))],
        }
        .into_iter()
        .map(|(suffix, v)| (format!("{}{suffix}{labels}", fam.family_name), v))
        .collect();
        for (key, value) in series {
            let Some(value) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            if page.raw.len() >= raw_max || key.len() > MAX_RAW_KEY_BYTES {
                page.raw_dropped = page.raw_dropped.saturating_add(1);
                continue;
            }
            kept_any |= page.raw.insert(key, value).is_none();
        }
    }
    page.raw_families += u32::from(kept_any);
}

/// `{a="x",b="y"}` (sorted by name, as the parser gives them), or nothing without labels.
fn labels(s: &Sample<PrometheusValue>) -> String {
    let Ok(set) = s.get_labelset() else {
        return String::new();
    };
    let pairs: Vec<String> = set
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{v}\"")
        })
        .collect();
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0
vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 4.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25
vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.75
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 100.0
vllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} 28.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1.0
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 3.0
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 4.0
vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 4.0
vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 5.5
vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 2.0
vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1.0\",model_name=\"m\"} 2.0
vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 2.0
vllm:time_to_first_token_seconds_count{engine=\"1\",model_name=\"m\"} 2.0
vllm:time_to_first_token_seconds_sum{engine=\"1\",model_name=\"m\"} 0.1
# TYPE process_open_fds gauge
process_open_fds 12.0
# TYPE weird gauge
weird{path=\"a\\\"b\"} NaN";

    #[test]
    fn replicas_are_summed_and_shares_averaged() {
        let p = parse_page(PAGE, 256).unwrap();
        assert_eq!(p.engine, Some(Engine::Vllm));
        assert_eq!(p.families, 7);
        assert_eq!(p.values[&Concept::Running], 7.0);
        assert_eq!(p.values[&Concept::KvCacheUsage], 0.5);
        assert_eq!(p.values[&Concept::PromptTokens], 128.0);
        let h = &p.histograms[&Concept::Ttft];
        assert_eq!(h.le, [0.1, 1.0]);
        assert_eq!(h.cum, [3.0, 5.0]);
        assert_eq!((h.count, h.sum), (Some(6.0), Some(5.6)));
        // The older name of a concept already given goes raw, like every unmapped family;
        // NaN is left out.
        assert_eq!(
            p.raw.keys().collect::<Vec<_>>(),
            [
                "process_open_fds",
                "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"}"
            ]
        );
        assert_eq!((p.raw_families, p.raw_dropped), (2, 0));
    }

    #[test]
    fn raw_series_are_bounded_and_counted() {
        let p = parse_page(PAGE, 1).unwrap();
        assert_eq!(p.raw.len(), 1);
        assert_eq!(p.raw_dropped, 1);
    }

    #[test]
    fn counters_declared_without_total_and_histogram_sums() {
        let tgi = "# TYPE tgi_queue_size gauge\ntgi_queue_size 2\n\
                   # TYPE tgi_request_count counter\ntgi_request_count 9\n\
                   # TYPE tgi_request_input_length histogram\n\
                   tgi_request_input_length_bucket{le=\"10\"} 1\n\
                   tgi_request_input_length_bucket{le=\"+Inf\"} 3\n\
                   tgi_request_input_length_sum 70\ntgi_request_input_length_count 3\n";
        let p = parse_page(tgi, 256).unwrap();
        assert_eq!(p.engine, Some(Engine::Tgi));
        assert_eq!(p.values[&Concept::Waiting], 2.0);
        assert_eq!(p.values[&Concept::PromptTokens], 70.0);
        assert!(p.raw.contains_key("tgi_request_count"));
    }

    #[test]
    fn what_is_not_prometheus_is_refused() {
        for bad in ["", "\n", "<html></html>\n", "{\"a\": 1}", "# EOF\n"] {
            let e = parse_page(bad, 8).unwrap_err();
            assert!(matches!(e, ScrapeError::NotPrometheus(_)), "{bad:?}: {e:?}");
        }
        // No newline at the end is fine.
        let p = parse_page("# TYPE a gauge\na 1", 8).unwrap();
        assert_eq!(p.raw["a"], 1.0);
    }

    #[test]
    fn merging_histograms_with_different_bounds_never_overcounts() {
        let a = Hist {
            le: vec![1.0, 2.0],
            cum: vec![1.0, 2.0],
            count: Some(3.0),
            sum: Some(4.0),
        };
        let b = Hist {
            le: vec![1.5],
            cum: vec![5.0],
            count: Some(5.0),
            sum: None,
        };
        let m = Hist::merge(&[a.clone(), b]);
        assert_eq!(m.le, [1.0, 1.5, 2.0]);
        assert_eq!(m.cum, [1.0, 6.0, 7.0]);
        assert_eq!((m.count, m.sum), (Some(8.0), None));
        assert_eq!(a.cum_at(0.5), 0.0);
        assert_eq!(a.cum_at(f64::INFINITY), 3.0);
    }
}
