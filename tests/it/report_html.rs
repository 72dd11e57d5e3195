//! `report.html` as a reader gets it. Without a browser: the page opens with the run's
//! context (tool, server, model, endpoint, load, seed, warm-up, tokenizer, host), the verdict
//! in the console's words, an interruption and the requests never sent, and no goodput when
//! none was asked. In a real browser — Debian's `chromium`, headless, opening the file from
//! `file://` with no network — the page's own script says what happened: no error (script
//! or console), and every chart drawn (`data-charts-drawn` equals `data-charts-expected`),
//! for a run and for a sweep. Without chromium those tests say SKIPPED (they fail instead
//! with `RINGBENCH_REQUIRE_CHROMIUM=1`, as CI sets where it installed it). Each test holds
//! the one lock: it runs a load.

use crate::support::common::{self, lock, out_dir, output, sim_plan};
use ringbench::plan::{Load, Slo, SloMetric};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `chromium` on `PATH` (Debian's package), or `/usr/bin/chromium`.
fn chromium_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file()))
}

/// The binary, or `None` after a visible skip line; with `RINGBENCH_REQUIRE_CHROMIUM=1` a
/// missing binary fails the test instead.
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let found = chromium_binary();
    if found.is_none() {
        let why = "chromium not installed (apt-get install chromium)";
        crate::support::common::skip_or_require(test, "RINGBENCH_REQUIRE_CHROMIUM", why);
    }
    found
}

/// The DOM of `page` after headless chromium loaded it and ran its scripts (virtual time
/// lets every timer run), from a fresh profile, every background fetch off (it would hang
/// on a closed network).
fn dump_dom(bin: &Path, page: &Path, scratch: &Path) -> String {
    let profile = scratch.join("chromium-profile");
    let dom_file = scratch.join("dom.html");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            "--virtual-time-budget=20000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&dom_file).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let code = common::wait_within(&mut child, Duration::from_secs(180));
    assert_eq!(code, 0, "chromium exited {code}");
    std::fs::read_to_string(dom_file).unwrap()
}

/// The value of attribute `name` of the `<body>` element of `dom`.
fn body_attr(dom: &str, name: &str) -> Option<String> {
    let body = &dom[dom.find("<body")?..];
    let tag = &body[..body.find('>')?];
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(tag[at..].split('"').next()?.to_string())
}

/// Opens `page` in chromium and checks the page's own score: no error, every chart drawn,
/// at least `min_charts` of them.
fn every_chart_draws(bin: &Path, page: &Path, min_charts: usize) {
    let scratch = page.parent().unwrap();
    let dom = dump_dom(bin, page, scratch);
    let attr = |n: &str| body_attr(&dom, n).unwrap_or_else(|| panic!("no {n} on <body>"));
    let errors = dom
        .split("id=\"chart-errors\"")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap_or("");
    assert_eq!(attr("data-errors"), "0", "errors: {errors}");
    let expected: usize = attr("data-charts-expected").parse().unwrap();
    assert!(expected >= min_charts, "{expected} charts");
    assert_eq!(attr("data-charts-drawn"), expected.to_string());
    assert!(
        dom.matches("class=\"uplot").count() >= expected,
        "each chart is a uPlot"
    );
    let _ = std::fs::remove_dir_all(scratch.join("chromium-profile"));
}

/// The page needs nothing from outside itself: no script, style or image fetched, and its
/// only links are to its own static plots.
fn self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for fetch in [
        "src=", "<link", "@import", "url(", "<iframe", "<img", "fetch(",
    ] {
        assert!(!lower.contains(fetch), "report.html has '{fetch}'");
    }
    for link in lower.split("href=\"").skip(1) {
        assert!(link.starts_with("plots/"), "a link out: {:.60}", link);
    }
}

#[test]
fn a_runs_report_says_what_ran_and_draws_every_chart_in_chromium() {
    let _g = lock();
    let dir = out_dir("run");
    let mut plan = sim_plan();
    plan.stop.request_count = None;
    plan.stop.duration_ns = Some(2_500_000_000);
    plan.load = Load::Closed { concurrency: 2 };
    plan.seed = 4242;
    plan.model = Some("report-model".into());
    plan.goodput = vec![Slo {
        metric: SloMetric::Ttft,
        max_ms: 500.0,
    }];
    plan.out_dir = Some(dir.clone());
    let summary = ringbench::run(&plan).unwrap();
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    self_contained(&html);
    let model = summary.config["model"]
        .as_str()
        .expect("the model is recorded");
    for want in [
        "<h2>Context</h2>",
        &format!("ringbench {}", env!("CARGO_PKG_VERSION")),
        "the built-in simulator",
        &format!("<th>Model</th><td>{model}</td>"),
        "chat (/v1/chat/completions), streamed",
        "closed loop, 2 users",
        "<th>Seed</th><td>4242</td>",
        "<th>Tokenizer</th><td>none",
        "<th>Client host</th>",
        "goodput",
        "TTFT of each request against its send time",
    ] {
        assert!(html.contains(want), "no '{want}' in report.html");
    }
    let said =
        ringbench::output::console::verdict_words(summary.exit(false), !summary.overhead.valid);
    assert!(html.contains(&said), "the verdict as the console says it");
    if let Some(bin) = chromium_or_skip("a_runs_report_draws_every_chart_in_chromium") {
        // CDFs of TTFT and ITL, rate, latency and tokens over time, the TTFT scatter.
        every_chart_draws(&bin, &page, 6);
    }
    // Interrupted, 529 never sent, no SLO: the head says so, and says nothing of goodput.
    let mut cut = summary.clone();
    cut.interrupted = true;
    cut.counts.scheduled = cut.counts.tally.sent + 529;
    cut.counts.tally.not_sent = 529;
    cut.throughput.goodput_requests_per_s = None;
    cut.config["goodput"] = serde_json::json!([]);
    let html =
        std::fs::read_to_string(ringbench::output::html::write_run_report(&dir, &cut).unwrap())
            .unwrap();
    let never = format!(
        "529 of {} scheduled requests were never sent",
        cut.counts.scheduled
    );
    assert!(html.contains("Interrupted by a signal") && html.contains(&never));
    assert!(!html.to_ascii_lowercase().contains("goodput"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweeps_report_uses_the_consoles_words_and_draws_every_chart_in_chromium() {
    let _g = lock();
    let dir = out_dir("sweep");
    let out = output(
        common::ringbench([
            "sweep",
            "--concurrency",
            "1,2",
            "--request-count",
            "40",
            "--output-tokens",
            "4",
            "--slo",
            "ttft:p99<5000ms",
            // A loaded machine may make a point invalid: its verdict is still the console's.
            "--allow-invalid",
            "--quiet",
        ])
        .arg("--out")
        .arg(&dir),
    );
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    self_contained(&html);
    assert!(
        html.contains("<td class=\"pass\">PASS</td>"),
        "the console's PASS"
    );
    assert!(html.contains("2 PASS") && html.contains("<h2>Context</h2>"));
    if let Some(bin) = chromium_or_skip("a_sweeps_report_draws_every_chart_in_chromium") {
        // Throughput and TTFT/ITL/E2E vs load, then the focus run's CDFs and scatter (its
        // timeline is too short to draw once its partial last second is left out).
        every_chart_draws(&bin, &page, 7);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
