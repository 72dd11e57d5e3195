//! The simulated engine's scheduler (server side; no client module may depend on it): one
//! per simulator thread, which is one engine replica (as a data-parallel rank is), owning its
//! running slots, its FIFO waiting queue and its KV cache (`kv.rs`). A completion enters when
//! it arrives and leaves when its response ends or its connection fails; in between it either
//! runs or waits. The connection tasks of the thread call it synchronously: it never awaits,
//! never blocks, and wakes a waiting connection by firing that connection's timer.
//!
//! The model, every part off unless asked for (`SimSettings`):
//! - at most `max_num_seqs` requests run; the rest wait first come, first served (a head that
//!   does not fit holds back the ones behind it, as vLLM's FCFS scheduler does); a request
//!   arriving to `max_waiting` waiting is refused (HTTP 429);
//! - with a KV cache, a request runs only when the blocks of its prompt and `max_tokens` are
//!   free: its leading full prompt blocks already cached are shared (a prefix hit), the rest
//!   taken from empty blocks or by evicting the least recently used idle ones; at most
//!   `prompt − 1` tokens are served from cache (the last is always computed, as in vLLM);
//! - the first token is due at admission + `prefill_overhead` + `prefill_per_token` × the
//!   uncached prompt tokens + `ttft_ms`; decode follows at `itl_ms` (and the load model's
//!   per-in-flight slopes, counted from admission: one mechanism for load-dependent speed);
//! - blocks are reserved whole at admission, so nothing is ever preempted
//!   (`vllm:num_preemptions_total` stays 0; said, not hidden).

pub(crate) mod kv;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::rc::Rc;

use self::kv::{Chain, Hit, KvCache};
use crate::plan::sim::{SimSettings, MAX_DELAY_MS};
use crate::rt::timer::fire_now;

/// One request's place in the engine, owned by its connection and reused for the
/// connection's next request (so entering allocates nothing once a connection has one).
#[derive(Debug)]
pub(crate) struct Seat {
    /// The prompt's block hashes (filled by the request parser when the cache is on).
    pub chain: Chain,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub state: State,
    /// KV blocks held while running, in sequence order.
    blocks: Vec<u32>,
    /// Fired when a waiting request is admitted.
    pub timer_fd: Option<RawFd>,
}

/// Where a seat is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Idle,
    Waiting,
    /// Admitted at `at_ns`, with this many prompt tokens served from cache.
    Running {
        at_ns: u64,
        cached_tokens: u32,
    },
}

impl Seat {
    pub(crate) fn new(block_size: u32, max_blocks: u32) -> Self {
        Self {
            chain: Chain::new(block_size, max_blocks as usize),
            prompt_tokens: 0,
            max_tokens: 0,
            state: State::Idle,
            blocks: Vec::new(),
            timer_fd: None,
        }
    }
}

/// What `enter` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entered {
    Running,
    Waiting,
    /// `max_waiting` requests already wait: answer 429.
    QueueFull,
    /// Prompt and `max_tokens` need more blocks than the whole cache has: answer 400.
    TooLarge {
        blocks: u64,
    },
}

/// One replica's scheduler state.
#[derive(Debug)]
pub(crate) struct Engine {
    max_num_seqs: u32,
    max_waiting: usize,
    prefill_overhead_ns: u64,
    prefill_per_token_ns: u64,
    running: u32,
    waiting: VecDeque<Rc<RefCell<Seat>>>,
    kv: Option<KvCache>,
    /// Requests refused because the queue was full, and because they could never fit.
    pub queue_full: u64,
    pub too_large: u64,
}

fn ns(ms: f64) -> u64 {
    (ms.clamp(0.0, MAX_DELAY_MS) * 1e6).round() as u64
}

impl Engine {
    pub(crate) fn new(s: &SimSettings) -> Self {
        let limit = |n: u32| if n == 0 { u32::MAX } else { n };
        Self {
            max_num_seqs: limit(s.max_num_seqs),
            max_waiting: limit(s.max_waiting) as usize,
            prefill_overhead_ns: ns(s.prefill_overhead_ms),
            prefill_per_token_ns: ns(s.prefill_ms_per_token),
            running: 0,
            waiting: VecDeque::new(),
            kv: (s.kv_cache_blocks > 0).then(|| KvCache::new(s.kv_cache_blocks, s.block_size)),
            queue_full: 0,
            too_large: 0,
        }
    }

    /// Whether requests' prompts must be hashed (the KV cache is on).
    pub(crate) fn caches(&self) -> bool {
        self.kv.is_some()
    }

    pub(crate) fn running(&self) -> u32 {
        self.running
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// (held, total) KV blocks; (0, 0) without a cache.
    pub(crate) fn kv_blocks(&self) -> (u32, u32) {
        self.kv
            .as_ref()
            .map_or((0, 0), |kv| (kv.used(), kv.total()))
    }

    pub(crate) fn evictions(&self) -> u64 {
        self.kv.as_ref().map_or(0, |kv| kv.evictions)
    }

    /// Prefill time of a request with `uncached` prompt tokens to compute (bounded by
    /// `MAX_DELAY_MS`, whatever the prompt).
    pub(crate) fn prefill_ns(&self, uncached: u32) -> u64 {
        let per = self
            .prefill_per_token_ns
            .saturating_mul(u64::from(uncached));
        self.prefill_overhead_ns
            .saturating_add(per)
            .min(ns(MAX_DELAY_MS))
    }

    /// A request arrives at `now_ns` (its seat's prompt and chain are filled).
    pub(crate) fn enter(&mut self, seat: &Rc<RefCell<Seat>>, now_ns: u64) -> Entered {
        let mut s = seat.borrow_mut();
        if let Some(kv) = &self.kv {
            let blocks = kv.blocks_for(u64::from(s.prompt_tokens) + u64::from(s.max_tokens));
            if blocks > u64::from(kv.total()) {
                self.too_large += 1;
                return Entered::TooLarge { blocks };
            }
        }
        if self.waiting.is_empty() && self.try_run(&mut s, now_ns) {
            return Entered::Running;
        }
        if self.waiting.len() >= self.max_waiting {
            self.queue_full += 1;
            return Entered::QueueFull;
        }
        s.state = State::Waiting;
        drop(s);
        self.waiting.push_back(seat.clone());
        Entered::Waiting
    }

    /// Starts `s` if a slot and its blocks are free.
    fn try_run(&mut self, s: &mut Seat, now_ns: u64) -> bool {
        if self.running >= self.max_num_seqs {
            return false;
        }
        let mut cached_tokens = 0;
        if let Some(kv) = &mut self.kv {
            let b = u64::from(kv.block_size());
            let need = kv.blocks_for(u64::from(s.prompt_tokens) + u64::from(s.max_tokens));
            // The last prompt token is always computed.
            let max_hit = (u64::from(s.prompt_tokens.saturating_sub(1)) / b) as usize;
            let hit: Hit = kv.lookup(&s.chain.hashes, max_hit);
            let fresh = (need - u64::from(hit.blocks)) as u32;
            if !kv.fits(fresh, hit) {
                return false;
            }
            let mut blocks = std::mem::take(&mut s.blocks);
            kv.take(&s.chain.hashes, hit, fresh, &mut blocks);
            for (i, &h) in s.chain.hashes.iter().enumerate().skip(hit.blocks as usize) {
                kv.register(blocks[i], h);
            }
            s.blocks = blocks;
            cached_tokens = hit.blocks * kv.block_size();
        }
        self.running += 1;
        s.state = State::Running {
            at_ns: now_ns,
            cached_tokens,
        };
        true
    }

    /// The request of `seat` ends (response done, or its connection failed) after
    /// `generated` tokens; waiting requests that now fit start, and their connections wake.
    pub(crate) fn leave(&mut self, seat: &Rc<RefCell<Seat>>, generated: u32, now_ns: u64) {
        let mut s = seat.borrow_mut();
        match s.state {
            State::Idle => return,
            State::Waiting => {
                self.waiting.retain(|w| !Rc::ptr_eq(w, seat));
            }
            State::Running { .. } => {
                self.running -= 1;
                if let Some(kv) = &mut self.kv {
                    let seat = &mut *s;
                    cache_generated(kv, seat, generated);
                    kv.release(&seat.blocks);
                    seat.blocks.clear();
                }
            }
        }
        s.state = State::Idle;
        drop(s);
        self.admit_waiting(now_ns);
    }

    fn admit_waiting(&mut self, now_ns: u64) {
        while let Some(head) = self.waiting.front().cloned() {
            let mut s = head.borrow_mut();
            if !self.try_run(&mut s, now_ns) {
                return;
            }
            if let Some(fd) = s.timer_fd {
                fire_now(fd);
            }
            drop(s);
            self.waiting.pop_front();
        }
    }
}

/// Full blocks of generated tokens are cached too (vLLM caches every full block), so the
/// next turn of a conversation that sends this reply back hits them.
fn cache_generated(kv: &mut KvCache, s: &mut Seat, generated: u32) {
    let before = s.chain.hashes.len();
    for i in 0..generated.min(s.max_tokens) {
        s.chain.push(kv::word_hash(super::api::word(i)));
    }
    let hashes = &s.chain.hashes;
    for (i, &h) in hashes.iter().enumerate().skip(before) {
        if let Some(&b) = s.blocks.get(i) {
            kv.register(b, h);
        }
    }
}

#[cfg(test)]
mod tests;
