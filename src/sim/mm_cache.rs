//! The simulator's multimodal cache (server side; the client flow never reads this module):
//! each replica remembers the hashes of the images it was sent (`request::Media`), as
//! vLLM's multimodal cache keys an image's processed inputs by a hash of its pixels, so an
//! image sent again is a hit and a new one a miss. What a hit saves is not modelled; it is
//! counted (`vllm:mm_cache_queries`, `vllm:mm_cache_hits`). Bounded: `MM_CACHE_ITEMS` hashes,
//! the oldest forgotten first; its memory is taken when the replica starts, never per
//! request.

use std::collections::HashSet;

/// Images one replica remembers (vLLM's cache is sized in bytes, 4 GiB by default: some
/// thousands of processed images).
pub(crate) const MM_CACHE_ITEMS: usize = 4096;

/// One replica's cache of image hashes, first in, first out.
#[derive(Debug)]
pub(crate) struct MmCache {
    held: HashSet<u64>,
    /// The hashes in the order they came (room for `items`, made up front); once full,
    /// `next` is the oldest.
    order: Vec<u64>,
    items: usize,
    next: usize,
}

impl MmCache {
    /// A cache of `items` hashes (at least one).
    pub(crate) fn new(items: usize) -> Self {
        let items = items.max(1);
        MmCache {
            // Twice the room: with at most half its capacity held, the table cleans its
            // removed slots in place instead of growing.
            held: HashSet::with_capacity(2 * items),
            order: Vec::with_capacity(items),
            items,
            next: 0,
        }
    }

    /// Whether `hash` was held (a hit); held from now on if not, the oldest forgotten
    /// when full.
    pub(crate) fn query(&mut self, hash: u64) -> bool {
        if self.held.contains(&hash) {
            return true;
        }
        if self.order.len() < self.items {
            self.order.push(hash);
        } else {
            let old = std::mem::replace(&mut self.order[self.next], hash);
            self.held.remove(&old);
            self.next = (self.next + 1) % self.items;
        }
        self.held.insert(hash);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_seen_again_hits_until_it_is_the_oldest_of_a_full_cache() {
        let mut c = MmCache::new(3);
        assert!(!c.query(1), "first sight: a miss");
        assert!(c.query(1), "again: a hit");
        assert!(!c.query(2));
        assert!(!c.query(3));
        assert!(!c.query(4), "full: 1 is forgotten");
        assert!(!c.query(1), "1 was the oldest");
        assert!(c.query(3) && c.query(4), "the newer ones stay");
        assert!(!c.query(2), "2 went when 1 came back");
        assert_eq!(c.held.len(), 3);
        assert_eq!(c.order.capacity(), 3, "never grows");
    }
}
