//! What a run leaves in `--out DIR`, checked against the run's own `summary.json`: the
//! HdrHistogram interval logs (read back with hdrhistogram's own `IntervalLogIterator`), the
//! JSON Schema of `summary.json` (real output, with and without failures, and broken copies
//! that must be rejected), and warm-up excluded by count, by duration and by both, reported
//! separately. Runs go to the in-process simulator on loopback, bounded in count and time,
//! one at a time.

use crate::support::common::{cpu_pair, lock, out_dir, read_json, read_jsonl};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use ringbench::plan::sim::{FaultConfig, FaultSpec};
use ringbench::plan::{Arrival, Load, Plan, Stop};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn base_plan(dir: &Path) -> Plan {
    let (client_cpu, sim_cpu) = cpu_pair();
    let mut p = Plan::defaults();
    p.cpus = vec![client_cpu];
    p.model = Some("ringbench-sim".into());
    let sim = p.sim.as_mut().unwrap();
    sim.cpus = vec![sim_cpu];
    sim.itl_ms = 0.5;
    sim.tokens_per_chunk = 2;
    p.out_dir = Some(dir.to_path_buf());
    p
}

fn run(p: &Plan) -> Value {
    let _g = lock();
    ringbench::run(p).expect("the run completes");
    read_json(&p.out_dir.as_ref().unwrap().join("summary.json"))
}

/// Open loop, 200 req/s for 1.5 s (so the interval logs span two or three seconds), with
/// a warm-up by count.
fn steady_run() -> &'static (PathBuf, Value) {
    static RUN: OnceLock<(PathBuf, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = out_dir("steady");
        let mut p = base_plan(&dir);
        p.load = Load::Open {
            request_rate: 200.0,
            arrival: Arrival::Constant,
            max_concurrency: None,
        };
        p.stop = Stop {
            request_count: Some(300),
            duration_ns: None,
        };
        p.warmup_requests = 7;
        let s = run(&p);
        (dir, s)
    })
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("the interval's histogram is base64")
}

/// Every interval of one `.hlog`: (start s, length s, tag, histogram) (other modules read
/// theirs with it too).
pub(crate) fn intervals(path: &Path) -> Vec<(f64, f64, String, Histogram<u64>)> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut de = Deserializer::new();
    IntervalLogIterator::new(&bytes)
        .filter_map(|e| match e.expect("every line parses") {
            LogEntry::Interval(i) => Some(i),
            _ => None,
        })
        .map(|i| {
            let raw = base64_decode(i.encoded_histogram());
            let h: Histogram<u64> = de.deserialize(&mut &raw[..]).expect("a V2 histogram");
            let tag = i.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
            (
                i.start_timestamp().as_secs_f64(),
                i.duration().as_secs_f64(),
                tag,
                h,
            )
        })
        .collect()
}

/// The summary's percentile is the ⌈p·n/100⌉-th sample; asking the histogram for p/100 can
/// land one sample higher through float noise (0.99 · 300 = 297.000…06), so ask for the
/// middle of that sample's rank instead.
fn nearest_rank_quantile(p: f64, n: u64) -> f64 {
    let n = n as f64;
    let exact = p / 100.0 * n;
    let rank = (exact - exact * 1e-12).ceil().clamp(1.0, n);
    (rank - 0.5) / n
}

fn close(got_ns: u64, want_ms: f64) -> bool {
    let want_ns = want_ms * 1e6;
    (got_ns as f64 - want_ns).abs() <= want_ns * 1e-3 + 1.0
}

#[test]
fn interval_logs_hold_the_summarys_samples_second_by_second() {
    let (dir, s) = steady_run();
    for metric in ["ttft", "itl", "tpot", "e2e"] {
        let ivs = intervals(&dir.join(format!("{metric}.hlog")));
        assert!(ivs.len() >= 2, "{metric}: {} intervals", ivs.len());
        let mut merged = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for (i, (start, len, tag, h)) in ivs.iter().enumerate() {
            assert_eq!(tag, metric);
            assert_eq!(*len, 1.0);
            // One line per second, none skipped.
            assert_eq!(*start, ivs[0].0 + i as f64, "{metric} interval {i}");
            merged.add(h).unwrap();
        }
        let stats = &s["latency_ms"][metric];
        assert_eq!(merged.len(), stats["count"].as_u64().unwrap(), "{metric}");
        assert!(!merged.is_empty(), "{metric}");
        for (p, key) in [(50.0, "p50"), (99.0, "p99")] {
            let want = stats[key].as_f64().unwrap();
            let got = merged.value_at_quantile(nearest_rank_quantile(p, merged.len()));
            assert!(
                close(got, want),
                "{metric} {key}: hlog {got} ns, summary {want} ms"
            );
        }
    }
    // Warm-up is excluded: the summary counted 300 measured requests, not 307.
    assert_eq!(s["counts"]["warmup"], 7);
    assert_eq!(s["latency_ms"]["e2e"]["count"], 300);
}

/// The `BaseTime` header of one `.hlog`, s since the Unix epoch.
pub(crate) fn base_time(path: &Path) -> f64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    IntervalLogIterator::new(&bytes)
        .find_map(|e| match e.expect("every line parses") {
            LogEntry::BaseTime(t) => Some(t.as_secs_f64()),
            _ => None,
        })
        .expect("a BaseTime header")
}

/// `ringbench report DIR --out D` writes the `.hlog` files again from `requests.jsonl`,
/// through the live run's writer in the live collector's order: interval for interval the
/// same histograms as the live run's (so the same counts), `BaseTime` the run's clock origin.
#[test]
fn report_rewrites_the_interval_logs_the_run_wrote() {
    let (dir, s) = steady_run();
    let again = out_dir("steady-report");
    let ran = crate::support::common::output(&mut crate::support::common::ringbench([
        "report".as_ref(),
        dir.as_os_str(),
        "--out".as_ref(),
        again.as_os_str(),
    ]));
    // `report` ends as the run did: a loaded machine may have made the run invalid (4).
    let run_exit = s["verdict"]["exit_code"].as_u64().map(|c| c as i32);
    assert_eq!(ran.status.code(), run_exit, "{}", ran.stderr);
    let origin_s = read_json(&dir.join("run.json"))["clock"]["origin_unix_ns"]
        .as_u64()
        .unwrap() as f64
        / 1e9;
    for metric in ["ttft", "itl", "tpot", "e2e"] {
        let name = format!("{metric}.hlog");
        let (live, rewritten) = (intervals(&dir.join(&name)), intervals(&again.join(&name)));
        assert_eq!(rewritten.len(), live.len(), "{metric}");
        for (a, b) in live.iter().zip(&rewritten) {
            assert_eq!((a.0, a.1, &a.2), (b.0, b.1, &b.2), "{metric}");
            assert!(a.3 == b.3, "{metric} interval at {} s differs", a.0);
        }
        let total: u64 = rewritten.iter().map(|i| i.3.len()).sum();
        assert_eq!(total, s["latency_ms"][metric]["count"].as_u64().unwrap());
        assert!((base_time(&again.join(&name)) - origin_s).abs() < 1e-3);
    }
    assert_eq!(read_json(&again.join("summary.json")), *s);
}

fn schema() -> Value {
    read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/summary.schema.json"))
}

/// What the schema (`schema/summary.schema.json`) finds wrong with a summary (other modules
/// check theirs with it too).
pub(crate) fn schema_errors(instance: &Value) -> Vec<String> {
    let v = jsonschema::validator_for(&schema()).expect("the schema compiles");
    v.iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn real_summaries_match_the_schema_and_broken_ones_do_not() {
    let (_, ok_run) = steady_run();
    assert_eq!(schema_errors(ok_run), Vec::<String>::new());
    assert!(ok_run["overhead"]["delivery_delay_ms"].is_object());

    let dir = out_dir("faulty");
    let mut p = base_plan(&dir);
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(120),
        duration_ns: None,
    };
    p.request_timeout_ns = 400_000_000;
    p.sim.as_mut().unwrap().faults = FaultConfig {
        faults: ["http_503:0.2", "reset_mid_stream:0.1", "bad_json:0.1"]
            .iter()
            .map(|f| f.parse::<FaultSpec>().unwrap())
            .collect(),
        seed: 5,
        stall_ms: 1_000,
        slow_head_ms: 100,
    };
    let faulty = run(&p);
    let kinds = faulty["counts"]["failed_by_kind"].as_object().unwrap();
    assert!(kinds.contains_key("http_503"), "{kinds:?}");
    assert!(kinds.len() >= 3, "{kinds:?}");
    assert_eq!(schema_errors(&faulty), Vec::<String>::new());
    assert_eq!(
        faulty["workload"]["prompts_sent"], 120,
        "{}",
        faulty["workload"]
    );
    assert_eq!(faulty["workload"]["distinct_prompts_sent"], 120);

    // The schema can fail: a missing required key, a wrong type, a null where none may be.
    let mut missing = faulty.clone();
    missing["counts"]
        .as_object_mut()
        .unwrap()
        .remove("failed_by_kind");
    let mut wrong_type = faulty.clone();
    wrong_type["latency_ms"]["ttft"]["p99"] = Value::String("fast".into());
    let mut bad_null = faulty.clone();
    bad_null["counts"]["ok"] = Value::Null;
    let mut bad_kind = faulty.clone();
    bad_kind["counts"]["failed_by_kind"]["gremlins"] = 1.into();
    let mut bad_salt = faulty.clone();
    bad_salt["workload"]["salt"]["tokens"] = (-1).into();
    let mut bad_ratio = faulty.clone();
    bad_ratio["tokens"]["input_server_ratio"] = Value::String("1.8".into());
    let mut no_source = faulty.clone();
    no_source["tokens"]
        .as_object_mut()
        .unwrap()
        .remove("input_source");
    for (name, broken) in [
        ("missing", missing),
        ("wrong type", wrong_type),
        ("null count", bad_null),
        ("unknown failure kind", bad_kind),
        ("negative salt", bad_salt),
        ("input ratio as text", bad_ratio),
        ("no input source", no_source),
    ] {
        assert!(!schema_errors(&broken).is_empty(), "{name} was accepted");
    }
    // Nullable where the figure can be missing: a server that does not stamp its writes.
    let mut unstamped = faulty.clone();
    unstamped["overhead"]["delivery_delay_ms"] = Value::Null;
    // ... and a server that sends no usage.prompt_tokens.
    unstamped["tokens"]["input_total_server"] = Value::Null;
    unstamped["tokens"]["input_server_ratio"] = Value::Null;
    assert_eq!(schema_errors(&unstamped), Vec::<String>::new());
}

/// Every failure keeps its reason through `requests.jsonl`: `ringbench report DIR` reads the
/// kept bodies back and writes `summary.json`'s `errors` (and the rest) byte for byte as the
/// run did.
#[test]
fn failure_reasons_survive_the_log_and_the_report_recomputes_them() {
    let dir = out_dir("reasons");
    let mut p = base_plan(&dir);
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(160),
        duration_ns: None,
    };
    p.sim.as_mut().unwrap().faults = FaultConfig {
        faults: [
            "http_500:0.1",
            "html_200:0.1",
            "error_event:0.1",
            "bad_utf8:0.05",
        ]
        .iter()
        .map(|f| f.parse::<FaultSpec>().unwrap())
        .collect(),
        seed: 11,
        stall_ms: 1_000,
        slow_head_ms: 100,
    };
    let s = run(&p);
    let errors = s["errors"].as_array().unwrap();
    let group = |kind: &str| errors.iter().find(|g| g["kind"] == kind).cloned();
    assert_eq!(
        group("http_500").map(|g| g["message"].clone()),
        Some("simulated error".into()),
        "{errors:?}"
    );
    assert_eq!(
        group("error_event").map(|g| g["message"].clone()),
        Some("simulated failure mid-stream".into())
    );
    let counted: u64 = errors.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(
        counted,
        s["counts"]["failed"].as_u64().unwrap(),
        "{errors:?}"
    );
    assert_eq!(schema_errors(&s), Vec::<String>::new());
    let again = out_dir("reasons-report");
    let ran = crate::support::common::output(&mut crate::support::common::ringbench([
        "report".as_ref(),
        dir.as_os_str(),
        "--out".as_ref(),
        again.as_os_str(),
    ]));
    // 4 when this loaded machine made the run invalid: the report says so again.
    assert!(matches!(ran.status.code(), Some(0 | 4)), "{}", ran.stderr);
    let (live, replayed) = (
        std::fs::read(dir.join("summary.json")).unwrap(),
        std::fs::read(again.join("summary.json")).unwrap(),
    );
    assert!(
        live == replayed,
        "report's summary.json differs from the run's"
    );
    // The console names the most frequent reason.
    let top = format!(
        "{} × {}",
        errors[0]["count"],
        errors[0]["kind"].as_str().unwrap()
    );
    assert!(ran.stdout.contains(&top), "{top} in {}", ran.stdout);
}

/// The warm-up rule of every line of `requests.jsonl`.
fn warmup_lines(dir: &Path) -> Vec<(bool, Option<String>)> {
    read_jsonl(&dir.join("requests.jsonl"))
        .iter()
        .map(|v| {
            let by = v["warmup_by"].as_str().map(str::to_string);
            (v["warmup"].as_bool().unwrap(), by)
        })
        .collect()
}

/// 200 req/s constant for 100 measured requests, warm-up as given.
fn warmup_run(name: &str, requests: u64, duration_ms: u64) -> (PathBuf, Value) {
    let dir = out_dir(name);
    let mut p = base_plan(&dir);
    p.load = Load::Open {
        request_rate: 200.0,
        arrival: Arrival::Constant,
        max_concurrency: None,
    };
    p.stop = Stop {
        request_count: None,
        duration_ns: Some(500_000_000),
    };
    p.warmup_requests = requests;
    p.warmup_duration_ns = duration_ms * 1_000_000;
    let s = run(&p);
    (dir, s)
}

fn counts(s: &Value) -> (u64, u64, u64, u64) {
    let c = &s["counts"];
    let w = &c["warmup_by"];
    let n = |v: &Value| v.as_u64().unwrap();
    (
        n(&c["warmup"]),
        n(&w["count"]),
        n(&w["duration"]),
        n(&w["both"]),
    )
}

#[test]
fn warmup_by_count_by_duration_and_both_are_reported_apart() {
    // By count only: the first 10 arrivals.
    let (dir, s) = warmup_run("warm-count", 10, 0);
    assert_eq!(counts(&s), (10, 10, 0, 0));
    let lines = warmup_lines(&dir);
    assert!(lines[..10]
        .iter()
        .all(|(w, by)| *w && by.as_deref() == Some("count")));
    assert!(lines[10..].iter().all(|(w, by)| !*w && by.is_none()));

    // By duration only: 200 ms at 200 req/s is 40 arrivals (±1 for where the first falls).
    let (dir, s) = warmup_run("warm-duration", 0, 200);
    let (total, by_count, by_duration, both) = counts(&s);
    assert!((39..=41).contains(&by_duration), "{by_duration}");
    assert_eq!((total, by_count, both), (by_duration, 0, 0));
    let lines = warmup_lines(&dir);
    let flagged = lines
        .iter()
        .filter(|(w, by)| *w && by.as_deref() == Some("duration"))
        .count();
    assert_eq!(flagged as u64, by_duration);

    // Both: the first 10 are under both rules, the next 30 under the duration only.
    let (dir, s) = warmup_run("warm-both", 10, 200);
    let (total, by_count, by_duration, both) = counts(&s);
    assert_eq!((by_count, both), (10, 10));
    assert!((39..=41).contains(&by_duration), "{by_duration}");
    assert_eq!(total, by_count + by_duration - both);
    let lines = warmup_lines(&dir);
    assert!(lines[..10]
        .iter()
        .all(|(_, by)| by.as_deref() == Some("both")));
    // Measured figures exclude all of them: 500 ms of measured arrivals at 200 req/s.
    let measured = s["counts"]["scheduled"].as_u64().unwrap();
    assert!((99..=101).contains(&measured), "{measured}");
    assert_eq!(s["latency_ms"]["e2e"]["count"].as_u64().unwrap(), measured);
    // The console says it too.
    let mut text = Vec::new();
    let summary: ringbench::summary::Summary = serde_json::from_value(s).unwrap();
    ringbench::output::console::print_console(&summary, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(&format!("{by_count} / {by_duration} / {both}")),
        "{text}"
    );
}
