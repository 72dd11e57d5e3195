//! Before the run: every request the workers will send, pre-serialized (head + body bytes), with
//! its prompt token count known up front. Stage 0 of the flow (plan → **catalog** → schedule →
//! worker …): the hot path only picks an entry by id and hands its bytes to the kernel.
//!
//! What each request asks (prompt, ISL, `max_tokens`) is decided by `workload` before this;
//! here it only becomes bytes. The catalog is bounded (`workload::MAX_DISTINCT` entries, cycled
//! by id; a trace replay one per line, at most `trace::MAX_TRACE_REQUESTS`; a session run of
//! a dataset's conversations one per turn kept, at most `MAX_CONVERSATION_TURNS`, picked by
//! the turn's session and index), so memory does not grow with the run. A salted entry knows where its salt's bytes are; `Catalog::write`
//! copies the entry into the lane's own buffer and writes the request's salt there — a copy
//! and a few word-sized writes, no allocation once the buffer has grown, and no count shared
//! with other cores (a shared `Bytes` would bump one refcount from every core).
//!
//! Every entry's bytes sit back to back in one arena, with `PAD` unused bytes on either side
//! so no cache line of it holds anything else. Each worker reads its own copy of what a
//! request reads (`Catalog::for_worker`, made on the worker's thread before the run starts):
//! the entries' places and the salt words always, the arena while it is at most
//! `OWN_COPY_MAX_BYTES` (64 MiB: every synthetic workload of up to 1,024 prompts of ~16k
//! tokens, a trace of ~16M prompt tokens) — memory: the arena once more per worker. A larger
//! arena (a trace may hold 2^28 prompt tokens, ~1 GiB) is shared read-only by every worker:
//! nothing writes it during the run, so reading it moves no cache line between cores.

use crate::plan::RunId;
use crate::plan::{Endpoint, Plan};
use crate::prepare::media::{Media, MediaTail};
use crate::prepare::salt::{SaltAt, SaltPool};
#[cfg(test)]
use crate::prepare::Prepared;
use crate::prepare::Prompt;
use crate::record::request_id::HEADER;
use crate::record::{InputSource, RequestId};
use crate::summary::workload::WorkloadStats;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// One pre-built request.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Where its head and body (with the words of salt value 0 where the salt goes) are in
    /// the arena, and how long.
    at: usize,
    len: u32,
    pub input_tokens: u32,
    /// `max_tokens` asked: the intended output length.
    pub output_tokens: u32,
    /// Where in `bytes` the salt's words are.
    pub salt: Option<Spot>,
    /// Where the head's last CRLF (the blank line) starts: `x-request-id` goes there.
    pub head_end: u32,
    /// Where the digits of `Content-Length` are in the head, and how many.
    pub content_length: Span,
    /// Chat requests: where the messages array's elements are (between its `[` and `]`), for
    /// a conversation's turn to put its history before them (`worker::session`).
    pub messages: Option<Span>,
    /// Its salted media: which of the catalog's media spots are its.
    media: Span,
    /// Images it sends (a dataset's and synthetic ones): for the figures per request.
    pub images: u16,
    /// Audio it sends, ms in all: for the figures per request.
    pub audio_ms: u32,
}

impl Entry {
    /// Its bytes' length, before `Catalog::write` adds the request's `x-request-id`.
    pub fn byte_len(&self) -> usize {
        self.len as usize
    }
}

/// A run of bytes in an entry: `[at, at + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub at: u32,
    pub len: u32,
}

/// A salt's place in an entry's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spot {
    pub at: u32,
    pub words: u32,
}

/// Unused bytes on either side of the arena: two cache lines (the adjacent-line prefetcher
/// pairs them), so no line of the arena is shared with another allocation.
const PAD: usize = 128;

/// The largest arena each worker gets a copy of; a larger one is shared read-only.
pub const OWN_COPY_MAX_BYTES: usize = 64 << 20;

/// Every entry's bytes back to back, `PAD` zero bytes on either side. Aligned to `PAD` so the
/// `Arc` that holds it shares no cache line with another allocation either.
#[repr(align(128))]
#[derive(Debug)]
struct Arena {
    bytes: Box<[u8]>,
}

impl Arena {
    /// An arena holding a copy of `all`.
    fn new(all: &[u8]) -> Arena {
        let mut bytes = vec![0u8; all.len() + 2 * PAD].into_boxed_slice();
        bytes[PAD..PAD + all.len()].copy_from_slice(all);
        Arena { bytes }
    }

    /// Every entry's bytes, back to back.
    fn all(&self) -> &[u8] {
        &self.bytes[PAD..self.bytes.len() - PAD]
    }

    #[inline]
    fn get(&self, at: usize, len: u32) -> &[u8] {
        &self.bytes[PAD + at..PAD + at + len as usize]
    }
}

/// All requests of a run; entry `id % len` is sent for arrival `id` (a session run of a
/// dataset's conversations: its conversation's turn, `Conversations`). Clones share everything
/// (read-only); a worker reads from its own copy (`for_worker`).
#[derive(Clone, Debug)]
pub struct Catalog {
    arena: Arc<Arena>,
    /// Per server (`plan.targets`' order): the request line and `Host:` every request sent
    /// there starts with (`request_head`); the entries hold the rest.
    heads: Arc<[Box<[u8]>]>,
    entries: Arc<[Entry]>,
    salt: Option<Arc<SaltPool>>,
    /// Every entry's salted media (`Entry::media` says which are whose).
    media: Arc<[MediaSpot]>,
    /// Added to the id before it becomes salt digits (the plan's `prompt_nonce`).
    nonce: u64,
    /// Entries whose bytes are the same share a class: what distinct prompts are counted by.
    class_of: Arc<[u32]>,
    /// Distinct salts of each class (1 unsalted).
    class_values: Arc<[u64]>,
    /// The images each class sends.
    class_images: Arc<[ClassImages]>,
    pub input_method: String,
    /// How every entry's `input_tokens` was counted; workers copy it into each record.
    pub input_source: InputSource,
    /// The longest entry, bytes (found once: every lane sizes its send buffer by it).
    max_bytes: usize,
    /// The run id every request's `x-request-id` starts with; `None`: none is sent
    /// (`Plan::sent_run_id`). Inline, so each worker's clone is its own.
    run_id: Option<RunId>,
    /// A session run of a dataset's conversations: which entries each session's turns are.
    conversations: Option<Conversations>,
    /// The server's context window, tokens, where it told it (`with_context_window`): a
    /// session whose next prompt plus that turn's `max_tokens` would not fit ends before it.
    pub context_window: Option<u32>,
}

/// A dataset's conversations among the entries: session `s` sends conversation `s mod C`,
/// its turn `k` (request id `s × stride + k`, `SessionSpec::turn_id`) that conversation's
/// `k`-th entry.
#[derive(Clone, Debug)]
struct Conversations {
    /// The entry of each conversation's first turn, then the number of entries: conversation
    /// `c`'s turns are entries `starts[c]..starts[c + 1]`.
    starts: Arc<[u32]>,
    /// The session's turn ids' stride (`SessionSpec::stride`).
    stride: u64,
}

impl Conversations {
    /// Session `session`'s conversation: its first entry and its turn count.
    #[inline]
    fn of(&self, session: u64) -> (u32, u32) {
        let c = (session % (self.starts.len() as u64 - 1)) as usize;
        (self.starts[c], self.starts[c + 1] - self.starts[c])
    }

    /// The entry request `id` sends: its session's conversation's turn (its last one for a
    /// turn past the end, which a session never sends).
    #[inline]
    fn entry(&self, id: u64) -> usize {
        let (first, turns) = self.of(id / self.stride);
        let k = (id % self.stride).min(u64::from(turns) - 1);
        first as usize + k as usize
    }
}

/// The entry request `id` sends: its conversation's turn, or entry `id % entries`.
#[inline]
fn entry_of(conversations: Option<&Conversations>, entries: usize, id: u64) -> usize {
    match conversations {
        Some(c) => c.entry(id),
        None => (id % entries as u64) as usize,
    }
}

impl Catalog {
    /// Serializes every prepared prompt (see `workload::prepare`), keeping them.
    #[cfg(test)]
    pub fn build(plan: &Plan, prepared: &Prepared, host_header: &str, model: &str) -> Catalog {
        let prompts = prepared.prompts.clone();
        let salt = prepared.salt.clone();
        let head = request_head(plan.endpoint, "", host_header);
        Catalog::from_prompts(plan, prompts, salt, &prepared.stats, vec![head], model)
            .with_conversations(plan, prepared.conversations.as_deref())
    }

    /// `build`, consuming the prompts: each text is freed once it is bytes, so a large trace
    /// is never held twice. `heads`: each server's `request_head`.
    pub fn from_prompts(
        plan: &Plan,
        prompts: Vec<Prompt>,
        salt: Option<SaltPool>,
        stats: &WorkloadStats,
        heads: Vec<Vec<u8>>,
        model: &str,
    ) -> Catalog {
        let per = prompts_per_request(plan);
        let mut b = Builder {
            plan,
            model,
            salt: &salt,
            head_extra: extra_headers(plan),
            classes: HashMap::new(),
            class_values: vec![],
            class_images: vec![],
            class_of: Vec::with_capacity(prompts.len() / per + 1),
            image_ids: HashMap::new(),
            media: vec![],
            all_bytes: Vec::new(),
        };
        let entries: Vec<Entry> = groups(prompts, per).map(|g| b.entry(&g)).collect();
        let max_head = heads.iter().map(Vec::len).max().unwrap_or(0);
        let max_bytes = max_head + entries.iter().map(|e| e.len as usize).max().unwrap_or(0);
        let run_id = plan.sent_run_id();
        let arena = Arena::new(&b.all_bytes);
        drop(std::mem::take(&mut b.all_bytes));
        Catalog {
            arena: Arc::new(arena),
            heads: heads.into_iter().map(Vec::into_boxed_slice).collect(),
            // `x-request-id: <run>-<20 digits>\r\n` at most.
            max_bytes: max_bytes + run_id.map_or(0, |r| HEADER.len() + r.as_str().len() + 25),
            run_id,
            entries: entries.into(),
            salt: salt.clone().map(Arc::new),
            media: b.media.into(),
            nonce: plan.workload.prompt_nonce.unwrap_or(0),
            class_of: b.class_of.into(),
            class_values: b.class_values.into(),
            class_images: b.class_images.into(),
            input_method: stats.input_method.clone(),
            // A tokenizer, when the run has one, counted every prompt (`prepare`).
            input_source: match stats.tokenizer {
                Some(_) => InputSource::Tokenizer,
                None => InputSource::Approximate,
            },
            conversations: None,
            context_window: None,
        }
    }

    /// This catalog for a session run of a dataset's conversations: `turns` of each one (its
    /// entries one after the other, as `prepare` keeps them). `None` (not such a run):
    /// unchanged.
    pub fn with_conversations(mut self, plan: &Plan, turns: Option<&[u32]>) -> Catalog {
        let stride = plan.sessions.as_ref().map_or(1, |s| s.stride());
        let Some(turns) = turns.filter(|t| !t.is_empty() && t.iter().all(|&n| n > 0)) else {
            return self;
        };
        let mut starts = Vec::with_capacity(turns.len() + 1);
        let mut at = 0u32;
        for &n in turns {
            starts.push(at);
            at += n;
        }
        starts.push(at);
        debug_assert_eq!(at as usize, self.entries.len(), "every entry is a turn");
        self.conversations = Some(Conversations {
            starts: starts.into(),
            stride: stride.max(1),
        });
        self
    }

    /// This catalog with the server's context window (`context_window`), for the sessions
    /// to end before a prompt that would not fit.
    pub fn with_context_window(mut self, window: Option<u32>) -> Catalog {
        self.context_window = window;
        self
    }

    /// How many turns session `session`'s conversation has; `None` when the run's turns do
    /// not come from a dataset's conversations.
    pub fn conversation_turns(&self, session: u64) -> Option<u32> {
        self.conversations.as_ref().map(|c| c.of(session).1)
    }

    /// The bytes of request `id` to server `to` (an index of `plan.targets`) into `out`
    /// (cleared first): that server's request line and `Host:`, then its entry, with its own
    /// `x-request-id` (`request_id(id)`) as the head's last header, and its own salt (digits
    /// of `id + nonce`) when salted. Returns the entry; its places are `head_len(to)` further
    /// in `out`, and those past its `head_end` by the `x-request-id` line's length more.
    #[inline]
    pub fn write(&self, id: u64, to: usize, out: &mut Vec<u8>) -> &Entry {
        let e = self.get(id);
        let bytes = self.arena.get(e.at, e.len);
        out.clear();
        out.extend_from_slice(&self.heads[to]);
        let mut shift = out.len();
        match self.request_id(id) {
            None => out.extend_from_slice(bytes),
            Some(rid) => {
                let (head, rest) = bytes.split_at(e.head_end as usize);
                out.extend_from_slice(head);
                out.extend_from_slice(HEADER.as_bytes());
                out.extend_from_slice(b": ");
                rid.write(out);
                out.extend_from_slice(b"\r\n");
                shift = out.len() - head.len();
                out.extend_from_slice(rest);
            }
        }
        if let (Some(spot), Some(pool)) = (e.salt, &self.salt) {
            pool.write(
                id.wrapping_add(self.nonce),
                spot.words,
                &mut out[spot.at as usize + shift..],
            );
        }
        let media = &self.media[e.media.at as usize..(e.media.at + e.media.len) as usize];
        for m in media {
            m.tail.write(
                id.wrapping_add(self.nonce),
                &mut out[m.at as usize + shift..],
            );
        }
        e
    }

    /// How long server `to`'s request line and `Host:` are: where an entry starts in what
    /// `write` wrote.
    #[inline]
    pub fn head_len(&self, to: usize) -> usize {
        self.heads[to].len()
    }

    /// What request `id` carries as `x-request-id`; `None` when the run sends none of ours.
    #[inline]
    pub fn request_id(&self, id: u64) -> Option<RequestId> {
        self.run_id.map(|run| RequestId { run, n: id })
    }

    /// A zeroed count of the prompts a run sends, for the collector.
    pub fn prompt_tally(&self) -> PromptTally {
        PromptTally {
            entries: self.entries.len(),
            conversations: self.conversations.clone(),
            class_of: self.class_of.clone(),
            class_values: self.class_values.clone(),
            class_images: self.class_images.clone(),
            sends: vec![0; self.class_values.len()],
        }
    }

    /// The longest request, bytes: what a lane's send buffer grows to.
    pub fn max_request_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The largest `max_tokens` of any entry.
    pub fn max_output_tokens(&self) -> u32 {
        self.entries
            .iter()
            .map(|e| e.output_tokens)
            .max()
            .unwrap_or(1)
    }

    /// The entry sent for `id`.
    #[inline]
    pub fn get(&self, id: u64) -> &Entry {
        &self.entries[entry_of(self.conversations.as_ref(), self.entries.len(), id)]
    }

    /// The bytes of the entry sent for `id` to the first server, before its id and salt
    /// are written.
    #[cfg(test)]
    pub fn bytes(&self, id: u64) -> Vec<u8> {
        let e = self.get(id);
        [&self.heads[0][..], self.arena.get(e.at, e.len)].concat()
    }

    /// This catalog as one worker reads it, to be called on that worker's thread (so what it
    /// allocates is that thread's): its own copy of the entries and the salt words, and of
    /// the arena when that is at most `OWN_COPY_MAX_BYTES`, else the shared one (read-only).
    pub fn for_worker(&self) -> Catalog {
        let arena = match self.arena.all().len() <= OWN_COPY_MAX_BYTES {
            true => Arc::new(Arena::new(self.arena.all())),
            false => self.arena.clone(),
        };
        Catalog {
            arena,
            entries: Arc::from(&self.entries[..]),
            salt: self.salt.as_deref().cloned().map(Arc::new),
            media: self.media.to_vec().into(),
            ..self.clone()
        }
    }

    /// Entries (distinct requests), for tests.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// A request's prompts, `per` each (a pooling request's inputs); a short last group only when
/// it is the only one.
fn groups(prompts: Vec<Prompt>, per: usize) -> impl Iterator<Item = Vec<Prompt>> {
    let mut left = prompts.into_iter();
    let mut first = true;
    std::iter::from_fn(move || {
        let g: Vec<Prompt> = left.by_ref().take(per).collect();
        let keep = g.len() == per || (first && !g.is_empty());
        first = false;
        keep.then_some(g)
    })
}

/// What `Catalog::from_prompts` gathers entry by entry.
struct Builder<'a> {
    plan: &'a Plan,
    model: &'a str,
    salt: &'a Option<SaltPool>,
    head_extra: String,
    classes: HashMap<(u64, u32), u32>,
    class_values: Vec<u64>,
    class_images: Vec<ClassImages>,
    class_of: Vec<u32>,
    /// Each unsalted image's number, by its address (an image shared by items is one).
    image_ids: HashMap<usize, u32>,
    media: Vec<MediaSpot>,
    all_bytes: Vec<u8>,
}

impl Builder<'_> {
    /// The entry of one request's prompts, its bytes appended to the arena's.
    fn entry(&mut self, inputs: &[Prompt]) -> Entry {
        let (plan, model) = (self.plan, self.model);
        let p = &inputs[0];
        let body = request_body(plan, model, inputs);
        let salt_in_body = (p.salt.zip(self.salt.as_ref()))
            .map(|(at, pool)| locate(plan, model, inputs, &body, at, pool));
        let bytes = entry_bytes(&self.head_extra, &body);
        let head_len = (bytes.len() - body.len()) as u32;
        let messages = messages_span(plan, p, &body).map(|m| Span {
            at: head_len + m.at,
            len: m.len,
        });
        let spot = salt_in_body.map(|at| Spot {
            at: head_len + at,
            words: p.salt.map_or(0, |s| s.words),
        });
        let media = self.media_spots(p, &body, head_len);
        let class = class_for(
            &mut self.classes,
            &mut self.class_values,
            &bytes,
            spot,
            self.salt,
        );
        if class as usize == self.class_images.len() {
            let images = self.images_of(p);
            self.class_images.push(images);
        }
        self.class_of.push(class);
        let at = self.all_bytes.len();
        self.all_bytes.extend_from_slice(&bytes);
        Entry {
            at,
            len: bytes.len() as u32,
            input_tokens: inputs.iter().map(|p| p.input_tokens).sum(),
            output_tokens: if plan.endpoint.generates() {
                p.max_tokens
            } else {
                0
            },
            salt: spot,
            head_end: head_len - 2,
            content_length: content_length_spot(&bytes, body.len()),
            messages,
            media,
            images: (p.images.len() + p.media.iter().filter(|m| m.audio_ms.is_none()).count())
                as u16,
            audio_ms: p.media.iter().filter_map(|m| m.audio_ms).sum(),
        }
    }

    /// Where each salted medium of `p` has its tail's base64 in the entry: its whole base64
    /// found in `body` after the one before it (the media's parts are in their order, and
    /// headers alike in two files make only a whole file tell them apart), kept in
    /// `self.media`.
    fn media_spots(&mut self, p: &Prompt, body: &[u8], head_len: u32) -> Span {
        let first = self.media.len() as u32;
        let mut from = 0;
        for m in &p.media {
            let b64 = m.b64().as_bytes();
            let at = from
                + memchr::memmem::find(&body[from..], b64)
                    .expect("a medium's base64 is in its request's body as it is");
            from = at + b64.len();
            let Some(tail) = &m.tail else { continue };
            self.media.push(MediaSpot {
                at: head_len + (at + tail.b64_at()) as u32,
                tail: tail.clone(),
            });
        }
        Span {
            at: first,
            len: self.media.len() as u32 - first,
        }
    }

    /// The images `p` sends: how many are salted (new pixels per request), and the numbers
    /// of the others.
    fn images_of(&mut self, p: &Prompt) -> ClassImages {
        let synthetic = p.media.iter().filter(|m| m.audio_ms.is_none());
        let salted = synthetic.clone().filter(|m| m.tail.is_some()).count() as u32;
        let addresses = (p
            .images
            .iter()
            .map(|u| Arc::as_ptr(u) as *const u8 as usize))
        .chain(
            synthetic
                .filter(|m| m.tail.is_none())
                .map(|m| Arc::as_ptr(m) as usize),
        );
        let mut ids = vec![];
        for a in addresses {
            let next = self.image_ids.len() as u32;
            ids.push(*self.image_ids.entry(a).or_insert(next));
        }
        ClassImages {
            salted,
            unsalted: ids.into(),
        }
    }
}

/// The images a class of entries sends: salted ones (new pixels every request) and the
/// numbers of the others (the same bytes every time).
#[derive(Clone, Debug, Default)]
struct ClassImages {
    salted: u32,
    unsalted: Box<[u32]>,
}

/// A salted medium's place in an entry: where its tail's base64 is, and the tail.
#[derive(Clone, Debug)]
struct MediaSpot {
    at: u32,
    tail: MediaTail,
}

/// Counts the requests sent per class of identical entries; the distinct prompts among them
/// are, per class, the fewer of its sends and its distinct salts. Exact when the ids sent to
/// a class are consecutive in it (a run sends ids 0, 1, 2 …, so they are, unless it was cut
/// short) and for every class whose salts outnumber the run's requests (every full salt).
#[derive(Clone, Debug)]
pub struct PromptTally {
    entries: usize,
    conversations: Option<Conversations>,
    class_of: Arc<[u32]>,
    class_values: Arc<[u64]>,
    class_images: Arc<[ClassImages]>,
    sends: Vec<u64>,
}

impl PromptTally {
    /// Request `id` was sent.
    pub fn sent(&mut self, id: u64) {
        let class = self.class_of[entry_of(self.conversations.as_ref(), self.entries, id)];
        self.sends[class as usize] += 1;
    }

    /// Requests sent.
    pub fn total(&self) -> u64 {
        self.sends.iter().sum()
    }

    /// Distinct prompts among them.
    pub fn distinct(&self) -> u64 {
        self.sends
            .iter()
            .zip(self.class_values.iter())
            .map(|(&n, &values)| n.min(values))
            .sum()
    }

    /// Images the requests sent carried, and how many of them were distinct: a salted one
    /// is new every request; an unsalted one counts once however often it was sent.
    pub fn images(&self) -> (u64, u64) {
        let (mut sent, mut salted) = (0, 0);
        let mut seen = std::collections::HashSet::new();
        for (&n, c) in self.sends.iter().zip(self.class_images.iter()) {
            sent += n * (u64::from(c.salted) + c.unsalted.len() as u64);
            salted += n * u64::from(c.salted);
            if n > 0 {
                seen.extend(c.unsalted.iter().copied());
            }
        }
        (sent, salted + seen.len() as u64)
    }
}

/// The class of an entry's `bytes` with its salt `spot`: a new one (and its count of
/// distinct salts) the first time such bytes are seen.
fn class_for(
    classes: &mut HashMap<(u64, u32), u32>,
    class_values: &mut Vec<u64>,
    bytes: &[u8],
    spot: Option<Spot>,
    salt: &Option<SaltPool>,
) -> u32 {
    let words = spot.map_or(0, |s| s.words);
    let next = classes.len() as u32;
    let class = *classes.entry((hash(bytes), words)).or_insert(next);
    if class == next {
        class_values.push(match (salt, spot) {
            (Some(pool), Some(s)) => pool.values(s.words),
            _ => 1,
        });
    }
    class
}

/// 64-bit FNV-1a: entries are grouped by it (a collision would only merge two classes).
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Where the salt of `inputs[0]` is in its serialized `body`: the body is serialized again with the
/// salt's bytes all `A` (which no salt word has, and JSON does not escape), and the salt is
/// where the two first differ. Both are the same length, and they differ in exactly the
/// salt's span.
fn locate(
    plan: &Plan,
    model: &str,
    inputs: &[Prompt],
    body: &[u8],
    at: SaltAt,
    pool: &SaltPool,
) -> u32 {
    let span = pool.span(at.words);
    let mut marked = inputs.to_vec();
    let p = &mut marked[0];
    let a = "A".repeat(span);
    p.text.replace_range(at.at..at.at + span, &a);
    if let Some(i) = at.message {
        if let Some(serde_json::Value::String(c)) = p
            .messages
            .as_mut()
            .and_then(|m| m.get_mut(i))
            .and_then(|m| m.get_mut("content"))
        {
            c.replace_range(..span, &a);
        }
    }
    let other = request_body(plan, model, &marked);
    let from = body.iter().zip(&other).position(|(x, y)| x != y);
    let differ = body.iter().zip(&other).filter(|(x, y)| x != y).count();
    match from {
        Some(i) if other.len() == body.len() && differ == span => i as u32,
        _ => unreachable!("a salt's bytes are plain ASCII and appear once in the body"),
    }
}

/// Where the elements of a chat body's `messages` array are: the array serialized alone is
/// found after its key (serde_json writes a value the same way wherever it stands).
fn messages_span(plan: &Plan, p: &Prompt, body: &[u8]) -> Option<Span> {
    if plan.endpoint != Endpoint::Chat {
        return None;
    }
    let array = serde_json::to_vec(&chat_messages(p)).ok()?;
    let key = b"\"messages\":";
    let at = body
        .windows(key.len() + array.len())
        .position(|w| w.starts_with(key) && &w[key.len()..] == array.as_slice())?;
    Some(Span {
        at: (at + key.len() + 1) as u32,
        len: (array.len() - 2) as u32,
    })
}

/// Where `entry_bytes` wrote the body's length.
fn content_length_spot(bytes: &[u8], body_len: usize) -> Span {
    const KEY: &[u8] = b"\r\nContent-Length: ";
    let at = bytes
        .windows(KEY.len())
        .position(|w| w == KEY)
        .map_or(0, |i| i + KEY.len());
    Span {
        at: at as u32,
        len: body_len.to_string().len() as u32,
    }
}

fn extra_headers(plan: &Plan) -> String {
    let mut h = String::new();
    let given = |name: &str| {
        plan.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    if let Some(key) = &plan.api_key {
        // Anthropic's Messages API takes its key in `x-api-key`, not `Authorization`.
        match plan.endpoint {
            Endpoint::Messages => {
                let _ = write!(h, "x-api-key: {key}\r\n");
            }
            _ => {
                let _ = write!(h, "Authorization: Bearer {key}\r\n");
            }
        }
    }
    if plan.endpoint == Endpoint::Messages && !given("anthropic-version") {
        h.push_str("anthropic-version: 2023-06-01\r\n");
    }
    for (k, v) in &plan.headers {
        let _ = write!(h, "{k}: {v}\r\n");
    }
    h
}

/// Prompts one request carries: one for a generating endpoint; `--batch-size` inputs for
/// embeddings; a query and `--batch-size` documents (or pairs) for rerank and score.
pub fn prompts_per_request(plan: &Plan) -> usize {
    let batch = plan.api.batch_size.max(1) as usize;
    match plan.endpoint {
        Endpoint::Embeddings => batch,
        Endpoint::Rerank | Endpoint::Score | Endpoint::TeiRerank => batch + 1,
        _ => 1,
    }
}

/// The JSON body of one request, built with serde_json so prompts and names are escaped
/// correctly: `inputs[0]` is the prompt (a pooling request's first input, rerank's and
/// score's query), the rest a pooling request's other inputs (documents). The request options
/// come last, `--extra-body` after everything, so its keys win.
pub fn request_body(plan: &Plan, model: &str, inputs: &[Prompt]) -> Vec<u8> {
    use serde_json::Value;
    let prompt = &inputs[0];
    let texts = |from: usize| -> Vec<Value> {
        inputs[from..]
            .iter()
            .map(|p| p.text.as_str().into())
            .collect()
    };
    let mut body = serde_json::Map::new();
    if plan.endpoint != Endpoint::TeiRerank {
        body.insert("model".into(), model.into());
    }
    // Images and audio go as content parts in each API's own shape (`user_content`).
    match plan.endpoint {
        Endpoint::Chat => {
            body.insert("messages".into(), chat_messages(prompt));
        }
        Endpoint::Completions => {
            body.insert("prompt".into(), prompt.text.as_str().into());
        }
        Endpoint::Responses => {
            let (system, mut rest) = split_system(messages_of(prompt, Api::Responses));
            if let Some(system) = system {
                body.insert("instructions".into(), system.into());
            }
            let input = match (&prompt.messages, has_parts(prompt)) {
                (None, false) => prompt.text.as_str().into(),
                _ => {
                    attach_parts(&mut rest, prompt, Api::Responses);
                    Value::Array(rest.iter().map(responses_item).collect())
                }
            };
            body.insert("input".into(), input);
        }
        Endpoint::Messages => {
            let (system, mut rest) = split_system(messages_of(prompt, Api::Messages));
            if let Some(system) = system {
                body.insert("system".into(), system.into());
            }
            attach_parts(&mut rest, prompt, Api::Messages);
            body.insert("messages".into(), Value::Array(rest));
        }
        Endpoint::Embeddings => {
            body.insert("input".into(), Value::Array(texts(0)));
            let format = plan.api.encoding_format.name();
            body.insert("encoding_format".into(), format.into());
        }
        Endpoint::Rerank => {
            body.insert("query".into(), prompt.text.as_str().into());
            body.insert("documents".into(), Value::Array(texts(1)));
        }
        Endpoint::Score => {
            body.insert("text_1".into(), prompt.text.as_str().into());
            body.insert("text_2".into(), Value::Array(texts(1)));
        }
        Endpoint::TeiRerank => {
            body.insert("query".into(), prompt.text.as_str().into());
            body.insert("texts".into(), Value::Array(texts(1)));
        }
    }
    if plan.endpoint.generates() {
        insert_generation(plan, prompt, &mut body);
    }
    if let Some(extra) = &plan.workload.request.extra_body {
        body.extend(extra.clone());
    }
    serde_json::to_vec(&Value::Object(body)).expect("a JSON map always serializes")
}

/// A generating endpoint's options: the output cap under its API's name, streaming, tools,
/// and the request options asked.
fn insert_generation(
    plan: &Plan,
    prompt: &Prompt,
    body: &mut serde_json::Map<String, serde_json::Value>,
) {
    use serde_json::json;
    let max_key = match plan.endpoint {
        Endpoint::Responses => "max_output_tokens",
        _ => "max_tokens",
    };
    body.insert(max_key.into(), prompt.max_tokens.into());
    body.insert("stream".into(), plan.stream.into());
    let openai = matches!(plan.endpoint, Endpoint::Chat | Endpoint::Completions);
    if openai && plan.stream && plan.include_usage {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    insert_tools(plan, body);
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
}

/// A chat `messages` array's system messages (their text joined), and the others: the
/// Responses API takes the system prompt as `instructions`, Anthropic's as `system`.
fn split_system(messages: serde_json::Value) -> (Option<String>, Vec<serde_json::Value>) {
    let serde_json::Value::Array(all) = messages else {
        return (None, vec![messages]);
    };
    let is_system = |m: &serde_json::Value| {
        matches!(
            m.get("role").and_then(|r| r.as_str()),
            Some("system" | "developer")
        )
    };
    let (system, rest): (Vec<_>, Vec<_>) = all.into_iter().partition(is_system);
    let text: Vec<&str> = system
        .iter()
        .filter_map(|m| m.get("content").and_then(|c| c.as_str()))
        .collect();
    ((!text.is_empty()).then(|| text.join("\n")), rest)
}

/// A chat message as a Responses input item: its text as an `input_text` part (an
/// assistant's as `output_text`).
fn responses_item(m: &serde_json::Value) -> serde_json::Value {
    let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("user");
    let part = match role {
        "assistant" => "output_text",
        _ => "input_text",
    };
    match m.get("content") {
        Some(serde_json::Value::String(text)) => serde_json::json!({
            "role": role,
            "content": [{ "type": part, "text": text }],
        }),
        _ => m.clone(),
    }
}

/// `tools` and `tool_choice` in the endpoint's own shape: OpenAI chat's nested `function`,
/// Responses' flat one, Anthropic's `input_schema` and `{"type":"any"}`.
fn insert_tools(plan: &Plan, body: &mut serde_json::Map<String, serde_json::Value>) {
    use crate::plan::ToolChoice;
    use serde_json::json;
    let api = &plan.api;
    if !plan.endpoint.takes_tools() || api.tools.is_empty() {
        return;
    }
    let tools: Vec<serde_json::Value> = api
        .tools
        .iter()
        .map(|t| {
            let mut f = json!({ "name": t.name });
            if let Some(d) = &t.description {
                f["description"] = d.as_str().into();
            }
            match plan.endpoint {
                Endpoint::Messages => {
                    f["input_schema"] = t.parameters.clone();
                    f
                }
                Endpoint::Responses => {
                    f["type"] = "function".into();
                    f["parameters"] = t.parameters.clone();
                    f
                }
                _ => {
                    f["parameters"] = t.parameters.clone();
                    json!({ "type": "function", "function": f })
                }
            }
        })
        .collect();
    body.insert("tools".into(), tools.into());
    let choice = api.tool_choice.as_ref().map(|c| match (plan.endpoint, c) {
        (Endpoint::Messages, ToolChoice::Auto) => json!({ "type": "auto" }),
        (Endpoint::Messages, ToolChoice::Required) => json!({ "type": "any" }),
        (Endpoint::Messages, ToolChoice::None) => json!({ "type": "none" }),
        (Endpoint::Messages, ToolChoice::Named(n)) => json!({ "type": "tool", "name": n }),
        (_, ToolChoice::Auto) => "auto".into(),
        (_, ToolChoice::Required) => "required".into(),
        (_, ToolChoice::None) => "none".into(),
        (Endpoint::Responses, ToolChoice::Named(n)) => json!({ "type": "function", "name": n }),
        (_, ToolChoice::Named(n)) => json!({ "type": "function", "function": { "name": n } }),
    });
    if let Some(choice) = choice {
        body.insert("tool_choice".into(), choice);
    }
}

/// The API whose content parts a request's images and audio take the shape of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    /// OpenAI chat: `text`, `image_url` (a URL), `input_audio` (base64 WAV).
    Chat,
    /// OpenAI Responses: `input_text`, `input_image` (a URL).
    Responses,
    /// Anthropic Messages: `text`, `image` (a base64 source, or a URL source).
    Messages,
}

/// Whether a prompt sends images or audio beside its text.
fn has_parts(prompt: &Prompt) -> bool {
    !(prompt.images.is_empty() && prompt.media.is_empty())
}

/// A chat request's `messages`: the dataset's messages as given, or the prompt as one user
/// message; its images and audio as parts of the last user message.
fn chat_messages(prompt: &Prompt) -> serde_json::Value {
    let mut m = messages_of(prompt, Api::Chat);
    if let (Some(_), serde_json::Value::Array(items)) = (&prompt.messages, &mut m) {
        attach_parts(items, prompt, Api::Chat);
    }
    m
}

/// The prompt's messages: the dataset's as given, or one user message of `user_content`.
fn messages_of(prompt: &Prompt, api: Api) -> serde_json::Value {
    match &prompt.messages {
        Some(m) => m.clone(),
        None => serde_json::json!([{ "role": "user", "content": user_content(prompt, api) }]),
    }
}

/// A dataset's messages given as they are: the prompt's images and audio appended to the
/// last user message's content (made parts when it is a string). Parts already there
/// (`user_content`'s) are left as they are.
fn attach_parts(items: &mut [serde_json::Value], prompt: &Prompt, api: Api) {
    if prompt.messages.is_none() || !has_parts(prompt) {
        return;
    }
    let last_user = items
        .iter_mut()
        .rev()
        .find(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"));
    let Some(content) = last_user.and_then(|m| m.get_mut("content")) else {
        return;
    };
    if let serde_json::Value::String(text) = content {
        *content = vec![text_part(text, api)].into();
    }
    if let serde_json::Value::Array(parts) = content {
        parts.extend(media_parts(prompt, api));
    }
}

/// A prompt's user message `content`: its text, or with images or audio content parts in
/// `api`'s shape, the text then each image (a dataset's, then synthetic ones) and clip.
fn user_content(prompt: &Prompt, api: Api) -> serde_json::Value {
    if !has_parts(prompt) {
        return prompt.text.as_str().into();
    }
    let mut parts = vec![text_part(&prompt.text, api)];
    parts.extend(media_parts(prompt, api));
    parts.into()
}

/// A text part in `api`'s shape.
fn text_part(text: &str, api: Api) -> serde_json::Value {
    let kind = match api {
        Api::Responses => "input_text",
        _ => "text",
    };
    serde_json::json!({ "type": kind, "text": text })
}

/// A prompt's images (a dataset's, then synthetic ones) and audio clips as parts.
fn media_parts(prompt: &Prompt, api: Api) -> impl Iterator<Item = serde_json::Value> + '_ {
    let dataset = prompt.images.iter().map(move |url| image_part(url, api));
    dataset.chain(prompt.media.iter().map(move |m| medium_part(m, api)))
}

/// A synthetic image or clip as a part: a clip as chat's `input_audio` (base64 WAV).
fn medium_part(m: &Media, api: Api) -> serde_json::Value {
    match m.audio_ms {
        Some(_) => serde_json::json!({
            "type": "input_audio",
            "input_audio": { "data": m.b64(), "format": "wav" },
        }),
        None if api == Api::Messages => serde_json::json!({
            "type": "image",
            "source": { "type": "base64", "media_type": m.mime(), "data": m.b64() },
        }),
        None => image_part(&m.url, api),
    }
}

/// An image (a `data:` or `http(s)` URL) as `api` takes it.
fn image_part(url: &str, api: Api) -> serde_json::Value {
    use serde_json::json;
    match api {
        Api::Chat => json!({ "type": "image_url", "image_url": { "url": url } }),
        Api::Responses => json!({ "type": "input_image", "image_url": url }),
        Api::Messages => match url
            .strip_prefix("data:")
            .and_then(|u| u.split_once(";base64,"))
        {
            Some((mime, data)) => json!({
                "type": "image",
                "source": { "type": "base64", "media_type": mime, "data": data },
            }),
            None => json!({ "type": "image", "source": { "type": "url", "url": url } }),
        },
    }
}

/// What a request to `route` on a server starts with: its request line (under the server's
/// `base_path`) and `Host:`. The catalog's entries hold the rest of the head and the body.
pub fn request_head(route: Endpoint, base_path: &str, host_header: &str) -> Vec<u8> {
    format!(
        "POST {base_path}{} HTTP/1.1\r\nHost: {host_header}\r\n",
        route.path()
    )
    .into_bytes()
}

/// An entry's bytes: the head after the request line and `Host:`, then the body.
fn entry_bytes(extra: &str, body: &[u8]) -> Vec<u8> {
    let mut head = String::with_capacity(256 + extra.len());
    let _ = write!(
        head,
        "Content-Type: application/json\r\n\
         Accept: text/event-stream, application/json\r\nUser-Agent: ringbench/{}\r\n\
         Content-Length: {}\r\n{extra}\r\n",
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

    /// The head's headers of a written request, by name (lower-cased), and its body.
    fn head_and_body(bytes: &[u8]) -> (String, Vec<(String, String)>, serde_json::Value) {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut req = httparse::Request::new(&mut headers);
        let httparse::Status::Complete(n) = req.parse(bytes).unwrap() else {
            panic!("head incomplete")
        };
        let hs = req
            .headers
            .iter()
            .map(|h| {
                let v = String::from_utf8(h.value.to_vec()).unwrap();
                (h.name.to_ascii_lowercase(), v)
            })
            .collect();
        let body = serde_json::from_slice(&bytes[n..]).unwrap();
        (req.path.unwrap().to_string(), hs, body)
    }

    fn plan_for(endpoint: Endpoint) -> Plan {
        let mut plan = Plan::defaults();
        plan.endpoint = endpoint;
        plan.input_tokens = 5;
        plan.output_tokens = 9;
        plan.stream = endpoint.generates();
        plan.api_key = Some("sk-x".into());
        plan
    }

    #[test]
    fn every_endpoint_gets_its_own_route_body_and_auth() {
        for e in Endpoint::ALL {
            let mut plan = plan_for(e);
            if e.batches() {
                plan.api.batch_size = 3;
            }
            let cat = Catalog::build(&plan, &prepare(&plan).unwrap(), "h:1", "m");
            let (path, hs, body) = head_and_body(&cat.bytes(4));
            let header = |n: &str| hs.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
            assert_eq!(path, e.path(), "{e:?}");
            let text = |v: &serde_json::Value| v.as_str().unwrap().split(' ').count();
            match e {
                Endpoint::Chat | Endpoint::Completions => assert_eq!(body["max_tokens"], 9),
                Endpoint::Responses => {
                    assert_eq!(text(&body["input"]), 5);
                    assert_eq!(body["max_output_tokens"], 9);
                    assert!(
                        body.get("max_tokens").is_none() && body.get("stream_options").is_none()
                    );
                }
                Endpoint::Messages => {
                    assert_eq!(body["max_tokens"], 9);
                    assert_eq!(text(&body["messages"][0]["content"]), 5);
                    assert_eq!(header("x-api-key"), Some("sk-x"));
                    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
                    assert_eq!(
                        header("authorization"),
                        None,
                        "the key goes in x-api-key only"
                    );
                    assert!(body.get("stream_options").is_none());
                }
                Endpoint::Embeddings => {
                    let input = body["input"].as_array().unwrap();
                    assert_eq!(input.len(), 3);
                    assert!(input.iter().all(|t| text(t) == 5));
                    assert_eq!(body["encoding_format"], "float");
                    assert_eq!(cat.get(4).input_tokens, 15);
                }
                Endpoint::Rerank | Endpoint::Score | Endpoint::TeiRerank => {
                    let (q, docs) = match e {
                        Endpoint::Rerank => ("query", "documents"),
                        Endpoint::Score => ("text_1", "text_2"),
                        _ => ("query", "texts"),
                    };
                    assert_eq!(text(&body[q]), 5, "{e:?}");
                    assert_eq!(body[docs].as_array().unwrap().len(), 3, "{e:?}");
                    assert_eq!(cat.get(4).input_tokens, 20, "a query and 3 documents");
                    assert_eq!(body.get("model").is_none(), e == Endpoint::TeiRerank);
                }
            }
            if e.generates() {
                assert_eq!(body["stream"], true, "{e:?}");
                assert_eq!(cat.get(4).output_tokens, 9);
            } else {
                assert!(body.get("stream").is_none() && body.get("max_tokens").is_none());
                assert_eq!(cat.get(4).output_tokens, 0);
            }
            if e != Endpoint::Messages {
                assert_eq!(header("authorization"), Some("Bearer sk-x"), "{e:?}");
            }
        }
    }

    #[test]
    fn a_pooling_requests_salt_is_its_first_inputs_and_differs_per_request() {
        let mut plan = plan_for(Endpoint::Embeddings);
        plan.api.batch_size = 4;
        plan.stop.request_count = Some(3);
        let prepared = prepare(&plan).unwrap();
        assert_eq!(prepared.prompts.len(), 12, "3 requests of 4 inputs");
        let cat = Catalog::build(&plan, &prepared, "h:1", "m");
        assert_eq!(cat.len(), 3);
        let body = |id: u64| {
            let mut out = vec![];
            cat.write(id, 0, &mut out);
            head_and_body(&out).2
        };
        let (a, b) = (body(0), body(3));
        let (ia, ib) = (
            a["input"].as_array().unwrap(),
            b["input"].as_array().unwrap(),
        );
        assert_eq!(ia[1..], ib[1..], "the same entry: other inputs equal");
        assert_ne!(
            a["input"][0], b["input"][0],
            "its first input salted per request"
        );
    }

    /// A request's synthetic media, in its API's shape, as `write` sends them: every one's
    /// file salted per request (distinct bytes), the same bytes again without the salt.
    #[test]
    fn a_requests_media_are_its_own_in_its_apis_shape() {
        use crate::plan::workload::{ImageFormat, ImageSize, LengthDist};
        use base64::Engine;
        let files = |e: Endpoint, salt: bool| {
            let mut plan = plan_for(e);
            let m = &mut plan.workload.media;
            m.image_count = Some(LengthDist::Fixed { tokens: 2 });
            m.image_size = ImageSize::parse("--image-size", "20x10").unwrap();
            m.image_format = ImageFormat::Random;
            m.salt = salt;
            if e == Endpoint::Chat {
                m.audio_ms = Some(LengthDist::Fixed { tokens: 100 });
            }
            plan.stop.request_count = Some(4);
            let cat = Catalog::build(&plan, &prepare(&plan).unwrap(), "h:1", "m");
            assert_eq!(cat.len(), 4);
            assert_eq!(cat.get(0).images, 2);
            let mut out = vec![];
            let mut tally = cat.prompt_tally();
            let all: Vec<Vec<Vec<u8>>> = (0..12)
                .map(|id| {
                    cat.write(id, 0, &mut out);
                    tally.sent(id);
                    let body = head_and_body(&out).2;
                    let parts = match e {
                        Endpoint::Responses => body["input"][0]["content"].clone(),
                        _ => body["messages"][0]["content"].clone(),
                    };
                    let parts = parts.as_array().unwrap().clone();
                    assert_eq!(parts.len(), if e == Endpoint::Chat { 4 } else { 3 });
                    parts[1..]
                        .iter()
                        .map(|p| {
                            let b64 = match (e, p["type"].as_str().unwrap()) {
                                (_, "input_audio") => p["input_audio"]["data"].as_str(),
                                (Endpoint::Chat, t) => {
                                    assert_eq!(t, "image_url");
                                    p["image_url"]["url"].as_str().map(|u| &u[22..])
                                }
                                (Endpoint::Responses, t) => {
                                    assert_eq!(t, "input_image");
                                    p["image_url"].as_str().map(|u| &u[22..])
                                }
                                (_, t) => {
                                    assert_eq!(t, "image");
                                    p["source"]["data"].as_str()
                                }
                            };
                            let engine = base64::engine::general_purpose::STANDARD;
                            engine.decode(b64_of(b64)).unwrap()
                        })
                        .collect()
                })
                .collect();
            (all, tally.images())
        };
        fn b64_of(s: Option<&str>) -> &str {
            s.unwrap().trim_start_matches(',')
        }
        for e in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
            let (salted, images) = files(e, true);
            let distinct: std::collections::HashSet<_> = salted.iter().flatten().collect();
            let per = salted[0].len();
            assert_eq!(distinct.len(), 12 * per, "{e:?}: every file its own");
            assert_eq!(images, (24, 24), "{e:?}");
            let (plain, images) = files(e, false);
            for id in 0..8 {
                assert_eq!(
                    plain[id],
                    plain[id + 4],
                    "{e:?} {id}: the catalog's bytes again"
                );
            }
            assert_ne!(plain[0], plain[1]);
            assert_eq!(
                images,
                (24, 8),
                "{e:?}: 4 entries of 2 images, sent 3 times each"
            );
        }
    }

    #[test]
    fn tools_and_tool_choice_go_in_each_apis_shape() {
        use crate::plan::{Tool, ToolChoice};
        let tool = Tool {
            name: "lookup".into(),
            description: Some("finds".into()),
            parameters: serde_json::json!({"type": "object"}),
        };
        let shape = |e: Endpoint, choice: ToolChoice| {
            let mut plan = plan_for(e);
            plan.api.tools = vec![tool.clone()];
            plan.api.tool_choice = Some(choice);
            let cat = Catalog::build(&plan, &prepare(&plan).unwrap(), "h:1", "m");
            let body = head_and_body(&cat.bytes(0)).2;
            (body["tools"][0].clone(), body["tool_choice"].clone())
        };
        let named = || ToolChoice::Named("lookup".into());
        let (t, c) = shape(Endpoint::Chat, named());
        assert_eq!(t["type"], "function");
        assert_eq!(t["function"]["name"], "lookup");
        assert_eq!(t["function"]["parameters"]["type"], "object");
        assert_eq!(c["function"]["name"], "lookup");
        let (t, c) = shape(Endpoint::Responses, named());
        assert_eq!(
            (t["type"].as_str(), t["name"].as_str()),
            (Some("function"), Some("lookup"))
        );
        assert_eq!(
            (c["type"].as_str(), c["name"].as_str()),
            (Some("function"), Some("lookup"))
        );
        let (t, c) = shape(Endpoint::Messages, ToolChoice::Required);
        assert_eq!(t["input_schema"]["type"], "object");
        assert!(t.get("type").is_none() && t.get("parameters").is_none());
        assert_eq!(c, serde_json::json!({"type": "any"}));
        assert_eq!(shape(Endpoint::Chat, ToolChoice::Required).1, "required");
        assert_eq!(shape(Endpoint::Responses, ToolChoice::None).1, "none");
    }

    #[test]
    fn a_system_message_becomes_instructions_or_system() {
        let mut p = Prompt {
            text: "hi".into(),
            input_tokens: 1,
            max_tokens: 4,
            group: None,
            messages: Some(serde_json::json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "again"}
            ])),
            salt: None,
            images: Default::default(),
            media: vec![],
        };
        let body = |e: Endpoint, p: &Prompt| {
            let b = request_body(&plan_for(e), "m", std::slice::from_ref(p));
            serde_json::from_slice::<serde_json::Value>(&b).unwrap()
        };
        let r = body(Endpoint::Responses, &p);
        assert_eq!(r["instructions"], "be brief");
        assert_eq!(r["input"].as_array().unwrap().len(), 3);
        assert_eq!(r["input"][0]["content"][0]["type"], "input_text");
        assert_eq!(r["input"][1]["content"][0]["type"], "output_text");
        let m = body(Endpoint::Messages, &p);
        assert_eq!(m["system"], "be brief");
        assert_eq!(m["messages"][0]["role"], "user");
        assert_eq!(m["messages"].as_array().unwrap().len(), 3);
        p.messages = None;
        let plain = body(Endpoint::Responses, &p);
        assert_eq!(plain["input"], "hi");
        assert!(plain.get("instructions").is_none());
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
        let (path, body, auth) = parse(&cat.bytes(101));
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(body["model"], "m\"odel");
        assert_eq!(body["max_tokens"], 33);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(body.get("ignore_eos").is_none() && body.get("temperature").is_none());
        let prompt = body["messages"][0]["content"].as_str().unwrap();
        assert_eq!(prompt.split(' ').count(), 7);
        assert_eq!(auth.as_deref(), Some(&b"Bearer sk-x"[..]));
    }

    /// The `x-request-id` of a written request, and its body.
    fn id_and_body(out: &[u8]) -> (Option<String>, Vec<u8>) {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut req = httparse::Request::new(&mut headers);
        let httparse::Status::Complete(head_len) = req.parse(out).unwrap() else {
            panic!("head incomplete")
        };
        let id = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("x-request-id"))
            .map(|h| String::from_utf8(h.value.to_vec()).unwrap());
        let length = req
            .headers
            .iter()
            .find(|h| h.name == "Content-Length")
            .map(|h| {
                std::str::from_utf8(h.value)
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            });
        assert_eq!(
            length,
            Some(out.len() - head_len),
            "Content-Length is the body's"
        );
        (id, out[head_len..].to_vec())
    }

    #[test]
    fn every_request_carries_its_own_id_and_salt_unless_told_not_to() {
        let mut plan = Plan::defaults();
        plan.input_tokens = 20;
        plan.workload.prompt_nonce = Some(5);
        let prepared = prepare(&plan).unwrap();
        let unsent = Catalog::build(&plan, &prepared, "h:1", "m");
        plan.run_id = Some("t.x-1".into());
        let sent = Catalog::build(&plan, &prepared, "h:1", "m");
        let (mut a, mut b) = (vec![], vec![]);
        for id in [0, 9, 101, 123_456_789, u64::MAX] {
            unsent.write(id, 0, &mut a);
            sent.write(id, 0, &mut b);
            let (none, body_a) = id_and_body(&a);
            let (rid, body_b) = id_and_body(&b);
            assert_eq!(none, None);
            assert_eq!(rid, Some(format!("t.x-1-{id}")));
            assert_eq!(
                sent.request_id(id).unwrap().to_string(),
                format!("t.x-1-{id}")
            );
            // The salt landed in the same place of the body, after the longer head.
            assert_eq!(body_a, body_b, "id {id}");
            assert!(b.len() <= sent.max_request_bytes());
        }
        plan.request_id = false;
        assert_eq!(
            Catalog::build(&plan, &prepared, "h:1", "m").request_id(3),
            None
        );
        plan.request_id = true;
        plan.headers = vec![("X-Request-ID".into(), "mine".into())];
        let users = Catalog::build(&plan, &prepared, "h:1", "m");
        assert_eq!(users.request_id(3), None, "the user's header wins");
        users.write(3, 0, &mut b);
        assert_eq!(id_and_body(&b).0.as_deref(), Some("mine"));
    }

    #[test]
    fn same_seed_same_prompts() {
        let plan = Plan::defaults();
        let a = Catalog::build(&plan, &prepare(&plan).unwrap(), "h", "m");
        let b = Catalog::build(&plan, &prepare(&plan).unwrap(), "h", "m");
        assert_eq!(a.bytes(5), b.bytes(5));
        assert_ne!(a.bytes(5), a.bytes(6));
    }

    /// Issue #18: a worker reads its own copy (nothing another core writes shares a line with
    /// it), which sends the same bytes as the catalog it came from.
    #[test]
    fn a_workers_copy_is_its_own_and_sends_the_same_bytes() {
        let mut plan = Plan::defaults();
        plan.workload.prompt_salt = true;
        plan.workload.prompt_nonce = Some(9);
        let cat = Catalog::build(&plan, &prepare(&plan).unwrap(), "h", "m");
        let own = cat.for_worker();
        assert!(!Arc::ptr_eq(&cat.arena, &own.arena), "the arena is copied");
        assert!(!Arc::ptr_eq(&cat.entries, &own.entries));
        assert!(
            own.salt.is_some()
                && !Arc::ptr_eq(cat.salt.as_ref().unwrap(), own.salt.as_ref().unwrap())
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for id in [0, 1, 5, 1023, 1024, 77_777] {
            cat.write(id, 0, &mut a);
            own.write(id, 0, &mut b);
            assert_eq!(a, b, "request {id}");
        }
        // The arena's padding is unused: nothing but the requests' bytes between its ends.
        assert_eq!(own.arena.bytes.len(), own.arena.all().len() + 2 * PAD);
        assert!(own.arena.bytes[..PAD].iter().all(|&b| b == 0));
        assert_eq!(std::mem::align_of::<Arena>(), PAD);
    }

    /// A session run of a dataset's conversations: session `s`'s turn `k` is conversation
    /// `s mod 3`'s `k`-th user message, and the tally counts each turn's own entry.
    #[test]
    fn a_sessions_turns_are_its_conversations_entries() {
        use crate::plan::workload::{DatasetKind, DatasetSpec, LengthDist, Sampling};
        let dir = std::env::temp_dir().join(format!("ringbench-cat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("conv.jsonl");
        let texts = [vec!["a0", "a1"], vec!["b0", "b1", "b2"], vec!["c0"]];
        let lines: String = texts
            .iter()
            .map(|t| format!("{}\n", serde_json::json!({ "turns": t })))
            .collect();
        std::fs::write(&path, lines).unwrap();
        let mut plan = Plan::defaults();
        plan.workload.prompt_salt = false;
        plan.workload.dataset = Some(DatasetSpec {
            kind: DatasetKind::Jsonl,
            path,
            sampling: Sampling::Sequential,
        });
        plan.sessions = Some(crate::plan::SessionSpec {
            turns: LengthDist::Fixed { tokens: 3 },
            think_time: crate::plan::ThinkTime::default(),
            max_context_tokens: None,
            all_turns: false,
        });
        let prepared = prepare(&plan).unwrap();
        assert_eq!(prepared.conversations.as_deref(), Some(&[2, 3, 1][..]));
        let cat = Catalog::build(&plan, &prepared, "h", "m");
        let spec = plan.sessions.as_ref().unwrap();
        let mut tally = cat.prompt_tally();
        for s in 0..7u64 {
            let conv = &texts[(s % 3) as usize];
            assert_eq!(cat.conversation_turns(s), Some(conv.len() as u32));
            for (k, text) in conv.iter().enumerate() {
                let id = spec.turn_id(s, k as u32);
                let (_, body, _) = parse(&cat.bytes(id));
                assert_eq!(
                    body["messages"][0]["content"], *text,
                    "session {s} turn {k}"
                );
                tally.sent(id);
            }
        }
        assert_eq!(
            tally.total(),
            14,
            "7 sessions: 2 + 3 + 1 + 2 + 3 + 1 + 2 turns"
        );
        assert_eq!(tally.distinct(), 6, "6 distinct turns, each sent unsalted");
        // Sessions 0 and 3 hold conversation 0: two distinct prompts, sent twice each.
        let mut same = cat.prompt_tally();
        for id in [0, 1, 9, 10] {
            same.sent(id);
        }
        assert_eq!((same.total(), same.distinct()), (4, 2));
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
        let (path, body, _) = parse(&cat.bytes(0));
        assert_eq!(path, "/v1/completions");
        assert!(body["prompt"].is_string());
        assert_eq!(body["ignore_eos"], true);
        assert_eq!(body["min_tokens"], 10, "clamped to max_tokens");
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["max_tokens"], 12, "--extra-body keys win");
    }
}
