//! vLLM's vision benchmark line (`--dataset-name hf --dataset-path lmarena-ai/VisionArena-Chat
//! --hf-split train`) run unchanged by `ringbench run`, offline: a VisionArena-shaped Parquet
//! file of 20 rows with real PNGs (`support::parquet`) in a temporary Hugging Face cache laid
//! out as the Hub's client lays it (`refs/main`, `snapshots/<rev>/data/…`), named by
//! `HF_HUB_CACHE`. 1,000 requests succeed against the simulator; the same line against a
//! recording server shows each body carrying its row's first user message and image as a
//! `data:` URL, the rows cycling. Without the cache, and for each bad input, the run exits 2
//! naming the flag before any request is sent.

use crate::sessions::recording_server;
use crate::support::common::{lock, made_dir, output, read_json, ringbench, spawn_sim, KillOnDrop};
use crate::support::parquet::{png, write_prompt_and_string_image, write_vision_arena, ArenaRow};
use base64::Engine;
use std::path::{Path, PathBuf};

const REPO: &str = "lmarena-ai/VisionArena-Chat";
const ROWS: usize = 20;
const REV: &str = "3d2a0b1c9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b";

fn question(i: usize) -> String {
    format!("What is drawn in picture {i}? \"quoted\" é")
}

/// A temporary hub cache holding the 20-row dataset; its images, by row.
fn cache(name: &str) -> (PathBuf, Vec<Vec<u8>>) {
    let hub = made_dir(name);
    let repo = hub.join("datasets--lmarena-ai--VisionArena-Chat");
    let data = repo.join("snapshots").join(REV).join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), REV).unwrap();
    let images: Vec<Vec<u8>> = (0..ROWS)
        .map(|i| png(4 + i as u32 % 3, 3, i as u8))
        .collect();
    let rows: Vec<ArenaRow> = (0..ROWS)
        .map(|i| ArenaRow {
            turns: vec![
                vec![
                    ("user".into(), question(i)),
                    ("assistant".into(), format!("A drawing, number {i}.")),
                ],
                vec![("user".into(), format!("And the colour of {i}?"))],
            ],
            images: vec![images[i].clone(), png(2, 2, 200)],
        })
        .collect();
    write_vision_arena(&data.join("train-00000-of-00001.parquet"), &rows);
    (hub, images)
}

/// The seed's line, `python benchmarks/benchmark_serving.py` replaced by `ringbench run`,
/// `--host`/`--port` by the `--base-url` of the server under test.
fn seed_line(url: &str, dataset: &str) -> Vec<String> {
    [
        "run",
        "--backend",
        "openai-chat",
        "--model",
        "google/gemma-3-4b-it",
        "--base-url",
        url,
        "--endpoint",
        "/v1/chat/completions",
        "--dataset-name",
        "hf",
        "--dataset-path",
        dataset,
        "--hf-split",
        "train",
        "--max-concurrency",
        "10",
        "--num-prompts",
        "1000",
    ]
    .map(String::from)
    .to_vec()
}

fn data_url(png: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
    format!("data:image/png;base64,{b64}")
}

#[test]
fn the_vision_arena_line_runs_offline_with_each_rows_image() {
    let _g = lock();
    let (hub, images) = cache("hub");
    // Against the simulator: every request succeeds.
    let (sim, addr) = spawn_sim();
    let _sim = KillOnDrop(sim);
    let out_dir = made_dir("sim-run");
    let out = output(
        ringbench(seed_line(&format!("http://{addr}"), REPO))
            .args(["--out".as_ref(), out_dir.as_os_str()])
            .env("HF_HUB_CACHE", &hub),
    );
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", out.stderr);
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(s["counts"]["ok"], 1000, "{}", out.stderr);
    let w = &s["workload"];
    let method = w["input_method"].as_str().unwrap();
    assert!(
        method.contains("images are sent as image_url parts and counted in no input length"),
        "{method}"
    );
    let source = w["source"].as_str().unwrap();
    assert!(
        source.contains(REPO)
            && source.contains("split train, 1 Parquet file, 20 rows read, 20 with an image"),
        "{source}"
    );
    assert_eq!(s["target"]["concurrency"], 10);

    // Against a recording server: what each body carries.
    let (addr, seen) = recording_server();
    let out =
        output(ringbench(seed_line(&format!("http://{addr}"), REPO)).env("HF_HUB_CACHE", &hub));
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", out.stderr);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1000);
    let mut per_row = [0u32; ROWS];
    for req in seen.iter() {
        let id: u64 = req.headers["x-request-id"]
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let row = (id % ROWS as u64) as usize;
        per_row[row] += 1;
        let b = &req.body;
        assert_eq!(b["model"], "google/gemma-3-4b-it");
        assert_eq!(b["max_tokens"], 128, "vLLM's hf default");
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0]["role"], "user");
        let parts = msgs[0]["content"].as_array().expect("content parts");
        assert_eq!(
            parts.len(),
            2,
            "the text and the row's first image: {parts:?}"
        );
        assert_eq!(parts[0]["type"], "text");
        let text = parts[0]["text"].as_str().unwrap();
        assert!(
            text.ends_with(&format!("\n{}", question(row))),
            "request {id}: {text}"
        );
        assert_eq!(parts[1]["type"], "image_url");
        assert_eq!(
            parts[1]["image_url"]["url"].as_str().unwrap(),
            data_url(&images[row]),
            "request {id}"
        );
    }
    assert_eq!(per_row, [50; ROWS], "the 20 rows cycle");
    let texts: std::collections::HashSet<&str> = seen
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"][0]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(texts.len(), 1000, "salted: no two prompts alike");
}

/// Runs the seed line at `dataset` with `extra` flags against a recording server and cache
/// `hub`: its exit code and stderr, after checking that nothing was sent.
fn refused(hub: &Path, dataset: &str, extra: &[&str]) -> String {
    let (addr, seen) = recording_server();
    let out = output(
        ringbench(seed_line(&format!("http://{addr}"), dataset))
            .args(extra)
            .env("HF_HUB_CACHE", hub),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{dataset} {extra:?}: {}",
        out.stderr
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "{dataset}: a request was sent"
    );
    out.stderr
}

#[test]
fn a_dataset_not_in_the_cache_names_the_download_command() {
    let empty = made_dir("empty-hub");
    let e = refused(&empty, REPO, &[]);
    assert!(
        e.contains("--dataset-path lmarena-ai/VisionArena-Chat: not in the Hugging Face cache"),
        "{e}"
    );
    assert!(
        e.contains("huggingface-cli download --repo-type dataset lmarena-ai/VisionArena-Chat"),
        "{e}"
    );
}

#[test]
fn bad_inputs_exit_2_naming_the_flag_before_any_request() {
    let (hub, _) = cache("bad-hub");
    let dir = made_dir("bad");
    let not_image = dir.join("not-image.parquet");
    write_vision_arena(
        &not_image,
        &[ArenaRow {
            turns: vec![vec![("user".into(), "q".into())]],
            images: vec![b"%PDF-1.7 not an image".to_vec()],
        }],
    );
    let stringy = dir.join("string-image.parquet");
    write_prompt_and_string_image(&stringy, &[("describe", "cat.png")]);
    let jsonl = dir.join("d.jsonl");
    std::fs::write(dir.join("notes.txt"), "plain text").unwrap();
    std::fs::write(&jsonl, "{\"prompt\": \"look\", \"image\": \"notes.txt\"}\n").unwrap();
    let p = |p: &Path| p.display().to_string();
    let missing = p(&dir.join("missing.parquet"));
    let cases: Vec<(String, Vec<&str>, Vec<String>)> = vec![
        (
            p(&not_image),
            vec![],
            vec![
                "--hf-image-column images".into(),
                "row 1".into(),
                "not a PNG, JPEG, WebP or GIF".into(),
            ],
        ),
        (
            REPO.into(),
            vec!["--hf-prompt-column", "question"],
            vec!["--hf-prompt-column question: no such column".into()],
        ),
        (
            p(&stringy),
            vec![],
            vec![
                "--hf-image-column image".into(),
                "a string, not an image".into(),
            ],
        ),
        (
            missing.clone(),
            vec![],
            vec![format!("--dataset-path {missing}: no such file or folder")],
        ),
        (
            REPO.into(),
            vec!["--hf-subset", "en"],
            vec!["--hf-subset en".into(), "it has: default".into()],
        ),
    ];
    for (dataset, extra, wants) in cases {
        let e = refused(&hub, &dataset, &extra);
        for w in wants {
            assert!(e.contains(&w), "{dataset} {extra:?}: wants {w}: {e}");
        }
    }
    // A JSONL dataset's image file that is no image, named with its file and line.
    let (addr, seen) = recording_server();
    let (url, jl) = (format!("http://{addr}"), p(&jsonl));
    let out = output(&mut ringbench([
        "run",
        "--url",
        url.as_str(),
        "--endpoint",
        "chat",
        "--dataset",
        jl.as_str(),
        "--request-count",
        "5",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("line 1")
            && out.stderr.contains("notes.txt")
            && out.stderr.contains("not a PNG"),
        "{}",
        out.stderr
    );
    assert!(seen.lock().unwrap().is_empty());
    // Images go to the chat endpoint only.
    let (addr, _seen) = recording_server();
    let mut line = seed_line(&format!("http://{addr}"), REPO);
    line.retain(|a| {
        a != "--backend" && a != "openai-chat" && a != "--endpoint" && a != "/v1/chat/completions"
    });
    let out = output(ringbench(line).env("HF_HUB_CACHE", &hub));
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--endpoint chat"), "{}", out.stderr);
}
