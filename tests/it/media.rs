//! Synthetic images and audio (`--image-*`, `--audio-*`, issue 34 items 1, 2 and 4) through
//! the built binary: 1,000 requests with two 1024 x 1024 PNGs each complete against the
//! simulator, every image distinct; against a recording server, each body carries its images
//! in its API's shape (chat `image_url`, Responses `input_image`, Messages `image` blocks;
//! chat `input_audio`), each one decodes, two requests' pixels differ, and with
//! `--no-media-salt` a rerun sends the very pixels of the run before it (the salt is what
//! changes them from run to run). Bad sizes, endpoints and formats exit 2 naming the flag
//! before any request.

use crate::sessions::recording_server;
use crate::support::common::{lock, made_dir, output, read_json, ringbench, spawn_sim, KillOnDrop};
use base64::Engine;
use serde_json::Value;

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

/// A PNG's width, height and pixels.
fn png_pixels(file: &[u8]) -> (u32, u32, Vec<u8>) {
    let mut r = png::Decoder::new(std::io::Cursor::new(file))
        .read_info()
        .unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// A data URL's MIME type and file.
fn data_url(url: &str) -> (String, Vec<u8>) {
    let rest = url.strip_prefix("data:").expect("a data URL");
    let (mime, data) = rest.split_once(";base64,").unwrap();
    (mime.to_string(), b64(data))
}

/// The request id's number of a recorded request.
fn id_of(req: &crate::sessions::Seen) -> u64 {
    req.headers["x-request-id"]
        .rsplit('-')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_thousand_requests_with_two_1024px_pngs_each_complete() {
    let _g = lock();
    let (sim, addr) = spawn_sim();
    let _sim = KillOnDrop(sim);
    let dir = made_dir("media-1000");
    let url = format!("http://{addr}");
    let out = output(&mut ringbench([
        "run",
        "--url",
        url.as_str(),
        "--image-count",
        "2",
        "--image-size",
        "1024x1024",
        "--request-count",
        "1000",
        "--concurrency",
        "4",
        "--output-tokens",
        "4",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", out.stderr);
    let s = read_json(&dir.join("summary.json"));
    assert_eq!(s["counts"]["ok"], 1000, "{}", out.stderr);
    let w = &s["workload"];
    assert_eq!(
        (
            w["images_sent"].as_u64(),
            w["distinct_images_sent"].as_u64()
        ),
        (Some(2000), Some(2000))
    );
    let source = w["source"].as_str().unwrap();
    assert!(
        source.contains("synthetic media salted per request"),
        "{source}"
    );
    // 2 x ~4.2 MB of base64 a prompt: the catalog keeps fewer than 1,000 (256 MiB).
    let kept = w["distinct_prompts"].as_u64().unwrap();
    assert!((20..40).contains(&kept), "{kept} prompts kept: {source}");
    assert!(
        out.stdout.contains("Distinct images sent:") && out.stdout.contains("2000 of 2000"),
        "{}",
        out.stdout
    );
}

/// `run --url <recording server> ARGS…`: every request's body, by request id.
fn bodies(args: &[&str]) -> Vec<(u64, Value)> {
    let (addr, seen) = recording_server();
    let url = format!("http://{addr}");
    let mut line = vec!["run", "--url", url.as_str(), "--model", "m", "--quiet"];
    line.extend_from_slice(args);
    let out = output(&mut ringbench(line));
    assert!(out.status.code().is_some(), "{}", out.stderr);
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "{}", out.stderr);
    let mut v: Vec<(u64, Value)> = seen.iter().map(|r| (id_of(r), r.body.clone())).collect();
    v.sort_by_key(|(id, _)| *id);
    v
}

#[test]
fn chat_images_decode_and_differ_per_request_unless_unsalted() {
    let _g = lock();
    let args = [
        "--image-count",
        "2",
        "--image-size",
        "40x30",
        "--request-count",
        "6",
    ];
    let salted = bodies(&args);
    let mut all = std::collections::HashSet::new();
    for (id, body) in &salted {
        let parts = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 3, "request {id}: text and 2 images");
        assert_eq!(parts[0]["type"], "text");
        for p in &parts[1..] {
            assert_eq!(p["type"], "image_url");
            let (mime, file) = data_url(p["image_url"]["url"].as_str().unwrap());
            assert_eq!(mime, "image/png");
            let (w, h, px) = png_pixels(&file);
            assert_eq!((w, h), (40, 30));
            assert!(
                all.insert(px),
                "request {id}: an image's pixels seen before"
            );
        }
    }
    assert_eq!(all.len(), 12);
}

#[test]
fn unsalted_images_repeat_from_run_to_run_and_salted_ones_never_do() {
    let _g = lock();
    let pixels = |extra: &[&str]| -> std::collections::HashSet<Vec<u8>> {
        let mut args = vec![
            "--image-count",
            "1",
            "--image-size",
            "24x24",
            "--request-count",
            "4",
        ];
        args.extend_from_slice(extra);
        let bodies = bodies(&args);
        assert_eq!(bodies.len(), 4);
        (bodies.iter())
            .map(|(_, b)| {
                let url = b["messages"][0]["content"][1]["image_url"]["url"].as_str();
                png_pixels(&data_url(url.unwrap()).1).2
            })
            .collect()
    };
    let (a, b) = (pixels(&["--no-media-salt"]), pixels(&["--no-media-salt"]));
    assert_eq!(a.len(), 4, "four prompts, four images");
    assert_eq!(
        a, b,
        "unsalted: the same seed draws the same images in every run"
    );
    let (c, d) = (pixels(&[]), pixels(&[]));
    assert_eq!(c.len(), 4);
    assert!(
        c.is_disjoint(&d),
        "salted: no image of one run is sent by the next"
    );
    assert!(c.is_disjoint(&a), "salted images are not the unsalted ones");
}

#[test]
fn responses_and_messages_carry_images_in_their_own_shapes() {
    let _g = lock();
    let args = |e: &'static str| {
        [
            "--endpoint",
            e,
            "--image-count",
            "1",
            "--image-size",
            "16x16",
            "--image-format",
            "jpeg",
            "--request-count",
            "2",
        ]
    };
    for (_, body) in bodies(&args("responses")) {
        let parts = body["input"][0]["content"].as_array().unwrap().clone();
        assert_eq!(
            (parts[0]["type"].as_str(), parts[1]["type"].as_str()),
            (Some("input_text"), Some("input_image"))
        );
        let (mime, file) = data_url(parts[1]["image_url"].as_str().unwrap());
        assert_eq!(
            (mime.as_str(), &file[..3]),
            ("image/jpeg", &[0xff, 0xd8, 0xff][..])
        );
    }
    for (_, body) in bodies(&args("messages")) {
        let parts = body["messages"][0]["content"].as_array().unwrap().clone();
        assert_eq!(
            (parts[0]["type"].as_str(), parts[1]["type"].as_str()),
            (Some("text"), Some("image"))
        );
        let src = &parts[1]["source"];
        assert_eq!(
            (src["type"].as_str(), src["media_type"].as_str()),
            (Some("base64"), Some("image/jpeg"))
        );
        assert_eq!(&b64(src["data"].as_str().unwrap())[..2], &[0xff, 0xd8]);
    }
}

#[test]
fn chat_audio_is_a_wav_of_its_length_salted_per_request() {
    let _g = lock();
    let got = bodies(&[
        "--audio-seconds",
        "0.5",
        "--audio-count",
        "2",
        "--request-count",
        "3",
    ]);
    let mut all = std::collections::HashSet::new();
    for (id, body) in &got {
        let parts = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 3, "request {id}");
        for p in &parts[1..] {
            assert_eq!(
                (p["type"].as_str(), p["input_audio"]["format"].as_str()),
                (Some("input_audio"), Some("wav"))
            );
            let wav = b64(p["input_audio"]["data"].as_str().unwrap());
            assert_eq!((&wav[..4], &wav[8..12]), (&b"RIFF"[..], &b"WAVE"[..]));
            assert_eq!(wav.len(), 44 + 16_000, "0.5 s of 16-bit samples at 16 kHz");
            assert!(all.insert(wav), "request {id}: a clip seen before");
        }
    }
}

#[test]
fn bad_media_flags_exit_2_naming_the_flag_before_any_request() {
    let _g = lock();
    let cases: &[(&[&str], &str)] = &[
        (&["--image-size", "0x10"], "--image-size"),
        (&["--image-size", "9000x10"], "--image-size"),
        (
            &["--image-width", "9000", "--image-height", "10"],
            "--image-size (or --image-width",
        ),
        (&["--image-width", "100"], "--image-height"),
        (&["--image-count", "300"], "--image-count"),
        (
            &[
                "--image-count",
                "1",
                "--endpoint",
                "embeddings",
                "--no-stream",
            ],
            "--image-count",
        ),
        (
            &["--audio-seconds", "1", "--endpoint", "responses"],
            "--audio-seconds",
        ),
        (
            &["--audio-length-mean", "1", "--audio-format", "mp3"],
            "--audio-format mp3",
        ),
        (&["--image-width-mean", "100"], "--image-height-mean"),
        (
            &[
                "--dataset-name",
                "random-mm",
                "--backend",
                "openai-chat",
                "--random-mm-bucket-config",
                "{(64, 64, 8): 1.0}",
            ],
            "video",
        ),
        (
            &["--random-mm-base-items-per-request", "2"],
            "--dataset-name random-mm",
        ),
    ];
    for (args, want) in cases {
        let (addr, seen) = recording_server();
        let url = format!("http://{addr}");
        let mut line = vec!["run", "--url", url.as_str()];
        line.extend_from_slice(args);
        let out = output(&mut ringbench(line));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(want),
            "{args:?}: wants {want}: {}",
            out.stderr
        );
        assert!(
            seen.lock().unwrap().is_empty(),
            "{args:?}: a request was sent"
        );
    }
}
