//! `vllm bench serve`'s own command lines, run unchanged by `ringbench run` (issue 20): the
//! perf lab's line at `--request-rate 500` and again at `--request-rate inf
//! --max-concurrency 64`, against a separate `ringbench sim` process, with a local
//! tokenizer (GPT-2's, `support::gpt2`). The result JSON lands where vLLM puts it
//! (`--result-dir`/`--result-filename`) with vLLM's keys, and `completed` is `--num-prompts`.
//! Bad vLLM values exit 2 naming the flag. Runs take the one lock; the usage errors need none.

use crate::support::common::{lock, made_dir, output, read_json, ringbench, spawn_sim};
use crate::support::gpt2;
use serde_json::Value;
use std::path::Path;

/// The perf lab's `vllm bench serve` line, `vllm bench serve` replaced by `ringbench run`.
fn vllm_line(url: &str, tokenizer: &Path, dir: &Path, rate: &[&str]) -> Vec<String> {
    let mut line: Vec<String> = [
        "run",
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        url,
        "--model",
        "M",
        "--tokenizer",
    ]
    .map(String::from)
    .to_vec();
    line.push(tokenizer.display().to_string());
    line.extend(
        [
            "--dataset-name",
            "random",
            "--random-input-len",
            "100",
            "--random-output-len",
            "16",
            "--num-prompts",
            "2000",
        ]
        .map(String::from),
    );
    line.extend(rate.iter().map(|s| s.to_string()));
    line.extend(
        [
            "--ignore-eos",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--metric-percentiles",
            "50,99",
            "--save-result",
            "--result-dir",
        ]
        .map(String::from),
    );
    line.push(dir.display().to_string());
    line.extend(["--result-filename", "raw.json", "--seed", "1"].map(String::from));
    line
}

/// The keys `vllm bench serve --save-result` writes for this line (serve.py's `result` and
/// `result_json`, `--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99`).
fn vllm_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "date",
        "endpoint_type",
        "backend",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
    ]
    .map(String::from)
    .to_vec();
    for m in ["ttft", "tpot", "itl", "e2el"] {
        for s in ["mean", "median", "std", "p50", "p99"] {
            keys.push(format!("{s}_{m}_ms"));
        }
    }
    keys
}

fn check_result(r: &Value, rate: &Value, max_concurrency: &Value, tokenizer: &Path) {
    for k in vllm_keys() {
        assert!(r.get(&k).is_some(), "no {k} in {r}");
    }
    for list in ["ttfts", "itls", "input_lens", "generated_texts"] {
        assert!(r.get(list).is_none(), "{list} without --save-detailed");
    }
    assert_eq!(r["completed"], 2000, "completed = --num-prompts");
    assert_eq!(
        (&r["failed"], &r["num_prompts"]),
        (&Value::from(0), &Value::from(2000))
    );
    assert_eq!(&r["request_rate"], rate);
    assert_eq!(&r["max_concurrency"], max_concurrency);
    assert_eq!(
        (r["backend"].as_str(), r["model_id"].as_str()),
        (Some("openai-chat"), Some("M"))
    );
    assert_eq!(r["tokenizer_id"].as_str(), tokenizer.to_str());
    assert_eq!(
        r["total_input_tokens"], 200_000,
        "100 tokens each, by the tokenizer"
    );
    assert_eq!(
        r["total_output_tokens"],
        2000 * 16,
        "--ignore-eos: every answer 16 tokens"
    );
    assert!(r["p99_ttft_ms"].as_f64().unwrap() >= r["p50_ttft_ms"].as_f64().unwrap());
}

#[test]
fn vllm_lines_run_unchanged_against_the_simulator() {
    let _g = lock();
    let tokenizer = gpt2::tokenizer_json();
    let (mut sim, addr) = spawn_sim();
    let url = format!("http://{addr}");
    let cases: [(&str, &[&str], Value, Value); 2] = [
        (
            "rate",
            &["--request-rate", "500"],
            500.0.into(),
            Value::Null,
        ),
        (
            "inf",
            &["--request-rate", "inf", "--max-concurrency", "64"],
            "inf".into(),
            64.into(),
        ),
    ];
    for (name, rate, want_rate, want_conc) in cases {
        let dir = made_dir(name);
        let out = output(&mut ringbench(vllm_line(&url, tokenizer, &dir, rate)));
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 4)),
            "{name}: {code:?} {}",
            out.stderr
        );
        assert!(out.stdout.contains("raw.json"), "{}", out.stdout);
        check_result(
            &read_json(&dir.join("raw.json")),
            &want_rate,
            &want_conc,
            tokenizer,
        );
        // ringbench's own files beside it, in a folder named after the file.
        let s = read_json(&dir.join("raw").join("summary.json"));
        assert_eq!(s["counts"]["ok"], 2000, "{name}");
        if name == "inf" {
            assert_eq!(s["target"]["concurrency"], 64);
            assert_eq!(s["target"]["request_rate"], Value::Null, "a closed loop");
        }
    }
    let _ = sim.kill();
    let _ = sim.wait();
}

#[test]
fn bad_vllm_values_exit_2_naming_the_flag_and_nothing_is_downloaded() {
    let dir = made_dir("bad");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--tokenizer", "meta-llama/Llama-3.1-8B-Instruct"],
            "--tokenizer",
        ),
        (&["--backend", "tgi"], "--backend tgi"),
        (&["--append-result"], "--append-result"),
    ];
    for (args, want) in cases {
        let out = output(
            ringbench(["run", "--base-url", "http://127.0.0.1:9", "--model", "m"])
                .args(args)
                .current_dir(&dir),
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "nothing written or fetched: {left:?}");
}
