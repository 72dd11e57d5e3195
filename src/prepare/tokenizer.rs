//! Before the run (plan → **tokenizer** → catalog → schedule …): token counting with a real
//! Hugging Face `tokenizer.json` (`--tokenizer PATH`, local files only), and prompts of an exact
//! token length. Everything here runs while the catalog is built: the benchmark never
//! tokenizes on the hot path (encoding runs at 0.3–1.7M tokens/s, far too slow for it).
//!
//! Exact lengths: prompts are made of words that the tokenizer itself says are one token each
//! (with their leading space), then re-encoded as a whole and trimmed or extended word by word
//! until the whole text encodes to exactly the asked count. For byte-level BPE (GPT-2, Llama 3,
//! Qwen…) the pre-tokenizer splits at each space-word, so the first pass is already exact; the
//! loop is what makes other tokenizers exact too. A prompt that cannot be made exact is an
//! error, never a silent miscount. Counts exclude special tokens (BOS, chat template): that is
//! the prompt's own length, which is what `vllm bench serve` counts too.

#[cfg(not(feature = "tokenizer"))]
pub(crate) use absent::Tokenizer;
use rand::{Rng, RngExt};
use std::path::{Path, PathBuf};
#[cfg(feature = "tokenizer")]
pub(crate) use tokenizers::Tokenizer;

/// Vocabulary entries scanned for one-token words: enough variety, bounded start-up cost.
const MAX_POOL_WORDS: usize = 8192;
/// Re-encode rounds allowed to reach the exact length before giving up.
const MAX_ADJUST_ROUNDS: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("--tokenizer {path}: cannot load it ({why}); give a Hugging Face tokenizer.json")]
    Load { path: PathBuf, why: String },
    #[error(
        "--tokenizer {path}: no vocabulary entry is a plain word that encodes to one token, so \
         exact-length prompts cannot be built from it"
    )]
    NoWords { path: PathBuf },
    #[error("--tokenizer {path}: cannot encode text: {why}")]
    Encode { path: PathBuf, why: String },
    #[error(
        "--tokenizer {path}: could not make a prompt of exactly {want} tokens (got {got}); \
         pick another length or tokenizer"
    )]
    NotExact { path: PathBuf, want: u32, got: u32 },
    #[error(
        "--tokenizer {path}: fewer than 16 of its one-token words share one width, so prompts \
         cannot carry a fixed-width salt; add --no-prompt-salt (prompts may then repeat)"
    )]
    NoSaltWords { path: PathBuf },
    #[error(
        "--tokenizer {path}: a prompt's salt words change its token count with the words \
         around them ({want} tokens with one salt, {got} with another), so salted prompts \
         cannot stay exact; add --no-prompt-salt (prompts may then repeat)"
    )]
    SaltNotExact { path: PathBuf, want: u32, got: u32 },
}

/// A loaded tokenizer and the one-token words prompts are built from.
pub struct PromptTokenizer {
    tok: Tokenizer,
    path: PathBuf,
    /// Each with its leading space, each one token on its own.
    words: Vec<String>,
}

impl std::fmt::Debug for PromptTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTokenizer")
            .field("path", &self.path)
            .field("words", &self.words.len())
            .finish()
    }
}

impl PromptTokenizer {
    pub fn load(path: &Path) -> Result<PromptTokenizer, TokenizerError> {
        let tok = Tokenizer::from_file(path).map_err(|e| TokenizerError::Load {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let mut me = PromptTokenizer {
            tok,
            path: path.to_path_buf(),
            words: vec![],
        };
        me.words = me.one_token_words();
        if me.words.is_empty() {
            return Err(TokenizerError::NoWords {
                path: path.to_path_buf(),
            });
        }
        Ok(me)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The one-token words prompts are drawn from, each with its leading space, in id order.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// How many one-token words prompts are drawn from.
    #[cfg(test)]
    pub fn word_count(&self) -> usize {
        self.words.len()
    }

    /// Vocabulary entries that decode to a plain lowercase word and encode back, with a
    /// leading space, to exactly one token; each word once (`that` and ` that` are two
    /// entries, one word). Sorted by id so the pool is the same every run.
    fn one_token_words(&self) -> Vec<String> {
        let mut ids: Vec<u32> = self.tok.get_vocab(false).into_values().collect();
        ids.sort_unstable();
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::new();
        for id in ids {
            let Ok(text) = self.tok.decode(&[id], true) else {
                continue;
            };
            let w = text.trim_start();
            if w.len() < 2 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
                continue;
            }
            let spaced = format!(" {w}");
            if !seen.contains(&spaced) && self.count(&spaced).ok() == Some(1) {
                seen.insert(spaced.clone());
                words.push(spaced);
                if words.len() == MAX_POOL_WORDS {
                    break;
                }
            }
        }
        words
    }

    /// Tokens in `text`, special tokens excluded.
    pub fn count(&self, text: &str) -> Result<u32, TokenizerError> {
        let enc = self
            .tok
            .encode(text, false)
            .map_err(|e| TokenizerError::Encode {
                path: self.path.clone(),
                why: e.to_string(),
            })?;
        Ok(enc.len() as u32)
    }

    /// Random one-token words, `n` of them, appended to `out`.
    pub fn push_words<R: Rng + ?Sized>(&self, rng: &mut R, n: u32, out: &mut String) {
        for _ in 0..n {
            out.push_str(&self.words[rng.random_range(0..self.words.len())]);
        }
    }

    /// `prefix` followed by random words, re-encoding to exactly `tokens` tokens in all.
    /// `prefix_tokens` is the prefix's own count (the caller measured it once).
    pub fn exact_prompt<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        prefix: &str,
        prefix_tokens: u32,
        tokens: u32,
    ) -> Result<String, TokenizerError> {
        let mut text = String::with_capacity(prefix.len() + tokens as usize * 8);
        text.push_str(prefix);
        // Word ends, so words can be taken off the end again.
        let mut ends: Vec<usize> = Vec::with_capacity(tokens as usize);
        let mut got = prefix_tokens;
        for _ in 0..MAX_ADJUST_ROUNDS {
            if got < tokens {
                for _ in 0..tokens - got {
                    self.push_words(rng, 1, &mut text);
                    ends.push(text.len());
                }
            } else if got > tokens {
                let drop = ((got - tokens) as usize).min(ends.len());
                if drop == 0 {
                    break;
                }
                ends.truncate(ends.len() - drop);
                text.truncate(ends.last().copied().unwrap_or(prefix.len()));
            }
            got = self.count(&text)?;
            if got == tokens {
                return Ok(text);
            }
        }
        Err(TokenizerError::NotExact {
            path: self.path.clone(),
            want: tokens,
            got,
        })
    }
}

/// Stands in for `tokenizers::Tokenizer` in a build without the `tokenizer` feature: it can
/// never be made, so every use is refused where a tokenizer file would be loaded.
#[cfg(not(feature = "tokenizer"))]
mod absent {
    use std::collections::HashMap;
    use std::convert::Infallible;
    use std::path::Path;

    pub enum Tokenizer {}

    pub struct Encoding(Infallible);

    const NOT_BUILT: &str = "this ringbench was built without the `tokenizer` feature; \
                             rebuild with it (it is on by default) to use --tokenizer";

    impl Tokenizer {
        pub fn from_file(_: impl AsRef<Path>) -> Result<Tokenizer, String> {
            Err(NOT_BUILT.into())
        }

        pub fn get_vocab(&self, _: bool) -> HashMap<String, u32> {
            match *self {}
        }

        pub fn decode(&self, _: &[u32], _: bool) -> Result<String, String> {
            match *self {}
        }

        pub fn encode(&self, _: &str, _: bool) -> Result<Encoding, String> {
            match *self {}
        }
    }

    impl Encoding {
        pub fn len(&self) -> usize {
            match self.0 {}
        }

        pub fn get_offsets(&self) -> &[(usize, usize)] {
            match self.0 {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A word-level tokenizer whose one prompt word is " ab", and whose normalizer rewrites
    /// every " ab ab" into `pair`: so a text's count is not its number of words, and only the
    /// re-encode loop can make it exact.
    fn tokenizer(name: &str, pair: &str, vocab: &[&str]) -> PromptTokenizer {
        let vocab: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .chain(&["[UNK]"])
            .enumerate()
            .map(|(i, w)| (w.to_string(), i.into()))
            .collect();
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": {"type": "Replace", "pattern": {"String": " ab ab"}, "content": pair},
            "pre_tokenizer": {"type": "WhitespaceSplit"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        });
        let dir = std::env::temp_dir().join(format!("ringbench-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, json.to_string()).unwrap();
        let t = PromptTokenizer::load(&path).unwrap();
        assert_eq!(t.word_count(), 1, "the only prompt word is \" ab\"");
        t
    }

    fn rng() -> rand::rngs::Xoshiro256PlusPlus {
        rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1)
    }

    #[test]
    fn words_that_encode_longer_together_are_trimmed_to_the_exact_length() {
        // Two words are three tokens (" ab q ab"): the first pass overshoots.
        let t = tokenizer("trim", " ab q ab", &["ab", "q"]);
        assert_eq!(t.count(" ab ab ab").unwrap(), 4);
        // 3 asked: 3 words give 4 tokens, one word off gives 3.
        let p = t.exact_prompt(&mut rng(), "", 0, 3).unwrap();
        assert_eq!((p.as_str(), t.count(&p).unwrap()), (" ab ab", 3));
        // 4 asked: 4 words give 6, trimmed to 2 words (3), extended to 3 words (4).
        let p = t.exact_prompt(&mut rng(), "", 0, 4).unwrap();
        assert_eq!((p.as_str(), t.count(&p).unwrap()), (" ab ab ab", 4));
    }

    #[test]
    fn words_that_merge_together_are_extended_to_the_exact_length() {
        // Two words are one token (" ab-ab"): the first pass falls short, round after round.
        let t = tokenizer("extend", " ab-ab", &["ab", "ab-ab"]);
        for want in [1, 2, 4, 9] {
            let p = t.exact_prompt(&mut rng(), "", 0, want).unwrap();
            assert_eq!(t.count(&p).unwrap(), want, "{p:?}");
            // n words are ceil(n / 2) tokens: the loop found 2·want − 1 words.
            assert_eq!(p.matches(" ab").count() as u32, 2 * want - 1, "{p:?}");
        }
    }

    #[test]
    fn a_length_that_cannot_be_reached_is_an_error_not_a_miscount() {
        let t = tokenizer("stuck", " ab q ab", &["ab", "q"]);
        // The fixed prefix alone is 4 tokens: nothing of its own can be trimmed to reach 2.
        let e = t.exact_prompt(&mut rng(), " ab ab ab", 4, 2).unwrap_err();
        assert!(
            matches!(
                e,
                TokenizerError::NotExact {
                    want: 2,
                    got: 4,
                    ..
                }
            ),
            "{e}"
        );
    }
}
