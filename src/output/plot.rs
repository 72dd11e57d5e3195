//! Plots of a run or a sweep as SVG and PNG (the last stage, beside **report**): throughput
//! vs load, latency percentiles vs load with the SLO bounds and the crossing, CDFs of TTFT
//! and ITL from a run's `requests.jsonl`, and the per-interval timeline of a run's summary.
//! Drawn with `plotters` into memory: SVG text is left to the viewer's fonts; PNG text is
//! rasterized (ab_glyph) from a font built into the binary, never one looked up on the
//! system. Reads finished results only; never prints.

pub use super::chart::{Chart, PlotError};
use crate::collector::new_histogram;
use crate::scrape::{Concept, Kind, Scrape, Unit};
use crate::summary::study::{Axis, Sweep};
use hdrhistogram::Histogram;
use std::path::Path;

fn axis_label(axis: Axis) -> &'static str {
    match axis {
        Axis::Concurrency => "concurrency (users)",
        Axis::Rate => "offered request rate (req/s)",
    }
}

fn wide(s: &Sweep) -> bool {
    let (a, b) = (
        s.points.first().map(|p| p.load),
        s.points.last().map(|p| p.load),
    );
    matches!((a, b), (Some(a), Some(b)) if a > 0.0 && b / a >= 20.0)
}

/// Throughput and goodput (medians) against load, the knee marked.
pub fn throughput_chart(s: &Sweep) -> Chart {
    let line = |f: &dyn Fn(&crate::summary::study::Point) -> Option<f64>| -> Vec<(f64, f64)> {
        s.points
            .iter()
            .filter_map(|p| Some((p.load, f(p)?)))
            .collect()
    };
    let mut series = vec![(
        "throughput (req/s)".to_string(),
        line(&|p| p.throughput_requests_per_s.median),
    )];
    let good = line(&|p| p.goodput_requests_per_s.median);
    if !good.is_empty() {
        series.push(("goodput (req/s)".into(), good));
    }
    Chart {
        title: "Throughput vs load".into(),
        x_label: axis_label(s.axis).into(),
        y_label: "requests / s".into(),
        series,
        vlines: s
            .analysis
            .knee
            .iter()
            .map(|k| (format!("knee at {}", k.load), k.load))
            .collect(),
        log_x: wide(s),
        ..Chart::default()
    }
}

/// p50/p95/p99 of one metric against load, with this metric's SLO bounds and the crossing.
pub fn latency_chart(s: &Sweep, metric: &str) -> Chart {
    let series = crate::summary::study::CURVE_STATS
        .iter()
        .map(|st| {
            let key = format!("{metric}_{st}");
            let pts = s
                .points
                .iter()
                .filter_map(|p| Some((p.load, p.latency_ms.get(&key)?.median?)))
                .collect();
            (format!("{metric} {st}"), pts)
        })
        .collect();
    let hlines = s
        .slos
        .iter()
        .filter(|b| b.metric == metric)
        .map(|b| (format!("SLO {}", b.text), b.max_ms))
        .collect();
    let mut vlines: Vec<(String, f64)> = s
        .analysis
        .slo_crossing
        .filter(|_| s.slos.iter().any(|b| b.metric == metric))
        .map(|x| (format!("SLO crossing ≈ {x:.1}"), x))
        .into_iter()
        .collect();
    // The knee is read off e2e p50 as much as off throughput: mark it on both plots.
    if metric == "e2e" {
        let knee = s.analysis.knee.iter();
        vlines.extend(knee.map(|k| (format!("knee at {}", k.load), k.load)));
    }
    Chart {
        title: format!("{} percentiles vs load", metric.to_uppercase()),
        x_label: axis_label(s.axis).into(),
        y_label: "ms".into(),
        series,
        hlines,
        vlines,
        log_x: wide(s),
        log_y: true,
        ..Chart::default()
    }
}

/// The empirical CDF of `values_ms` (sorted here), thinned to at most 400 steps, on a log
/// latency axis (a linear one squashes the body against the left edge).
pub fn cdf_chart(name: &str, mut values_ms: Vec<f64>) -> Chart {
    values_ms.retain(|v| v.is_finite());
    values_ms.sort_by(f64::total_cmp);
    let n = values_ms.len();
    let step = n.div_ceil(400).max(1);
    let mut pts: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (values_ms[i], (i + 1) as f64 / n as f64))
        .collect();
    if let Some(&last) = values_ms.last() {
        pts.push((last, 1.0));
    }
    Chart {
        title: format!("CDF of {name} ({n} samples)"),
        x_label: format!("{name} (ms)"),
        y_label: "fraction ≤ x".into(),
        series: vec![(name.to_string(), pts)],
        log_x: true,
        ..Chart::default()
    }
}

/// Most points of the per-request TTFT scatter: a browser draws them at once, and the
/// page carries them all.
pub const MAX_SCATTER_POINTS: usize = 20_000;

/// Every `stride`-th of the records offered, at most `MAX_SCATTER_POINTS` of them: when the
/// points reach twice the bound, every other one goes and the stride doubles. Deterministic
/// (the file's order decides), so `ringbench report` draws the same points again.
#[derive(Clone, Debug, PartialEq)]
pub struct Decimated {
    /// One point kept per this many offered.
    pub stride: u64,
    /// Points offered.
    pub offered: u64,
    /// The points kept, in the order offered.
    pub points: Vec<(f64, f64)>,
}

impl Default for Decimated {
    fn default() -> Self {
        Decimated {
            stride: 1,
            offered: 0,
            points: vec![],
        }
    }
}

impl Decimated {
    /// Offers one point.
    pub fn offer(&mut self, p: (f64, f64)) {
        if self.offered % self.stride == 0 {
            self.points.push(p);
            if self.points.len() > MAX_SCATTER_POINTS {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.offered += 1;
    }
}

/// What the report draws from a run's `requests.jsonl`: the TTFT and ITL distributions of
/// its measured successful requests (TTFT = first token − sent; ITL = every gap between
/// consecutive token-bearing events, as `docs/metrics.md` defines them), a bounded sample of
/// (send time, TTFT) per request, and when its last measured request ended. Memory stays
/// bounded however long the run: a 10-minute run at 2,000 req/s has 1.2 M lines and 18 M gaps.
pub struct RunRecords {
    /// TTFT, ns.
    pub ttft: Histogram<u64>,
    /// Chunk gaps, ns.
    pub itl: Histogram<u64>,
    /// (sent, s on the run clock; TTFT, ms), every `stride`-th request with a first token.
    pub scatter: Decimated,
    /// The last `done_ns` of a measured sent request, s on the run clock (the end of the
    /// timeline's last interval).
    pub end_s: Option<f64>,
}

/// Reads a run's `requests.jsonl` once for `RunRecords`.
pub fn read_run(run_dir: &Path) -> Result<RunRecords, crate::collector::replay::ReplayError> {
    let mut out = RunRecords::new();
    crate::collector::replay::read_records(run_dir, |r| out.add(r))?;
    Ok(out)
}

impl RunRecords {
    /// Nothing seen yet.
    pub fn new() -> Self {
        RunRecords {
            ttft: new_histogram(),
            itl: new_histogram(),
            scatter: Decimated::default(),
            end_s: None,
        }
    }

    /// One record of the run, in the file's order.
    pub fn add(&mut self, r: &crate::record::Record) {
        if r.warmup {
            return;
        }
        if let (Some(_), Some(done)) = (r.sent_ns, r.done_ns) {
            let done_s = done as f64 / 1e9;
            self.end_s = Some(self.end_s.map_or(done_s, |e: f64| e.max(done_s)));
        }
        if r.outcome != crate::record::Outcome::Ok {
            return;
        }
        if let Some(t) = r.ttft_ns() {
            self.ttft.saturating_record(t.max(1));
            let sent_s = r.sent_ns.unwrap_or_default() as f64 / 1e9;
            self.scatter.offer((round3(sent_s), round3(t as f64 / 1e6)));
        }
        for gap in r.itl_gaps_ns() {
            self.itl.saturating_record(gap.max(1));
        }
    }
}

impl Default for RunRecords {
    fn default() -> Self {
        Self::new()
    }
}

/// To a thousandth: ms to the µs, s to the ms — what a chart can show, in a third of the
/// characters.
fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// TTFT against send time, one point per request (a bounded, deterministic sample).
pub fn ttft_scatter(d: &Decimated) -> Chart {
    let mut pts = d.points.clone();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let note = match d.stride {
        1 => format!("all {} requests with a first token", d.offered),
        k => format!(
            "{} of {} requests with a first token: every {k}th in the log's order, at most \
             {MAX_SCATTER_POINTS} drawn",
            pts.len(),
            d.offered
        ),
    };
    Chart {
        title: "TTFT of each request against its send time".into(),
        x_label: "sent, time into the run (s)".into(),
        y_label: "TTFT (ms)".into(),
        series: vec![("TTFT".into(), pts)],
        log_y: true,
        scatter: true,
        note: Some(note),
        ..Chart::default()
    }
}

/// The CDF of a histogram of nanoseconds, drawn in ms at 400 quantile steps (the
/// histogram's 3 significant digits are far finer than a plot can show), on a log axis.
pub fn cdf_chart_from_histogram(name: &str, h: &Histogram<u64>) -> Chart {
    const STEPS: u32 = 400;
    let mut pts: Vec<(f64, f64)> = vec![];
    if !h.is_empty() {
        for i in 0..=STEPS {
            let q = f64::from(i) / f64::from(STEPS);
            pts.push((h.value_at_quantile(q) as f64 / 1e6, q));
        }
        pts.dedup();
    }
    if pts.len() == 1 || pts.iter().all(|p| p.0 == pts[0].0) {
        // All samples equal: the sample-vector CDF knows how to centre that case.
        let x = pts.first().map_or(0.0, |p| p.0);
        let mut c = cdf_chart(name, vec![x; 2]);
        c.title = format!("CDF of {name} ({} samples)", h.len());
        return c;
    }
    Chart {
        title: format!("CDF of {name} ({} samples)", h.len()),
        x_label: format!("{name} (ms)"),
        y_label: "fraction ≤ x".into(),
        series: vec![(name.to_string(), pts)],
        log_x: true,
        ..Chart::default()
    }
}

/// The title of the client's latency timeline (the server's gauges are drawn under it).
pub const LATENCY_TIMELINE: &str = "TTFT and ITL over time";

/// Per-interval timeline charts from a summary's `timeseries` (`{interval_s, points: [...]}`,
/// as the collector writes it; a bare array of rows is read too): request rate and mean
/// requests in flight; TTFT and ITL p50/p99; output tokens per second. Every numeric field of
/// the rows goes to one of the three by its name (`_ms` fields are latencies, `tokens` fields
/// token rates; `_count` fields are not drawn). A chart needs a series with two intervals.
pub fn timeline_charts(summary: &serde_json::Value) -> Vec<Chart> {
    let ts = &summary["timeseries"];
    let Some(rows) = ts["points"].as_array().or_else(|| ts.as_array()) else {
        return vec![];
    };
    let x_of = |i: usize, r: &serde_json::Value| r["t_s"].as_f64().unwrap_or(i as f64);
    let mut fields: Vec<&str> = vec![];
    for r in rows {
        for (k, v) in r.as_object().into_iter().flatten() {
            if k != "t_s" && !k.ends_with("_count") && v.is_number() && !fields.contains(&&**k) {
                fields.push(k);
            }
        }
    }
    // The issue's order (rate, in flight, TTFT p50/p99), whatever order the rows' keys have.
    const FIRST: [&str; 7] = [
        "requests_per_s",
        "in_flight_mean",
        "ttft_p50_ms",
        "ttft_p99_ms",
        "itl_p50_ms",
        "itl_p99_ms",
        "output_tokens_per_s",
    ];
    fields.sort_by_key(|k| (FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len()), *k));
    let series_of = |keep: &dyn Fn(&str) -> bool| -> Vec<(String, Vec<(f64, f64)>)> {
        fields
            .iter()
            .filter(|k| keep(k))
            .map(|k| {
                let pts = rows
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| Some((x_of(i, r), r[*k].as_f64()?)))
                    .collect();
                (k.to_string(), pts)
            })
            .collect()
    };
    let width = ts["interval_s"].as_f64().unwrap_or(1.0);
    let mk = |title: &str, y: &str, series| Chart {
        title: format!("{title} (per {width} s)"),
        x_label: "time into the run (s)".into(),
        y_label: y.into(),
        series,
        ..Chart::default()
    };
    let is_ms = |k: &str| k.ends_with("_ms");
    let is_tokens = |k: &str| k.contains("tokens");
    [
        mk(
            "Request rate and in flight",
            "req/s · requests",
            series_of(&|k| !is_ms(k) && !is_tokens(k)),
        ),
        Chart {
            log_y: true,
            ..mk(LATENCY_TIMELINE, "ms", series_of(&is_ms))
        },
        mk(
            "Output tokens over time",
            "tokens / s",
            series_of(&is_tokens),
        ),
    ]
    .into_iter()
    .filter(shows_a_line)
    .collect()
}

/// A timeline worth drawing: a series with two points (one interval is a dot, not a
/// timeline), and a value other than 0 (a chart of zeros — a KV cache the server reports
/// as empty throughout, tokens of an endpoint that has none — says nothing a line can).
pub fn shows_a_line(c: &Chart) -> bool {
    let points = || c.series.iter().flat_map(|s| s.1.iter());
    c.series.iter().any(|s| s.1.len() >= 2) && points().any(|p| p.1 != 0.0)
}

/// Leaves the client timeline's last interval out when the run ended before it did: its
/// rates are per full interval, so a partial one reads as a collapse. `last_t_s` is the
/// last interval's start, `end_s` the run's end (its last measured request's end); without
/// the end, the interval is taken as partial. Notes what was left out on each chart.
pub fn drop_partial_tail(charts: &mut [Chart], last_t_s: f64, width_s: f64, end_s: Option<f64>) {
    let covered = end_s.map(|e| (e - last_t_s).clamp(0.0, width_s));
    if covered.is_some_and(|c| c >= width_s * 0.999) {
        return;
    }
    let why = match covered {
        Some(c) => format!(
            "the last interval ({c:.2} s of {width_s} s, the run ended in it) is left out: its \
             rates are per full interval"
        ),
        None => "the last interval is left out: it may be partial".to_string(),
    };
    for c in charts.iter_mut() {
        for (_, pts) in &mut c.series {
            pts.retain(|p| p.0 < last_t_s - width_s * 1e-6);
        }
        c.note = Some(why.clone());
    }
}

/// The server's gauges over the run, from its scrapes (`server_metrics.jsonl`): one chart per
/// unit of the gauge concepts of `scrape::engines` (running and waiting requests; KV-cache
/// usage in %). Each scrape is drawn at the middle of its request, in seconds on the run
/// clock, the client's timeline's time axis. With several URLs each gets its own series. A
/// chart needs a series with two scrapes.
pub fn server_timeline_charts(scrapes: &[Scrape]) -> Vec<Chart> {
    let mut urls: Vec<&str> = scrapes.iter().map(|s| s.url.as_str()).collect();
    urls.sort_unstable();
    urls.dedup();
    let gauges = || Concept::ALL.into_iter().filter(|c| c.kind() == Kind::Gauge);
    let mut units: Vec<Unit> = gauges().map(Concept::unit).collect();
    units.dedup();
    units
        .into_iter()
        .map(|unit| {
            let (scale, y_label) = match unit {
                Unit::Fraction => (100.0, "%".to_string()),
                other => (1.0, other.key().to_string()),
            };
            let mut series = vec![];
            for c in gauges().filter(|c| c.unit() == unit) {
                for url in &urls {
                    let pts: Vec<(f64, f64)> = scrapes
                        .iter()
                        .filter(|s| s.url == *url)
                        .filter_map(|s| {
                            let mid_ns = s.start_ns / 2 + s.end_ns / 2;
                            Some((mid_ns as f64 / 1e9, s.value(c)? * scale))
                        })
                        .collect();
                    let name = match urls.len() {
                        1 => c.key().to_string(),
                        _ => format!("{} ({url})", c.key()),
                    };
                    series.push((name, pts));
                }
            }
            let titles: Vec<&str> = gauges()
                .filter(|c| c.unit() == unit)
                .map(Concept::title)
                .collect();
            Chart {
                title: format!("Server (scraped): {}", titles.join(", ")),
                x_label: "time into the run (s)".into(),
                y_label,
                series,
                ..Chart::default()
            }
        })
        .filter(shows_a_line)
        .collect()
}

/// Gives `charts` one x axis: the union of their data's x ranges.
pub fn share_x(charts: &mut [Chart]) {
    let ranges: Vec<(f64, f64)> = charts
        .iter()
        .filter_map(|c| {
            Chart {
                x_range: None,
                ..c.clone()
            }
            .ranges()
            .map(|r| r.0)
        })
        .collect();
    let lo = ranges.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let hi = ranges.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() && hi > lo {
        charts.iter_mut().for_each(|c| c.x_range = Some((lo, hi)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(url: &str, start_ns: u64, running: f64, kv: Option<f64>) -> Scrape {
        let mut values = std::collections::BTreeMap::new();
        values.insert(Concept::Running, running);
        values.insert(Concept::Waiting, running / 2.0);
        if let Some(kv) = kv {
            values.insert(Concept::KvCacheUsage, kv);
        }
        Scrape {
            start_ns,
            end_ns: start_ns + 2_000_000,
            url: url.into(),
            phase: crate::scrape::Phase::Measure,
            round: 0,
            mark: false,
            error: None,
            page: Some(crate::scrape::Page {
                values,
                ..Default::default()
            }),
            prometheus: None,
        }
    }

    #[test]
    fn the_servers_gauges_are_drawn_per_unit_on_the_run_clock() {
        let one = [
            scrape("u", 0, 1.0, Some(0.25)),
            scrape("u", 1_000_000_000, 3.0, None),
            scrape("u", 2_000_000_000, 2.0, Some(0.5)),
        ];
        let charts = server_timeline_charts(&one);
        assert_eq!(charts.len(), 2, "requests, then the KV-cache share");
        let names: Vec<&str> = charts[0].series.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(names, ["running", "waiting"]);
        assert_eq!(
            charts[0].series[0].1,
            [(0.001, 1.0), (1.001, 3.0), (2.001, 2.0)]
        );
        assert_eq!(charts[1].y_label, "%");
        assert_eq!(charts[1].series[0].1, [(0.001, 25.0), (2.001, 50.0)]);
        let two = [
            one[0].clone(),
            scrape("v", 5, 1.0, None),
            one[1].clone(),
            scrape("v", 7, 2.0, None),
        ];
        let names: Vec<String> = server_timeline_charts(&two)[0]
            .series
            .iter()
            .map(|s| s.0.clone())
            .collect();
        assert_eq!(
            names,
            ["running (u)", "running (v)", "waiting (u)", "waiting (v)"]
        );
        assert!(
            server_timeline_charts(&one[..1]).is_empty(),
            "one scrape is no line"
        );
        let mut shared = vec![
            charts[0].clone(),
            Chart {
                series: vec![("x".into(), vec![(-1.0, 1.0), (0.5, 2.0)])],
                ..Chart::default()
            },
        ];
        share_x(&mut shared);
        assert!(shared.iter().all(|c| c.x_range == Some((-1.0, 2.001))));
        assert_eq!(shared[0].ranges().unwrap().0, (-1.0, 2.001));
    }

    #[test]
    #[cfg(feature = "plot")]
    fn a_chart_renders_its_data_as_svg() {
        let c = Chart {
            title: "t".into(),
            series: vec![("a".into(), vec![(1.0, 2.0), (2.0, 3.0), (4.0, 3.5)])],
            hlines: vec![("SLO".into(), 3.2)],
            vlines: vec![("knee".into(), 2.0)],
            ..Chart::default()
        };
        let svg = c.svg().unwrap().unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("<polyline"),
            "{svg:.200}"
        );
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(
            svg.contains("SLO") && svg.contains("knee"),
            "legend labels are drawn"
        );
    }

    #[test]
    fn nothing_to_draw_is_none() {
        assert!(Chart::default().svg().unwrap().is_none());
        assert!(Chart::default().png().unwrap().is_none());
    }

    /// Decodes a PNG into (width, height, RGB bytes).
    #[cfg(feature = "plot")]
    fn decode(file: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut r = png::Decoder::new(std::io::Cursor::new(file))
            .read_info()
            .unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    #[test]
    #[cfg(feature = "plot")]
    fn a_chart_renders_as_png_with_its_line_and_text() {
        use crate::output::draw::{COLORS, H, W};
        let c = Chart {
            title: "Throughput vs load".into(),
            series: vec![("a".into(), vec![(1.0, 2.0), (2.0, 3.0), (4.0, 3.5)])],
            ..Chart::default()
        };
        let (w, h, rgb) = decode(&c.png().unwrap().unwrap());
        assert_eq!((w, h), (W, H));
        let px = |x: u32, y: u32| {
            let i = ((y * W + x) * 3) as usize;
            [rgb[i], rgb[i + 1], rgb[i + 2]]
        };
        let blue = [COLORS[0].0, COLORS[0].1, COLORS[0].2];
        let line = (0..H)
            .flat_map(|y| (0..W).map(move |x| (x, y)))
            .filter(|&(x, y)| px(x, y) == blue)
            .count();
        assert!(
            line > 300,
            "the series is drawn: {line} pixels of its colour"
        );
        // The caption sits in the top 40 rows, centred: text means dark, anti-aliased pixels.
        let caption: std::collections::HashSet<[u8; 3]> = (0..40)
            .flat_map(|y| (W / 4..3 * W / 4).map(move |x| (x, y)))
            .map(|(x, y)| px(x, y))
            .collect();
        assert!(
            caption.contains(&[0, 0, 0]) && caption.len() > 5,
            "{caption:?}"
        );
    }

    #[test]
    fn the_scatter_sample_is_bounded_even_and_the_same_every_time() {
        let sample = |n: u64| {
            let mut d = Decimated::default();
            (0..n).for_each(|i| d.offer((i as f64, 1.0)));
            d
        };
        let small = sample(500);
        assert_eq!((small.stride, small.points.len()), (1, 500));
        let big = sample(100_003);
        assert!(big.points.len() <= MAX_SCATTER_POINTS);
        assert!(
            big.points.len() > MAX_SCATTER_POINTS / 2,
            "{}",
            big.points.len()
        );
        assert_eq!(big.offered, 100_003);
        // Every stride-th offered, from the first: evenly spread over the whole run.
        let k = big.stride as f64;
        assert!(big
            .points
            .iter()
            .enumerate()
            .all(|(i, p)| p.0 == i as f64 * k));
        assert!(big.points.last().unwrap().0 > 100_003.0 - k);
        assert_eq!(sample(100_003), big);
        let c = ttft_scatter(&big);
        assert!(c.scatter && c.log_y);
        let note = c.note.unwrap();
        assert!(note.contains(&format!("every {}th", big.stride)), "{note}");
    }

    #[test]
    fn a_partial_last_interval_is_left_out_and_a_full_one_kept() {
        let chart = || Chart {
            series: vec![("r".into(), vec![(0.0, 10.0), (1.0, 10.0), (2.0, 3.0)])],
            ..Chart::default()
        };
        let mut cut = [chart()];
        drop_partial_tail(&mut cut, 2.0, 1.0, Some(2.3));
        assert_eq!(cut[0].series[0].1, [(0.0, 10.0), (1.0, 10.0)]);
        assert!(cut[0].note.as_ref().unwrap().contains("0.30 s of 1 s"));
        let mut unknown = [chart()];
        drop_partial_tail(&mut unknown, 2.0, 1.0, None);
        assert_eq!(unknown[0].series[0].1.len(), 2);
        let mut full = [chart()];
        drop_partial_tail(&mut full, 2.0, 1.0, Some(3.0));
        assert_eq!((full[0].series[0].1.len(), &full[0].note), (3, &None));
    }

    #[test]
    fn a_chart_of_zeros_is_left_out() {
        let zeros = [
            scrape("u", 0, 1.0, Some(0.0)),
            scrape("u", 1_000_000_000, 2.0, Some(0.0)),
        ];
        let charts = server_timeline_charts(&zeros);
        assert_eq!(
            charts.len(),
            1,
            "running and waiting, not an empty KV cache"
        );
        assert_eq!(charts[0].y_label, "requests");
        let s = serde_json::json!({"timeseries": {"interval_s": 1.0, "points": [
            {"t_s": 0.0, "requests_per_s": 1.0, "output_tokens_per_s": 0.0},
            {"t_s": 1.0, "requests_per_s": 2.0, "output_tokens_per_s": 0.0}
        ]}});
        let titles: Vec<String> = timeline_charts(&s).into_iter().map(|c| c.title).collect();
        assert_eq!(titles, ["Request rate and in flight (per 1 s)"]);
    }

    #[test]
    fn tick_labels_are_short() {
        use super::super::chart::tick;
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(0.1), "0.1");
        assert_eq!(tick(1234.4), "1234");
    }

    #[test]
    fn identical_samples_are_centred_not_drawn_on_the_axis() {
        let c = cdf_chart("ITL", vec![0.0; 5]);
        let ((x0, x1), _) = c.ranges().unwrap();
        assert!(x0 < 0.0 && 0.0 < x1, "{x0}..{x1}");
    }

    #[test]
    fn a_histogram_cdf_is_bounded_monotone_and_ends_at_the_max() {
        let mut h = new_histogram();
        for v in 1..=100_000u64 {
            h.record(v * 1_000).unwrap();
        }
        let c = cdf_chart_from_histogram("ITL", &h);
        let pts = &c.series[0].1;
        assert!(pts.len() <= 401 && pts.len() > 300, "{}", pts.len());
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        let last = pts.last().unwrap();
        assert_eq!(last.1, 1.0);
        assert!((last.0 - 100.0).abs() < 0.1, "{last:?}");
        assert!(c.title.contains("100000 samples"), "{}", c.title);
        assert!(c.log_x, "a latency axis is logarithmic");
        let mut same = new_histogram();
        same.record(5_000_000).unwrap();
        same.record(5_000_000).unwrap();
        let c = cdf_chart_from_histogram("TTFT", &same);
        assert!(c.title.contains("2 samples"), "{}", c.title);
    }

    #[test]
    fn cdf_ends_at_one_and_rises() {
        let c = cdf_chart("TTFT", vec![3.0, 1.0, 2.0]);
        let pts = &c.series[0].1;
        assert_eq!(pts.first(), Some(&(1.0, 1.0 / 3.0)));
        assert_eq!(pts.last(), Some(&(3.0, 1.0)));
        assert!(pts.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn timeline_is_read_when_present_and_skipped_when_absent() {
        assert!(timeline_charts(&serde_json::json!({})).is_empty());
        // The collector's shape: the first interval may have no TTFT yet (null).
        let s = serde_json::json!({"timeseries": {"interval_s": 1.0, "points": [
            {"t_s": 0.0, "requests_per_s": 10.0, "output_tokens_per_s": 90.0, "in_flight_mean": 3.0,
             "ttft_count": 0, "ttft_p50_ms": null, "ttft_p99_ms": null},
            {"t_s": 1.0, "requests_per_s": 12.0, "output_tokens_per_s": 99.0, "in_flight_mean": 4.0,
             "ttft_count": 9, "ttft_p50_ms": 6.0, "ttft_p99_ms": 11.0},
            {"t_s": 2.0, "requests_per_s": 11.0, "output_tokens_per_s": 95.0, "in_flight_mean": 4.0,
             "ttft_count": 9, "ttft_p50_ms": 7.0, "ttft_p99_ms": 12.0}
        ]}});
        let charts = timeline_charts(&s);
        assert_eq!(charts.len(), 3);
        let names: Vec<&str> = charts[0].series.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(names, ["requests_per_s", "in_flight_mean"]);
        assert_eq!(charts[1].series[1].1, vec![(1.0, 11.0), (2.0, 12.0)]);
        assert_eq!(charts[2].series[0].1[..2], [(0.0, 90.0), (1.0, 99.0)]);
        assert!(charts.iter().all(|c| c.title.contains("per 1 s")));
    }
}
