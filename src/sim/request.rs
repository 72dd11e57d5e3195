//! Request side of the simulator (server side; the client flow is schedule → worker → http
//! → sse → extract → record → collector → report): finds one HTTP/1.1 request head in the
//! bytes read so far (httparse), routes it, and reads the few body fields a response needs.
//! Input is untrusted: every failure is a typed error, never a panic. This module may not
//! allocate per request beyond what serde needs for escaped strings, and may not do I/O.

use std::borrow::Cow;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::api::{Api, Pool};
use super::engine::kv::{word_byte, Chain};
use crate::plan::workload::splitmix64;

/// Most headers a request may carry.
const MAX_HEADERS: usize = 64;
/// Largest request head accepted.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted.
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Largest `max_tokens` honoured: bounds the bytes one response can need.
pub(crate) const MAX_OUTPUT_TOKENS: u32 = 1 << 20;
/// OpenAI's default when a request names no output length.
const DEFAULT_MAX_TOKENS: u32 = 16;

/// Where a request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Completion(Api),
    /// `POST /v1/embeddings`, `/v1/rerank` (and TEI's `/rerank`), `/v1/score`: one answer
    /// after queue and prefill (`pool.rs`).
    Pool(Pool),
    Models,
    Health,
    /// `GET /version` (vLLM's) or `GET /props` (llama.cpp's): what the server says it is,
    /// in the flavour's own route and shape; the other flavour's route is not found.
    Version,
    Props,
    /// `GET /sim/truth`: the simulator's own timing since the last reset (`truth.rs`).
    Truth,
    /// `POST /sim/truth/reset`: starts a new truth window.
    TruthReset,
    /// `GET /sim/arrivals`: the window's arrival stamps themselves (`arrivals.rs`).
    Arrivals,
    /// `GET /metrics`: Prometheus text in vLLM's (or llama.cpp's) names (`metrics.rs`).
    Metrics,
    NotFound,
    MethodNotAllowed,
}

/// A parsed request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub route: Route,
    pub head_len: usize,
    pub body_len: usize,
    /// The client asked to close (or spoke HTTP/1.0): answer, then close.
    pub close: bool,
    /// `Expect: 100-continue` (curl sends it for bodies over 1 KiB, then waits a second).
    pub expect_continue: bool,
    /// Where the first `x-request-id` value is in the request's bytes: (offset, length).
    pub request_id: Option<(usize, usize)>,
}

/// Why a request could not be read; each is answered with an error status and a close,
/// since the framing of what follows cannot be trusted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum HeadError {
    #[error("malformed request head: {0}")]
    Malformed(httparse::Error),
    #[error("request head larger than {MAX_HEAD_BYTES} bytes")]
    TooLarge,
    #[error("bad Content-Length")]
    BadLength,
    #[error("body larger than {MAX_BODY_BYTES} bytes")]
    BodyTooLarge,
    #[error("chunked request bodies are not supported; send Content-Length")]
    ChunkedBody,
}

/// Parses the head at the start of `buf`. `Ok(None)`: not all of it has arrived yet.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf).map_err(HeadError::Malformed)? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial if buf.len() > MAX_HEAD_BYTES => return Err(HeadError::TooLarge),
        httparse::Status::Partial => return Ok(None),
    };
    let mut body_len = 0usize;
    let mut close = req.version == Some(0);
    let mut expect_continue = false;
    let mut request_id = None;
    for h in req.headers.iter() {
        if request_id.is_none() && h.name.eq_ignore_ascii_case("x-request-id") {
            // httparse's value is a slice of `buf`.
            request_id = Some((
                h.value.as_ptr() as usize - buf.as_ptr() as usize,
                h.value.len(),
            ));
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            body_len = parse_length(h.value)?;
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HeadError::ChunkedBody);
        } else if h.name.eq_ignore_ascii_case("connection") {
            close = h.value.eq_ignore_ascii_case(b"close");
        } else if h.name.eq_ignore_ascii_case("expect") {
            expect_continue = h.value.eq_ignore_ascii_case(b"100-continue");
        }
    }
    let route = route(req.method.unwrap_or(""), req.path.unwrap_or(""));
    Ok(Some(Head {
        route,
        head_len,
        body_len,
        close,
        expect_continue,
        request_id,
    }))
}

fn parse_length(value: &[u8]) -> Result<usize, HeadError> {
    let text = std::str::from_utf8(value).map_err(|_| HeadError::BadLength)?;
    let n: usize = text.trim().parse().map_err(|_| HeadError::BadLength)?;
    if n > MAX_BODY_BYTES {
        return Err(HeadError::BodyTooLarge);
    }
    Ok(n)
}

fn route(method: &str, path: &str) -> Route {
    // Query strings do not change what the simulator serves.
    let path = path.split('?').next().unwrap_or(path);
    let (want, route) = match path {
        "/v1/chat/completions" => ("POST", Route::Completion(Api::Chat)),
        "/v1/completions" => ("POST", Route::Completion(Api::Completions)),
        "/v1/responses" => ("POST", Route::Completion(Api::Responses)),
        "/v1/messages" => ("POST", Route::Completion(Api::Messages)),
        "/v1/embeddings" => ("POST", Route::Pool(Pool::Embeddings)),
        "/v1/rerank" | "/rerank" => ("POST", Route::Pool(Pool::Rerank)),
        "/v1/score" => ("POST", Route::Pool(Pool::Score)),
        "/v1/models" => ("GET", Route::Models),
        "/health" => ("GET", Route::Health),
        "/version" => ("GET", Route::Version),
        "/props" => ("GET", Route::Props),
        "/sim/truth" => ("GET", Route::Truth),
        "/sim/truth/reset" => ("POST", Route::TruthReset),
        "/sim/arrivals" => ("GET", Route::Arrivals),
        "/metrics" => ("GET", Route::Metrics),
        _ => return Route::NotFound,
    };
    if method == want {
        route
    } else {
        Route::MethodNotAllowed
    }
}

/// The body fields a completion response depends on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Job<'a> {
    pub stream: bool,
    pub max_tokens: u32,
    pub include_usage: bool,
    pub continuous_usage: bool,
    /// `None`: the request named no model; the simulator's own name is used.
    pub model: Option<Cow<'a, str>>,
    /// The simulator's token unit (it has no tokenizer): words — runs of bytes above 0x20 —
    /// of every prompt string (message `content` strings and content parts' `text` summed),
    /// at least 1; or the exact count when the prompt is given as token ids. A ringbench
    /// synthetic prompt without `--tokenizer` is N words, so the sim counts exactly N.
    /// Responses' `instructions` and Messages' `system` count too.
    pub prompt_tokens: u32,
    /// Whether the answer may be a tool call, and to which tool (`tools`, `tool_choice`).
    pub tool: ToolPick<'a>,
    /// The images and audio of the prompt's content parts (not in `prompt_tokens`: the
    /// engine's settings say what they count for).
    pub media: Media,
}

/// Most images of one request whose bytes are hashed for the multimodal cache; those beyond
/// are counted (tokens, cache queries) but never hit.
pub(crate) const MAX_HASHED_IMAGES: usize = 16;

/// The images and audio of a request's content parts, found without decoding them: OpenAI
/// chat's `image_url` and `input_audio` parts, Responses' `input_image`, Anthropic's `image`
/// blocks. Each image is a hash of its payload as sent (the data URL's base64, or the URL):
/// identical bytes, identical hash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Media {
    pub images: u32,
    /// Audio length, from each WAV's header (0 for audio that is not a readable WAV).
    pub audio_ms: u64,
    /// The first `MAX_HASHED_IMAGES` images' hashes, in order.
    pub hashes: [u64; MAX_HASHED_IMAGES],
    pub hashed: u8,
}

impl Media {
    fn add(&mut self, other: &Media) {
        self.images = self.images.saturating_add(other.images);
        self.audio_ms = self.audio_ms.saturating_add(other.audio_ms);
        for &h in &other.hashes[..other.hashed as usize] {
            self.push_hash(h);
        }
    }

    fn push_hash(&mut self, h: u64) {
        if let Some(slot) = self.hashes.get_mut(self.hashed as usize) {
            *slot = h;
            self.hashed += 1;
        }
    }

    fn image(&mut self, hash: u64) {
        self.images = self.images.saturating_add(1);
        self.push_hash(hash);
    }

    /// The hashes kept.
    pub fn hashes(&self) -> &[u64] {
        &self.hashes[..self.hashed as usize]
    }

    /// Prompt tokens they count for: `image_tokens` each image, `audio_tokens_per_s` each
    /// second of audio.
    pub fn tokens(&self, image_tokens: u32, audio_tokens_per_s: u32) -> u64 {
        u64::from(self.images) * u64::from(image_tokens)
            + self.audio_ms * u64::from(audio_tokens_per_s) / 1000
    }
}

/// What a request's `tools` and `tool_choice` allow.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToolPick<'a> {
    /// No tools, or `tool_choice: none`: text.
    Never,
    /// `required` (Anthropic's `any`) or a named tool: a call to this tool.
    Always(Cow<'a, str>),
    /// `auto` or no choice: a call to the first tool with `--tool-call-rate`'s probability.
    Auto(Cow<'a, str>),
}

/// Why a body was refused (answered with 400).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("body is not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("max_tokens must be between 1 and {MAX_OUTPUT_TOKENS}")]
    MaxTokens,
    #[error("at most {MAX_POOL_ITEMS} texts per request")]
    TooManyTexts,
}

#[derive(Deserialize)]
struct RawBody<'a> {
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    prompt: Option<PromptSize>,
    #[serde(default)]
    messages: Option<PromptSize>,
    /// Responses: a string or a list of items (messages, `input_text` parts).
    #[serde(default)]
    input: Option<PromptSize>,
    #[serde(default)]
    instructions: Option<PromptSize>,
    /// Messages: a string or text blocks.
    #[serde(default)]
    system: Option<PromptSize>,
    #[serde(default)]
    max_output_tokens: Option<u64>,
    #[serde(default, borrow)]
    tools: Option<FirstTool<'a>>,
    #[serde(default, borrow)]
    tool_choice: Option<ToolChoice<'a>>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
    #[serde(default)]
    continuous_usage_stats: Option<bool>,
}

pub(crate) fn parse_body(body: &[u8]) -> Result<Job<'_>, BodyError> {
    let raw: RawBody = serde_json::from_slice(body)?;
    let max = raw
        .max_completion_tokens
        .or(raw.max_tokens)
        .or(raw.max_output_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS.into());
    if max == 0 || max > u64::from(MAX_OUTPUT_TOKENS) {
        return Err(BodyError::MaxTokens);
    }
    let options = raw.stream_options.as_ref();
    let mut size = raw.prompt.or(raw.messages).unwrap_or_default();
    for part in [raw.input, raw.instructions, raw.system]
        .into_iter()
        .flatten()
    {
        size.add(part);
    }
    let first = raw.tools.and_then(|t| t.0);
    let tool = match (first, raw.tool_choice.unwrap_or(ToolChoice::Auto)) {
        (None, _) | (_, ToolChoice::None) => ToolPick::Never,
        (Some(_), ToolChoice::Named(name)) => ToolPick::Always(name),
        (Some(first), ToolChoice::Required) => ToolPick::Always(first),
        (Some(first), ToolChoice::Auto) => ToolPick::Auto(first),
    };
    Ok(Job {
        tool,
        stream: raw.stream.unwrap_or(false),
        max_tokens: max as u32,
        include_usage: options.and_then(|o| o.include_usage).unwrap_or(false),
        continuous_usage: options
            .and_then(|o| o.continuous_usage_stats)
            .unwrap_or(false),
        model: raw.model,
        prompt_tokens: size.tokens(),
        media: size.media,
    })
}

/// The first tool's name of a `tools` list (OpenAI chat's `function.name`, Responses' and
/// Anthropic's flat `name`); the rest are skipped.
#[derive(Debug, Default)]
struct FirstTool<'a>(Option<Cow<'a, str>>);

#[derive(Deserialize)]
struct ToolDef<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionName<'a>>,
}

#[derive(Deserialize)]
struct FunctionName<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

impl<'a> ToolDef<'a> {
    fn name(self) -> Option<Cow<'a, str>> {
        self.name.or(self.function.map(|f| f.name))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstTool<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(FirstToolVisitor(std::marker::PhantomData))
    }
}

struct FirstToolVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for FirstToolVisitor<'a> {
    type Value = FirstTool<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of tools")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstTool<'a>, A::Error> {
        let first = seq.next_element::<ToolDef<'a>>()?.and_then(ToolDef::name);
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(FirstTool(first))
    }
}

/// `tool_choice` in any API's spelling: `"none"`, `"auto"`, `"required"`, or an object
/// (`{"type":"function","function":{"name":..}}`, `{"type":"function","name":..}`,
/// Anthropic's `{"type":"any"|"auto"|"none"|"tool","name":..}`).
#[derive(Debug, PartialEq, Eq)]
enum ToolChoice<'a> {
    None,
    Auto,
    Required,
    Named(Cow<'a, str>),
}

#[derive(Deserialize)]
struct ChoiceObject<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionName<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ToolChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ChoiceVisitor(std::marker::PhantomData))
    }
}

struct ChoiceVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl ToolChoice<'_> {
    fn of_word(w: &str) -> Self {
        match w {
            "none" => ToolChoice::None,
            "required" | "any" => ToolChoice::Required,
            _ => ToolChoice::Auto,
        }
    }
}

impl<'de: 'a, 'a> Visitor<'de> for ChoiceVisitor<'a> {
    type Value = ToolChoice<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a tool choice: none, auto, required or an object")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ToolChoice<'a>, E> {
        Ok(ToolChoice::of_word(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ToolChoice<'a>, E> {
        Ok(ToolChoice::Auto)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ToolChoice<'a>, A::Error> {
        let o = ChoiceObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
        let name = o.name.or(o.function.map(|f| f.name));
        Ok(match (o.kind.as_deref(), name) {
            (Some("none" | "auto" | "any" | "required") | None, _) | (_, None) => {
                ToolChoice::of_word(o.kind.as_deref().unwrap_or("auto"))
            }
            (Some(_), Some(name)) => ToolChoice::Named(name),
        })
    }
}

/// Prompt size gathered while deserializing, without keeping the text: words of every
/// string found (prompt strings, message `content` strings, content parts' `text`) and the
/// count of integers (prompts given as token ids).
#[derive(Default, Clone, Copy, Debug)]
struct PromptSize {
    words: u64,
    ids: u64,
    media: Media,
}

/// Words of `s`: runs of bytes above 0x20 (space and control characters separate words, so
/// every ASCII whitespace does). This runs over every prompt byte of every request, so it
/// counts word starts sixteen bytes at a time on x86_64 (SSE2, part of its baseline: a
/// signed `> 0x20` or'd with the byte's own bit 7, for UTF-8, gives each byte's "word" bit in
/// one mask), eight at a time elsewhere (`words_swar`); a start is a word byte after a
/// separator.
#[cfg(target_arch = "x86_64")]
pub(crate) fn words(s: &str) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // The word bits of 64 bytes, 16 per load; the starts of four loads counted at once (a
    // popcount is a dozen instructions without the `popcnt` feature).
    let chunks = s.as_bytes().chunks_exact(64);
    let rest = chunks.remainder();
    let mut n = 0u64;
    let mut prev_word = 0u64; // the text starts after a separator
    for c in chunks {
        let mut word = 0u64;
        for (i, part) in c.chunks_exact(16).enumerate() {
            // SAFETY: SSE2 is always there on x86_64; the load reads the part's 16 bytes
            // (unaligned load, no alignment needed).
            let bits = unsafe {
                let x = _mm_loadu_si128(part.as_ptr().cast());
                let above = _mm_cmpgt_epi8(x, _mm_set1_epi8(0x20));
                _mm_movemask_epi8(_mm_or_si128(above, x)) as u16
            };
            word |= u64::from(bits) << (16 * i);
        }
        n += u64::from((word & !((word << 1) | prev_word)).count_ones());
        prev_word = word >> 63;
    }
    n + words_swar_after(rest, prev_word ^ 1)
}

/// `words` on targets without SSE2.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn words(s: &str) -> u64 {
    words_swar(s)
}

/// `words` eight bytes at a time in a `u64`: per byte, bit 7 of `word` says "above 0x20"
/// (`(b & 0x7f) + 0x5f` reaches 0x80 exactly when `b & 0x7f > 0x20`, without a carry into the
/// next byte; bytes from 0x80 are UTF-8 and words by their own bit 7).
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
fn words_swar(s: &str) -> u64 {
    words_swar_after(s.as_bytes(), 1) // the text starts after a separator
}

/// `words_swar` of `bytes`, `after_sep` 1 when the byte before them separates.
fn words_swar_after(bytes: &[u8], mut after_sep: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let chunks = bytes.chunks_exact(8);
    let rest = chunks.remainder();
    let mut n = 0u64;
    for c in chunks {
        let x = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        let word = (((x & !HIGH).wrapping_add(0x5f5f_5f5f_5f5f_5f5f)) | x) & HIGH;
        let sep = !word & HIGH;
        let before = (sep << 8) | (after_sep << 7);
        n += u64::from((word & before).count_ones());
        after_sep = sep >> 63;
    }
    n + tail_words(rest, after_sep)
}

/// Word starts in the last few bytes, `after_sep` 1 when the byte before them separates.
fn tail_words(rest: &[u8], mut after_sep: u64) -> u64 {
    let mut n = 0;
    for &b in rest {
        let word = word_byte(b);
        n += u64::from(word) & after_sep;
        after_sep = u64::from(!word);
    }
    n
}

impl PromptSize {
    fn tokens(self) -> u32 {
        (self.words + self.ids).clamp(1, u64::from(u32::MAX)) as u32
    }

    fn add(&mut self, other: PromptSize) {
        self.words += other.words;
        self.ids += other.ids;
        self.media.add(&other.media);
    }
}

impl<'de> Deserialize<'de> for PromptSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

struct SizeVisitor;

impl<'de> Visitor<'de> for SizeVisitor {
    type Value = PromptSize;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a prompt: string, token ids, messages or content parts")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<PromptSize, E> {
        Ok(PromptSize {
            words: words(v),
            ..PromptSize::default()
        })
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<PromptSize, E> {
        Ok(PromptSize {
            ids: 1,
            ..PromptSize::default()
        })
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<PromptSize, E> {
        Ok(PromptSize {
            ids: 1,
            ..PromptSize::default()
        })
    }

    fn visit_unit<E: de::Error>(self) -> Result<PromptSize, E> {
        Ok(PromptSize::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PromptSize, A::Error> {
        let mut total = PromptSize::default();
        while let Some(item) = seq.next_element::<PromptSize>()? {
            total.add(item);
        }
        Ok(total)
    }

    /// A message (`content`) or a content part (`text`, or an image or audio: `Media`);
    /// other keys are skipped.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PromptSize, A::Error> {
        let mut total = PromptSize::default();
        // An Anthropic block's `source` is an image only in a block of `type` image (a
        // `document` has one too); the keys may come in any order.
        let (mut kind_image, mut source) = (false, None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "content" | "text" => total.add(map.next_value::<PromptSize>()?),
                "image_url" => total.media.image(map.next_value::<Payload>()?.hash),
                "source" => source = Some(map.next_value::<Payload>()?.hash),
                "input_audio" => {
                    let ms = map.next_value::<Payload>()?.audio_ms;
                    total.media.audio_ms = total.media.audio_ms.saturating_add(ms);
                }
                "type" => kind_image = map.next_value::<Cow<'de, str>>()? == "image",
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let (true, Some(hash)) = (kind_image, source) {
            total.media.image(hash);
        }
        Ok(total)
    }
}

/// An image's or an audio clip's payload: a string (a URL or a data URL; Responses'
/// `image_url`), or an object holding it (`{"url":..}`, `{"data":..}`, Anthropic's
/// `{"type":"base64","data":..}` or `{"type":"url","url":..}`). Kept: its hash, and the
/// audio length a WAV payload's header gives.
#[derive(Default)]
struct Payload {
    hash: u64,
    audio_ms: u64,
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PayloadVisitor)
    }
}

struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an image or audio: a URL, or an object with `url` or `data`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Payload, E> {
        Ok(Payload {
            hash: payload_hash(v.as_bytes()),
            audio_ms: wav_ms(v.as_bytes()),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Payload, A::Error> {
        let mut found = Payload::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "url" | "data" => found = map.next_value::<Payload>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// A fast 64-bit hash of a payload, eight bytes at a time (a 4 MB image in well under a
/// millisecond): every byte counts, so two images that differ anywhere (a per-request salt
/// in the last pixels) hash apart.
pub(crate) fn payload_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(K).rotate_left(29);
    let chunks = bytes.chunks_exact(8);
    let rest = chunks.remainder();
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    for c in chunks {
        h = mix(h, u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
    }
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    splitmix64(mix(h, u64::from_le_bytes(last)))
}

/// The length of a base64 WAV (a bare string or a `data:` URL), ms, from its header: the
/// `fmt ` chunk's byte rate and the `data` chunk's size (or, when the header does not say,
/// what follows it). 0 when it is not a WAV this can read.
pub(crate) fn wav_ms(payload: &[u8]) -> u64 {
    let b64 = match payload.iter().position(|&b| b == b',') {
        Some(comma) if payload.starts_with(b"data:") => &payload[comma + 1..],
        _ => payload,
    };
    let mut head = [0u8; 192];
    let n = b64_prefix(b64, &mut head);
    let head = &head[..n];
    if n < 12 || &head[..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return 0;
    }
    let total = (b64.len() / 4 * 3) as u64;
    let (mut at, mut byte_rate) = (12usize, 0u64);
    while at + 8 <= head.len() {
        let size = u32::from_le_bytes([head[at + 4], head[at + 5], head[at + 6], head[at + 7]]);
        match &head[at..at + 4] {
            b"fmt " if at + 20 <= head.len() => {
                let r = &head[at + 16..at + 20];
                byte_rate = u64::from(u32::from_le_bytes([r[0], r[1], r[2], r[3]]));
            }
            b"data" if byte_rate > 0 => {
                let left = total.saturating_sub(at as u64 + 8);
                return u64::from(size).min(left) * 1000 / byte_rate;
            }
            _ => {}
        }
        at += 8 + size as usize + (size as usize & 1);
    }
    0
}

/// Decodes the start of standard base64 into `out`, as far as it fills or the text stops
/// being base64; the bytes decoded.
fn b64_prefix(text: &[u8], out: &mut [u8]) -> usize {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut n = 0;
    for quad in text.chunks_exact(4) {
        let mut v = [0u8; 4];
        for (slot, &c) in v.iter_mut().zip(quad) {
            match value(c) {
                Some(x) => *slot = x,
                None => return n,
            }
        }
        let bytes = [
            (v[0] << 2) | (v[1] >> 4),
            (v[1] << 4) | (v[2] >> 2),
            (v[2] << 6) | v[3],
        ];
        for b in bytes {
            match out.get_mut(n) {
                Some(slot) => *slot = b,
                None => return n,
            }
            n += 1;
        }
    }
    n
}

/// Pushes the prompt's tokens — the same words (or ids) `prompt_tokens` counts, in order —
/// into `chain` for the KV cache. A second pass over a body `parse_body` already accepted,
/// made only when the engine model has a cache.
pub(crate) fn hash_prompt(body: &[u8], chain: &mut Chain) -> Result<(), serde_json::Error> {
    chain.clear();
    let mut de = serde_json::Deserializer::from_slice(body);
    de.deserialize_map(BodyTokens(chain))
}

/// The top-level body: only `prompt` and `messages` are walked.
struct BodyTokens<'c>(&'c mut Chain);

impl<'de> Visitor<'de> for BodyTokens<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    /// `prompt` wins over `messages` wherever it stands, as in `parse_body`; Responses'
    /// `input`/`instructions`, Messages' `system` and the pooling APIs' texts add on.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut had_prompt = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if POOL_TEXT_KEYS.contains(&key.as_ref()) || key == "instructions" || key == "system" {
                map.next_value_seed(Tokens(&mut *self.0))?;
            } else if key == "prompt" || (key == "messages" && !had_prompt) {
                had_prompt |= key == "prompt";
                if key == "prompt" {
                    self.0.clear();
                }
                map.next_value_seed(Tokens(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The keys whose strings a pooling request (and Responses' `input`) is made of.
const POOL_TEXT_KEYS: [&str; 6] = ["input", "query", "documents", "texts", "text_1", "text_2"];

/// Most texts one pooling request may carry.
pub(crate) const MAX_POOL_ITEMS: usize = 4096;

/// One text of a pooling request: its size, a hash of its content (what its deterministic
/// vector or score comes from) and where its decoded text is in `PoolBatch::texts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PoolItem {
    pub tokens: u32,
    pub hash: u64,
    pub text: std::ops::Range<usize>,
}

/// A pooling request's texts, in buffers the connection reuses request after request.
#[derive(Debug, Default)]
pub(crate) struct PoolBatch {
    /// Every string's decoded text, one after another.
    pub texts: String,
    /// `query` / `text_1`.
    pub first: Vec<PoolItem>,
    /// `input` / `documents` / `texts` / `text_2`.
    pub items: Vec<PoolItem>,
}

/// The scalar fields of a pooling request.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PoolJob<'a> {
    pub model: Option<Cow<'a, str>>,
    /// `encoding_format: "base64"`.
    pub base64: bool,
    pub top_n: Option<u32>,
    /// The documents came as `texts` (Hugging Face TEI's `/rerank`): answer TEI's bare array.
    pub tei: bool,
}

/// Reads a pooling request into `batch` (cleared first). An `input` of token ids is one
/// text; a list of id lists is one text each.
pub(crate) fn parse_pool<'a>(
    body: &'a [u8],
    batch: &mut PoolBatch,
) -> Result<PoolJob<'a>, BodyError> {
    batch.texts.clear();
    batch.first.clear();
    batch.items.clear();
    let mut de = serde_json::Deserializer::from_slice(body);
    let job = de.deserialize_map(PoolBody(batch))?;
    de.end()?;
    if batch.items.len() + batch.first.len() > MAX_POOL_ITEMS {
        return Err(BodyError::TooManyTexts);
    }
    Ok(job)
}

struct PoolBody<'b>(&'b mut PoolBatch);

impl<'de> Visitor<'de> for PoolBody<'_> {
    type Value = PoolJob<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PoolJob<'de>, A::Error> {
        let mut job = PoolJob::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "model" => job.model = map.next_value()?,
                "encoding_format" => {
                    let f: Option<Cow<'de, str>> = map.next_value()?;
                    job.base64 = f.as_deref() == Some("base64");
                }
                "top_n" => {
                    let n: Option<u64> = map.next_value()?;
                    job.top_n = n.map(|n| n.min(u64::from(u32::MAX)) as u32);
                }
                "query" | "text_1" | "input" | "documents" | "texts" | "text_2" => {
                    job.tei |= key == "texts";
                    let mut open = None;
                    map.next_value_seed(PoolTexts {
                        batch: &mut *self.0,
                        first: key == "query" || key == "text_1",
                        open: &mut open,
                    })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(job)
    }
}

/// A pooling value: a string (one text), a list of strings, of `{"text":..}` documents, of id
/// lists, or one list of ids (one text). `first`: into `PoolBatch::first`; `open`: the text
/// the ids of the list being read add to.
struct PoolTexts<'b, 'o> {
    batch: &'b mut PoolBatch,
    first: bool,
    open: &'o mut Option<usize>,
}

impl PoolTexts<'_, '_> {
    fn list(&mut self) -> &mut Vec<PoolItem> {
        match self.first {
            true => &mut self.batch.first,
            false => &mut self.batch.items,
        }
    }
}

impl<'de> de::DeserializeSeed<'de> for PoolTexts<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PoolTexts<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a text, a list of texts or documents, or token ids")
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<(), E> {
        let at = self.batch.texts.len();
        self.batch.texts.push_str(v);
        let item = PoolItem {
            tokens: words(v).clamp(1, u64::from(u32::MAX)) as u32,
            hash: text_hash(v.as_bytes()),
            text: at..at + v.len(),
        };
        self.list().push(item);
        Ok(())
    }

    fn visit_u64<E: de::Error>(mut self, v: u64) -> Result<(), E> {
        let at = self.batch.texts.len();
        let open = *self.open;
        let list = self.list();
        let i = match open {
            Some(i) => i,
            None => {
                list.push(PoolItem {
                    tokens: 0,
                    hash: ID_TAG,
                    text: at..at,
                });
                list.len() - 1
            }
        };
        let item = &mut list[i];
        item.tokens = item.tokens.saturating_add(1);
        item.hash = splitmix64(item.hash ^ v);
        *self.open = Some(i);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.visit_u64(v as u64)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // The ids of this list make one text; a list inside it, another.
        let mut open = None;
        let (batch, first) = (self.batch, self.first);
        loop {
            let seed = PoolTexts {
                batch: &mut *batch,
                first,
                open: &mut open,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
        }
    }

    /// A document object: its `text` is the text.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (batch, first) = (self.batch, self.first);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "text" {
                let mut open = None;
                map.next_value_seed(PoolTexts {
                    batch: &mut *batch,
                    first,
                    open: &mut open,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// FNV-1a of a text: what its deterministic vector and scores come from.
pub(crate) fn text_hash(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Token ids are hashed apart from words, so an id never equals a word.
const ID_TAG: u64 = 0x0001_d50f_706b_656e;

/// A prompt value: strings give words, integers ids; arrays and message objects
/// (`content`, `text`) are walked in order, as `PromptSize` counts them.
struct Tokens<'c>(&'c mut Chain);

impl<'de> de::DeserializeSeed<'de> for Tokens<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tokens<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a prompt")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_text(v.as_bytes());
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.push(splitmix64(v ^ ID_TAG));
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0.push(splitmix64(v as u64 ^ ID_TAG));
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Tokens(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "content" || key == "text" {
                map.next_value_seed(Tokens(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_methods() {
        let head = parse_head(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(head.unwrap().route, Route::Models);
        let head = parse_head(b"GET /v1/completions HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(head.unwrap().route, Route::MethodNotAllowed);
        let head = parse_head(b"GET /nope HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(head.unwrap().route, Route::NotFound);
        let head = parse_head(b"GET /health?x=1 HTTP/1.0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((head.route, head.close), (Route::Health, true));
    }

    #[test]
    fn partial_heads_wait_and_lengths_are_read() {
        let full = b"POST /v1/completions HTTP/1.1\r\ncontent-length: 12\r\n\
Connection: close\r\n\r\n";
        for cut in 0..full.len() {
            assert_eq!(parse_head(&full[..cut]), Ok(None), "cut at {cut}");
        }
        let head = parse_head(full).unwrap().unwrap();
        assert_eq!(
            (head.head_len, head.body_len, head.close),
            (full.len(), 12, true)
        );
        let expect = b"POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\n\r\n";
        assert!(parse_head(expect).unwrap().unwrap().expect_continue);
    }

    #[test]
    fn bad_heads_are_typed_errors() {
        assert!(matches!(
            parse_head(b"\x01\x02 / HTTP/1.1\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
        let bad = b"POST /v1/completions HTTP/1.1\r\nContent-Length: -3\r\n\r\n";
        assert_eq!(parse_head(bad), Err(HeadError::BadLength));
        let chunked = b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(parse_head(chunked), Err(HeadError::ChunkedBody));
        let huge = vec![b'a'; MAX_HEAD_BYTES + 1];
        assert!(parse_head(&huge).is_err());
    }

    #[test]
    fn chat_body_fields() {
        let body =
            br#"{"model":"tiny-llama","messages":[{"role":"user","content":"Hello, how are you?"}],
            "max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}"#;
        let job = parse_body(body).unwrap();
        assert!(job.stream && job.include_usage && !job.continuous_usage);
        assert_eq!(job.max_tokens, 8);
        assert_eq!(job.model.as_deref(), Some("tiny-llama"));
        assert_eq!(job.prompt_tokens, 4); // "Hello, how are you?": 4 words
    }

    #[test]
    fn completions_body_defaults_and_token_prompts() {
        let job = parse_body(br#"{"prompt":[1,2,3,4,5,6,7]}"#).unwrap();
        assert_eq!(
            (job.stream, job.max_tokens, job.prompt_tokens),
            (false, 16, 7)
        );
        assert_eq!(job.model, None);
        let job = parse_body(
            br#"{"prompt":"abcdefgh","max_completion_tokens":3,"max_tokens":9,
            "stream_options":{"continuous_usage_stats":true},"model":"a\"b"}"#,
        )
        .unwrap();
        assert_eq!((job.max_tokens, job.prompt_tokens), (3, 1));
        assert!(job.continuous_usage);
        assert_eq!(job.model.as_deref(), Some("a\"b"));
    }

    #[test]
    fn content_parts_count() {
        let body =
            br#"{"messages":[{"role":"user","content":[{"type":"text","text":"one two\nthree"}]},
            {"role":"system","content":null},{"role":"user","content":"  four  five "}]}"#;
        assert_eq!(
            parse_body(body).unwrap().prompt_tokens,
            5,
            "words of every part"
        );
        assert_eq!(words(""), 0);
        // Against the plain definition, on every mix of separators, ASCII and UTF-8.
        let naive = |s: &str| {
            s.as_bytes()
                .split(|&b| b <= 0x20)
                .filter(|w| !w.is_empty())
                .count() as u64
        };
        let alphabet = [
            " ", "a", "\n", "é", "\t", "zz", "\u{1}", "~", "\r\n", "!", "\u{7f}", "\u{ff}", "!",
        ];
        let mut seed = 7u64;
        for len in 0..200 {
            let mut text = String::new();
            for _ in 0..len {
                seed = splitmix64(seed);
                text.push_str(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            assert_eq!(words(&text), naive(&text), "{text:?}");
            assert_eq!(words_swar(&text), naive(&text), "{text:?}");
        }
        assert_eq!(words(" \t\n"), 0);
        assert_eq!(words("a"), 1);
        assert_eq!(words(" about after\nabout  x "), 4);
    }

    #[test]
    fn bad_bodies_are_errors() {
        assert!(parse_body(b"not json").is_err());
        assert!(parse_body(br#"{"max_tokens":0}"#).is_err());
        assert!(parse_body(br#"{"max_tokens":-1}"#).is_err());
        assert!(parse_body(br#"{"stream":"yes"}"#).is_err());
    }

    #[test]
    fn the_cache_hashes_exactly_the_tokens_prompt_tokens_counts() {
        let bodies: [&[u8]; 5] = [
            br#"{"messages":[{"role":"user","content":[{"type":"text","text":"one two\nthree"}]},
            {"role":"system","content":null},{"role":"user","content":"  four  five "}],"n":1}"#,
            br#"{"prompt":"a b c d e f g h i","max_tokens":3}"#,
            br#"{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10]}"#,
            br#"{"prompt":"x","messages":[{"content":"y z"}]}"#,
            br#"{"messages":[{"content":"y z"}],"prompt":"x"}"#,
        ];
        for body in bodies {
            let job = parse_body(body).unwrap();
            let mut chain = Chain::new(4, 1 << 10);
            hash_prompt(body, &mut chain).unwrap();
            assert_eq!(
                chain.tokens,
                u64::from(job.prompt_tokens),
                "{}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(chain.hashes.len() as u64, chain.tokens / 4);
        }
        // Same words in a chat body or a completion body: the same blocks; another order: not.
        let mut chat = Chain::new(2, 64);
        hash_prompt(br#"{"messages":[{"role":"user","content":"a b"},{"role":"assistant","content":"c d"}]}"#, &mut chat).unwrap();
        let mut text = Chain::new(2, 64);
        hash_prompt(br#"{"prompt":"a b c d"}"#, &mut text).unwrap();
        assert_eq!(chat.hashes, text.hashes);
        hash_prompt(br#"{"prompt":"a b d c"}"#, &mut text).unwrap();
        assert_eq!(chat.hashes[0], text.hashes[0]);
        assert_ne!(chat.hashes[1], text.hashes[1]);
        // Ids never collide with words that look like them.
        hash_prompt(br#"{"prompt":[1,2]}"#, &mut chat).unwrap();
        hash_prompt(br#"{"prompt":"1 2"}"#, &mut text).unwrap();
        assert_ne!(chat.hashes, text.hashes);
    }
}

#[cfg(test)]
mod media_tests {
    use super::*;
    use base64::Engine as _;

    /// A 16 kHz mono 16-bit WAV of `ms` milliseconds of silence, base64.
    fn wav_b64(ms: u32) -> String {
        let data = 32 * ms; // 32,000 bytes a second
        let mut w = Vec::new();
        w.extend_from_slice(b"RIFF");
        w.extend_from_slice(&(36 + data).to_le_bytes());
        w.extend_from_slice(b"WAVEfmt ");
        w.extend_from_slice(&16u32.to_le_bytes());
        w.extend_from_slice(&1u16.to_le_bytes()); // PCM
        w.extend_from_slice(&1u16.to_le_bytes()); // mono
        w.extend_from_slice(&16_000u32.to_le_bytes());
        w.extend_from_slice(&32_000u32.to_le_bytes()); // byte rate
        w.extend_from_slice(&2u16.to_le_bytes());
        w.extend_from_slice(&16u16.to_le_bytes());
        w.extend_from_slice(b"data");
        w.extend_from_slice(&data.to_le_bytes());
        w.resize(w.len() + data as usize, 0);
        base64::engine::general_purpose::STANDARD.encode(w)
    }

    #[test]
    fn content_parts_count_images_and_audio_without_their_bytes_as_words() {
        let (a, b) = ("data:image/png;base64,iVBORw0KGgoAAAA", "https://x/y.png");
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":[{{"type":"text","text":"two words"}},
            {{"type":"image_url","image_url":{{"url":"{a}"}}}},
            {{"type":"image_url","image_url":{{"url":"{b}","detail":"low"}}}},
            {{"type":"input_audio","input_audio":{{"data":"{}","format":"wav"}}}}]}}]}}"#,
            wav_b64(1_500)
        );
        let job = parse_body(body.as_bytes()).unwrap();
        assert_eq!(job.prompt_tokens, 2, "the text's words only");
        assert_eq!((job.media.images, job.media.audio_ms), (2, 1_500));
        let want = [payload_hash(a.as_bytes()), payload_hash(b.as_bytes())];
        assert_eq!(job.media.hashes(), want);
        assert_eq!(job.media.tokens(576, 25), 2 * 576 + 37);
    }

    #[test]
    fn responses_and_messages_images_count_and_documents_do_not() {
        let body = br#"{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},
            {"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}"#;
        let job = parse_body(body).unwrap();
        assert_eq!((job.prompt_tokens, job.media.images), (1, 1));
        // Anthropic: `type` after `source`, and a document's source is no image.
        let body = br#"{"max_tokens":5,"messages":[{"role":"user","content":[
            {"source":{"type":"base64","media_type":"image/png","data":"QUJD"},"type":"image"},
            {"type":"document","source":{"type":"base64","data":"REVG"}},
            {"type":"text","text":"what"}]}]}"#;
        let job = parse_body(body).unwrap();
        assert_eq!((job.prompt_tokens, job.media.images), (1, 1));
        assert_eq!(job.media.hashes(), [payload_hash(b"QUJD")]);
    }

    #[test]
    fn identical_payloads_hash_alike_and_one_byte_apart_differently() {
        let a = vec![b'A'; 4 << 20];
        let mut b = a.clone();
        *b.last_mut().unwrap() = b'B';
        assert_eq!(payload_hash(&a), payload_hash(&a.clone()));
        assert_ne!(payload_hash(&a), payload_hash(&b));
        assert_ne!(
            payload_hash(b"AAAA"),
            payload_hash(b"AAAAA"),
            "length counts"
        );
    }

    #[test]
    fn a_wav_length_comes_from_its_header_and_anything_else_is_zero() {
        assert_eq!(wav_ms(wav_b64(2_000).as_bytes()), 2_000);
        let url = format!("data:audio/wav;base64,{}", wav_b64(250));
        assert_eq!(wav_ms(url.as_bytes()), 250);
        assert_eq!(wav_ms(b"iVBORw0KGgoAAAANSUhEUgAA"), 0, "a PNG");
        assert_eq!(wav_ms(b"not base64 at all"), 0);
        // A header that claims more data than was sent: what was sent.
        // 3,276 bytes sent (a whole number of base64 quads): 3,232 of data, 101 ms.
        let short = &wav_b64(1_000)[..3_276 / 3 * 4];
        assert_eq!(wav_ms(short.as_bytes()), 101);
    }

    #[test]
    fn more_images_than_hashed_are_counted() {
        let parts: Vec<String> = (0..MAX_HASHED_IMAGES + 3)
            .map(|i| format!(r#"{{"type":"image_url","image_url":{{"url":"u{i}"}}}}"#))
            .collect();
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":[{}]}}]}}"#,
            parts.join(",")
        );
        let job = parse_body(body.as_bytes()).unwrap();
        assert_eq!(job.media.images as usize, MAX_HASHED_IMAGES + 3);
        assert_eq!(job.media.hashes().len(), MAX_HASHED_IMAGES);
    }
}
