//! The files a sweep or search leaves (after the analysis; the last stage beside `report`):
//! `sweep.json` (every point's full summaries plus the analysis), `sweep.csv` (one row per
//! point, medians and spread), and `search.json`/`search.csv` (every probe in order). Writes
//! files only; never prints.

use crate::summary::study::SearchResult;
use crate::summary::study::{Point, Sweep};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// Writes `sweep.json` and `sweep.csv` to `dir`.
pub fn write_sweep(dir: &Path, s: &Sweep) -> io::Result<()> {
    crate::rt::file::write_json(dir, "sweep.json", s)?;
    crate::rt::file::write_atomic(&dir.join("sweep.csv"), sweep_csv(s).as_ref())
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.6}")).unwrap_or_default()
}

/// One row per point: load, pass, throughput/goodput/achieved load (median, min, max), the
/// curve's latency medians, then each SLO's median value.
pub fn sweep_csv(s: &Sweep) -> String {
    let mut out = String::new();
    let mut head = vec![
        "load".to_string(),
        "pass".into(),
        "repeats".into(),
        "measured_ok".into(),
        "throughput_requests_per_s".into(),
        "throughput_min".into(),
        "throughput_max".into(),
        "output_tokens_per_s".into(),
        "goodput_requests_per_s".into(),
        "achieved_concurrency".into(),
        "achieved_request_rate".into(),
    ];
    let curve_keys: Vec<String> = s
        .points
        .first()
        .map(|p| p.latency_ms.keys().cloned().collect())
        .unwrap_or_default();
    head.extend(curve_keys.iter().map(|k| format!("{k}_ms")));
    head.extend(s.slos.iter().map(|b| format!("slo {}", b.text)));
    head.extend(["valid".into(), "interrupted".into()]);
    let _ = writeln!(
        out,
        "{}",
        head.iter()
            .map(|h| csv_field(h))
            .collect::<Vec<_>>()
            .join(",")
    );
    for p in &s.points {
        let _ = writeln!(out, "{}", row(p, &curve_keys).join(","));
    }
    out
}

fn row(p: &Point, curve_keys: &[String]) -> Vec<String> {
    let t = &p.throughput_requests_per_s;
    let mut r = vec![
        format!("{}", p.load),
        p.pass.to_string(),
        p.runs.len().to_string(),
        p.measured_ok.to_string(),
        num(t.median),
        num(t.min),
        num(t.max),
        num(p.output_tokens_per_s.median),
        num(p.goodput_requests_per_s.median),
        num(p.achieved_concurrency.median),
        num(p.achieved_request_rate.median),
    ];
    r.extend(
        curve_keys
            .iter()
            .map(|k| num(p.latency_ms.get(k).and_then(|s| s.median))),
    );
    r.extend(p.slos.iter().map(|c| num(c.value_ms.median)));
    r.extend([p.valid.to_string(), p.interrupted.to_string()]);
    r
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '<']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes `search.json` and `search.csv` to `dir`, creating it if needed.
pub fn write_search(dir: &Path, r: &SearchResult) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    crate::rt::file::write_json(dir, "search.json", r)?;
    let mut csv = String::from("iteration,phase,load,pass_raw,pass_smoothed,bracket_lo,bracket_hi,throughput_requests_per_s,goodput_requests_per_s");
    for b in &r.slos {
        csv.push(',');
        csv.push_str(&csv_field(&format!("slo {}", b.text)));
    }
    csv.push_str(",valid,interrupted\n");
    for p in &r.probes {
        let mut f = vec![
            p.iteration.to_string(),
            p.phase.clone(),
            format!("{}", p.load),
            p.pass_raw.to_string(),
            p.pass_smoothed.to_string(),
            num(p.bracket.0),
            num(p.bracket.1),
            num(p.throughput_requests_per_s),
            num(p.goodput_requests_per_s),
        ];
        f.extend(p.values_ms.iter().map(|v| num(*v)));
        f.extend([p.valid.to_string(), p.interrupted.to_string()]);
        csv.push_str(&f.join(","));
        csv.push('\n');
    }
    crate::rt::file::write_atomic(&dir.join("search.csv"), csv.as_ref())
}
