//! Part of the binary (cli): the defaults of the flags that set a `Plan` field, read from
//! `Plan::defaults()` — the one place they are set — and written as `--help` shows them and
//! clap parses them back. Only the progress line's interval, which no plan holds, is set here.
//! Imports nothing of `cli` but `parse`.

use super::parse::duration_text;
use ringbench::plan::Plan;
use std::sync::LazyLock;

/// Off a terminal, one progress line this often (`--progress-interval`): the binary's own
/// setting, not the plan's.
pub const PROGRESS_INTERVAL: &str = "5s";

/// `Plan::defaults()`, made once: what every flag left out leaves in the plan.
pub fn plan() -> &'static Plan {
    static PLAN: LazyLock<Plan> = LazyLock::new(Plan::defaults);
    &PLAN
}

/// The duration defaults of `plan()` as text (`600s`, `250ms`): clap's `default_value`
/// shows it in `--help` and parses it like a value typed on the line.
pub struct Shown {
    pub request_timeout: String,
    pub connect_timeout: String,
    pub grace: String,
    pub stall: String,
    pub max_lag: String,
    pub server_metrics_interval: String,
}

/// See `Shown`.
pub fn shown() -> &'static Shown {
    static SHOWN: LazyLock<Shown> = LazyLock::new(|| {
        let p = plan();
        let ms = |v: f64| duration_text((v * 1e6).round() as u64);
        Shown {
            request_timeout: duration_text(p.request_timeout_ns),
            connect_timeout: duration_text(p.connect_timeout_ns),
            grace: duration_text(p.grace_ns),
            stall: ms(p.stall_ms),
            max_lag: ms(p.max_lag_ms),
            server_metrics_interval: duration_text(p.server_metrics.interval_ns),
        }
    });
    &SHOWN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse::parse_duration_ns;

    #[test]
    fn the_shown_defaults_parse_back_to_the_plans() {
        let (p, s) = (plan(), shown());
        let ns = |t: &str| parse_duration_ns(t).unwrap();
        assert_eq!(ns(&s.request_timeout), p.request_timeout_ns);
        assert_eq!(ns(&s.connect_timeout), p.connect_timeout_ns);
        assert_eq!(ns(&s.grace), p.grace_ns);
        assert_eq!(ns(&s.stall) as f64 / 1e6, p.stall_ms);
        assert_eq!(ns(&s.max_lag) as f64 / 1e6, p.max_lag_ms);
        assert_eq!(ns(&s.server_metrics_interval), p.server_metrics.interval_ns);
        assert_eq!(
            (s.request_timeout.as_str(), s.stall.as_str()),
            ("600s", "250ms")
        );
    }
}
