//! Part of the CLI (the binary's first layer: raw flags → `Plan`): the flags of `vllm bench
//! serve` and `aiperf profile` that `run` accepts (`VllmFlags`, `AiperfFlags`, held by
//! `RunArgs`) and `TABLE`, every flag of both tools with what becomes of it. What they mean
//! in ringbench's terms is `compat::lower`'s. A leaf of `cli`: it names no other flags file
//! but `heading`.

use super::{usage, UsageError};
use clap::Args;
use ringbench::plan::Endpoint;
use std::path::PathBuf;

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
    pub(super) fn refuse(&self) -> Result<(), UsageError> {
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
