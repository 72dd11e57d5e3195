//! Percentile SLOs of a sweep or search (`--slo ttft:p95<500ms`), read from a finished
//! `Summary` (after **summary**, beside report). Unlike run's per-request `--goodput KEY:MS`,
//! a bound here applies to one statistic of a whole run: any distribution of `latency_ms`,
//! any percentile (or `mean`, `max`). This module never runs anything and never prints.

use crate::summary::metric::{role, Metric};
use crate::summary::study::SloBound;
use crate::summary::{percentile_key, Summary};

/// `--slo` that cannot be read: the message names the flag and shows the form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--slo '{text}': {why} (like --slo ttft:p95<500ms or --slo itl:p99.9<50ms)")]
pub struct SloError {
    /// The `--slo` value as given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl SloBound {
    /// Reads `METRIC:STAT<BOUND`, like `ttft:p95<500ms`: a metric an SLO may bound (`e2el` is
    /// `e2e`), `pN`, `mean` or `max`, and a bound in `us`, `ms` (the default) or `s`; `<=` reads as
    /// `<`.
    pub fn parse(text: &str) -> Result<SloBound, SloError> {
        let bad = |why: String| SloError {
            text: text.to_string(),
            why,
        };
        let (metric, rest) = text
            .split_once(':')
            .ok_or_else(|| bad("expected METRIC:STAT<BOUND".into()))?;
        let metric = metric.trim().to_ascii_lowercase();
        let metric = if metric == "e2el" {
            "e2e".into()
        } else {
            metric
        };
        if !Metric::from_key(&metric).is_some_and(|m| m.has(role::SLO)) {
            let keys: Vec<&str> = Metric::with(role::SLO).map(Metric::key).collect();
            return Err(bad(format!(
                "unknown metric; use one of {}",
                keys.join(", ")
            )));
        }
        let (stat, bound) = rest
            .split_once("<=")
            .or_else(|| rest.split_once('<'))
            .ok_or_else(|| bad("expected a '<' between the statistic and the bound".into()))?;
        let (stat, percentile) = parse_stat(stat.trim()).map_err(bad)?;
        let max_ms = parse_ms(bound.trim()).map_err(bad)?;
        Ok(SloBound {
            text: text.to_string(),
            metric,
            stat,
            percentile,
            max_ms,
        })
    }

    /// The run's value of this statistic, in ms; `None` when the run has no samples.
    pub fn value_in(&self, s: &Summary) -> Option<f64> {
        let stats = serde_json::to_value(&s.latency_ms).ok()?;
        stats[&self.metric][&self.stat].as_f64()
    }

    /// Whether the percentile came from too few samples to mean much in this run.
    pub fn small_sample_in(&self, s: &Summary) -> bool {
        let stats = serde_json::to_value(&s.latency_ms).unwrap_or_default();
        stats[&self.metric]["small_sample"]
            .as_array()
            .is_some_and(|keys| keys.iter().any(|k| k.as_str() == Some(&self.stat)))
    }

    /// The value is below `max_ms`; a missing value fails.
    pub fn passes(&self, value_ms: Option<f64>) -> bool {
        value_ms.is_some_and(|v| v < self.max_ms)
    }

    /// `ttft p95`, for tables and plot legends.
    pub fn label(&self) -> String {
        format!("{} {}", self.metric, self.stat.replace('_', "."))
    }
}

fn parse_stat(stat: &str) -> Result<(String, Option<f64>), String> {
    let stat = stat.to_ascii_lowercase();
    if stat == "mean" || stat == "max" {
        return Ok((stat, None));
    }
    let p: f64 = stat
        .strip_prefix('p')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("'{stat}' is not a statistic; use p50, p95, p99.9, mean or max"))?;
    if !(p > 0.0 && p < 100.0) {
        return Err(format!("percentile {p} is outside (0, 100)"));
    }
    Ok((percentile_key(p), Some(p)))
}

fn parse_ms(bound: &str) -> Result<f64, String> {
    let split = bound
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(bound.len());
    let (num, unit) = bound.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{bound}' is not a duration"))?;
    let ms = match unit.trim() {
        "ms" | "" => v,
        "s" => v * 1e3,
        "us" => v / 1e3,
        u => return Err(format!("unknown unit '{u}' (use us, ms or s)")),
    };
    if !(ms.is_finite() && ms > 0.0) {
        return Err("the bound must be above 0".into());
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_any_metric_and_percentile() {
        let s = SloBound::parse("ttft:p95<500ms").unwrap();
        assert_eq!(
            (s.metric.as_str(), s.stat.as_str(), s.max_ms),
            ("ttft", "p95", 500.0)
        );
        let s = SloBound::parse("ITL:p99.9<=0.05s").unwrap();
        assert_eq!(
            (s.metric.as_str(), s.stat.as_str(), s.max_ms),
            ("itl", "p99_9", 50.0)
        );
        assert_eq!(s.percentile, Some(99.9));
        let s = SloBound::parse("e2e:mean<2000").unwrap();
        assert_eq!((s.stat.as_str(), s.percentile), ("mean", None));
        assert_eq!(SloBound::parse("tpot:p97<20ms").unwrap().stat, "p97");
    }

    #[test]
    fn bad_slos_name_the_flag_and_the_problem() {
        for (text, needle) in [
            ("ttft", "expected METRIC"),
            ("latency:p95<5ms", "unknown metric"),
            ("ttft:p95", "'<'"),
            ("ttft:q95<5ms", "not a statistic"),
            ("ttft:p100<5ms", "outside"),
            ("ttft:p95<5min", "unknown unit"),
            ("ttft:p95<0ms", "above 0"),
        ] {
            let e = SloBound::parse(text).unwrap_err().to_string();
            assert!(e.contains("--slo") && e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn bound_is_strict() {
        let s = SloBound::parse("ttft:p95<500ms").unwrap();
        assert!(s.passes(Some(499.9)));
        assert!(!s.passes(Some(500.0)));
        assert!(!s.passes(None), "no samples cannot pass");
    }
}
