//! OSL and its source end to end, against the in-process simulator: server usage when it is
//! sent, else the client tokenizer's count of the generated text (`--tokenizer`; counted on
//! the collector thread), else the token-bearing events — recorded per request in
//! `requests.jsonl`, counted in `tokens.output_source`, and feeding the per-token ITL. The
//! tokenizer is a byte-level BPE trained here on text this repository ships (no download);
//! the expected counts come from that tokenizer applied to the simulator's own text, fetched
//! over plain HTTP. Runs are short and serialized.

use crate::support::common::{cpu_pair, lock, made_dir, out_dir, read_jsonl, run_summary};
use ringbench::plan::{Load, Plan, Stop};
use ringbench::report::{self, Overrides};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tokenizers::Tokenizer;

const REQUESTS: u64 = 40;
const OSL: u32 = 16;
const TOKENS_PER_CHUNK: u32 = 3;

/// The README and the source comments: real prose, a few hundred KB.
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
    lines
}

/// A GPT-2-style byte-level BPE, small enough that some of the simulator's words take more
/// than one token. Trained once (a second or so of CPU): call it holding the lock.
fn trained_tokenizer() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
        use tokenizers::pre_tokenizers::byte_level::ByteLevel;
        use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper};
        use tokenizers::{PostProcessorWrapper, PreTokenizerWrapper, TokenizerBuilder};
        let byte_level = ByteLevel::new(false, true, true);
        let mut trainer = BpeTrainerBuilder::new()
            .vocab_size(600)
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
        let dir = made_dir("tok");
        let path = dir.join("tokenizer.json");
        tok.save(&path, false).unwrap();
        path
    })
}

/// The simulator's answer of `OSL` tokens, asked once without streaming, counted by the
/// trained tokenizer. Takes the lock (the caller must not hold it).
fn sim_text_tokens() -> u64 {
    let _g = lock();
    let tok = Tokenizer::from_file(trained_tokenizer()).unwrap();
    tok.encode(sim_text(), false).unwrap().len() as u64
}

/// The simulator's answer of `OSL` tokens, asked once without streaming.
fn sim_text() -> String {
    let sim = ringbench::sim::start(ringbench::sim::SimConfig::default()).unwrap();
    let body = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"max_tokens":{OSL},"stream":false}}"#
    );
    let mut s = std::net::TcpStream::connect(sim.addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    sim.stop();
    let json = &resp[resp.find("\r\n\r\n").unwrap() + 4..];
    let v: Value = serde_json::from_str(json.trim()).unwrap();
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A run of `REQUESTS`, under the lock (taken here: the caller must not hold it).
fn run(name: &str, usage: bool, tokenizer: bool) -> (PathBuf, Value) {
    let _g = lock();
    let dir = out_dir(name);
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut p = Plan::defaults();
    p.cpus = vec![client_cpu];
    p.model = Some("ringbench-sim".into());
    p.load = Load::Closed { concurrency: 2 };
    p.stop = Stop {
        request_count: Some(REQUESTS),
        duration_ns: None,
    };
    p.output_tokens = OSL;
    p.include_usage = usage;
    if tokenizer {
        p.workload.tokenizer = Some(trained_tokenizer().to_path_buf());
    }
    let sim = p.sim.as_mut().unwrap();
    sim.cpus = vec![sim_cpu];
    sim.itl_ms = 0.3;
    sim.tokens_per_chunk = TOKENS_PER_CHUNK;
    p.out_dir = Some(dir.clone());
    let s = run_summary(&p);
    (dir, s)
}

fn lines(dir: &Path) -> Vec<Value> {
    read_jsonl(&dir.join("requests.jsonl"))
}

fn sources(s: &Value) -> (u64, u64, u64) {
    let o = &s["tokens"]["output_source"];
    let n = |k: &str| o[k].as_u64().unwrap();
    (n("usage"), n("tokenizer"), n("events"))
}

/// Each event's fifth element (the tokenizer's count), 0 when absent.
fn text_tokens(line: &Value) -> Vec<u64> {
    line["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[1].as_u64() > Some(0))
        .map(|e| e.get(4).and_then(Value::as_u64).unwrap_or(0))
        .collect()
}

#[test]
fn without_usage_the_tokenizer_counts_the_text_and_the_per_token_view_follows_it() {
    let want = sim_text_tokens();
    let events = u64::from(OSL.div_ceil(TOKENS_PER_CHUNK));
    // The test tells the sources apart only if the counts differ.
    assert!(want != events && want != u64::from(OSL), "{want}");

    let (dir, s) = run("tokenizer", false, true);
    assert_eq!(sources(&s), (0, REQUESTS, 0));
    assert_eq!(s["tokens"]["output_total"], REQUESTS * want);
    let mut per_token_samples = 0;
    for l in lines(&dir).iter().filter(|l| l["outcome"] == "ok") {
        assert_eq!(l["output_source"], "tokenizer", "{l}");
        assert_eq!(l["output_tokens"], want, "{l}");
        assert_eq!(l["usage_completion_tokens"], Value::Null);
        let per_event = text_tokens(l);
        assert_eq!(per_event.len() as u64, events);
        assert_eq!(per_event.iter().sum::<u64>(), want, "{l}");
        // One per-token sample per token after the first event that completed one.
        let first = per_event.iter().position(|&n| n > 0).unwrap();
        per_token_samples += per_event[first + 1..].iter().sum::<u64>();
    }
    assert_eq!(s["latency_ms"]["itl_per_token"]["count"], per_token_samples);
    // The counts live in the records: `report` needs no tokenizer to give the same summary.
    let again = report::recompute(&dir, &Overrides::default()).unwrap();
    assert_eq!(serde_json::to_value(&again).unwrap(), s);
}

#[test]
fn without_usage_or_tokenizer_events_count_and_usage_wins_over_the_tokenizer() {
    let (dir, s) = run("events", false, false);
    let events = u64::from(OSL.div_ceil(TOKENS_PER_CHUNK));
    assert_eq!(sources(&s), (0, 0, REQUESTS));
    for l in lines(&dir) {
        assert_eq!(l["output_source"], "events");
        assert_eq!(l["output_tokens"], events);
        assert!(text_tokens(&l).iter().all(|&n| n == 0), "{l}");
    }

    let (dir, s) = run("usage", true, true);
    assert_eq!(sources(&s), (REQUESTS, 0, 0));
    let by_text = sim_text_tokens();
    for l in lines(&dir) {
        assert_eq!(l["output_source"], "usage");
        assert_eq!(l["output_tokens"], OSL);
        // The tokenizer's per-event counts are still kept for the per-token view.
        assert_eq!(text_tokens(&l).iter().sum::<u64>(), by_text, "{l}");
    }
    // Per-token samples add up to the server's OSL (scaled shares), minus the first event's.
    assert!(s["latency_ms"]["itl_per_token"]["count"].as_u64().unwrap() > 0);
}
