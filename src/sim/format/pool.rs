//! Response bodies of the pooling endpoints (`POST /v1/embeddings`, `/v1/rerank`, TEI's
//! `/rerank`, `/v1/score`), as captured in `tests/data/apis/` (vLLM's shapes, llama.cpp's
//! where `--flavor llama-cpp` differs). Vectors and scores are deterministic functions of each
//! text's hash: the same text always gets the same numbers. An embedding answer is large
//! (8 inputs × 1024 floats is ~180 KB), so its numbers are never formatted one by one: each
//! comes from a table of 4096 values whose shortest decimal text is made once per process,
//! and is copied (or its four little-endian bytes base64-encoded) into the caller's reused
//! buffer. Like `format.rs`, it reads no clock and no socket.

use std::io::Write;
use std::sync::OnceLock;

use super::{put_hex16, put_json_str, put_u64};
use crate::plan::sim::Flavor;
use crate::plan::workload::splitmix64;
use crate::sim::request::{PoolBatch, PoolItem};

/// What every pooling answer needs besides the texts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolReply<'a> {
    pub seq: u64,
    pub created_s: u64,
    pub model: &'a str,
    pub flavor: Flavor,
}

/// Values in the table (a power of two).
const TABLE_LEN: usize = 4096;

/// The embedding values and their decimal text, one after another.
struct Table {
    values: [f32; TABLE_LEN],
    text: String,
    /// `text[ends[i - 1]..ends[i]]` is value `i`'s text.
    ends: [u32; TABLE_LEN],
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table {
            values: [0.0; TABLE_LEN],
            text: String::with_capacity(TABLE_LEN * 24),
            ends: [0; TABLE_LEN],
        };
        for i in 0..TABLE_LEN {
            // In [-0.2, 0.2), like a normalized 1024-wide vector's entries.
            let unit = (splitmix64(i as u64) >> 40) as f32 / (1u64 << 24) as f32;
            let v = (unit - 0.5) * 0.4;
            t.values[i] = v;
            // As vLLM prints an f32: widened to a double, shortest round-trip text.
            t.text.push_str(&f64::from(v).to_string());
            t.ends[i] = t.text.len() as u32;
        }
        t
    })
}

/// The table index of element `j` of the vector of a text hashed `hash`.
#[inline]
fn pick(hash: u64, j: u32) -> usize {
    (splitmix64(hash ^ (u64::from(j) << 32)) as usize) & (TABLE_LEN - 1)
}

/// Element `j` of the embedding of a text hashed `hash` (what the tests check bytes against).
#[cfg(test)]
pub(crate) fn embedding_value(hash: u64, j: u32) -> f32 {
    table().values[pick(hash, j)]
}

/// A pair's relevance score in [0, 1), from both texts' hashes.
pub(crate) fn score(query: u64, doc: u64) -> f64 {
    (splitmix64(query ^ doc.rotate_left(17)) >> 11) as f64 / (1u64 << 53) as f64
}

/// The prompt tokens of a pooling request, or why it cannot be answered: embeddings count
/// their inputs; rerank and score count every (query, document) pair they score.
pub(crate) fn check(pool: super::Pool, b: &PoolBatch) -> Result<u64, &'static str> {
    use super::Pool;
    let sum = |items: &[PoolItem]| items.iter().map(|i| u64::from(i.tokens)).sum::<u64>();
    match pool {
        Pool::Embeddings if b.items.is_empty() => Err("input must hold at least one text"),
        Pool::Embeddings => Ok(sum(&b.items)),
        Pool::Rerank if b.first.len() != 1 => Err("query must be one text"),
        Pool::Rerank | Pool::Score if b.items.is_empty() => {
            Err("documents (or texts, text_2) must hold at least one text")
        }
        Pool::Score if b.first.len() != 1 && b.first.len() != b.items.len() => {
            Err("text_1 must be one text or as many as text_2")
        }
        Pool::Score if b.first.is_empty() => Err("text_1 must hold at least one text"),
        Pool::Rerank | Pool::Score => {
            let firsts = match b.first.len() {
                1 => u64::from(b.first[0].tokens) * b.items.len() as u64,
                _ => sum(&b.first),
            };
            Ok(firsts + sum(&b.items))
        }
    }
}

/// The query (or `text_1`) paired with item `i`.
fn first_of(b: &PoolBatch, i: usize) -> &PoolItem {
    b.first.get(i).unwrap_or(&b.first[0])
}

/// `POST /v1/embeddings`: one vector of `dim` per input, floats or base64 of LE f32.
pub(crate) fn embeddings_body(
    out: &mut Vec<u8>,
    r: &PoolReply,
    b: &PoolBatch,
    tokens: u64,
    dim: u32,
    base64: bool,
    stamp_ns: u64,
) {
    out.clear();
    let llama = r.flavor == Flavor::LlamaCpp;
    if llama {
        llama_list_head(out, r);
        short_usage(out, tokens);
        out.extend_from_slice(b",\"data\":[");
    } else {
        vllm_list_head(out, r, b"embd-");
    }
    for (i, item) in b.items.iter().enumerate() {
        if !llama {
            item_head(out, i, b"embedding");
        } else {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"embedding\":");
        }
        match base64 {
            true => base64_vector(out, item.hash, dim),
            false => float_vector(out, item.hash, dim),
        }
        if llama {
            out.extend_from_slice(b",\"index\":");
            put_u64(out, i as u64);
            out.extend_from_slice(b",\"object\":\"embedding\"");
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"],");
    if !llama {
        long_usage(out, tokens);
        out.push(b',');
    }
    stamp(out, stamp_ns);
}

fn float_vector(out: &mut Vec<u8>, hash: u64, dim: u32) {
    let t = table();
    out.reserve(dim as usize * 24 + 2);
    out.push(b'[');
    for j in 0..dim {
        if j > 0 {
            out.push(b',');
        }
        let k = pick(hash, j);
        let start = if k == 0 { 0 } else { t.ends[k - 1] as usize };
        out.extend_from_slice(&t.text.as_bytes()[start..t.ends[k] as usize]);
    }
    out.push(b']');
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The vector's little-endian f32 bytes, base64 (standard alphabet, padded), in quotes.
fn base64_vector(out: &mut Vec<u8>, hash: u64, dim: u32) {
    let t = table();
    out.reserve(dim as usize * 4 / 3 + 8);
    out.push(b'"');
    let mut acc = 0u32; // pending bytes, high first
    let mut held = 0; // how many
    for j in 0..dim {
        for byte in t.values[pick(hash, j)].to_le_bytes() {
            acc = (acc << 8) | u32::from(byte);
            held += 1;
            if held == 3 {
                for shift in [18, 12, 6, 0] {
                    out.push(B64[((acc >> shift) & 63) as usize]);
                }
                acc = 0;
                held = 0;
            }
        }
    }
    match held {
        1 => {
            acc <<= 16;
            out.extend_from_slice(&[
                B64[(acc >> 18) as usize & 63],
                B64[(acc >> 12) as usize & 63],
            ]);
            out.extend_from_slice(b"==");
        }
        2 => {
            acc <<= 8;
            for shift in [18, 12, 6] {
                out.push(B64[((acc >> shift) & 63) as usize]);
            }
            out.push(b'=');
        }
        _ => {}
    }
    out.push(b'"');
}

/// `POST /v1/rerank` (Jina/Cohere shape): results by falling score, at most `top_n`; or, for
/// a TEI request (`texts`), TEI's bare array `[{"index":i,"score":s}, ...]` (which has no
/// room for a stamp: the caller sends it in `format::stamp_line`'s header). `order` is
/// scratch the caller reuses.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rerank_body(
    out: &mut Vec<u8>,
    r: &PoolReply,
    b: &PoolBatch,
    tokens: u64,
    top_n: Option<u32>,
    tei: bool,
    order: &mut Vec<(usize, f64)>,
    stamp_ns: u64,
) {
    out.clear();
    order.clear();
    let q = b.first[0].hash;
    order.extend(
        b.items
            .iter()
            .enumerate()
            .map(|(i, d)| (i, score(q, d.hash))),
    );
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if let Some(n) = top_n {
        order.truncate(n as usize);
    }
    if tei {
        out.push(b'[');
        for (k, &(i, s)) in order.iter().enumerate() {
            next_item(out, k, i);
            out.extend_from_slice(b",\"score\":");
            put_f64(out, s);
            out.push(b'}');
        }
        out.push(b']');
        return;
    }
    let llama = r.flavor == Flavor::LlamaCpp;
    if llama {
        llama_list_head(out, r);
    } else {
        out.extend_from_slice(b"{\"id\":\"score-");
        put_hex16(out, r.seq);
        out.extend_from_slice(b"\",\"model\":\"");
        put_json_str(out, r.model);
        out.extend_from_slice(b"\",");
    }
    short_usage(out, tokens);
    out.extend_from_slice(b",\"results\":[");
    for (k, &(i, s)) in order.iter().enumerate() {
        next_item(out, k, i);
        if !llama {
            out.extend_from_slice(b",\"document\":{\"text\":\"");
            put_json_str(out, &b.texts[b.items[i].text.clone()]);
            out.extend_from_slice(b"\",\"multi_modal\":null}");
        }
        out.extend_from_slice(b",\"relevance_score\":");
        put_f64(out, s);
        out.push(b'}');
    }
    out.extend_from_slice(b"],");
    stamp(out, stamp_ns);
}

/// `POST /v1/score`: one score per (`text_1`, `text_2`) pair, in order (vLLM's shape).
pub(crate) fn score_body(
    out: &mut Vec<u8>,
    r: &PoolReply,
    b: &PoolBatch,
    tokens: u64,
    stamp_ns: u64,
) {
    out.clear();
    vllm_list_head(out, r, b"score-");
    for (i, d) in b.items.iter().enumerate() {
        item_head(out, i, b"score");
        put_f64(out, score(first_of(b, i).hash, d.hash));
        out.push(b'}');
    }
    out.extend_from_slice(b"],");
    long_usage(out, tokens);
    out.push(b',');
    stamp(out, stamp_ns);
}

/// vLLM's list answer up to its items: `{"id":"PREFIX..","object":"list","created":..,
/// "model":..,"data":[`.
fn vllm_list_head(out: &mut Vec<u8>, r: &PoolReply, id_prefix: &[u8]) {
    out.extend_from_slice(b"{\"id\":\"");
    out.extend_from_slice(id_prefix);
    put_hex16(out, r.seq);
    out.extend_from_slice(b"\",\"object\":\"list\",\"created\":");
    put_u64(out, r.created_s);
    out.extend_from_slice(b",\"model\":\"");
    put_json_str(out, r.model);
    out.extend_from_slice(b"\",\"data\":[");
}

/// llama.cpp's list answer's first keys: `{"model":..,"object":"list",`.
fn llama_list_head(out: &mut Vec<u8>, r: &PoolReply) {
    out.extend_from_slice(b"{\"model\":\"");
    put_json_str(out, r.model);
    out.extend_from_slice(b"\",\"object\":\"list\",");
}

/// The `k`th item of an array (a comma before all but the first), up to its index `i`:
/// `{"index":i`.
fn next_item(out: &mut Vec<u8>, k: usize, i: usize) {
    if k > 0 {
        out.push(b',');
    }
    out.extend_from_slice(b"{\"index\":");
    put_u64(out, i as u64);
}

/// vLLM's item `i` (in place `i`) up to its value: `{"index":i,"object":"KIND","KIND":`.
fn item_head(out: &mut Vec<u8>, i: usize, kind: &[u8]) {
    next_item(out, i, i);
    out.extend_from_slice(b",\"object\":\"");
    out.extend_from_slice(kind);
    out.extend_from_slice(b"\",\"");
    out.extend_from_slice(kind);
    out.extend_from_slice(b"\":");
}

/// A score's shortest round-trip decimal (a handful per answer; `write!` into the buffer
/// allocates nothing).
fn put_f64(out: &mut Vec<u8>, v: f64) {
    let _ = write!(out, "{v:?}");
}

fn short_usage(out: &mut Vec<u8>, tokens: u64) {
    out.extend_from_slice(b"\"usage\":{\"prompt_tokens\":");
    put_u64(out, tokens);
    out.extend_from_slice(b",\"total_tokens\":");
    put_u64(out, tokens);
    out.push(b'}');
}

fn long_usage(out: &mut Vec<u8>, tokens: u64) {
    out.extend_from_slice(b"\"usage\":{\"prompt_tokens\":");
    put_u64(out, tokens);
    out.extend_from_slice(b",\"total_tokens\":");
    put_u64(out, tokens);
    out.extend_from_slice(
        b",\"completion_tokens\":0,\"prompt_tokens_details\":null,\"completion_tokens_details\":null}",
    );
}

fn stamp(out: &mut Vec<u8>, stamp_ns: u64) {
    out.extend_from_slice(b"\"ringbench_ns\":");
    put_u64(out, stamp_ns);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::request::parse_pool;

    fn reply(flavor: Flavor) -> PoolReply<'static> {
        PoolReply {
            seq: 1,
            created_s: 2,
            model: "m",
            flavor,
        }
    }

    #[test]
    fn float_and_base64_vectors_agree_and_are_deterministic() {
        let body = br#"{"input":["a b","c",[1,2,3]],"encoding_format":"float"}"#;
        let mut batch = PoolBatch::default();
        let job = parse_pool(body, &mut batch).unwrap();
        assert!(!job.base64);
        assert_eq!(batch.items.len(), 3);
        assert_eq!(check(super::super::Pool::Embeddings, &batch), Ok(6));
        let (mut floats, mut b64) = (vec![], vec![]);
        for flavor in [Flavor::Vllm, Flavor::LlamaCpp] {
            embeddings_body(&mut floats, &reply(flavor), &batch, 6, 7, false, 9);
            embeddings_body(&mut b64, &reply(flavor), &batch, 6, 7, true, 9);
            let f: serde_json::Value = serde_json::from_slice(&floats).unwrap();
            let b: serde_json::Value = serde_json::from_slice(&b64).unwrap();
            assert_eq!(f["ringbench_ns"], 9);
            for i in 0..3 {
                let v: Vec<f32> = f["data"][i]["embedding"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect();
                assert_eq!(v.len(), 7);
                let text = b["data"][i]["embedding"].as_str().unwrap();
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap();
                let w: Vec<f32> = bytes
                    .chunks(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                assert_eq!(v, w, "text and bytes give the same numbers");
                let again: Vec<f32> = (0..7)
                    .map(|j| embedding_value(batch.items[i].hash, j))
                    .collect();
                assert_eq!(v, again);
            }
        }
        // Every length of tail (0, 1, 2 pending bytes) pads right: dims 1..=3 are 4..=12 bytes.
        for dim in 1..=3 {
            embeddings_body(&mut b64, &reply(Flavor::Vllm), &batch, 6, dim, true, 9);
            let b: serde_json::Value = serde_json::from_slice(&b64).unwrap();
            use base64::Engine;
            let text = b["data"][0]["embedding"].as_str().unwrap();
            let n = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap()
                .len();
            assert_eq!(n, 4 * dim as usize);
        }
    }

    #[test]
    fn rerank_orders_by_score_and_cuts_at_top_n() {
        let body = br#"{"query":"q","documents":["a","b",{"text":"c \"d\""}],"top_n":2}"#;
        let mut batch = PoolBatch::default();
        let job = parse_pool(body, &mut batch).unwrap();
        assert_eq!((job.top_n, job.tei), (Some(2), false));
        let tokens = check(super::super::Pool::Rerank, &batch).unwrap();
        assert_eq!(tokens, 3 + 4);
        let mut out = vec![];
        let mut order = vec![];
        rerank_body(
            &mut out,
            &reply(Flavor::Vllm),
            &batch,
            tokens,
            job.top_n,
            false,
            &mut order,
            1,
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert!(results[0]["relevance_score"].as_f64() >= results[1]["relevance_score"].as_f64());
        let i = results[0]["index"].as_u64().unwrap() as usize;
        assert_eq!(results[0]["document"]["text"], ["a", "b", "c \"d\""][i]);
        rerank_body(
            &mut out,
            &reply(Flavor::Vllm),
            &batch,
            tokens,
            None,
            true,
            &mut order,
            1,
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 3);
    }

    #[test]
    fn score_pairs_one_to_many_and_pairwise() {
        let mut batch = PoolBatch::default();
        parse_pool(br#"{"text_1":"q r","text_2":["a","b"]}"#, &mut batch).unwrap();
        assert_eq!(check(super::super::Pool::Score, &batch), Ok(2 * 2 + 2));
        parse_pool(br#"{"text_1":["q","r"],"text_2":["a","b"]}"#, &mut batch).unwrap();
        assert_eq!(check(super::super::Pool::Score, &batch), Ok(4));
        parse_pool(
            br#"{"text_1":["q","r","s"],"text_2":["a","b"]}"#,
            &mut batch,
        )
        .unwrap();
        assert!(check(super::super::Pool::Score, &batch).is_err());
        parse_pool(br#"{"text_1":"q","text_2":"a"}"#, &mut batch).unwrap();
        let mut out = vec![];
        score_body(&mut out, &reply(Flavor::Vllm), &batch, 2, 3);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let s = v["data"][0]["score"].as_f64().unwrap();
        assert!((0.0..1.0).contains(&s));
        assert_eq!(v["usage"]["prompt_tokens"], 2);
    }
}
