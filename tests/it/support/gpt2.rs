//! Test support: GPT-2's byte-level BPE vocabulary (r50k_base, as the `tiktoken-rs` crate
//! embeds it — no download) written as a Hugging Face `tokenizer.json`, so the tests run the
//! `tokenizers` crate on a real LLM tokenizer whose ids are GPT-2's. One file for both test
//! binaries: `tests/it` has it as `support::gpt2`, the crate's unit tests include it as
//! `run::testkit::gpt2` (so it uses nothing but std, serde_json and tiktoken-rs).
//!
//! The conversion is the usual tiktoken → HF one: the ranks are read back through
//! tiktoken-rs's public decoder (rank r decodes to its bytes); each token's merge is the pair
//! that byte-pair encoding of its own bytes ends with when only lower ranks may merge; bytes
//! become GPT-2's printable byte-to-unicode alphabet; a ByteLevel pre-tokenizer (GPT-2's split
//! pattern) and decoder surround the BPE model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// GPT-2's vocabulary size without `<|endoftext|>`.
const RANKS: u32 = 50_256;

/// The converted tokenizer, written once per test binary into a temporary folder (a second
/// or two of CPU: a test that may be the first to ask holds its binary's lock).
pub fn tokenizer_json() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ringbench-gpt2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, serde_json::to_vec(&convert()).unwrap()).unwrap();
        path
    })
}

/// tiktoken-rs's own GPT-2 encoder, to check the conversion against.
pub fn tiktoken() -> tiktoken_rs::CoreBPE {
    tiktoken_rs::r50k_base().unwrap()
}

fn convert() -> serde_json::Value {
    let bpe = tiktoken();
    let tokens: Vec<Vec<u8>> = (0..RANKS)
        .map(|r| bpe.decode_bytes(&[r]).unwrap())
        .collect();
    let ranks: HashMap<&[u8], u32> = tokens
        .iter()
        .enumerate()
        .map(|(r, t)| (t.as_slice(), r as u32))
        .collect();
    assert_eq!(ranks.len(), RANKS as usize, "ranks map to distinct bytes");
    let alphabet = byte_alphabet();
    let text = |b: &[u8]| -> String { b.iter().map(|&x| alphabet[x as usize]).collect() };
    let mut vocab = serde_json::Map::new();
    let mut merges = Vec::new();
    for (r, t) in tokens.iter().enumerate() {
        vocab.insert(text(t), (r as u32).into());
        if t.len() > 1 {
            let parts = bpe_parts(t, &ranks, r as u32);
            assert_eq!(parts.len(), 2, "token {r} comes from one merge");
            merges.push(format!("{} {}", text(parts[0]), text(parts[1])));
        }
    }
    vocab.insert("<|endoftext|>".into(), RANKS.into());
    let byte_level = |prefix: bool| {
        serde_json::json!({"type": "ByteLevel", "add_prefix_space": prefix,
                           "trim_offsets": true, "use_regex": true})
    };
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": RANKS, "content": "<|endoftext|>", "single_word": false,
                          "lstrip": false, "rstrip": false, "normalized": true, "special": true}],
        "normalizer": null,
        "pre_tokenizer": byte_level(false),
        "post_processor": byte_level(false),
        "decoder": byte_level(false),
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": false, "byte_fallback": false,
                  "vocab": vocab, "merges": merges}
    })
}

/// Byte-pair encoding of `piece` allowing only merges into ranks below `max_rank`.
fn bpe_parts<'a>(piece: &'a [u8], ranks: &HashMap<&[u8], u32>, max_rank: u32) -> Vec<&'a [u8]> {
    let mut bounds: Vec<usize> = (0..=piece.len()).collect();
    loop {
        let best = (0..bounds.len() - 2)
            .filter_map(|i| {
                let rank = *ranks.get(&piece[bounds[i]..bounds[i + 2]])?;
                (rank < max_rank).then_some((rank, i))
            })
            .min();
        let Some((_, i)) = best else { break };
        bounds.remove(i + 1);
    }
    bounds.windows(2).map(|w| &piece[w[0]..w[1]]).collect()
}

/// GPT-2's map from bytes to printable characters (`bytes_to_unicode`).
fn byte_alphabet() -> Vec<char> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut next = 256;
    (0..256u32)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap()
            } else {
                next += 1;
                char::from_u32(next - 1).unwrap()
            }
        })
        .collect()
}
