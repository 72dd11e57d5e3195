//! Part of `scrape::prometheus`: the answers of a run's queries → `Scrape`s, one per step and
//! target, each holding the `Page` a scrape of that target's `/metrics` at that moment would
//! have given (concept values, histogram buckets and sums), so that `window::summarize` reads
//! them as it reads scrapes; a failed query is a failed line. Pure arithmetic on answers: no
//! I/O, no printing; at most `max_lines` pages, the rest counted.
//!
//! Per target and concept the first row of the table (its order) with series wins, and of a
//! counter's two names (`x`, `x_total`) the first with series, as `parse` takes the first
//! family present. Non-finite values are left out, as are buckets whose `le` is not a finite
//! number and histograms past `MAX_BUCKETS` bounds. The series of one target are summed by
//! PromQL per name and bound (`sum by (…, le)`), which equals `parse`'s sum over a page's
//! series whenever they share their bounds (replicas of one engine do). A page's `families`
//! counts the concepts read on it.

use super::answer::{Labels, Series};
use super::query::{has_buckets, rows, series_names, TARGET_LABELS};
use super::PromSource;
use crate::scrape::engines::{Concept, Engine, Read, Row};
use crate::scrape::parse::MAX_BUCKETS;
use crate::scrape::{Failure, Hist, Page, Phase, Scrape, ScrapeError};
use std::collections::BTreeMap;

/// The steps of a window, on the run clock and as the Unix milliseconds a query asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Run-clock ns of step 0 (the measured window's start).
    pub t0_ns: u64,
    /// Run-clock ns of the window's end: the closing point's stamp.
    pub t1_ns: u64,
    /// ns between steps (a whole number of ms).
    pub step_ns: u64,
    /// Steps at `t0 + k·step` for `k < points`, all at or before `t1`; at least 1.
    pub points: u64,
    /// Unix ms of step 0.
    pub start_ms: i64,
    /// ms between steps.
    pub step_ms: i64,
    /// How long after `t1` the closing point is read, ns.
    pub after_ns: u64,
    /// Unix ms the closing point is read at.
    pub after_ms: i64,
    /// The step was widened past the one asked for to keep within `max_points`.
    pub widened: bool,
}

impl Grid {
    /// The steps of `[t0_ns, t1_ns]` every `step_ns` (rounded to ms), widened when there would
    /// be more than `max_points` (at least 2); `wall_origin_ns` is the Unix ns of run-clock 0.
    pub fn new(
        (t0_ns, t1_ns): (u64, u64),
        step_ns: u64,
        after_ns: u64,
        wall_origin_ns: u64,
        max_points: u64,
    ) -> Grid {
        let t1_ns = t1_ns.max(t0_ns);
        let span_ns = t1_ns - t0_ns;
        let mut step_ms = (step_ns.saturating_add(500_000) / 1_000_000).max(1);
        let max_points = max_points.max(2);
        let widened = span_ns / (step_ms * 1_000_000) + 1 > max_points;
        if widened {
            step_ms = span_ns.div_ceil(1_000_000).div_ceil(max_points - 1).max(1);
        }
        let step_ns = step_ms * 1_000_000;
        let ms = |run_ns: u64| i64::try_from((wall_origin_ns + run_ns) / 1_000_000).unwrap_or(0);
        Grid {
            t0_ns,
            t1_ns,
            step_ns,
            points: span_ns / step_ns + 1,
            start_ms: ms(t0_ns),
            step_ms: step_ms as i64,
            after_ns,
            after_ms: ms(t1_ns + after_ns),
            widened,
        }
    }

    /// Unix ms of step `k`.
    pub fn ms(&self, k: u64) -> i64 {
        self.start_ms + k as i64 * self.step_ms
    }

    /// The step of the grid a point of a range answer is at (the nearest).
    pub fn step_of(&self, ms: i64) -> Option<u64> {
        let k = (ms - self.start_ms + self.step_ms / 2).div_euclid(self.step_ms);
        u64::try_from(k).ok().filter(|&k| k < self.points)
    }

    /// The steps in runs of at most `per_query` (first and last, inclusive).
    pub fn chunks(&self, per_query: u64) -> Vec<(u64, u64)> {
        let per = per_query.max(1);
        (0..self.points)
            .step_by(usize::try_from(per).unwrap_or(usize::MAX))
            .map(|first| (first, (first + per).min(self.points) - 1))
            .collect()
    }
}

/// A target's name in the lines: its `instance` and `job` labels, `{instance="…",job="…"}`.
pub fn target_key(labels: &Labels) -> String {
    let mut keys = TARGET_LABELS;
    keys.sort_unstable();
    let pairs: Vec<String> = keys
        .iter()
        .filter_map(|k| {
            let v = labels.get(*k)?.replace('\\', "\\\\").replace('"', "\\\"");
            Some(format!("{k}=\"{v}\""))
        })
        .collect();
    format!("{{{}}}", pairs.join(","))
}

/// The pages of one run's answers, filled concept by concept.
pub struct Pages {
    engine: Engine,
    grid: Grid,
    max_lines: usize,
    /// Targets in the order first seen.
    targets: Vec<String>,
    /// (step, target) → its page; step `grid.points` is the closing point.
    pages: BTreeMap<(u64, usize), Page>,
    /// Failed queries: their error and whether they asked for the closing point.
    failures: Vec<(Failure, bool)>,
    /// Pages not kept past `max_lines`.
    pub dropped: u64,
}

impl Pages {
    /// No page yet, for `engine`'s table over `grid`.
    pub fn new(engine: Engine, grid: Grid, max_lines: usize) -> Pages {
        Pages {
            engine,
            grid,
            max_lines,
            targets: Vec::new(),
            pages: BTreeMap::new(),
            failures: Vec::new(),
            dropped: 0,
        }
    }

    /// A query that failed (`closing`: the closing point's).
    pub fn fail(&mut self, error: &ScrapeError, closing: bool) {
        self.failures.push((Failure::from(error), closing));
    }

    /// The answer to `concept`'s query (`closing`: the closing point's, whatever its time).
    pub fn add(&mut self, concept: Concept, series: &[Series], closing: bool) {
        let rows = rows(self.engine, concept);
        let mut by_target: BTreeMap<String, Vec<&Series>> = BTreeMap::new();
        for s in series {
            by_target.entry(target_key(&s.labels)).or_default().push(s);
        }
        for (target, group) in by_target {
            let has = |name: &str| group.iter().any(|s| name_of(s) == Some(name));
            let Some(row) = rows.iter().find(|r| series_names(r).iter().any(|n| has(n))) else {
                continue;
            };
            let t = self.target(target);
            if has_buckets(row) {
                self.add_histogram(concept, row, &group, t, closing);
            } else {
                self.add_scalar(concept, row, &group, t, closing);
            }
        }
    }

    /// The lines: the failed queries' and one per step and target, in time order.
    pub fn into_scrapes(self, source: &PromSource) -> Vec<Scrape> {
        let g = self.grid;
        let line = |start_ns: u64, closing: bool, url: String, round: u64| Scrape {
            start_ns,
            end_ns: if closing {
                g.t1_ns + g.after_ns
            } else {
                start_ns
            },
            url,
            phase: if closing {
                Phase::After
            } else {
                Phase::Measure
            },
            round,
            mark: closing || round == 1,
            error: None,
            page: None,
            prometheus: Some(source.clone()),
        };
        let mut out: Vec<Scrape> = Vec::with_capacity(self.pages.len() + self.failures.len());
        for (failure, closing) in self.failures {
            let start = if closing { g.t1_ns } else { g.t0_ns };
            out.push(Scrape {
                error: Some(failure),
                mark: false,
                ..line(start, closing, source.url.clone(), 0)
            });
        }
        for ((k, t), mut page) in self.pages {
            let closing = k == g.points;
            let start = if closing {
                g.t1_ns
            } else {
                g.t0_ns + k * g.step_ns
            };
            page.families = u32::try_from(page.values.len() + page.histograms.len()).unwrap_or(0);
            out.push(Scrape {
                page: Some(page),
                ..line(start, closing, self.targets[t].clone(), k + 1)
            });
        }
        out.sort_by_key(|s| (s.start_ns, s.round));
        out
    }

    fn target(&mut self, key: String) -> usize {
        match self.targets.iter().position(|t| *t == key) {
            Some(i) => i,
            None => {
                self.targets.push(key);
                self.targets.len() - 1
            }
        }
    }

    /// The step of a point: the closing point's, or the grid's nearest.
    fn step(&self, ms: i64, closing: bool) -> Option<u64> {
        match closing {
            true => Some(self.grid.points),
            false => self.grid.step_of(ms),
        }
    }

    /// The page of step `k` and target `t`, made when new unless past the bound.
    fn page(&mut self, k: u64, t: usize) -> Option<&mut Page> {
        let full = self.pages.len() >= self.max_lines;
        if full && !self.pages.contains_key(&(k, t)) {
            self.dropped += 1;
            return None;
        }
        let engine = self.engine;
        Some(self.pages.entry((k, t)).or_insert_with(|| Page {
            engine: Some(engine),
            ..Page::default()
        }))
    }

    /// A gauge or counter (or a sum read as one, or a counter read as a histogram's sum):
    /// the first of the row's names with series.
    fn add_scalar(&mut self, c: Concept, row: &Row, group: &[&Series], t: usize, closing: bool) {
        let names = series_names(row);
        let Some(s) = names
            .iter()
            .find_map(|n| group.iter().find(|s| name_of(s) == Some(n.as_str())))
        else {
            return;
        };
        for &(ms, v) in s.points.iter().filter(|p| p.1.is_finite()) {
            let Some(k) = self.step(ms, closing) else {
                continue;
            };
            let Some(page) = self.page(k, t) else {
                continue;
            };
            match row.read {
                Read::CounterAsSum => {
                    let h = Hist {
                        sum: Some(v),
                        ..Hist::default()
                    };
                    page.histograms.insert(c, h);
                }
                _ => {
                    page.values.insert(c, v);
                }
            }
        }
    }

    /// A histogram from its `_bucket` series (by `le`; `+Inf` is the count) and `_sum`.
    fn add_histogram(&mut self, c: Concept, row: &Row, group: &[&Series], t: usize, closing: bool) {
        let (bucket, sum) = (
            format!("{}_bucket", row.family),
            format!("{}_sum", row.family),
        );
        type At = BTreeMap<u64, (Vec<(f64, f64)>, Option<f64>)>;
        let mut at: At = BTreeMap::new();
        for s in group {
            let name = name_of(s);
            let le = match name {
                Some(n) if n == bucket => s.labels.get("le").and_then(|v| v.parse::<f64>().ok()),
                Some(n) if n == sum => None,
                _ => continue,
            };
            for &(ms, v) in s.points.iter().filter(|p| p.1.is_finite()) {
                let Some(k) = self.step(ms, closing) else {
                    continue;
                };
                let slot = at.entry(k).or_default();
                match (name == Some(bucket.as_str()), le) {
                    (true, Some(le)) => slot.0.push((le, v)),
                    (true, None) => {}
                    (false, _) => slot.1 = Some(v),
                }
            }
        }
        for (k, (mut buckets, sum)) in at {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let count = buckets.iter().find(|b| b.0 == f64::INFINITY).map(|b| b.1);
            buckets.retain(|b| b.0.is_finite());
            if buckets.len() > MAX_BUCKETS {
                continue;
            }
            let h = Hist {
                le: buckets.iter().map(|b| b.0).collect(),
                cum: buckets.iter().map(|b| b.1).collect(),
                count,
                sum,
            };
            if let Some(page) = self.page(k, t) {
                page.histograms.insert(c, h);
            }
        }
    }
}

/// A series' `__name__`.
fn name_of(s: &Series) -> Option<&str> {
    s.labels.get("__name__").map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::{measured_window, summarize};

    const SEC: u64 = 1_000_000_000;
    /// Unix ns of run-clock 0: 1,000,000 s.
    const WALL: u64 = 1_000_000 * SEC;

    fn series(name: &str, instance: &str, extra: &[(&str, &str)], points: &[(i64, f64)]) -> Series {
        let mut labels: Labels = [("__name__", name), ("job", "sim"), ("instance", instance)]
            .into_iter()
            .chain(extra.iter().copied())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        labels.retain(|_, v| !v.is_empty());
        Series {
            labels,
            points: points.to_vec(),
        }
    }

    /// Unix ms of run-clock second `s`.
    fn ms(s: f64) -> i64 {
        (WALL / 1_000_000) as i64 + (s * 1000.0) as i64
    }

    #[test]
    fn the_grid_hits_the_window_and_widens_past_its_bound() {
        let g = Grid::new((2 * SEC, 12 * SEC + 500), SEC, SEC, WALL, 100);
        assert_eq!((g.points, g.step_ms, g.widened), (11, 1000, false));
        assert_eq!((g.start_ms, g.after_ms), (ms(2.0), ms(13.0)));
        assert_eq!(g.step_of(ms(2.0)), Some(0));
        assert_eq!(g.step_of(ms(12.0) + 3), Some(10));
        assert_eq!(g.step_of(ms(13.0)), None);
        assert_eq!(g.chunks(4), [(0, 3), (4, 7), (8, 10)]);
        let wide = Grid::new((0, 3_600 * SEC), 100_000_000, SEC, WALL, 1_000);
        assert!(wide.widened && wide.points <= 1_000, "{wide:?}");
        assert_eq!(wide.step_ms, 3_604);
        let short = Grid::new((5 * SEC, 5 * SEC + 10), SEC, SEC, WALL, 2);
        assert_eq!((short.points, short.widened), (1, false));
    }

    /// The points of steps 0, 1, 2 (`v[..3]`) or of the closing point (`v[3]`).
    fn points(v: [f64; 4], closing: bool) -> Vec<(i64, f64)> {
        match closing {
            false => vec![(ms(0.0), v[0]), (ms(1.0), v[1]), (ms(2.0), v[2])],
            true => vec![(ms(3.5), v[3])],
        }
    }

    /// Two targets over three steps and a closing point: gauges summed per step, each
    /// target's counter rising (one restarting), a histogram's buckets and sum.
    fn answers(p: &mut Pages) {
        for closing in [false, true] {
            let at = |v| points(v, closing);
            let running = [
                series(
                    "vllm:num_requests_running",
                    "a:1",
                    &[],
                    &at([1.0, 4.0, 2.0, 0.0]),
                ),
                series(
                    "vllm:num_requests_running",
                    "b:1",
                    &[],
                    &at([0.0, f64::NAN, 3.0, 0.0]),
                ),
            ];
            p.add(Concept::Running, &running, closing);
            // b restarted after step 0.
            let tokens = [
                series(
                    "vllm:generation_tokens_total",
                    "a:1",
                    &[],
                    &at([10.0, 20.0, 40.0, 50.0]),
                ),
                series(
                    "vllm:generation_tokens_total",
                    "b:1",
                    &[],
                    &at([100.0, 5.0, 15.0, 25.0]),
                ),
            ];
            p.add(Concept::GenerationTokens, &tokens, closing);
            let name = "vllm:time_to_first_token_seconds_bucket";
            let ttft = [
                series(name, "a:1", &[("le", "0.1")], &at([0.0, 1.0, 2.0, 3.0])),
                series(name, "a:1", &[("le", "1")], &at([0.0, 2.0, 4.0, 6.0])),
                series(name, "a:1", &[("le", "+Inf")], &at([0.0, 2.0, 5.0, 7.0])),
                series(name, "a:1", &[("le", "x")], &at([9.0; 4])),
                series(
                    "vllm:time_to_first_token_seconds_sum",
                    "a:1",
                    &[],
                    &at([0.0, 0.5, 2.0, 3.0]),
                ),
            ];
            p.add(Concept::Ttft, &ttft, closing);
        }
    }

    #[test]
    fn pages_read_like_scrapes_of_each_target() {
        let grid = Grid::new((0, 2 * SEC + SEC / 2), SEC, SEC, WALL, 100);
        assert_eq!((grid.points, grid.after_ms), (3, ms(3.5)));
        let mut p = Pages::new(Engine::Vllm, grid, 1_000);
        answers(&mut p);
        p.fail(
            &ScrapeError::Query {
                error_type: "bad_data".into(),
                error: "no".into(),
            },
            false,
        );
        let source = PromSource {
            url: "http://prom:9090".into(),
            selector: None,
            step_ns: SEC,
        };
        let lines = p.into_scrapes(&source);
        // 1 failure, 2 targets × (3 steps + the closing point).
        assert_eq!(lines.len(), 9);
        assert!(lines[0].error.is_some() && lines[0].url == "http://prom:9090");
        let last = lines.last().unwrap();
        let stamp = 2 * SEC + SEC / 2;
        assert_eq!(
            (last.phase, last.start_ns, last.round),
            (Phase::After, stamp, 4)
        );
        assert_eq!(last.url, "{instance=\"b:1\",job=\"sim\"}");
        let (t0, t1) = measured_window(&lines).unwrap();
        assert_eq!((t0, t1), (0, stamp));
        let s = summarize(&lines, t0, t1, &[]);
        assert_eq!(s.source, "prometheus");
        assert_eq!(s.urls, ["http://prom:9090"]);
        let prom = s.prometheus.as_ref().unwrap();
        assert_eq!(prom.targets.len(), 2);
        assert_eq!((s.scrapes_ok, s.scrapes_failed), (8, 1));
        assert_eq!(s.failures_by_kind["query_bad_data"], 1);
        // Running per step: 1, 4 (b's NaN left out), 5, 0.
        let g = &s.gauges["running"];
        assert_eq!((g.samples, g.max, g.min), (4, Some(5.0), Some(0.0)));
        assert_eq!(g.mean, Some(2.5));
        // Tokens: a rose 40; b restarted (100 → 5) and rose 25 − 100 + 100 = 25.
        let c = &s.counters["generation_tokens"];
        assert_eq!((c.delta, c.resets), (65.0, 1));
        assert_eq!(c.per_s, Some(65.0 / 2.5));
        // TTFT: 7 observations, 3 at or below 0.1, 6 at or below 1; the bound "x" left out.
        let h = &s.histograms["ttft"];
        assert_eq!((h.count, h.sum_ms), (Some(7), Some(3000.0)));
        let p50 = h.p50_ms.unwrap();
        assert!((p50 - 250.0).abs() < 1e-9, "{p50}");
    }

    #[test]
    fn the_first_row_with_series_wins_and_pages_are_bounded() {
        let grid = Grid::new((0, 2 * SEC), SEC, SEC, WALL, 100);
        let mut p = Pages::new(Engine::Vllm, grid, 2);
        let kv = [
            series("vllm:gpu_cache_usage_perc", "a:1", &[], &[(ms(0.0), 0.9)]),
            series("vllm:kv_cache_usage_perc", "a:1", &[], &[(ms(0.0), 0.25)]),
            series("vllm:gpu_cache_usage_perc", "b:1", &[], &[(ms(1.0), 0.5)]),
            series("vllm:gpu_cache_usage_perc", "c:1", &[], &[(ms(2.0), 0.5)]),
        ];
        p.add(Concept::KvCacheUsage, &kv, false);
        assert_eq!(p.dropped, 1);
        let source = PromSource {
            url: "u".into(),
            selector: Some("{}".into()),
            step_ns: SEC,
        };
        let lines = p.into_scrapes(&source);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].value(Concept::KvCacheUsage), Some(0.25));
        assert_eq!(lines[1].value(Concept::KvCacheUsage), Some(0.5));
        assert_eq!(lines[0].page.as_ref().unwrap().families, 1);
        assert_eq!(target_key(&Labels::new()), "{}");
    }
}
