//! Before the run: every request the workers will send, pre-serialized (head + body bytes), with
//! its prompt token count known up front. Stage 0 of the flow (plan → **catalog** → schedule →
//! worker …): the hot path only picks an entry by id and hands its bytes to the kernel.
//!
//! What each request asks (prompt, ISL, `max_tokens`) is decided by `workload` before this;
//! here it only becomes bytes. The catalog is bounded (`workload::MAX_DISTINCT` entries, cycled
//! by id; a trace replay one per line, at most `trace::MAX_TRACE_REQUESTS`), so memory does
//! not grow with the run.

use crate::plan::{Endpoint, Plan};
#[cfg(test)]
use crate::prepare::Prepared;
use crate::prepare::Prompt;
use crate::summary::workload::WorkloadStats;
use bytes::Bytes;
use std::fmt::Write as _;

/// One pre-built request.
#[derive(Clone, Debug)]
pub struct Entry {
    pub bytes: Bytes,
    pub input_tokens: u32,
    /// `max_tokens` asked: the intended output length.
    pub output_tokens: u32,
}

/// All requests of a run; entry `id % len` is sent for arrival `id`.
#[derive(Clone, Debug)]
pub struct Catalog {
    entries: Vec<Entry>,
    pub input_method: String,
}

impl Catalog {
    /// Serializes every prepared prompt (see `workload::prepare`), keeping them.
    #[cfg(test)]
    pub fn build(plan: &Plan, prepared: &Prepared, host_header: &str, model: &str) -> Catalog {
        let prompts = prepared.prompts.clone();
        Catalog::from_prompts(plan, prompts, &prepared.stats, host_header, model)
    }

    /// `build`, consuming the prompts: each text is freed once it is bytes, so a large trace
    /// is never held twice.
    pub fn from_prompts(
        plan: &Plan,
        prompts: Vec<Prompt>,
        stats: &WorkloadStats,
        host_header: &str,
        model: &str,
    ) -> Catalog {
        let head_extra = extra_headers(plan);
        let entries = prompts
            .into_iter()
            .map(|p| {
                let body = request_body(plan, model, &p);
                let bytes = request_bytes(plan.endpoint, host_header, &head_extra, &body);
                Entry {
                    bytes: Bytes::from(bytes),
                    input_tokens: p.input_tokens,
                    output_tokens: p.max_tokens,
                }
            })
            .collect();
        Catalog {
            entries,
            input_method: stats.input_method.clone(),
        }
    }

    /// The largest `max_tokens` of any entry.
    pub fn max_output_tokens(&self) -> u32 {
        self.entries
            .iter()
            .map(|e| e.output_tokens)
            .max()
            .unwrap_or(1)
    }

    #[inline]
    pub fn get(&self, id: u64) -> &Entry {
        &self.entries[(id % self.entries.len() as u64) as usize]
    }

    /// Entries (distinct requests), for tests.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
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

/// The JSON body, built with serde_json so prompts and names are escaped correctly. The
/// request options come last, `--extra-body` after everything, so its keys win.
pub fn request_body(plan: &Plan, model: &str, prompt: &Prompt) -> Vec<u8> {
    let mut body = serde_json::Map::new();
    body.insert("model".into(), model.into());
    match (plan.endpoint, &prompt.messages) {
        (Endpoint::Chat, Some(messages)) => {
            body.insert("messages".into(), messages.clone());
        }
        (Endpoint::Chat, None) => {
            let msg = serde_json::json!([{ "role": "user", "content": prompt.text }]);
            body.insert("messages".into(), msg);
        }
        (Endpoint::Completions, _) => {
            body.insert("prompt".into(), prompt.text.as_str().into());
        }
    }
    body.insert("max_tokens".into(), prompt.max_tokens.into());
    body.insert("stream".into(), plan.stream.into());
    if plan.stream && plan.include_usage {
        body.insert(
            "stream_options".into(),
            serde_json::json!({ "include_usage": true }),
        );
    }
    let opts = &plan.workload.request;
    if opts.ignore_eos {
        body.insert("ignore_eos".into(), true.into());
    }
    if let Some(n) = opts.min_tokens {
        // Never above max_tokens: servers refuse min_tokens > max_tokens.
        body.insert("min_tokens".into(), n.min(prompt.max_tokens).into());
    }
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(extra) = &opts.extra_body {
        body.extend(extra.clone());
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
    use crate::prepare::prepare;

    fn parse(bytes: &[u8]) -> (String, serde_json::Value, Option<Vec<u8>>) {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut req = httparse::Request::new(&mut headers);
        let head_len = match req.parse(bytes).unwrap() {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => panic!("head incomplete"),
        };
        let auth = req
            .headers
            .iter()
            .find(|h| h.name == "Authorization")
            .map(|h| h.value.to_vec());
        let body = serde_json::from_slice(&bytes[head_len..]).unwrap();
        (req.path.unwrap().to_string(), body, auth)
    }

    #[test]
    fn requests_are_valid_http_with_the_asked_lengths() {
        let mut plan = Plan::defaults();
        plan.input_tokens = 7;
        plan.output_tokens = 33;
        plan.api_key = Some("sk-x".into());
        let cat = Catalog::build(&plan, &prepare(&plan).unwrap(), "127.0.0.1:8000", "m\"odel");
        assert_eq!(cat.len(), 100);
        let e = cat.get(101);
        assert_eq!((e.input_tokens, e.output_tokens), (7, 33));
        let (path, body, auth) = parse(&e.bytes);
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(body["model"], "m\"odel");
        assert_eq!(body["max_tokens"], 33);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(body.get("ignore_eos").is_none() && body.get("temperature").is_none());
        let prompt = body["messages"][0]["content"].as_str().unwrap();
        assert_eq!(prompt.split(' ').count(), 7);
        assert_eq!(auth.as_deref(), Some(&b"Bearer sk-x"[..]));
    }

    #[test]
    fn same_seed_same_prompts() {
        let plan = Plan::defaults();
        let a = Catalog::build(&plan, &prepare(&plan).unwrap(), "h", "m");
        let b = Catalog::build(&plan, &prepare(&plan).unwrap(), "h", "m");
        assert_eq!(a.get(5).bytes, b.get(5).bytes);
        assert_ne!(a.get(5).bytes, a.get(6).bytes);
    }

    #[test]
    fn request_options_are_merged_and_extra_body_wins() {
        let mut plan = Plan::defaults();
        plan.endpoint = Endpoint::Completions;
        plan.output_tokens = 10;
        let r = &mut plan.workload.request;
        r.ignore_eos = true;
        r.min_tokens = Some(50);
        r.temperature = Some(0.0);
        r.extra_body =
            Some(serde_json::from_str(r#"{"top_p":0.9,"max_tokens":12,"seed":1}"#).unwrap());
        let cat = Catalog::build(&plan, &prepare(&plan).unwrap(), "h", "m");
        let (path, body, _) = parse(&cat.get(0).bytes);
        assert_eq!(path, "/v1/completions");
        assert!(body["prompt"].is_string());
        assert_eq!(body["ignore_eos"], true);
        assert_eq!(body["min_tokens"], 10, "clamped to max_tokens");
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["max_tokens"], 12, "--extra-body keys win");
    }
}
