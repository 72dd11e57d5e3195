//! Part of the CLI (the binary's first layer: raw flags → `Plan`): the spellings of
//! `vllm bench serve` and `aiperf profile` that `run` accepts, so a line written for either
//! tool runs with its own meaning, and the one place that meaning is mapped onto ours.
//! `lower` turns them into ringbench's own raw flags (the same `RunArgs`, its fields set as
//! ours would have set them), plus vLLM's result file, which no flag of ours names; the rest
//! is `RunArgs::to_plan`'s and `Plan::validate`'s. Where vLLM's defaults differ from ours
//! (1,000 prompts, `--request-rate inf`, `/v1/completions`, random 1024/128 tokens, greedy,
//! `ignore_eos` for random prompts) they apply when the line uses any vLLM-only spelling.
//! `TABLE` lists every flag of both tools with what becomes of it (`docs/drop-in.md`'s table
//! is made from it, and each row has a parse test). Nothing here prints: the flags accepted and
//! ignored are named in one warning `ignored_warning` returns for `main`.

use super::{usage, RunArgs, UsageError};
use clap::Args;
use ringbench::plan::{Endpoint, VllmResult};
use std::path::{Path, PathBuf};

/// `vllm bench serve`'s flags that ringbench does not spell the same way. They are for lines
/// pasted from vLLM's scripts, so `-h` leaves them out (ringbench's own flags say the same);
/// `--help` shows them under their own heading, and `docs/drop-in.md`'s table says what each becomes.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "vllm bench serve's spellings (see docs/drop-in.md)")]
pub struct VllmFlags {
    /// vLLM: the server's base URL (ringbench's --url).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "URL",
        conflicts_with = "url"
    )]
    pub base_url: Option<String>,
    /// vLLM: openai or vllm (/v1/completions), openai-chat (/v1/chat/completions).
    #[arg(hide_short_help = true, long, value_name = "NAME")]
    pub backend: Option<String>,
    /// vLLM: the server's host, with --port (http://HOST:PORT) [vLLM's 127.0.0.1].
    #[arg(hide_short_help = true, long, value_name = "HOST", conflicts_with_all = ["url", "base_url"])]
    pub host: Option<String>,
    /// vLLM: the server's port, with --host [vLLM's 8000].
    #[arg(hide_short_help = true, long, value_name = "PORT", conflicts_with_all = ["url", "base_url"])]
    pub port: Option<u16>,
    /// vLLM: requests to send (ringbench's --request-count) [vLLM's 1000].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "request_count"
    )]
    pub num_prompts: Option<u64>,
    /// vLLM: random, sharegpt, custom (JSONL with prompt), prefix_repetition or hf [random].
    #[arg(hide_short_help = true, long, value_name = "NAME")]
    pub dataset_name: Option<String>,
    /// vLLM: the dataset file of sharegpt or custom, hf's ORG/NAME (ringbench's --dataset).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "PATH",
        conflicts_with = "dataset"
    )]
    pub dataset_path: Option<PathBuf>,
    /// vLLM: random prompts' length, tokens [vLLM's 1024].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "input_tokens"
    )]
    pub random_input_len: Option<u32>,
    /// vLLM: random prompts' max_tokens [vLLM's 128].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "output_tokens"
    )]
    pub random_output_len: Option<u32>,
    /// vLLM: one shared prefix of N tokens before each random prompt.
    #[arg(hide_short_help = true, long, value_name = "N", conflicts_with_all = ["prefix_groups", "prefix_tokens"])]
    pub random_prefix_len: Option<u32>,
    /// vLLM: max_tokens of sharegpt prompts [the dataset's answers].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "output_tokens"
    )]
    pub sharegpt_output_len: Option<u32>,
    /// vLLM: max_tokens of custom prompts [vLLM's 256].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "output_tokens"
    )]
    pub custom_output_len: Option<u32>,
    /// vLLM: max_tokens of hf prompts [vLLM's 128].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "output_tokens"
    )]
    pub hf_output_len: Option<u32>,
    /// vLLM: prefix_repetition's prefix length [256].
    #[arg(hide_short_help = true, long, value_name = "N")]
    pub prefix_repetition_prefix_len: Option<u32>,
    /// vLLM: prefix_repetition's suffix length [256].
    #[arg(hide_short_help = true, long, value_name = "N")]
    pub prefix_repetition_suffix_len: Option<u32>,
    /// vLLM: prefix_repetition's distinct prefixes [10].
    #[arg(hide_short_help = true, long, value_name = "N")]
    pub prefix_repetition_num_prefixes: Option<u32>,
    /// vLLM: prefix_repetition's max_tokens [128].
    #[arg(hide_short_help = true, long, value_name = "N")]
    pub prefix_repetition_output_len: Option<u32>,
    /// vLLM: random-mm's images per request, around which the count is drawn [1].
    #[arg(hide_short_help = true, long, value_name = "N")]
    pub random_mm_base_items_per_request: Option<u32>,
    /// vLLM: random-mm's count spread r: uniform in [floor(n(1-r)), ceil(n(1+r))] [0].
    #[arg(hide_short_help = true, long, value_name = "R")]
    pub random_mm_num_mm_items_range_ratio: Option<f64>,
    /// vLLM: random-mm's caps per modality, JSON like '{"image": 3, "video": 0}'.
    #[arg(hide_short_help = true, long, value_name = "JSON")]
    pub random_mm_limit_mm_per_prompt: Option<String>,
    /// vLLM: random-mm's sizes, like '{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}' (H, W, frames).
    #[arg(hide_short_help = true, long, value_name = "DICT")]
    pub random_mm_bucket_config: Option<String>,
    /// vLLM: warm-up requests (ringbench's --warmup-requests).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "warmup_requests"
    )]
    pub num_warmups: Option<u64>,
    /// vLLM: top_p sent in every body.
    #[arg(hide_short_help = true, long, value_name = "P")]
    pub top_p: Option<f64>,
    /// vLLM: top_k sent in every body.
    #[arg(hide_short_help = true, long, value_name = "K")]
    pub top_k: Option<i64>,
    /// vLLM: min_p sent in every body.
    #[arg(hide_short_help = true, long, value_name = "P")]
    pub min_p: Option<f64>,
    /// vLLM: frequency_penalty sent in every body.
    #[arg(hide_short_help = true, long, value_name = "X")]
    pub frequency_penalty: Option<f64>,
    /// vLLM: presence_penalty sent in every body.
    #[arg(hide_short_help = true, long, value_name = "X")]
    pub presence_penalty: Option<f64>,
    /// vLLM: repetition_penalty sent in every body.
    #[arg(hide_short_help = true, long, value_name = "X")]
    pub repetition_penalty: Option<f64>,
    /// vLLM: the metrics --save-result writes statistics of: ttft,tpot,itl,e2el
    /// [vLLM's ttft,tpot,itl].
    #[arg(hide_short_help = true, long, value_name = "LIST")]
    pub percentile_metrics: Option<String>,
    /// vLLM: percentiles, comma-separated (ringbench's --percentiles) [vLLM's 99].
    #[arg(
        hide_short_help = true,
        long,
        value_name = "LIST",
        conflicts_with = "percentiles"
    )]
    pub metric_percentiles: Option<String>,
    /// vLLM: write vLLM's result JSON (--result-dir, --result-filename).
    #[arg(hide_short_help = true, long)]
    pub save_result: bool,
    /// vLLM: keep the per-request lists in the result JSON.
    #[arg(hide_short_help = true, long)]
    pub save_detailed: bool,
    /// vLLM: the result JSON's folder [the current one].
    #[arg(hide_short_help = true, long, value_name = "DIR")]
    pub result_dir: Option<PathBuf>,
    /// vLLM: the result JSON's name [vLLM's
    /// {label}-{rate}qps[-concurrency{N}]-{model}-{YYYYmmdd-HHMMSS}.json].
    #[arg(hide_short_help = true, long, value_name = "NAME")]
    pub result_filename: Option<String>,
    /// vLLM: KEY=VALUE pairs written into the result JSON.
    #[arg(hide_short_help = true, long, value_name = "KEY=VALUE", num_args = 1..)]
    pub metadata: Vec<String>,
    /// vLLM: no progress bar (ringbench's --quiet).
    #[arg(hide_short_help = true, long)]
    pub disable_tqdm: bool,
    /// vLLM: the result's label and file name prefix [the backend].
    #[arg(hide_short_help = true, long, value_name = "LABEL")]
    pub label: Option<String>,
    /// vLLM: the model name sent in the body, when it is not --model.
    #[arg(hide_short_help = true, long, value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// vLLM: the request ids' prefix (ringbench's --run-id, without a trailing -).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "PREFIX",
        conflicts_with = "run_id"
    )]
    pub request_id_prefix: Option<String>,
    /// vLLM: accepted, ignored (ringbench drives no server profiler).
    #[arg(hide_short_help = true, long)]
    pub profile: bool,
    /// vLLM: accepted, ignored (nothing is downloaded or run).
    #[arg(hide_short_help = true, long)]
    pub trust_remote_code: bool,
    /// vLLM: accepted, ignored (one tokenizer.json, read by the tokenizers crate).
    #[arg(hide_short_help = true, long, value_name = "MODE")]
    pub tokenizer_mode: Option<String>,
    /// vLLM: accepted, ignored (no ready check; see docs/drop-in.md).
    #[arg(hide_short_help = true, long, value_name = "S")]
    pub ready_check_timeout_sec: Option<u64>,
    /// vLLM: refused (write each run to its own file).
    #[arg(long, hide = true)]
    pub append_result: bool,
    /// vLLM: refused (logprobs are not parsed; --extra-body sends them).
    #[arg(long, hide = true, value_name = "N")]
    pub logprobs: Option<String>,
    /// vLLM: refused (one model per run).
    #[arg(long, hide = true, num_args = 1..)]
    pub lora_modules: Vec<String>,
    /// vLLM: refused (a ramp is `ringbench sweep`).
    #[arg(long, hide = true)]
    pub ramp_up_strategy: Option<String>,
    /// vLLM: refused with --ramp-up-strategy.
    #[arg(long, hide = true)]
    pub ramp_up_start_rps: Option<String>,
    /// vLLM: refused with --ramp-up-strategy.
    #[arg(long, hide = true)]
    pub ramp_up_end_rps: Option<String>,
}

/// AIPerf's `--endpoint-type`: its names (`rankings` is our `rerank`).
fn aiperf_endpoint_type(s: &str) -> Result<Endpoint, String> {
    match s {
        "chat" => Ok(Endpoint::Chat),
        "completions" => Ok(Endpoint::Completions),
        "responses" => Ok(Endpoint::Responses),
        "messages" => Ok(Endpoint::Messages),
        "embeddings" => Ok(Endpoint::Embeddings),
        "rankings" | "nim_rankings" | "nim-rankings" => Ok(Endpoint::Rerank),
        "hf_tei_rankings" | "hf-tei-rankings" => Ok(Endpoint::TeiRerank),
        _ => Err(format!(
            "'{s}': ringbench takes AIPerf's chat, completions, responses, messages, \
             embeddings or rankings"
        )),
    }
}

/// `aiperf profile`'s flags that ringbench does not spell the same way.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "aiperf profile's spellings (see docs/drop-in.md)")]
pub struct AiperfFlags {
    /// AIPerf: chat, completions, responses, messages, embeddings or rankings (ringbench's
    /// --endpoint).
    #[arg(
        hide_short_help = true,
        long,
        value_parser = aiperf_endpoint_type,
        value_name = "KIND",
        hide_possible_values = true,
        conflicts_with = "endpoint"
    )]
    pub endpoint_type: Option<Endpoint>,
    /// AIPerf: stream the answers [AIPerf's default: not streamed].
    #[arg(hide_short_help = true, long, conflicts_with = "no_stream")]
    pub streaming: bool,
    /// AIPerf: warm-up requests (ringbench's --warmup-requests).
    #[arg(hide_short_help = true, long, value_name = "N", conflicts_with_all = ["warmup_requests", "num_warmups"])]
    pub warmup_request_count: Option<u64>,
    /// AIPerf: mean prompt length, tokens (ringbench's --input-tokens).
    #[arg(hide_short_help = true, long, alias = "isl", value_name = "N", conflicts_with_all = ["input_tokens", "random_input_len"])]
    pub synthetic_input_tokens_mean: Option<u32>,
    /// AIPerf: prompt lengths' standard deviation (a normal --input-dist) [0].
    #[arg(
        hide_short_help = true,
        long,
        alias = "isl-stddev",
        value_name = "SD",
        conflicts_with = "input_dist"
    )]
    pub synthetic_input_tokens_stddev: Option<f64>,
    /// AIPerf: mean max_tokens (ringbench's --output-tokens).
    #[arg(hide_short_help = true, long, alias = "osl", value_name = "N", conflicts_with_all = ["output_tokens", "random_output_len"])]
    pub output_tokens_mean: Option<u32>,
    /// AIPerf: max_tokens' standard deviation (a normal --output-dist) [0].
    #[arg(
        hide_short_help = true,
        long,
        alias = "osl-stddev",
        value_name = "SD",
        conflicts_with = "output_dist"
    )]
    pub output_tokens_stddev: Option<f64>,
    /// AIPerf: documents per rankings query (ringbench's --batch-size).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        conflicts_with = "batch_size"
    )]
    pub rankings_passages_mean: Option<u32>,
    /// AIPerf: documents per query's standard deviation: 0 only.
    #[arg(hide_short_help = true, long, value_name = "SD")]
    pub rankings_passages_stddev: Option<f64>,
    /// AIPerf: a document's length, tokens (ringbench's --input-tokens, the query's too).
    #[arg(hide_short_help = true, long, value_name = "N", conflicts_with_all = ["input_tokens", "synthetic_input_tokens_mean"])]
    pub rankings_passages_prompt_token_mean: Option<u32>,
    /// AIPerf: a query's length: refused (one length for the query and its documents).
    #[arg(hide_short_help = true, long, value_name = "N")]
    pub rankings_query_prompt_token_mean: Option<u32>,
    /// AIPerf: mean image width, px (with --image-height-mean).
    #[arg(hide_short_help = true, long, value_name = "PX", conflicts_with_all = ["image_size", "image_width"])]
    pub image_width_mean: Option<f64>,
    /// AIPerf: image widths' standard deviation, px [0].
    #[arg(hide_short_help = true, long, value_name = "SD")]
    pub image_width_stddev: Option<f64>,
    /// AIPerf: mean image height, px (with --image-width-mean).
    #[arg(hide_short_help = true, long, value_name = "PX", conflicts_with_all = ["image_size", "image_height"])]
    pub image_height_mean: Option<f64>,
    /// AIPerf: image heights' standard deviation, px [0].
    #[arg(hide_short_help = true, long, value_name = "SD")]
    pub image_height_stddev: Option<f64>,
    /// AIPerf: images per request (ringbench's --image-count) [1].
    #[arg(
        hide_short_help = true,
        long,
        alias = "batch-size-image",
        value_name = "N",
        conflicts_with = "image_count"
    )]
    pub image_batch_size: Option<u32>,
    /// AIPerf: mean audio length, seconds (ringbench's --audio-seconds).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "S",
        conflicts_with = "audio_seconds"
    )]
    pub audio_length_mean: Option<f64>,
    /// AIPerf: audio lengths' standard deviation, seconds [0].
    #[arg(hide_short_help = true, long, value_name = "SD")]
    pub audio_length_stddev: Option<f64>,
    /// AIPerf: wav (mp3 is refused).
    #[arg(hide_short_help = true, long, value_name = "FORMAT")]
    pub audio_format: Option<String>,
    /// AIPerf: audio clips per request (ringbench's --audio-count) [1].
    #[arg(
        hide_short_help = true,
        long,
        alias = "batch-size-audio",
        value_name = "N",
        conflicts_with = "audio_count"
    )]
    pub audio_batch_size: Option<u32>,
    /// AIPerf: sample rates a clip's is drawn from, kHz, like 16,44.1 [16].
    #[arg(hide_short_help = true, long, value_name = "LIST")]
    pub audio_sample_rates: Option<String>,
    /// AIPerf: the run's folder (ringbench's --out).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "DIR",
        conflicts_with = "out"
    )]
    pub artifact_dir: Option<PathBuf>,
}

/// What becomes of a flag of the other tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Spelled and meant as ringbench's own flag.
    Same,
    /// Accepted and mapped onto ringbench's settings (the note says how).
    Mapped,
    /// Accepted and ignored, named in one warning.
    Ignored,
    /// Refused, the message says why and what to do instead.
    Refused,
}

/// One row of the compatibility table.
pub struct Row {
    /// `vllm bench serve` or `aiperf profile`.
    pub tool: &'static str,
    /// The flag as that tool spells it.
    pub flag: &'static str,
    pub how: How,
    /// What ringbench makes of it.
    pub note: &'static str,
    /// A `run` line that uses it (the parse test's input).
    #[cfg(test)]
    pub example: &'static [&'static str],
}

const V: &str = "vllm bench serve";
const A: &str = "aiperf profile";

macro_rules! rows {
    ($($tool:ident $flag:literal $how:ident $note:literal [$($ex:literal),*];)*) => {
        &[$(Row {
            tool: $tool,
            flag: $flag,
            how: How::$how,
            note: $note,
            #[cfg(test)]
            example: &[$($ex),*],
        }),*]
    };
}

/// Every flag of both tools that `run` knows, in the tools' help order.
pub const TABLE: &[Row] = rows! {
    V "--base-url" Mapped "`--url`; a trailing `/v1` is dropped" ["--base-url", "http://h:8000"];
    V "--host" Mapped "`--url http://HOST:PORT` (port 8000 when only the host is given)" ["--host", "h"];
    V "--port" Mapped "`--url http://HOST:PORT` (host 127.0.0.1 when only the port is given)" ["--port", "8001"];
    V "--endpoint" Mapped "a path: `/v1/chat/completions`, `/v1/completions`, `/v1/responses`, `/v1/messages`, `/v1/embeddings`, `/v1/rerank`, `/v1/score`, TEI's `/rerank` (our `--endpoint` takes the names too); default `/v1/completions` as vLLM's" ["--endpoint", "/v1/responses"];
    V "--backend" Mapped "`openai`, `vllm` → `/v1/completions`; `openai-chat` → `/v1/chat/completions`; `openai-embeddings` → `/v1/embeddings`; `vllm-rerank` → `/v1/rerank`; others refused" ["--backend", "openai-embeddings"];
    V "--model" Same "the model; with `--served-model-name`, only the result's `model_id`" ["--model", "m"];
    V "--served-model-name" Mapped "the model sent in the body (`--model` stays the result's `model_id`)" ["--model", "org/m", "--served-model-name", "m"];
    V "--tokenizer" Same "a local `tokenizer.json` or a folder holding one; a hub name is refused (nothing is downloaded)" ["--tokenizer", "/x/tokenizer.json"];
    V "--num-prompts" Mapped "`--request-count`; default 1000 with vLLM's spellings" ["--num-prompts", "10"];
    V "--request-rate" Mapped "ours; `inf` (vLLM's default) sends all at once: a closed loop of `--max-concurrency` users, or one per prompt" ["--request-rate", "inf", "--num-prompts", "10"];
    V "--max-concurrency" Mapped "ours (cap on an open loop); with `inf`, the closed loop's users" ["--request-rate", "inf", "--max-concurrency", "4"];
    V "--burstiness" Mapped "gamma arrivals of that shape (1 = Poisson), no `--arrival` needed; ignored with `inf` as vLLM does" ["--request-rate", "5", "--burstiness", "0.5"];
    V "--dataset-name" Mapped "`random` (default), `random-mm` (random prompts with synthetic JPEG images: `--image-count`, `--image-size`), `sharegpt`, `custom` (JSONL `prompt`), `prefix_repetition`, `hf` (`--dataset-format hf`: a Hugging Face dataset's Parquet files, read offline, images included); others refused" ["--dataset-name", "random"];
    V "--dataset-path" Mapped "`--dataset` (sharegpt: `--dataset-format sharegpt`; custom: `jsonl`; hf: `ORG/NAME` in the local Hugging Face cache, never downloaded, or a Parquet file or folder)" ["--dataset-name", "sharegpt", "--dataset-path", "d.json"];
    V "--random-input-len" Mapped "`--input-tokens` (vLLM's 1024 by default), plus `--random-prefix-len`" ["--random-input-len", "100"];
    V "--random-output-len" Mapped "`--output-tokens` (vLLM's 128 by default)" ["--random-output-len", "16"];
    V "--random-range-ratio" Same "uniform lengths in [N·(1−R), N·(1+R)] around both lengths" ["--random-range-ratio", "0.5"];
    V "--random-mm-base-items-per-request" Mapped "random-mm: `--image-count range:LO:HI`, LO = floor(n·(1−r)), HI = min(image limit, ceil(n·(1+r))) (vLLM's draw; default 1)" ["--backend", "openai-chat", "--dataset-name", "random-mm", "--random-mm-base-items-per-request", "2"];
    V "--random-mm-num-mm-items-range-ratio" Mapped "random-mm: r above, in [0, 1]; 1 allows 0 images (default 0)" ["--backend", "openai-chat", "--dataset-name", "random-mm", "--random-mm-num-mm-items-range-ratio", "0.5"];
    V "--random-mm-limit-mm-per-prompt" Mapped "random-mm: its `image` count caps the draw (default 255); `video` is not sent" ["--backend", "openai-chat", "--dataset-name", "random-mm", "--random-mm-limit-mm-per-prompt", "{\"image\": 3, \"video\": 0}"];
    V "--random-mm-bucket-config" Mapped "random-mm: `(H, W, 1): weight` buckets → `--image-size WxH:weight,...` (default half 256x256, half 1280x720), sent as JPEG like vLLM's; a video bucket (frames above 1) of weight above 0 refused: ringbench sends no video" ["--backend", "openai-chat", "--dataset-name", "random-mm", "--random-mm-bucket-config", "{(512, 512, 1): 1.0}"];
    V "--random-prefix-len" Mapped "one shared prefix: `--prefix-groups 1 --prefix-tokens N`, on top of the random length" ["--random-prefix-len", "32"];
    V "--sharegpt-output-len" Mapped "`--output-tokens` (default: the dataset's answers)" ["--dataset-name", "sharegpt", "--dataset-path", "d.json", "--sharegpt-output-len", "64"];
    V "--custom-output-len" Mapped "`--output-tokens` (vLLM's 256 by default)" ["--dataset-name", "custom", "--dataset-path", "d.jsonl", "--custom-output-len", "64"];
    V "--hf-split" Same "the split read (`train`…), from the files' names as the Hub lays them out; the only one by default" ["--dataset-name", "hf", "--dataset-path", "org/d", "--hf-split", "train"];
    V "--hf-subset" Same "the subset (config folder) read; `default` or the only one by default" ["--dataset-name", "hf", "--dataset-path", "org/d", "--hf-subset", "en"];
    V "--hf-output-len" Mapped "`--output-tokens` (vLLM's 128 by default)" ["--dataset-name", "hf", "--dataset-path", "org/d", "--hf-output-len", "64"];
    V "--hf-prompt-column" Same "ours: the prompt's column (default: `conversation`, `conversations`, `messages`, `prompt`, `text` or `instruction`; a conversation's first user message)" ["--dataset-name", "hf", "--dataset-path", "org/d", "--hf-prompt-column", "q"];
    V "--hf-image-column" Same "ours: the images' column (default: `images` or `image`); the first image goes with the prompt as a `data:` URL" ["--dataset-name", "hf", "--dataset-path", "org/d", "--hf-image-column", "img"];
    V "--prefix-repetition-prefix-len" Mapped "`--prefix-tokens` (256)" ["--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "64"];
    V "--prefix-repetition-suffix-len" Mapped "prompt = prefix + this (256)" ["--dataset-name", "prefix_repetition", "--prefix-repetition-suffix-len", "64"];
    V "--prefix-repetition-num-prefixes" Mapped "`--prefix-groups` (10)" ["--dataset-name", "prefix_repetition", "--prefix-repetition-num-prefixes", "4"];
    V "--prefix-repetition-output-len" Mapped "`--output-tokens` (128)" ["--dataset-name", "prefix_repetition", "--prefix-repetition-output-len", "8"];
    V "--num-warmups" Mapped "`--warmup-requests`" ["--num-warmups", "5"];
    V "--ignore-eos" Same "`ignore_eos: true`; on by default for `random`, as vLLM does" ["--ignore-eos"];
    V "--temperature" Same "sent in every body; 0 (greedy) by default with vLLM's spellings, as vLLM does" ["--temperature", "0.7"];
    V "--top-p" Mapped "`top_p` in every body (under `--extra-body`, whose keys win)" ["--top-p", "0.9"];
    V "--top-k" Mapped "`top_k` in every body" ["--top-k", "5"];
    V "--min-p" Mapped "`min_p` in every body" ["--min-p", "0.1"];
    V "--frequency-penalty" Mapped "`frequency_penalty` in every body" ["--frequency-penalty", "0.1"];
    V "--presence-penalty" Mapped "`presence_penalty` in every body" ["--presence-penalty", "0.1"];
    V "--repetition-penalty" Mapped "`repetition_penalty` in every body" ["--repetition-penalty", "1.1"];
    V "--extra-body" Same "a JSON object merged into every body last" ["--extra-body", "{\"a\":1}"];
    V "--header" Same "`KEY=VALUE` as vLLM, or our `KEY:VALUE`; several after one `--header`" ["--header", "x-a=1", "x-b=2"];
    V "--goodput" Same "`KEY:MS` SLOs (`ttft`, `tpot`, `e2el`; ours also `itl`, `ntpot`)" ["--goodput", "ttft:500", "e2el:3000"];
    V "--percentile-metrics" Mapped "which metrics the result JSON carries (`ttft,tpot,itl` by default, `e2el` for pooling endpoints, as vLLM's); the console shows all" ["--percentile-metrics", "ttft,e2el"];
    V "--metric-percentiles" Mapped "`--percentiles` (every output; vLLM's default 99 only with `--save-result`)" ["--metric-percentiles", "50,99"];
    V "--save-result" Mapped "vLLM's result JSON at vLLM's file name; ringbench's own files beside it in `DIR/NAME/` (or `--out`)" ["--save-result", "--model", "m"];
    V "--save-detailed" Mapped "the result JSON keeps `input_lens`, `output_lens`, `ttfts`, `itls`, `generated_texts` (empty), `errors`" ["--save-result", "--save-detailed", "--model", "m"];
    V "--result-dir" Mapped "the result JSON's folder (made if missing)" ["--save-result", "--model", "m", "--result-dir", "/tmp/r"];
    V "--result-filename" Mapped "the result JSON's name, in `--result-dir`" ["--save-result", "--result-filename", "raw.json"];
    V "--metadata" Mapped "`KEY=VALUE` pairs written into the result JSON" ["--save-result", "--result-filename", "r.json", "--metadata", "tp=1", "v=0.3"];
    V "--label" Mapped "the result's `label` and file name prefix" ["--save-result", "--model", "m", "--label", "run1"];
    V "--seed" Same "seeds prompts, lengths and arrivals" ["--seed", "1"];
    V "--disable-tqdm" Mapped "`--quiet`" ["--disable-tqdm"];
    V "--request-id-prefix" Mapped "`--run-id` (a trailing `-` dropped): ids are `PREFIX-N`" ["--request-id-prefix", "bench-1-"];
    V "--profile" Ignored "warned: ringbench drives no server profiler" ["--profile"];
    V "--trust-remote-code" Ignored "warned: nothing is downloaded or run" ["--trust-remote-code"];
    V "--tokenizer-mode" Ignored "warned: one `tokenizer.json`, read by the tokenizers crate" ["--tokenizer-mode", "slow"];
    V "--ready-check-timeout-sec" Ignored "warned: no ready check (the first requests fail and are counted)" ["--ready-check-timeout-sec", "0"];
    V "--append-result" Refused "one run, one file: give each run its own `--result-filename`" ["--append-result"];
    V "--logprobs" Refused "logprobs are not parsed; send them with `--extra-body '{\"logprobs\": N}'`" ["--logprobs", "1"];
    V "--lora-modules" Refused "one model per run: run once per adapter with `--model`" ["--lora-modules", "a"];
    V "--ramp-up-strategy" Refused "a rising load is `ringbench sweep --request-rate R1,R2,...`" ["--ramp-up-strategy", "linear"];
    V "--ramp-up-start-rps" Refused "part of vLLM's ramp: use `ringbench sweep --request-rate R1,R2,...`" ["--ramp-up-start-rps", "1"];
    V "--ramp-up-end-rps" Refused "part of vLLM's ramp: use `ringbench sweep --request-rate R1,R2,...`" ["--ramp-up-end-rps", "9"];
    A "--url" Same "ours; without a scheme (AIPerf's `localhost:8000`), `http://` with AIPerf's spellings" ["--url", "http://h:8000"];
    A "--model" Same "ours (`-m`, `--model-names` too)" ["--model", "m"];
    A "--endpoint-type" Mapped "`--endpoint chat|completions|responses|messages|embeddings`; `rankings` (and `nim_rankings`) → `rerank`, `hf_tei_rankings` → `tei-rerank`" ["--endpoint-type", "rankings"];
    A "--batch-size" Same "ours: inputs per embeddings request (alias `--batch-size-text`)" ["--endpoint-type", "embeddings", "--batch-size", "4"];
    A "--rankings-passages-mean" Mapped "`--batch-size` (documents per query)" ["--endpoint-type", "rankings", "--rankings-passages-mean", "8"];
    A "--rankings-passages-stddev" Mapped "0 only (every query gets `--batch-size` documents); above 0 refused" ["--endpoint-type", "rankings", "--rankings-passages-stddev", "0"];
    A "--rankings-passages-prompt-token-mean" Mapped "`--input-tokens` (the query's length too)" ["--endpoint-type", "rankings", "--rankings-passages-prompt-token-mean", "64"];
    A "--rankings-query-prompt-token-mean" Refused "the query and its documents are drawn from one length: give `--rankings-passages-prompt-token-mean` (or `--input-tokens`) alone" ["--rankings-query-prompt-token-mean", "16"];
    A "--streaming" Mapped "streamed answers; with AIPerf's spellings and without it, not streamed (AIPerf's default)" ["--endpoint-type", "chat", "--streaming"];
    A "--concurrency" Mapped "ours (closed loop); with `--request-rate`, the open loop's cap, as AIPerf does" ["--concurrency", "4"];
    A "--request-rate" Same "ours (open loop)" ["--request-rate", "10"];
    A "--request-count" Same "ours" ["--request-count", "10"];
    A "--warmup-request-count" Mapped "`--warmup-requests`" ["--warmup-request-count", "3"];
    A "--synthetic-input-tokens-mean" Mapped "`--input-tokens` (alias `--isl`)" ["--synthetic-input-tokens-mean", "100"];
    A "--synthetic-input-tokens-stddev" Mapped "above 0: `--input-dist normal:MEAN:SD`" ["--isl", "100", "--synthetic-input-tokens-stddev", "10"];
    A "--output-tokens-mean" Mapped "`--output-tokens` (alias `--osl`)" ["--output-tokens-mean", "16"];
    A "--output-tokens-stddev" Mapped "above 0: `--output-dist normal:MEAN:SD`" ["--osl", "16", "--output-tokens-stddev", "4"];
    A "--artifact-dir" Mapped "`--out`" ["--artifact-dir", "/tmp/a"];
    A "--random-seed" Mapped "`--seed`" ["--random-seed", "3"];
    A "--tokenizer" Same "a local `tokenizer.json` (a hub name is refused)" ["--tokenizer", "/x/tokenizer.json"];
    A "--image-width-mean" Mapped "`--image-width` (with `--image-height-mean`: images when both are above 0, as AIPerf); random pixels, not AIPerf's resized source images" ["--image-width-mean", "512", "--image-height-mean", "256"];
    A "--image-width-stddev" Mapped "above 0: `--image-width normal:MEAN:SD`" ["--image-width-mean", "512", "--image-height-mean", "512", "--image-width-stddev", "32"];
    A "--image-height-mean" Mapped "`--image-height` (with `--image-width-mean`)" ["--image-width-mean", "512", "--image-height-mean", "512"];
    A "--image-height-stddev" Mapped "above 0: `--image-height normal:MEAN:SD`" ["--image-width-mean", "512", "--image-height-mean", "512", "--image-height-stddev", "32"];
    A "--image-batch-size" Mapped "`--image-count` (alias `--batch-size-image`; default 1; 0: no images)" ["--image-width-mean", "64", "--image-height-mean", "64", "--image-batch-size", "2"];
    A "--image-format" Same "ours: `png` (AIPerf's default), `jpeg` or `random` per image" ["--image-format", "jpeg"];
    A "--audio-length-mean" Mapped "`--audio-seconds` (WAV, 16-bit mono); audio when above 0, as AIPerf" ["--audio-length-mean", "2.5"];
    A "--audio-length-stddev" Mapped "above 0: `--audio-seconds normal:MEAN:SD`" ["--audio-length-mean", "2", "--audio-length-stddev", "0.5"];
    A "--audio-batch-size" Mapped "`--audio-count` (alias `--batch-size-audio`; default 1; 0: no audio)" ["--audio-length-mean", "1", "--audio-batch-size", "2"];
    A "--audio-format" Mapped "`wav` only; `mp3` refused (no MP3 encoder is built in)" ["--audio-length-mean", "1", "--audio-format", "wav"];
    A "--audio-sample-rates" Mapped "kHz list a clip's rate is drawn from (default 16)" ["--audio-length-mean", "1", "--audio-sample-rates", "16,44.1"];
};

/// vLLM's defaults, used with its spellings.
const VLLM_NUM_PROMPTS: u64 = 1000;
const VLLM_INPUT_LEN: u32 = 1024;
const VLLM_OUTPUT_LEN: u32 = 128;
const VLLM_CUSTOM_OUTPUT_LEN: u32 = 256;
/// vLLM's `max_tokens` for hf datasets (its VisionArena loader's).
const VLLM_HF_OUTPUT_LEN: u32 = 128;

impl VllmFlags {
    /// The line is a vLLM line, so vLLM's defaults apply: it names where to send
    /// (`--base-url`, `--host`, `--port`, `--backend`), how many (`--num-prompts`), what
    /// (`--dataset-name`, `--dataset-path`, `--random-input-len`, `--random-output-len`) or
    /// asks for vLLM's file (`--save-result`).
    pub fn given(&self) -> bool {
        let v = self;
        [
            v.base_url.is_some(),
            v.backend.is_some(),
            v.host.is_some(),
            v.port.is_some(),
            v.num_prompts.is_some(),
            v.dataset_name.is_some(),
            v.dataset_path.is_some(),
            v.random_input_len.is_some(),
            v.random_output_len.is_some(),
            v.save_result,
        ]
        .into_iter()
        .any(|b| b)
    }

    /// vLLM flags that mean nothing here, refused with the reason (a row of `TABLE`).
    fn refuse(&self) -> Result<(), UsageError> {
        let given = [
            ("--append-result", self.append_result),
            ("--logprobs", self.logprobs.is_some()),
            ("--lora-modules", !self.lora_modules.is_empty()),
            ("--ramp-up-strategy", self.ramp_up_strategy.is_some()),
            ("--ramp-up-start-rps", self.ramp_up_start_rps.is_some()),
            ("--ramp-up-end-rps", self.ramp_up_end_rps.is_some()),
        ];
        let row = |flag: &str| {
            TABLE
                .iter()
                .find(|r| r.flag == flag && r.how == How::Refused)
        };
        match given
            .into_iter()
            .find(|(_, g)| *g)
            .and_then(|(f, _)| row(f))
        {
            Some(r) => usage(format!(
                "{} ({}) is not supported: {}",
                r.flag, r.tool, r.note
            )),
            None => Ok(()),
        }
    }

    /// One line naming the vLLM flags given that ringbench accepts and ignores.
    pub fn ignored_warning(&self) -> Option<String> {
        let given = [
            ("--profile", self.profile),
            ("--trust-remote-code", self.trust_remote_code),
            ("--tokenizer-mode", self.tokenizer_mode.is_some()),
            (
                "--ready-check-timeout-sec",
                self.ready_check_timeout_sec.is_some(),
            ),
        ];
        let named: Vec<String> = given
            .into_iter()
            .filter(|(_, g)| *g)
            .filter_map(|(flag, _)| {
                TABLE
                    .iter()
                    .find(|r| r.flag == flag && r.how == How::Ignored)
            })
            .map(|r| format!("{} ({})", r.flag, r.note.trim_start_matches("warned: ")))
            .collect();
        (!named.is_empty())
            .then(|| format!("vLLM flags accepted and ignored: {}", named.join("; ")))
    }
}

impl AiperfFlags {
    /// The line uses a spelling only AIPerf has (then AIPerf's defaults apply).
    pub fn given(&self) -> bool {
        self.endpoint_type.is_some()
            || self.streaming
            || self.warmup_request_count.is_some()
            || self.synthetic_input_tokens_mean.is_some()
            || self.synthetic_input_tokens_stddev.is_some()
            || self.output_tokens_mean.is_some()
            || self.output_tokens_stddev.is_some()
            || self.artifact_dir.is_some()
            || self.rankings_passages_mean.is_some()
            || self.rankings_passages_stddev.is_some()
            || self.rankings_passages_prompt_token_mean.is_some()
            || self.rankings_query_prompt_token_mean.is_some()
            || self.media_given()
    }

    /// The line uses AIPerf's image or audio spellings.
    fn media_given(&self) -> bool {
        [
            self.image_width_mean,
            self.image_width_stddev,
            self.image_height_mean,
        ]
        .iter()
        .chain([
            &self.image_height_stddev,
            &self.audio_length_mean,
            &self.audio_length_stddev,
        ])
        .any(Option::is_some)
            || self.image_batch_size.is_some()
            || self.audio_batch_size.is_some()
            || self.audio_format.is_some()
            || self.audio_sample_rates.is_some()
    }
}

/// vLLM's and AIPerf's spellings of `a` as ringbench's own flags, and vLLM's result file
/// when `--save-result` asks for it.
pub fn lower(a: &RunArgs) -> Result<(RunArgs, Option<VllmResult>), UsageError> {
    a.vllm.refuse()?;
    let mut o = a.clone();
    let (vllm, aiperf) = (a.vllm.given(), a.aiperf.given());
    target(&mut o, aiperf)?;
    url_endpoint(&mut o)?;
    endpoint(&mut o, vllm)?;
    stop_and_warmup(&mut o, vllm)?;
    dataset(&mut o, vllm)?;
    random_mm(&mut o)?;
    aiperf_lengths(&mut o)?;
    aiperf_media(&mut o)?;
    request(&mut o, vllm)?;
    tokenizer(&mut o)?;
    let result = vllm_result(a, &mut o)?;
    load(&mut o, vllm, aiperf)?;
    Ok((o, result))
}

/// `--base-url`, `--host`/`--port`, and AIPerf's scheme-less `--url`.
fn target(o: &mut RunArgs, aiperf: bool) -> Result<(), UsageError> {
    let v = &o.vllm;
    if let Some(url) = &v.base_url {
        o.url = vec![url.clone()];
    } else if v.host.is_some() || v.port.is_some() {
        let host = v.host.as_deref().unwrap_or("127.0.0.1");
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        o.url = vec![format!("http://{host}:{}", v.port.unwrap_or(8000))];
    }
    for url in o.url.iter_mut().filter(|u| aiperf && !u.contains("://")) {
        *url = format!("http://{url}");
    }
    Ok(())
}

/// `--url`s pasted with their endpoint path (`http://h:8000/v1/chat/completions`): each cut
/// to its base, and `--endpoint` set to the path's when not given (`url_note` says so). A
/// path that contradicts `--endpoint`, or URLs naming different endpoints, are refused.
fn url_endpoint(o: &mut RunArgs) -> Result<(), UsageError> {
    let mut named: Option<Endpoint> = None;
    for url in o.url.iter_mut() {
        let Some((base, e)) = ringbench::plan::split_endpoint_url(url) else {
            continue;
        };
        if let Some(given) = o.endpoint.filter(|&g| g != e) {
            return usage(format!(
                "--url {url} names {} but --endpoint says {}: give the server's base URL \
                 ({base}) and the endpoint with --endpoint",
                e.path(),
                given.path()
            ));
        }
        if named.is_some_and(|n| n != e) {
            return usage(format!(
                "--url: the URLs name different endpoints ({} and {}): one run calls one \
                 endpoint; give base URLs and --endpoint",
                named.map_or("", |n| n.path()),
                e.path()
            ));
        }
        named = Some(e);
        *url = base.to_string();
    }
    o.endpoint = o.endpoint.or(named);
    Ok(())
}

/// The one-line note for `--url`s given with their endpoint path: how they were read.
pub fn url_note(a: &RunArgs) -> Option<String> {
    let url = a
        .url
        .iter()
        .find(|u| ringbench::plan::split_endpoint_url(u).is_some())?;
    let (base, e) = ringbench::plan::split_endpoint_url(url)?;
    Some(format!(
        "--url {url}: read as --url {base} --endpoint {} (the base URL and the endpoint apart)",
        e.path()
    ))
}

/// vLLM's `--backend` name for an endpoint (its result file's `backend`).
fn vllm_backend(e: Endpoint) -> &'static str {
    match e {
        Endpoint::Chat => "openai-chat",
        Endpoint::Completions => "openai",
        Endpoint::Embeddings => "openai-embeddings",
        Endpoint::Rerank | Endpoint::Score | Endpoint::TeiRerank => "vllm-rerank",
        other => other.name(),
    }
}

/// `--endpoint` as a path, `--backend`, `--endpoint-type`; vLLM's default `/v1/completions`.
fn endpoint(o: &mut RunArgs, vllm: bool) -> Result<(), UsageError> {
    let backend = match o.vllm.backend.as_deref() {
        None => None,
        Some("openai" | "vllm") => Some(Endpoint::Completions),
        Some("openai-chat") => Some(Endpoint::Chat),
        Some("openai-embeddings") => Some(Endpoint::Embeddings),
        Some("vllm-rerank") => Some(Endpoint::Rerank),
        Some(other) => {
            return usage(format!(
                "--backend {other}: ringbench takes openai or vllm (/v1/completions), \
                 openai-chat (/v1/chat/completions), openai-embeddings (/v1/embeddings) or \
                 vllm-rerank (/v1/rerank); for the Responses and Messages APIs give --endpoint \
                 /v1/responses or /v1/messages"
            ))
        }
    };
    if let (Some(b), Some(e)) = (backend, o.endpoint) {
        if b != e {
            return usage(format!(
                "--backend {} calls {} but --endpoint says {}: give the endpoint of that \
                 backend, or leave --endpoint out",
                o.vllm.backend.as_deref().unwrap_or_default(),
                b.path(),
                e.path()
            ));
        }
    }
    let vllm_default = vllm.then_some(Endpoint::Completions);
    o.endpoint = o
        .endpoint
        .or(o.aiperf.endpoint_type)
        .or(backend)
        .or(vllm_default);
    if o.aiperf.given() && !o.aiperf.streaming {
        o.no_stream = true;
    }
    Ok(())
}

/// `--num-prompts` (vLLM's 1000 by default), `--num-warmups`, `--warmup-request-count`,
/// `--disable-tqdm`, `--artifact-dir`, `--random-seed` is clap's alias.
fn stop_and_warmup(o: &mut RunArgs, vllm: bool) -> Result<(), UsageError> {
    if o.vllm.num_prompts == Some(0) {
        return usage("--num-prompts 0: must be at least 1");
    }
    if let Some(n) = o.vllm.num_prompts {
        o.request_count = Some(n);
    } else if vllm && o.request_count.is_none() && o.duration.is_none() {
        o.request_count = Some(VLLM_NUM_PROMPTS);
    }
    if let Some(n) = o.vllm.num_warmups.or(o.aiperf.warmup_request_count) {
        o.warmup_requests = n;
    }
    o.quiet |= o.vllm.disable_tqdm;
    if let Some(d) = &o.aiperf.artifact_dir {
        o.out = Some(d.clone());
    }
    Ok(())
}

/// `--dataset-name` and its length flags; vLLM's default is `random` at 1024/128 tokens with
/// `ignore_eos`.
fn dataset(o: &mut RunArgs, vllm: bool) -> Result<(), UsageError> {
    let v = o.vllm.clone();
    let name = match v.dataset_name.as_deref() {
        Some(n) => n,
        None if vllm && o.dataset.is_none() && o.trace.is_none() => "random",
        None => return Ok(()),
    };
    let path = || match &v.dataset_path {
        Some(p) => Ok(p.clone()),
        None => usage(format!(
            "--dataset-name {name} needs --dataset-path {} (the dataset's {})",
            if name == "hf" { "ORG/NAME" } else { "FILE" },
            if name == "hf" {
                "id, or a Parquet file or folder"
            } else {
                "file"
            }
        )),
    };
    match name {
        "random" | "random-mm" => {
            let prefix = v.random_prefix_len.unwrap_or(0);
            let len = v
                .random_input_len
                .or(o.input_tokens)
                .unwrap_or(VLLM_INPUT_LEN);
            o.input_tokens = Some(len.saturating_add(prefix));
            o.output_tokens = v
                .random_output_len
                .or(o.output_tokens)
                .or(Some(VLLM_OUTPUT_LEN));
            if prefix > 0 {
                (o.prefix_groups, o.prefix_tokens) = (Some(1), Some(prefix));
            }
            o.ignore_eos = true;
        }
        "sharegpt" => {
            o.dataset = Some(path()?);
            o.dataset_format = Some(ringbench::plan::workload::DatasetKind::Sharegpt);
            o.output_tokens = v.sharegpt_output_len.or(o.output_tokens);
        }
        "custom" => {
            o.dataset = Some(path()?);
            o.dataset_format = Some(ringbench::plan::workload::DatasetKind::Jsonl);
            let out = v.custom_output_len.or(o.output_tokens);
            o.output_tokens = out.or(Some(VLLM_CUSTOM_OUTPUT_LEN));
        }
        "hf" => {
            o.dataset = Some(path()?);
            o.dataset_format = Some(ringbench::plan::workload::DatasetKind::Hf);
            let out = v.hf_output_len.or(o.output_tokens);
            o.output_tokens = out.or(Some(VLLM_HF_OUTPUT_LEN));
        }
        "prefix_repetition" => {
            let prefix = v.prefix_repetition_prefix_len.unwrap_or(256);
            let suffix = v.prefix_repetition_suffix_len.unwrap_or(256);
            o.prefix_groups = Some(v.prefix_repetition_num_prefixes.unwrap_or(10));
            o.prefix_tokens = Some(prefix);
            o.input_tokens = Some(prefix.saturating_add(suffix));
            o.output_tokens = Some(v.prefix_repetition_output_len.unwrap_or(VLLM_OUTPUT_LEN));
        }
        other => {
            return usage(format!(
                "--dataset-name {other}: ringbench reads random, random-mm, sharegpt, custom \
                 (JSONL with a prompt field), prefix_repetition and hf (Parquet, from the local \
                 Hugging Face cache); for another file use --dataset PATH --dataset-format jsonl"
            ))
        }
    }
    Ok(())
}

/// vLLM's random-mm defaults: one item per request, no spread, 255 images at most, half
/// 256x256 and half 1280x720 images (its video bucket at probability 0).
const RANDOM_MM_BUCKETS: &str = "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5, (720, 1280, 16): 0.0}";
const RANDOM_MM_IMAGE_LIMIT: u64 = 255;

/// `--dataset-name random-mm`: random prompts (as `random`) with images as vLLM draws them —
/// a count uniform in `[floor(n(1−r)), min(limit, ceil(n(1+r)))]`, each image's size from
/// the buckets by their weights, JPEG as vLLM's `process_image` saves them.
fn random_mm(o: &mut RunArgs) -> Result<(), UsageError> {
    let v = o.vllm.clone();
    let given = [
        (
            "--random-mm-base-items-per-request",
            v.random_mm_base_items_per_request.is_some(),
        ),
        (
            "--random-mm-num-mm-items-range-ratio",
            v.random_mm_num_mm_items_range_ratio.is_some(),
        ),
        (
            "--random-mm-limit-mm-per-prompt",
            v.random_mm_limit_mm_per_prompt.is_some(),
        ),
        (
            "--random-mm-bucket-config",
            v.random_mm_bucket_config.is_some(),
        ),
    ];
    if v.dataset_name.as_deref() != Some("random-mm") {
        return match given.iter().find(|(_, g)| *g) {
            Some((flag, _)) => usage(format!("{flag} goes with --dataset-name random-mm")),
            None => Ok(()),
        };
    }
    let n = f64::from(v.random_mm_base_items_per_request.unwrap_or(1));
    let r = v.random_mm_num_mm_items_range_ratio.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&r) {
        return usage(format!(
            "--random-mm-num-mm-items-range-ratio {r}: must be in [0, 1]"
        ));
    }
    let limit = match &v.random_mm_limit_mm_per_prompt {
        None => RANDOM_MM_IMAGE_LIMIT,
        Some(json) => mm_image_limit(json)?,
    };
    let buckets = v
        .random_mm_bucket_config
        .as_deref()
        .unwrap_or(RANDOM_MM_BUCKETS);
    let sizes = mm_buckets(buckets)?;
    let hi = ((n * (1.0 + r)).ceil() as u64).min(limit);
    let lo = (n * (1.0 - r)).floor().max(0.0) as u64;
    if lo > hi {
        return usage(format!(
            "--random-mm-limit-mm-per-prompt: at most {hi} images, below the fewest drawn \
             ({lo}): raise the limit or lower --random-mm-base-items-per-request"
        ));
    }
    o.media.image_count = Some(format!("range:{lo}:{hi}"));
    o.media.image_size = Some(sizes);
    o.media.image_format = Some(ringbench::plan::workload::ImageFormat::Jpeg);
    Ok(())
}

/// `--random-mm-limit-mm-per-prompt`'s image cap (vLLM refuses a limit without `image`).
fn mm_image_limit(json: &str) -> Result<u64, UsageError> {
    let flag = "--random-mm-limit-mm-per-prompt";
    let m: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json)
        .map_err(|e| UsageError(format!("{flag} '{json}': not a JSON object ({e}), give like '{{\"image\": 3, \"video\": 0}}'")))?;
    match m.get("image").and_then(serde_json::Value::as_u64) {
        Some(n) => Ok(n),
        None => usage(format!(
            "{flag} '{json}': gives no image limit (a count), like '{{\"image\": 3, \"video\": 0}}'"
        )),
    }
}

/// `--random-mm-bucket-config`, a Python dict of `(height, width, frames): weight`, as our
/// `--image-size` list (`WxH:WEIGHT`): zero weights dropped, video (frames above 1) refused.
fn mm_buckets(dict: &str) -> Result<String, UsageError> {
    let flag = "--random-mm-bucket-config";
    let bad = |why: &str| {
        usage(format!(
            "{flag} '{dict}': {why} (give like '{{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}}': \
             (height, width, frames): weight)"
        ))
    };
    let flat: String = dict
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .collect();
    let Some(inner) = flat.strip_prefix('{').and_then(|f| f.strip_suffix('}')) else {
        return bad("not a dict");
    };
    let mut sizes = vec![];
    for item in inner.trim_end_matches(',').split(",(") {
        let Some((key, weight)) = item.trim_start_matches('(').split_once("):") else {
            return bad("an entry that is not (height, width, frames): weight");
        };
        let dims: Vec<u32> = key.split(',').filter_map(|d| d.parse().ok()).collect();
        let (Ok(w), &[h, wd, t]) = (weight.parse::<f64>(), &dims[..]) else {
            return bad("an entry that is not (height, width, frames): weight");
        };
        match (w, t) {
            (w, _) if !(w.is_finite() && w >= 0.0) => return bad("a weight below 0"),
            (0.0, _) => {}
            (_, 0) => return bad("0 frames"),
            (_, 1) => sizes.push(format!("{wd}x{h}:{w}")),
            (_, _) => {
                return usage(format!(
                    "{flag}: a video bucket ({h}, {wd}, {t}) with weight {w}: ringbench sends \
                     images and audio, not video; give buckets of 1 frame, or weight 0"
                ))
            }
        }
    }
    if sizes.is_empty() {
        return bad("no bucket of weight above 0");
    }
    Ok(sizes.join(","))
}

/// AIPerf's images and audio: images when both mean sides are above 0 (and
/// `--image-batch-size` is not 0), sides normal around them with their stddevs; audio when
/// `--audio-length-mean` is above 0, WAV only.
fn aiperf_media(o: &mut RunArgs) -> Result<(), UsageError> {
    let ai = o.aiperf.clone();
    // A normal spread is capped at what ringbench makes (8,192 px sides, 600 s clips).
    let spread = |mean: f64, sd: Option<f64>, flag: &str| match sd {
        Some(sd) if !(sd.is_finite() && sd >= 0.0) => usage(format!("{flag} {sd}: must be ≥ 0")),
        Some(sd) if sd > 0.0 => {
            let max = if flag.starts_with("--audio") {
                600
            } else {
                8192
            };
            Ok(format!("normal:{mean}:{sd}:{max}"))
        }
        _ => Ok(format!("{mean}")),
    };
    match (
        ai.image_width_mean,
        ai.image_height_mean,
        ai.image_batch_size,
    ) {
        (None, None, None) => {}
        (_, _, Some(0)) => {}
        (Some(w), Some(h), n) if w > 0.0 && h > 0.0 => {
            o.media.image_width = Some(spread(w, ai.image_width_stddev, "--image-width-stddev")?);
            o.media.image_height =
                Some(spread(h, ai.image_height_stddev, "--image-height-stddev")?);
            o.media.image_count = Some(n.unwrap_or(1).to_string());
        }
        _ => {
            return usage(
                "--image-width-mean and --image-height-mean: AIPerf makes images only when both \
                 are above 0 (give both, like --image-width-mean 512 --image-height-mean 512)",
            )
        }
    }
    match ai.audio_format.as_deref() {
        None | Some("wav") => {}
        Some(f) => {
            return usage(format!(
                "--audio-format {f}: ringbench sends WAV (16-bit PCM) only; an {f} encoder is not \
                 built in: give --audio-format wav"
            ))
        }
    }
    if let Some(rates) = &ai.audio_sample_rates {
        o.media.audio_sample_rates_hz = Some(khz_list(rates)?);
    }
    match (ai.audio_length_mean, ai.audio_batch_size) {
        (None, _) | (_, Some(0)) => Ok(()),
        (Some(l), n) if l > 0.0 => {
            o.media.audio_seconds =
                Some(spread(l, ai.audio_length_stddev, "--audio-length-stddev")?);
            o.media.audio_count = Some(n.unwrap_or(1));
            Ok(())
        }
        (Some(l), _) => usage(format!("--audio-length-mean {l}: give seconds above 0")),
    }
}

/// `--audio-sample-rates`: kHz, comma- or space-separated, as Hz.
fn khz_list(list: &str) -> Result<Vec<u32>, UsageError> {
    list.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<f64>() {
            Ok(k) if k.is_finite() && k > 0.0 => Ok((k * 1000.0).round() as u32),
            _ => usage(format!(
                "--audio-sample-rates {list}: give kHz like 16,44.1"
            )),
        })
        .collect()
}

/// `--synthetic-input-tokens-mean/-stddev`, `--output-tokens-mean/-stddev`.
fn aiperf_lengths(o: &mut RunArgs) -> Result<(), UsageError> {
    let ai = o.aiperf.clone();
    let normal = |flag: &str, mean_flag: &str, mean: Option<u32>, sd: Option<f64>| match (mean, sd)
    {
        (_, None) => Ok(None),
        (None, Some(_)) => usage(format!("{flag} needs {mean_flag} N (the mean it spreads)")),
        (Some(_), Some(sd)) if !(sd.is_finite() && sd >= 0.0) => {
            usage(format!("{flag} {sd}: must be a number of tokens ≥ 0"))
        }
        (Some(_), Some(0.0)) => Ok(None),
        (Some(m), Some(sd)) => Ok(Some(format!("normal:{m}:{sd}"))),
    };
    if ai.rankings_query_prompt_token_mean.is_some() {
        return usage(
            "--rankings-query-prompt-token-mean: ringbench draws the query and its documents \
             from one length: give --rankings-passages-prompt-token-mean (or --input-tokens) \
             alone",
        );
    }
    match ai.rankings_passages_stddev {
        None | Some(0.0) => {}
        Some(sd) => {
            return usage(format!(
                "--rankings-passages-stddev {sd}: every query gets --rankings-passages-mean \
                 documents (ringbench's --batch-size): give 0 or leave it out"
            ))
        }
    }
    o.api.batch_size = ai.rankings_passages_mean.or(o.api.batch_size);
    let isl = ai
        .synthetic_input_tokens_mean
        .or(ai.rankings_passages_prompt_token_mean);
    let osl = ai.output_tokens_mean;
    o.input_tokens = isl.or(o.input_tokens);
    o.output_tokens = osl.or(o.output_tokens);
    let m = "--synthetic-input-tokens-mean";
    let input = normal(
        "--synthetic-input-tokens-stddev",
        m,
        isl,
        ai.synthetic_input_tokens_stddev,
    )?;
    o.input_dist = input.or(o.input_dist.take());
    let m = "--output-tokens-mean";
    let output = normal("--output-tokens-stddev", m, osl, ai.output_tokens_stddev)?;
    o.output_dist = output.or(o.output_dist.take());
    Ok(())
}

/// vLLM's sampling flags into the body (under `--extra-body`, whose keys win, as vLLM
/// merges them), greedy by default, `--served-model-name`, `--metric-percentiles`,
/// `--request-id-prefix`.
fn request(o: &mut RunArgs, vllm: bool) -> Result<(), UsageError> {
    let v = o.vllm.clone();
    let sampling = [
        ("top_p", v.top_p.map(serde_json::Value::from)),
        ("top_k", v.top_k.map(serde_json::Value::from)),
        ("min_p", v.min_p.map(serde_json::Value::from)),
        (
            "frequency_penalty",
            v.frequency_penalty.map(serde_json::Value::from),
        ),
        (
            "presence_penalty",
            v.presence_penalty.map(serde_json::Value::from),
        ),
        (
            "repetition_penalty",
            v.repetition_penalty.map(serde_json::Value::from),
        ),
    ];
    let mut body = serde_json::Map::new();
    for (k, val) in sampling {
        if let Some(val) = val {
            body.insert(k.to_string(), val);
        }
    }
    if !body.is_empty() {
        if let Some(user) = &o.extra_body {
            match serde_json::from_str::<serde_json::Value>(user) {
                Ok(serde_json::Value::Object(m)) => body.extend(m),
                // Not an object: left for `--extra-body`'s own message.
                _ => return Ok(()),
            }
        }
        o.extra_body = Some(serde_json::Value::Object(body).to_string());
    }
    if vllm && o.temperature.is_none() {
        o.temperature = Some(0.0);
    }
    if let Some(name) = &v.served_model_name {
        o.model = Some(name.clone());
    }
    if let Some(list) = &v.metric_percentiles {
        o.percentiles = Some(number_list("--metric-percentiles", list, "50,90,99")?);
    }
    if let Some(p) = &v.request_id_prefix {
        let id = p.trim_end_matches('-');
        if let Err(e) = ringbench::plan::RunId::new(id) {
            return usage(format!("--request-id-prefix {p}: {e}"));
        }
        o.run_id = Some(id.to_string());
    }
    Ok(())
}

fn number_list(flag: &str, list: &str, like: &str) -> Result<Vec<f64>, UsageError> {
    list.split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|ps| ps.iter().all(|p| p.is_finite() && *p > 0.0 && *p <= 100.0))
        .map_or_else(
            || {
                usage(format!(
                    "{flag} {list}: give percentiles in (0, 100], like {like}"
                ))
            },
            Ok,
        )
}

/// `--tokenizer`: a local `tokenizer.json`, or a folder holding one (vLLM and AIPerf take a
/// model's folder); a name that is neither (a hub id) is refused: nothing is downloaded.
fn tokenizer(o: &mut RunArgs) -> Result<(), UsageError> {
    let Some(t) = o.tokenizer.clone() else {
        return Ok(());
    };
    if t.is_dir() {
        let file = t.join("tokenizer.json");
        if !file.is_file() {
            return usage(format!(
                "--tokenizer {}: the folder holds no tokenizer.json (ringbench reads Hugging \
                 Face's tokenizer.json only)",
                t.display()
            ));
        }
        o.tokenizer = Some(file);
    } else if !t.exists() && t.extension().is_none_or(|e| e != "json") {
        return usage(format!(
            "--tokenizer {}: no such file or folder here, and ringbench downloads nothing: \
             give the path of a local tokenizer.json (for a hub model, fetch it first, e.g. \
             `huggingface-cli download {} tokenizer.json`)",
            t.display(),
            t.display()
        ));
    }
    Ok(())
}

/// `--save-result` with its setup keys, at vLLM's path; ringbench's own files go beside it
/// in a folder of the file's name, unless `--out` says where.
fn vllm_result(a: &RunArgs, o: &mut RunArgs) -> Result<Option<VllmResult>, UsageError> {
    let v = &a.vllm;
    if !v.save_result {
        return Ok(None);
    }
    let rate = a.request_rate.filter(|r| r.is_finite());
    let endpoint = o.endpoint.unwrap_or(Endpoint::Chat);
    let backend = v
        .backend
        .clone()
        .unwrap_or_else(|| vllm_backend(endpoint).into());
    let name = match &v.result_filename {
        Some(n) => n.clone(),
        None => vllm_file_name(v.label.as_deref().unwrap_or(&backend), a, rate)?,
    };
    let dir = v.result_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let path = dir.join(&name);
    if o.out.is_none() {
        let stem = Path::new(&name).file_stem().unwrap_or_default();
        o.out = Some(dir.join(stem));
    }
    // vLLM's default: `e2el` for a pooling task (the one metric it has), else these.
    let default = if endpoint.generates() {
        "ttft,tpot,itl"
    } else {
        "e2el"
    };
    let metrics = v.percentile_metrics.as_deref().unwrap_or(default);
    Ok(Some(VllmResult {
        path,
        detailed: v.save_detailed,
        metrics: metrics.split(',').map(|m| m.trim().to_string()).collect(),
        metadata: key_values("--metadata", &v.metadata)?,
        backend,
        label: v.label.clone(),
        model_id: a.model.clone(),
        tokenizer_id: a
            .tokenizer
            .as_ref()
            .map(|t| t.display().to_string())
            .or(a.model.clone()),
        num_prompts: o.request_count,
        request_rate: rate,
        burstiness: a.burstiness.unwrap_or(1.0),
        max_concurrency: a.max_concurrency,
    }))
}

/// vLLM's `{label}-{rate}qps[-concurrency{N}]-{model's last part}-{YYYYmmdd-HHMMSS}.json`,
/// the rate as Python prints a float (`500.0`, `inf`), the time now (UTC).
fn vllm_file_name(label: &str, a: &RunArgs, rate: Option<f64>) -> Result<String, UsageError> {
    let Some(model) = &a.model else {
        return usage(
            "--save-result names its file after --model: give --model NAME, or \
             --result-filename NAME",
        );
    };
    let model = model
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(model);
    let rate = match rate {
        None => "inf".to_string(),
        Some(r) if r.fract() == 0.0 && r.abs() < 1e16 => format!("{r:.1}"),
        Some(r) => format!("{r}"),
    };
    let conc = a
        .max_concurrency
        .map_or(String::new(), |n| format!("-concurrency{n}"));
    let now: String = ringbench::host::rfc3339_now()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let (day, time) = now.split_at(8.min(now.len()));
    Ok(format!("{label}-{rate}qps{conc}-{model}-{day}-{time}.json"))
}

fn key_values(flag: &str, items: &[String]) -> Result<Vec<(String, String)>, UsageError> {
    items
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().into(), v.trim().into())),
            _ => usage(format!(
                "{flag} '{s}': expected KEY=VALUE, like {flag} tp=1"
            )),
        })
        .collect()
}

/// `--request-rate inf` (vLLM's default with its spellings): every request at once, as a
/// closed loop of `--max-concurrency` users (or one per request); AIPerf's `--concurrency`
/// beside `--request-rate` is the open loop's cap.
fn load(o: &mut RunArgs, vllm: bool, aiperf: bool) -> Result<(), UsageError> {
    if o.trace.is_some() {
        return Ok(());
    }
    if vllm && o.request_rate.is_none() && o.concurrency.is_none() {
        o.request_rate = Some(f64::INFINITY);
    }
    if aiperf && o.request_rate.is_some() && o.max_concurrency.is_none() {
        o.max_concurrency = o.concurrency.take();
    }
    if o.request_rate != Some(f64::INFINITY) {
        return Ok(());
    }
    if o.max_concurrency == Some(0) {
        return usage("--max-concurrency 0: must be at least 1");
    }
    let users = match (o.max_concurrency, o.request_count) {
        (Some(m), Some(n)) => m.min(u32::try_from(n).unwrap_or(u32::MAX)),
        (Some(m), None) => m,
        (None, Some(n)) => u32::try_from(n).unwrap_or(u32::MAX),
        (None, None) => {
            return usage(
                "--request-rate inf sends every request at once: give --max-concurrency N \
                 (that many users) or --num-prompts N",
            )
        }
    };
    if o.concurrency.is_some() {
        return usage("--request-rate inf with --concurrency: give --max-concurrency N instead");
    }
    o.concurrency = Some(users);
    (o.request_rate, o.max_concurrency, o.burstiness, o.arrival) = (None, None, None, None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{How, TABLE};
    use crate::cli::run_args::tests::plan;
    use ringbench::plan::workload::{DatasetKind, LengthDist};
    use ringbench::plan::{Arrival, Endpoint, Load, Plan};

    /// The issue's vLLM line (a perf lab's `tools/`), `rate` and the rest as given.
    fn vllm_line(rate: &[&'static str]) -> Vec<&'static str> {
        let mut line = vec![
            "--backend",
            "openai-chat",
            "--endpoint",
            "/v1/chat/completions",
            "--base-url",
            "http://127.0.0.1:8000",
            "--model",
            "M",
            "--tokenizer",
            "/x/tokenizer.json",
            "--dataset-name",
            "random",
            "--random-input-len",
            "100",
            "--random-output-len",
            "16",
            "--num-prompts",
            "2000",
        ];
        line.extend_from_slice(rate);
        line.extend([
            "--ignore-eos",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--metric-percentiles",
            "50,99",
            "--save-result",
            "--result-dir",
            "/tmp/ringbench-compat-d",
            "--result-filename",
            "raw.json",
            "--seed",
            "1",
        ]);
        line
    }

    #[test]
    fn other_apis_by_vllms_and_aiperfs_names() {
        let p = plan(&["--backend", "openai-embeddings", "--base-url", "http://h:1"]).unwrap();
        assert_eq!((p.endpoint, p.stream), (Endpoint::Embeddings, false));
        let p = plan(&["--backend", "vllm-rerank", "--base-url", "http://h:1"]).unwrap();
        assert_eq!(p.endpoint, Endpoint::Rerank);
        // vLLM's default percentile metrics: e2el for a pooling task, ttft,tpot,itl else.
        for (backend, want) in [
            ("openai-embeddings", vec!["e2el"]),
            ("vllm-rerank", vec!["e2el"]),
            ("openai-chat", vec!["ttft", "tpot", "itl"]),
        ] {
            let line = [
                "--backend",
                backend,
                "--base-url",
                "http://h:1",
                "--save-result",
                "--result-filename",
                "r.json",
            ];
            let p = plan(&line).unwrap();
            assert_eq!(p.vllm_result.unwrap().metrics, want, "{backend}");
        }
        let p = plan(&["--endpoint", "/v1/messages", "--base-url", "http://h:1"]).unwrap();
        assert_eq!(p.endpoint, Endpoint::Messages);
        let p = plan(&[
            "--endpoint-type",
            "rankings",
            "--rankings-passages-mean",
            "8",
            "--rankings-passages-prompt-token-mean",
            "64",
        ])
        .unwrap();
        assert_eq!(
            (p.endpoint, p.api.batch_size, p.input_tokens),
            (Endpoint::Rerank, 8, 64)
        );
        let p = plan(&["--endpoint-type", "hf_tei_rankings"]).unwrap();
        assert_eq!(p.endpoint, Endpoint::TeiRerank);
        let e = plan(&[
            "--endpoint-type",
            "rankings",
            "--rankings-passages-stddev",
            "2",
        ]);
        assert!(e.unwrap_err().contains("--rankings-passages-stddev"));
        let e = plan(&["--backend", "openai-audio"]).unwrap_err();
        assert!(
            e.contains("openai-embeddings") && e.contains("/v1/responses"),
            "{e}"
        );
        let e = plan(&["--endpoint", "chat", "--batch-size", "4"]).unwrap_err();
        assert!(
            e.contains("--batch-size") && e.contains("embeddings"),
            "{e}"
        );
    }

    #[test]
    fn every_row_of_the_table_parses() {
        for row in TABLE {
            let got = plan(row.example);
            match row.how {
                How::Refused => {
                    let e = got.expect_err(row.flag);
                    assert!(e.contains(row.flag), "{}: {e}", row.flag);
                }
                _ => {
                    if let Err(e) = got {
                        panic!("{} {:?}: {e}", row.flag, row.example)
                    }
                }
            }
            assert!(row.example.contains(&row.flag), "{}'s example", row.flag);
        }
    }

    #[test]
    fn the_issue_lines_resolve_with_vllm_meaning() {
        let p = plan(&vllm_line(&["--request-rate", "500"])).unwrap();
        assert_eq!(p.endpoint, Endpoint::Chat);
        assert_eq!(p.targets[0].port, 8000);
        assert_eq!(p.model.as_deref(), Some("M"));
        assert_eq!(p.stop.request_count, Some(2000));
        assert_eq!(
            p.load,
            Load::Open {
                request_rate: 500.0,
                arrival: Arrival::Poisson,
                max_concurrency: None
            }
        );
        assert_eq!((p.input_tokens, p.output_tokens), (100, 16));
        assert!(p.workload.request.ignore_eos);
        assert_eq!(p.workload.request.temperature, Some(0.0), "vLLM's greedy");
        assert_eq!(p.percentiles, vec![50.0, 99.0]);
        assert_eq!(p.seed, 1);
        let v = p.vllm_result.as_ref().unwrap();
        assert_eq!(v.path.to_str(), Some("/tmp/ringbench-compat-d/raw.json"));
        assert_eq!(v.metrics, ["ttft", "tpot", "itl", "e2el"]);
        assert_eq!(
            (v.backend.as_str(), v.num_prompts, v.request_rate),
            ("openai-chat", Some(2000), Some(500.0))
        );
        assert_eq!(v.tokenizer_id.as_deref(), Some("/x/tokenizer.json"));
        assert!(!v.detailed);
        assert_eq!(
            p.out_dir.as_deref().and_then(|d| d.to_str()),
            Some("/tmp/ringbench-compat-d/raw")
        );
        let p = plan(&vllm_line(&[
            "--request-rate",
            "inf",
            "--max-concurrency",
            "64",
        ]))
        .unwrap();
        assert_eq!(p.load, Load::Closed { concurrency: 64 });
        assert_eq!(p.stop.request_count, Some(2000));
        let v = p.vllm_result.unwrap();
        assert_eq!((v.request_rate, v.max_concurrency), (None, Some(64)));
    }

    #[test]
    fn vllm_defaults_apply_to_vllm_lines_only() {
        let p = plan(&["--base-url", "http://h:8000/v1", "--model", "m"]).unwrap();
        assert_eq!(p.stop.request_count, Some(1000));
        assert_eq!(p.load, Load::Closed { concurrency: 1000 }, "inf, no cap");
        assert_eq!(p.endpoint, Endpoint::Completions, "vLLM's backend openai");
        assert_eq!((p.input_tokens, p.output_tokens), (1024, 128));
        assert!(p.workload.request.ignore_eos);
        let t = &p.targets[0];
        assert_eq!((t.host.as_str(), t.base_path.as_str()), ("h", ""));
        let ours = plan(&["--url", "http://h:8000"]).unwrap();
        let d = Plan::defaults();
        assert_eq!(ours.stop.request_count, Some(100));
        assert_eq!(ours.load, Load::Closed { concurrency: 1 });
        assert_eq!(ours.endpoint, Endpoint::Chat);
        assert_eq!(
            (ours.input_tokens, ours.output_tokens),
            (d.input_tokens, 16)
        );
        assert!(!ours.workload.request.ignore_eos);
        assert_eq!(ours.workload.request.temperature, None);
        let p = plan(&["--base-url", "http://h", "--duration", "5s"]).unwrap_err();
        assert!(
            p.contains("--request-rate inf") && p.contains("--max-concurrency"),
            "{p}"
        );
        let p = plan(&[
            "--num-prompts",
            "10",
            "--request-rate",
            "inf",
            "--max-concurrency",
            "64",
        ]);
        assert_eq!(
            p.unwrap().load,
            Load::Closed { concurrency: 10 },
            "never more users than prompts"
        );
    }

    #[test]
    fn vllm_rows_map_as_the_table_says() {
        let p = plan(&["--host", "10.0.0.1", "--port", "9000", "--backend", "vllm"]).unwrap();
        assert_eq!(p.targets[0].url, "http://10.0.0.1:9000");
        assert_eq!(p.endpoint, Endpoint::Completions);
        let p = plan(&["--port", "8001"]).unwrap();
        assert_eq!(p.targets[0].url, "http://127.0.0.1:8001");
        assert_eq!(
            plan(&["--endpoint", "completions"]).unwrap().endpoint,
            Endpoint::Completions
        );
        let p = plan(&[
            "--model",
            "org/big",
            "--served-model-name",
            "big",
            "--save-result",
        ])
        .unwrap();
        assert_eq!(p.model.as_deref(), Some("big"));
        let v = p.vllm_result.unwrap();
        assert_eq!(v.model_id.as_deref(), Some("org/big"));
        let name = v.path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with("openai-infqps-big-") && name.ends_with(".json"),
            "{name}"
        );
        let stamp = &name["openai-infqps-big-".len()..name.len() - 5];
        assert!(stamp.len() == 15 && stamp.as_bytes()[8] == b'-', "{stamp}");
        let p = plan(&["--header", "x-a=1", "x-b:2=3", "--header", "Y=4"]).unwrap();
        let h: Vec<(&str, &str)> = p
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(h, [("x-a", "1"), ("x-b", "2=3"), ("Y", "4")]);
        let p = plan(&[
            "--top-p",
            "0.9",
            "--top-k",
            "5",
            "--extra-body",
            r#"{"top_k": 7, "x": 1}"#,
        ]);
        let body = p.unwrap().workload.request.extra_body.unwrap();
        assert_eq!(
            (
                body["top_p"].as_f64(),
                body["top_k"].as_i64(),
                body["x"].as_i64()
            ),
            (Some(0.9), Some(7), Some(1))
        );
        let p = plan(&[
            "--dataset-name",
            "prefix_repetition",
            "--prefix-repetition-num-prefixes",
            "4",
        ])
        .unwrap();
        let pre = p.workload.prefix.as_ref().unwrap();
        assert_eq!(
            (pre.groups, pre.tokens, p.input_tokens, p.output_tokens),
            (4, 256, 512, 128)
        );
        let p = plan(&["--random-input-len", "100", "--random-prefix-len", "30"]).unwrap();
        let pre = p.workload.prefix.as_ref().unwrap();
        assert_eq!((pre.groups, pre.tokens, p.input_tokens), (1, 30, 130));
        let p = plan(&["--dataset-name", "sharegpt", "--dataset-path", "d.json"]).unwrap();
        assert_eq!(p.workload.dataset.unwrap().kind, DatasetKind::Sharegpt);
        assert!(p.workload.output.is_none(), "the answers' lengths");
        let p = plan(&["--dataset-name", "custom", "--dataset-path", "d.jsonl"]).unwrap();
        assert_eq!(p.workload.dataset.unwrap().kind, DatasetKind::Jsonl);
        assert_eq!(p.workload.output, Some(LengthDist::Fixed { tokens: 256 }));
        let p = plan(&[
            "--num-warmups",
            "3",
            "--disable-tqdm",
            "--request-id-prefix",
            "bench-ab12-",
        ])
        .unwrap();
        assert_eq!(
            (p.warmup_requests, p.progress, p.run_id.as_deref()),
            (3, false, Some("bench-ab12"))
        );
        let p = plan(&["--request-rate", "5", "--burstiness", "0.5"]).unwrap();
        assert!(
            matches!(p.load, Load::Open { arrival: Arrival::Gamma { burstiness }, .. } if burstiness == 0.5)
        );
        let p = plan(&[
            "--save-result",
            "--result-filename",
            "r.json",
            "--metadata",
            "tp=1",
            "v=a=b",
        ])
        .unwrap();
        let v = p.vllm_result.unwrap();
        assert_eq!(
            v.metadata,
            [("tp".into(), "1".into()), ("v".into(), "a=b".into())]
        );
        assert_eq!(v.metrics, ["ttft", "tpot", "itl"], "vLLM's default");
        assert_eq!(v.path.to_str(), Some("./r.json"));
    }

    #[test]
    fn aiperf_rows_map_as_the_table_says() {
        let p = plan(&[
            "--url",
            "localhost:8000",
            "--endpoint-type",
            "completions",
            "--concurrency",
            "8",
            "--request-rate",
            "20",
        ])
        .unwrap();
        assert_eq!(p.targets[0].url, "http://localhost:8000");
        assert_eq!(p.endpoint, Endpoint::Completions);
        assert!(!p.stream, "AIPerf streams only with --streaming");
        assert!(
            matches!(p.load, Load::Open { request_rate, max_concurrency: Some(8), .. } if request_rate == 20.0)
        );
        let p = plan(&[
            "--endpoint-type",
            "chat",
            "--streaming",
            "--isl",
            "200",
            "--synthetic-input-tokens-stddev",
            "20",
            "--osl",
            "50",
            "--output-tokens-stddev",
            "0",
            "--warmup-request-count",
            "2",
            "--artifact-dir",
            "/tmp/a",
            "--random-seed",
            "7",
            "--model-names",
            "m",
        ])
        .unwrap();
        assert!(p.stream);
        assert_eq!(
            p.workload.input,
            Some(LengthDist::parse("--input-dist", "normal:200:20").unwrap())
        );
        assert_eq!(
            (p.input_tokens, p.output_tokens, p.workload.output.clone()),
            (200, 50, Some(LengthDist::Fixed { tokens: 50 }))
        );
        assert_eq!(
            (p.warmup_requests, p.seed, p.model.as_deref()),
            (2, 7, Some("m"))
        );
        assert_eq!(
            p.out_dir.as_deref().and_then(|d| d.to_str()),
            Some("/tmp/a")
        );
        assert_eq!(
            plan(&["--request-count", "9"]).unwrap().stop.request_count,
            Some(9)
        );
    }

    #[test]
    fn bad_values_name_the_flag_and_the_fix() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["--backend", "tgi"], &["--backend tgi", "openai-chat"]),
            (
                &["--backend", "openai-chat", "--endpoint", "/v1/completions"],
                &["--backend", "--endpoint"],
            ),
            (
                &["--endpoint", "/v2/generate"],
                &["--endpoint", "/v1/chat/completions"],
            ),
            (
                &["--dataset-name", "sonnet"],
                &["--dataset-name sonnet", "--dataset PATH"],
            ),
            (&["--dataset-name", "sharegpt"], &["--dataset-path"]),
            (
                &["--tokenizer", "meta-llama/Llama-3.1-8B"],
                &["--tokenizer", "downloads nothing", "tokenizer.json"],
            ),
            (&["--tokenizer", "gpt2"], &["--tokenizer gpt2"]),
            (
                &["--metric-percentiles", "50,101"],
                &["--metric-percentiles", "like 50,90,99"],
            ),
            (
                &[
                    "--save-result",
                    "--model",
                    "m",
                    "--percentile-metrics",
                    "ttft,foo",
                ],
                &["--percentile-metrics", "foo"],
            ),
            (
                &[
                    "--save-result",
                    "--result-filename",
                    "r.json",
                    "--metadata",
                    "novalue",
                ],
                &["--metadata", "KEY=VALUE"],
            ),
            (&["--save-result"], &["--model", "--result-filename"]),
            (
                &["--request-rate", "inf", "--duration", "5s"],
                &["--max-concurrency"],
            ),
            (
                &["--synthetic-input-tokens-stddev", "5"],
                &["--synthetic-input-tokens-mean"],
            ),
            (
                &["--request-id-prefix", "has space"],
                &["--request-id-prefix"],
            ),
            (
                &["--max-concurrency", "3"],
                &["--max-concurrency", "--request-rate"],
            ),
            (
                &["--concurrency", "2", "--request-rate", "5"],
                &["--max-concurrency"],
            ),
            (&["--header", "novalue"], &["--header", "NAME=VALUE"]),
            (&["--num-prompts", "0"], &["--num-prompts 0", "at least 1"]),
            (
                &[
                    "--request-rate",
                    "inf",
                    "--max-concurrency",
                    "0",
                    "--num-prompts",
                    "5",
                ],
                &["--max-concurrency 0"],
            ),
        ];
        for (args, wants) in cases {
            let e = plan(args).unwrap_err();
            for w in *wants {
                assert!(e.contains(w), "{args:?}: {e}");
            }
        }
        // Both tools' spelling and ours of one setting: clap's conflict (exit 2), naming both.
        let e = plan(&["--num-prompts", "5", "--request-count", "5"]).unwrap_err();
        assert!(
            e.contains("--num-prompts") && e.contains("--request-count"),
            "{e}"
        );
        let e = plan(&["--base-url", "http://a", "--url", "http://b"]).unwrap_err();
        assert!(e.contains("--base-url") && e.contains("--url"), "{e}");
    }

    #[test]
    fn ignored_flags_are_named_in_one_warning() {
        use crate::cli::{Cli, Command};
        use clap::Parser;
        let cli =
            Cli::try_parse_from(["ringbench", "run", "--profile", "--trust-remote-code"]).unwrap();
        let Command::Run(run) = cli.command else {
            panic!()
        };
        let w = run.vllm.ignored_warning().unwrap();
        assert!(
            w.contains("--profile") && w.contains("--trust-remote-code"),
            "{w}"
        );
        assert!(!w.contains('\n'));
        let cli = Cli::try_parse_from(["ringbench", "run", "--base-url", "http://h"]).unwrap();
        let Command::Run(run) = cli.command else {
            panic!()
        };
        assert_eq!(run.vllm.ignored_warning(), None);
    }

    /// `docs/drop-in.md`'s table, made from `TABLE`.
    fn markdown() -> String {
        let mut t =
            String::from("| tool | flag | ringbench | what it becomes |\n|---|---|---|---|\n");
        for r in TABLE {
            let how = match r.how {
                How::Same => "as is",
                How::Mapped => "mapped",
                How::Ignored => "accepted, ignored",
                How::Refused => "refused",
            };
            t.push_str(&format!(
                "| {} | `{}` | {how} | {} |\n",
                r.tool,
                r.flag,
                r.note.replace('|', "\\|")
            ));
        }
        t
    }

    #[test]
    fn the_drop_in_table_is_the_table() {
        let page = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/drop-in.md");
        let page = std::fs::read_to_string(page).unwrap();
        if std::env::var_os("RINGBENCH_PRINT_TABLE").is_some() {
            println!("{}", markdown());
        }
        assert!(page.contains(&markdown()), "docs/drop-in.md's compatibility table differs from compat::TABLE (`RINGBENCH_PRINT_TABLE=1 cargo test --release --bin ringbench the_drop_in_table -- --nocapture` prints it)");
    }
}
