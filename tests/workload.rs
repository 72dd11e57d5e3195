//! The workload before and through a run: exact-length prompts with a real LLM tokenizer
//! (GPT-2's, converted from the vocabulary the `tiktoken-rs` crate embeds — no download — and
//! checked against tiktoken-rs's own encoding), length distributions, datasets, shared
//! prefixes, trace replay, request options, and the binary's refusal of bad input (exit 2).
//! Runs go against the in-process simulator on loopback, bounded in count, serialized by one
//! lock.

// Not every binary uses every helper.
#[allow(dead_code)]
#[path = "support/common.rs"]
mod common;
#[path = "support/gpt2.rs"]
mod gpt2;

use common::{cpu_pair, lock, made_dir, output, read_json, read_jsonl, ringbench};
use ringbench::plan::{Load, Plan, Stop};
use ringbench::prepare::dataset::{DatasetKind, DatasetSpec, Sampling};
use ringbench::prepare::lengths::LengthDist;
use ringbench::prepare::{prepare, PrefixSpec};
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

/// GPT-2's tokenizer (converted from tiktoken-rs's embedded r50k_base, see `support/gpt2.rs`).
fn gpt2() -> &'static Path {
    gpt2::tokenizer_json()
}

fn reencode(tok: &Tokenizer, text: &str) -> Vec<u32> {
    tok.encode(text, false).unwrap().get_ids().to_vec()
}

fn tok_plan(requests: u64) -> Plan {
    let mut p = Plan::defaults();
    p.stop.request_count = Some(requests);
    p.workload.tokenizer = Some(gpt2().to_path_buf());
    p
}

#[test]
fn every_prompt_reencodes_to_exactly_the_asked_length() {
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let mut p = tok_plan(400);
    p.workload.input = Some(LengthDist::Lognormal {
        median: 120.0,
        p99: 1500.0,
        max: 3000,
    });
    let t = std::time::Instant::now();
    let prepared = prepare(&p).unwrap();
    let took = t.elapsed();
    let total: u64 = prepared.prompts.iter().map(|p| p.input_tokens as u64).sum();
    for pr in &prepared.prompts {
        assert_eq!(reencode(&tok, &pr.text).len() as u32, pr.input_tokens);
    }
    // The lengths are the distribution's, not bent by the tokenizer.
    let s = &prepared.stats;
    assert!(s.input_method.starts_with("exact"), "{}", s.input_method);
    assert!(
        (90..=160).contains(&s.input_tokens.p50),
        "{:?}",
        s.input_tokens
    );
    assert!(
        s.input_tokens.max <= 3000 && s.input_tokens.p99 > 600,
        "{:?}",
        s.input_tokens
    );
    eprintln!(
        "prepared {} prompts, {total} tokens, in {:.0} ms ({:.0} tokens/s)",
        prepared.prompts.len(),
        took.as_secs_f64() * 1e3,
        total as f64 / took.as_secs_f64()
    );
    for n in [1, 2, 7, 100, 512, 4000] {
        p.workload.input = Some(LengthDist::Fixed { tokens: n });
        p.stop.request_count = Some(5);
        for pr in prepare(&p).unwrap().prompts {
            assert_eq!(reencode(&tok, &pr.text).len() as u32, n, "{:?}", pr.text);
        }
    }
}

#[test]
fn prompts_of_a_group_share_their_first_prefix_tokens_exactly() {
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let mut p = tok_plan(200);
    p.input_tokens = 300;
    p.workload.prefix = Some(PrefixSpec {
        groups: 4,
        tokens: 100,
        zipf: Some(1.2),
    });
    let prepared = prepare(&p).unwrap();
    let mut firsts: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    let mut counts = [0u32; 4];
    for pr in &prepared.prompts {
        let ids = reencode(&tok, &pr.text);
        assert_eq!(ids.len(), 300);
        let g = pr.group.unwrap();
        counts[g as usize] += 1;
        let head = firsts.entry(g).or_insert_with(|| ids[..100].to_vec());
        assert_eq!(
            &ids[..100],
            &head[..],
            "group {g} shares its prefix token for token"
        );
    }
    assert_eq!(firsts.len(), 4);
    assert_ne!(firsts[&0], firsts[&1]);
    assert!(
        counts[0] > counts[3],
        "Zipf: group 0 is the most popular {counts:?}"
    );
    // 200 requests in 4 groups: all but 4 reuse 100 of their 300 tokens.
    let stats = prepared.stats.prefix.unwrap();
    assert!(
        (stats.intended_reuse_rate - 196.0 / 600.0).abs() < 1e-9,
        "{stats:?}"
    );
}

#[test]
fn production_log_lengths_are_replayed_exactly_with_synthetic_text() {
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let dir = made_dir("logs");
    let path = dir.join("log.jsonl");
    let lens = [(12u32, 3u32), (700, 40), (1, 9), (64, 64)];
    let text: String = lens
        .iter()
        .map(|(p, c)| {
            format!("{{\"prompt_tokens\":{p},\"completion_tokens\":{c},\"model\":\"x\"}}\n")
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let mut p = tok_plan(8);
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Logs,
        path,
        sampling: Sampling::Sequential,
    });
    let prepared = prepare(&p).unwrap();
    for (i, pr) in prepared.prompts.iter().enumerate() {
        let (isl, osl) = lens[i % 4];
        assert_eq!((pr.input_tokens, pr.max_tokens), (isl, osl));
        assert_eq!(reencode(&tok, &pr.text).len() as u32, isl);
    }
}

#[test]
fn sharegpt_prompts_are_counted_and_answers_set_the_output_length() {
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let dir = made_dir("sharegpt");
    let path = dir.join("sg.json");
    std::fs::write(
        &path,
        r#"[{"conversations":[{"from":"human","value":"How does the pacer wait?"},{"from":"gpt","value":"It sleeps until the intended time, then spins the rest."}]}]"#,
    )
    .unwrap();
    let mut p = tok_plan(3);
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Sharegpt,
        path,
        sampling: Sampling::Random,
    });
    let pr = &prepare(&p).unwrap().prompts[0];
    assert_eq!(pr.text, "How does the pacer wait?");
    assert_eq!(pr.input_tokens as usize, reencode(&tok, &pr.text).len());
    let answer = "It sleeps until the intended time, then spins the rest.";
    assert_eq!(pr.max_tokens as usize, reencode(&tok, answer).len());
    p.workload.output = Some(LengthDist::Fixed { tokens: 50 });
    assert_eq!(
        prepare(&p).unwrap().prompts[0].max_tokens,
        50,
        "the flag wins"
    );
}

#[test]
fn without_a_tokenizer_the_approximation_is_named() {
    let mut p = Plan::defaults();
    p.workload.output = Some(LengthDist::Uniform {
        mean: 100,
        range_ratio: 0.5,
    });
    let s = prepare(&p).unwrap().stats;
    assert!(s.input_method.starts_with("approximate") && s.input_method.contains("one word"));
    assert!(s.output_tokens.min >= 50 && s.output_tokens.max <= 150 && s.output_tokens.p90 > 110);
    p.workload.tokenizer = Some("/nonexistent/tokenizer.json".into());
    let e = prepare(&p).unwrap_err().to_string();
    assert!(e.contains("--tokenizer /nonexistent/tokenizer.json"), "{e}");
}

#[test]
fn a_run_with_heavy_tailed_lengths_stores_the_workload_in_the_summary() {
    let _g = lock();
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut p = tok_plan(60);
    p.progress = false;
    p.cpus = vec![client_cpu];
    p.sim.as_mut().unwrap().cpus = vec![sim_cpu];
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(60),
        duration_ns: None,
    };
    p.workload.output = Some(LengthDist::Lognormal {
        median: 20.0,
        p99: 200.0,
        max: 400,
    });
    let prepared = prepare(&p).unwrap();
    let want_out: u64 = prepared.prompts.iter().map(|p| p.max_tokens as u64).sum();
    let never = std::sync::atomic::AtomicBool::new(false);
    let summary = ringbench::run::run_prepared(&p, prepared, &never, |_, _| {}).unwrap();
    assert_eq!(summary.counts.ok, 60);
    // The simulator answers exactly max_tokens: each request got its own length.
    assert_eq!(summary.tokens.output_total, want_out);
    let v = serde_json::to_value(&summary).unwrap();
    let w = &v["workload"];
    assert_eq!(w["distinct_prompts"], 60);
    assert!(w["input_method"].as_str().unwrap().starts_with("exact"));
    assert!(
        w["output_tokens"]["p99"].as_u64().unwrap() > w["output_tokens"]["p50"].as_u64().unwrap()
    );
    assert_eq!(v["config"]["workload"]["output"]["kind"], "lognormal");
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

/// A Mooncake-style trace: `(timestamp ms, input_length, output_length, hash_ids)`.
type Line = (u64, u32, u32, &'static [u64]);

fn write_trace(name: &str, lines: &[Line]) -> PathBuf {
    let text: String = lines
        .iter()
        .map(|(t, i, o, h)| {
            let ids = if h.is_empty() {
                String::new()
            } else {
                format!(",\"hash_ids\":{h:?}")
            };
            format!("{{\"timestamp\":{t},\"input_length\":{i},\"output_length\":{o}{ids}}}\n")
        })
        .collect();
    let path = made_dir(name).join("trace.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// Block size 16: lines 0, 1, 3 share block 1; 0 and 3 share blocks 1–2; line 2 has none.
const TRACE: &[Line] = &[
    (1_000, 40, 5, &[1, 2, 3]),
    (1_000, 20, 3, &[1, 4]),
    (1_130, 7, 9, &[]),
    (1_400, 33, 2, &[1, 2, 5]),
    (2_000, 16, 1, &[6]),
    (2_001, 1, 4, &[7]),
];

#[test]
fn trace_prompts_are_exact_and_shared_hash_ids_share_their_text() {
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let path = write_trace("prompts", TRACE);
    let mut p = Plan::defaults();
    p.load = Load::Trace(ringbench::prepare::trace::TraceLoad::open(&path, 16, 1.0, None).unwrap());
    p.workload.tokenizer = Some(gpt2().to_path_buf());
    let prepared = prepare(&p).unwrap();
    assert_eq!(prepared.prompts.len(), TRACE.len());
    let ids: Vec<Vec<u32>> = prepared
        .prompts
        .iter()
        .map(|pr| reencode(&tok, &pr.text))
        .collect();
    for (i, (pr, (_, isl, osl, _))) in prepared.prompts.iter().zip(TRACE).enumerate() {
        assert_eq!(
            ids[i].len() as u32,
            *isl,
            "line {i} re-encodes to input_length"
        );
        assert_eq!((pr.input_tokens, pr.max_tokens), (*isl, *osl));
    }
    let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let texts: Vec<&str> = prepared.prompts.iter().map(|p| p.text.as_str()).collect();
    // Lines 0 and 3 share two blocks (32 tokens), then differ; 0 and 1 share one block.
    assert_eq!(ids[0][..32], ids[3][..32]);
    assert_ne!(ids[0][32], ids[3][32]);
    assert_eq!(ids[0][..16], ids[1][..16]);
    assert_ne!(ids[0][16], ids[1][16]);
    let block2_end = {
        let mut t = String::new();
        for id in &ids[0][..32] {
            t.push_str(&tok.decode(&[*id], false).unwrap());
        }
        t.len()
    };
    assert!(
        common(texts[0], texts[3]) >= block2_end,
        "byte-identical first 2 blocks"
    );
    assert!(
        common(texts[0], texts[2]) < 8,
        "no hash ids: text of its own"
    );
    // The catalog sends those texts: the request bodies keep the shared bytes.
    let cat = ringbench::prepare::catalog::Catalog::build(&p, &prepared, "h", "m");
    let body = |i: u64| {
        let b = &cat.get(i).bytes;
        let at = b.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let v: serde_json::Value = serde_json::from_slice(&b[at..]).unwrap();
        v["messages"][0]["content"].as_str().unwrap().to_string()
    };
    assert_eq!(body(0), texts[0]);
    assert_eq!(body(3), texts[3]);
    // Same seed, same text; the prompts do not depend on which other lines are present.
    let again = prepare(&p).unwrap();
    assert_eq!(again.prompts[3].text, texts[3]);
}

#[test]
fn a_trace_is_replayed_at_its_times_with_its_lengths() {
    let _g = lock();
    let path = write_trace("replay", TRACE);
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
    let mismatch = write_trace("mismatch", &[(0, 100, 1, &[1, 2, 3, 4, 5, 6, 7])]);
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
    let ok = write_trace("conflicts", &[(0, 3, 1, &[])]);
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
