//! The server's own metrics beside a run (the `scrape` side of the flow, joined at the
//! summary): the `server` block against the simulator's engine model and its own truth, the
//! token counters against the records, failing `/metrics` endpoints that must cost the run
//! nothing, and `report DIR` making the same block from `server_metrics.jsonl`. Each test
//! holds the one lock: it runs a load.

use crate::scrape::{server, Answer};
use crate::support::common::{lock, made_dir, read_json, read_jsonl, run_summary, sim_plan};
use ringbench::plan::{Plan, SimSettings};
use serde_json::Value;

/// vLLM's `vllm:time_to_first_token_seconds` bounds, in ms (the simulator's are the same:
/// `engine::metrics_has_every_vllm_family_with_its_type` holds them to the real page's).
const TTFT_BOUNDS_MS: [f64; 22] = [
    1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0,
    7500.0, 10000.0, 20000.0, 40000.0, 80000.0, 160000.0, 640000.0, 2560000.0,
];

/// `engine::closed`, scraped every 100 ms.
fn closed(p: &mut Plan, users: u32, requests: u64) {
    crate::engine::closed(p, users, requests);
    p.server_metrics.interval_ns = 100_000_000;
}

/// Four slots, 10 ms of prefill each, a KV cache: 16 users keep 12 waiting.
fn engine_plan() -> Plan {
    let mut p = sim_plan();
    *p.sim.as_mut().unwrap() = SimSettings {
        max_num_seqs: 4,
        prefill_overhead_ms: 10.0,
        kv_cache_blocks: 4_096,
        cpus: p.sim.as_ref().unwrap().cpus.clone(),
        ..SimSettings::default()
    };
    closed(&mut p, 16, 240);
    p
}

/// The width of the TTFT bucket `ms` falls in.
fn bucket_width(ms: f64) -> f64 {
    let i = TTFT_BOUNDS_MS.iter().position(|&b| ms <= b).unwrap();
    TTFT_BOUNDS_MS[i] - if i == 0 { 0.0 } else { TTFT_BOUNDS_MS[i - 1] }
}

#[test]
fn the_server_block_sees_the_queue_the_cache_and_the_truths_ttft() {
    let _g = lock();
    let s = run_summary(&engine_plan());
    assert_eq!(s["counts"]["ok"], 240, "{}", s["counts"]);
    let server = &s["server"];
    assert_eq!(server["engine"], "vllm", "{server}");
    assert_eq!(server["scrapes_failed"], 0, "{server}");
    let max = |g: &str| server["gauges"][g]["max"].as_f64().unwrap();
    // 240 requests, 4 at a time, 10 ms each: 600 ms of 12 waiting, scraped every 100 ms.
    assert!(max("waiting") > 0.0, "{}", server["gauges"]);
    assert!(max("kv_cache_usage") > 0.0, "{}", server["gauges"]);
    assert!(max("running") <= 4.0, "{}", server["gauges"]);
    // The server's TTFT (from its histogram's delta) within one bucket of its own truth.
    let truth_ms = s["overhead"]["sim"]["ttft_us"]["p50"].as_f64().unwrap() / 1e3;
    let server_ms = server["histograms"]["ttft"]["p50_ms"].as_f64().unwrap();
    assert!(
        (server_ms - truth_ms).abs() <= bucket_width(truth_ms),
        "server TTFT p50 {server_ms} ms, the simulator's truth {truth_ms} ms"
    );
    assert_eq!(server["histograms"]["ttft"]["count"], 240);
    // Token counters: the window holds every request, and nothing else.
    let delta = |c: &str| server["counters"][c]["delta"].as_f64().unwrap();
    assert_eq!(
        delta("generation_tokens"),
        s["tokens"]["output_total"].as_f64().unwrap()
    );
    assert_eq!(
        delta("prompt_tokens"),
        s["tokens"]["input_total_server"].as_f64().unwrap()
    );
    assert_eq!(server["client_minus_server"]["generation_tokens"], 0.0);
    assert_eq!(server["client_minus_server"]["prompt_tokens"], 0.0);
    // The client's TTFT includes the server's: what the rest adds is not negative at p50
    // by more than the server's bucket can be off.
    // None is computed from a coarse percentile (its bucket wider than a quarter of it).
    let ttft = &server["histograms"]["ttft"];
    match server["client_minus_server"]["ttft_p50_ms"].as_f64() {
        Some(diff) => assert!(
            diff > -bucket_width(server_ms),
            "client − server TTFT p50 {diff} ms"
        ),
        None => assert!(!ttft["ranges"]["p50_ms"].is_null(), "{ttft}"),
    }
}

/// A closed loop's measured requests start only after its warm-up has drained and the
/// boundary was scraped: the server's window then holds the measured requests exactly (before
/// the gate, 16 users' warm-up still running at the mark were counted too: 88 server TTFTs
/// for 80 measured requests on vLLM with 8 users).
#[test]
fn a_closed_loops_warmup_drains_before_the_measured_window_opens() {
    let _g = lock();
    let mut p = engine_plan();
    p.warmup_requests = 40;
    let dir = made_dir("warmup-gate");
    p.out_dir = Some(dir.clone());
    let s = run_summary(&p);
    assert_eq!(s["counts"]["ok"], 240, "{}", s["counts"]);
    assert_eq!(s["counts"]["warmup"], 40, "{}", s["counts"]);
    let server = &s["server"];
    assert_eq!(server["histograms"]["ttft"]["count"], 240, "{server}");
    assert_eq!(server["histograms"]["e2e"]["count"], 240, "{server}");
    assert_eq!(server["client_minus_server"]["generation_tokens"], 0.0);
    assert_eq!(server["client_minus_server"]["prompt_tokens"], 0.0);
    let records = read_jsonl(&dir.join("requests.jsonl"));
    let ns = |r: &Value, k: &str| r[k].as_u64().unwrap();
    let (warm, measured): (Vec<&Value>, Vec<&Value>) =
        records.iter().partition(|r| r["warmup"] == true);
    assert_eq!((warm.len(), measured.len()), (40, 240));
    let last_warm_done = warm.iter().map(|r| ns(r, "done_ns")).max().unwrap();
    let first_sent = measured.iter().map(|r| ns(r, "sent_ns")).min().unwrap();
    assert!(
        first_sent > last_warm_done,
        "a measured request was sent at {first_sent} ns, before the warm-up's last ended at \
         {last_warm_done} ns"
    );
    // Each user's first measured request is due when the gate opened, not when it got there.
    let first_intended = measured.iter().map(|r| ns(r, "intended_ns")).min().unwrap();
    assert!(first_intended > last_warm_done);
}

#[test]
fn failing_metrics_endpoints_cost_the_run_nothing_but_a_warning() {
    let _g = lock();
    let bad_status = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops";
    let garbage = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{{{ not }";
    for (answer, kind) in [
        (Answer::Stall, "timeout"),
        (Answer::Reset, "reset"),
        (Answer::Bytes(bad_status), "http_500"),
        (Answer::Bytes(garbage), "not_prometheus"),
    ] {
        let mut p = sim_plan();
        closed(&mut p, 4, 300);
        p.server_metrics.urls = vec![server(answer)];
        let s = run_summary(&p);
        assert_eq!(s["counts"]["ok"], 300, "{kind}: {}", s["counts"]);
        assert_eq!(s["counts"]["failed"], 0, "{kind}");
        let server = &s["server"];
        let failed = server["scrapes_failed"].as_u64().unwrap();
        assert!(failed >= 2, "{kind}: {server}");
        assert_eq!(server["failures_by_kind"][kind], failed, "{kind}: {server}");
        assert_eq!(server["scrapes_ok"], 0, "{kind}");
        let warned = s["warnings"].as_array().unwrap().iter().any(|w| {
            w.as_str()
                .unwrap()
                .contains(&format!("{failed} of {failed} scrapes"))
        });
        assert!(warned, "{kind}: {}", s["warnings"]);
    }
}

#[test]
fn report_makes_the_same_server_block_from_the_file_and_no_scrape_means_none() {
    let _g = lock();
    let dir = made_dir("server-metrics-report");
    let mut p = engine_plan();
    p.out_dir = Some(dir.clone());
    let ran = run_summary(&p);
    assert!(ran["server"].is_object());
    let lines = std::fs::read_to_string(dir.join("server_metrics.jsonl")).unwrap();
    assert!(lines.lines().count() >= 3, "{lines}");
    let again = ringbench::report::recompute(&dir, &Default::default()).unwrap();
    let again = serde_json::to_value(&again).unwrap();
    assert_eq!(again["server"], ran["server"]);
    let written: Value = read_json(&dir.join("summary.json"));
    assert_eq!(written["server"], ran["server"]);

    let off = made_dir("server-metrics-off");
    let mut p = engine_plan();
    p.out_dir = Some(off.clone());
    p.server_metrics.enabled = false;
    let s = run_summary(&p);
    assert!(s["server"].is_null(), "{}", s["server"]);
    assert!(!off.join("server_metrics.jsonl").exists());
}
