//! Part of the plan (a leaf: it imports nothing of the flow): how the offered load changes
//! over a run — an open loop's linear ramp (`--ramp-up`), its steady stages one after the
//! other (`--stages RATE:D,...`), a closed loop's users starting spread out (`--users-ramp`)
//! — and the rules these settings must meet with the rest of the plan. The schedule builds
//! the arrivals from them; the collector splits the summary by stage with the same
//! `Stage::arrivals`, so the count a stage promises is computed in one place.

use super::{bad, Load, Plan, PlanError};
use serde::{Deserialize, Serialize};

/// One steady stage of `--stages`: `request_rate` arrivals per second for `duration_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Arrivals per second in this stage.
    pub request_rate: f64,
    /// How long the stage lasts, ns.
    pub duration_ns: u64,
}

impl Stage {
    /// The arrivals the stage holds: exactly rate × duration, rounded (as a steady run does).
    pub fn arrivals(&self) -> u64 {
        (self.request_rate * self.duration_ns as f64 / 1e9).round() as u64
    }
}

/// The stages' place on the schedule's time line: where each starts (ns from the schedule's
/// start) and its first global arrival index, in order.
pub fn stage_starts(stages: &[Stage]) -> Vec<(u64, u64)> {
    let (mut at_ns, mut first) = (0u64, 0u64);
    stages
        .iter()
        .map(|s| {
            let here = (at_ns, first);
            at_ns += s.duration_ns;
            first += s.arrivals();
            here
        })
        .collect()
}

/// Most stages a run may have (each keeps its own histograms in the collector).
pub const MAX_STAGES: usize = 64;

impl Plan {
    /// Sets `--stages`: the stages, and what they decide of the rest of the plan — the open
    /// loop's `request_rate` becomes their mean (Σ arrivals / Σ duration, the whole run's
    /// target in `summary.json`) and the stop is their total length. The one place these are
    /// derived; `validate` refuses a plan where they disagree.
    pub fn set_stages(&mut self, stages: Vec<Stage>) {
        if let (Load::Open { request_rate, .. }, Some(mean)) = (&mut self.load, mean_rate(&stages))
        {
            *request_rate = mean;
        }
        self.stop.request_count = None;
        self.stop.duration_ns = Some(stages.iter().map(|s| s.duration_ns).sum());
        self.stages = stages;
    }

    /// The rules of `ramp_up_ns`, `stages` and `users_ramp_ns`.
    pub(super) fn check_shape(&self) -> Result<(), PlanError> {
        let open = matches!(self.load, Load::Open { .. });
        let closed = matches!(self.load, Load::Closed { .. });
        if self.ramp_up_ns.is_some() && !open {
            return bad(
                "--ramp-up ramps an open loop's rate: give --request-rate R with it \
                 (a closed loop's users start spread out with --users-ramp D)",
            );
        }
        if self.users_ramp_ns.is_some() && !closed {
            return bad(
                "--users-ramp spreads a closed loop's users: give --concurrency N with \
                 it (an open loop's rate ramps with --ramp-up D)",
            );
        }
        if self.ramp_up_ns == Some(0) || self.users_ramp_ns == Some(0) {
            return bad("--ramp-up/--users-ramp 0: must be above 0, like 30s");
        }
        if let (Some(r), Some(d)) = (self.ramp_up_ns, self.stop.duration_ns) {
            if r > d {
                return bad(format!(
                    "--ramp-up {:.3} s is longer than --duration {:.3} s, which counts the \
                     whole run, ramp included: the rate would never reach --request-rate \
                     (shorten --ramp-up or lengthen --duration)",
                    r as f64 / 1e9,
                    d as f64 / 1e9
                ));
            }
        }
        if self.stages.is_empty() {
            return Ok(());
        }
        self.check_stages(open)
    }

    fn check_stages(&self, open: bool) -> Result<(), PlanError> {
        if !open {
            return bad(
                "--stages is an open loop's load curve: it goes without --concurrency \
                 and --trace",
            );
        }
        if self.ramp_up_ns.is_some() {
            return bad(
                "--stages and --ramp-up: give one (to ramp up, give low first stages, \
                 like --stages 100:10s,200:10s,400:30s)",
            );
        }
        if self.warmup_duration_ns > 0 {
            return bad(
                "--warmup-duration with --stages: the stages fill the whole run; give \
                 --warmup-requests N (the first stage's first N arrivals), or a first stage \
                 to leave out of the reading",
            );
        }
        if self.stages.len() > MAX_STAGES {
            return bad(format!(
                "--stages: {} stages, at most {MAX_STAGES}",
                self.stages.len()
            ));
        }
        for (i, s) in self.stages.iter().enumerate() {
            if !(s.request_rate.is_finite() && s.request_rate > 0.0) || s.duration_ns == 0 {
                return bad(format!(
                    "--stages: stage {i} ({}/s for {} ns) needs a rate above 0 and a duration \
                     above 0, like 200:30s",
                    s.request_rate, s.duration_ns
                ));
            }
        }
        let total: u64 = self.stages.iter().map(|s| s.duration_ns).sum();
        let rate_agrees = match (self.load.clone(), mean_rate(&self.stages)) {
            (Load::Open { request_rate, .. }, Some(mean)) => {
                (request_rate / mean - 1.0).abs() < 1e-9
            }
            _ => false,
        };
        if !rate_agrees || self.stop.duration_ns != Some(total) || self.stop.request_count.is_some()
        {
            return bad(
                "--stages sets the run's rate and length: drop --request-rate, \
                 --duration and --request-count (in a plan built in code, call \
                 Plan::set_stages)",
            );
        }
        Ok(())
    }
}

/// The stages' mean rate: Σ arrivals / Σ duration, per second.
fn mean_rate(stages: &[Stage]) -> Option<f64> {
    let n: u64 = stages.iter().map(Stage::arrivals).sum();
    let ns: u64 = stages.iter().map(|s| s.duration_ns).sum();
    (n > 0 && ns > 0).then(|| n as f64 * 1e9 / ns as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Arrival;

    fn open() -> Plan {
        let mut p = Plan::defaults();
        p.load = Load::Open {
            request_rate: 1.0,
            arrival: Arrival::Poisson,
            max_concurrency: None,
        };
        p
    }

    #[test]
    fn set_stages_derives_rate_and_length_and_validate_holds_them() {
        let mut p = open();
        let st = |r, s: u64| Stage {
            request_rate: r,
            duration_ns: s * 1_000_000_000,
        };
        p.set_stages(vec![st(200.0, 1), st(400.0, 2)]);
        assert_eq!(p.target_rate(), Some(1000.0 / 3.0));
        assert_eq!(p.stop.duration_ns, Some(3_000_000_000));
        assert_eq!(stage_starts(&p.stages), [(0, 0), (1_000_000_000, 200)]);
        p.validate().unwrap();
        let mut edited = p.clone();
        edited.stop.duration_ns = Some(5_000_000_000);
        assert!(edited.validate().unwrap_err().0.contains("--stages"));
        let mut ramped = p.clone();
        ramped.ramp_up_ns = Some(1);
        assert!(ramped.validate().unwrap_err().0.contains("--ramp-up"));
        let mut closed = Plan::defaults();
        closed.ramp_up_ns = Some(1_000_000_000);
        assert!(closed.validate().unwrap_err().0.contains("--request-rate"));
        closed.ramp_up_ns = None;
        closed.users_ramp_ns = Some(1_000_000_000);
        closed.validate().unwrap();
        let mut long = open();
        long.stop.duration_ns = Some(1_000_000_000);
        long.ramp_up_ns = Some(2_000_000_000);
        assert!(long.validate().unwrap_err().0.contains("--duration"));
    }

    #[test]
    fn old_plans_without_the_fields_still_load() {
        let mut v = serde_json::to_value(Plan::defaults()).unwrap();
        for k in ["ramp_up_ns", "stages", "users_ramp_ns"] {
            assert!(v.as_object_mut().unwrap().remove(k).is_some(), "{k}");
        }
        let back: Plan = serde_json::from_value(v).unwrap();
        assert_eq!(back, Plan::defaults());
    }
}
