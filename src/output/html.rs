//! `report.html` and `plots/*.{svg,png}` of a run or a sweep (the last stage, beside **report**):
//! one self-contained file — styles, data and scripts inline (uPlot, MIT, from `assets/uplot/`,
//! and `report.js`), nothing fetched, so it opens offline from `file://` — with the run's
//! context and verdict (`html_context`), the tables, and interactive charts (zoom, values on
//! hover, log latency axes). Each chart's static SVG stays in the page for a browser without
//! scripts, and in `plots/` beside its PNG for papers. Reads finished results and the run
//! folders they were written to; writes files; never prints.

use super::html_context::escape;
use crate::output::plot::{self, Chart};
use crate::summary::metric::{role, Metric};
use crate::summary::study::{Point, Sweep};
use crate::summary::Summary;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1500px;margin:24px auto;padding:0 16px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#f3f3f3}.pass{color:#070}.fail{color:#b00;font-weight:bold}.warn{color:#a60}\
table.context td{text-align:left}table.context th{text-align:left;white-space:nowrap}\
.verdict{font-size:1.15em}.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:12px}\
figure.chart{margin:0;border:1px solid #eee;padding:4px}figure.chart svg{width:100%;height:auto}\
figcaption{font-size:.85em;color:#555}figcaption button{margin-right:8px}.files{margin-left:1em;white-space:nowrap}";

/// uPlot 1.6.32 (MIT, `assets/uplot/`): the charts' library, embedded.
const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
/// The page's own script: draws each chart spec with uPlot, keeps score of errors.
const REPORT_JS: &str = include_str!("report.js");

fn num(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.2}"))
}

/// A chart of the page, and the name of its static files under `plots/`.
struct Figure {
    name: String,
    chart: Chart,
}

/// Writes each chart that has static files to `dir/plots/NAME.svg` and `NAME.png`, and
/// returns the SVGs to inline (`None` for a chart drawn only live, or without `plot`).
fn render(dir: &Path, figures: &[Figure]) -> io::Result<Vec<Option<String>>> {
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots)?;
    let mut out = vec![];
    for Figure { name, chart: c } in figures {
        let svg = match c.scatter {
            true => None,
            false => c.svg().map_err(io::Error::other)?,
        };
        if let Some(svg) = &svg {
            crate::rt::file::write_atomic(&plots.join(format!("{name}.svg")), svg.as_ref())?;
            if let Some(png) = c.png().map_err(io::Error::other)? {
                crate::rt::file::write_atomic(&plots.join(format!("{name}.png")), &png)?;
            }
        }
        // Drop the XML prolog, if any: the SVG goes inline.
        out.push(svg.map(|svg| svg[svg.find("<svg").unwrap_or(0)..].to_string()));
    }
    Ok(out)
}

/// The charts' section: one `<figure>` per chart (the live chart, the static SVG under it
/// until the script replaces it, the note and the static files), then the specs the script
/// draws, as JSON (`<` escaped, so no string in it can close the script element).
fn figures_html(dir: &Path, figures: Vec<Figure>) -> io::Result<(String, usize)> {
    let figures: Vec<Figure> = (figures.into_iter())
        .filter(|f| f.chart.ranges().is_some())
        .collect();
    let svgs = render(dir, &figures)?;
    let mut b = String::from("<div class=\"plots\">\n");
    for (i, (f, svg)) in figures.iter().zip(&svgs).enumerate() {
        let mut caption = f.chart.note.as_deref().map(escape).unwrap_or_default();
        if svg.is_some() {
            let n = &f.name;
            let _ = write!(
                caption,
                " <span class=\"files\">static: <a href=\"plots/{n}.svg\">SVG</a> · <a href=\"plots/{n}.png\">PNG</a></span>"
            );
        }
        let _ = writeln!(
            b,
            "<figure class=\"chart\" id=\"chart-{i}\"><div class=\"live\"></div><div class=\"static\">{}</div><figcaption>{caption}</figcaption></figure>",
            svg.as_deref().unwrap_or("")
        );
    }
    b.push_str("</div>\n");
    let specs: Vec<&Chart> = figures.iter().map(|f| &f.chart).collect();
    let json = serde_json::to_string(&specs).map_err(io::Error::other)?;
    let _ = writeln!(
        b,
        "<script type=\"application/json\" id=\"charts\">{}</script>",
        json.replace('<', "\\u003c")
    );
    Ok((b, figures.len()))
}

fn page(title: &str, body: &str, charts: usize) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}\n{UPLOT_CSS}</style></head><body data-charts-expected=\"{charts}\">\n\
         <p id=\"chart-errors\" class=\"fail\" hidden></p>\n{body}\
         <script>{REPORT_JS}</script>\n<script>{UPLOT_JS}</script>\n</body></html>\n",
        escape(title)
    )
}

/// The per-run charts: CDFs of TTFT and ITL and the per-request TTFT scatter from
/// `run_dir/requests.jsonl`, the per-interval timeline when the summary carries one (its
/// partial last interval left out), and the server's gauges when it was scraped.
fn run_charts(
    run_dir: &Path,
    summary: &serde_json::Value,
    records: Option<&plot::RunRecords>,
) -> Vec<Figure> {
    let mut charts = vec![];
    if let Some(r) = records {
        let cdf = |name: &str, h| Figure {
            name: format!("cdf_{}", name.to_lowercase()),
            chart: plot::cdf_chart_from_histogram(name, h),
        };
        charts.extend([cdf("TTFT", &r.ttft), cdf("ITL", &r.itl)]);
    }
    let mut timeline = plot::timeline_charts(summary);
    let ts = &summary["timeseries"];
    let last_t_s = ts["points"]
        .as_array()
        .and_then(|p| p.last()?["t_s"].as_f64());
    if let (Some(last), Some(width)) = (last_t_s, ts["interval_s"].as_f64()) {
        let end_s = records.and_then(|r| r.end_s);
        plot::drop_partial_tail(&mut timeline, last, width, end_s);
        timeline.retain(plot::shows_a_line);
    }
    let server = server_scrapes(run_dir)
        .map(|s| plot::server_timeline_charts(&s))
        .unwrap_or_default();
    // The scatter and the server's gauges right under the client's TTFT and ITL, on the
    // same time axis.
    let at = timeline
        .iter()
        .position(|c| c.title.starts_with(plot::LATENCY_TIMELINE))
        .map_or(timeline.len(), |i| i + 1);
    let n = server.len();
    let scatter = records.map(|r| plot::ttft_scatter(&r.scatter));
    timeline.splice(at..at, scatter.into_iter().chain(server));
    if n > 0 {
        plot::share_x(&mut timeline);
    }
    let mut i = 0;
    for c in timeline {
        let name = match c.scatter {
            true => "ttft_scatter".to_string(),
            false => format!("timeline_{i}"),
        };
        i += usize::from(!c.scatter);
        charts.push(Figure { name, chart: c });
    }
    charts
}

/// The run's scrapes of the server's metrics, when it has them (`server_metrics.jsonl`).
fn server_scrapes(run_dir: &Path) -> Option<Vec<crate::scrape::Scrape>> {
    use crate::scrape::{join::FILE_NAME, jsonl, scraper::DEFAULT_MAX_SCRAPES};
    let back = jsonl::read_file(&run_dir.join(FILE_NAME), 2 * DEFAULT_MAX_SCRAPES).ok()?;
    Some(back.scrapes)
}

fn latency_table(s: &Summary) -> String {
    let v = serde_json::to_value(&s.latency_ms).unwrap_or_default();
    let mut t = String::from("<table><tr><th>metric (ms)</th><th>count</th><th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n");
    for m in Metric::with(role::PLOT).map(Metric::key) {
        let st = &v[m];
        let _ = write!(t, "<tr><th>{m}</th><td>{}</td>", st["count"]);
        for k in ["mean", "p50", "p90", "p95", "p99", "p99_9", "max"] {
            let _ = write!(t, "<td>{}</td>", num(st[k].as_f64()));
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}

/// With several `--url`s, one row per server; nothing otherwise.
fn endpoints_table(s: &Summary) -> String {
    let Some(rows) = &s.endpoints else {
        return String::new();
    };
    let mut t = String::from(
        "<h2>Endpoints</h2>\n<table><tr><th>#</th><th>URL</th><th>sent</th><th>share %</th><th>ok</th><th>failed</th><th>req/s</th><th>output tok/s</th><th>TTFT p50 (ms)</th><th>TTFT p99 (ms)</th><th>ITL p50 (ms)</th><th>E2E p50 (ms)</th><th>E2E p99 (ms)</th></tr>\n",
    );
    for r in rows {
        let cells = [
            escape(&r.url),
            r.tally.sent.to_string(),
            num(r.share_percent),
            r.tally.ok.to_string(),
            r.tally.failed.to_string(),
            num(r.requests_per_s),
            num(r.output_tokens_per_s),
            num(r.ttft_ms.p50),
            num(r.ttft_ms.p99),
            num(r.itl_ms.p50),
            num(r.e2e_ms.p50),
            num(r.e2e_ms.p99),
        ];
        let _ = writeln!(
            t,
            "<tr><th>{}</th><td>{}</td></tr>",
            r.endpoint,
            cells.join("</td><td>")
        );
    }
    t.push_str("</table>\n");
    t
}

/// `dir/report.html` for one run written to `dir`.
pub fn write_run_report(dir: &Path, s: &Summary) -> io::Result<PathBuf> {
    write_run_report_from(dir, s, plot::read_run(dir).ok().as_ref())
}

/// `write_run_report` with what the charts take from the records already read (`None`: the
/// charts that need them are left out).
pub fn write_run_report_from(
    dir: &Path,
    s: &Summary,
    records: Option<&plot::RunRecords>,
) -> io::Result<PathBuf> {
    let value = serde_json::to_value(s).map_err(io::Error::other)?;
    let (plots, n) = figures_html(dir, run_charts(dir, &value, records))?;
    let mut b = String::new();
    let _ = writeln!(b, "<h1>ringbench run — {}</h1>", escape(&s.started_at));
    b.push_str(&super::html_context::run_head(s));
    b.push_str("<h2>Latency</h2>\n");
    b.push_str(&latency_table(s));
    b.push_str(&endpoints_table(s));
    warnings(&mut b, &s.warnings);
    b.push_str("<h2>Plots</h2>\n<p>Drag across a chart to zoom, double-click to zoom out; hover for values.</p>\n");
    b.push_str(&plots);
    let path = dir.join("report.html");
    crate::rt::file::write_atomic(&path, page("ringbench run", &b, n).as_ref())?;
    Ok(path)
}

fn warnings(b: &mut String, w: &[String]) {
    if w.is_empty() {
        return;
    }
    b.push_str("<h2>Warnings</h2><ul>\n");
    for x in w {
        let _ = writeln!(b, "<li class=\"warn\">{}</li>", escape(x));
    }
    b.push_str("</ul>\n");
}

fn points_table(s: &Sweep) -> String {
    let mut t = format!(
        "<table><tr><th>{}</th><th>verdict</th><th>throughput req/s (min–max)</th><th>goodput req/s</th><th>achieved concurrency</th><th>achieved rate</th><th>measured ok</th>",
        s.axis.name()
    );
    for b in &s.slos {
        let _ = write!(t, "<th>{}</th>", escape(&b.text));
    }
    t.push_str("</tr>\n");
    for p in &s.points {
        t.push_str(&point_row(p));
    }
    t.push_str("</table>\n");
    t
}

/// A point's row; its verdict in the console's words (`console_study::point_verdict`).
fn point_row(p: &Point) -> String {
    let tp = &p.throughput_requests_per_s;
    let verdict = match super::console_study::point_verdict(p) {
        "" => "<td>–</td>".to_string(),
        w @ "PASS" => format!("<td class=\"pass\">{w}</td>"),
        w => format!("<td class=\"fail\">{w}</td>"),
    };
    let mut r = format!(
        "<tr><th>{}</th>{verdict}<td>{} ({}–{})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        p.load,
        num(tp.median),
        num(tp.min),
        num(tp.max),
        num(p.goodput_requests_per_s.median),
        num(p.achieved_concurrency.median),
        num(p.achieved_request_rate.median),
        p.measured_ok
    );
    for c in &p.slos {
        let class = if c.pass { "pass" } else { "fail" };
        let _ = write!(r, "<td class=\"{class}\">{}</td>", num(c.value_ms.median));
    }
    r.push_str("</tr>\n");
    r
}

/// `dir/report.html` for a sweep written to `dir` (its points under `dir/points/`).
pub fn write_sweep_report(dir: &Path, s: &Sweep) -> io::Result<PathBuf> {
    let mut charts = vec![Figure {
        name: "throughput".into(),
        chart: plot::throughput_chart(s),
    }];
    for m in Metric::with(role::CURVE).map(Metric::key) {
        charts.push(Figure {
            name: format!("latency_{m}"),
            chart: plot::latency_chart(s, m),
        });
    }
    // The CDFs and timeline of the most loaded point that still passes (or the last one).
    let focus = s
        .points
        .iter()
        .rposition(|p| p.pass)
        .or(s.points.len().checked_sub(1));
    let mut focus_note = String::new();
    if let Some(i) = focus {
        let p = &s.points[i];
        let run_dir = dir.join(crate::summary::study::point_dir_name(s.axis, p.load, 0));
        let v = p
            .runs
            .first()
            .map(|r| serde_json::to_value(r).unwrap_or_default());
        let records = plot::read_run(&run_dir).ok();
        charts.extend(run_charts(
            &run_dir,
            &v.unwrap_or_default(),
            records.as_ref(),
        ));
        focus_note = format!(
            "The CDFs, timelines and scatter below are of the run at load {}.",
            p.load
        );
    }
    let (plots, n) = figures_html(dir, charts)?;
    let mut b = String::from("<h1>ringbench sweep</h1>\n");
    b.push_str(&super::html_context::sweep_head(s));
    b.push_str("<h2>Analysis</h2>\n");
    b.push_str(&analysis_html(s));
    b.push_str("<h2>Points</h2>\n");
    b.push_str(&points_table(s));
    warnings(&mut b, &s.analysis.warnings);
    b.push_str("<h2>Plots</h2>\n<p>Drag across a chart to zoom, double-click to zoom out; hover for values.</p>\n");
    let _ = writeln!(b, "<p>{}</p>", escape(&focus_note));
    b.push_str(&plots);
    let path = dir.join("report.html");
    crate::rt::file::write_atomic(&path, page("ringbench sweep", &b, n).as_ref())?;
    Ok(path)
}

fn analysis_html(s: &Sweep) -> String {
    let a = &s.analysis;
    let mut b = String::from("<ul>\n");
    let slos: Vec<String> = s.slos.iter().map(|x| escape(&x.text)).collect();
    let _ = writeln!(
        b,
        "<li>{} points over {}, {} repeat(s) each; SLOs: {}</li>",
        s.points.len(),
        s.axis.name(),
        s.repeats,
        if slos.is_empty() {
            "none".into()
        } else {
            slos.join(", ")
        }
    );
    match &a.knee {
        Some(k) => {
            let _ = writeln!(
                b,
                "<li><b>Knee</b>: load {} ({:.2} req/s, e2e p50 {} ms), by {}</li>",
                k.load,
                k.throughput,
                num(k.latency_ms),
                escape(&k.method)
            );
        }
        None => {
            let _ = writeln!(
                b,
                "<li><b>Knee</b>: none — {}</li>",
                escape(a.knee_note.as_deref().unwrap_or(""))
            );
        }
    }
    let part = |p: &crate::summary::study::KneePart| match &p.knee {
        Some(k) => format!("load {}", k.load),
        None => format!("none — {}", escape(p.note.as_deref().unwrap_or(""))),
    };
    let _ = writeln!(
        b,
        "<li>Throughput knee (vs load): {} · latency knee (e2e p50 vs load): {}</li>",
        part(&a.throughput_knee),
        part(&a.latency_knee)
    );
    if s.interrupted {
        b.push_str("<li><b>Interrupted</b>: the sweep was stopped by a signal; the last point is partial and decides nothing</li>\n");
    }
    let invalid: Vec<String> = s
        .points
        .iter()
        .filter(|p| !p.valid)
        .map(|p| p.load.to_string())
        .collect();
    if !invalid.is_empty() {
        let _ = writeln!(
            b,
            "<li><b>Invalid</b> (the client's own overhead) at loads {}</li>",
            invalid.join(", ")
        );
    }
    if !s.slos.is_empty() {
        let _ = writeln!(
            b,
            "<li><b>Highest passing load</b>: {} · <b>SLO crossing</b> ≈ {} ({})</li>",
            a.highest_pass.map_or("none".into(), |x| x.to_string()),
            num(a.slo_crossing),
            escape(a.crossing_note.as_deref().unwrap_or(""))
        );
    }
    b.push_str("</ul>\n");
    b
}
