//! The workload before and through a run: exact-length prompts with a real byte-level BPE
//! tokenizer (GPT-2's pre-tokenizer and byte alphabet, trained here by the `tokenizers` crate
//! on text this repository ships — no download), length distributions, datasets, shared
//! prefixes, request options, and the binary's refusal of bad input (exit 2). Runs go against
//! the in-process simulator on loopback, bounded in count, serialized by one lock.

use ringbench::dataset::{DatasetKind, DatasetSpec, Sampling};
use ringbench::lengths::LengthDist;
use ringbench::plan::{Load, Plan, Stop};
use ringbench::workload::{prepare, PrefixSpec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use tokenizers::Tokenizer;

static SERIAL: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ringbench-wl-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every text file this repository ships under `src/` and its README: real English prose
/// (comments, docs) and code, a few hundred KB.
fn shipped_text() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs" || e == "md") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.extend(text.lines().map(|l| format!("{l}\n")));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lines = vec![];
    walk(&root.join("src"), &mut lines);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    lines.extend(readme.lines().map(|l| format!("{l}\n")));
    lines
}

/// A GPT-2-style byte-level BPE `tokenizer.json` (GPT-2 split regex, 256-byte alphabet, no
/// prefix space), trained once per test binary on the shipped text.
fn trained_tokenizer() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
        use tokenizers::pre_tokenizers::byte_level::ByteLevel;
        use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper};
        use tokenizers::{PostProcessorWrapper, PreTokenizerWrapper, TokenizerBuilder};
        let byte_level = ByteLevel::new(false, true, true);
        let mut trainer = BpeTrainerBuilder::new()
            .vocab_size(4000)
            .min_frequency(2)
            .show_progress(false)
            .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
            .special_tokens(vec![AddedToken::from("<|endoftext|>", true)])
            .build();
        let mut tok = TokenizerBuilder::<
            BPE,
            NormalizerWrapper,
            PreTokenizerWrapper,
            PostProcessorWrapper,
            DecoderWrapper,
        >::new()
        .with_model(BPE::default())
        .with_normalizer(None)
        .with_pre_tokenizer(Some(byte_level.into()))
        .with_post_processor(Some(byte_level.into()))
        .with_decoder(Some(byte_level.into()))
        .build()
        .unwrap();
        tok.train(&mut trainer, shipped_text().into_iter()).unwrap();
        let path = tempdir("tok").join("tokenizer.json");
        tok.save(&path, false).unwrap();
        path
    })
}

fn reencode(tok: &Tokenizer, text: &str) -> Vec<u32> {
    tok.encode(text, false).unwrap().get_ids().to_vec()
}

fn tok_plan(requests: u64) -> Plan {
    let mut p = Plan::defaults();
    p.stop.request_count = Some(requests);
    p.workload.tokenizer = Some(trained_tokenizer().to_path_buf());
    p
}

#[test]
fn every_prompt_reencodes_to_exactly_the_asked_length() {
    let tok = Tokenizer::from_file(trained_tokenizer()).unwrap();
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
    for n in [1, 2, 3, 7, 64, 511, 2048] {
        p.workload.input = Some(LengthDist::Fixed { tokens: n });
        p.stop.request_count = Some(5);
        for pr in prepare(&p).unwrap().prompts {
            assert_eq!(reencode(&tok, &pr.text).len() as u32, n, "{:?}", pr.text);
        }
    }
}

#[test]
fn prompts_of_a_group_share_their_first_prefix_tokens_exactly() {
    let tok = Tokenizer::from_file(trained_tokenizer()).unwrap();
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
    let tok = Tokenizer::from_file(trained_tokenizer()).unwrap();
    let dir = tempdir("logs");
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
    let tok = Tokenizer::from_file(trained_tokenizer()).unwrap();
    let dir = tempdir("sharegpt");
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
    let cpus = ringbench::cli::online_cpus();
    let mut p = tok_plan(60);
    p.progress = false;
    p.cpus = vec![cpus[0]];
    p.sim.as_mut().unwrap().cpus = vec![cpus[cpus.len() - 1]];
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
    let bin = env!("CARGO_BIN_EXE_ringbench");
    let dir = tempdir("bin");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\":\"fine\"}\n{\"prompt\": 12}\n").unwrap();
    let out = Command::new(bin)
        .args(["run", "--quiet", "--dataset"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl line 2"), "{err}");
    let out = Command::new(bin)
        .args(["run", "--quiet", "--tokenizer", "/nonexistent/t.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let cpus = ringbench::cli::online_cpus();
    let out = Command::new(bin)
        .args([
            "run",
            "--quiet",
            "--request-count",
            "20",
            "--input-dist",
            "lognormal:50:400:800",
            "--output-dist",
            "uniform:8:0.5",
            "--cpus",
            &cpus[0].to_string(),
            "--tokenizer",
        ])
        .arg(trained_tokenizer())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
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
