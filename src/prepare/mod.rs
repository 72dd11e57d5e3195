//! Before the run (plan → **workload** → catalog → schedule …): what every request will ask —
//! its prompt text, its input length (ISL) and its `max_tokens` (OSL) — decided and counted
//! up front, plus the realized length percentiles the report states before the run. It reads
//! files and tokenizes, so it runs once, before any worker starts; it never prints.
//!
//! Memory: a catalog of at most `MAX_DISTINCT` distinct prompts is built and cycled by request
//! id. Generating a prompt per id from the seed would mean tokenizing (or at least allocating
//! and serializing) on the hot path; a bounded catalog costs a few MB and nothing per request.
//! What keeps a run longer than the catalog from repeating prompts (which a server's prefix
//! cache would serve whole) is the salt (`salt`): a few words at the start of every prompt,
//! rewritten per request from its id and the run's nonce, counted in its length. A trace
//! replay (`--trace`) instead gets one prompt per line, bounded by
//! `trace::MAX_TRACE_REQUESTS`, unsalted (its `hash_ids` say what lines share) but written
//! from a seed the nonce changes, so a rerun does not meet its own cache either.

pub mod catalog;
pub mod dataset;
pub mod hf;
pub mod image;
#[cfg(test)]
mod length_tests;
pub mod media;
pub mod salt;
#[cfg(test)]
mod salt_tests;
pub mod tokenizer;
pub mod trace;
#[cfg(test)]
mod workload_tests;

use self::dataset::{DatasetError, Item};
use self::salt::{SaltAt, SaltPool};
use self::tokenizer::{PromptTokenizer, TokenizerError};
use crate::plan::workload::{splitmix64, LengthDist};
use crate::plan::workload::{DatasetKind, WorkloadSpec};
use crate::plan::workload::{TraceLoad, TraceRequest};
use crate::plan::{Load, Plan};
use crate::summary::workload::Realized;
use crate::summary::workload::{PrefixStats, SaltStats, WorkloadStats};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, RngExt, SeedableRng};
use rand_distr::{Distribution, Zipf};
use std::sync::Arc;

/// Distinct prompts kept; requests cycle through them. Bounded so memory does not grow with
/// the request count, and large enough that a prefix cache cannot hold them all as one.
pub const MAX_DISTINCT: usize = 1024;

/// How input lengths are known without a tokenizer (synthetic prompts).
pub const SYNTHETIC_METHOD: &str =
    "approximate: synthetic prompt of N common English words, one word counted as one token \
     (give --tokenizer PATH for exact counts)";
/// How input lengths are known without a tokenizer (dataset text).
pub const TEXT_METHOD: &str =
    "approximate: dataset text counted as one token per 4 bytes (give --tokenizer PATH for \
     exact counts)";

/// Common English words, each one token in GPT-2/Llama-style BPE vocabularies with its
/// leading space: the synthetic prompt when no tokenizer is given.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "people", "year",
    "water", "house", "light", "world", "school", "river", "city", "music", "story", "paper",
    "table", "market", "green", "small", "large", "early", "young", "north", "south", "simple",
];

/// One request's content, decided before the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub input_tokens: u32,
    pub max_tokens: u32,
    /// Its shared-prefix group, if any.
    pub group: Option<u32>,
    /// Chat messages sent as given (a JSONL dataset's `messages`); `text` is their content.
    pub messages: Option<serde_json::Value>,
    /// Where its salt is (the words of salt value 0 until a worker writes the request's).
    pub salt: Option<SaltAt>,
    /// Images sent with it as content parts after its text (chat, Responses, Messages); they
    /// count toward nothing in `input_tokens`.
    pub images: Vec<image::ImageUrl>,
    /// Synthetic images and audio clips sent after those (`media`), each shared by its
    /// entry's requests and salted per request.
    pub media: Vec<Arc<media::Media>>,
}

/// A tokenizer or a dataset that cannot be used as given (bad input: exit code 2); the
/// message names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// `--tokenizer`: the file cannot be read, or a prompt cannot be made exact with it.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// `--dataset`: missing, unreadable, a bad line, or no usable item.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// `--dataset-name hf`: not in the cache, no such split or column, a bad image.
    #[error(transparent)]
    Hf(#[from] hf::HfError),
    /// `--image-*`, `--audio-*`: media that cannot be made or sent as asked.
    #[error("{0}")]
    Media(String),
}

/// Said after the input method when prompts carry images.
pub const IMAGES_NOT_COUNTED: &str =
    "; images are sent as image_url parts and counted in no input length";
/// Said after the input method when prompts carry synthetic images or audio.
pub const MEDIA_NOT_COUNTED: &str =
    "; synthetic images and audio are sent as content parts and counted in no input length";

/// Bytes of synthetic media (their base64) the catalog keeps at most: past it, fewer distinct
/// prompts are kept and requests cycle through them, each request's media made its own by
/// the media salt. Every entry's bytes hold their media once (and each worker's copy of the
/// arena, while it is at most `catalog::OWN_COPY_MAX_BYTES`).
pub const MEDIA_CAP_BYTES: usize = 256 << 20;

/// Seeds the media's random stream (apart from the prompts', so adding images leaves the
/// text as it was).
const MEDIA_SEED: u64 = 0x3ed1a;

/// Everything the catalog needs, built before the run.
#[derive(Debug)]
pub struct Prepared {
    pub prompts: Vec<Prompt>,
    pub stats: WorkloadStats,
    /// The words salts are made of; `None` when prompts are not salted.
    pub salt: Option<SaltPool>,
    /// A session run of a dataset's conversations: how many turns each kept conversation
    /// has, its prompts one after the other in `prompts` (`Catalog::with_conversations`).
    pub conversations: Option<Vec<u32>>,
}

/// Turns kept from a dataset's conversations at most: their prompts are the catalog's
/// entries (ShareGPT turns of ~1 KB: ~16 MB).
pub const MAX_CONVERSATION_TURNS: usize = 16 * MAX_DISTINCT;

/// The dataset's items, one per prompt; for a session run of a dataset's conversations,
/// every kept conversation's turns one after the other, and each one's turn count. A Hugging
/// Face dataset says in `read` what was read of it.
#[allow(clippy::type_complexity)]
fn dataset_items(
    plan: &Plan,
    d: &crate::plan::workload::DatasetSpec,
    n: usize,
    read: &mut Option<String>,
) -> Result<(Option<Vec<Item>>, Option<Vec<u32>>), WorkloadError> {
    let sessions = plan.sessions.as_ref();
    let loaded = match d.kind {
        DatasetKind::Hf => {
            let hf = hf::load(d, &plan.workload.hf, MAX_DISTINCT)?;
            *read = Some(hf.described);
            dataset::Loaded::Items(dataset::Dataset { items: hf.items })
        }
        _ => dataset::load(d, sessions.is_some())?,
    };
    match loaded {
        dataset::Loaded::Items(_) if sessions.is_some_and(|s| s.all_turns) => {
            Err(WorkloadError::Dataset(DatasetError {
                path: d.path.clone(),
                line: None,
                why: "holds single prompts, and --turns all takes each session's turns from a \
                      conversation: give --turns N, or a file of conversations (ShareGPT, or \
                      JSONL {\"turns\": [...]})"
                    .into(),
            }))
        }
        dataset::Loaded::Items(ds) => {
            if ds.items.iter().any(|i| !i.images.is_empty()) {
                images_need_chat(plan)?;
            }
            Ok((Some(ds.pick(d.sampling, n, plan.seed)), None))
        }
        dataset::Loaded::Conversations(convs) => {
            let most = sessions.map_or(1, |s| s.stride()) as usize;
            let limits = (most, MAX_CONVERSATION_TURNS);
            let kept = dataset::pick_conversations(convs, d.sampling, n, plan.seed, limits);
            let turns = kept.iter().map(|c| c.len() as u32).collect();
            Ok((Some(kept.into_iter().flatten().collect()), Some(turns)))
        }
    }
}

/// Prompts all of a pooling run's distinct requests hold at most (`--batch-size` inputs
/// each): a catalog of fewer distinct requests when batches are large.
pub const MAX_POOLED_PROMPTS: usize = 16 * MAX_DISTINCT;

/// How many distinct prompts the run needs: its request count, at most `MAX_DISTINCT`
/// requests, times the prompts each request carries (`catalog::prompts_per_request`), at
/// most `MAX_POOLED_PROMPTS` (and at least one request's).
pub fn distinct_for(plan: &Plan) -> usize {
    let total = plan
        .stop
        .request_count
        .map_or(MAX_DISTINCT as u64, |c| c + plan.warmup_requests);
    let requests = (total as usize).clamp(1, MAX_DISTINCT);
    let per = catalog::prompts_per_request(plan);
    match per {
        1 => requests,
        _ => requests.min(MAX_POOLED_PROMPTS / per).max(1) * per,
    }
}

/// Builds every prompt of the run: loads the tokenizer and the dataset, draws lengths, makes
/// text. Deterministic for a given seed and inputs.
pub fn prepare(plan: &Plan) -> Result<Prepared, WorkloadError> {
    let spec = &plan.workload;
    let tok = spec
        .tokenizer
        .as_deref()
        .map(PromptTokenizer::load)
        .transpose()?;
    let unsalted = Texts {
        tok: tok.as_ref(),
        salt: None,
    };
    if let Load::Trace(t) = &plan.load {
        return trace_prepared(plan, &unsalted, t);
    }
    let salt = salt_pool(spec, tok.as_ref())?;
    let texts = Texts {
        tok: tok.as_ref(),
        salt: salt.as_ref(),
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(plan.seed ^ 0x5eed_ca7a);
    let n = distinct_for(plan);
    // Shared prefixes are the part meant to repeat: never salted.
    let prefixes = match &spec.prefix {
        Some(p) => (0..p.groups)
            .map(|_| {
                unsalted
                    .synthetic(&mut rng, "", 0, p.tokens)
                    .map(|(s, _)| s)
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![],
    };
    let mut read = None;
    let (items, conversations) = match &spec.dataset {
        Some(d) => dataset_items(plan, d, n, &mut read)?,
        None => (None, None),
    };
    // Conversations: one prompt per turn kept.
    let n = items.as_ref().map_or(n, Vec::len);
    let input = spec.input.clone().unwrap_or(LengthDist::Fixed {
        tokens: plan.input_tokens,
    });
    let output = spec.output.clone().unwrap_or(LengthDist::Fixed {
        tokens: plan.output_tokens,
    });
    let zipf = spec.prefix.as_ref().and_then(|p| {
        p.zipf
            .map(|s| Zipf::new(p.groups as f64, s).expect("checked in cli"))
    });
    let mut prompts = Vec::with_capacity(n);
    for i in 0..n {
        let group = spec.prefix.as_ref().map(|p| match &zipf {
            Some(z) => z.sample(&mut rng) as u32 - 1,
            None => rng.random_range(0..p.groups),
        });
        let prefix = group.map(|g| (&prefixes[g as usize], spec.prefix.as_ref().unwrap().tokens));
        let item = items.as_ref().map(|v| &v[i]);
        prompts.push(texts.prompt(&mut rng, item, prefix, &input, &output, spec, group)?);
    }
    if let (Some(t), Some(pool)) = (&tok, &salt) {
        salt_keeps_lengths(t, pool, &prompts)?;
    }
    let media = add_media(plan, &mut prompts, conversations.is_some())?;
    let mut stats = stats_of(plan, tok.as_ref(), &prompts, salt.as_ref());
    add_source(&mut stats, read, conversations.as_deref(), prompts.len());
    if let Some(media) = media {
        stats.source = format!("{}; {media}", stats.source);
    }
    Ok(Prepared {
        prompts,
        stats,
        salt,
        conversations,
    })
}

/// What the source read says of itself: what was read of a Hugging Face dataset, a session
/// run's conversations and their turns.
fn add_source(stats: &mut WorkloadStats, read: Option<String>, turns: Option<&[u32]>, n: usize) {
    if let Some(read) = read {
        stats.source = format!("{}: {read}", stats.source);
    }
    if let Some(turns) = turns {
        stats.source = format!(
            "{}: {} conversations, {n} user turns in all",
            stats.source,
            turns.len(),
        );
    }
}

/// Prompts with images go to chat, Responses or Messages: the others take text.
fn images_need_chat(plan: &Plan) -> Result<(), WorkloadError> {
    use crate::plan::Endpoint;
    let d = plan
        .workload
        .dataset
        .as_ref()
        .expect("images come from a dataset");
    match plan.endpoint {
        Endpoint::Chat | Endpoint::Responses | Endpoint::Messages => Ok(()),
        e => Err(WorkloadError::Dataset(DatasetError {
            path: d.path.clone(),
            line: None,
            why: format!(
                "its prompts carry images, which --endpoint {} does not take: give --endpoint \
                 chat (vLLM's --backend openai-chat), responses or messages",
                e.name()
            ),
        })),
    }
}

/// Synthetic images and audio for each prompt (`plan.workload.media`), drawn from their own
/// random stream; past `MEDIA_CAP_BYTES` the prompts left are dropped (the catalog keeps
/// fewer). Says what was made, or `None` when nothing was asked.
fn add_media(
    plan: &Plan,
    prompts: &mut Vec<Prompt>,
    conversations: bool,
) -> Result<Option<String>, WorkloadError> {
    use crate::plan::workload::ImageFormat;
    let m = &plan.workload.media;
    if !m.images() && !m.audio() {
        return Ok(None);
    }
    if conversations {
        return Err(WorkloadError::Media(
            "--image-count and --audio-seconds go with synthetic prompts or single-prompt \
             datasets, not with --turns over a dataset's conversations"
                .into(),
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(splitmix64(plan.seed ^ MEDIA_SEED));
    let (mut bytes, mut kept) = (0usize, prompts.len());
    for (i, p) in prompts.iter_mut().enumerate() {
        if bytes >= MEDIA_CAP_BYTES {
            kept = i;
            break;
        }
        for _ in 0..m.image_count.as_ref().map_or(0, |c| c.sample(&mut rng)) {
            let (w, h) = m.image_size.sample(&mut rng);
            let jpeg = match m.image_format {
                ImageFormat::Png => false,
                ImageFormat::Jpeg => true,
                ImageFormat::Random => rng.random(),
            };
            let image = media::image(w, h, jpeg, m.salt, &mut rng).map_err(WorkloadError::Media)?;
            bytes += image.url.len();
            p.media.push(Arc::new(image));
        }
        for _ in 0..m.audio_ms.as_ref().map_or(0, |_| m.audio_count) {
            let ms = m.audio_ms.as_ref().map_or(1, |d| d.sample(&mut rng));
            let rates = &m.audio_sample_rates_hz;
            let rate = rates[rng.random_range(0..rates.len())];
            let clip = media::audio(ms, rate, m.salt, &mut rng);
            bytes += clip.url.len();
            p.media.push(Arc::new(clip));
        }
    }
    prompts.truncate(kept);
    Ok(Some(describe_media(m, kept, bytes)))
}

/// What `add_media` made, for the source's description.
fn describe_media(m: &crate::plan::workload::MediaSpec, kept: usize, bytes: usize) -> String {
    let salt = match m.salt {
        true => "salted per request",
        false => "unsalted (--no-media-salt)",
    };
    let capped = match bytes >= MEDIA_CAP_BYTES {
        true => format!(
            ", {kept} distinct prompts kept (synthetic media capped at {} MiB)",
            MEDIA_CAP_BYTES >> 20
        ),
        false => String::new(),
    };
    format!(
        "synthetic media {salt}, {:.1} MiB in {kept} prompts{capped}",
        bytes as f64 / f64::from(1 << 20)
    )
}

/// A trace's prompts: what lines share is exactly what their `hash_ids` say. The nonce
/// changes every line's text, so a rerun meets a cold cache.
fn trace_prepared(plan: &Plan, unsalted: &Texts, t: &TraceLoad) -> Result<Prepared, WorkloadError> {
    let spec = &plan.workload;
    let seed = match spec.prompt_salt {
        true => plan.seed ^ splitmix64(spec.prompt_nonce.unwrap_or(0) ^ TRACE_NONCE),
        false => plan.seed,
    };
    let prompts = trace_prompts(unsalted, seed, t)?;
    let stats = stats_of(plan, unsalted.tok, &prompts, None);
    Ok(Prepared {
        prompts,
        stats,
        salt: None,
        conversations: None,
    })
}

/// The words this run's salts are made of, or `None` with `--no-prompt-salt`.
fn salt_pool(
    spec: &WorkloadSpec,
    tok: Option<&PromptTokenizer>,
) -> Result<Option<SaltPool>, WorkloadError> {
    match (spec.prompt_salt, tok) {
        (false, _) => Ok(None),
        (true, None) => Ok(Some(SaltPool::synthetic())),
        (true, Some(t)) => SaltPool::for_run(Some(t)).map(Some).ok_or_else(|| {
            TokenizerError::NoSaltWords {
                path: t.path().to_path_buf(),
            }
            .into()
        }),
    }
}

/// Mixed into a trace's seed with the nonce.
const TRACE_NONCE: u64 = 0x7ace;

/// Prompts checked with a second salt: each costs one more encode.
const SALT_CHECKS: usize = 4;

/// A salted prompt's count must not depend on which words its salt has. That holds by
/// construction for tokenizers that split words at spaces before merging (byte-level BPE:
/// GPT-2, Llama 3, Qwen…); for any other, the first few prompts are re-counted with another
/// salt, and a difference is an error, never a silent miscount.
fn salt_keeps_lengths(
    tok: &PromptTokenizer,
    pool: &SaltPool,
    prompts: &[Prompt],
) -> Result<(), TokenizerError> {
    for p in prompts.iter().take(SALT_CHECKS) {
        let Some(at) = p.salt else { continue };
        let mut bytes = p.text.clone().into_bytes();
        pool.write(u64::MAX / 3, at.words, &mut bytes[at.at..]);
        let other = String::from_utf8(bytes).expect("salt words are ASCII");
        let got = tok.count(&other)?;
        if got != p.input_tokens {
            return Err(TokenizerError::SaltNotExact {
                path: tok.path().to_path_buf(),
                want: p.input_tokens,
                got,
            });
        }
    }
    Ok(())
}

/// Prompt text, exact with a tokenizer and approximate without, salted when `salt` is given.
struct Texts<'a> {
    tok: Option<&'a PromptTokenizer>,
    salt: Option<&'a SaltPool>,
}

impl Texts<'_> {
    /// `prefix` (of `prefix_tokens`), the salt, then filler: `tokens` in all. The salt is as
    /// many words as the pool's full salt, or fewer when fewer tokens are left after the
    /// prefix.
    fn synthetic(
        &self,
        rng: &mut impl Rng,
        prefix: &str,
        prefix_tokens: u32,
        tokens: u32,
    ) -> Result<(String, Option<SaltAt>), TokenizerError> {
        let mut s = String::with_capacity(prefix.len() + tokens as usize * 6);
        s.push_str(prefix);
        let own = tokens.saturating_sub(prefix_tokens);
        let salt = self
            .salt
            .filter(|_| own > 0)
            .map(|pool| pool.push(0, pool.tokens.min(own), &mut s));
        let fixed = prefix_tokens + salt.map_or(0, |a| a.words);
        if let Some(t) = self.tok {
            return Ok((t.exact_prompt(rng, &s, fixed, tokens)?, salt));
        }
        self.push_words(rng, tokens.saturating_sub(fixed), &mut s);
        Ok((s, salt))
    }

    /// A dataset prompt's text: `pre` (a shared prefix), the full salt and a line break, then
    /// the item's own text.
    fn salted(&self, pre: &str, own: &str) -> (String, Option<SaltAt>) {
        let mut text = String::with_capacity(pre.len() + own.len() + 64);
        text.push_str(pre);
        let salt = self.salt.map(|pool| {
            let at = pool.push(0, pool.tokens, &mut text);
            text.push('\n');
            at
        });
        if salt.is_none() && !pre.is_empty() {
            text.push(' ');
        }
        text.push_str(own);
        (text, salt)
    }

    /// `n` words, one token each: the tokenizer's one-token words, or common English words
    /// separated by spaces without one.
    fn push_words(&self, rng: &mut impl Rng, n: u32, out: &mut String) {
        if let Some(t) = self.tok {
            return t.push_words(rng, n, out);
        }
        for _ in 0..n {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(WORDS[rng.random_range(0..WORDS.len())]);
        }
    }

    /// A trace line's prompt, `input_length` tokens. Block i of a line with `hash_ids` is
    /// the words of its hash id — the same `block_size` words wherever the id appears, the
    /// last block their first few — so lines sharing a prefix of hash ids share that prefix
    /// of text byte for byte. Exact with a tokenizer: when it merges or splits across words,
    /// the whole blocks stay and the tail is made exact by `exact_prompt`.
    fn trace_text(
        &self,
        seed: u64,
        line: u64,
        r: &TraceRequest,
        block_size: u32,
    ) -> Result<String, TokenizerError> {
        let n = r.input_length;
        let mut text = String::with_capacity(n as usize * 8);
        let mut last_block_at = 0;
        if r.hash_ids.is_empty() {
            self.push_words(&mut stream_rng(seed, LINE_STREAM, line), n, &mut text);
        } else {
            let mut left = n;
            for &h in &r.hash_ids {
                last_block_at = text.len();
                let k = left.min(block_size);
                self.push_words(&mut stream_rng(seed, BLOCK_STREAM, h), k, &mut text);
                left -= k;
            }
        }
        let Some(tok) = self.tok else {
            return Ok(text);
        };
        if tok.count(&text)? == n {
            return Ok(text);
        }
        text.truncate(last_block_at);
        let whole_blocks = tok.count(&text)?;
        tok.exact_prompt(
            &mut stream_rng(seed, LINE_STREAM, line),
            &text,
            whole_blocks,
            n,
        )
    }

    fn count(&self, text: &str) -> Result<u32, TokenizerError> {
        match self.tok {
            Some(t) => t.count(text),
            None => Ok((text.len() as u32).div_ceil(4).max(1)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn prompt(
        &self,
        rng: &mut Xoshiro256PlusPlus,
        item: Option<&Item>,
        prefix: Option<(&String, u32)>,
        input: &LengthDist,
        output: &LengthDist,
        spec: &WorkloadSpec,
        group: Option<u32>,
    ) -> Result<Prompt, TokenizerError> {
        let (pre, pre_tokens) = prefix.map_or(("", 0), |(s, n)| (s.as_str(), n));
        let drawn_osl = output.sample(rng);
        let from_item = match item {
            Some(Item {
                output_tokens: Some(n),
                ..
            }) => Some(*n),
            Some(Item {
                answer: Some(a), ..
            }) => Some(self.count(a)?),
            _ => None,
        };
        // A dataset's own output lengths count unless the run sets them.
        let osl = match (from_item, &spec.output) {
            (Some(n), None) => n.max(1),
            _ => drawn_osl,
        };
        let ((text, mut salt), isl) = match item.map(|i| (&i.prompt, i.input_tokens)) {
            Some((Some(p), _)) => {
                let (text, salt) = self.salted(pre, p);
                let isl = self.count(&text)?;
                ((text, salt), isl)
            }
            Some((None, Some(n))) => {
                let n = n.max(pre_tokens + 1);
                (self.synthetic(rng, pre, pre_tokens, n)?, n)
            }
            _ => {
                let n = input.sample(rng).max(pre_tokens + 1);
                (self.synthetic(rng, pre, pre_tokens, n)?, n)
            }
        };
        // A shared prefix turns messages into one text, or the prefix would be lost.
        let mut messages = item
            .and_then(|i| i.messages.clone())
            .filter(|_| pre.is_empty());
        // Messages sent as given carry the salt where their joined text has it: at the
        // start of the first message's content.
        if let (Some(m), Some(at)) = (&mut messages, &mut salt) {
            let head = &text[..at.at + self.salt.map_or(0, |p| p.span(at.words)) + 1];
            if let Some(serde_json::Value::String(c)) =
                m.get_mut(0).and_then(|m| m.get_mut("content"))
            {
                c.insert_str(0, head);
                at.message = Some(0);
            }
        }
        Ok(Prompt {
            text,
            input_tokens: isl,
            max_tokens: osl,
            group,
            messages,
            salt,
            images: item.map_or(vec![], |i| i.images.clone()),
            media: vec![],
        })
    }
}

/// Random streams of trace text: one per hash id (shared by every line that has it), one per
/// line without hash ids.
const BLOCK_STREAM: u64 = 0xb10c;
const LINE_STREAM: u64 = 0x11e5;

fn stream_rng(seed: u64, stream: u64, key: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(splitmix64(seed ^ splitmix64(stream ^ splitmix64(key))))
}

/// One prompt per trace line: `input_length` tokens, `max_tokens` = `output_length`.
fn trace_prompts(texts: &Texts, seed: u64, t: &TraceLoad) -> Result<Vec<Prompt>, TokenizerError> {
    t.requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Ok(Prompt {
                text: texts.trace_text(seed, i as u64, r, t.block_size)?,
                input_tokens: r.input_length,
                max_tokens: r.output_length,
                group: None,
                messages: None,
                salt: None,
                images: vec![],
                media: vec![],
            })
        })
        .collect()
}

fn stats_of(
    plan: &Plan,
    tok: Option<&PromptTokenizer>,
    prompts: &[Prompt],
    salt: Option<&SaltPool>,
) -> WorkloadStats {
    let spec = &plan.workload;
    let isl: Vec<u32> = prompts.iter().map(|p| p.input_tokens).collect();
    let osl: Vec<u32> = prompts.iter().map(|p| p.max_tokens).collect();
    let input_method = match (tok, &spec.dataset) {
        (Some(t), _) => format!(
            "exact: counted by the tokenizer {} (special tokens and chat template excluded)",
            t.path().display()
        ),
        (None, Some(d)) if d.has_text() => TEXT_METHOD.to_string(),
        (None, _) => SYNTHETIC_METHOD.to_string(),
    };
    let input_method = match prompts.iter().any(|p| !p.images.is_empty()) {
        true => input_method + IMAGES_NOT_COUNTED,
        false => input_method,
    };
    let input_method = match prompts.iter().any(|p| !p.media.is_empty()) {
        true => input_method + MEDIA_NOT_COUNTED,
        false => input_method,
    };
    WorkloadStats {
        input_method,
        tokenizer: tok.map(|t| t.path().display().to_string()),
        source: match (&plan.load, &spec.dataset) {
            (Load::Trace(t), _) => format!("the trace {} (one per line)", t.path.display()),
            (_, Some(d)) => d.describe(),
            (_, None) => "synthetic text".to_string(),
        },
        distinct_prompts: prompts.len() as u64,
        input_tokens: Realized::of(&isl),
        output_tokens: Realized::of(&osl),
        prefix: spec.prefix.as_ref().map(|p| PrefixStats {
            groups: p.groups,
            tokens: p.tokens,
            zipf: p.zipf,
            intended_reuse_rate: intended_reuse(prompts, p.tokens),
        }),
        salt: salt.map(|pool| SaltStats {
            tokens: pool.tokens,
            pool_words: pool.count(),
            pool: pool.from.to_string(),
            at: match (&spec.prefix, &spec.dataset) {
                (Some(_), _) => "right after the shared prefix",
                (None, Some(d)) if d.has_text() => "at the start of the prompt, then a line break",
                (None, _) => "at the start of the prompt",
            }
            .to_string(),
            short_prompts: prompts
                .iter()
                .filter(|p| p.salt.is_some_and(|a| a.words < pool.tokens))
                .count() as u64,
        }),
        ..WorkloadStats::default()
    }
}

/// Over one pass of the catalog in id order: prefix tokens of every request whose group was
/// already seen, over all input tokens.
pub fn intended_reuse(prompts: &[Prompt], prefix_tokens: u32) -> f64 {
    let mut seen = std::collections::HashSet::new();
    let mut reused = 0u64;
    let mut total = 0u64;
    for p in prompts {
        total += u64::from(p.input_tokens);
        if let Some(g) = p.group {
            if !seen.insert(g) {
                reused += u64::from(prefix_tokens);
            }
        }
    }
    if total == 0 {
        0.0
    } else {
        reused as f64 / total as f64
    }
}

/// Tallied by the collector loop from the records (off the hot path): the cache hits the
/// server reported, and the prompts the run sent.
#[derive(Clone, Debug)]
pub struct WorkloadTally {
    cached_tokens: u64,
    input_tokens: u64,
    reports: u64,
    prompts: catalog::PromptTally,
}

impl WorkloadTally {
    /// Counts against `catalog`'s entries.
    pub fn new(catalog: &catalog::Catalog) -> WorkloadTally {
        WorkloadTally {
            cached_tokens: 0,
            input_tokens: 0,
            reports: 0,
            prompts: catalog.prompt_tally(),
        }
    }

    pub fn add(&mut self, rec: &crate::record::Record) {
        if rec.sent_ns.is_some() {
            self.prompts.sent(rec.id);
        }
        if rec.warmup || rec.outcome != crate::record::Outcome::Ok {
            return;
        }
        // Over the requests that reported a cache count, against their prompts as the server
        // counted them (its template included): the client's count is smaller by the
        // template, which read a llama.cpp run as 104.3% served from cache.
        if let Some(c) = rec.cached_tokens {
            self.cached_tokens += u64::from(c);
            self.input_tokens += u64::from(rec.prompt_tokens());
            self.reports += 1;
        }
    }

    /// Fills the observed side of the workload figures.
    pub fn apply(&self, stats: &mut WorkloadStats) {
        stats.observed_reports = self.reports;
        stats.observed_cached_rate = (self.reports > 0 && self.input_tokens > 0)
            .then(|| self.cached_tokens as f64 / self.input_tokens as f64);
        stats.prompts_sent = Some(self.prompts.total());
        stats.distinct_prompts_sent = Some(self.prompts.distinct());
        let (images, distinct) = self.prompts.images();
        if images > 0 {
            (stats.images_sent, stats.distinct_images_sent) = (Some(images), Some(distinct));
        }
    }
}
