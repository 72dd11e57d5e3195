//! Issue 34's figures and the simulator's multimodal side, end to end: a JSONL dataset whose
//! items name image files goes to the in-process simulator, which counts each image's tokens
//! into the prompt and looks it up in its multimodal cache (`vllm:mm_cache_*`, scraped into
//! the summary's `server` block): the same image on every item hits from the second request
//! on, distinct images never do. Every record carries its body bytes and its upload stamp,
//! and `report` recomputes `summary.json` byte for byte. Against a recording server, each
//! record's body bytes are the `Content-Length` the request went out with.

use crate::sessions::recording_server;
use crate::support::common::{lock, made_dir, out_dir, read_jsonl, sim_plan};
use crate::support::parquet::png;
use ringbench::plan::workload::{DatasetKind, DatasetSpec, Sampling};
use ringbench::plan::{Plan, Target};
use ringbench::report::{self, Overrides};
use serde_json::Value;
use std::path::PathBuf;

const REQUESTS: u64 = 40;
const IMAGE_TOKENS: u32 = 1_000;

/// A JSONL dataset of `REQUESTS` items in a new folder, each naming an image file there:
/// all the same one, or each its own.
fn dataset(name: &str, distinct: bool) -> PathBuf {
    let dir = made_dir(name);
    let mut lines = String::new();
    for i in 0..REQUESTS {
        let k = if distinct { i } else { 0 };
        let file = format!("img{k}.png");
        if i == k {
            std::fs::write(dir.join(&file), png(16, 12, k as u8)).unwrap();
        }
        lines.push_str(&format!(
            "{{\"prompt\": \"describe picture {i}\", \"image\": \"{file}\"}}\n"
        ));
    }
    let path = dir.join("items.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

fn plan(data: PathBuf, name: &str) -> Plan {
    let mut p = sim_plan();
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Jsonl,
        path: data,
        sampling: Sampling::Sequential,
    });
    p.sim.as_mut().unwrap().image_tokens = IMAGE_TOKENS;
    crate::engine::closed(&mut p, 4, REQUESTS);
    p.server_metrics.interval_ns = 100_000_000;
    p.out_dir = Some(out_dir(&format!("{name}-out")));
    p
}

/// Runs `p`, checks that `report` reproduces its `summary.json` exactly; the summary as
/// written, and the records.
fn run_and_replay(p: &Plan) -> (Value, Vec<Value>) {
    ringbench::run(p).expect("the run completes");
    let dir = p.out_dir.as_deref().unwrap();
    let written = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let again = report::recompute(dir, &Overrides::default()).unwrap();
    let text = serde_json::to_string_pretty(&again).unwrap() + "\n";
    assert_eq!(text, written, "report recomputes the summary");
    let records = read_jsonl(&dir.join("requests.jsonl"));
    let _ = std::fs::remove_dir_all(dir);
    (serde_json::from_str(&written).unwrap(), records)
}

#[test]
fn identical_images_hit_the_mm_cache_and_distinct_ones_never_do() {
    let _g = lock();
    for (distinct, hits) in [(false, REQUESTS - 1), (true, 0)] {
        let name = format!("mm-distinct-{distinct}");
        let (s, records) = run_and_replay(&plan(dataset(&name, distinct), &name));
        assert_eq!(s["counts"]["ok"], REQUESTS, "{}", s["counts"]);
        assert_eq!(crate::outputs::schema_errors(&s), Vec::<String>::new());
        let c = &s["server"]["counters"];
        assert_eq!(c["mm_cache_queries"]["delta"], REQUESTS as f64, "{c}");
        assert_eq!(
            c["mm_cache_hits"]["delta"], hits as f64,
            "distinct {distinct}: {c}"
        );
        let mut body_total = 0;
        for r in &records {
            let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k}: {r}"));
            // The image's base64 alone is over 4/3 of its PNG's bytes.
            assert!(n("body_bytes") > png(16, 12, 0).len() as u64 * 4 / 3, "{r}");
            body_total += n("body_bytes");
            // The last write completes after the send; its stamp (the pass's) may come after the
            // kernel's stamp of a fast answer, so it is not bounded by done_ns.
            assert!(n("sent_ns") <= n("uploaded_ns"), "{r}");
            // The prompt: a few words and one image's tokens.
            let usage = n("usage_prompt_tokens");
            assert!((1_000..1_100).contains(&usage), "usage {usage}: {r}");
        }
        let l = &s["latency_ms"];
        for k in ["upload", "ttft_from_upload"] {
            assert_eq!(l[k]["count"], REQUESTS, "{k}: {}", l[k]);
        }
        assert!(l["upload"]["max"].as_f64() <= l["e2e"]["max"].as_f64());
        let u = &s["upload"];
        assert_eq!(u["body_bytes"]["count"], REQUESTS, "{u}");
        assert_eq!(u["body_bytes_total"], body_total, "{u}");
    }
}

#[test]
fn a_records_body_bytes_are_the_content_length_it_went_out_with() {
    let _g = lock();
    let (addr, seen) = recording_server();
    let mut p = plan(dataset("mm-recorded", true), "mm-recorded");
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{addr}")).unwrap()];
    p.model = Some("m".into());
    p.run_id = Some("mm".into());
    p.server_metrics.enabled = false;
    crate::engine::closed(&mut p, 2, 8);
    let (s, records) = run_and_replay(&p);
    assert_eq!(s["counts"]["ok"], 8, "{}", s["counts"]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 8);
    for r in &records {
        let id = r["request_id"].as_str().unwrap();
        let sent = seen
            .iter()
            .find(|q| q.headers.get("x-request-id").map(String::as_str) == Some(id))
            .unwrap_or_else(|| panic!("{id} was not received"));
        let length: u64 = sent.headers["content-length"].parse().unwrap();
        assert_eq!(r["body_bytes"], length, "{id}");
    }
}
