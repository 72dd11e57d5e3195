//! Part of the collector (… → record → **collector** → summary → output): the few settings a
//! summary depends on (streaming, SLOs, percentiles, target load, lag bound, failure gate),
//! derived from a `Plan`, and the resolved config it reprints. A run takes them from its
//! `Plan`; `ringbench report` reads the `Plan` back from the `config` of the run's `run.json`
//! sidecar (`Plan` is serde both ways), so one code path (`finish::summarize`) turns records
//! into a summary either way. Never prints.

use crate::plan::{Plan, Slo};
use serde_json::Value;

/// The plan a summary is made under, the two values the collector reads on every record
/// derived once, and the `config` the summary reprints. Everything else (percentiles, SLOs,
/// stages, the failure gate, …) is read from `plan`, the one copy.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The run's plan (`report --percentiles` / `--goodput` already applied).
    pub plan: Plan,
    /// Responses come as a stream: `--stream` on a generating endpoint (a pooling endpoint
    /// answers with one body, as `--no-stream` does).
    pub stream: bool,
    /// `--stall-ms`, in ns: a chunk gap above it is a stall.
    pub stall_ns: u64,
    /// The resolved plan as `summary.json`'s `config` shows it (secrets already redacted):
    /// the plan's own for a run, the stored one as it was read for `ringbench report`.
    pub config: Value,
}

/// A `config` object that is not a `Plan` (hand-edited, or from another version): says what
/// serde found wrong, key included.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the run's config is not a plan this version reads: {0}")]
pub struct SettingsError(pub String);

impl Settings {
    pub fn from_plan(plan: &Plan) -> Result<Self, SettingsError> {
        Ok(Settings {
            plan: plan.clone(),
            stream: plan.stream && plan.endpoint.generates(),
            stall_ns: (plan.stall_ms * 1e6) as u64,
            config: serde_json::to_value(plan).map_err(|e| SettingsError(e.to_string()))?,
        })
    }

    /// The settings of a run from its `config` (the `Plan` as `summary.json` and `run.json`
    /// store it), which is kept as it is to be shown again.
    pub fn from_config(config: &Value) -> Result<Self, SettingsError> {
        let plan: Plan =
            serde_json::from_value(config.clone()).map_err(|e| SettingsError(e.to_string()))?;
        Ok(Settings {
            config: config.clone(),
            ..Settings::from_plan(&plan)?
        })
    }

    /// Other percentiles (`report --percentiles`); the config shows what was used.
    pub fn with_percentiles(mut self, percentiles: Vec<f64>) -> Self {
        self.config["percentiles"] = serde_json::json!(percentiles);
        self.plan.percentiles = percentiles;
        self
    }

    /// Other SLOs (`report --goodput`); the config shows what was used.
    pub fn with_goodput(mut self, goodput: Vec<Slo>) -> Self {
        self.config["goodput"] = serde_json::to_value(&goodput).unwrap_or(Value::Null);
        self.plan.goodput = goodput;
        self
    }

    /// Requests per second asked; `None` for a closed loop and for conversations (whose
    /// schedule starts sessions: `sessions.target_session_rate`).
    pub fn target_rate(&self) -> Option<f64> {
        self.plan
            .target_rate()
            .filter(|_| self.plan.sessions.is_none())
    }

    /// Sessions started per second asked (`--session-rate`).
    pub fn target_session_rate(&self) -> Option<f64> {
        self.plan
            .target_rate()
            .filter(|_| self.plan.sessions.is_some())
    }

    /// Tools were offered (`--tools`): the summary's `tools` block is shown even when no
    /// answer called one.
    pub fn tools_offered(&self) -> bool {
        !self.plan.api.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Arrival, Load, SloMetric};

    #[test]
    fn settings_survive_the_config_round_trip() {
        let mut plan = Plan::defaults();
        plan.load = Load::Open {
            request_rate: 12.5,
            arrival: Arrival::Gamma { burstiness: 0.5 },
            max_concurrency: Some(7),
        };
        plan.goodput = vec![Slo {
            metric: SloMetric::Ntpot,
            max_ms: 0.1,
        }];
        plan.percentiles = vec![50.0, 99.99];
        plan.stream = false;
        plan.max_lag_ms = 0.3;
        let s = Settings::from_plan(&plan).unwrap();
        let text = serde_json::to_string(&s.config).unwrap();
        let back = Settings::from_config(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, s);
        let closed = Settings::from_plan(&Plan::defaults()).unwrap();
        assert_eq!(Settings::from_config(&closed.config).unwrap(), closed);
        let mut varied = Plan::defaults();
        varied.workload.output = Some(crate::plan::workload::LengthDist::Uniform {
            mean: 100,
            range_ratio: 0.5,
        });
        let varied = Settings::from_plan(&varied).unwrap();
        assert_eq!(
            varied.plan.fixed_output_tokens(),
            None,
            "no OSL check against one length"
        );
        assert_eq!(Settings::from_config(&varied.config).unwrap(), varied);
        let mut broken = closed.config.clone();
        broken["goodput"] = serde_json::json!([{"metric": "vibes", "max_ms": 1.0}]);
        let e = Settings::from_config(&broken).unwrap_err().0;
        assert!(e.contains("vibes"), "{e}");
    }
}
