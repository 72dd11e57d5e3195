//! Before the run (plan → workload → **salt** → catalog …): the per-request salt that keeps
//! prompts from repeating. A salt is `k` words at a fixed place in the prompt (its very
//! start, or right after a shared prefix), each picked from a pool of same-width one-token
//! words by one base-`|pool|` digit of `id + nonce`: so every request of a run, and every run
//! (its nonce differs), starts differently, while the bytes keep their length and the prompt
//! its token count. The catalog finds where the salt landed in each request's bytes; the
//! worker only overwrites those bytes in its own copy (`SaltPool::write`: `k` divisions and
//! `k` small copies, no allocation). Never on the hot path except `write`; never prints.

use super::tokenizer::PromptTokenizer;

/// Salt values one prompt must tell apart: 2^40 ≈ 1.1 · 10^12, far above the most requests a
/// run may send (`plan::validate`'s 10^8), so two runs with random nonces overlap with a
/// chance of about 2 · 10^-4 even at that bound (and 10^-8 for runs of 10^4 requests).
pub const MIN_VALUES: u64 = 1 << 40;

/// Words a pool keeps at most: 1,024 makes a full salt 4 words.
const MAX_POOL: usize = 1024;

/// Words a pool needs at least, or a full salt would be over 10 words.
const MIN_POOL: usize = 16;

/// Five-letter common English words, each one token with its leading space in GPT-2- and
/// Llama-style vocabularies (the test checks GPT-2's): the salt without a tokenizer, where a
/// word is counted as one token. 64 words make a full salt 7 words (64^7 = 2^42).
const WORDS5: [&str; 64] = [
    "about", "after", "again", "below", "black", "bring", "build", "carry", "cause", "child",
    "class", "clear", "close", "could", "cover", "early", "earth", "every", "field", "final",
    "first", "floor", "found", "front", "great", "green", "group", "heard", "heart", "horse",
    "human", "large", "learn", "level", "light", "local", "major", "money", "month", "never",
    "night", "north", "offer", "often", "order", "other", "paper", "party", "peace", "place",
    "plant", "point", "power", "price", "right", "river", "small", "sound", "south", "space",
    "start", "state", "story", "table",
];

/// The words salts are made of, all `width` bytes of plain ASCII (nothing JSON escapes).
#[derive(Clone, Debug, PartialEq)]
pub struct SaltPool {
    /// The words back to back, `width` bytes each.
    words: Vec<u8>,
    width: usize,
    /// From one word's first byte to the next's: `width`, or `width + 1` when a space the
    /// salt leaves alone separates them.
    stride: usize,
    /// Words in the pool (the base of the digits).
    count: u64,
    /// Words in a full salt: the fewest with `count^tokens ≥ MIN_VALUES`.
    pub tokens: u32,
    /// How the words were chosen, for the report.
    pub from: &'static str,
}

/// Where one prompt's salt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaltAt {
    /// Byte offset of the salt in the prompt's text.
    pub at: usize,
    /// Words in it (`tokens` of the pool, or fewer when the prompt is shorter).
    pub words: u32,
    /// Chat messages sent as given carry it at the start of this message's content too.
    pub message: Option<usize>,
}

impl SaltPool {
    /// The pool of a run: the tokenizer's one-token words of its most common width, or
    /// `WORDS5` without one. `None` when the tokenizer has too few words of one width.
    pub fn for_run(tok: Option<&PromptTokenizer>) -> Option<SaltPool> {
        match tok {
            None => Some(SaltPool::synthetic()),
            Some(t) => SaltPool::from_spaced(t.words()),
        }
    }

    /// `WORDS5`, separated by spaces.
    pub fn synthetic() -> SaltPool {
        let words: Vec<u8> = WORDS5.iter().flat_map(|w| w.bytes()).collect();
        SaltPool::new(words, 5, 6, "64 common five-letter English words")
    }

    /// From words that carry their own leading space (a tokenizer's, `" word"`): those of the
    /// most common byte width (the narrower on a tie), in the order given, each once (two
    /// vocabulary entries may decode to one word), at most `MAX_POOL`.
    pub fn from_spaced(words: &[String]) -> Option<SaltPool> {
        let mut once = std::collections::HashSet::new();
        let words: Vec<&String> = words
            .iter()
            .filter(|w| w.is_ascii() && once.insert(w.as_str()))
            .collect();
        let mut by_width = std::collections::BTreeMap::<usize, usize>::new();
        for w in &words {
            *by_width.entry(w.len()).or_default() += 1;
        }
        let (&width, &n) = by_width
            .iter()
            .max_by_key(|&(&w, &n)| (n, usize::MAX - w))?;
        if n < MIN_POOL {
            return None;
        }
        let chosen: Vec<u8> = words
            .iter()
            .filter(|w| w.len() == width)
            .take(MAX_POOL)
            .flat_map(|w| w.bytes())
            .collect();
        Some(SaltPool::new(
            chosen,
            width,
            width,
            "the tokenizer's one-token words of one width",
        ))
    }

    fn new(words: Vec<u8>, width: usize, stride: usize, from: &'static str) -> SaltPool {
        let count = (words.len() / width) as u64;
        let mut tokens = 1;
        while count.saturating_pow(tokens) < MIN_VALUES {
            tokens += 1;
        }
        SaltPool {
            words,
            width,
            stride,
            count,
            tokens,
            from,
        }
    }

    /// Words to choose from.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Bytes a salt of `k` words spans (separators between its words included).
    pub fn span(&self, k: u32) -> usize {
        match k {
            0 => 0,
            k => (k as usize - 1) * self.stride + self.width,
        }
    }

    /// Distinct salts of `k` words (saturating at `u64::MAX`).
    pub fn values(&self, k: u32) -> u64 {
        self.count.saturating_pow(k)
    }

    /// Appends the salt of `value` in `k` words, with the separators a text needs: a space
    /// first when `out` is not empty and the words carry none.
    pub fn push(&self, value: u64, k: u32, out: &mut String) -> SaltAt {
        if self.stride > self.width && !out.is_empty() {
            out.push(' ');
        }
        let at = out.len();
        let mut bytes = vec![b' '; self.span(k)];
        self.write(value, k, &mut bytes);
        out.push_str(std::str::from_utf8(&bytes).expect("pool words are ASCII"));
        SaltAt {
            at,
            words: k,
            message: None,
        }
    }

    /// Writes the salt of `value` over `k` words' place at the start of `out`: word `i` is
    /// digit `i` of `value` in base `count`, the fastest-changing first, so consecutive ids
    /// differ in the very first token. Bytes between words are left as they are.
    #[inline]
    pub fn write(&self, mut value: u64, k: u32, out: &mut [u8]) {
        for i in 0..k as usize {
            let d = (value % self.count) as usize;
            value /= self.count;
            let at = i * self.stride;
            out[at..at + self.width]
                .copy_from_slice(&self.words[d * self.width..(d + 1) * self.width]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_pick_words_fastest_first_and_wrap_at_the_pool_size() {
        let p = SaltPool::synthetic();
        assert_eq!((p.count(), p.tokens, p.span(3)), (64, 7, 17));
        assert!(64u64.pow(7) >= MIN_VALUES && 64u64.pow(6) < MIN_VALUES);
        let text = |v: u64, k: u32| {
            let mut s = String::new();
            p.push(v, k, &mut s);
            s
        };
        assert_eq!(text(0, 3), "about about about");
        assert_eq!(text(1, 3), "after about about");
        assert_eq!(text(64, 3), "about after about");
        assert_eq!(text(63 + 2 * 64 + 3 * 64 * 64, 3), "table again below");
        // k digits: the value is taken modulo 64^k.
        assert_eq!(text(64u64.pow(3) + 5, 3), text(5, 3));
        let mut s = String::from("prefix");
        let at = p.push(1, 2, &mut s);
        assert_eq!((s.as_str(), at.at, at.words), ("prefix after about", 7, 2));
    }

    #[test]
    fn write_changes_only_the_words_in_place() {
        let p = SaltPool::synthetic();
        let mut s = String::from("x");
        let at = p.push(0, 7, &mut s);
        s.push_str(" tail");
        let mut bytes = s.clone().into_bytes();
        for v in [1, 4095, 1 << 39, u64::MAX] {
            p.write(v, 7, &mut bytes[at.at..]);
            let mut want = String::from("x");
            p.push(v, 7, &mut want);
            want.push_str(" tail");
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), want);
        }
    }

    #[test]
    fn a_tokenizer_pool_takes_its_most_common_width() {
        let words: Vec<String> = (0..40)
            .map(|i| format!(" w{:02}", i))
            .chain((0..20).map(|i| format!(" x{i:03}")))
            .collect();
        let p = SaltPool::from_spaced(&words).unwrap();
        assert_eq!((p.count(), p.width, p.stride), (40, 4, 4));
        // 40^8 ≥ 2^40 > 40^7
        assert_eq!(p.tokens, 8);
        let mut s = String::from(" pre");
        let at = p.push(41, 2, &mut s);
        assert_eq!((s.as_str(), at.at), (" pre w01 w01", 4));
        let few: Vec<String> = (0..15).map(|i| format!(" w{i:02}")).collect();
        assert_eq!(SaltPool::from_spaced(&few), None);
        // The same word twice is one word: 16 entries, 15 words.
        let twice: Vec<String> = few.iter().cloned().chain([" w00".to_string()]).collect();
        assert_eq!(SaltPool::from_spaced(&twice), None);
    }

    #[test]
    fn every_synthetic_word_is_one_gpt2_token() {
        let bpe = crate::run::testkit::gpt2::tiktoken();
        for w in WORDS5 {
            assert_eq!(w.len(), 5, "{w}");
            let ids = bpe.encode_ordinary(&format!(" {w}"));
            assert_eq!(ids.len(), 1, "\" {w}\" is {ids:?}");
        }
        let mut sorted = WORDS5.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 64, "no word twice");
    }
}
