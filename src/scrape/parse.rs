//! Part of `scrape` (the server's side of a run): one page of Prometheus text (exposition
//! format 0.0.4) → a `Page`. The text is parsed by `prom_text_format_parser`, never by hand;
//! this file only reads the parsed families through the engine's table (`engines`). It does no
//! I/O and may not print; every collection it fills is bounded.
//!
//! Series are combined per concept: summed over every series of the family (vLLM and the
//! simulator label each data-parallel replica `engine="0"`, `"1"`, …, and label each model),
//! except a share (KV-cache usage), which is the mean over the series: each replica reports its
//! own cache's share. Histograms are summed bucket by bucket (`le`), with their sums and counts.
//! Non-finite samples (`NaN`, `±Inf`, a number past `f64` such as `1e400`) are left out, and so
//! is a bucket whose `le` is not a number. Families the table does not map are kept raw, at
//! most `raw_max` series a page (histograms and summaries as their `_sum` and `_count`), the
//! rest counted.
//!
//! A page is refused or read by what the parser says of it. One line that is not exposition
//! text (its `Parse` error: it then gives no metric at all) refuses the page, and so does a
//! page without any family. A `# HELP` or `# TYPE` line that no sample of its name follows
//! (its `Collect` error: Python's client prints them for a labelled family with no series yet,
//! and a counter declared `foo` whose samples say `foo_total` is one) does not: the page is
//! read as a partial page. The parser loses no sample line over it, only the declaration; the
//! samples after it are a family of their own name, untyped. Its families are its blocks by
//! name; a name given again in a later block is read from its first block only.
//!
//! The parser keeps each value as the text it checked against Prometheus's float syntax (its
//! `Float`: digits with an optional sign, point and exponent, `NaN`, `Inf`, `+Inf`, `-Inf`,
//! any case, all of which `str::parse::<f64>` reads). Values are read here with `str::parse`,
//! not `Float::as_f64` (which unwraps), so no value from a server can panic. Label values
//! come as written on the page, escapes kept.
//!
//! What the parser refuses (checked against it): a `\r\n` line end and trailing blanks without
//! a final newline (both mended here first: a CRLF page is read, a last line gets its
//! newline), empty label braces (`a{} 1`), and a timestamp past `i64`. No engine ringbench
//! knows prints those in the 0.0.4 format, which is the one `get` asks for.

use super::engines::{detect, Combine, Concept, Engine, Kind, Read, Row};
use super::{cut, ScrapeError, MAX_MESSAGE_BYTES};
use prom_text_format_parser::{Metric, Sample, ScrapeParseError, Type, Value, ValueType};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// Most finite buckets a histogram may have (vLLM's largest has 22, TGI's duration ones 35);
/// a family with more is kept raw instead.
pub const MAX_BUCKETS: usize = 256;
/// Longest raw series name (with its labels) kept; longer ones are counted, not kept. vLLM's
/// `cache_config_info` (its cache settings as labels) is about 1.2 KiB.
const MAX_RAW_KEY_BYTES: usize = 2048;
/// Most of the parser's `Collect` errors named in the message of a page it gives nothing of.
const MAX_ERRORS_NAMED: usize = 3;

/// A family: the parser's first block of its name.
type Family = Metric;
/// A series' labels, sorted by name.
type Labels<'a> = Vec<(&'a str, &'a str)>;
/// One series of a histogram or summary: its labels and its samples.
type Series<'a> = (Labels<'a>, Vec<&'a Sample>);

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
    /// Metric families on the page (names with at least one sample).
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
/// (`NotPrometheus`) when a line is not exposition text or it has no family; read when the
/// parser only found declarations without samples (see the file's header).
pub fn parse_page(text: &str, raw_max: usize) -> Result<Page, ScrapeError> {
    let metrics = metrics(text)?;
    let mut families: BTreeMap<&str, &Family> = BTreeMap::new();
    for m in &metrics {
        families.entry(m.name.as_str()).or_insert(m);
    }
    let names: Vec<&str> = families.keys().copied().collect();
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
        // An added row needs the value it adds to; every other row fills an empty concept.
        let wanted = (row.read == Read::Added) == known;
        if wanted && read_row(row, families[name], &mut page) {
            mapped.insert(name);
        }
    }
    for name in names.iter().copied().filter(|n| !mapped.contains(n)) {
        keep_raw(families[name], raw_max, &mut page);
    }
    Ok(page)
}

/// The page's metrics, in its order; at least one.
fn metrics(text: &str) -> Result<Vec<Metric>, ScrapeError> {
    let text = mended(text);
    // No panic is known on any input (read for 0.1.0 on winnow 0.5: every line parser
    // consumes input, so `repeat` never asserts; its one `unwrap` is `Float::as_f64`, not
    // called here). A page that finds one in a later version is refused like a bad page
    // instead of ending the scraping thread.
    let parsed = std::panic::catch_unwind(|| prom_text_format_parser::parse_scrape(&text));
    let refused = |why: String| {
        let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
        Err(ScrapeError::NotPrometheus(cut(&why, MAX_MESSAGE_BYTES)))
    };
    match parsed {
        Ok((_, Some(ScrapeParseError::Parse(why)))) => refused(why),
        Ok((metrics, _)) if !metrics.is_empty() => Ok(metrics),
        Ok((_, Some(ScrapeParseError::Collect(errors)))) => {
            let named: Vec<&str> = errors.iter().map(|e| e.error.as_str()).collect();
            let shown = named.len().min(MAX_ERRORS_NAMED);
            refused(format!("no metric family ({})", named[..shown].join("; ")))
        }
        Ok((_, None)) => Err(ScrapeError::NotPrometheus("no metric family".into())),
        Err(_) => Err(ScrapeError::NotPrometheus(
            "the parser failed on this page".into(),
        )),
    }
}

/// The page as the parser reads it: `\r\n` line ends as `\n`, and a last line that has no
/// newline given one.
fn mended(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    if text.contains('\r') {
        text = Cow::Owned(text.replace("\r\n", "\n"));
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.to_mut().push('\n');
    }
    text
}

/// A value, when finite: read with `str::parse` (never `Float::as_f64`, which unwraps).
fn finite(v: &Value) -> Option<f64> {
    v.value.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The declared type fits the row's: the same, or untyped where a plain value is wanted.
fn type_fits(row: Kind, declared: Type) -> bool {
    matches!(
        (row, declared),
        (Kind::Gauge, Type::Gauge | Type::Untyped)
            | (Kind::Counter, Type::Counter | Type::Untyped)
            | (Kind::Histogram, Type::Histogram)
    )
}

/// Fills the row's concept from `fam`; false when the family cannot give it (wrong type, no
/// finite sample, too many buckets), so that it is kept raw instead.
fn read_row(row: &Row, fam: &Family, page: &mut Page) -> bool {
    if !type_fits(row.kind, fam.kind) {
        return false;
    }
    match row.read {
        Read::AsIs if row.kind == Kind::Histogram => match histogram(fam) {
            Some(h) => page.histograms.insert(row.concept, h).is_none(),
            None => false,
        },
        Read::AsIs => match combined(fam.samples.iter().filter_map(scalar), row.concept) {
            Some(v) => page.values.insert(row.concept, v).is_none(),
            None => false,
        },
        Read::HistogramSum => {
            let sums = histograms(fam).into_iter().filter_map(|h| h.sum);
            match combined(sums, row.concept) {
                Some(v) => page.values.insert(row.concept, v).is_none(),
                None => false,
            }
        }
        Read::Added => {
            let add = combined(fam.samples.iter().filter_map(scalar), row.concept);
            match (add, page.values.get_mut(&row.concept)) {
                (Some(v), Some(total)) => {
                    *total += v;
                    true
                }
                _ => false,
            }
        }
        Read::CounterAsSum => {
            let Some(sum) = combined(fam.samples.iter().filter_map(scalar), row.concept) else {
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

/// A gauge's, counter's or untyped sample's value, when finite (a histogram's or summary's
/// `_sum` and `_count` are not one).
fn scalar(s: &Sample) -> Option<f64> {
    (s.value.value_type == ValueType::Sample)
        .then(|| finite(&s.value))
        .flatten()
}

/// A sample's labels but `skip`, sorted by name (duplicates in the page's order): its series.
fn series_labels<'a>(s: &'a Sample, skip: Option<&str>) -> Labels<'a> {
    let mut labels: Labels<'a> = s
        .labels
        .iter()
        .filter(|l| Some(l.key.as_str()) != skip)
        .map(|l| (l.key.as_str(), l.value.as_str()))
        .collect();
    labels.sort_by_key(|&(k, _)| k);
    labels
}

/// A histogram's or summary's samples by series (labels but `le` or `quantile`), in the order
/// the page first gives each series.
fn by_series(fam: &Family) -> Vec<Series<'_>> {
    let skip = Some(if fam.kind == Type::Histogram {
        "le"
    } else {
        "quantile"
    });
    let mut at: BTreeMap<Labels<'_>, usize> = BTreeMap::new();
    let mut series: Vec<Series<'_>> = Vec::new();
    for s in &fam.samples {
        let labels = series_labels(s, skip);
        let i = *at.entry(labels.clone()).or_insert_with(|| {
            series.push((labels, Vec::new()));
            series.len() - 1
        });
        series[i].1.push(s);
    }
    series
}

/// The `_sum` or `_count` sample of a series (its first), when finite.
fn part(samples: &[&Sample], which: ValueType) -> Option<f64> {
    let s = samples.iter().find(|s| s.value.value_type == which)?;
    finite(&s.value)
}

/// Each series of a histogram family as a `Hist` (non-finite counts and bounds, and bounds
/// that are not numbers, left out).
fn histograms(fam: &Family) -> Vec<Hist> {
    by_series(fam)
        .into_iter()
        .map(|(_, samples)| {
            let mut buckets: Vec<(f64, f64)> = samples
                .iter()
                .filter(|s| s.value.value_type == ValueType::Sample)
                .filter_map(|s| {
                    let le = s.labels.iter().find(|l| l.key == "le")?;
                    Some((le.value.parse::<f64>().ok()?, finite(&s.value)?))
                })
                .collect();
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let count = buckets
                .iter()
                .find(|(le, _)| *le == f64::INFINITY)
                .map(|&(_, c)| c);
            buckets.retain(|(le, _)| le.is_finite());
            Hist {
                le: buckets.iter().map(|b| b.0).collect(),
                cum: buckets.iter().map(|b| b.1).collect(),
                count,
                sum: part(&samples, ValueType::Sum),
            }
        })
        .collect()
}

/// The family's series summed; `None` without series or past `MAX_BUCKETS`.
fn histogram(fam: &Family) -> Option<Hist> {
    let parts = histograms(fam);
    if parts.is_empty() {
        return None;
    }
    let h = Hist::merge(&parts);
    (h.le.len() <= MAX_BUCKETS).then_some(h)
}

/// Keeps the family's series raw while the page's bound allows, counting the rest.
fn keep_raw(fam: &Family, raw_max: usize, page: &mut Page) {
    let series: Vec<(String, Option<f64>)> = match fam.kind {
        Type::Histogram | Type::Summary => by_series(fam)
            .into_iter()
            .flat_map(|(labels, samples)| {
                let labels = written(&labels);
                [("_sum", ValueType::Sum), ("_count", ValueType::Count)].map(|(suffix, which)| {
                    let key = format!("{}{suffix}{labels}", fam.name);
                    (key, part(&samples, which))
                })
            })
            .collect(),
        _ => fam
            .samples
            .iter()
            .map(|s| {
                let key = format!("{}{}", fam.name, written(&series_labels(s, None)));
                (key, scalar(s))
            })
            .collect(),
    };
    let mut kept_any = false;
    for (key, value) in series {
        let Some(value) = value else {
            continue;
        };
        if page.raw.len() >= raw_max || key.len() > MAX_RAW_KEY_BYTES {
            page.raw_dropped = page.raw_dropped.saturating_add(1);
            continue;
        }
        kept_any |= page.raw.insert(key, value).is_none();
    }
    page.raw_families += u32::from(kept_any);
}

/// `{a="x",b="y"}` (as `series_labels` sorts them), or nothing without labels. Values are as
/// the page escaped them; a raw newline (which the parser lets through) is written `\n`.
fn written(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\n', "\\n")))
        .collect();
    format!("{{{}}}", pairs.join(","))
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

    #[test]
    fn values_from_the_wire_are_read_or_refused_never_a_panic() {
        // Every value text the parser lets through, read by `str::parse` and by the parser's
        // own `Float::as_f64` (which unwraps: it would panic here if the two differed).
        let accepted = [
            ("+Inf", f64::INFINITY),
            ("Inf", f64::INFINITY),
            ("inf", f64::INFINITY),
            ("-Inf", f64::NEG_INFINITY),
            ("NaN", f64::NAN),
            ("nan", f64::NAN),
            ("1e400", f64::INFINITY),
            ("-1e400", f64::NEG_INFINITY),
            ("1e-400", 0.0),
            ("1.", 1.0),
            ("+.5", 0.5),
            ("-2.5E+1", -25.0),
            ("007", 7.0),
        ];
        for (text, want) in accepted {
            let (metrics, err) = prom_text_format_parser::parse_scrape(&format!("a {text}\n"));
            assert!(err.is_none(), "{text}: {err:?}");
            let value = &metrics[0].samples[0].value;
            for got in [value.value.parse::<f64>().unwrap(), value.value.as_f64()] {
                assert!(
                    got == want || (got.is_nan() && want.is_nan()),
                    "{text}: {got}"
                );
            }
        }
        // On a page, only the finite ones count; the rest are left out.
        let mut page = String::from("# TYPE vllm:num_requests_running gauge\n");
        for (i, (text, _)) in accepted.iter().enumerate() {
            page.push_str(&format!(
                "vllm:num_requests_running{{engine=\"{i}\"}} {text}\n"
            ));
        }
        let p = parse_page(&page, 8).unwrap();
        assert_eq!(p.values[&Concept::Running], 0.0 + 1.0 + 0.5 - 25.0 + 7.0);
        // A non-finite bucket, bound or sum is left out of a histogram.
        let hist = "# TYPE vllm:time_to_first_token_seconds histogram\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} NaN\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"NaN\"} 1\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"x\"} 1\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"-1e400\"} 0\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"1\"} 2\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n\
                    vllm:time_to_first_token_seconds_sum -Inf\n\
                    vllm:time_to_first_token_seconds_count 3\n";
        let h = &parse_page(hist, 8).unwrap().histograms[&Concept::Ttft];
        assert_eq!((&h.le[..], &h.cum[..]), (&[1.0][..], &[2.0][..]));
        assert_eq!((h.count, h.sum), (Some(3.0), None));
        // Anything else in a value's place refuses the page.
        for bad in [
            "0x10", "1e", "1e+", "Infinity", "--1", "1.2.3", "abc", "+NaN", "1_000", "١",
        ] {
            let page = format!("# TYPE a gauge\na 1\nb {bad}\n");
            let e = parse_page(&page, 8).unwrap_err();
            assert!(matches!(e, ScrapeError::NotPrometheus(_)), "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn declarations_without_samples_leave_a_partial_page_and_a_bad_line_refuses_it() {
        // A labelled family with no series yet (Python's client prints its HELP and TYPE), a
        // counter declared without `_total`, a family given twice, CRLF line ends: read.
        let page = "# HELP http_requests_total Requests.\r\n\
                    # TYPE http_requests_total counter\r\n\
                    # TYPE vllm:num_requests_running gauge\r\n\
                    vllm:num_requests_running 2\r\n\
                    # TYPE vllm:prompt_tokens counter\r\n\
                    vllm:prompt_tokens_total 9\r\n\
                    # TYPE vllm:num_requests_running gauge\r\n\
                    vllm:num_requests_running 5\r\n";
        let (_, err) = prom_text_format_parser::parse_scrape(&page.replace('\r', ""));
        assert!(
            matches!(&err, Some(ScrapeParseError::Collect(e)) if e.len() == 2),
            "{err:?}"
        );
        let p = parse_page(page, 8).unwrap();
        assert_eq!(p.engine, Some(Engine::Vllm));
        assert_eq!(p.families, 2, "the declarations alone are no family");
        assert_eq!(p.values[&Concept::Running], 2.0, "its first block");
        assert_eq!(
            p.values[&Concept::PromptTokens],
            9.0,
            "untyped, as a counter"
        );
        assert!(p.raw.is_empty(), "{:?}", p.raw);
        // Declarations and nothing else: no family.
        let e = parse_page("# HELP a A.\n# TYPE a gauge\n# TYPE b counter\n", 8).unwrap_err();
        assert!(
            matches!(&e, ScrapeError::NotPrometheus(m) if m.contains("has only TYPE")),
            "{e:?}"
        );
        // One line that is not exposition text, among good ones: refused whole.
        let e = parse_page("# TYPE a gauge\na 1\n<html>\n# TYPE b gauge\nb 2\n", 8).unwrap_err();
        assert!(
            matches!(&e, ScrapeError::NotPrometheus(m) if m.contains("line 3")),
            "{e:?}"
        );
    }
}
