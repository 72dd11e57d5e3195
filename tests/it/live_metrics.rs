//! `--metrics-listen`: the client's own live figures as Prometheus text. A real Prometheus
//! (Debian's, started with `prometheus.rs`'s helpers, scraping every 100 ms; `SKIPPED`
//! without the binary, a failure with `RINGBENCH_REQUIRE_PROMETHEUS=1`) scrapes the page of a
//! `ringbench run` against its built-in simulator at a constant rate, and its stored
//! achieved rate is `summary.json`'s within 1 %. Without a load: the Grafana dashboard in
//! `deploy/grafana/` queries only families the page serves (and shows every one of them,
//! beside vLLM's series of the `/metrics` fixture), and `docs/metrics.md` lists exactly the
//! page's families, from the code's own list (`LiveMetric::ALL`).

use crate::prometheus::{api, free_port, prometheus_or_skip, start_prometheus, stop};
use crate::support::common::{f, lock, made_dir, output, read_json, ringbench, u};
use ringbench::__private::exposition::{Kind, LiveMetric};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// `q` as a query string value.
fn encoded(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The instant query `q` at Prometheus's now: every series' (labels, value).
fn query(url: &str, q: &str) -> Vec<(Value, f64)> {
    let answer = api(url, &format!("/api/v1/query?query={}", encoded(q)))
        .unwrap_or_else(|| panic!("Prometheus answered nothing to {q}"));
    assert_eq!(answer["status"], "success", "{q}: {answer}");
    let result = answer["data"]["result"].as_array().unwrap().clone();
    result
        .into_iter()
        .map(|r| {
            let v = r["value"][1].as_str().unwrap().parse().unwrap();
            (r["metric"].clone(), v)
        })
        .collect()
}

/// The one value of `q`.
fn one(url: &str, q: &str) -> f64 {
    let r = query(url, q);
    assert_eq!(r.len(), 1, "{q}: {r:?}");
    r[0].1
}

/// Waits until Prometheus has tried the target once (`up` has a sample).
fn wait_for_up(url: &str, dir: &Path) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(25) {
        let up = api(url, "/api/v1/query?query=up");
        if up.is_some_and(|a| {
            a["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        }) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "Prometheus tried no scrape within 25 s: {}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
}

#[test]
fn a_real_prometheus_scrapes_the_live_page_and_stores_the_summarys_rate() {
    let test = "live_metrics::a_real_prometheus_scrapes_the_live_page_and_stores_the_summarys_rate";
    let Some(bin) = prometheus_or_skip(test) else {
        return;
    };
    let _g = lock();
    let dir = made_dir("live-metrics");
    let target = format!("127.0.0.1:{}", free_port());
    let (prometheus, url) = start_prometheus(&bin, &dir, &target);
    wait_for_up(&url, &dir);
    let out = dir.join("run");
    let ran = output(&mut ringbench([
        "run",
        "--request-rate",
        "100",
        "--arrival",
        "constant",
        "--duration",
        "4s",
        "--metrics-listen",
        &target,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        ran.stdout
            .contains(&format!("metrics listening on http://{target}/metrics")),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    let s = read_json(&out.join("summary.json"));
    let achieved = f(&s, "achieved.request_rate");
    // The gauge's last stored sample (staleness markers are not in a range).
    let gauge = "last_over_time(ringbench_achieved_requests_per_second[1m])";
    let stored = one(&url, gauge);
    let _ = writeln!(
        std::io::stderr(),
        "achieved rate: summary {achieved:.4}, Prometheus {stored:.4}"
    );
    assert!(
        (stored - achieved).abs() <= 0.01 * achieved,
        "Prometheus {stored} vs summary {achieved}"
    );
    let scrapes = one(&url, "count_over_time(ringbench_requests_sent_total[1m])");
    assert!(
        scrapes >= 20.0,
        "{scrapes} scrapes of a 4 s run every 100 ms"
    );
    // Counters only go up, and end at most at the summary's counts.
    let resets = one(&url, "resets(ringbench_requests_sent_total[1m])");
    assert_eq!(resets, 0.0);
    let sent = one(&url, "max_over_time(ringbench_requests_sent_total[1m])");
    let counted = u(&s, "counts.sent") as f64;
    assert!(
        sent <= counted && sent >= 0.9 * counted,
        "{sent} of {counted}"
    );
    let e2e = one(&url, "max_over_time(ringbench_e2e_seconds_count[1m])");
    let ok = u(&s, "counts.ok") as f64;
    assert!(e2e <= ok && e2e >= 0.9 * ok, "{e2e} of {ok}");
    let info = query(&url, "last_over_time(ringbench_info[1m])");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].0["model"], s["served"]["model"], "{info:?}");
    assert_eq!(info[0].0["run_id"], s["config"]["run_id"], "{info:?}");
    let cpu = query(
        &url,
        "max_over_time(ringbench_worker_cpu_seconds_total[1m])",
    );
    assert!(
        !cpu.is_empty() && cpu.iter().all(|(_, v)| *v > 0.0),
        "{cpu:?}"
    );
    assert!(!stop(prometheus), "Prometheus ended by itself");
    let refused = std::net::TcpStream::connect(&target);
    assert!(refused.is_err(), "the page is still served after the run");
}

/// Every `ringbench_…` name in `text`.
fn ringbench_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("ringbench_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

/// A series name to its family: a histogram's `_bucket`, `_sum`, `_count` taken off.
fn family(series: &str) -> Option<LiveMetric> {
    LiveMetric::ALL.into_iter().find(|m| {
        m.name() == series
            || (m.kind() == Kind::Histogram
                && ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|s| series.strip_suffix(s) == Some(m.name())))
    })
}

fn exprs(panels: &Value, out: &mut Vec<String>) {
    for p in panels.as_array().into_iter().flatten() {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(t["expr"].as_str().unwrap_or_default().to_string());
        }
        exprs(&p["panels"], out);
    }
}

#[test]
fn the_grafana_dashboard_queries_what_the_page_serves_beside_vllm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("deploy/grafana/ringbench.json")).unwrap();
    let d: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    assert!(d["schemaVersion"].as_u64().unwrap() >= 36);
    let inputs = d["__inputs"].as_array().unwrap();
    assert!(
        inputs
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["pluginId"] == "prometheus"),
        "{inputs:?}"
    );
    let mut all = vec![];
    exprs(&d["panels"], &mut all);
    assert!(all.len() >= 10, "{all:?}");
    let joined = all.join("\n");
    let mut shown = BTreeSet::new();
    for name in ringbench_names(&joined) {
        let m = family(&name).unwrap_or_else(|| panic!("{name}: the page serves no such series"));
        shown.insert(m.name());
    }
    let every: BTreeSet<&str> = LiveMetric::ALL.iter().map(|m| m.name()).collect();
    assert_eq!(shown, every, "families the dashboard does not show");
    // vLLM's side: names its /metrics page has.
    let fixture = root.join("tests/data/metrics/vllm-cpu-0.32.txt");
    let page = std::fs::read_to_string(fixture).unwrap();
    let mut vllm = 0;
    for expr in &all {
        for at in expr.match_indices("vllm:").map(|(i, _)| i) {
            let tail = &expr[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            let name = &tail[..end];
            assert!(
                page.contains(&format!("\n{name}")),
                "{name}: not on vLLM's page"
            );
            vllm += 1;
        }
    }
    assert!(vllm >= 5, "{vllm} vLLM series");
    // Every panel's datasource is the input.
    assert!(
        !text.contains("\"uid\": \"prometheus\""),
        "a fixed datasource uid"
    );
}

#[test]
fn docs_metrics_lists_exactly_the_pages_families() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("docs/metrics.md")).unwrap();
    let heading = "## Live metrics (`--metrics-listen`)";
    let at = text
        .find(heading)
        .expect("docs/metrics.md has the live metrics section");
    let section = &text[at..];
    let end = section[heading.len()..]
        .find("\n## ")
        .map_or(section.len(), |e| e + heading.len());
    let listed: BTreeSet<String> = (section[..end].lines())
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    let every: BTreeSet<String> = LiveMetric::ALL
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    assert_eq!(listed, every);
    for m in LiveMetric::ALL {
        let row = section[..end]
            .lines()
            .find(|l| l.starts_with(&format!("| `{}`", m.name())))
            .unwrap();
        assert!(
            row.contains(m.kind().name()),
            "{row}: says it is a {}",
            m.kind().name()
        );
    }
}
