//! The server's metrics read from a real Prometheus server (`--prometheus`) instead of
//! scraped: Debian's `prometheus` (2.42; `apt-get install prometheus`) started by the test on
//! a free loopback port with a store of its own, scraping a simulator of the test's own (the
//! engine model on) every 100 ms; a closed loop above `--max-num-seqs`; the `server` block
//! that comes back (source prometheus) against the records; a selector Prometheus refuses
//! and one that matches nothing; `report DIR` making the same block from the file. Without
//! the binary the test says `SKIPPED` (it fails instead with `RINGBENCH_REQUIRE_PROMETHEUS=1`,
//! as CI sets where it installed it). Prometheus is killed when the test ends, a panic
//! included. A Prometheus that cannot be reached is tested without the binary. Each test
//! holds the one lock: it runs a load. `live_metrics` starts the same Prometheus with these
//! helpers, scraping the client's own page instead.

use crate::support::common::{
    cpu_pair, lock, made_dir, read_json, run_summary, sim_plan, KillOnDrop,
};
use ringbench::__private::scrape::{Fetcher, GetOptions, MetricsUrl};
use ringbench::plan::{Load, Plan, SimSettings, Stop, Target};
use ringbench::sim::{self, SimConfig, SimHandle};
use serde_json::Value;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Prometheus's scrape interval in the test, ms.
pub(crate) const SCRAPE_MS: u64 = 100;
/// The range queries' step (`--server-metrics-interval`), ns.
const STEP_NS: u64 = 250_000_000;

/// The `prometheus` binary: on `PATH`, or Debian's `/usr/bin/prometheus`.
fn prometheus_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("prometheus"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from("/usr/bin/prometheus")).filter(|p| p.is_file()))
}

/// The binary, or `None` after a visible skip line; with `RINGBENCH_REQUIRE_PROMETHEUS=1` a
/// missing binary fails the test instead.
pub(crate) fn prometheus_or_skip(test: &str) -> Option<PathBuf> {
    let found = prometheus_binary();
    if found.is_none() {
        let why = "prometheus not installed (apt-get install prometheus)";
        crate::support::common::skip_or_require(test, "RINGBENCH_REQUIRE_PROMETHEUS", why);
    }
    found
}

/// Kills `child` now (it is also waited for when dropped); whether it had exited by itself
/// before.
pub(crate) fn stop(mut child: KillOnDrop) -> bool {
    matches!(child.0.try_wait(), Ok(Some(_)))
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus scraping `target` every 100 ms, with its config, store and log in `dir`.
pub(crate) fn start_prometheus(bin: &Path, dir: &Path, target: &str) -> (KillOnDrop, String) {
    let config = format!(
        "global:\n  scrape_interval: {SCRAPE_MS}ms\n  scrape_timeout: {SCRAPE_MS}ms\n\
         scrape_configs:\n  - job_name: ringbench-sim\n    static_configs:\n      \
         - targets: ['{target}']\n"
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new(bin)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("prometheus starts");
    (KillOnDrop(child), format!("http://127.0.0.1:{port}"))
}

/// `GET path` of the Prometheus at `url`, as JSON (`None` until it answers).
pub(crate) fn api(url: &str, path: &str) -> Option<Value> {
    let mut f = Fetcher::new(MetricsUrl::parse(url).unwrap(), &GetOptions::default()).ok()?;
    let (_, body) = f.get_any(path, Duration::from_secs(2)).ok()?;
    serde_json::from_str(body).ok()
}

/// Waits (at most `limit`) until Prometheus has stored samples of the simulator's running
/// gauge; false if it did not.
fn wait_for_samples(url: &str, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        let answer = api(url, "/api/v1/query?query=vllm%3Anum_requests_running");
        let result = answer.as_ref().and_then(|a| a["data"]["result"].as_array());
        if result.is_some_and(|r| !r.is_empty()) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Four slots, 10 ms of prefill and 1 ms a token: 16 users keep 12 waiting.
fn engine_sim() -> SimHandle {
    sim::start(SimConfig {
        settings: SimSettings {
            cpus: vec![cpu_pair().1],
            max_num_seqs: 4,
            prefill_overhead_ms: 10.0,
            itl_ms: 1.0,
            kv_cache_blocks: 4_096,
            ..SimSettings::default()
        },
        ..SimConfig::default()
    })
    .expect("the simulator starts")
}

/// A closed loop of `users` against `sim` for `duration_ns` (or `requests`), read from the
/// Prometheus at `prom` with `selector`.
fn plan(sim: &SimHandle, prom: &str, selector: Option<&str>, stop: Stop) -> Plan {
    let mut p = sim_plan();
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{}", sim.addr)).unwrap()];
    p.allow_concurrent = true;
    p.load = Load::Closed { concurrency: 16 };
    p.stop = stop;
    p.warmup_requests = 0;
    p.max_lag_ms = 1e9;
    p.server_metrics.interval_ns = STEP_NS;
    p.server_metrics.prometheus = Some(prom.to_string());
    p.server_metrics.prometheus_selector = selector.map(str::to_string);
    p
}

fn warned(s: &Value, text: &str) -> bool {
    s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains(text))
}

#[test]
fn a_real_prometheus_gives_the_server_block_of_the_run() {
    let Some(bin) =
        prometheus_or_skip("prometheus::a_real_prometheus_gives_the_server_block_of_the_run")
    else {
        return;
    };
    let _g = lock();
    let began = Instant::now();
    let dir = made_dir("real");
    let sim = engine_sim();
    let target = sim.addr.to_string();
    let (prometheus, url) = start_prometheus(&bin, &dir, &target);
    assert!(
        wait_for_samples(&url, Duration::from_secs(25)),
        "Prometheus stored no sample of the simulator within 25 s: {}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
    the_runs_block_matches_its_records(&sim, &url, &target, &dir.join("run"));
    refused_and_unmatched_selectors_cost_a_warning(&sim, &url);
    let port = url.rsplit(':').next().unwrap().to_string();
    assert!(
        !stop(prometheus),
        "Prometheus ended by itself before the test did"
    );
    let refused = TcpStream::connect(format!("127.0.0.1:{port}"));
    assert!(
        refused.is_err(),
        "Prometheus still listens after it was killed"
    );
    drop(sim.stop());
    let took = began.elapsed();
    assert!(took < Duration::from_secs(60), "the test took {took:?}");
}

/// Three seconds of 16 users on 4 slots, read every 250 ms: the block's source, gauges,
/// token counters and histogram against the records, and `report DIR` from the file.
fn the_runs_block_matches_its_records(sim: &SimHandle, url: &str, target: &str, out: &Path) {
    let stop = Stop {
        request_count: None,
        duration_ns: Some(3_000_000_000),
    };
    let mut p = plan(sim, url, Some("{job=\"ringbench-sim\"}"), stop);
    p.out_dir = Some(out.to_path_buf());
    let s = run_summary(&p);
    let server = &s["server"];
    let _ = writeln!(std::io::stderr(), "prometheus server block: {server}");
    assert_eq!(s["counts"]["failed"], 0, "{}", s["counts"]);
    assert_eq!(server["source"], "prometheus", "{server}");
    assert_eq!(server["urls"][0], url);
    let via = &server["prometheus"];
    assert_eq!((&via["url"], &via["step_s"]), (&url.into(), &0.25.into()));
    assert_eq!(via["selector"], "{job=\"ringbench-sim\"}");
    let want_target = format!("{{instance=\"{target}\",job=\"ringbench-sim\"}}");
    assert_eq!(via["targets"], serde_json::json!([want_target]), "{via}");
    assert_eq!(server["engine"], "vllm", "{server}");
    assert_eq!(server["scrapes_failed"], 0, "{server}");
    // 3 s every 250 ms: 13 steps, and the closing point.
    let points = server["scrapes_ok"].as_u64().unwrap();
    assert!((12..=15).contains(&points), "{points} points");
    let max = |g: &str| server["gauges"][g]["max"].as_f64().unwrap();
    let gauges = &server["gauges"];
    assert!(max("running") > 0.0 && max("running") <= 4.0, "{gauges}");
    assert!(
        max("waiting") > 0.0 && max("kv_cache_usage") > 0.0,
        "{gauges}"
    );
    // The counters' deltas: Prometheus's last sample at or before each edge. The window opens
    // on an idle server and closes 250 ms after the last request, so with a scrape every
    // 100 ms both edges' samples bound the run and the delta is exact; the tolerance is the
    // tokens of two scrape intervals at the run's rate, for a scrape that came late or failed
    // (a failed one makes the series stale until the next) on this shared machine.
    let client = s["tokens"]["output_total"].as_f64().unwrap();
    let counter = |c: &str| server["counters"][c]["delta"].as_f64().unwrap();
    let delta = counter("generation_tokens");
    let rate = s["throughput"]["output_tokens_per_s"].as_f64().unwrap();
    let tolerance = rate * 2.0 * SCRAPE_MS as f64 / 1e3;
    let _ = writeln!(
        std::io::stderr(),
        "generation tokens: client {client}, Prometheus {delta} (tolerance {tolerance:.0}); \
         prompt tokens: client {}, Prometheus {}",
        s["tokens"]["input_total_server"],
        counter("prompt_tokens")
    );
    assert!(
        client > 0.0 && (client - delta).abs() <= tolerance,
        "{client} vs {delta}"
    );
    let diff = &server["client_minus_server"]["generation_tokens"];
    assert_eq!(diff.as_f64(), Some(client - delta));
    let ok = s["counts"]["ok"].as_f64().unwrap();
    let ttft = &server["histograms"]["ttft"];
    let ttft_count = ttft["count"].as_f64().unwrap();
    assert!(
        (ok - ttft_count).abs() <= tolerance / 16.0 + 1.0,
        "{ok} vs {ttft_count}"
    );
    assert!(ttft["p50_ms"].as_f64().unwrap() > 0.0, "{ttft}");
    // One line per step and target, read back by `report DIR` into the same block.
    let lines = std::fs::read_to_string(out.join("server_metrics.jsonl")).unwrap();
    assert_eq!(lines.lines().count() as u64, points);
    assert!(
        lines.lines().all(|l| l.contains("\"prometheus\":{")),
        "{lines}"
    );
    let again = ringbench::report::recompute(out, &Default::default()).unwrap();
    assert_eq!(serde_json::to_value(&again).unwrap()["server"], *server);
    let written = read_json(&out.join("summary.json"));
    assert_eq!(written["server"], *server);
    let errors = crate::outputs::schema_errors(&written);
    assert_eq!(errors, Vec::<String>::new());
}

/// A selector Prometheus refuses: a counted failure and a warning, the run unchanged. One
/// that matches nothing: no block, and the warning says why.
fn refused_and_unmatched_selectors_cost_a_warning(sim: &SimHandle, url: &str) {
    let short = Stop {
        request_count: Some(40),
        duration_ns: None,
    };
    let bad = run_summary(&plan(sim, url, Some("{job=~\"(\"}"), short.clone()));
    assert_eq!(bad["counts"]["ok"], 40, "{}", bad["counts"]);
    let block = &bad["server"];
    assert_eq!(block["scrapes_failed"], 1, "{block}");
    assert_eq!(block["failures_by_kind"]["query_bad_data"], 1, "{block}");
    let refused = "Prometheus refused the query (bad_data)";
    assert!(warned(&bad, refused), "{}", bad["warnings"]);
    let none = run_summary(&plan(sim, url, Some("{job=\"nope\"}"), short));
    assert_eq!(none["counts"]["ok"], 40);
    assert!(none["server"].is_null(), "{}", none["server"]);
    assert!(warned(&none, "no series of"), "{}", none["warnings"]);
}

#[test]
fn a_prometheus_that_cannot_be_reached_costs_the_run_a_counted_warning() {
    let _g = lock();
    let sim = engine_sim();
    let gone = format!("http://127.0.0.1:{}", free_port());
    let s = run_summary(&plan(
        &sim,
        &gone,
        None,
        Stop {
            request_count: Some(40),
            duration_ns: None,
        },
    ));
    drop(sim.stop());
    assert_eq!(s["counts"]["ok"], 40, "{}", s["counts"]);
    let server = &s["server"];
    assert_eq!(server["source"], "prometheus", "{server}");
    assert_eq!(server["scrapes_failed"], 1, "{server}");
    assert_eq!(server["failures_by_kind"]["connect"], 1, "{server}");
    assert!(server["gauges"].as_object().unwrap().is_empty());
    assert!(
        warned(&s, "Prometheus queries failed: 1 (connect 1)"),
        "{}",
        s["warnings"]
    );
    assert!(warned(&s, "not read from Prometheus"), "{}", s["warnings"]);
}
