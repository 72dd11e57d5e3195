//! Part of the plan (a leaf: it imports nothing of the flow): what the requests of a run ask
//! for — lengths, prompts from a dataset or a trace, shared prefixes, request options. Types
//! and the pure rules on them (parsing a length spec, drawing a length); files are read and
//! prompts built by `prepare`.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, LogNormal, Normal};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Shared system prefixes: `groups` distinct prefixes of `tokens` tokens each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixSpec {
    /// Distinct prefixes (`--prefix-groups`).
    pub groups: u32,
    /// Tokens in each prefix (`--prefix-tokens`).
    pub tokens: u32,
    /// Zipf exponent of group popularity (`None`: every group equally likely).
    pub zipf: Option<f64>,
}

/// Fields added to every request body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestOptions {
    /// Send `ignore_eos: true`, so answers run to `max_tokens` (`--ignore-eos`).
    pub ignore_eos: bool,
    /// Send `min_tokens`, clamped to each request's `max_tokens` (`--min-tokens`); `None`: not
    /// sent.
    pub min_tokens: Option<u32>,
    /// Send `temperature` (`--temperature`); `None`: not sent.
    pub temperature: Option<f64>,
    /// A JSON object merged into every body last (its keys win).
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The workload part of the `Plan`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadSpec {
    /// A Hugging Face `tokenizer.json`, for exact-length prompts and exact input counts
    /// (`--tokenizer`); `None`: lengths are approximated.
    pub tokenizer: Option<PathBuf>,
    /// `None`: every prompt is `Plan::input_tokens` long.
    pub input: Option<LengthDist>,
    /// `None`: `max_tokens` is `Plan::output_tokens`, unless a dataset gives lengths.
    pub output: Option<LengthDist>,
    /// Prompts from a file (`--dataset`); `None`: synthetic prompts.
    pub dataset: Option<DatasetSpec>,
    /// Which part of a Hugging Face dataset (`DatasetKind::Hf`) is read, and which columns.
    pub hf: HfSpec,
    /// Shared system prefixes (`--prefix-groups`, `--prefix-tokens`); `None`: none.
    pub prefix: Option<PrefixSpec>,
    /// Fields added to every request body.
    pub request: RequestOptions,
    /// A few tokens at the start of every prompt (after a shared prefix) derived from the
    /// request id and `prompt_nonce`, so no two requests of a run, and no two runs, share more
    /// of a prompt than the workload intends (`--no-prompt-salt` turns it off). A trace is not
    /// salted per request (its `hash_ids` say what lines share); the nonce changes its text.
    pub prompt_salt: bool,
    /// What makes this run's salts differ from every other run's (`--prompt-nonce`); `None`
    /// until the run starts, which draws one at random and records it in the summary's
    /// `config`, so a rerun with `--prompt-nonce N` sends the same bytes.
    pub prompt_nonce: Option<u64>,
    /// Synthetic images and audio sent with every prompt (`--image-*`, `--audio-*`).
    pub media: MediaSpec,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            tokenizer: None,
            input: None,
            output: None,
            dataset: None,
            hf: HfSpec::default(),
            prefix: None,
            request: RequestOptions::default(),
            prompt_salt: true,
            prompt_nonce: None,
            media: MediaSpec::default(),
        }
    }
}

/// The longest side of a synthetic image, px.
pub const MAX_IMAGE_SIDE: u32 = 8192;
/// Images one request carries at most (vLLM's default `--limit-mm-per-prompt` for images).
pub const MAX_IMAGES: u32 = 255;
/// Audio clips one request carries at most.
pub const MAX_AUDIO_CLIPS: u32 = 16;
/// The longest synthetic audio clip, ms (10 minutes).
pub const MAX_AUDIO_MS: u32 = 600_000;
/// The highest audio sample rate, Hz.
pub const MAX_SAMPLE_RATE_HZ: u32 = 192_000;

/// How synthetic images are encoded (`--image-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// PNG, its pixels stored uncompressed (random pixels do not compress).
    #[default]
    Png,
    /// Baseline JPEG, quality 75, 4:2:0 (PIL's defaults, as vLLM's random-mm sends).
    Jpeg,
    /// PNG or JPEG, drawn per image (AIPerf's `random`).
    Random,
}

/// One size of a weighted list (`--image-size 1024x1024:3,512x512:1`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeWeight {
    /// Width, px.
    pub width: u32,
    /// Height, px.
    pub height: u32,
    /// Relative weight, above 0.
    pub weight: f64,
}

/// The sizes of synthetic images.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSize {
    /// A weighted list of sizes (`--image-size`).
    Sizes {
        /// The sizes and their weights.
        sizes: Vec<SizeWeight>,
    },
    /// Width and height drawn apart (`--image-width`, `--image-height`).
    Drawn {
        /// Widths, px.
        width: LengthDist,
        /// Heights, px.
        height: LengthDist,
    },
}

impl ImageSize {
    /// `WxH[:WEIGHT],...`, like `1024x1024:3,512x512:1` (weight 1 when not given); errors
    /// name `flag` and the fix.
    pub fn parse(flag: &str, list: &str) -> Result<ImageSize, String> {
        let bad = |why: String| {
            format!("{flag} '{list}': {why} (give WxH[:WEIGHT],..., like 1024x1024:3,512x512:1)")
        };
        let mut sizes = vec![];
        for item in list.split(',').map(str::trim) {
            let (size, weight) = item.split_once(':').unwrap_or((item, "1"));
            let (w, h) = size
                .split_once(['x', 'X'])
                .ok_or_else(|| bad(format!("'{item}' has no WxH")))?;
            let side = |s: &str| match s.trim().parse::<u32>() {
                Ok(v) if (1..=MAX_IMAGE_SIDE).contains(&v) => Ok(v),
                _ => Err(bad(format!(
                    "'{s}' is not a side of 1 to {MAX_IMAGE_SIDE} px"
                ))),
            };
            let weight = match weight.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => v,
                _ => return Err(bad(format!("weight '{weight}' must be a number above 0"))),
            };
            sizes.push(SizeWeight {
                width: side(w)?,
                height: side(h)?,
                weight,
            });
        }
        Ok(ImageSize::Sizes { sizes })
    }

    /// One image's width and height.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> (u32, u32) {
        match self {
            ImageSize::Sizes { sizes } => {
                let total: f64 = sizes.iter().map(|s| s.weight).sum();
                let mut at = rng.random::<f64>() * total;
                for s in sizes {
                    if at < s.weight {
                        return (s.width, s.height);
                    }
                    at -= s.weight;
                }
                sizes.last().map_or((1, 1), |s| (s.width, s.height))
            }
            ImageSize::Drawn { width, height } => (width.sample(rng), height.sample(rng)),
        }
    }

    /// The largest width and height a draw can have.
    pub fn upper_bound(&self) -> (u32, u32) {
        match self {
            ImageSize::Sizes { sizes } => (
                sizes.iter().map(|s| s.width).max().unwrap_or(0),
                sizes.iter().map(|s| s.height).max().unwrap_or(0),
            ),
            ImageSize::Drawn { width, height } => (width.upper_bound(), height.upper_bound()),
        }
    }
}

/// Synthetic images and audio sent with every prompt: random pixels and samples made from
/// the seed before the run, unique per request unless `salt` is off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MediaSpec {
    /// Images per request (`--image-count`); `None`: no synthetic image.
    pub image_count: Option<LengthDist>,
    /// Their sizes (`--image-size`, or `--image-width` and `--image-height`).
    pub image_size: ImageSize,
    /// Their encoding (`--image-format`).
    pub image_format: ImageFormat,
    /// Audio clips per request (`--audio-count`), when `audio_ms` is given.
    pub audio_count: u32,
    /// Each clip's length, ms (`--audio-seconds`); `None`: no audio.
    pub audio_ms: Option<LengthDist>,
    /// Sample rates a clip's is drawn from, Hz (16-bit PCM, mono WAV).
    pub audio_sample_rates_hz: Vec<u32>,
    /// A few pixels (samples) of every image (clip) rewritten per request from its id, so no
    /// two requests send the same media (`--no-media-salt` turns it off).
    pub salt: bool,
}

/// A synthetic image's size when no flag gives one.
pub const DEFAULT_IMAGE_SIDE: u32 = 512;
/// A synthetic clip's sample rate when no flag gives one, Hz.
pub const DEFAULT_SAMPLE_RATE_HZ: u32 = 16_000;

impl Default for MediaSpec {
    fn default() -> Self {
        MediaSpec {
            image_count: None,
            image_size: ImageSize::Sizes {
                sizes: vec![SizeWeight {
                    width: DEFAULT_IMAGE_SIDE,
                    height: DEFAULT_IMAGE_SIDE,
                    weight: 1.0,
                }],
            },
            image_format: ImageFormat::Png,
            audio_count: 1,
            audio_ms: None,
            audio_sample_rates_hz: vec![DEFAULT_SAMPLE_RATE_HZ],
            salt: true,
        }
    }
}

impl MediaSpec {
    /// Whether requests carry synthetic images.
    pub fn images(&self) -> bool {
        self.image_count
            .as_ref()
            .is_some_and(|c| c.upper_bound() > 0)
    }

    /// Whether requests carry synthetic audio.
    pub fn audio(&self) -> bool {
        self.audio_ms.is_some() && self.audio_count > 0
    }
}

/// Which file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    /// ShareGPT JSON: the first human turn is the prompt, the answer's length the OSL (with
    /// `--turns`, every human turn, one per turn of a session).
    Sharegpt,
    /// One JSON object a line: `prompt` or `messages`, optional `output_tokens`; or, for
    /// `--turns`, one conversation a line, `{"turns": [...]}`.
    Jsonl,
    /// Production request log, one JSON object a line: `prompt_tokens`, `completion_tokens`.
    Logs,
    /// A Hugging Face dataset's Parquet files: `ORG/NAME` read from the local Hugging Face
    /// cache (never downloaded), or a local folder or Parquet file; its images sent along.
    Hf,
}

/// A Hugging Face dataset's split, subset and columns (`--hf-split`, `--hf-subset`,
/// `--hf-prompt-column`, `--hf-image-column`); `None`: found from the files and the schema.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HfSpec {
    /// The split (`train`, `test`…): the files whose names say it.
    pub split: Option<String>,
    /// The subset (the dataset's config): the files under its folder.
    pub subset: Option<String>,
    /// The prompt's column; `None`: the first of `conversation`, `conversations`,
    /// `messages`, `prompt`, `text`, `instruction` the files have.
    pub prompt_column: Option<String>,
    /// The images' column; `None`: `images` or `image` when the files have one.
    pub image_column: Option<String>,
}

/// How items are picked for the catalog.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// In file order, wrapping around.
    #[default]
    Sequential,
    /// Uniformly at random, with replacement (seeded).
    Random,
    /// A seeded permutation, a new one for each pass.
    Shuffle,
}

/// Prompts from a file (`--dataset`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetSpec {
    /// The file's format (`--dataset-format`).
    pub kind: DatasetKind,
    /// The file.
    pub path: PathBuf,
    /// How items are picked (`--dataset-sampling`).
    pub sampling: Sampling,
}

impl DatasetSpec {
    /// Whether prompts come as text (counted) rather than as lengths (synthesized).
    pub fn has_text(&self) -> bool {
        self.kind != DatasetKind::Logs
    }

    /// For people: format, file and sampling, like `ShareGPT data.json (shuffled)`.
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            DatasetKind::Sharegpt => "ShareGPT",
            DatasetKind::Jsonl => "JSONL",
            DatasetKind::Logs => "request-log lengths with synthetic text",
            DatasetKind::Hf => "Hugging Face dataset",
        };
        let sampling = match self.sampling {
            Sampling::Sequential => "sequential",
            Sampling::Random => "random with replacement",
            Sampling::Shuffle => "shuffled",
        };
        format!("{kind} {} ({sampling})", self.path.display())
    }
}

/// SplitMix64's finalizer: a bijection of `u64` whose output bits each depend on every input
/// bit. Seeds the per-block and per-line random streams and derives per-point nonces.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// z such that P(Z ≤ z) = 0.99 for a standard normal: ties a lognormal's p99 to its sigma.
pub(crate) const Z_P99: f64 = 2.326_347_874_040_840_8;

/// Longest length any distribution may produce: bounds prompt memory and `max_tokens`.
pub const MAX_LENGTH: u32 = 1 << 20;

/// A length distribution (tokens). Every draw is clipped to `[1, max]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LengthDist {
    /// Every draw the same (`fixed:N`, or a bare number).
    Fixed {
        /// The length, tokens.
        tokens: u32,
    },
    /// Uniform over `[mean·(1−range_ratio), mean·(1+range_ratio)]` (vLLM's meaning).
    Uniform {
        /// Centre of the range, tokens.
        mean: u32,
        /// Half the range's width as a fraction of `mean`, in [0, 1).
        range_ratio: f64,
    },
    /// Uniform over the integers `[lo, hi]` (`range:LO:HI`; vLLM's image counts, which may
    /// be 0).
    Range {
        /// The fewest.
        lo: u32,
        /// The most.
        hi: u32,
    },
    /// Normal with `mean` and `sd` (`normal:MEAN:SD[:MAX]`).
    Normal {
        /// Mean, tokens.
        mean: f64,
        /// Standard deviation, tokens.
        sd: f64,
        /// Longest draw, tokens (`MAX_LENGTH` when not given).
        max: u32,
    },
    /// Set by its median and p99; draws above `max` are clipped to it.
    Lognormal {
        /// Median, tokens.
        median: f64,
        /// 99th percentile, tokens (above the median).
        p99: f64,
        /// Longest draw, tokens (`MAX_LENGTH` when not given).
        max: u32,
    },
}

/// A length spec's `:`-separated fields, read with messages that name the flag.
struct SpecFields<'a> {
    flag: &'a str,
    spec: &'a str,
    parts: Vec<&'a str>,
    /// The smallest value allowed (1 for lengths; 0 for counts).
    min: u32,
    /// What a number of the spec is multiplied by (1000: seconds given, ms kept).
    scale: f64,
}

impl SpecFields<'_> {
    fn bad(&self, why: &str) -> String {
        format!(
            "{} '{}': {why} (use fixed:N, uniform:MEAN:RATIO, range:LO:HI, \
             normal:MEAN:SD[:MAX] or lognormal:MEDIAN:P99[:MAX], e.g. lognormal:300:4000:8000)",
            self.flag, self.spec
        )
    }

    /// Field `i` as a finite number ≥ 0.
    fn num(&self, i: usize) -> Result<f64, String> {
        let s = self
            .parts
            .get(i)
            .ok_or_else(|| self.bad("missing a number"))?;
        let v: f64 = s
            .parse()
            .map_err(|_| self.bad(&format!("'{s}' is not a number")))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.bad(&format!("'{s}' must be a finite number ≥ 0")))
        }
    }

    /// Field `i` as a value in the spec's unit: its number times `scale`.
    fn val(&self, i: usize) -> Result<f64, String> {
        Ok(self.num(i)? * self.scale)
    }

    /// The bounds of a value, in the spec's own unit.
    fn range_text(&self, lo: u32) -> String {
        let hi = MAX_LENGTH as f64 / self.scale;
        format!("[{}, {hi}]", lo as f64 / self.scale)
    }

    /// Field `i` as a length (tokens, or the spec's unit), in `[min, MAX_LENGTH]`.
    fn tokens(&self, i: usize) -> Result<u32, String> {
        let v = self.val(i)?.round();
        if (f64::from(self.min)..=MAX_LENGTH as f64).contains(&v) {
            Ok(v as u32)
        } else {
            let r = self.range_text(self.min);
            Err(self.bad(&format!("values must be in {r}")))
        }
    }

    /// The optional maximum at field `i` (`MAX_LENGTH` when absent).
    fn max_at(&self, i: usize) -> Result<u32, String> {
        if self.parts.len() <= i {
            return Ok(MAX_LENGTH);
        }
        let m = self.val(i)?.round();
        if m < 1.0 || m > MAX_LENGTH as f64 {
            let r = self.range_text(1);
            return Err(self.bad(&format!("the max must be in {r}")));
        }
        Ok(m as u32)
    }

    fn arity(&self, lo: usize, hi: usize) -> Result<(), String> {
        if self.parts.len() < lo || self.parts.len() > hi {
            Err(self.bad("wrong number of fields"))
        } else {
            Ok(())
        }
    }
}

impl LengthDist {
    /// Parses `fixed:N`, `uniform:MEAN:RATIO`, `range:LO:HI`, `normal:MEAN:SD[:MAX]`,
    /// `lognormal:MEDIAN:P99[:MAX]`; a bare number is `fixed`. Errors name `flag` and the fix.
    pub fn parse(flag: &str, spec: &str) -> Result<LengthDist, String> {
        LengthDist::parse_in(flag, spec, 1, 1.0)
    }

    /// `parse` of a count that may be 0 (`range:0:2`; a draw of another kind is at least 1).
    pub fn parse_count(flag: &str, spec: &str) -> Result<LengthDist, String> {
        LengthDist::parse_in(flag, spec, 0, 1.0)
    }

    /// `parse` with every number but a ratio multiplied by `scale` (1000: a spec in seconds
    /// kept in ms), and values from `min` up.
    pub fn parse_in(flag: &str, spec: &str, min: u32, scale: f64) -> Result<LengthDist, String> {
        let f = SpecFields {
            flag,
            spec,
            parts: spec.split(':').map(str::trim).collect(),
            min,
            scale,
        };
        let dist = match f.parts[0] {
            _ if f.parts.len() == 1 => LengthDist::Fixed {
                tokens: f.tokens(0)?,
            },
            "fixed" => {
                f.arity(2, 2)?;
                LengthDist::Fixed {
                    tokens: f.tokens(1)?,
                }
            }
            "uniform" => {
                f.arity(3, 3)?;
                let range_ratio = f.num(2)?;
                if range_ratio >= 1.0 {
                    return Err(f.bad("the range ratio must be in [0, 1)"));
                }
                LengthDist::Uniform {
                    mean: f.tokens(1)?,
                    range_ratio,
                }
            }
            "range" => {
                f.arity(3, 3)?;
                let (lo, hi) = (f.tokens(1)?, f.tokens(2)?);
                if hi < lo {
                    return Err(f.bad("the range's high end must not be below its low end"));
                }
                LengthDist::Range { lo, hi }
            }
            "normal" => {
                f.arity(3, 4)?;
                LengthDist::Normal {
                    mean: f.tokens(1)? as f64,
                    sd: f.val(2)?,
                    max: f.max_at(3)?,
                }
            }
            "lognormal" => {
                f.arity(3, 4)?;
                let (median, p99) = (f.tokens(1)? as f64, f.val(2)?);
                if p99 <= median {
                    return Err(f.bad("the p99 must be above the median"));
                }
                LengthDist::Lognormal {
                    median,
                    p99,
                    max: f.max_at(3)?,
                }
            }
            other => return Err(f.bad(&format!("unknown distribution '{other}'"))),
        };
        Ok(dist)
    }

    /// One length, clipped to `[1, max]` (a range's own bounds, a fixed value as it is).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let (v, max) = match *self {
            LengthDist::Fixed { tokens } => return tokens,
            LengthDist::Range { lo, hi } => return rng.random_range(lo..=hi.max(lo)),
            LengthDist::Uniform { mean, range_ratio } => {
                let lo = (mean as f64 * (1.0 - range_ratio)).round().max(1.0) as u32;
                let hi = (mean as f64 * (1.0 + range_ratio)).round() as u32;
                return rng.random_range(lo..=hi.max(lo)).min(MAX_LENGTH);
            }
            LengthDist::Normal { mean, sd, max } => {
                let d = Normal::new(mean, sd).expect("sd checked ≥ 0 and finite");
                (d.sample(rng), max)
            }
            LengthDist::Lognormal { median, p99, max } => {
                let sigma = (p99 / median).ln() / Z_P99;
                let d = LogNormal::new(median.ln(), sigma).expect("p99 > median checked");
                (d.sample(rng), max)
            }
        };
        v.round().clamp(1.0, max as f64) as u32
    }

    /// The largest length a draw can have.
    pub fn upper_bound(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Range { hi, .. } => hi,
            LengthDist::Uniform { mean, range_ratio } => {
                ((mean as f64 * (1.0 + range_ratio)).round() as u32).clamp(1, MAX_LENGTH)
            }
            LengthDist::Normal { max, .. } | LengthDist::Lognormal { max, .. } => max,
        }
    }
}

/// Mooncake's block size: tokens per `hash_ids` entry.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;

/// One trace line.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TraceRequest {
    /// Send time, ms on the trace's own clock; lines are in time order.
    pub timestamp: u64,
    /// Prompt length, tokens.
    pub input_length: u32,
    /// `max_tokens` asked.
    pub output_length: u32,
    /// One id per block of `TraceLoad::block_size` prompt tokens; lines that share an id share that
    /// block's text. Empty: the line's text is its own.
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

/// What the trace offers, stated before the run and kept in the summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    /// Lines in the trace.
    pub requests: u64,
    /// First to last send time after the speed-up, seconds.
    pub span_s: f64,
    /// Requests per second over the span (after the speed-up): (lines − 1) / span.
    pub rate_per_s: f64,
    /// Coefficient of variation of the gaps: 1 is Poisson-like, above 1 burstier.
    pub gap_cv: f64,
    /// `--replay-speedup`: every gap was divided by it.
    pub speedup: f64,
    /// Lines that carry `hash_ids`.
    pub lines_with_hash_ids: u64,
    /// Distinct `hash_ids` over all lines.
    pub distinct_blocks: u64,
    /// Share of all input tokens that lie in blocks whose hash id an earlier line already
    /// sent: what an unbounded prefix cache could serve.
    pub block_reuse_rate: f64,
}

/// `--trace` resolved into the plan's load: the checked lines and their send times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceLoad {
    /// The trace file (`--trace`).
    pub path: PathBuf,
    /// Tokens per `hash_ids` entry (`--trace-block-size`).
    pub block_size: u32,
    /// Every gap is divided by this (`--replay-speedup`).
    pub speedup: f64,
    /// The trace's own rate × the speed-up (`None` when every line has one timestamp).
    pub request_rate: Option<f64>,
    /// Most requests in flight at once (`--max-concurrency`); `None`: no cap.
    pub max_concurrency: Option<u32>,
    /// What the trace offers.
    pub stats: TraceStats,
    /// The lines, in file order (not serialized: a plan read back has none).
    #[serde(skip)]
    pub requests: Arc<[TraceRequest]>,
    /// Send times in ns from the first line, after the speed-up.
    #[serde(skip)]
    pub times_ns: Arc<[u64]>,
}
