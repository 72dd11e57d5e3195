//! Part of the summary (types only): what the workload was, as drawn before the run and as
//! the server reported reuse (`summary.json`'s `workload` block).

use serde::{Deserialize, Serialize};

/// What a set of drawn lengths looks like: nearest-rank percentiles over all of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Realized {
    /// Lengths drawn.
    pub count: u64,
    /// Their mean, tokens.
    pub mean: f64,
    /// Shortest, tokens.
    pub min: u32,
    /// Median, tokens.
    pub p50: u32,
    /// 90th percentile, tokens.
    pub p90: u32,
    /// 99th percentile, tokens.
    pub p99: u32,
    /// Longest, tokens.
    pub max: u32,
}

impl Realized {
    /// The figures of `lengths`; all 0 when it is empty.
    pub fn of(lengths: &[u32]) -> Realized {
        if lengths.is_empty() {
            return Realized::default();
        }
        let mut v = lengths.to_vec();
        v.sort_unstable();
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Realized {
            count: v.len() as u64,
            mean: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
            min: v[0],
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: v[v.len() - 1],
        }
    }
}

/// Intended and observed prefix reuse.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrefixStats {
    /// Distinct shared prefixes (`--prefix-groups`).
    pub groups: u32,
    /// Tokens in each shared prefix (`--prefix-tokens`).
    pub tokens: u32,
    /// Zipf exponent of group popularity (`--prefix-zipf`); `null`: every group equally likely.
    pub zipf: Option<f64>,
    /// Share of input tokens a server with an unbounded prefix cache could serve from it,
    /// over one pass of the catalog: every request after the first of its group reuses the
    /// group's prefix.
    pub intended_reuse_rate: f64,
}

/// The per-request salt (`--no-prompt-salt` turns it off); the nonce is the config's
/// `workload.prompt_nonce`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SaltStats {
    /// Words in a full salt, each one token.
    pub tokens: u32,
    /// Words a salt word is one of.
    pub pool_words: u64,
    /// How those words were chosen.
    pub pool: String,
    /// Where in the prompt the salt is.
    pub at: String,
    /// Prompts too short for a full salt, which carry fewer words (their salts repeat
    /// sooner: after `pool_words^words` requests of that prompt).
    pub short_prompts: u64,
}

/// What the workload is, stated before the run and stored in the summary (`workload`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadStats {
    /// How input lengths were counted (exact by a tokenizer, or the approximation used).
    pub input_method: String,
    /// The `--tokenizer` file that counted the lengths; `null` without one.
    pub tokenizer: Option<String>,
    /// `synthetic` or the dataset's kind and file.
    pub source: String,
    /// Distinct prompts built; requests cycle through them by id.
    pub distinct_prompts: u64,
    /// Input lengths (ISL) over the distinct prompts.
    pub input_tokens: Realized,
    /// `max_tokens` asked (the intended OSL) over the distinct prompts.
    pub output_tokens: Realized,
    /// Shared prefixes and their reuse; `null` without `--prefix-groups`.
    pub prefix: Option<PrefixStats>,
    /// The per-request salt; `null` when prompts are not salted (`--no-prompt-salt`, a trace).
    #[serde(default)]
    pub salt: Option<SaltStats>,
    /// Requests sent (warm-up included, failed ones too): filled after the run.
    #[serde(default)]
    pub prompts_sent: Option<u64>,
    /// Distinct prompts among them (bytes as sent): filled after the run.
    #[serde(default)]
    pub distinct_prompts_sent: Option<u64>,
    /// Images those requests carried (a dataset's and synthetic ones); `null` when they
    /// carried none: filled after the run.
    #[serde(default)]
    pub images_sent: Option<u64>,
    /// Distinct images among them (a salted one is new every request): filled after the run.
    #[serde(default)]
    pub distinct_images_sent: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens` summed over the measured successful
    /// requests that reported it, divided by their prompt tokens (the server's
    /// `usage.prompt_tokens` where given, else the client's count): the share of prompt
    /// tokens the server said it served from its prefix cache. `None` when none reported.
    #[serde(default)]
    pub observed_cached_rate: Option<f64>,
    /// Measured successful requests whose response carried `cached_tokens`.
    #[serde(default)]
    pub observed_reports: u64,
}
