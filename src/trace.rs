//! Before the run (plan → **trace** → schedule, catalog …): a timestamped request trace in
//! Mooncake's JSONL form (`timestamp` ms, `input_length`, `output_length`, optional
//! `hash_ids`), read and checked, and its send times for `Schedule::from_trace`. The checks
//! refuse what would silently distort a replay: times going backwards, and `hash_ids` whose
//! count × block size disagrees with `input_length` (a wrong block size shrinks prompts 32× in
//! another tool). Never on the hot path; never prints: `TraceStats` is returned for the caller.
//!
//! Not yet wired to the CLI (`--trace`): see the report of issue #4.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Mooncake's block size: tokens per `hash_ids` entry.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;

/// One trace line.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TraceRequest {
    pub timestamp: u64,
    pub input_length: u32,
    pub output_length: u32,
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

#[derive(Debug, thiserror::Error)]
#[error("--trace {}{}: {why}", path.display(), line.map_or(String::new(), |l| format!(" line {l}")))]
pub struct TraceError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub why: String,
}

/// What the trace offers, stated before the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    pub requests: u64,
    /// First to last send time after the speed-up, seconds.
    pub span_s: f64,
    /// Requests per second over the span (after the speed-up).
    pub rate_per_s: f64,
    /// Coefficient of variation of the gaps: 1 is Poisson-like, above 1 burstier.
    pub gap_cv: f64,
    pub speedup: f64,
}

/// A checked trace.
#[derive(Debug)]
pub struct Trace {
    pub requests: Vec<TraceRequest>,
}

pub fn load(path: &Path, block_size: u32) -> Result<Trace, TraceError> {
    let fail = |line: Option<usize>, why: String| TraceError {
        path: path.to_path_buf(),
        line,
        why,
    };
    if block_size == 0 {
        return Err(fail(None, "--trace-block-size must be at least 1".into()));
    }
    let file = std::fs::File::open(path).map_err(|e| fail(None, e.to_string()))?;
    let mut requests: Vec<TraceRequest> = vec![];
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let n = Some(i + 1);
        let line = line.map_err(|e| fail(n, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let r: TraceRequest = serde_json::from_str(&line).map_err(|e| {
            fail(n, format!("{e} (expected {{\"timestamp\": MS, \"input_length\": N, \"output_length\": M, \"hash_ids\": [...]}})"))
        })?;
        check(&r, requests.last(), block_size).map_err(|why| fail(n, why))?;
        requests.push(r);
    }
    if requests.is_empty() {
        return Err(fail(None, "no request in the trace (empty set)".into()));
    }
    Ok(Trace { requests })
}

fn check(r: &TraceRequest, prev: Option<&TraceRequest>, block_size: u32) -> Result<(), String> {
    if r.input_length == 0 || r.output_length == 0 {
        return Err("input_length and output_length must be at least 1".into());
    }
    if let Some(p) = prev.filter(|p| p.timestamp > r.timestamp) {
        return Err(format!(
            "timestamp {} is before the previous line's {}: the trace must be in time order",
            r.timestamp, p.timestamp
        ));
    }
    if !r.hash_ids.is_empty() {
        let want = r.input_length.div_ceil(block_size) as usize;
        if r.hash_ids.len() != want {
            let fits = r.input_length.div_ceil(r.hash_ids.len() as u32);
            return Err(format!(
                "{} hash_ids × block size {block_size} does not cover input_length {} \
                 ({want} blocks needed); the trace looks made with a block size near {fits}: \
                 set --trace-block-size",
                r.hash_ids.len(),
                r.input_length
            ));
        }
    }
    Ok(())
}

impl Trace {
    /// Send times in ns from the first request, divided by `speedup`.
    pub fn send_times_ns(&self, speedup: f64) -> Arc<[u64]> {
        let t0 = self.requests[0].timestamp;
        self.requests
            .iter()
            .map(|r| ((r.timestamp - t0) as f64 * 1e6 / speedup).round() as u64)
            .collect()
    }

    pub fn stats(&self, speedup: f64) -> TraceStats {
        let times = self.send_times_ns(speedup);
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let span_ns = *times.last().unwrap_or(&0) as f64;
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n.max(1.0);
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n.max(1.0);
        TraceStats {
            requests: times.len() as u64,
            span_s: span_ns / 1e9,
            rate_per_s: if span_ns > 0.0 {
                n * 1e9 / span_ns
            } else {
                0.0
            },
            gap_cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            speedup,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ringbench-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_mooncake_trace_loads_and_states_its_rate_and_burstiness() {
        let p = write(
            "ok.jsonl",
            "{\"timestamp\":0,\"input_length\":1000,\"output_length\":10,\"hash_ids\":[1,2]}\n\
             {\"timestamp\":100,\"input_length\":512,\"output_length\":5,\"hash_ids\":[1]}\n\
             {\"timestamp\":100,\"input_length\":20,\"output_length\":5}\n\
             {\"timestamp\":400,\"input_length\":1025,\"output_length\":5,\"hash_ids\":[1,2,3]}\n",
        );
        let t = load(&p, 512).unwrap();
        assert_eq!(t.requests.len(), 4);
        assert_eq!(
            &*t.send_times_ns(2.0),
            &[0, 50_000_000, 50_000_000, 200_000_000]
        );
        let s = t.stats(2.0);
        assert_eq!(s.requests, 4);
        assert!((s.rate_per_s - 15.0).abs() < 1e-9, "{s:?}");
        // Gaps 50, 0, 150 ms: mean 66.7, sd 62.4.
        assert!((s.gap_cv - 0.9354).abs() < 1e-3, "{s:?}");
    }

    #[test]
    fn a_block_size_mismatch_is_refused_with_the_size_that_fits() {
        // Made with 16-token blocks: 64 hash ids for 1024 tokens.
        let ids: Vec<String> = (0..64).map(|i| i.to_string()).collect();
        let line = format!(
            "{{\"timestamp\":0,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[{}]}}\n",
            ids.join(",")
        );
        let p = write("mismatch.jsonl", &line);
        let e = load(&p, 512).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("near 16"), "{e}");
        assert!(load(&p, 16).is_ok());
    }

    #[test]
    fn bad_traces_name_file_line_and_problem() {
        let cases = [
            ("{\"timestamp\":5,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":4,\"input_length\":1,\"output_length\":1}\n", "line 2"),
            ("{\"timestamp\":5,\"input_length\":0,\"output_length\":1}\n", "at least 1"),
            ("{\"timestamp\":\"x\"}\n", "line 1"),
            ("\n", "empty set"),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let p = write(&format!("bad{i}.jsonl"), text);
            let e = load(&p, 512).unwrap_err().to_string();
            assert!(
                e.contains(&p.display().to_string()) && e.contains(want),
                "{e}"
            );
        }
    }
}
