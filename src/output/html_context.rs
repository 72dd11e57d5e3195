//! Part of the output (… → summary → **output**): the head of `report.html`, what a reader
//! needs before any figure — what ran against which server and model, how the load was
//! offered, for how long, on which machine, and how the run ended (verdict and reasons,
//! interruption, requests never sent). Read from a finished `Summary` (its `config` read back
//! as the `Plan` it was) or a sweep's; computes no figure; never prints.

use crate::plan::{Arrival, Load, Plan};
use crate::summary::study::Sweep;
use crate::summary::Summary;
use std::fmt::Write as _;

fn opt(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.2}"))
}

/// The plan a summary's `config` holds; `None` when it cannot be read back (a summary of an
/// older or newer ringbench).
fn plan_of(s: &Summary) -> Option<Plan> {
    serde_json::from_value(s.config.clone()).ok()
}

/// The servers asked, or the simulator the run started.
fn servers(p: &Plan) -> String {
    if p.targets.is_empty() {
        let sim = p.sim.clone().unwrap_or_default();
        return format!(
            "the built-in simulator (TTFT {} ms, ITL {} ms)",
            sim.ttft_ms, sim.itl_ms
        );
    }
    let urls: Vec<&str> = p.targets.iter().map(|t| t.url.as_str()).collect();
    match urls.len() {
        1 => urls[0].to_string(),
        _ => format!("{} ({})", urls.join(", "), p.url_policy.name()),
    }
}

/// How the load was offered: closed loop and its users, open loop and its rate, a trace.
fn load(p: &Plan) -> String {
    let mut out = match &p.load {
        Load::Closed { concurrency } => format!("closed loop, {concurrency} users"),
        Load::Open {
            request_rate,
            arrival,
            max_concurrency,
        } => {
            let arrival = match arrival {
                Arrival::Poisson => "Poisson".to_string(),
                Arrival::Constant => "constant gaps".to_string(),
                Arrival::Gamma { burstiness } => format!("gamma gaps, burstiness {burstiness}"),
            };
            let cap = max_concurrency.map_or(String::new(), |c| format!(", at most {c} in flight"));
            format!("open loop, {request_rate} req/s ({arrival}){cap}")
        }
        Load::Trace(t) => format!(
            "trace {} at {}× speed",
            t.path.file_name().map_or_else(
                || t.path.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            ),
            t.speedup
        ),
    };
    if let Some(ns) = p.ramp_up_ns {
        let _ = write!(out, ", ramped up over {} s", ns as f64 / 1e9);
    }
    if !p.stages.is_empty() {
        let stages: Vec<String> = (p.stages.iter())
            .map(|s| {
                format!(
                    "{} req/s for {} s",
                    s.request_rate,
                    s.duration_ns as f64 / 1e9
                )
            })
            .collect();
        let _ = write!(out, " in stages: {}", stages.join(", "));
    }
    out
}

/// When the run was to stop, and the warm-up left out before it.
fn stop_and_warmup(p: &Plan, s: &Summary) -> (String, String) {
    let stop = [
        (p.stop.request_count).map(|n| format!("{n} requests")),
        (p.stop.duration_ns).map(|ns| format!("{} s", ns as f64 / 1e9)),
    ];
    let stop: Vec<String> = stop.into_iter().flatten().collect();
    let stop = format!("{}, whichever comes first", stop.join(" or "));
    let warmup = match (p.warmup_requests, p.warmup_duration_ns) {
        (0, 0) => "none".to_string(),
        (n, 0) => format!("the first {n} requests"),
        (0, ns) => format!("requests due in the first {} s", ns as f64 / 1e9),
        (n, ns) => format!(
            "the first {n} requests and those due in the first {} s",
            ns as f64 / 1e9
        ),
    };
    let warmup = format!("{warmup}: {} excluded from every figure", s.counts.warmup);
    (stop, warmup)
}

/// The rows of the context table that come from the plan.
fn plan_rows(p: &Plan, s: &Summary, rows: &mut Vec<(&'static str, String)>) {
    rows.push(("Server", servers(p)));
    rows.push(("Model", model(p, s)));
    let stream = if p.stream { "streamed" } else { "not streamed" };
    let endpoint = format!("{} ({}), {stream}", p.endpoint.name(), p.endpoint.path());
    rows.push(("Endpoint", endpoint));
    rows.push(("Load", load(p)));
    let (stop, warmup) = stop_and_warmup(p, s);
    rows.push(("Stop after", stop));
    rows.push(("Warm-up", warmup));
    rows.push(("Seed", p.seed.to_string()));
    if let Some(w) = &s.workload {
        rows.push(("Workload", super::console::workload_lines(p, w).join("\n")));
    }
    let tokenizer = match &p.workload.tokenizer {
        Some(t) => t.display().to_string(),
        None => "none: prompt lengths approximated".into(),
    };
    rows.push(("Tokenizer", tokenizer));
    if !p.goodput.is_empty() {
        let slos: Vec<String> = (p.goodput.iter())
            .map(|b| format!("{} ≤ {} ms", b.metric.key(), b.max_ms))
            .collect();
        rows.push(("Goodput SLOs", slos.join(", ")));
    }
    if let Some(id) = &p.run_id {
        rows.push(("Run id", id.clone()));
    }
}

/// The model the requests named, where the name came from, and its context window.
fn model(p: &Plan, s: &Summary) -> String {
    let Some(sv) = &s.served else {
        let m = p.model.clone();
        return m.unwrap_or_else(|| "not recorded (asked of /v1/models)".into());
    };
    let mut m = sv.model.clone();
    if sv.model_from != crate::summary::served::from::PLAN {
        let _ = write!(m, " (from {})", sv.model_from);
    }
    if let (Some(n), Some(at)) = (sv.max_model_len, &sv.max_model_len_from) {
        let _ = write!(m, "; context window {n} tokens (from {at})");
        if sv.sessions_capped {
            m.push_str(", conversations capped to it");
        }
    }
    m
}

/// The server's engine, where its metrics told it, and its version, where it said.
fn engine(s: &Summary) -> String {
    let version = match s
        .served
        .as_ref()
        .and_then(|v| Some((v.version.as_ref()?, v.version_from.as_deref()?)))
    {
        Some((v, at)) => format!("version {v} (from {at})"),
        None => "version not reported (vLLM's /version, llama.cpp's /props)".into(),
    };
    match &s.server {
        Some(sv) => format!(
            "{} (from its metrics, {}); {version}",
            sv.engine.as_deref().unwrap_or("unknown engine"),
            sv.source
        ),
        None => format!(
            "{version}; engine not asked (--server-metrics reads it from the server's /metrics)"
        ),
    }
}

/// Every fact of the run's context, in the order a reader asks for them.
fn run_rows(s: &Summary) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("Tool", format!("{} {}", s.tool.name, s.tool.version)),
        ("Started", s.started_at.clone()),
    ];
    match plan_of(s) {
        Some(p) => plan_rows(&p, s, &mut rows),
        None => rows.push(("Config", "could not be read back: see summary.json".into())),
    }
    let measured = format!(
        "{:.2} s; achieved {} req/s offered, mean concurrency {}",
        s.duration_s,
        opt(s.achieved.request_rate),
        opt(s.achieved.concurrency_mean)
    );
    let at = rows.iter().position(|r| r.0 == "Stop after");
    rows.insert(at.map_or(rows.len(), |i| i + 1), ("Measured for", measured));
    rows.push(("Server engine", engine(s)));
    let cpus: Vec<String> = (s.overhead.workers.iter())
        .map(|w| w.cpu.to_string())
        .collect();
    let host = format!(
        "{} CPUs, Linux {}; {} worker(s) on CPU {}; I/O {}",
        s.host.cpus,
        s.host.kernel,
        cpus.len(),
        cpus.join(", "),
        s.overhead.io_driver
    );
    rows.push(("Client host", host));
    rows
}

fn table(rows: &[(&str, String)]) -> String {
    let mut t = String::from("<table class=\"context\">\n");
    for (k, v) in rows {
        let v = escape(v).replace('\n', "<br>");
        let _ = writeln!(t, "<tr><th>{k}</th><td>{v}</td></tr>");
    }
    t.push_str("</table>\n");
    t
}

/// What happened to the requests, interruption and never-sent ones first.
fn counts(s: &Summary) -> String {
    let (c, t) = (&s.counts, &s.counts.tally);
    let mut b = String::new();
    if s.interrupted {
        let _ = writeln!(
            b,
            "<p class=\"fail\">Interrupted by a signal: the figures cover the run until the \
             stop; {} of {} scheduled requests were never sent.</p>",
            t.not_sent, c.scheduled
        );
    }
    let mut parts = vec![format!("{} ok", t.ok), format!("{} failed", t.failed)];
    if t.cancelled > 0 {
        parts.push(format!("{} cancelled", t.cancelled));
    }
    let _ = write!(
        b,
        "<p><b>Requests</b>: {} of {} sent; {} scheduled, {} never sent",
        parts.join(", "),
        t.sent,
        c.scheduled,
        t.not_sent
    );
    if !c.failed_by_kind.is_empty() {
        let kinds: Vec<String> = (c.failed_by_kind.iter())
            .map(|(k, n)| format!("{} {n}", escape(k)))
            .collect();
        let _ = write!(b, " · failures: {}", kinds.join(", "));
    }
    b.push_str("</p>\n");
    b
}

/// The headline rates; goodput only when SLOs were given.
fn rates(s: &Summary) -> String {
    let t = &s.throughput;
    let mut parts = vec![format!("{} req/s", opt(t.requests_per_s))];
    if s.pooling.is_none() {
        parts.push(format!("{} output tok/s", opt(t.output_tokens_per_s)));
    }
    if t.goodput_requests_per_s.is_some() {
        parts.push(format!(
            "goodput {} req/s ({} % good)",
            opt(t.goodput_requests_per_s),
            opt(t.good_fraction.map(|f| f * 100.0))
        ));
    }
    format!("<p><b>Throughput</b>: {}</p>\n", parts.join(" · "))
}

/// The verdict as the console says it, its reasons, and the overhead's own reasons.
fn verdict(s: &Summary) -> String {
    let said = super::console::verdict_words(s.exit(false), !s.overhead.valid);
    let class = if s.verdict.exit_code == 0 {
        "pass"
    } else {
        "fail"
    };
    let mut b =
        format!("<p class=\"verdict\"><b>Verdict</b>: <span class=\"{class}\">{said}</span></p>\n");
    let mut reasons: Vec<&String> = s.verdict.reasons.iter().collect();
    reasons.extend((s.overhead.invalid_reasons.iter()).filter(|r| !s.verdict.reasons.contains(*r)));
    if !reasons.is_empty() {
        b.push_str("<ul class=\"reasons\">\n");
        for r in reasons {
            let _ = writeln!(b, "<li>{}</li>", escape(r));
        }
        b.push_str("</ul>\n");
    }
    let valid = if s.overhead.valid {
        "valid: the client's own overhead left the figures trustworthy"
    } else {
        "INVALID: the client's own overhead broke a bound (reasons above)"
    };
    let _ = writeln!(b, "<p><b>Client overhead</b>: {valid}</p>");
    b
}

/// The head of a run's report: verdict, requests, rates, then the context table.
pub(super) fn run_head(s: &Summary) -> String {
    let mut b = verdict(s);
    b.push_str(&counts(s));
    b.push_str(&rates(s));
    b.push_str("<h2>Context</h2>\n");
    b.push_str(&table(&run_rows(s)));
    b
}

/// The head of a sweep's report: the context of its first run (what every point shares,
/// the load aside) and how its points ended, in the console's words.
pub(super) fn sweep_head(s: &Sweep) -> String {
    let mut b = String::new();
    let mut words: Vec<(&str, usize)> = vec![];
    for p in &s.points {
        let w = super::console_study::point_verdict(p);
        let w = if w.is_empty() { "measured (no SLO)" } else { w };
        match words.iter_mut().find(|x| x.0 == w) {
            Some(x) => x.1 += 1,
            None => words.push((w, 1)),
        }
    }
    let tally: Vec<String> = words.iter().map(|(w, n)| format!("{n} {w}")).collect();
    let _ = writeln!(
        b,
        "<p><b>Points</b>: {} over {} — {}</p>",
        s.points.len(),
        s.axis.name(),
        tally.join(", ")
    );
    if let Some(first) = s.points.first().and_then(|p| p.runs.first()) {
        let mut rows = run_rows(first);
        rows.retain(|(k, _)| !matches!(*k, "Load" | "Measured for" | "Run id" | "Started"));
        rows.insert(1, ("First point started", first.started_at.clone()));
        let loads: Vec<String> = s.points.iter().map(|p| p.load.to_string()).collect();
        let axis = format!(
            "{}: {} ({} run(s) each)",
            s.axis.name(),
            loads.join(", "),
            s.repeats
        );
        rows.insert(2, ("Loads", axis));
        b.push_str("<h2>Context</h2>\n");
        b.push_str(&table(&rows));
    }
    b
}

/// `s` with `&`, `<`, `>` and `"` escaped, for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
