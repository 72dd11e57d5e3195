//! Part of the CLI (the binary's first layer: raw flags → `Plan`): the spellings of
//! `vllm bench serve` and `aiperf profile` that `run` accepts, so a line written for either
//! tool runs with its own meaning, and the one place that meaning is mapped onto ours.
//! `lower` turns them into ringbench's own raw flags (the same `RunArgs`, its fields set as
//! ours would have set them), plus vLLM's result file, which no flag of ours names; the rest
//! is `RunArgs::to_plan`'s and `Plan::validate`'s. Where vLLM's defaults differ from ours
//! (1,000 prompts, `--request-rate inf`, `/v1/completions`, random 1024/128 tokens, greedy,
//! `ignore_eos` for random prompts) they apply when the line uses any vLLM-only spelling.
//! `compat_flags::TABLE` lists every flag of both tools with what becomes of it
//! (`docs/drop-in.md`'s table is made from it, and each row has a parse test). The plan's two
//! entry points, `RunArgs::to_plan` and `run_plan`, are here: lowering is their first step. Nothing here prints: the flags accepted and
//! ignored are named in one warning `ignored_warning` returns for `main`.

use super::run_args::{DEMO_DURATION_NS, DEMO_ITL_MS, DEMO_OUTPUT_TOKENS, DEMO_RATE, DEMO_TTFT_MS};
use super::{usage, RunArgs, UsageError};
use ringbench::plan::{Endpoint, Plan, VllmResult};
use std::path::{Path, PathBuf};

/// vLLM's defaults, used with its spellings.
const VLLM_NUM_PROMPTS: u64 = 1000;
const VLLM_INPUT_LEN: u32 = 1024;
const VLLM_OUTPUT_LEN: u32 = 128;
const VLLM_CUSTOM_OUTPUT_LEN: u32 = 256;
/// vLLM's `max_tokens` for hf datasets (its VisionArena loader's).
const VLLM_HF_OUTPUT_LEN: u32 = 128;

impl RunArgs {
    /// The plan these flags ask for, validated: vLLM's and AIPerf's spellings lowered to ours
    /// first (`compat::lower`), then ours mapped.
    pub fn to_plan(&self) -> Result<Plan, UsageError> {
        let (ours, vllm_result) = lower(self)?;
        match ours.sessions_lowered()? {
            Some(lowered) => lowered.plan_of(vllm_result),
            None => ours.plan_of(vllm_result),
        }
    }

    /// `ringbench run`'s plan: `to_plan`, or the demo's when the line (and `--config`'s file)
    /// gives no URL and no flag of load, stop or simulator; the flag says which.
    pub fn run_plan(&self) -> Result<(Plan, bool), UsageError> {
        if !self.is_demo() {
            return Ok((self.to_plan()?, false));
        }
        let mut demo = self.clone();
        demo.request_rate = Some(DEMO_RATE);
        demo.duration = Some(DEMO_DURATION_NS);
        demo.output_tokens = demo.output_tokens.or(Some(DEMO_OUTPUT_TOKENS));
        demo.sim.ttft_ms = DEMO_TTFT_MS;
        demo.sim.itl_ms = DEMO_ITL_MS;
        Ok((demo.to_plan()?, true))
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
    let endpoint = o.endpoint.unwrap_or(super::defaults::plan().endpoint);
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
    use crate::cli::compat_flags::{How, TABLE};
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
