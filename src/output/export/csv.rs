//! Part of the exports (… → summary → report → **export**): `summary.csv`, one row per
//! metric and statistic of `summary.json` — `metric,statistic,value,unit,small_sample` —
//! so that a spreadsheet can filter, say, every `p99` of every latency. Distributions give
//! one row per statistic (`count`, `mean`, `std`, `min`, `max`, each percentile); plain
//! figures give one row with statistic `value`. `null` figures are empty cells. Computes
//! nothing: every value is read from the `Summary`.

use crate::output::{write_err, WriteError};
use crate::summary::Summary;
use serde_json::Value;
use std::path::Path;

/// The file `write` writes.
pub const FILE_NAME: &str = "summary.csv";

/// The sections of `summary.json` that hold figures (config, host and texts are left out).
/// A section that is `null` for this run (`tools` without tools, `pooling` for a generating
/// endpoint) gives no rows.
const SECTIONS: [&str; 10] = [
    "counts",
    "duration_s",
    "throughput",
    "target",
    "achieved",
    "latency_ms",
    "tokens",
    "tools",
    "pooling",
    "overhead",
];

/// Writes `summary.csv` to `out`.
pub fn write(out: &Path, summary: &Summary) -> Result<(), WriteError> {
    let path = out.join(FILE_NAME);
    let text = render(summary);
    crate::rt::file::write_atomic(&path, text.as_bytes()).map_err(write_err(&path))
}

/// The text of `summary.csv` for `summary`, header line first.
pub fn render(summary: &Summary) -> String {
    let v = serde_json::to_value(summary).unwrap_or(Value::Null);
    let mut csv = String::from("metric,statistic,value,unit,small_sample\n");
    for key in SECTIONS.into_iter().filter(|k| !v[*k].is_null()) {
        walk(key, &v[key], &mut csv);
    }
    csv
}

/// A stats object: `count` and `small_sample` beside the figures.
fn is_stats(v: &Value) -> bool {
    v.get("count").is_some() && v.get("small_sample").is_some()
}

fn walk(path: &str, v: &Value, csv: &mut String) {
    match v {
        Value::Object(m) if is_stats(v) => {
            let small: Vec<&str> = m["small_sample"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (stat, x) in m.iter().filter(|(k, _)| *k != "small_sample") {
                let unit = if stat == "count" { "" } else { unit_of(path) };
                row(csv, path, stat, x, unit, small.contains(&stat.as_str()));
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                // The simulator's own report and per-worker rows are not run figures.
                if k == "sim" || k == "workers" {
                    continue;
                }
                walk(&format!("{path}.{k}"), x, csv);
            }
        }
        Value::Number(_) | Value::Null | Value::Bool(_) => {
            row(csv, path, "value", v, unit_of(path), false)
        }
        Value::String(_) | Value::Array(_) => {}
    }
}

fn row(csv: &mut String, metric: &str, stat: &str, v: &Value, unit: &str, small: bool) {
    let value = match v {
        Value::Null => String::new(),
        other => other.to_string(),
    };
    csv.push_str(&format!("{metric},{stat},{value},{unit},{small}\n"));
}

/// The unit a key path names (`latency_ms.ttft` → ms).
fn unit_of(path: &str) -> &'static str {
    let has = |s: &str| path.split('.').any(|seg| seg.ends_with(s));
    if has("_ms") {
        "ms"
    } else if has("_per_s") || has("_rate") {
        "1/s"
    } else if has("_s") {
        "s"
    } else if has("_percent") || has("_percent_max") {
        "%"
    } else if has("_ns") || path.contains("cpu_ns_per") {
        "ns"
    } else if has("_bytes") {
        "bytes"
    } else {
        ""
    }
}
