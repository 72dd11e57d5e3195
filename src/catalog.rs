//! Before the run: every request the workers will send, pre-serialized (head + body bytes), with
//! its prompt token count known up front. Stage 0 of the flow (plan → **catalog** → schedule →
//! worker …): the hot path only picks an entry by id and hands its bytes to the kernel.
//!
//! Prompts are synthetic until a tokenizer is given: words drawn (seeded) from a list of
//! common English words that are each one token in the GPT-2/Llama-style BPE vocabularies,
//! each preceded by a space. The input length is therefore an approximation ("one word ≈ one
//! token"), and the report says so.

use crate::plan::{Endpoint, Plan};
use bytes::Bytes;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::fmt::Write as _;

/// How the input lengths were obtained, stated in the summary.
pub const SYNTHETIC_METHOD: &str =
    "approximate: synthetic prompt of N common English words, one word counted as one token";

/// Distinct prompts kept; requests cycle through them. Bounded so memory does not grow with
/// the request count, and large enough that a prefix cache cannot hold them all as one.
const MAX_DISTINCT: usize = 1024;

const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "people", "year",
    "water", "house", "light", "world", "school", "river", "city", "music", "story", "paper",
    "table", "market", "green", "small", "large", "early", "young", "north", "south", "simple",
];

/// One pre-built request.
#[derive(Clone, Debug)]
pub struct Entry {
    pub bytes: Bytes,
    pub input_tokens: u32,
}

/// All requests of a run; entry `id % len` is sent for arrival `id`.
#[derive(Clone, Debug)]
pub struct Catalog {
    entries: Vec<Entry>,
    pub input_method: &'static str,
}

impl Catalog {
    pub fn build(plan: &Plan, host_header: &str, model: &str) -> Catalog {
        let total = plan
            .stop
            .request_count
            .map_or(MAX_DISTINCT as u64, |c| c + plan.warmup_requests);
        let distinct = (total as usize).clamp(1, MAX_DISTINCT);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(plan.seed ^ 0x5eed_ca7a);
        let head_extra = extra_headers(plan);
        let entries = (0..distinct)
            .map(|_| {
                let prompt = synthetic_prompt(&mut rng, plan.input_tokens);
                let body = request_body(plan, model, &prompt);
                let bytes = request_bytes(plan.endpoint, host_header, &head_extra, &body);
                Entry {
                    bytes: Bytes::from(bytes),
                    input_tokens: plan.input_tokens,
                }
            })
            .collect();
        Catalog {
            entries,
            input_method: SYNTHETIC_METHOD,
        }
    }

    #[inline]
    pub fn get(&self, id: u64) -> &Entry {
        &self.entries[(id % self.entries.len() as u64) as usize]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn synthetic_prompt(rng: &mut Xoshiro256PlusPlus, tokens: u32) -> String {
    let mut s = String::with_capacity(tokens as usize * 6);
    for i in 0..tokens {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
    s
}

fn extra_headers(plan: &Plan) -> String {
    let mut h = String::new();
    if let Some(key) = &plan.api_key {
        let _ = write!(h, "Authorization: Bearer {key}\r\n");
    }
    for (k, v) in &plan.headers {
        let _ = write!(h, "{k}: {v}\r\n");
    }
    h
}

/// The JSON body, built with serde_json so prompts and names are escaped correctly.
pub fn request_body(plan: &Plan, model: &str, prompt: &str) -> Vec<u8> {
    let mut body = serde_json::Map::new();
    body.insert("model".into(), model.into());
    match plan.endpoint {
        Endpoint::Chat => {
            let msg = serde_json::json!([{ "role": "user", "content": prompt }]);
            body.insert("messages".into(), msg);
        }
        Endpoint::Completions => {
            body.insert("prompt".into(), prompt.into());
        }
    }
    body.insert("max_tokens".into(), plan.output_tokens.into());
    body.insert("stream".into(), plan.stream.into());
    if plan.stream && plan.include_usage {
        body.insert(
            "stream_options".into(),
            serde_json::json!({ "include_usage": true }),
        );
    }
    serde_json::to_vec(&serde_json::Value::Object(body)).expect("a JSON map always serializes")
}

fn request_bytes(endpoint: Endpoint, host: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut head = String::with_capacity(256 + extra.len());
    let _ = write!(
        head,
        "POST {} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream, application/json\r\nUser-Agent: ringbench/{}\r\n\
         Content-Length: {}\r\n{extra}\r\n",
        endpoint.path(),
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_valid_http_with_the_asked_lengths() {
        let mut plan = Plan::defaults();
        plan.input_tokens = 7;
        plan.output_tokens = 33;
        plan.api_key = Some("sk-x".into());
        let cat = Catalog::build(&plan, "127.0.0.1:8000", "m\"odel");
        assert_eq!(cat.len(), 100);
        let e = cat.get(101);
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut req = httparse::Request::new(&mut headers);
        let head_len = match req.parse(&e.bytes).unwrap() {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => panic!("head incomplete"),
        };
        assert_eq!(req.path, Some("/v1/chat/completions"));
        let body: serde_json::Value = serde_json::from_slice(&e.bytes[head_len..]).unwrap();
        assert_eq!(body["model"], "m\"odel");
        assert_eq!(body["max_tokens"], 33);
        assert_eq!(body["stream_options"]["include_usage"], true);
        let prompt = body["messages"][0]["content"].as_str().unwrap();
        assert_eq!(prompt.split(' ').count(), 7);
        let auth = req
            .headers
            .iter()
            .find(|h| h.name == "Authorization")
            .unwrap();
        assert_eq!(auth.value, b"Bearer sk-x");
    }

    #[test]
    fn same_seed_same_prompts() {
        let plan = Plan::defaults();
        let a = Catalog::build(&plan, "h", "m");
        let b = Catalog::build(&plan, "h", "m");
        assert_eq!(a.get(5).bytes, b.get(5).bytes);
        assert_ne!(a.get(5).bytes, a.get(6).bytes);
    }
}
