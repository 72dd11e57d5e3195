//! Issue 21: one run over several hosts. Three `ringbench run --shard I/3` processes with a
//! common `--start-at` against one simulator, merged by `ringbench merge`, against a single
//! run of the same flags and seed: the same arrivals (global index and intended time from
//! the start, exactly), counts that add up, figures recomputed from the union of the records;
//! a missing or duplicated shard refused by name (or merged marked incomplete); a shard whose
//! stamps are moved by a known offset re-aligned exactly; the merged `requests.jsonl` in time
//! order, its `.hlog` files and one shard's scrapes; the flags' errors; and pacing per shard
//! at 5,000 req/s over three shards within the single-host lag bound. Shards whose records
//! are Parquet merge to the same run.

use crate::outputs::{base_time, intervals, schema_errors};
use crate::support::common::{
    cpu_pair, f, lock, made_dir, out_dir, output, read_json, read_jsonl, ringbench, spawn_sim, u,
    within_attempts, KillOnDrop,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

/// The run's flags, the same for the shards and the single run (but `--shard`, `--out`).
const FLAGS: [&str; 14] = [
    "--model",
    "m",
    "--request-rate",
    "400",
    "--arrival",
    "gamma",
    "--burstiness",
    "0.5",
    "--request-count",
    "234",
    "--warmup-requests",
    "7",
    "--seed",
    "11",
];

struct Fixture {
    shards: Vec<PathBuf>,
    single: PathBuf,
    merged: PathBuf,
    merge_code: i32,
}

/// The three shards, the single run and the merge, made once for every test here.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let _g = lock();
        let (sim, addr) = spawn_sim();
        // Stops the simulator however the fixture ends.
        let _sim = KillOnDrop(sim);
        let (url, cpu) = (format!("http://{addr}"), cpu_pair().0.to_string());
        // The simulator's /metrics, scraped by every shard (the merge keeps one's).
        let scrape = ["--server-metrics-interval", "100ms"];
        // Far enough ahead for three processes to start and prepare on a loaded machine.
        let start_at = start_at(3_000_000_000);
        let shards: Vec<PathBuf> = (0..3).map(|i| out_dir(&format!("shard{i}"))).collect();
        let ran = run_at_once(shards.iter().enumerate().map(|(i, dir)| {
            let shard = format!("{i}/3");
            let extra = [&scrape[..], &["--shard", &shard, "--start-at", &start_at]].concat();
            shard_args(&url, &cpu, &extra, dir)
        }));
        for out in ran {
            assert!(
                out.status.success(),
                "a shard failed ({:?}): {}{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let single = out_dir("single");
        let ran = output(&mut ringbench(shard_args(&url, &cpu, &scrape, &single)));
        assert!(ran.status.success(), "single run: {}", ran.stderr);
        let merged = out_dir("merged");
        let mut args = vec!["merge".to_string()];
        args.extend(shards.iter().map(|d| d.display().to_string()));
        args.extend(["--out".into(), merged.display().to_string()]);
        let ran = output(&mut ringbench(&args));
        let merge_code = ran.status.code().unwrap_or(-1);
        assert!(merge_code == 0 || merge_code == 4, "merge: {}", ran.stderr);
        Fixture {
            shards,
            single,
            merged,
            merge_code,
        }
    })
}

/// `run` with the fixture's flags (`FLAGS`) against `url` on `cpu`, quietly, then `extra`
/// and `--out out`: the command line of every shard and single run here but the paced ones.
fn shard_args(url: &str, cpu: &str, extra: &[&str], out: &Path) -> Vec<String> {
    let mut args: Vec<String> = ["run"].into_iter().chain(FLAGS).map(String::from).collect();
    let common = [
        "--url",
        url,
        "--cpus",
        cpu,
        "--quiet",
        "--allow-concurrent",
        "--allow-invalid",
    ];
    args.extend(
        common
            .into_iter()
            .chain(extra.iter().copied())
            .map(String::from),
    );
    args.extend(["--out".into(), out.display().to_string()]);
    args
}

/// A `--start-at` `ahead_ns` from now (Unix ns): a common start for shards started at once.
fn start_at(ahead_ns: u64) -> String {
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    (now_ns + ahead_ns).to_string()
}

/// Starts one `ringbench` per command line at once (each shard told its index by its flags,
/// not by a Job's environment) and waits for them all.
fn run_at_once(all: impl Iterator<Item = Vec<String>>) -> Vec<std::process::Output> {
    let children: Vec<_> = all
        .map(|args| {
            (ringbench(&args).env_remove("JOB_COMPLETION_INDEX"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a shard starts")
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// (global index, intended time from the start) of every request of a run, warm-up flag too.
fn arrivals(dir: &Path) -> BTreeSet<(u64, u64, bool)> {
    let recs = read_jsonl(&dir.join("requests.jsonl"));
    let start = recs
        .iter()
        .find(|r| r["id"] == 0)
        .map(|r| u(r, "intended_ns"))
        .expect("arrival 0 is in the run");
    recs.iter()
        .map(|r| {
            (
                u(r, "id"),
                u(r, "intended_ns") - start,
                r["warmup"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn summary(dir: &Path) -> Value {
    read_json(&dir.join("summary.json"))
}

fn merge(dirs: &[&Path], out: &Path, extra: &[&str]) -> crate::support::common::Ran {
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".into(), out.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    output(&mut ringbench(&args))
}

#[test]
fn three_shards_merged_are_the_single_run_exactly() {
    let fx = fixture();
    let single = arrivals(&fx.single);
    let merged = arrivals(&fx.merged);
    assert_eq!(single.len(), 234 + 7);
    // The same global indices at the same intended times from the start, to the ns, and
    // the same warm-up requests.
    assert_eq!(merged, single);
    let m = summary(&fx.merged);
    let s = summary(&fx.single);
    assert_eq!(schema_errors(&m), Vec::<String>::new());
    let mut scheduled = 0;
    for (i, dir) in fx.shards.iter().enumerate() {
        let sh = summary(dir);
        assert_eq!(schema_errors(&sh), Vec::<String>::new());
        assert_eq!(u(&sh, "shard.index"), i as u64);
        assert_eq!(u(&sh, "shard.count"), 3);
        assert_eq!(u(&sh, "shard.global_scheduled"), 241);
        assert_eq!(
            sh["shard"]["plan_hash"],
            summary(&fx.shards[0])["shard"]["plan_hash"]
        );
        // Each shard sends i mod 3 = I: 241 = 81 + 80 + 80.
        let own = [81, 80, 80][i];
        assert_eq!(u(&sh, "counts.scheduled") + u(&sh, "counts.warmup"), own);
        for r in read_jsonl(&dir.join("requests.jsonl")) {
            assert_eq!(u(&r, "id") % 3, i as u64);
        }
        assert!(sh["clock"]["start_at_unix_ns"].is_u64());
        assert!(sh["clock"]["kernel"].is_object() || sh["clock"]["kernel"].is_null());
        scheduled += own;
        assert_eq!(u(&m, &format!("merge.parts.{i}.index")), i as u64);
    }
    assert_eq!(scheduled, 241);
    for key in ["scheduled", "warmup", "sent", "not_sent"] {
        assert_eq!(
            u(&m, &format!("counts.{key}")),
            u(&s, &format!("counts.{key}")),
            "counts.{key}"
        );
    }
    assert_eq!(m["merge"]["complete"], true);
    assert_eq!(u(&m, "merge.shards"), 3);
    let all_valid = (0..3).all(|i| m["merge"]["parts"][i]["valid"] == true);
    assert_eq!(m["overhead"]["valid"], all_valid);
    assert_eq!(
        fx.merge_code == 0,
        all_valid,
        "merge exit {}",
        fx.merge_code
    );
    assert!(m["shard"].is_null(), "the merged run is no shard");
}

/// The merged figures are those of the union of the shards' records, recomputed: the
/// records of the three folders, as they are (each on its own clock), put in one folder
/// beside the merged run.json give the same latency percentiles through `ringbench report`;
/// and the TTFT count, min and max are those of the raw records.
#[test]
fn merged_percentiles_are_recomputed_from_the_concatenated_records() {
    let fx = fixture();
    let m = summary(&fx.merged);
    let concat = made_dir("concat");
    let mut text = String::new();
    let mut ttft_ns = vec![];
    for dir in &fx.shards {
        let t = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
        for r in t.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()) {
            if r["warmup"] == false && r["outcome"] == "ok" && r["first_token_ns"].is_u64() {
                ttft_ns.push(u(&r, "first_token_ns") - u(&r, "sent_ns"));
            }
        }
        text.push_str(&t);
    }
    std::fs::write(concat.join("requests.jsonl"), text).unwrap();
    std::fs::copy(fx.merged.join("run.json"), concat.join("run.json")).unwrap();
    let again = ringbench::report::recompute(&concat, &Default::default()).unwrap();
    let again = serde_json::to_value(&again).unwrap();
    for metric in ["ttft", "e2e", "tpot", "itl", "ttft_from_intent"] {
        let key = format!("latency_ms.{metric}");
        if metric != "ttft_from_intent" {
            assert_eq!(
                crate::support::common::at(&again, &key),
                crate::support::common::at(&m, &key),
                "{key}"
            );
        }
    }
    assert_eq!(u(&m, "latency_ms.ttft.count"), ttft_ns.len() as u64);
    let (min, max) = (ttft_ns.iter().min().unwrap(), ttft_ns.iter().max().unwrap());
    assert!((f(&m, "latency_ms.ttft.min") - *min as f64 / 1e6).abs() < 1e-3);
    assert!((f(&m, "latency_ms.ttft.max") - *max as f64 / 1e6).abs() < 1e-3);
}

/// The merge of shards whose records are Parquet (`--records parquet`): two shards of the
/// fixture's flags, merged, are the single JSONL run's arrivals and counts exactly, and the
/// same figures as a merge of the fixture's JSONL shards.
#[test]
fn parquet_shards_merge_as_jsonl_ones_do() {
    let fx = fixture();
    let _g = lock();
    let (sim, addr) = spawn_sim();
    let _sim = KillOnDrop(sim);
    let (url, cpu) = (format!("http://{addr}"), cpu_pair().0.to_string());
    let start_at = start_at(3_000_000_000);
    let shards: Vec<PathBuf> = (0..2).map(|i| out_dir(&format!("pq-shard{i}"))).collect();
    let ran = run_at_once(shards.iter().enumerate().map(|(i, dir)| {
        let shard = format!("{i}/2");
        let extra = [
            "--no-server-metrics",
            "--records",
            "parquet",
            "--shard",
            &shard,
        ];
        shard_args(
            &url,
            &cpu,
            &[&extra[..], &["--start-at", &start_at]].concat(),
            dir,
        )
    }));
    for out in ran {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "a shard failed: {err}");
    }
    for dir in &shards {
        assert!(dir.join("requests.parquet").is_file() && !dir.join("requests.jsonl").exists());
    }
    let merged = out_dir("pq-merged");
    let ran = merge(&[&shards[0], &shards[1]], &merged, &[]);
    let code = ran.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 4, "merge: {}", ran.stderr);
    assert_eq!(arrivals(&merged), arrivals(&fx.single));
    let (m, jsonl) = (summary(&merged), summary(&fx.merged));
    assert_eq!(m["merge"]["complete"], true);
    assert_eq!(u(&m, "merge.shards"), 2);
    for key in ["scheduled", "warmup", "sent", "ok", "not_sent"] {
        let key = format!("counts.{key}");
        assert_eq!(u(&m, &key), u(&summary(&fx.single), &key), "{key}");
        assert_eq!(u(&m, &key), u(&jsonl, &key), "{key}");
    }
    assert_eq!(schema_errors(&m), Vec::<String>::new());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_missing_or_duplicated_shard_is_named_and_incomplete_only_when_allowed() {
    let fx = fixture();
    let [s0, s1, s2] = [&fx.shards[0], &fx.shards[1], &fx.shards[2]];
    let out = out_dir("missing");
    let ran = merge(&[s0, s2], &out, &[]);
    assert_eq!(ran.status.code(), Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("shard 1/3 missing"), "{}", ran.stderr);
    assert!(!out.join("summary.json").exists());

    let twin = out_dir("twin");
    copy_dir(s1, &twin);
    let ran = merge(&[s0, s1, &twin, s2], &out_dir("dup"), &[]);
    assert_eq!(ran.status.code(), Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("shard 1/3 given 2 times")
            && ran.stderr.contains(&twin.display().to_string()),
        "{}",
        ran.stderr
    );

    let ran = merge(&[s0, s2], &out, &["--allow-incomplete"]);
    assert_eq!(ran.status.code(), Some(4), "{}", ran.stderr);
    assert!(ran.stderr.contains("INCOMPLETE"), "{}", ran.stderr);
    let m = summary(&out);
    assert_eq!(m["merge"]["complete"], false);
    assert_eq!(m["merge"]["missing"], serde_json::json!([1]));
    assert_eq!(m["overhead"]["valid"], false);
    let reasons = m["overhead"]["invalid_reasons"].to_string();
    assert!(reasons.contains("incomplete"), "{reasons}");
    let want = u(&summary(s0), "counts.scheduled") + u(&summary(s2), "counts.scheduled");
    assert_eq!(u(&m, "counts.scheduled"), want);
}

#[test]
fn a_shard_shifted_by_a_known_offset_is_realigned_exactly() {
    let fx = fixture();
    let moved = out_dir("moved");
    copy_dir(&fx.shards[1], &moved);
    // As if shard 1's run clock had started 1.234567891 s earlier: every stamp later by that,
    // its recorded origin earlier by that. Then shard 0's, the other way.
    ringbench::__private::shift_run(&moved, 1_234_567_891).unwrap();
    let moved0 = out_dir("moved0");
    copy_dir(&fx.shards[0], &moved0);
    ringbench::__private::shift_run(&moved0, -3_000_000).unwrap();
    let before = read_jsonl(&moved.join("requests.jsonl"));
    assert_ne!(
        before[0]["intended_ns"],
        read_jsonl(&fx.shards[1].join("requests.jsonl"))[0]["intended_ns"],
        "the hook moved the stamps"
    );
    let out = out_dir("realigned");
    let ran = merge(&[&moved0, &moved, &fx.shards[2]], &out, &[]);
    assert!(matches!(ran.status.code(), Some(0 | 4)), "{}", ran.stderr);
    // The time base is the earliest shard's origin, which the hook moved: compare the
    // wall-clock instants (origin + stamp) of every stamp, to the ns.
    let instants = |d: &Path| -> BTreeSet<(u64, Vec<Option<u64>>)> {
        let origin = u(&summary(d), "merge.origin_unix_ns");
        read_jsonl(&d.join("requests.jsonl"))
            .iter()
            .map(|r| {
                let mut at: Vec<Option<u64>> =
                    ["intended_ns", "sent_ns", "first_token_ns", "done_ns"]
                        .iter()
                        .map(|k| r[*k].as_u64().map(|t| origin + t))
                        .collect();
                for e in r["events"].as_array().unwrap() {
                    at.push(e[0].as_u64().map(|t| origin + t));
                    at.push(e[2].as_u64().map(|t| origin + t));
                }
                (u(r, "id"), at)
            })
            .collect()
    };
    assert_eq!(instants(&out), instants(&fx.merged));
    assert_eq!(
        summary(&out)["latency_ms"],
        summary(&fx.merged)["latency_ms"]
    );
    // The kept scrapes (shard 0's, moved with the rest of shard 0 by the hook) land at the
    // same wall-clock instants too, and make the same server block.
    assert_eq!(u(&summary(&out), "merge.server_metrics_shard"), 0);
    let scrape_instants = |d: &Path| -> Vec<(u64, u64)> {
        let origin = u(&summary(d), "merge.origin_unix_ns");
        read_jsonl(&d.join("server_metrics.jsonl"))
            .iter()
            .map(|l| (origin + u(l, "start_ns"), origin + u(l, "end_ns")))
            .collect()
    };
    // (Those of the probe just after the origin, which the hook's 3 ms back put below 0,
    // are held at 0 by it and cannot come back.)
    let clamped: Vec<bool> = read_jsonl(&moved0.join("server_metrics.jsonl"))
        .iter()
        .map(|l| u(l, "start_ns") == 0 || u(l, "end_ns") == 0)
        .collect();
    let unclamped = |d: &Path| -> Vec<(u64, u64)> {
        let all = scrape_instants(d);
        assert_eq!(all.len(), clamped.len());
        all.into_iter()
            .zip(&clamped)
            .filter(|(_, c)| !**c)
            .map(|(i, _)| i)
            .collect()
    };
    assert!(clamped.iter().filter(|c| !**c).count() >= 3);
    assert_eq!(unclamped(&out), unclamped(&fx.merged));
    assert_eq!(summary(&out)["server"], summary(&fx.merged)["server"]);
    // Shard 1, moved 1.23 s back, is now the earliest: its origin is the merged one.
    assert_eq!(
        u(&summary(&out), "merge.origin_unix_ns"),
        u(&summary(&fx.shards[1]), "clock.origin_unix_ns") - 1_234_567_891
    );
}

#[test]
fn shards_of_another_run_are_refused_by_name() {
    let fx = fixture();
    let other = out_dir("other");
    copy_dir(&fx.shards[2], &other);
    let mut side = read_json(&other.join("run.json"));
    side["shard"]["seed"] = serde_json::json!(12);
    std::fs::write(other.join("run.json"), side.to_string()).unwrap();
    let ran = merge(&[&fx.shards[0], &fx.shards[1], &other], &out_dir("o"), &[]);
    assert_eq!(ran.status.code(), Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("--seed") && ran.stderr.contains(&other.display().to_string()),
        "{}",
        ran.stderr
    );
}

/// Closed loop: 5 users over 2 shards are 3 + 2, and the request ids are the global ones.
#[test]
fn closed_loop_users_and_ids_split_exactly() {
    let _g = lock();
    let mut ids = BTreeSet::new();
    for (i, users) in [(0u32, 3u64), (1, 2)] {
        let mut p = crate::support::common::sim_plan();
        p.load = ringbench::plan::Load::Closed { concurrency: 5 };
        p.stop.request_count = Some(31);
        p.shard = Some(ringbench::plan::Shard { index: i, count: 2 });
        let dir = out_dir(&format!("closed{i}"));
        p.out_dir = Some(dir.clone());
        let s = ringbench::run(&p).expect("the shard runs");
        let info = s.shard.expect("a shard block");
        assert_eq!(u64::from(info.users.unwrap()), users);
        assert_eq!(s.counts.scheduled, [16, 15][i as usize]);
        for r in read_jsonl(&dir.join("requests.jsonl")) {
            assert_eq!(u(&r, "id") % 2, u64::from(i));
            assert!(ids.insert(u(&r, "id")), "id given twice");
        }
    }
    assert_eq!(ids, (0..31).collect());
}

#[test]
fn shard_and_start_at_flags_name_themselves_when_wrong() {
    let cases: [(&[&str], Option<&str>, &str); 6] = [
        (&["--shard", "3/3"], None, "--shard 3/3"),
        (
            &["--shard", "auto", "--shards", "2"],
            None,
            "JOB_COMPLETION_INDEX",
        ),
        (
            &["--shard", "auto", "--shards", "2"],
            Some("2"),
            "JOB_COMPLETION_INDEX",
        ),
        (&["--shard", "auto"], Some("0"), "--shards"),
        (&["--start-at", "tomorrow"], None, "--start-at"),
        (
            &["--shard", "0/3", "--concurrency", "2"],
            None,
            "--concurrency 2",
        ),
    ];
    for (args, env, want) in cases {
        let mut full = vec!["run", "--url", "http://127.0.0.1:9", "--model", "m"];
        full.extend_from_slice(args);
        let mut cmd = ringbench(&full);
        cmd.env_remove("JOB_COMPLETION_INDEX");
        if let Some(v) = env {
            cmd.env("JOB_COMPLETION_INDEX", v);
        }
        let ran = output(&mut cmd);
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(want), "{args:?}: {}", ran.stderr);
    }
}

/// Each record's lateness in a file: how far (ns) its time key (`done_ns`, else
/// `intended_ns` for one never sent, as the merge orders them) is behind the largest key
/// before it; by request id.
fn lateness(records: &[Value]) -> std::collections::BTreeMap<u64, u64> {
    let mut latest = 0;
    records
        .iter()
        .map(|r| {
            let key = r["done_ns"].as_u64().unwrap_or_else(|| u(r, "intended_ns"));
            latest = latest.max(key);
            (u(r, "id"), latest - key)
        })
        .collect()
}

/// The merge writes `requests.jsonl` in time order. A live log is in its collector's
/// order: by `done_ns` but for records handed over in batches (the `.hlog` writer puts such
/// a late record into the second still open); the k-way merge adds no disorder of its own:
/// each record is at most as far behind an earlier record in the merged file as it was in
/// its own shard's file (exactly: lateness measured with the merge's own key).
#[test]
fn merged_records_are_in_time_order_within_the_shards_own_disorder() {
    let fx = fixture();
    let merged = read_jsonl(&fx.merged.join("requests.jsonl"));
    let in_merged = lateness(&merged);
    let mut own = std::collections::BTreeMap::new();
    let mut own_max = 0;
    for dir in &fx.shards {
        let l = lateness(&read_jsonl(&dir.join("requests.jsonl")));
        own_max = own_max.max(l.values().copied().max().unwrap_or(0));
        own.extend(l);
    }
    assert_eq!(in_merged.len(), own.len());
    for (id, late) in &in_merged {
        assert!(
            *late <= own[id],
            "request {id}: {late} ns behind in the merged file, {} ns in its shard's",
            own[id]
        );
    }
    let merged_max = in_merged.values().copied().max().unwrap_or(0);
    assert!(merged_max <= own_max, "{merged_max} ns vs {own_max} ns");
}

/// The merged run has the four `.hlog` files of a live run, written from the merged records:
/// every measured sample once (per metric, the intervals' counts add up to the merged
/// summary's count), one interval per second in order, `BaseTime` the merged time base.
#[test]
fn merged_interval_logs_hold_the_merged_summarys_samples() {
    let fx = fixture();
    let m = summary(&fx.merged);
    let origin_s = u(&m, "merge.origin_unix_ns") as f64 / 1e9;
    for metric in ["ttft", "itl", "tpot", "e2e"] {
        let path = fx.merged.join(format!("{metric}.hlog"));
        let ivs = intervals(&path);
        assert!(!ivs.is_empty(), "{metric}");
        for (i, (start, len, tag, _)) in ivs.iter().enumerate() {
            assert_eq!(tag, metric);
            assert_eq!(*len, 1.0);
            assert_eq!(*start, ivs[0].0 + i as f64, "{metric} interval {i}");
        }
        let total: u64 = ivs.iter().map(|i| i.3.len()).sum();
        assert_eq!(
            total,
            u(&m, &format!("latency_ms.{metric}.count")),
            "{metric}"
        );
        assert!((base_time(&path) - origin_s).abs() < 1e-3, "{metric}");
    }
}

/// Every shard scraped the simulator's /metrics; the merge keeps the lowest shard's scrapes
/// (not three copies of one server's counters), each stamp moved by that shard's shift as its
/// records were, and the merged summary's `server` block is made from them.
#[test]
fn merged_run_keeps_one_shards_scrapes_moved_onto_its_time_base() {
    let fx = fixture();
    let m = summary(&fx.merged);
    assert!(m["server"].is_object(), "{}", m["server"]);
    assert_eq!(u(&m, "merge.server_metrics_shard"), 0);
    let shift = m["merge"]["parts"][0]["shift_ns"].as_i64().unwrap();
    let own = read_jsonl(&fx.shards[0].join("server_metrics.jsonl"));
    let kept = read_jsonl(&fx.merged.join("server_metrics.jsonl"));
    assert!(kept.len() >= 3, "{} scrapes", kept.len());
    assert_eq!(kept.len(), own.len());
    for (a, b) in own.iter().zip(&kept) {
        for key in ["start_ns", "end_ns"] {
            assert_eq!(u(b, key) as i64, u(a, key) as i64 + shift, "{key}");
        }
        assert_eq!(a["page"], b["page"]);
    }
    // Shard 0's records moved by the same shift: its arrival 0 is where the merge put it.
    let intended = |d: &Path| {
        read_jsonl(&d.join("requests.jsonl"))
            .iter()
            .find(|r| r["id"] == 0)
            .map(|r| u(r, "intended_ns") as i64)
            .unwrap()
    };
    assert_eq!(intended(&fx.merged), intended(&fx.shards[0]) + shift);
}

/// One attempt of the pacing test: three shards of 5,000 req/s for 2 s against `url`, a
/// common start 2.5 s ahead (far enough for three processes to start and connect on a loaded
/// machine: a late start counts as lag); each shard's summary.
fn paced_shards(url: &str, attempt: usize) -> Vec<Value> {
    let cpu = cpu_pair().0.to_string();
    let start_at = start_at(2_500_000_000);
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| out_dir(&format!("paced{attempt}-{i}")))
        .collect();
    let ran = run_at_once(dirs.iter().enumerate().map(|(i, dir)| {
        let shard = format!("{i}/3");
        let out = dir.display().to_string();
        [
            "run",
            "--url",
            url,
            "--model",
            "m",
            "--request-rate",
            "5000",
            "--request-count",
            "10000",
            "--seed",
            "3",
            "--shard",
            &shard,
            "--start-at",
            &start_at,
            "--cpus",
            &cpu,
            "--quiet",
            "--allow-concurrent",
            "--allow-invalid",
            "--no-server-metrics",
            "--out",
            &out,
        ]
        .map(String::from)
        .to_vec()
    }));
    for out in ran {
        // 0 valid, 4 invalid (judged below by the lag bound alone).
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "a shard failed ({:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dirs.iter().map(|d| summary(d)).collect()
}

/// Issue 21: pacing per shard at 5,000 req/s in total over three local shards (1,667/s
/// each, all on the same worker CPU, the simulator on another) holds the single-host lag
/// bound (`--max-lag`'s default, the bound a single run's verdict uses) on every shard: its
/// scheduling-lag p99 is within it and its verdict names no lag. The machine running the
/// tests may be loaded by other processes, which no pinning of ours can keep off the CPU: up
/// to three attempts, passing when one holds the bound on every shard; the failure lists
/// each attempt's p99s.
#[test]
fn three_shards_at_5000_per_second_hold_the_single_host_lag_bound() {
    let _g = lock();
    let (sim, addr) = spawn_sim();
    let _sim = KillOnDrop(sim);
    let url = format!("http://{addr}");
    let bound_ms = ringbench::plan::Plan::defaults().max_lag_ms;
    let what = format!("the {bound_ms} ms lag bound on every shard");
    within_attempts(3, &what, |attempt| {
        let shards = paced_shards(&url, attempt);
        let mut p99s = vec![];
        let mut held = true;
        for (i, s) in shards.iter().enumerate() {
            assert_eq!(u(s, "shard.index"), i as u64);
            assert_eq!(u(s, "counts.scheduled"), [3334, 3333, 3333][i]);
            assert_eq!(u(s, "counts.not_sent"), 0, "{}", s["counts"]);
            let p99 = f(s, "overhead.sched_lag_ms.p99");
            let named = s["overhead"]["invalid_reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_str().unwrap().contains("--max-lag"));
            held &= p99 <= bound_ms && !named;
            p99s.push(format!("shard {i}: p99 {p99:.3} ms"));
        }
        held.then_some(()).ok_or_else(|| p99s.join(", "))
    });
}
