//! Part of `scrape` (the server's side of a run): the scrapes of a window → the summary's
//! `server` block (`summary::server::ServerSummary`). Pure arithmetic over `Scrape`s, so
//! `ringbench report DIR` gets the same block from `server_metrics.jsonl` as the run did; no
//! I/O, no printing.
//!
//! A scrape is in the window `[t0, t1]` by its start stamp. Gauges: min, mean, nearest-rank
//! p50 / p90 and max over the window's scrapes (with several URLs, the URLs of one round are
//! summed first, a share averaged; a URL whose scrape failed is missing from that round). Counters: from the first scrape of the window to the last,
//! per URL, with resets handled as Prometheus's `increase` does (a value below the one before
//! means the counter restarted from 0, so the drop adds the value before it), but not
//! extrapolated to the window's edges. Histograms: the same per bucket, then percentiles by
//! linear interpolation inside the bucket as Prometheus's `histogram_quantile` does
//! (`promql/quantile.go`, `bucketQuantile`); a rank in the `+Inf` bucket gives the highest
//! finite bound. NTPOT: the queue, prefill and decode histograms' sum deltas over the
//! generation-token delta.
//!
//! Replicas are summed when a page is parsed, so a reset is the whole page's counter
//! restarting (a server restart); one data-parallel replica restarting alone is over-counted.
//!
//! Lines read from a Prometheus server (`prometheus`: one per step and target, the target's
//! labels as their URL) are summarized the same way, each target as one URL; the block then
//! says so (`source`, `prometheus`) and lists the server's URL, not the targets, as `urls`.

use super::engines::{Combine, Concept, Kind};
use super::parse::Hist;
use super::{Phase, Scrape};
use crate::summary::server::{
    source, BucketRange, CounterStats, GaugeStats, HistogramStats, NtpotMs, PrometheusSource,
    ServerSummary,
};
use crate::summary::{is_small_sample, percentile_key};
use std::collections::BTreeMap;

/// The percentiles every histogram gets, whatever else is asked.
const FIXED_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// The measured window from the phase tags alone (`server_metrics.jsonl` is enough): from the
/// first `Measure` scrape's start to the latest start among each URL's first `After` scrape
/// (the boundary round), or to the last `Measure` scrape's start without one. `None` without
/// a `Measure` scrape.
pub fn measured_window(scrapes: &[Scrape]) -> Option<(u64, u64)> {
    let measure = scrapes.iter().filter(|s| s.phase == Phase::Measure);
    let t0 = measure.clone().map(|s| s.start_ns).min()?;
    let mut first_after: BTreeMap<&str, u64> = BTreeMap::new();
    for s in scrapes.iter().filter(|s| s.phase == Phase::After) {
        first_after.entry(&s.url).or_insert(s.start_ns);
    }
    let t1 = match first_after.values().max() {
        Some(&t) => t,
        None => measure.map(|s| s.start_ns).max()?,
    };
    Some((t0, t1.max(t0)))
}

/// The `server` block for the scrapes that started within `[t0_ns, t1_ns]`, with histogram
/// percentiles `percentiles` (in percent) beside the fixed p50, p90 and p99.
pub fn summarize(scrapes: &[Scrape], t0_ns: u64, t1_ns: u64, percentiles: &[f64]) -> ServerSummary {
    let mut urls: Vec<String> = Vec::new();
    for s in scrapes {
        if !urls.contains(&s.url) {
            urls.push(s.url.clone());
        }
    }
    let window: Vec<&Scrape> = scrapes
        .iter()
        .filter(|s| (t0_ns..=t1_ns).contains(&s.start_ns))
        .collect();
    let mut out = ServerSummary {
        source: source::SCRAPE.to_string(),
        window_s: t1_ns.saturating_sub(t0_ns) as f64 / 1e9,
        ..ServerSummary::default()
    };
    for s in &window {
        match &s.error {
            None => out.scrapes_ok += 1,
            Some(f) => {
                out.scrapes_failed += 1;
                *out.failures_by_kind.entry(f.kind.clone()).or_default() += 1;
            }
        }
    }
    // Each URL's successful scrapes, in order.
    let by_url: Vec<Vec<&Scrape>> = urls
        .iter()
        .map(|u| {
            let mut v: Vec<&Scrape> = window
                .iter()
                .copied()
                .filter(|s| &s.url == u && s.page.is_some())
                .collect();
            v.sort_by_key(|s| s.start_ns);
            v
        })
        .collect();
    out.urls = urls;
    if let Some(via) = prometheus_source(&window, &by_url) {
        out.source = source::PROMETHEUS.to_string();
        out.urls = vec![via.url.clone()];
        out.prometheus = Some(via);
    }
    out.engine = engine(&window);
    for c in Concept::ALL {
        let key = c.key().to_string();
        match c.kind() {
            Kind::Gauge => {
                if let Some(g) = gauge(&window, c) {
                    out.gauges.insert(key, g);
                }
            }
            Kind::Counter => {
                if let Some(d) = counter(&by_url, c) {
                    out.counters.insert(key, d);
                }
            }
            Kind::Histogram => {
                if let Some(h) = window_hist(&by_url, c) {
                    out.histograms.insert(key, histogram_stats(&h, percentiles));
                }
            }
        }
    }
    out.ntpot_ms = ntpot(&by_url);
    out.raw_families_kept = by_url
        .iter()
        .filter_map(|v| v.last()?.page.as_ref())
        .map(|p| u64::from(p.raw_families))
        .sum();
    out
}

/// How lines read from Prometheus were read, and their targets (the URLs with pages).
fn prometheus_source(window: &[&Scrape], by_url: &[Vec<&Scrape>]) -> Option<PrometheusSource> {
    let via = window.iter().find_map(|s| s.prometheus.as_ref())?;
    Some(PrometheusSource {
        url: via.url.clone(),
        selector: via.selector.clone(),
        step_s: via.step_ns as f64 / 1e9,
        targets: by_url
            .iter()
            .filter_map(|v| Some(v.first()?.url.clone()))
            .collect(),
    })
}

/// The engine most of the window's pages are (the first of equals).
fn engine(window: &[&Scrape]) -> Option<String> {
    let mut n: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut order: Vec<&'static str> = Vec::new();
    for e in window.iter().filter_map(|s| s.page.as_ref()?.engine) {
        let k = e.key();
        if !order.contains(&k) {
            order.push(k);
        }
        *n.entry(k).or_default() += 1;
    }
    let mut best: Option<(&str, u64)> = None;
    for k in order {
        if best.is_none_or(|(_, most)| n[k] > most) {
            best = Some((k, n[k]));
        }
    }
    let (best, _) = best?;
    Some(best.to_string())
}

fn gauge(window: &[&Scrape], c: Concept) -> Option<GaugeStats> {
    let mut rounds: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
    for s in window {
        if let Some(v) = s.value(c) {
            let r = rounds.entry(s.round).or_insert((0.0, 0));
            *r = (r.0 + v, r.1 + 1);
        }
    }
    let mut values: Vec<f64> = rounds
        .values()
        .map(|&(sum, n)| match c.combine() {
            Combine::Sum => sum,
            Combine::Mean => sum / f64::from(n),
        })
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let rank = |p: f64| {
        let k = (p / 100.0 * n as f64).ceil() as usize;
        values[k.clamp(1, n) - 1]
    };
    Some(GaugeStats {
        samples: n as u64,
        min: values.first().copied(),
        mean: Some(values.iter().sum::<f64>() / n as f64),
        p50: Some(rank(50.0)),
        p90: Some(rank(90.0)),
        max: values.last().copied(),
    })
}

/// What a counter rose by over `values` (in order), and its resets, as Prometheus's
/// `increase` counts them: last − first, plus the value before each drop.
pub fn increase(values: &[f64]) -> (f64, u64) {
    let (Some(&first), Some(&last)) = (values.first(), values.last()) else {
        return (0.0, 0);
    };
    let mut delta = last - first;
    let mut resets = 0;
    for w in values.windows(2) {
        if w[1] < w[0] {
            delta += w[0];
            resets += 1;
        }
    }
    (delta, resets)
}

fn counter(by_url: &[Vec<&Scrape>], c: Concept) -> Option<CounterStats> {
    let mut found = false;
    let mut out = CounterStats::default();
    let mut per_s = Some(0.0);
    for scrapes in by_url {
        let seen: Vec<(u64, f64)> = scrapes
            .iter()
            .filter_map(|s| Some((s.start_ns, s.value(c)?)))
            .collect();
        if seen.len() < 2 {
            continue;
        }
        let values: Vec<f64> = seen.iter().map(|&(_, v)| v).collect();
        let (delta, resets) = increase(&values);
        let span_s = (seen[seen.len() - 1].0 - seen[0].0) as f64 / 1e9;
        found = true;
        out.delta += delta;
        out.resets += resets;
        per_s = match (per_s, span_s > 0.0) {
            (Some(r), true) => Some(r + delta / span_s),
            _ => None,
        };
    }
    out.per_s = per_s;
    found.then_some(out)
}

/// The observations between the first and the last histogram of `seq` (in order): each
/// bucket, the count and the sum rise as counters do; the buckets are then made cumulative
/// again where resets left them uneven (as `histogram_quantile` does).
pub fn hist_delta(seq: &[&Hist]) -> Option<Hist> {
    let last = seq.last()?;
    if seq.len() < 2 {
        return None;
    }
    let rise = |f: &dyn Fn(&Hist) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = seq.iter().map(|h| f(h)).collect::<Option<_>>()?;
        Some(increase(&values).0)
    };
    let count = rise(&|h| h.count);
    let mut cum = Vec::with_capacity(last.le.len());
    let mut floor = 0.0_f64;
    for &b in &last.le {
        let c = rise(&|h| Some(h.cum_at(b))).unwrap_or(0.0).max(floor);
        let c = count.map_or(c, |n| c.min(n));
        floor = c;
        cum.push(c);
    }
    Some(Hist {
        le: last.le.clone(),
        cum,
        count,
        sum: rise(&|h| h.sum),
    })
}

fn window_hist(by_url: &[Vec<&Scrape>], c: Concept) -> Option<Hist> {
    let parts: Vec<Hist> = by_url
        .iter()
        .filter_map(|scrapes| {
            let seq: Vec<&Hist> = scrapes.iter().filter_map(|s| s.hist(c)).collect();
            hist_delta(&seq)
        })
        .collect();
    (!parts.is_empty()).then(|| Hist::merge(&parts))
}

/// Prometheus's `histogram_quantile(q, …)` over `h` (`bucketQuantile`): the rank `q · count`
/// found in the first bucket whose cumulative count reaches it, interpolated linearly between
/// that bucket's lower and upper bound (the first bucket's lower bound is 0, or its own bound
/// when that is not positive). `(value, capped)`: capped when the rank is in the `+Inf`
/// bucket, whose value is then the highest finite bound. `None` without observations or
/// finite buckets, or for `q` outside [0, 1].
pub fn quantile(q: f64, h: &Hist) -> Option<(f64, bool)> {
    locate(q, h).map(|at| (at.value, at.capped))
}

/// Where `quantile` found rank `q · count`: its value, and the bounds of the bucket it came
/// from (`capped`: the `+Inf` bucket, `lower` its highest finite bound, `upper` infinite).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Located {
    value: f64,
    capped: bool,
    lower: f64,
    upper: f64,
}

fn locate(q: f64, h: &Hist) -> Option<Located> {
    let total = h.count?;
    let n = h.le.len().min(h.cum.len());
    let (le, cum) = (&h.le[..n], &h.cum[..n]);
    if n == 0 || total <= 0.0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let rank = q * total;
    let at = |value, lower, upper| Located {
        value,
        capped: false,
        lower,
        upper,
    };
    let Some(b) = cum.iter().position(|&c| c >= rank) else {
        return Some(Located {
            capped: true,
            ..at(le[n - 1], le[n - 1], f64::INFINITY)
        });
    };
    if b == 0 && le[0] <= 0.0 {
        return Some(at(le[0], le[0], le[0]));
    }
    let (start, below) = match b {
        0 => (0.0, 0.0),
        _ => (le[b - 1], cum[b - 1]),
    };
    let in_bucket = cum[b] - below;
    if in_bucket <= 0.0 {
        return Some(at(start, start, le[b]));
    }
    let value = start + (le[b] - start) * ((rank - below) / in_bucket);
    Some(at(value, start, le[b]))
}

/// A percentile is a guess when its bucket is wider than this share of its value.
pub const COARSE_WIDTH_FRACTION: f64 = 0.25;

/// The located percentile's bucket is wider than `COARSE_WIDTH_FRACTION` of its value (a
/// capped one is named `capped` instead).
fn is_coarse(a: &Located) -> bool {
    !a.capped && a.upper - a.lower > COARSE_WIDTH_FRACTION * a.value
}

fn histogram_stats(h: &Hist, percentiles: &[f64]) -> HistogramStats {
    let count = h.count.map(|n| n.round().max(0.0) as u64);
    let mut out = HistogramStats {
        count,
        sum_ms: h.sum.map(|s| s * 1e3),
        mean_ms: match (h.sum, h.count) {
            (Some(s), Some(n)) if n > 0.0 => Some(s / n * 1e3),
            _ => None,
        },
        ..HistogramStats::default()
    };
    let mut asked: Vec<f64> = FIXED_PERCENTILES.to_vec();
    for &p in percentiles {
        if !asked.contains(&p) {
            asked.push(p);
        }
    }
    for p in asked {
        let key = format!("{}_ms", percentile_key(p));
        let at = locate(p / 100.0, h);
        let value = at.map(|a| (a.value, a.capped));
        if value.is_some_and(|(_, capped)| capped) {
            out.capped.push(key.clone());
        }
        // A bucket wider than a quarter of the value: the figure is where interpolation
        // put it inside the bucket, not a measurement (vLLM's queue-time buckets begin at
        // 300 ms; a 20–40 ms TTFT bucket reads as 30): its bounds are kept beside it.
        if let Some(a) = at.filter(is_coarse) {
            out.coarse.push(key.clone());
            let range = BucketRange {
                low_ms: a.lower * 1e3,
                high_ms: a.upper * 1e3,
            };
            out.ranges.insert(key.clone(), range);
        }
        if count.is_some_and(|n| n > 0 && is_small_sample(p, n)) {
            out.small_sample.push(key.clone());
        }
        out.set(key, value.map(|(v, _)| v * 1e3));
    }
    out
}

/// Milliseconds per output token of each part: its histogram sum's rise over the window
/// divided by the generation tokens of the same scrapes, summed over URLs.
fn ntpot(by_url: &[Vec<&Scrape>]) -> Option<NtpotMs> {
    let tokens = counter(by_url, Concept::GenerationTokens)?.delta;
    if tokens <= 0.0 {
        return None;
    }
    let part = |c: Concept| -> Option<f64> {
        let sum: Vec<f64> = by_url
            .iter()
            .filter_map(|scrapes| {
                let seq: Vec<&Hist> = scrapes.iter().filter_map(|s| s.hist(c)).collect();
                hist_delta(&seq)?.sum
            })
            .collect();
        (!sum.is_empty()).then(|| sum.iter().sum::<f64>() / tokens * 1e3)
    };
    let (queue, prefill, decode) = (
        part(Concept::QueueTime),
        part(Concept::PrefillTime),
        part(Concept::DecodeTime),
    );
    if queue.is_none() && prefill.is_none() && decode.is_none() {
        return None;
    }
    let total = match (queue, prefill, decode) {
        (Some(q), Some(p), Some(d)) => Some(q + p + d),
        _ => None,
    };
    Some(NtpotMs {
        queue,
        prefill,
        decode,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(le: &[f64], cum: &[f64], count: f64, sum: f64) -> Hist {
        Hist {
            le: le.to_vec(),
            cum: cum.to_vec(),
            count: Some(count),
            sum: Some(sum),
        }
    }

    #[test]
    fn increase_adds_the_value_before_each_drop() {
        assert_eq!(increase(&[10.0, 20.0, 5.0, 8.0]), (18.0, 1));
        assert_eq!(increase(&[1.0, 4.0]), (3.0, 0));
        assert_eq!(increase(&[7.0]), (0.0, 0));
        assert_eq!(increase(&[]), (0.0, 0));
        assert_eq!(increase(&[9.0, 2.0, 1.0]), (3.0, 2));
    }

    #[test]
    fn quantiles_interpolate_inside_the_bucket() {
        // 2 at or below 1, 4 more up to 2, 2 more up to 4, 2 above 4.
        let h = hist(&[1.0, 2.0, 4.0], &[2.0, 6.0, 8.0], 10.0, 0.0);
        assert_eq!(quantile(0.5, &h), Some((1.75, false)));
        assert_eq!(quantile(0.1, &h), Some((0.5, false)));
        assert_eq!(quantile(0.8, &h), Some((4.0, false)));
        assert_eq!(quantile(0.9, &h), Some((4.0, true)));
        assert_eq!(quantile(0.0, &h), Some((0.0, false)));
        assert_eq!(quantile(1.5, &h), None);
        let zero_first = hist(&[0.0, 1.0], &[3.0, 4.0], 4.0, 0.0);
        assert_eq!(quantile(0.5, &zero_first), Some((0.0, false)));
        assert_eq!(quantile(0.5, &hist(&[1.0], &[0.0], 0.0, 0.0)), None);
        let sum_only = Hist {
            sum: Some(3.0),
            ..Hist::default()
        };
        assert_eq!(quantile(0.5, &sum_only), None);
    }

    #[test]
    fn a_percentile_from_a_bucket_wider_than_itself_is_named_coarse() {
        // vLLM's queue time: every observation at or below its first bound, 0.3 s.
        let first = hist(&[0.3, 0.5, 0.8], &[40.0, 40.0, 40.0], 40.0, 0.002);
        assert_eq!(quantile(0.5, &first), Some((0.15, false)));
        let s = histogram_stats(&first, &[]);
        assert_eq!(s.coarse, ["p50_ms", "p90_ms", "p99_ms"]);
        assert!(
            s.mean_ms.unwrap() < 0.1,
            "the mean is exact: {:?}",
            s.mean_ms
        );
        assert_eq!(
            s.ranges["p50_ms"],
            BucketRange {
                low_ms: 0.0,
                high_ms: 300.0
            }
        );
        // Narrow buckets around the values: nothing is coarse.
        let fine = hist(&[0.09, 0.1, 0.11], &[0.0, 50.0, 100.0], 100.0, 9.0);
        let s = histogram_stats(&fine, &[]);
        assert!(s.coarse.is_empty() && s.ranges.is_empty(), "{s:?}");
        // Its p99 lies in (0.1, 0.11]: 0.01 wide, a tenth of the value 0.1098.
        let p99 = locate(0.99, &fine).unwrap();
        assert_eq!((p99.lower, p99.upper), (0.1, 0.11));
        assert!((p99.value - 0.1098).abs() < 1e-12);
    }

    /// The 25% rule in exact binary fractions: a bucket (1.5, 2] s is 0.5 s wide, exactly a
    /// quarter of 2 s: a percentile at its top is a measurement, one inside it a guess.
    #[test]
    fn a_bucket_wider_than_a_quarter_of_the_value_gives_a_range_not_a_figure() {
        let h = hist(&[1.5, 2.0], &[0.0, 4.0], 4.0, 7.0);
        let top = locate(1.0, &h).unwrap();
        assert_eq!((top.value, top.lower, top.upper), (2.0, 1.5, 2.0));
        assert!(!is_coarse(&top), "0.5 = 0.25 × 2: not wider");
        let mid = locate(0.5, &h).unwrap();
        assert_eq!(mid.value, 1.75);
        assert!(is_coarse(&mid), "0.5 > 0.25 × 1.75 = 0.4375");
        let s = histogram_stats(&h, &[100.0]);
        assert_eq!(s.coarse, ["p50_ms", "p90_ms", "p99_ms"]);
        assert_eq!(s.p50_ms, Some(1750.0));
        assert_eq!(
            s.ranges["p50_ms"],
            BucketRange {
                low_ms: 1500.0,
                high_ms: 2000.0
            }
        );
        let top_key = format!("{}_ms", percentile_key(100.0));
        assert_eq!(s.get(&top_key), Some(2000.0));
        assert!(!s.ranges.contains_key(&top_key), "its top: exact");
        // The TTFT: all of it in (20, 40] ms reads as p50 30 ms, and is the range.
        let ttft = hist(&[0.02, 0.04, 0.08], &[0.0, 10.0, 10.0], 10.0, 0.2);
        let s = histogram_stats(&ttft, &[]);
        assert_eq!(s.coarse, ["p50_ms", "p90_ms", "p99_ms"]);
        assert_eq!(
            s.ranges["p50_ms"],
            BucketRange {
                low_ms: 20.0,
                high_ms: 40.0
            }
        );
        // A capped percentile is capped, not coarse.
        let over = hist(&[1.0], &[0.0], 4.0, 40.0);
        let s = histogram_stats(&over, &[]);
        assert_eq!(s.capped.len(), 3);
        assert!(s.coarse.is_empty());
    }

    #[test]
    fn histogram_deltas_survive_a_reset() {
        let a = hist(&[1.0], &[5.0], 10.0, 20.0);
        let b = hist(&[1.0], &[7.0], 14.0, 30.0);
        let c = hist(&[1.0], &[1.0], 2.0, 3.0);
        let d = hist_delta(&[&a, &b, &c]).unwrap();
        assert_eq!(d, hist(&[1.0], &[3.0], 6.0, 13.0));
        assert_eq!(hist_delta(&[&a]), None);
    }
}
