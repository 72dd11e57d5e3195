//! The simulated engine's KV cache (server side; no client module may depend on it): fixed
//! blocks of `block_size` tokens, prefix caching by chained block hashes, and least-recently
//! used eviction of blocks no running request holds — vLLM's automatic prefix caching in
//! miniature. The simulator's token is a word of the prompt (see `request.rs`), so a block is
//! `block_size` words; generated tokens are the simulator's own words, hashed the same way,
//! so a conversation's next turn hits the blocks of the previous reply as it would on vLLM.
//!
//! Everything is sized once (`new`): block tables are flat vectors and the LRU is a list
//! threaded through them, so no operation allocates except the hash map's own growth up to
//! the block count. One replica (one simulator thread) owns one cache; nothing here is shared.

use std::collections::HashMap;

use crate::plan::workload::splitmix64;

/// No block (list ends).
const NIL: u32 = u32::MAX;
/// The parent of a sequence's first block.
const ROOT: u64 = 0x6b76_6361_6368_6521;
/// A partial block's running hash starts here.
const EMPTY_BLOCK: u64 = 0x0b10_c4a5_4000_0001;

/// The simulator's token unit: a word is a run of bytes above 0x20 (space and control
/// characters separate words). `request::words` counts what `Chain::push_text` hashes.
#[inline(always)]
pub(crate) fn word_byte(b: u8) -> bool {
    b > 0x20
}

/// FNV-1a of a word's bytes: the simulator's token id.
pub(crate) fn word_hash(word: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in word {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The chained block hashes of one token sequence, built token by token: block `i`'s hash
/// covers its own tokens and, through its parent, every token before it, so two sequences
/// share block `i`'s hash exactly when they share their first `(i + 1)·block_size` tokens
/// (up to 64-bit collisions). Reused across requests; `hashes` is bounded by `cap`.
#[derive(Debug)]
pub(crate) struct Chain {
    block_size: u32,
    /// Hashes kept at most (the cache's block count: a longer prompt cannot fit anyway).
    cap: usize,
    parent: u64,
    cur: u64,
    in_block: u32,
    /// Tokens pushed.
    pub tokens: u64,
    /// Full blocks' hashes, in order (never 0).
    pub hashes: Vec<u64>,
}

impl Chain {
    pub(crate) fn new(block_size: u32, cap: usize) -> Self {
        Self {
            block_size: block_size.max(1),
            cap,
            parent: ROOT,
            cur: EMPTY_BLOCK,
            in_block: 0,
            tokens: 0,
            hashes: Vec::new(),
        }
    }

    /// Starts a new sequence (keeps the buffer).
    pub(crate) fn clear(&mut self) {
        self.parent = ROOT;
        self.cur = EMPTY_BLOCK;
        self.in_block = 0;
        self.tokens = 0;
        self.hashes.clear();
    }

    /// Appends one token (a word's or an id's hash).
    pub(crate) fn push(&mut self, token: u64) {
        self.cur = splitmix64(self.cur ^ token);
        self.in_block += 1;
        self.tokens += 1;
        if self.in_block == self.block_size {
            let h = splitmix64(self.parent ^ self.cur.rotate_left(29)) | 1;
            if self.hashes.len() < self.cap {
                self.hashes.push(h);
            }
            self.parent = h;
            self.cur = EMPTY_BLOCK;
            self.in_block = 0;
        }
    }

    /// Appends every word of `text` (runs of bytes above 0x20, as `request::words` counts).
    pub(crate) fn push_text(&mut self, text: &[u8]) {
        for word in text.split(|&b| b <= 0x20).filter(|w| !w.is_empty()) {
            self.push(word_hash(word));
        }
    }

    /// One hash of the whole sequence so far, partial block included: equal for two
    /// sequences of equal tokens (up to collisions).
    pub(crate) fn whole(&self) -> u64 {
        splitmix64(self.parent ^ splitmix64(self.cur ^ u64::from(self.in_block)))
    }
}

/// One replica's blocks.
#[derive(Debug)]
pub(crate) struct KvCache {
    block_size: u32,
    /// Running requests holding each block.
    refs: Vec<u32>,
    /// The hash a block is cached under; 0 = none.
    hash: Vec<u64>,
    /// LRU links of evictable blocks (cached, held by nobody); `head` is evicted first.
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    lru_len: u32,
    /// Blocks holding nothing.
    empty: Vec<u32>,
    map: HashMap<u64, u32>,
    /// Blocks held by at least one running request.
    used: u32,
    /// Cached blocks dropped to make room.
    pub evictions: u64,
}

/// What a lookup found: leading blocks already cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    pub blocks: u32,
    /// Of those, how many nobody holds (they stop being evictable once taken).
    pub idle: u32,
}

impl KvCache {
    pub(crate) fn new(blocks: u32, block_size: u32) -> Self {
        let n = blocks as usize;
        Self {
            block_size: block_size.max(1),
            refs: vec![0; n],
            hash: vec![0; n],
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
            lru_len: 0,
            empty: (0..blocks).rev().collect(),
            map: HashMap::with_capacity(n),
            used: 0,
            evictions: 0,
        }
    }

    pub(crate) fn block_size(&self) -> u32 {
        self.block_size
    }

    pub(crate) fn total(&self) -> u32 {
        self.refs.len() as u32
    }

    /// Blocks held by running requests.
    pub(crate) fn used(&self) -> u32 {
        self.used
    }

    /// Blocks a sequence of `tokens` tokens occupies.
    pub(crate) fn blocks_for(&self, tokens: u64) -> u64 {
        tokens.div_ceil(u64::from(self.block_size))
    }

    /// The cached leading blocks of `hashes`, at most `max_blocks` of them.
    pub(crate) fn lookup(&self, hashes: &[u64], max_blocks: usize) -> Hit {
        let mut hit = Hit { blocks: 0, idle: 0 };
        for h in hashes.iter().take(max_blocks) {
            match self.map.get(h) {
                Some(&b) => {
                    hit.blocks += 1;
                    hit.idle += u32::from(self.refs[b as usize] == 0);
                }
                None => break,
            }
        }
        hit
    }

    /// Whether `fresh` more blocks can be had once `hit` is taken.
    pub(crate) fn fits(&self, fresh: u32, hit: Hit) -> bool {
        let free = self.empty.len() as u64 + u64::from(self.lru_len - hit.idle);
        u64::from(fresh) <= free
    }

    /// Takes the `hit` blocks of `hashes` and `fresh` new ones into `out` (in sequence
    /// order); the caller checked `fits`. New blocks come from the empty ones first, then by
    /// evicting the least recently used.
    pub(crate) fn take(&mut self, hashes: &[u64], hit: Hit, fresh: u32, out: &mut Vec<u32>) {
        out.clear();
        for h in &hashes[..hit.blocks as usize] {
            let b = self.map[h];
            self.hold(b);
            out.push(b);
        }
        for _ in 0..fresh {
            let b = match self.empty.pop() {
                Some(b) => b,
                None => self.evict_oldest(),
            };
            self.hold(b);
            out.push(b);
        }
    }

    fn hold(&mut self, b: u32) {
        let i = b as usize;
        if self.refs[i] == 0 {
            if self.hash[i] != 0 {
                self.unlink(b);
            }
            self.used += 1;
        }
        self.refs[i] += 1;
    }

    fn evict_oldest(&mut self) -> u32 {
        let b = self.head;
        debug_assert!(b != NIL, "take without fits");
        self.unlink(b);
        self.map.remove(&self.hash[b as usize]);
        self.hash[b as usize] = 0;
        self.evictions += 1;
        b
    }

    /// Caches block `b` (held, just computed) under `h`, unless that hash is cached already
    /// (another request computed the same tokens) or `b` is.
    pub(crate) fn register(&mut self, b: u32, h: u64) {
        if self.hash[b as usize] == 0 && !self.map.contains_key(&h) {
            self.map.insert(h, b);
            self.hash[b as usize] = h;
        }
    }

    /// Lets go of `blocks`, last first (as vLLM frees them, so a sequence's tail is evicted
    /// before its prefix): a cached block nobody holds becomes evictable, others empty.
    pub(crate) fn release(&mut self, blocks: &[u32]) {
        for &b in blocks.iter().rev() {
            let i = b as usize;
            self.refs[i] -= 1;
            if self.refs[i] == 0 {
                self.used -= 1;
                match self.hash[i] {
                    0 => self.empty.push(b),
                    _ => self.push_back(b),
                }
            }
        }
    }

    fn push_back(&mut self, b: u32) {
        let i = b as usize;
        self.prev[i] = self.tail;
        self.next[i] = NIL;
        match self.tail {
            NIL => self.head = b,
            t => self.next[t as usize] = b,
        }
        self.tail = b;
        self.lru_len += 1;
    }

    fn unlink(&mut self, b: u32) {
        let i = b as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        match p {
            NIL => self.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NIL => self.tail = p,
            n => self.prev[n as usize] = p,
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.lru_len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain_of(words: &str, block: u32) -> Chain {
        let mut c = Chain::new(block, 1 << 20);
        c.push_text(words.as_bytes());
        c
    }

    #[test]
    fn block_hashes_are_equal_exactly_while_the_tokens_are() {
        let a = chain_of("a b c d e f g h i", 4);
        let b = chain_of("a b c d e f g X i", 4);
        let c = chain_of(" a  b\nc d\te f g h j ", 4);
        assert_eq!((a.tokens, a.hashes.len()), (9, 2));
        assert_eq!(a.hashes[0], b.hashes[0]);
        assert_ne!(a.hashes[1], b.hashes[1]);
        assert_eq!(a.hashes, c.hashes, "whitespace does not matter, words do");
        assert_ne!(
            a.whole(),
            c.whole(),
            "the partial last block counts in the whole"
        );
        // The same block content under another parent is another block.
        let d = chain_of("z z z z e f g h", 4);
        assert_ne!(d.hashes[1], a.hashes[1]);
        let mut e = chain_of("a b c d e f", 4);
        e.push_text(b"g h");
        assert_eq!(e.hashes, a.hashes, "pushing in pieces gives the same chain");
        e.clear();
        assert_eq!(
            (e.tokens, e.hashes.len(), e.whole()),
            (0, 0, Chain::new(4, 1).whole())
        );
    }

    #[test]
    fn hits_take_and_release_keep_the_counts_exact() {
        let mut kv = KvCache::new(8, 4);
        let a = chain_of("a b c d e f g h i j k l", 4); // 3 full blocks
        assert_eq!(kv.lookup(&a.hashes, 3), Hit { blocks: 0, idle: 0 });
        let mut held = vec![];
        assert!(kv.fits(4, Hit { blocks: 0, idle: 0 }));
        kv.take(&a.hashes, Hit { blocks: 0, idle: 0 }, 4, &mut held);
        for (b, h) in held.iter().zip(&a.hashes) {
            kv.register(*b, *h);
        }
        assert_eq!(kv.used(), 4);
        // While `a` runs, a request sharing its first two blocks hits them (held: not idle).
        let b = chain_of("a b c d e f g h x y z w", 4);
        let hit = kv.lookup(&b.hashes, 3);
        assert_eq!(hit, Hit { blocks: 2, idle: 0 });
        assert!(kv.fits(4, hit), "4 empty blocks left");
        assert!(!kv.fits(5, hit));
        let mut held_b = vec![];
        kv.take(&b.hashes, hit, 2, &mut held_b);
        assert_eq!(&held_b[..2], &held[..2]);
        assert_eq!(kv.used(), 6);
        kv.release(&held);
        assert_eq!(kv.used(), 4, "the two shared blocks are still held by b");
        // a's third block (cached) and fourth (partial, uncached) are free again.
        assert_eq!(kv.empty.len(), 3);
        assert_eq!(kv.lru_len, 1);
        kv.release(&held_b);
        assert_eq!((kv.used(), kv.lru_len, kv.empty.len()), (0, 3, 5));
        assert_eq!(kv.evictions, 0);
        // `a` again: all three of its blocks are cached and idle.
        assert_eq!(kv.lookup(&a.hashes, 3), Hit { blocks: 3, idle: 3 });
        assert_eq!(kv.lookup(&a.hashes, 2), Hit { blocks: 2, idle: 2 });
    }

    #[test]
    fn eviction_takes_the_least_recently_used_tail_first() {
        let mut kv = KvCache::new(4, 2);
        let a = chain_of("a1 a2 a3 a4", 2);
        let b = chain_of("b1 b2 b3 b4", 2);
        let none = Hit { blocks: 0, idle: 0 };
        let mut held = vec![];
        kv.take(&a.hashes, none, 2, &mut held);
        kv.register(held[0], a.hashes[0]);
        kv.register(held[1], a.hashes[1]);
        kv.release(&held);
        kv.take(&b.hashes, none, 2, &mut held);
        kv.register(held[0], b.hashes[0]);
        kv.register(held[1], b.hashes[1]);
        kv.release(&held);
        assert_eq!((kv.lru_len, kv.empty.len()), (4, 0));
        // One new block evicts a's second block (a's tail was released first).
        let c = chain_of("c1 c2", 2);
        assert!(kv.fits(1, none) && !kv.fits(5, none));
        kv.take(&c.hashes, none, 1, &mut held);
        assert_eq!(kv.evictions, 1);
        assert_eq!(kv.lookup(&a.hashes, 2), Hit { blocks: 1, idle: 1 });
        assert_eq!(kv.lookup(&b.hashes, 2), Hit { blocks: 2, idle: 2 });
        // Taking cached idle blocks makes them unevictable: b's two held, one left to evict.
        let hit = kv.lookup(&b.hashes, 2);
        assert!(kv.fits(1, hit) && !kv.fits(2, hit));
    }
}
