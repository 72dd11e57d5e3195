//! Part of the report stage (… → summary → **output**): the console's blocks of how users
//! behaved — "Sessions": how the conversations (`--turns`) ended and, per turn index, TTFT
//! and the server's cache hits as the history grows (`summary.sessions`); "Cancelled by
//! client": the answers abandoned on purpose and what they had received
//! (`summary.cancellations`); "Endpoints": with several `--url`s, each server's share and
//! figures (`summary.endpoints`). Like `console.rs` it only prints what the summary holds.

use super::console_rows::{num as n, row, rule};
use crate::summary::endpoints::EndpointRow;
use crate::summary::session::Sessions;
use crate::summary::Cancellations;
use std::io::{self, Write};

/// Turn rows shown; the rest are in `summary.json`.
const ROWS_SHOWN: usize = 12;

/// The block, for a run of conversations; nothing otherwise.
pub(super) fn sessions_block(s: Option<&Sessions>, out: &mut impl Write) -> io::Result<()> {
    let Some(s) = s else {
        return Ok(());
    };
    writeln!(out, "{}", rule("Sessions", '-'))?;
    let ended = s
        .ended
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    row(out, "Sessions started:", s.started)?;
    row(out, "Sessions ended:", ended)?;
    row(
        out,
        "Turns per session (mean / most):",
        format!(
            "{} / {}",
            n(s.turns_per_session_mean, 2),
            s.turns_per_session_max
        ),
    )?;
    row(
        out,
        "Session duration (ms, median / P99):",
        format!("{} / {}", n(s.duration_ms.p50, 1), n(s.duration_ms.p99, 1)),
    )?;
    row(
        out,
        "Think time (ms, mean; asked):",
        format!(
            "{}; {:.2}",
            n(s.think_time_ms.mean, 2),
            s.think_time_asked_mean_ms
        ),
    )?;
    row(
        out,
        "Reply end to next send (ms, mean / P99):",
        format!("{} / {}", n(s.turn_gap_ms.mean, 3), n(s.turn_gap_ms.p99, 3)),
    )?;
    writeln!(
        out,
        "  turn  requests  TTFT p50 / P99 (ms)  ITL p50 (ms)  prompt tok  cached tok  hit %"
    )?;
    for r in s.per_turn.iter().take(ROWS_SHOWN) {
        writeln!(
            out,
            "  {:>4}  {:>8}  {:>19}  {:>12}  {:>10}  {:>10}  {:>5}",
            r.turn,
            r.tally.sent,
            format!("{} / {}", n(r.ttft_ms.p50, 2), n(r.ttft_ms.p99, 2)),
            n(r.itl_ms.p50, 2),
            n(r.prompt_tokens_mean, 0),
            n(r.cached_tokens_mean, 0),
            n(r.cache_hit_percent, 1),
        )?;
    }
    if s.per_turn.len() > ROWS_SHOWN {
        writeln!(
            out,
            "  ({} more turns in summary.json's sessions.per_turn)",
            s.per_turn.len() - ROWS_SHOWN
        )?;
    }
    Ok(())
}

/// The block, for a run with `--cancel-rate`; nothing otherwise.
pub(super) fn cancellations_block(
    c: Option<&Cancellations>,
    out: &mut impl Write,
) -> io::Result<()> {
    let Some(c) = c else {
        return Ok(());
    };
    writeln!(out, "{}", rule("Cancelled by client", '-'))?;
    row(
        out,
        &format!("Aborted ({:.0}% asked, after {}):", c.rate * 100.0, c.after),
        format!(
            "{} ({}% of sent)",
            c.cancelled_by_client,
            n(c.percent_of_sent, 1)
        ),
    )?;
    row(
        out,
        "Received: tokens mean; with a first token:",
        format!("{}; {}", n(c.output_tokens_mean, 1), c.with_first_token),
    )?;
    row(
        out,
        "Their TTFT / held (ms, median):",
        format!("{} / {}", n(c.ttft_ms.p50, 2), n(c.held_ms.p50, 2)),
    )?;
    Ok(())
}

/// The block, for a run with several `--url`s; nothing otherwise.
pub(super) fn endpoints_block(e: Option<&[EndpointRow]>, out: &mut impl Write) -> io::Result<()> {
    let Some(rows) = e else {
        return Ok(());
    };
    writeln!(out, "{}", rule("Endpoints", '-'))?;
    writeln!(
        out,
        "  #   sent (share %)     ok  failed  req/s     TTFT p50 / P99 (ms)  ITL p50 (ms)  E2E p50 (ms)  URL"
    )?;
    for r in rows {
        writeln!(
            out,
            "  {:<2}  {:>15}  {:>5}  {:>6}  {:>8}  {:>19}  {:>12}  {:>12}  {}",
            r.endpoint,
            format!("{} ({})", r.tally.sent, n(r.share_percent, 1)),
            r.tally.ok,
            r.tally.failed,
            n(r.requests_per_s, 2),
            format!("{} / {}", n(r.ttft_ms.p50, 2), n(r.ttft_ms.p99, 2)),
            n(r.itl_ms.p50, 2),
            n(r.e2e_ms.p50, 2),
            r.url,
        )?;
    }
    Ok(())
}
