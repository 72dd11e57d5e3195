//! The salt end to end before the wire: the bytes `Catalog::write` gives a worker for a
//! request id — the very bytes it sends — re-encode with GPT-2's tokenizer (see
//! `run::testkit::gpt2`) to exactly the entry's length for ids far past 10^6; no two ids of a
//! run and no two nonces send the same prompt; shared prefixes stay shared up to their last
//! byte and differ right after; unsalted runs repeat (and the tally says how much); a sweep
//! gives each point its own nonce. Compiled with the `tokenizer` feature.
#![cfg(feature = "tokenizer")]

use super::catalog::Catalog;
use super::prepare;
use crate::plan::workload::{DatasetKind, DatasetSpec, PrefixSpec, Sampling};
use crate::plan::{Endpoint, Plan};
use crate::run::testkit::{self, made_dir};
use std::collections::HashSet;
use tokenizers::Tokenizer;

/// The body of the request `cat` gives a worker for `id`.
fn body(cat: &Catalog, id: u64) -> serde_json::Value {
    let mut out = vec![];
    cat.write(id, 0, &mut out);
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let len: usize = std::str::from_utf8(&out[..at])
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(out.len() - at, len, "Content-Length still right");
    serde_json::from_slice(&out[at..]).unwrap()
}

fn content(cat: &Catalog, id: u64) -> String {
    let b = body(cat, id);
    let c = &b["messages"][0]["content"];
    c.as_str().or(b["prompt"].as_str()).unwrap().to_string()
}

fn ids_of(cat: &Catalog, n: u64) -> HashSet<String> {
    (0..n).map(|id| content(cat, id)).collect()
}

fn catalog(plan: &Plan) -> Catalog {
    Catalog::build(plan, &prepare(plan).unwrap(), "h", "m")
}

/// Lengths 1..=40 (salts shorter than full ones included), then every 97th to 4,000.
fn lengths() -> Vec<u32> {
    let mut v: Vec<u32> = (1..=40).chain((41..4000).step_by(97)).collect();
    v.push(4000);
    v
}

#[test]
fn salted_prompts_reencode_to_their_exact_length_for_ids_past_a_million() {
    let tok = Tokenizer::from_file(testkit::gpt2::tokenizer_json()).unwrap();
    let dir = made_dir("salt-lengths");
    let path = dir.join("lengths.jsonl");
    let lines: String = lengths()
        .iter()
        .map(|n| format!("{{\"prompt_tokens\":{n},\"completion_tokens\":1}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    let mut p = Plan::defaults();
    p.stop.request_count = Some(lengths().len() as u64);
    p.workload.tokenizer = Some(testkit::gpt2::tokenizer_json().to_path_buf());
    p.workload.prompt_nonce = Some(0xfeed_f00d);
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Logs,
        path,
        sampling: Sampling::Sequential,
    });
    let prepared = prepare(&p).unwrap();
    let k = prepared.salt.as_ref().unwrap().tokens;
    assert_eq!(
        k, 4,
        "1,024 one-token words of one width: 4 words reach 2^40"
    );
    let cat = Catalog::build(&p, &prepared, "h", "m");
    let len = lengths().len() as u64;
    for (e, &n) in lengths().iter().enumerate() {
        let e = e as u64;
        assert_eq!(cat.get(e).input_tokens, n);
        let mut seen = HashSet::new();
        let mut values = HashSet::new();
        for j in [0, 1, 1_000_003, 987_654_321_012, u64::MAX / len - 1] {
            let id = e + j * len;
            let text = content(&cat, id);
            let count = tok.encode(text.as_str(), false).unwrap().len() as u32;
            assert_eq!(count, n, "entry {e}, id {id}: {text:.80?}");
            seen.insert(text);
            // A prompt of n < k tokens has an n-word salt: 1,024^n values.
            values.insert(id.wrapping_add(0xfeed_f00d) % 1024u64.pow(n.min(k)));
        }
        assert_eq!(
            seen.len(),
            values.len(),
            "one prompt per salt value (length {n})"
        );
        assert!(
            n < k || seen.len() == 5,
            "five ids, five prompts (length {n})"
        );
    }
}

#[test]
fn no_two_requests_of_a_run_send_the_same_prompt() {
    let mut p = Plan::defaults();
    p.input_tokens = 16;
    p.stop.request_count = Some(5000);
    p.workload.prompt_nonce = Some(7);
    let cat = catalog(&p);
    assert_eq!(
        ids_of(&cat, 5000).len(),
        5000,
        "5,000 ids over 1,024 entries"
    );
    // Consecutive ids differ in their very first word.
    let first = |id| content(&cat, id).split(' ').next().unwrap().to_string();
    assert!((0..200).all(|id| first(id) != first(id + 1)));
    // The salt replaces filler: every prompt is still 16 words.
    assert!((0..50).all(|id| content(&cat, id).split(' ').count() == 16));
    let mut tally = cat.prompt_tally();
    (0..5000).for_each(|id| tally.sent(id));
    assert_eq!((tally.total(), tally.distinct()), (5000, 5000));

    // Unsalted, the 1,025th request repeats the first: what the salt is for.
    p.workload.prompt_salt = false;
    p.workload.prompt_nonce = None;
    let plain = catalog(&p);
    assert_eq!(ids_of(&plain, 5000).len(), 1024);
    assert_eq!(content(&plain, 1024), content(&plain, 0));
    let mut tally = plain.prompt_tally();
    (0..5000).for_each(|id| tally.sent(id));
    assert_eq!((tally.total(), tally.distinct()), (5000, 1024));
}

#[test]
fn another_nonce_sends_other_prompts_and_the_same_nonce_the_same_bytes() {
    let mut p = Plan::defaults();
    p.stop.request_count = Some(3000);
    let run = |nonce| {
        let mut p = p.clone();
        p.workload.prompt_nonce = Some(nonce);
        ids_of(&catalog(&p), 3000)
    };
    let (a, b) = (run(1 << 33), run(0x9e37_79b9_7f4a_7c15));
    assert_eq!(a.intersection(&b).count(), 0, "two runs share no prompt");
    assert_eq!(run(1 << 33), a, "--prompt-nonce reproduces a run's bytes");
    p.workload.prompt_nonce = Some(5);
    let cat = catalog(&p);
    let mut x = vec![];
    let mut y = vec![];
    cat.write(17, 0, &mut x);
    cat.write(17, 0, &mut y);
    assert_eq!(x, y);
}

#[test]
fn shared_prefixes_stay_shared_to_their_last_byte_and_differ_right_after() {
    let mut p = Plan::defaults();
    p.input_tokens = 64;
    p.stop.request_count = Some(2000);
    p.workload.prompt_nonce = Some(3);
    p.workload.prefix = Some(PrefixSpec {
        groups: 1,
        tokens: 40,
        zipf: None,
    });
    let prepared = prepare(&p).unwrap();
    let cat = Catalog::build(&p, &prepared, "h", "m");
    let prefix: String = prepared.prompts[0]
        .text
        .split(' ')
        .take(40)
        .collect::<Vec<_>>()
        .join(" ");
    let texts: Vec<String> = (0..2000).map(|id| content(&cat, id)).collect();
    assert_eq!(texts.iter().collect::<HashSet<_>>().len(), 2000);
    for t in &texts {
        assert!(t.starts_with(&format!("{prefix} ")), "{t:.60}");
        assert_eq!(t.split(' ').count(), 64);
    }
    // Two requests share the prefix and its space, then their salts' first words differ.
    let after = |t: &str| t[prefix.len() + 1..].split(' ').next().unwrap().to_string();
    for id in 0..100 {
        assert_ne!(after(&texts[id]), after(&texts[id + 1]));
        assert_eq!(after(&texts[id]).len(), 5, "a word of the pool");
    }
}

#[test]
fn short_prompts_carry_shorter_salts_and_the_tally_counts_their_repeats() {
    let mut p = Plan::defaults();
    p.input_tokens = 1;
    p.stop.request_count = Some(5000);
    p.workload.prompt_nonce = Some(0);
    let prepared = prepare(&p).unwrap();
    assert_eq!(prepared.stats.salt.as_ref().unwrap().short_prompts, 1024);
    let cat = Catalog::build(&p, &prepared, "h", "m");
    // One word each: the 64 words of the synthetic pool, and nothing else.
    assert_eq!(ids_of(&cat, 5000).len(), 64);
    let mut tally = cat.prompt_tally();
    (0..5000).for_each(|id| tally.sent(id));
    assert_eq!(tally.distinct(), 64, "the tally agrees with the bytes");
}

#[test]
fn chat_messages_sent_as_given_carry_the_salt_in_their_first_content() {
    let dir = made_dir("salt-messages");
    let path = dir.join("m.jsonl");
    std::fs::write(
        &path,
        "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"why \\\"quote\\\"?\"}]}\n",
    )
    .unwrap();
    let mut p = Plan::defaults();
    p.stop.request_count = Some(10);
    p.workload.prompt_nonce = Some(11);
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Jsonl,
        path,
        sampling: Sampling::Sequential,
    });
    let cat = catalog(&p);
    let firsts: HashSet<String> = (0..10)
        .map(|id| {
            let b = body(&cat, id);
            assert_eq!(b["messages"][1]["content"], "why \"quote\"?");
            let c = b["messages"][0]["content"].as_str().unwrap().to_string();
            let (salt, rest) = c.split_once('\n').unwrap();
            assert_eq!((salt.split(' ').count(), rest), (7, "be brief"));
            c
        })
        .collect();
    assert_eq!(firsts.len(), 10, "one item, ten ids, ten prompts");
    // The completions API sends the joined text, salted the same way.
    p.endpoint = Endpoint::Completions;
    let cat = catalog(&p);
    let t = content(&cat, 3);
    assert!(t.ends_with("\nbe brief\nwhy \"quote\"?"), "{t}");
}

#[test]
fn a_sweep_gives_every_point_and_repeat_its_own_nonce() {
    use crate::study::sweep::{plan_at, PointSpec};
    use crate::summary::study::Axis;
    let mut base = Plan::defaults();
    let spec = PointSpec {
        axis: Axis::Concurrency,
        repeats: 3,
        slos: vec![],
        warmup_given: false,
        allow_invalid: false,
    };
    assert_eq!(
        plan_at(&base, &spec, 4.0, 0, None).workload.prompt_nonce,
        None
    );
    base.workload.prompt_nonce = Some(42);
    let nonces: HashSet<u64> = [1.0, 2.0, 4.0]
        .iter()
        .flat_map(|&load| (0..3).map(move |r| (load, r)))
        .map(|(load, r)| {
            plan_at(&base, &spec, load, r, None)
                .workload
                .prompt_nonce
                .unwrap()
        })
        .collect();
    assert_eq!(nonces.len(), 9);
    assert!(!nonces.contains(&42));
    let again = plan_at(&base, &spec, 2.0, 1, None).workload.prompt_nonce;
    assert_eq!(
        again,
        plan_at(&base, &spec, 2.0, 1, None).workload.prompt_nonce
    );
}
