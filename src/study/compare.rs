//! `ringbench compare A B` (after **summary**, beside report): two runs or two sweeps side by
//! side. Each row is one figure in A and B, their difference, and whether the difference
//! exceeds the run-to-run spread — known only where repeats measured it (a sweep run with
//! `--repeats ≥ 2`); for single runs it is left unknown rather than guessed. Reads files;
//! never prints.

use crate::summary::metric::{role, Metric};
use crate::summary::study::Row;
use crate::summary::study::Spread;
use crate::summary::study::Sweep;
use crate::summary::study::CURVE_STATS;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why two results could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The path holds neither a `summary.json` nor a `sweep.json`.
    #[error("{0}: no summary.json or sweep.json there (give a run's or a sweep's --out folder)")]
    NotFound(PathBuf),
    /// The file cannot be read, or is not a summary or a sweep this version reads.
    #[error("{path}: {why}")]
    Bad {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// One path holds a run, the other a sweep.
    #[error("cannot compare a run with a sweep ({0} vs {1})")]
    Mixed(PathBuf, PathBuf),
}

/// What a path holds.
pub enum Loaded {
    /// A run's `summary.json`, kept as JSON (its figures are read by key path).
    Run(Value),
    /// A sweep's `sweep.json`.
    Sweep(Box<Sweep>),
}

/// Reads a run or a sweep: `path` is a folder (its `sweep.json`, else its `summary.json`) or either
/// file.
pub fn load(path: &Path) -> Result<Loaded, CompareError> {
    let candidates = if path.is_dir() {
        vec![path.join("sweep.json"), path.join("summary.json")]
    } else {
        vec![path.to_path_buf()]
    };
    let file = candidates
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| CompareError::NotFound(path.to_path_buf()))?;
    let bad = |why: String| CompareError::Bad {
        path: file.clone(),
        why,
    };
    let bytes = std::fs::read(&file).map_err(|e| bad(e.to_string()))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    if v.get("points").is_some() {
        let s: Sweep =
            serde_json::from_value(v).map_err(|e| bad(format!("not a sweep.json: {e}")))?;
        Ok(Loaded::Sweep(Box::new(s)))
    } else if v.get("latency_ms").is_some() {
        Ok(Loaded::Run(v))
    } else {
        Err(bad("neither a summary.json nor a sweep.json".into()))
    }
}

impl Row {
    fn new(name: String, a: Option<f64>, b: Option<f64>, spread: Option<f64>) -> Row {
        let change = match (a, b) {
            (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a.abs()),
            _ => None,
        };
        let significant = match (a, b, spread) {
            (Some(a), Some(b), Some(s)) => Some((b - a).abs() > s),
            _ => None,
        };
        Row {
            name,
            a,
            b,
            change,
            spread,
            significant,
        }
    }
}

/// The figures two runs are compared on: throughput and load, then the curve metrics'
/// percentiles (`role::CURVE` × `CURVE_STATS`), as `summary.json` paths.
fn run_figures() -> Vec<String> {
    let fixed = [
        "throughput.requests_per_s",
        "throughput.output_tokens_per_s",
        "throughput.goodput_requests_per_s",
        "achieved.concurrency_mean",
    ];
    let curve = Metric::with(role::CURVE).flat_map(|m| {
        CURVE_STATS
            .iter()
            .map(move |st| format!("latency_ms.{}.{st}", m.key()))
    });
    fixed.iter().map(|f| f.to_string()).chain(curve).collect()
}

fn at(v: &Value, path: &str) -> Option<f64> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))?.as_f64()
}

/// Rows for two loaded results of the same kind.
pub fn compare(a: &Loaded, b: &Loaded, names: (&Path, &Path)) -> Result<Vec<Row>, CompareError> {
    match (a, b) {
        (Loaded::Run(a), Loaded::Run(b)) => Ok(run_figures()
            .into_iter()
            .map(|f| {
                let (va, vb) = (at(a, &f), at(b, &f));
                Row::new(f, va, vb, None)
            })
            .collect()),
        (Loaded::Sweep(a), Loaded::Sweep(b)) => Ok(compare_sweeps(a, b)),
        _ => Err(CompareError::Mixed(names.0.into(), names.1.into())),
    }
}

fn range(s: &Spread) -> Option<f64> {
    if s.values.iter().flatten().count() < 2 {
        return None;
    }
    Some(s.max? - s.min?)
}

fn spread_row(name: String, a: &Spread, b: &Spread) -> Row {
    let spread = match (range(a), range(b)) {
        (Some(x), Some(y)) => Some(x.max(y)),
        _ => None,
    };
    Row::new(name, a.median, b.median, spread)
}

/// Points matched by load; throughput, goodput and the curve's latencies at each, then the
/// analyses' headline figures.
fn compare_sweeps(a: &Sweep, b: &Sweep) -> Vec<Row> {
    let mut rows = vec![];
    for pa in &a.points {
        let Some(pb) = b.points.iter().find(|p| p.load == pa.load) else {
            continue;
        };
        let l = pa.load;
        rows.push(spread_row(
            format!("@{l} throughput req/s"),
            &pa.throughput_requests_per_s,
            &pb.throughput_requests_per_s,
        ));
        rows.push(spread_row(
            format!("@{l} goodput req/s"),
            &pa.goodput_requests_per_s,
            &pb.goodput_requests_per_s,
        ));
        for (k, sa) in &pa.latency_ms {
            if let Some(sb) = pb.latency_ms.get(k) {
                rows.push(spread_row(format!("@{l} {k} ms"), sa, sb));
            }
        }
    }
    let (x, y) = (&a.analysis, &b.analysis);
    rows.push(Row::new(
        "knee load".into(),
        x.knee.as_ref().map(|k| k.load),
        y.knee.as_ref().map(|k| k.load),
        None,
    ));
    rows.push(Row::new(
        "highest passing load".into(),
        x.highest_pass,
        y.highest_pass,
        None,
    ));
    rows.push(Row::new(
        "SLO crossing".into(),
        x.slo_crossing,
        y.slo_crossing,
        None,
    ));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_counts_only_beyond_the_measured_spread() {
        let a = Spread::of(vec![Some(100.0), Some(104.0), Some(98.0)]);
        let b = Spread::of(vec![Some(103.0), Some(101.0), Some(105.0)]);
        let r = spread_row("x".into(), &a, &b);
        assert_eq!(r.spread, Some(6.0));
        assert_eq!(r.significant, Some(false));
        let c = Spread::of(vec![Some(120.0), Some(121.0), Some(119.0)]);
        let r = spread_row("x".into(), &a, &c);
        assert_eq!(r.significant, Some(true));
        assert!((r.change.unwrap() - 0.2).abs() < 1e-9);
        let single = Spread::of(vec![Some(1.0)]);
        assert_eq!(spread_row("x".into(), &single, &single).significant, None);
    }

    #[test]
    fn runs_compare_by_path_and_missing_is_named() {
        let a = serde_json::json!({"latency_ms": {"ttft": {"p50": 10.0}}, "throughput": {"requests_per_s": 5.0}});
        let b = serde_json::json!({"latency_ms": {"ttft": {"p50": 12.0}}, "throughput": {"requests_per_s": 5.0}});
        let rows = compare(
            &Loaded::Run(a),
            &Loaded::Run(b),
            (Path::new("a"), Path::new("b")),
        )
        .unwrap();
        let ttft = rows
            .iter()
            .find(|r| r.name == "latency_ms.ttft.p50")
            .unwrap();
        assert!((ttft.change.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(ttft.significant, None);
        let e = load(Path::new("/nonexistent-ringbench"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("summary.json"), "{e}");
    }
}
