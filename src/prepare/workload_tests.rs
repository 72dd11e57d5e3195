//! The workload before a run, against a real LLM tokenizer (GPT-2's, converted from the
//! vocabulary the `tiktoken-rs` crate embeds — no download — see `run::testkit::gpt2`): every
//! prompt `prepare` builds re-encodes to exactly the length it was asked, length
//! distributions, datasets (production logs, ShareGPT), shared prefixes and trace lines
//! (`hash_ids`) with the text they share, down to the request bodies the catalog sends, and a
//! run that stores the workload in its summary. What the binary prints and refuses is in
//! `tests/it/workload.rs`. Compiled with the `tokenizer` feature (all of it reads GPT-2's).
#![cfg(feature = "tokenizer")]

use super::prepare;
use crate::plan::workload::LengthDist;
use crate::plan::workload::PrefixSpec;
use crate::plan::workload::{DatasetKind, DatasetSpec, Sampling};
use crate::plan::{Load, Plan, Stop};
use crate::run::testkit::trace::{write_trace, TRACE};
use crate::run::testkit::{self, lock, made_dir};
use std::path::Path;
use tokenizers::Tokenizer;

/// GPT-2's tokenizer (converted from tiktoken-rs's embedded r50k_base, see `testkit::gpt2`).
fn gpt2() -> &'static Path {
    testkit::gpt2::tokenizer_json()
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

// Prints how fast prompts are prepared (the figure a reader of a slow run wants).
#[allow(clippy::print_stderr)]
#[test]
fn every_prompt_reencodes_to_exactly_the_asked_length() {
    // Timed (and a few seconds of CPU): held apart from runs.
    let _g = lock();
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
    let prepared = prepare(&p).unwrap();
    let pr = &prepared.prompts[0];
    // Salted: the salt's words (value 0 until a worker writes the request's), a line break,
    // the item's text; all of it counted.
    let k = prepared.salt.as_ref().unwrap().tokens as usize;
    let salt = &pr.text[..pr.text.find('\n').unwrap()];
    assert_eq!(salt.split_whitespace().count(), k, "{salt:?}");
    assert!(
        pr.text.ends_with("\nHow does the pacer wait?"),
        "{:?}",
        pr.text
    );
    assert_eq!(pr.salt.map(|s| (s.at, s.words as usize)), Some((0, k)));
    assert_eq!(pr.input_tokens as usize, reencode(&tok, &pr.text).len());
    p.workload.prompt_salt = false;
    let pr = &prepare(&p).unwrap().prompts[0];
    assert_eq!(pr.text, "How does the pacer wait?");
    assert_eq!(pr.input_tokens as usize, reencode(&tok, &pr.text).len());
    p.workload.prompt_salt = true;
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
    let mut p = testkit::sim_plan();
    p.workload.tokenizer = Some(gpt2().to_path_buf());
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
    drop(prepared);
    let summary = crate::run::run(&p).unwrap();
    assert_eq!(summary.counts.tally.ok, 60);
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
fn trace_prompts_are_exact_and_shared_hash_ids_share_their_text() {
    let tok = Tokenizer::from_file(gpt2()).unwrap();
    let path = write_trace(&made_dir("prompts"), TRACE);
    let mut p = Plan::defaults();
    p.load = Load::Trace(crate::plan::workload::TraceLoad::open(&path, 16, 1.0, None).unwrap());
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
    let cat = super::catalog::Catalog::build(&p, &prepared, "h", "m");
    let body = |i: u64| {
        let b = cat.bytes(i);
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
