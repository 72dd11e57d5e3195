//! Part of the CLI (raw flags → `Plan`): the workload flags `RunArgs` holds in groups of their
//! own — the Hugging Face dataset's (`HfFlags`) and the synthetic media's (`MediaFlags`, made
//! a `MediaSpec` here) — and a trace's stop; `run_args` turns the rest of the workload flags
//! and `--trace` into the plan's `WorkloadSpec` and load. A leaf of `cli`: it names no other
//! flags file but `heading`. Files are read by `prepare` before the run (the trace, which *is*
//! the load, is read and checked once by `run_args`). A bad flag is a `UsageError` naming it
//! and the fix (exit code 2); rules between settings are `Plan::validate`'s.

use super::heading as h;
use super::{usage, UsageError};
use clap::Args;
use ringbench::plan::workload::LengthDist;
use ringbench::plan::workload::{ImageFormat, ImageSize, MediaSpec, MAX_IMAGE_SIDE, MAX_LENGTH};

/// Synthetic images and audio sent with every prompt (`--image-*`, `--audio-*`).
#[derive(Debug, Clone, Default, Args)]
pub struct MediaFlags {
    /// Synthetic images per request: N or a distribution [default: none]
    ///
    /// N, or as --input-dist (range:LO:HI may start at 0). Random pixels made from --seed
    /// before the run, a few of them rewritten per request so no two requests send the same
    /// image (see --no-media-salt); sent as image_url parts (chat), input_image (responses)
    /// or image blocks (messages).
    #[arg(long, value_name = "SPEC", help_heading = h::WORKLOAD)]
    pub image_count: Option<String>,
    /// Image sizes, like 1024x1024:3,512x512:1 [default: 512x512]
    #[arg(long, value_name = "LIST", conflicts_with_all = ["image_width", "image_height"], help_heading = h::WORKLOAD)]
    pub image_size: Option<String>,
    /// Image widths, px, as --input-dist (with --image-height)
    #[arg(long, value_name = "SPEC", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub image_width: Option<String>,
    /// Image heights, px, as --input-dist (with --image-width)
    #[arg(long, value_name = "SPEC", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub image_height: Option<String>,
    /// png, jpeg, or random per image [default: png]
    ///
    /// png: the pixels stored uncompressed (random pixels do not compress); jpeg: baseline,
    /// quality 75, 4:2:0 (PIL's defaults, as vLLM's random-mm sends).
    #[arg(long, value_enum, value_name = "FORMAT", hide_possible_values = true, help_heading = h::WORKLOAD)]
    pub image_format: Option<ImageFormat>,
    /// Synthetic WAV audio per request, seconds: N or a distribution
    ///
    /// N, or as --input-dist in seconds (normal:5:1.5): 16-bit mono noise at 16 kHz, sent
    /// as input_audio parts (chat only), a few samples rewritten per request.
    #[arg(long, value_name = "SPEC", help_heading = h::WORKLOAD)]
    pub audio_seconds: Option<String>,
    /// Audio clips per request (with --audio-seconds) [default: 1]
    #[arg(long, value_name = "N", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub audio_count: Option<u32>,
    /// Let images and audio repeat: no per-request pixel or sample salt
    ///
    /// Requests then cycle through the images built (the catalog keeps at most 256 MiB of
    /// them), and a server's multimodal cache may serve them.
    #[arg(long, alias = "no-image-salt", help_heading = h::WORKLOAD)]
    pub no_media_salt: bool,
    /// AIPerf's `--audio-sample-rates`, Hz (`compat::lower` sets it).
    #[arg(skip)]
    pub audio_sample_rates_hz: Option<Vec<u32>>,
}

/// A Hugging Face dataset's part and columns (`--dataset ORG/NAME --dataset-format hf`, or
/// vLLM's `--dataset-name hf --dataset-path ORG/NAME`), spelled as vLLM spells them.
#[derive(Debug, Clone, Default, Args)]
pub struct HfFlags {
    /// Hugging Face dataset: the split to read (train, test…) [the only one it has]
    #[arg(long, value_name = "SPLIT", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub hf_split: Option<String>,
    /// Hugging Face dataset: the subset (config) to read [default, or the only one]
    #[arg(long, value_name = "NAME", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub hf_subset: Option<String>,
    /// Hugging Face dataset: the prompt's column [conversation, conversations, messages,
    /// prompt, text or instruction]
    #[arg(long, value_name = "COLUMN", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub hf_prompt_column: Option<String>,
    /// Hugging Face dataset: the images' column [images or image, when there is one]
    #[arg(long, value_name = "COLUMN", hide_short_help = true, help_heading = h::WORKLOAD)]
    pub hf_image_column: Option<String>,
}

/// `--image-*` and `--audio-*`: any image flag asks for one image per request unless
/// `--image-count` says how many.
pub fn media_of(f: &MediaFlags) -> Result<MediaSpec, UsageError> {
    let mut m = MediaSpec {
        salt: !f.no_media_salt,
        ..MediaSpec::default()
    };
    let count = |s: &str| LengthDist::parse_count("--image-count", s).map_err(UsageError);
    m.image_count = f.image_count.as_deref().map(count).transpose()?;
    let any_image = f.image_size.is_some() || f.image_width.is_some() || f.image_height.is_some();
    if m.image_count.is_none() && (any_image || f.image_format.is_some()) {
        m.image_count = Some(LengthDist::Fixed { tokens: 1 });
    }
    m.image_format = f.image_format.unwrap_or_default();
    if let Some(list) = &f.image_size {
        m.image_size = ImageSize::parse("--image-size", list).map_err(UsageError)?;
    }
    match (&f.image_width, &f.image_height) {
        (Some(w), Some(h)) => {
            m.image_size = ImageSize::Drawn {
                width: side("--image-width", w)?,
                height: side("--image-height", h)?,
            }
        }
        (Some(_), None) => {
            return usage("--image-width needs --image-height (or give --image-size WxH)")
        }
        (None, Some(_)) => {
            return usage("--image-height needs --image-width (or give --image-size WxH)")
        }
        (None, None) => {}
    }
    if let Some(s) = &f.audio_seconds {
        let ms = LengthDist::parse_in("--audio-seconds", s, 1, 1000.0).map_err(UsageError)?;
        m.audio_ms = Some(ms);
    } else if f.audio_count.is_some() {
        return usage("--audio-count needs --audio-seconds (each clip's length)");
    }
    m.audio_count = f.audio_count.unwrap_or(1);
    if let Some(rates) = &f.audio_sample_rates_hz {
        m.audio_sample_rates_hz = rates.clone();
    }
    Ok(m)
}

/// An image side's distribution, px: a draw without a max of its own is clipped at
/// `MAX_IMAGE_SIDE`.
fn side(flag: &str, spec: &str) -> Result<LengthDist, UsageError> {
    let d = LengthDist::parse(flag, spec).map_err(UsageError)?;
    Ok(match d {
        LengthDist::Normal { mean, sd, max } if max == MAX_LENGTH => LengthDist::Normal {
            mean,
            sd,
            max: MAX_IMAGE_SIDE,
        },
        LengthDist::Lognormal { median, p99, max } if max == MAX_LENGTH => LengthDist::Lognormal {
            median,
            p99,
            max: MAX_IMAGE_SIDE,
        },
        d => d,
    })
}

/// A trace's stop: every line once; the first `warmup` lines are the warm-up.
pub fn trace_stop(
    t: &ringbench::plan::workload::TraceLoad,
    warmup: u64,
) -> Result<ringbench::plan::Stop, UsageError> {
    let lines = t.stats.requests;
    if warmup >= lines {
        return usage(format!(
            "--warmup-requests {warmup}: the trace has only {lines} lines, so none would be measured"
        ));
    }
    Ok(ringbench::plan::Stop {
        request_count: Some(lines - warmup),
        duration_ns: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::cli::run_args::tests::plan;
    use ringbench::plan::workload::LengthDist;

    #[test]
    fn workload_flags_resolve() {
        let p = plan(&[
            "--input-dist",
            "lognormal:300:4000:8000",
            "--output-dist",
            "uniform:100:0.5",
            "--tokenizer",
            "/x/tokenizer.json",
            "--ignore-eos",
            "--min-tokens",
            "4",
            "--temperature",
            "0",
            "--extra-body",
            r#"{"top_k": 5}"#,
            "--prefix-groups",
            "8",
            "--prefix-tokens",
            "100",
            "--prefix-zipf",
            "1.1",
        ])
        .unwrap();
        let w = &p.workload;
        assert!(matches!(
            w.input,
            Some(LengthDist::Lognormal { max: 8000, .. })
        ));
        assert!(matches!(
            w.output,
            Some(LengthDist::Uniform { mean: 100, .. })
        ));
        assert_eq!(w.tokenizer.as_deref(), Some("/x/tokenizer.json".as_ref()));
        assert!(w.request.ignore_eos);
        assert_eq!(w.request.min_tokens, Some(4));
        assert_eq!(w.request.extra_body.as_ref().unwrap()["top_k"], 5);
        let pre = w.prefix.as_ref().unwrap();
        assert_eq!((pre.groups, pre.tokens, pre.zipf), (8, 100, Some(1.1)));
        let p = plan(&["--random-range-ratio", "0.25", "--input-tokens", "400"]).unwrap();
        assert_eq!(
            p.workload.input,
            Some(LengthDist::Uniform {
                mean: 400,
                range_ratio: 0.25
            })
        );
        let p = plan(&["--dataset", "d.json"]).unwrap();
        let d = p.workload.dataset.unwrap();
        assert_eq!(d.kind, ringbench::plan::workload::DatasetKind::Sharegpt);
        assert!(
            p.workload.output.is_none(),
            "the dataset's answers set the OSL"
        );
        let p = plan(&["--dataset", "d.json", "--output-tokens", "64"]).unwrap();
        assert_eq!(p.workload.output, Some(LengthDist::Fixed { tokens: 64 }));
    }

    #[test]
    fn hf_flags_go_with_a_hugging_face_dataset_only() {
        use ringbench::plan::workload::DatasetKind;
        let p = plan(&[
            "--dataset",
            "org/name",
            "--dataset-format",
            "hf",
            "--hf-split",
            "train",
            "--hf-subset",
            "en",
            "--hf-prompt-column",
            "q",
            "--hf-image-column",
            "pics",
        ])
        .unwrap();
        assert_eq!(p.workload.dataset.as_ref().unwrap().kind, DatasetKind::Hf);
        let hf = &p.workload.hf;
        assert_eq!(
            (hf.split.as_deref(), hf.subset.as_deref()),
            (Some("train"), Some("en"))
        );
        assert_eq!(
            (hf.prompt_column.as_deref(), hf.image_column.as_deref()),
            (Some("q"), Some("pics"))
        );
        let p = plan(&["--dataset", "d/train.parquet"]).unwrap();
        assert_eq!(p.workload.dataset.unwrap().kind, DatasetKind::Hf);
        for flag in [
            "--hf-split",
            "--hf-subset",
            "--hf-prompt-column",
            "--hf-image-column",
        ] {
            let e = plan(&[flag, "x"]).unwrap_err();
            assert!(e.contains(flag) && e.contains("--dataset-name hf"), "{e}");
            let e = plan(&["--dataset", "d.json", flag, "x"]).unwrap_err();
            assert!(e.contains(flag), "{e}");
            let e = plan(&["--dataset", "d.parquet", flag, " "]).unwrap_err();
            assert!(e.contains(flag) && e.contains("give a name"), "{e}");
        }
    }

    #[test]
    fn bad_workload_flags_name_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--input-dist", "lognormal:300"], "--input-dist"),
            (&["--output-dist", "pareto:3"], "--output-dist"),
            (&["--random-range-ratio", "1.5"], "--random-range-ratio"),
            (&["--extra-body", "[1]"], "--extra-body"),
            (&["--extra-body", "{nope"], "--extra-body"),
            (&["--temperature=-1"], "--temperature"),
            (
                &["--prefix-groups", "2", "--prefix-tokens", "128"],
                "--prefix-tokens",
            ),
            (
                &["--prefix-groups", "0", "--prefix-tokens", "8"],
                "--prefix-groups",
            ),
            (
                &[
                    "--prefix-groups",
                    "2",
                    "--prefix-tokens",
                    "8",
                    "--prefix-zipf",
                    "0",
                ],
                "--prefix-zipf",
            ),
            (&["--input-tokens", "0"], "--input-tokens"),
        ];
        for (args, want) in cases {
            let err = plan(args).unwrap_err();
            assert!(err.contains(want), "{args:?}: {err}");
        }
        assert!(
            plan(&["--prefix-groups", "2"]).is_err(),
            "needs --prefix-tokens"
        );
        assert!(
            plan(&["--dataset-format", "logs"]).is_err(),
            "needs --dataset"
        );
    }

    #[test]
    fn a_trace_resolves_into_the_load_and_the_stop() {
        let dir = std::env::temp_dir().join(format!("ringbench-wa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let line =
            |t: u64| format!("{{\"timestamp\":{t},\"input_length\":5,\"output_length\":2}}\n");
        std::fs::write(&path, [0, 250, 1000].map(line).concat()).unwrap();
        let f = path.to_str().unwrap();
        let p = plan(&[
            "--trace",
            f,
            "--replay-speedup",
            "2",
            "--max-concurrency",
            "3",
            "--warmup-requests",
            "1",
        ])
        .unwrap();
        let ringbench::plan::Load::Trace(t) = &p.load else {
            panic!("{:?}", p.load)
        };
        assert_eq!(&*t.times_ns, &[0, 125_000_000, 500_000_000]);
        assert_eq!(p.target_rate(), Some(4.0), "2 gaps over 0.5 s");
        assert_eq!(p.target_concurrency(), Some(3));
        assert_eq!(p.stop.request_count, Some(2), "3 lines, 1 of them warm-up");
        assert_eq!(p.fixed_output_tokens(), None);
        assert!(plan(&["--max-concurrency", "3"]).is_err(), "open loop only");
        let e = plan(&["--trace", f, "--replay-speedup=-1"]).unwrap_err();
        assert!(e.contains("--replay-speedup"), "{e}");
        let e = plan(&["--trace-block-size", "16"]).unwrap_err();
        assert!(e.contains("--trace"), "{e}");
    }
}
