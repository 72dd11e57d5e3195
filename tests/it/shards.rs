//! Issue 21: one run over several hosts. Three `ringbench run --shard I/3` processes with a
//! common `--start-at` against one simulator, merged by `ringbench merge`, against a single
//! run of the same flags and seed: the same arrivals (global index and intended time from
//! the start, exactly), counts that add up, figures recomputed from the union of the records;
//! a missing or duplicated shard refused by name (or merged marked incomplete); a shard whose
//! stamps are moved by a known offset re-aligned exactly; the flags' errors.

use crate::outputs::schema_errors;
use crate::support::common::{
    cpu_pair, f, lock, made_dir, out_dir, output, read_json, read_jsonl, ringbench, spawn_sim, u,
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
        /// Stops the simulator however the fixture ends.
        struct Sim(std::process::Child);
        impl Drop for Sim {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let (sim, addr) = spawn_sim();
        let _sim = Sim(sim);
        let url = format!("http://{addr}");
        let cpu = cpu_pair().0.to_string();
        let common = |out: &Path| {
            let mut args = vec!["run".to_string()];
            args.extend(FLAGS.iter().map(|s| s.to_string()));
            args.extend(
                [
                    "--url",
                    &url,
                    "--cpus",
                    &cpu,
                    "--quiet",
                    "--allow-concurrent",
                    "--allow-invalid",
                    "--no-server-metrics",
                    "--out",
                ]
                .map(String::from),
            );
            args.push(out.display().to_string());
            args
        };
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        // Far enough ahead for three processes to start and prepare on a loaded machine.
        let start_at = (now_ns + 3_000_000_000).to_string();
        let shards: Vec<PathBuf> = (0..3).map(|i| out_dir(&format!("shard{i}"))).collect();
        let mut children: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(i, dir)| {
                let mut args = common(dir);
                args.extend([
                    "--shard".into(),
                    format!("{i}/3"),
                    "--start-at".into(),
                    start_at.clone(),
                ]);
                ringbench(&args)
                    .env_remove("JOB_COMPLETION_INDEX")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("a shard starts")
            })
            .collect();
        for c in children.drain(..) {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "a shard failed ({:?}): {}{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let single = out_dir("single");
        let ran = output(&mut ringbench(common(&single)));
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
