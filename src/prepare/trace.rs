//! Before the run (cli → plan → **trace** → workload, schedule …): a timestamped request trace
//! in Mooncake's JSONL form (`timestamp` ms, `input_length`, `output_length`, optional
//! `hash_ids`), read and checked when the plan is resolved (`--trace FILE`: the trace *is* the
//! load, so the plan carries it), and its send times for `Schedule::from_trace`. The checks
//! refuse what would silently distort a replay: times going backwards, and `hash_ids` whose
//! count × block size disagrees with `input_length` (a wrong block size shrinks prompts 32× in
//! another tool). Bounded: a trace over `MAX_TRACE_REQUESTS` lines or `MAX_TRACE_INPUT_TOKENS`
//! prompt tokens is refused, because every request is pre-serialized before the run. Never on
//! the hot path; never prints: `TraceStats` is returned for the caller.

use crate::plan::workload::TraceLoad;
use crate::plan::workload::TraceRequest;
use crate::plan::workload::TraceStats;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most lines a trace may have: each becomes one pre-serialized request held in memory.
pub const MAX_TRACE_REQUESTS: usize = 200_000;
/// Most prompt tokens a trace may ask in all: synthetic prompts take about 6 bytes a token,
/// so this bounds the pre-built requests near 1.5 GB (Mooncake's published traces hold
/// 0.1–0.2 G tokens).
pub const MAX_TRACE_INPUT_TOKENS: u64 = 1 << 28;

#[derive(Debug, thiserror::Error)]
#[error("--trace {}{}: {why}", path.display(), line.map_or(String::new(), |l| format!(" line {l}")))]
pub struct TraceError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub why: String,
}

/// A checked trace.
#[derive(Debug)]
pub struct Trace {
    pub requests: Vec<TraceRequest>,
}

impl TraceLoad {
    /// Reads and checks `path`; `speedup` divides every gap.
    pub fn open(
        path: &Path,
        block_size: u32,
        speedup: f64,
        max_concurrency: Option<u32>,
    ) -> Result<TraceLoad, TraceError> {
        if !(speedup.is_finite() && speedup > 0.0) {
            return Err(TraceError {
                path: path.to_path_buf(),
                line: None,
                why: format!(
                    "--replay-speedup {speedup}: must be a number above 0 (1 is real time)"
                ),
            });
        }
        let trace = load(path, block_size)?;
        let stats = trace.stats(speedup, block_size);
        Ok(TraceLoad {
            path: path.to_path_buf(),
            block_size,
            speedup,
            request_rate: (stats.rate_per_s > 0.0).then_some(stats.rate_per_s),
            max_concurrency,
            stats,
            times_ns: trace.send_times_ns(speedup),
            requests: trace.requests.into(),
        })
    }
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
    let mut tokens = 0u64;
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
        tokens += u64::from(r.input_length);
        if requests.len() == MAX_TRACE_REQUESTS || tokens > MAX_TRACE_INPUT_TOKENS {
            return Err(fail(
                n,
                format!(
                    "the trace is over the limit of {MAX_TRACE_REQUESTS} lines or \
                 {MAX_TRACE_INPUT_TOKENS} prompt tokens (every request is built before the run); \
                 replay a part of it"
                ),
            ));
        }
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
    if r.input_length > crate::plan::workload::MAX_LENGTH
        || r.output_length > crate::plan::workload::MAX_LENGTH
    {
        return Err(format!(
            "input_length and output_length must be at most {}",
            crate::plan::workload::MAX_LENGTH
        ));
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
            return Err(format!(
                "{} hash_ids × block size {block_size} does not cover input_length {} \
                 ({want} blocks needed): {}",
                r.hash_ids.len(),
                r.input_length,
                suggest_block_size(r.input_length, r.hash_ids.len() as u32)
            ));
        }
    }
    Ok(())
}

/// The block sizes B with ceil(input / B) == blocks, and the one to try: a power of two in
/// that range when there is one (traces are made with 16, 64, 512 …).
fn suggest_block_size(input: u32, blocks: u32) -> String {
    let lo = input.div_ceil(blocks);
    let hi = if blocks > 1 {
        (input - 1) / (blocks - 1)
    } else {
        u32::MAX
    };
    if lo > hi {
        return format!(
            "no block size gives {blocks} blocks for {input} tokens; the line is wrong"
        );
    }
    let pick = (0..32)
        .map(|k| 1u32 << k)
        .find(|b| (lo..=hi).contains(b))
        .unwrap_or(lo);
    let range = if hi == u32::MAX {
        format!("{lo} or more")
    } else {
        format!("{lo} to {hi}")
    };
    format!("the trace looks made with another block size; set --trace-block-size {pick} (sizes {range} fit this line)")
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

    pub fn stats(&self, speedup: f64, block_size: u32) -> TraceStats {
        let times = self.send_times_ns(speedup);
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let span_ns = *times.last().unwrap_or(&0) as f64;
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n.max(1.0);
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n.max(1.0);
        let (distinct_blocks, block_reuse_rate) = self.block_reuse(block_size);
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
            lines_with_hash_ids: self
                .requests
                .iter()
                .filter(|r| !r.hash_ids.is_empty())
                .count() as u64,
            distinct_blocks,
            block_reuse_rate,
        }
    }

    /// Distinct hash ids, and the share of input tokens in blocks an earlier line sent.
    fn block_reuse(&self, block_size: u32) -> (u64, f64) {
        let mut seen = std::collections::HashSet::new();
        let (mut reused, mut total) = (0u64, 0u64);
        for r in &self.requests {
            total += u64::from(r.input_length);
            let mut left = r.input_length;
            for h in &r.hash_ids {
                let k = left.min(block_size);
                left -= k;
                if !seen.insert(*h) {
                    reused += u64::from(k);
                }
            }
        }
        let rate = if total > 0 {
            reused as f64 / total as f64
        } else {
            0.0
        };
        (seen.len() as u64, rate)
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
        let s = t.stats(2.0, 512);
        assert_eq!(s.requests, 4);
        assert!((s.rate_per_s - 15.0).abs() < 1e-9, "{s:?}");
        // Gaps 50, 0, 150 ms: mean 66.7, sd 62.4.
        assert!((s.gap_cv - 0.9354).abs() < 1e-3, "{s:?}");
        // Blocks 1 and 2 come back (512 + 1024 tokens of 2557); block 3 is new.
        assert_eq!((s.lines_with_hash_ids, s.distinct_blocks), (3, 3));
        assert!(
            (s.block_reuse_rate - 1536.0 / 2557.0).abs() < 1e-12,
            "{s:?}"
        );
    }

    #[test]
    fn a_trace_load_states_its_rate_and_refuses_a_bad_speedup() {
        let p = write(
            "load.jsonl",
            "{\"timestamp\":1000,\"input_length\":3,\"output_length\":2}\n\
             {\"timestamp\":3000,\"input_length\":4,\"output_length\":1}\n",
        );
        let t = TraceLoad::open(&p, 512, 4.0, None).unwrap();
        assert_eq!(&*t.times_ns, &[0, 500_000_000]);
        assert_eq!(t.request_rate, Some(2.0));
        let mut plan = crate::plan::Plan::defaults();
        plan.load = crate::plan::Load::Trace(t.clone());
        let lines = crate::output::console::workload_lines(&plan, &Default::default());
        assert!(lines[0].contains("2 requests"), "{lines:?}");
        let e = TraceLoad::open(&p, 512, 0.0, None).unwrap_err().to_string();
        assert!(e.contains("--replay-speedup"), "{e}");
        let one = write(
            "one.jsonl",
            "{\"timestamp\":7,\"input_length\":3,\"output_length\":2}\n",
        );
        assert_eq!(
            TraceLoad::open(&one, 512, 1.0, None).unwrap().request_rate,
            None
        );
    }

    #[test]
    fn the_suggested_block_size_is_a_power_of_two_that_fits() {
        assert!(suggest_block_size(1000, 2).contains("--trace-block-size 512 (sizes 500 to 999"));
        assert!(suggest_block_size(1024, 64).contains("--trace-block-size 16 (sizes 16 to 16"));
        assert!(suggest_block_size(300, 1).contains("--trace-block-size 512 (sizes 300 or more"));
        assert!(suggest_block_size(5, 4).contains("no block size"));
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
        assert!(
            e.contains("line 1") && e.contains("--trace-block-size 16"),
            "{e}"
        );
        assert!(load(&p, 16).is_ok());
    }

    #[test]
    fn bad_traces_name_file_line_and_problem() {
        let cases = [
            ("{\"timestamp\":5,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":4,\"input_length\":1,\"output_length\":1}\n", "line 2"),
            ("{\"timestamp\":5,\"input_length\":0,\"output_length\":1}\n", "at least 1"),
            ("{\"timestamp\":\"x\"}\n", "line 1"),
            ("\n", "empty set"),
            ("{\"timestamp\":1,\"input_length\":9,\"output_length\":1,\"hash_ids\":[1,2]}\n", "--trace-block-size"),
            ("{\"timestamp\":1,\"input_length\":9}\n", "output_length"),
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
