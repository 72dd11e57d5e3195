//! Sweep and search end to end, on the built-in simulator with its load model on (TTFT grows
//! 4 ms per other request in flight), so the SLO crossing is known: ttft ≈ 2 + 4(c − 1) ms,
//! and `ttft:p95<160ms` holds up to 40 users (a steep slope, so a few ms of scheduling
//! noise on a busy machine moves it by under one user). The search must land within 5% of
//! what a one-user-step sweep finds. Points are short (200 requests of 2 tokens); runs are
//! serialized with the one lock, as in `e2e`.

use crate::support::common::{self, lock, out_dir, read_json};
use ringbench::plan::{Load, Plan};
use ringbench::study::search::{search, SearchSpec};
use ringbench::study::sweep::{self, PointSpec};
use ringbench::summary::study::SloBound;
use ringbench::summary::study::{point_dir_name, Axis, Sweep};
use std::time::Duration;

/// The simulator with its load model on: TTFT 2 ms plus 4 ms per other request in flight.
fn sim_plan() -> Plan {
    let mut p = common::sim_plan();
    let sim = p.sim.as_mut().unwrap();
    sim.ttft_ms = 2.0;
    sim.ttft_per_inflight_ms = 4.0;
    p.output_tokens = 2;
    p.stop.request_count = Some(200);
    p
}

fn spec() -> PointSpec {
    PointSpec {
        axis: Axis::Concurrency,
        repeats: 1,
        slos: vec![SloBound::parse("ttft:p95<160ms").unwrap()],
        warmup_given: false,
        // On a busy shared machine a point's run can read invalid now and then (a 1 ms
        // scheduling hiccup in 1% of sends). These tests are about the curve and the search,
        // not the client's overhead (`sweep_cli` covers that), so such points count.
        allow_invalid: true,
    }
}

#[test]
fn search_agrees_with_a_fine_sweep_within_five_percent() {
    let _g = lock();
    let plan = sim_plan();
    let spec = spec();
    let loads: Vec<f64> = (32..=46).map(f64::from).collect();
    let fine = sweep::sweep(&plan, &spec, &loads, Duration::ZERO, None, |_| {}).unwrap();
    let swept = fine
        .analysis
        .highest_pass
        .expect("the fine sweep has a passing point");
    assert!(
        (33.0..=43.0).contains(&swept),
        "the load model puts the crossing near 40 users, the sweep says {swept}"
    );
    let s = SearchSpec {
        axis: Axis::Concurrency,
        start: 1.0,
        factor: 2.0,
        max_load: 256.0,
        tolerance: 0.05,
        max_iterations: 20,
        slos: spec.slos.clone(),
        allow_invalid: true,
    };
    let mut probes = vec![];
    let found = search(
        &s,
        |load| sweep::measure(&plan, &spec, None, load),
        |p| probes.push(p.load),
    )
    .unwrap();
    let answer = found.answer.expect("the search finds a passing load");
    assert!(found.converged, "{}", found.stop_reason);
    assert!(
        (answer - swept).abs() <= 0.05 * swept,
        "search {answer} vs fine sweep {swept} (probes {probes:?})"
    );
    assert_eq!(probes.len(), found.probes.len());
    // Steps, bisections, and one confirming repeat of each end of the final bracket.
    assert!(probes.len() <= 16, "{probes:?}");
    assert!(found.probes.iter().any(|p| p.phase == "confirm"));
}

#[test]
fn sweep_writes_json_and_csv_and_no_knee_on_a_falling_curve() {
    let _g = lock();
    let plan = sim_plan();
    let spec = spec();
    let dir = out_dir("sweep");
    let loads = sweep::parse_grid("log:1:64:6", Axis::Concurrency).unwrap();
    let mut seen = 0;
    let s = sweep::sweep(&plan, &spec, &loads, Duration::ZERO, Some(&dir), |_| {
        seen += 1
    })
    .unwrap();
    assert_eq!(seen, loads.len());
    // Throughput c / (2 + 4(c − 1)) per ms falls from one user on (500 req/s towards 250):
    // no load in range is where it stops growing, and the analysis says so rather than
    // calling the lowest load a knee.
    assert!(s.analysis.knee.is_none(), "{:?}", s.analysis.knee);
    let note = s.analysis.knee_note.as_deref().unwrap();
    assert!(
        note.contains("throughput component missing") && note.contains("below the range"),
        "{note}"
    );
    let first = &s.points[0];
    assert!(first.pass && !s.points.last().unwrap().pass);
    assert!(first.achieved_concurrency.median.unwrap() > 0.5);
    assert!(
        s.points
            .iter()
            .all(|p| p.goodput_requests_per_s.median.is_some())
            || plan.goodput.is_empty()
    );
    let crossing = s.analysis.slo_crossing.unwrap();
    let hp = s.analysis.highest_pass.unwrap();
    assert!(crossing >= hp, "{crossing} < {hp}");
    ringbench::output::study::write_sweep(&dir, &s).unwrap();
    let json = read_json(&dir.join("sweep.json"));
    assert_eq!(json["points"].as_array().unwrap().len(), loads.len());
    assert!(json["points"][0]["runs"][0]["latency_ms"]["ttft"]["p95"].is_number());
    assert!(json["analysis"]["knee"].is_null());
    assert!(json["analysis"]["knee_note"].is_string());
    assert!(json["analysis"]["throughput_knee"]["note"].is_string());
    assert!(json["analysis"]["latency_knee"].is_object());
    assert!(json["points"][0]["valid"].is_boolean());
    assert_eq!(json["interrupted"], false);
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), loads.len() + 1);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains("\"slo ttft:p95<160ms\""));
    for l in &loads {
        assert!(dir
            .join(point_dir_name(Axis::Concurrency, *l, 0))
            .join("summary.json")
            .exists());
    }
    assert!(matches!(plan.load, Load::Closed { .. }));
    report_is_self_contained_and_plots_carry_data(&dir, &s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The knee against the load model where it is known. TTFT 8 ms + 1 ms per other request
/// in flight, 2 tokens, no inter-token delay: in a closed loop of c users every request
/// sees c − 1 others, so e2e ≈ 7 + c ms, a straight line, and throughput X(c) = c / (7 + c)
/// per ms saturates towards 1000 req/s. On a straight latency line the combined knee is
/// Kneedle on throughput vs load, and its continuous optimum is where X's slope 7/(7 + c)²
/// equals the chord's (X(30) − X(2)) / 28: c = √(7·28 / (X(30) − X(2))) − 7 ≈ 11.3.
/// The grid is 2, 6, …, 30; the reported knee must be a grid point within one step (4
/// users) of it, i.e. 10 or 14. The latency curve has no bend of its own (a line), so its
/// own knee must be absent, not placed by noise.
#[test]
fn sweep_knee_matches_the_load_model() {
    let _g = lock();
    let mut plan = sim_plan();
    let sim = plan.sim.as_mut().unwrap();
    sim.ttft_ms = 8.0;
    sim.ttft_per_inflight_ms = 1.0;
    let spec = PointSpec {
        slos: vec![],
        ..spec()
    };
    let loads = sweep::parse_grid("lin:2:30:8", Axis::Concurrency).unwrap();
    assert_eq!(loads, [2.0, 6.0, 10.0, 14.0, 18.0, 22.0, 26.0, 30.0]);
    let s = sweep::sweep(&plan, &spec, &loads, Duration::ZERO, None, |_| {}).unwrap();
    let model_x = |c: f64| 1000.0 * c / (7.0 + c);
    // The premise: the measured curve is the model's, within a shared machine's noise. A
    // closed loop of 200 requests ends on a partial round of its c users, so throughput
    // reads up to c/200 under the model's.
    for p in &s.points {
        let x = p.throughput_requests_per_s.median.unwrap();
        let e2e = p.latency_ms["e2e_p50"].median.unwrap();
        let c = p.load;
        let ratio = x / model_x(c);
        assert!(
            ratio < 1.05 && ratio > 0.95 - c / 200.0,
            "c={c}: {x} req/s, model {}",
            model_x(c)
        );
        assert!(
            (e2e - (7.0 + c)).abs() < 0.5 + 0.15 * (7.0 + c),
            "c={c}: e2e p50 {e2e} ms, model {}",
            7.0 + c
        );
    }
    let (x0, x1) = (model_x(2.0) / 1000.0, model_x(30.0) / 1000.0);
    let analytic = (7.0 * 28.0 / (x1 - x0)).sqrt() - 7.0;
    assert!((analytic - 11.25).abs() < 0.1, "{analytic}");
    let a = &s.analysis;
    let knee = a.knee.as_ref().unwrap_or_else(|| panic!("no knee: {a:?}"));
    assert!(
        (knee.load - analytic).abs() <= 4.0,
        "knee at {} users, the model's at {analytic:.2} (± one grid step of 4)",
        knee.load
    );
    assert!(
        knee.method.contains("latency-throughput"),
        "{}",
        knee.method
    );
    let tk = a.throughput_knee.knee.as_ref().expect("throughput bends");
    assert!((tk.load - analytic).abs() <= 4.0, "{tk:?}");
    assert!(
        a.latency_knee.knee.is_none(),
        "latency is a straight line in c; a latency knee at {:?} is noise",
        a.latency_knee.knee
    );
    // The plots mark the same knee, on throughput and on e2e.
    let marked = |c: ringbench::output::plot::Chart| c.vlines.iter().any(|v| v.1 == knee.load);
    assert!(marked(ringbench::output::plot::throughput_chart(&s)));
    assert!(marked(ringbench::output::plot::latency_chart(&s, "e2e")));
}

/// The open-loop knee against the load model. TTFT 5 ms + 1 ms per other request in flight,
/// 2 tokens, constant arrivals at rate λ: below capacity Little's law gives n = λ·e2e and
/// e2e = 5 + (n − 1) ms, so e2e = 4 / (1 − λ/1000) ms, climbing without bound towards the
/// capacity of 1000 req/s, where throughput stops following the rate. Past it the queue
/// grows for the whole run. On the grid 250, 500, …, 2000 the knee must lie within one step
/// (250 req/s) below the capacity, and the latency knee must not come before latency has
/// actually risen: at 625 req/s the model's e2e is twice its value at 250 (5.3 → 10.7 ms),
/// so the first grid point where it has is 750. Points may read invalid on a busy machine
/// (scheduling lag over 1 ms near the capacity); the latency figures are from send stamps,
/// so they are counted here (`allow_invalid`).
#[test]
fn open_loop_knee_is_at_the_load_models_capacity() {
    let _g = lock();
    let mut plan = sim_plan();
    let sim = plan.sim.as_mut().unwrap();
    sim.ttft_ms = 5.0;
    sim.ttft_per_inflight_ms = 1.0;
    plan.load = Load::Open {
        request_rate: 250.0,
        arrival: ringbench::plan::Arrival::Constant,
        max_concurrency: None,
    };
    plan.stop.request_count = Some(300);
    plan.warmup_requests = 20;
    let spec = PointSpec {
        axis: Axis::Rate,
        slos: vec![],
        warmup_given: true,
        ..spec()
    };
    let rates: Vec<f64> = (1..=8).map(|i| 250.0 * f64::from(i)).collect();
    let s = sweep::sweep(&plan, &spec, &rates, Duration::ZERO, None, |_| {}).unwrap();
    let model_e2e = |r: f64| 4.0 / (1.0 - r / 1000.0);
    for p in s.points.iter().filter(|p| p.load <= 750.0) {
        let e2e = p.latency_ms["e2e_p50"].median.unwrap();
        let x = p.throughput_requests_per_s.median.unwrap();
        assert!(
            (e2e - model_e2e(p.load)).abs() < 2.0 + 0.15 * model_e2e(p.load),
            "λ={}: e2e p50 {e2e} ms, model {}",
            p.load,
            model_e2e(p.load)
        );
        assert!(x > 0.9 * p.load, "λ={}: {x} req/s", p.load);
    }
    let a = &s.analysis;
    let knee = a.knee.as_ref().unwrap_or_else(|| panic!("no knee: {a:?}"));
    assert!(
        (750.0..=1000.0).contains(&knee.load),
        "knee at {} req/s; capacity 1000 (one step below allowed): {a:?}",
        knee.load
    );
    let tk = a.throughput_knee.knee.as_ref().expect("throughput bends");
    assert!((750.0..=1250.0).contains(&tk.load), "{tk:?}");
    let lk = a.latency_knee.knee.as_ref().expect("latency bends");
    assert!(
        (750.0..=1000.0).contains(&lk.load),
        "latency knee at {} req/s: before latency doubled (750) or past the capacity",
        lk.load
    );
}

fn report_is_self_contained_and_plots_carry_data(dir: &std::path::Path, s: &Sweep) {
    let path = ringbench::output::html::write_sweep_report(dir, s).unwrap();
    let html = std::fs::read_to_string(&path).unwrap();
    let lower = html.to_ascii_lowercase();
    for fetch in [
        "src=", "<link", "@import", "url(", "<iframe", "<img", "fetch(",
    ] {
        assert!(
            !lower.contains(fetch),
            "report.html has '{fetch}': it must need no network"
        );
    }
    // Its scripts are inline; its only links are to its own static plots.
    assert!(lower
        .split("href=\"")
        .skip(1)
        .all(|l| l.starts_with("plots/")));
    // Throughput, TTFT/ITL/E2E vs load, CDFs of TTFT and ITL.
    let svgs: Vec<&str> = html.split("<svg").skip(1).collect();
    assert!(svgs.len() >= 6, "{} plots", svgs.len());
    let throughput = svgs[0];
    assert!(throughput.contains("Throughput vs load"));
    assert_eq!(
        throughput.matches("<circle").count(),
        2 * s.points.len(),
        "one marker per point, for throughput and for goodput"
    );
    for svg in &svgs {
        assert!(svg.contains("<polyline"), "every plot draws a line");
    }
    let ttft = svgs
        .iter()
        .find(|v| v.contains("TTFT percentiles"))
        .unwrap();
    assert!(ttft.contains("SLO ttft:p95&lt;160ms") || ttft.contains("SLO ttft:p95<160ms"));
    assert!(ttft.contains("SLO crossing"));
    assert!(
        svgs.iter().any(|v| v.contains("CDF of TTFT"))
            && svgs.iter().any(|v| v.contains("CDF of ITL"))
    );
    for table_cell in s.points.iter().map(|p| format!("<th>{}</th>", p.load)) {
        assert!(html.contains(&table_cell), "the table has a row per point");
    }
    assert!(dir.join("plots/throughput.svg").exists());
    pngs_decode_and_carry_data(&dir.join("plots"));
}

/// Decodes a PNG into (width, height, RGB bytes).
fn decode_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::read(path).unwrap();
    let mut r = png::Decoder::new(std::io::Cursor::new(file))
        .read_info()
        .unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb, "{}", path.display());
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Every SVG has its PNG; each decodes to 720×400 and, inside the plotting area, has a
/// series' colour (a later series may hide an earlier one where they coincide) and more
/// than a handful of colours (lines, markers, text).
fn pngs_decode_and_carry_data(plots: &std::path::Path) {
    let mut n = 0;
    for e in std::fs::read_dir(plots).unwrap() {
        let svg = e.unwrap().path();
        if svg.extension().is_none_or(|x| x != "svg") {
            continue;
        }
        let png = svg.with_extension("png");
        let (w, h, rgb) = decode_png(&png);
        assert_eq!((w, h), (720, 400), "{}", png.display());
        let inside: Vec<[u8; 3]> = (60..h - 50)
            .flat_map(|y| (80..w - 20).map(move |x| (x, y)))
            .map(|(x, y)| {
                let i = ((y * w + x) * 3) as usize;
                [rgb[i], rgb[i + 1], rgb[i + 2]]
            })
            .collect();
        let palette = [[31, 119, 180], [255, 127, 14], [44, 160, 44]];
        let series = inside.iter().filter(|p| palette.contains(*p)).count();
        let colours: std::collections::HashSet<&[u8; 3]> = inside.iter().collect();
        assert!(
            series > 100 && colours.len() > 10,
            "{}: {series} pixels of the series' colours, {} colours",
            png.display(),
            colours.len()
        );
        n += 1;
    }
    assert!(n >= 6, "{n} PNGs");
}

/// The timeline plots read a real summary: a 2.5 s run against the simulator, 1 s intervals.
#[test]
fn timeline_plots_a_real_runs_summary() {
    let _g = lock();
    let mut plan = sim_plan();
    plan.stop.request_count = None;
    plan.stop.duration_ns = Some(2_500_000_000);
    plan.load = Load::Closed { concurrency: 2 };
    let dir = out_dir("timeline");
    plan.out_dir = Some(dir.clone());
    let summary = ringbench::run(&plan).unwrap();
    let value = serde_json::to_value(&summary).unwrap();
    let charts = ringbench::output::plot::timeline_charts(&value);
    let titles: Vec<&str> = charts.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(charts.len(), 3, "{titles:?}");
    let names = |i: usize| -> Vec<&str> { charts[i].series.iter().map(|s| s.0.as_str()).collect() };
    assert!(names(0).contains(&"requests_per_s") && names(0).contains(&"in_flight_mean"));
    assert!(names(1).contains(&"ttft_p50_ms") && names(1).contains(&"ttft_p99_ms"));
    for c in &charts {
        for (name, pts) in &c.series {
            assert!(pts.len() >= 2, "{name}: {pts:?}");
        }
    }
    // About 2 users' worth of requests in flight, and TTFT near the simulator's 2 ms + 4 ms
    // for the other user.
    let in_flight = &charts[0]
        .series
        .iter()
        .find(|s| s.0 == "in_flight_mean")
        .unwrap()
        .1;
    assert!(in_flight.iter().any(|p| p.1 > 1.0), "{in_flight:?}");
    let path = ringbench::output::html::write_run_report(&dir, &summary).unwrap();
    let html = std::fs::read_to_string(path).unwrap();
    let timeline = html
        .split("<svg")
        .find(|v| v.contains("Request rate and in flight"))
        .expect("the report has the timeline");
    assert!(timeline.contains("<polyline") && timeline.matches("<circle").count() >= 4);
    for i in 0..3 {
        assert!(dir.join(format!("plots/timeline_{i}.png")).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
