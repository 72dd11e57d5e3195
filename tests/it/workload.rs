//! The workload through the binary: what it prints before a run (counts, length
//! percentiles, the exact-length method with a real LLM tokenizer — GPT-2's, converted from
//! the vocabulary the `tiktoken-rs` crate embeds, no download, and checked here against
//! tiktoken-rs's own encoding), trace replay at the trace's times with its lengths, the
//! observed prefix reuse, the server's prompt count beside the client's (and the warning
//! when they are far apart), and the refusal of bad input (exit 2). How `prepare` builds each
//! prompt is a unit test (`src/prepare/workload_tests.rs`). Runs go against the built-in
//! simulator on loopback, bounded in count, serialized by the one lock.

use crate::support::common::{cpu_pair, lock, made_dir, output, read_json, read_jsonl, ringbench};
use crate::support::gpt2;
use crate::support::trace::{write_trace, TRACE};
use std::path::Path;
use tokenizers::Tokenizer;

/// GPT-2's tokenizer (converted from tiktoken-rs's embedded r50k_base, see `support::gpt2`).
fn gpt2() -> &'static Path {
    gpt2::tokenizer_json()
}

fn reencode(tok: &Tokenizer, text: &str) -> Vec<u32> {
    tok.encode(text, false).unwrap().get_ids().to_vec()
}

#[test]
fn the_binary_prints_the_workload_and_refuses_bad_input_with_exit_2() {
    let _g = lock();
    let dir = made_dir("bin");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\":\"fine\"}\n{\"prompt\": 12}\n").unwrap();
    let out = output(ringbench(["run", "--quiet", "--dataset"]).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = &out.stderr;
    assert!(err.contains("bad.jsonl line 2"), "{err}");
    let out = output(&mut ringbench([
        "run",
        "--quiet",
        "--tokenizer",
        "/nonexistent/t.json",
    ]));
    assert_eq!(out.status.code(), Some(2));
    let out = output(
        ringbench([
            "run",
            "--quiet",
            "--request-count",
            "20",
            "--input-dist",
            "lognormal:50:400:800",
            "--output-dist",
            "uniform:8:0.5",
            "--cpus",
            &cpu_pair().0.to_string(),
            "--tokenizer",
        ])
        .arg(gpt2()),
    );
    let stdout = &out.stdout;
    assert!(
        out.status.success() || out.status.code() == Some(4),
        "{stdout}"
    );
    let first: Vec<&str> = stdout.lines().take(4).collect();
    assert!(first[0].starts_with("workload: 20 prompts"), "{stdout}");
    assert!(
        first[1].contains("input tokens") && first[1].contains("p99"),
        "{stdout}"
    );
    assert!(first[3].contains("exact"), "{stdout}");
}

#[test]
fn converted_gpt2_agrees_with_tiktoken_on_real_text() {
    // Converting the vocabulary, if first, and encoding the README: seconds of CPU.
    let _g = lock();
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let tiktoken = gpt2::tiktoken();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let samples = [
        readme.as_str(),
        "Hello world! Don't we've they'll 12345 3.14159 — naïve café, 日本語のテキスト 🦀",
        "fn main() {\n    println!(\"{}\", x);\n}\n\tindented\r\n",
        " leading space and trailing space ",
    ];
    for text in samples {
        let want: Vec<u32> = tiktoken.encode_ordinary(text);
        assert_eq!(
            reencode(&tok, text),
            want,
            "{:?}",
            &text[..text.len().min(60)]
        );
        assert_eq!(tok.decode(&want, false).unwrap(), text, "decodes back");
    }
    // GPT-2's well-known ids: " the" is 262, "Hello" 15496.
    assert_eq!(reencode(&tok, "Hello the"), vec![15496, 262]);
}

#[test]
fn a_trace_is_replayed_at_its_times_with_its_lengths() {
    let _g = lock();
    let path = write_trace(&made_dir("replay"), TRACE);
    let out_dir = made_dir("replay-out");
    let out = output(
        ringbench([
            "run",
            "--quiet",
            "--trace-block-size",
            "16",
            "--replay-speedup",
            "4",
        ])
        .args(["--cpus", &cpu_pair().0.to_string(), "--trace"])
        .arg(&path)
        .arg("--tokenizer")
        .arg(gpt2())
        .arg("--out")
        .arg(&out_dir),
    );
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.success() || out.status.code() == Some(4),
        "{stdout}\n{stderr}"
    );
    // Before the run: count, span, rate, burstiness, lengths, the hash-id check.
    assert!(
        stdout.contains("trace: 6 requests over 0.250 s (speed-up 4×): 19.980 req/s"),
        "{stdout}"
    );
    assert!(stdout.contains("gap CV"), "{stdout}");
    assert!(
        stdout.contains("hash_ids: 5 lines, 7 distinct blocks of 16 tokens"),
        "{stdout}"
    );
    assert!(
        stdout.contains("input tokens  p50 16 p90 40 p99 40"),
        "{stdout}"
    );
    assert!(stdout.contains("exact"), "{stdout}");
    let mut recs = read_jsonl(&out_dir.join("requests.jsonl"));
    recs.sort_by_key(|r| r["id"].as_u64().unwrap());
    assert_eq!(recs.len(), TRACE.len(), "every line sent once");
    let t0 = recs[0]["intended_ns"].as_u64().unwrap();
    for (r, (ts, isl, osl, _)) in recs.iter().zip(TRACE) {
        assert_eq!(r["outcome"], "ok", "{r}");
        let want_ns = ((ts - TRACE[0].0) as f64 * 1e6 / 4.0).round() as u64;
        assert_eq!(r["intended_ns"].as_u64().unwrap() - t0, want_ns, "{r}");
        assert_eq!(r["input_tokens"], *isl);
        // The simulator answers exactly max_tokens.
        assert_eq!(r["output_tokens"], *osl);
    }
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(s["counts"]["scheduled"], 6);
    assert_eq!(s["counts"]["ok"], 6);
    let rate = s["target"]["request_rate"].as_f64().unwrap();
    assert!(
        (rate - 5.0 / 0.25025).abs() < 1e-9,
        "trace rate × speed-up: {rate}"
    );
    assert_eq!(s["config"]["load"]["mode"], "trace");
    assert_eq!(s["config"]["load"]["stats"]["requests"], 6);
    let osl_mismatch = s
        .to_string()
        .contains("got a different number of output tokens");
    assert!(
        !osl_mismatch,
        "per-line max_tokens are not one asked length"
    );
}

#[test]
fn bad_traces_and_conflicting_flags_exit_2_naming_the_fix() {
    let _g = lock();
    let run = |args: &[&str], trace: &Path| {
        let out = output(
            ringbench(["run", "--quiet"])
                .args(args)
                .arg("--trace")
                .arg(trace),
        );
        (out.status.code(), out.stderr)
    };
    // Made with 16-token blocks, replayed with Mooncake's 512.
    let mismatch = write_trace(
        &made_dir("mismatch"),
        &[(0, 100, 1, &[1, 2, 3, 4, 5, 6, 7])],
    );
    let (code, err) = run(&[], &mismatch);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("line 1") && err.contains("--trace-block-size 16"),
        "{err}"
    );
    let dir = made_dir("badline");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"timestamp\":0,\"input_length\":3,\"output_length\":1}\n{\"timestamp\":5,\"input_length\":-3}\n").unwrap();
    let (code, err) = run(&[], &bad);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("bad.jsonl line 2"), "{err}");
    let ok = write_trace(&made_dir("conflicts"), &[(0, 3, 1, &[])]);
    for flags in [
        &["--request-rate", "5"][..],
        &["--concurrency", "2"],
        &["--dataset", "x.jsonl"],
        &["--request-count", "3"],
        &["--input-tokens", "9"],
    ] {
        let (code, err) = run(flags, &ok);
        assert_eq!(code, Some(2), "{flags:?}: {err}");
        assert!(err.contains("--trace"), "{flags:?}: {err}");
    }
    let (code, err) = run(&["--warmup-requests", "1"], &ok);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--warmup-requests"), "{err}");
}

#[test]
fn the_console_puts_observed_prefix_reuse_beside_the_intended() {
    let _g = lock();
    let out = output(
        ringbench([
            "run",
            "--quiet",
            "--prefix-groups",
            "2",
            "--prefix-tokens",
            "16",
        ])
        .args([
            "--request-count",
            "12",
            "--concurrency",
            "2",
            "--allow-invalid",
        ])
        .args(["--cpus", &cpu_pair().0.to_string()]),
    );
    let stdout = &out.stdout;
    assert!(out.status.success(), "{stdout}");
    // The built-in simulator reports no cached tokens: the console says so, never 0%.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Prefix reuse intended / cached:"))
        .unwrap_or_else(|| panic!("no prefix line in:\n{stdout}"));
    assert!(line.contains("% / not reported by the server"), "{line}");
}

/// A run of `n` requests through the binary with `extra` flags; its summary.
fn salted_run(name: &str, n: u32, extra: &[&str]) -> (serde_json::Value, String) {
    let dir = made_dir(name);
    let out = output(
        ringbench(["run", "--quiet", "--concurrency", "8", "--allow-invalid"])
            .args(["--request-count", &n.to_string(), "--warmup-requests", "0"])
            .args(["--cpus", &cpu_pair().0.to_string()])
            .args(extra)
            .arg("--out")
            .arg(&dir),
    );
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    (read_json(&dir.join("summary.json")), out.stdout)
}

#[test]
fn every_request_sends_its_own_prompt_and_the_nonce_reruns_a_run_exactly() {
    let _g = lock();
    // 3,000 requests over a catalog of 1,024 prompts.
    let (a, stdout) = salted_run("salt-a", 3000, &[]);
    let w = &a["workload"];
    assert_eq!(
        (
            w["prompts_sent"].as_u64(),
            w["distinct_prompts_sent"].as_u64()
        ),
        (Some(3000), Some(3000))
    );
    assert_eq!(
        (w["distinct_prompts"].as_u64(), w["salt"]["tokens"].as_u64()),
        (Some(1024), Some(7))
    );
    let nonce = a["config"]["workload"]["prompt_nonce"]
        .as_u64()
        .expect("the nonce is recorded");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Distinct prompts sent:"))
        .unwrap();
    assert!(
        line.contains(&format!(
            "3000 of 3000 (salt 7 tokens, --prompt-nonce {nonce})"
        )),
        "{line}"
    );
    // Another run draws another nonce; the recorded one is taken as given.
    let (b, _) = salted_run("salt-b", 10, &[]);
    assert_ne!(
        b["config"]["workload"]["prompt_nonce"].as_u64(),
        Some(nonce)
    );
    let (c, _) = salted_run("salt-c", 10, &["--prompt-nonce", &nonce.to_string()]);
    assert_eq!(
        c["config"]["workload"]["prompt_nonce"].as_u64(),
        Some(nonce)
    );
    // Unsalted, the run repeats its 1,024 prompts and says so.
    let (d, stdout) = salted_run("salt-d", 3000, &["--no-prompt-salt"]);
    let w = &d["workload"];
    assert_eq!(
        (w["distinct_prompts_sent"].as_u64(), w["salt"].is_null()),
        (Some(1024), true)
    );
    assert!(d["config"]["workload"]["prompt_nonce"].is_null());
    assert!(
        stdout.contains("Distinct prompts sent:                   1024 of 3000 (unsalted)"),
        "{stdout}"
    );
    let out = output(&mut ringbench([
        "run",
        "--no-prompt-salt",
        "--prompt-nonce",
        "3",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
}

/// A run of 20 requests through the binary with `extra` flags: its summary, its
/// `requests.jsonl` and its console.
fn isl_run(name: &str, extra: &[&str]) -> (serde_json::Value, Vec<serde_json::Value>, String) {
    let dir = made_dir(name);
    let out = output(
        ringbench(["run", "--quiet", "--concurrency", "4", "--allow-invalid"])
            .args(["--request-count", "20", "--warmup-requests", "0"])
            .args(["--cpus", &cpu_pair().0.to_string()])
            .args(extra)
            .arg("--out")
            .arg(&dir),
    );
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    let s = read_json(&dir.join("summary.json"));
    (s, read_jsonl(&dir.join("requests.jsonl")), out.stdout)
}

fn isl_warnings(s: &serde_json::Value) -> Vec<&str> {
    s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("input tokens:"))
        .collect()
}

#[test]
fn the_servers_prompt_count_sits_beside_ours_and_a_far_one_is_warned_about() {
    let _g = lock();
    // Synthetic prompts without --tokenizer: N words, counted N by both sides (the built-in
    // simulator counts words).
    let (s, lines, stdout) = isl_run("isl-synthetic", &["--input-tokens", "64"]);
    let t = &s["tokens"];
    assert_eq!(t["input_total"], 20 * 64, "{t}");
    assert_eq!(t["input_source"]["approximate"], 20, "{t}");
    assert_eq!(t["input_source"]["tokenizer"], 0, "{t}");
    assert_eq!(t["input_total_server"], 20 * 64, "{t}");
    assert_eq!(t["input_server_reports"], 20, "{t}");
    assert_eq!(t["input_server_ratio"], 1.0, "{t}");
    assert_eq!(isl_warnings(&s), Vec::<&str>::new());
    assert!(lines.iter().all(|l| l["input_source"] == "approximate"));
    let line = "Total input tokens:                      1280 (client, approximate) · server \
                1280 (×1.00)";
    assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");

    // Dataset text of long words: one token per 4 bytes is far more than one per word.
    let dir = made_dir("isl-data");
    let data = dir.join("long.jsonl");
    let prompt = ["incomprehensibilities"; 20].join(" ");
    std::fs::write(&data, format!("{{\"prompt\":\"{prompt}\"}}\n").repeat(4)).unwrap();
    let (s, lines, stdout) = isl_run("isl-dataset", &["--dataset", data.to_str().unwrap()]);
    let t = &s["tokens"];
    let client: u64 = lines
        .iter()
        .map(|l| l["input_tokens"].as_u64().unwrap())
        .sum();
    let server: u64 = lines
        .iter()
        .map(|l| l["usage_prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(
        (t["input_total"].as_u64(), t["input_total_server"].as_u64()),
        (Some(client), Some(server))
    );
    let ratio = t["input_server_ratio"].as_f64().unwrap();
    assert_eq!(ratio, server as f64 / client as f64);
    assert!(ratio <= 0.5, "{t}");
    let w = isl_warnings(&s);
    assert_eq!(w.len(), 1, "{:?}", s["warnings"]);
    assert!(
        w[0].contains(&format!("the server counted {server}, the client {client}")),
        "{}",
        w[0]
    );
    assert!(
        w[0].contains("approximation is far off: give --tokenizer"),
        "{}",
        w[0]
    );
    assert!(stdout.contains(&format!(
        "{client} (client, approximate) · server {server} (×"
    )));
}
