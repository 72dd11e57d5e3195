//! Part of the output (… → summary → **output**): what a sweep, a search and a comparison print
//! as they go and when they end. Every figure is already in the result types
//! (`summary::study`); this module only lays them out. Lines meant for people go to `out`
//! (stdout), warnings to `err` (stderr), so a pipe reads the figures alone.

use crate::summary::study::{KneePart, Point, Probe, Row, SearchResult, Sweep};
use std::io::{self, Write};

/// `-` for a figure that does not exist, else two decimals.
pub fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

/// The line a sweep starts with.
pub fn sweep_start(
    out: &mut impl Write,
    axis: &str,
    loads: &[f64],
    repeats: u32,
) -> io::Result<()> {
    writeln!(
        out,
        "sweep over {axis} {loads:?}, {repeats} repeat(s) per point"
    )
}

/// A point's verdict in the words the console and `report.html` both use: INTERRUPTED,
/// INVALID (the client's overhead), PASS or FAIL against the SLOs; empty without SLOs.
pub fn point_verdict(p: &Point) -> &'static str {
    match (p.interrupted, p.valid, p.slos.is_empty(), p.pass) {
        (true, ..) => "INTERRUPTED",
        (_, false, _, false) => "INVALID",
        (_, _, true, _) => "",
        (_, _, false, true) => "PASS",
        (_, _, false, false) => "FAIL",
    }
}

/// One finished point: its verdict and figures on `out`, its warnings on `err`.
pub fn point(out: &mut impl Write, err: &mut impl Write, p: &Point) -> io::Result<()> {
    let t = &p.throughput_requests_per_s;
    let spread = match t.rel_spread {
        Some(r) if p.runs.len() > 1 => format!(" (spread {:.1}%)", r * 100.0),
        _ => String::new(),
    };
    let slos: Vec<String> = p
        .slos
        .iter()
        .map(|c| {
            let name = c.slo.split('<').next().unwrap_or("");
            format!("{name}={}", opt(c.value_ms.median))
        })
        .collect();
    let verdict = point_verdict(p);
    writeln!(
        out,
        "load {:>8}  {verdict:4}  {} req/s{spread}  goodput {}  achieved conc {} rate {}  {}",
        p.load,
        opt(t.median),
        opt(p.goodput_requests_per_s.median),
        opt(p.achieved_concurrency.median),
        opt(p.achieved_request_rate.median),
        slos.join(" ")
    )?;
    for w in &p.warnings {
        writeln!(err, "warning: {w}")?;
    }
    Ok(())
}

/// The knee, the SLO crossing and how each was found.
pub fn analysis(out: &mut impl Write, s: &Sweep) -> io::Result<()> {
    let a = &s.analysis;
    match &a.knee {
        Some(k) => writeln!(
            out,
            "knee: load {} at {:.2} req/s, e2e p50 {} ms — {}",
            k.load,
            k.throughput,
            opt(k.latency_ms),
            k.method
        )?,
        None => writeln!(out, "knee: none ({})", a.knee_note.as_deref().unwrap_or(""))?,
    }
    let part = |p: &KneePart| match &p.knee {
        Some(k) => format!("load {}", k.load),
        None => format!("none ({})", p.note.as_deref().unwrap_or("")),
    };
    writeln!(
        out,
        "  throughput knee: {}; latency knee: {}",
        part(&a.throughput_knee),
        part(&a.latency_knee)
    )?;
    if !s.slos.is_empty() {
        writeln!(
            out,
            "highest passing load: {}; SLO crossing: {} ({})",
            a.highest_pass.map_or("none".into(), |x| x.to_string()),
            a.slo_crossing.map_or("none".into(), |x| format!("{x:.2}")),
            a.crossing_note.as_deref().unwrap_or("")
        )?;
    }
    Ok(())
}

/// Names the loads whose runs were invalid (each point's reasons were printed with it).
pub fn invalid_loads(err: &mut impl Write, loads: &[f64], allowed: bool) -> io::Result<()> {
    if loads.is_empty() {
        return Ok(());
    }
    if allowed {
        writeln!(
            err,
            "warning: invalid (client overhead) at loads {loads:?}; counted anyway (--allow-invalid)"
        )
    } else {
        writeln!(
            err,
            "invalid (client overhead) at loads {loads:?}: they do not pass and decide \
             nothing (sweep: left out of the knee and the crossing; search: counted as \
             failing); exit 4 (--allow-invalid counts them)"
        )
    }
}

/// One search probe as it ends.
pub fn probe(out: &mut impl Write, err: &mut impl Write, p: &Probe) -> io::Result<()> {
    writeln!(
        out,
        "probe {:>2} {:6} load {:>9}  {}{}  values {:?}  bracket [{}, {}]",
        p.iteration,
        p.phase,
        p.load,
        if p.pass_raw { "pass" } else { "FAIL" },
        if p.pass_raw != p.pass_smoothed {
            " (smoothed: flipped)"
        } else {
            ""
        },
        p.values_ms.iter().map(|v| opt(*v)).collect::<Vec<_>>(),
        p.bracket.0.map_or("-".into(), |x| x.to_string()),
        p.bracket.1.map_or("-".into(), |x| x.to_string()),
    )?;
    if p.interrupted {
        writeln!(
            out,
            "probe {:>2} interrupted: it decides nothing",
            p.iteration
        )?;
    }
    for why in &p.invalid_reasons {
        writeln!(
            err,
            "warning: probe {} load {} invalid: {why}",
            p.iteration, p.load
        )?;
    }
    out.flush()
}

/// The search's answer line.
pub fn search_answer(out: &mut impl Write, r: &SearchResult) -> io::Result<()> {
    writeln!(
        out,
        "answer: {} = {} (crossing ≈ {}; {}{})",
        r.axis.name(),
        r.answer.map_or("none".into(), |x| x.to_string()),
        opt(r.crossing),
        r.stop_reason,
        if r.converged { "" } else { "; NOT converged" }
    )
}

/// Two runs or sweeps side by side, one row per figure.
pub fn comparison(out: &mut impl Write, names: (&str, &str), rows: &[Row]) -> io::Result<()> {
    writeln!(out, "A = {}\nB = {}", names.0, names.1)?;
    writeln!(
        out,
        "{:<36} {:>12} {:>12} {:>9} {:>10}  beyond spread?",
        "figure", "A", "B", "change", "spread"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<36} {:>12} {:>12} {:>9} {:>10}  {}",
            r.name,
            opt(r.a),
            opt(r.b),
            r.change
                .map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
            opt(r.spread),
            match r.significant {
                Some(true) => "YES",
                Some(false) => "no",
                None => "unknown (no repeats)",
            }
        )?;
    }
    Ok(())
}
