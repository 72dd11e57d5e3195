//! Part of the collector (… → record → **collector** → summary → report): the few settings
//! a summary depends on (streaming, SLOs, percentiles, target load, lag bound) and the
//! resolved config it reprints. A run takes them from its `Plan`; `ringbench report` reads
//! them back from the `config` of the run's `run.json` sidecar, so that one code path
//! (`finish::summarize`) turns records into a summary either way. Never prints.

use crate::plan::{Plan, Slo, SloMetric};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub stream: bool,
    pub goodput: Vec<Slo>,
    pub percentiles: Vec<f64>,
    pub target_rate: Option<f64>,
    pub target_concurrency: Option<u32>,
    pub max_lag_ms: f64,
    /// `max_tokens` asked of every request, when the plan fixes one (the OSL check).
    pub output_tokens: Option<u32>,
    /// The resolved plan as `summary.json`'s `config` shows it (secrets already redacted).
    pub config: Value,
}

/// A `config` object that does not say what a summary needs (hand-edited or from another
/// version): names the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("config key `{0}` is missing or malformed")]
pub struct SettingsError(pub &'static str);

impl Settings {
    pub fn from_plan(plan: &Plan) -> Result<Self, SettingsError> {
        Ok(Settings {
            stream: plan.stream,
            goodput: plan.goodput.clone(),
            percentiles: plan.percentiles.clone(),
            target_rate: plan.target_rate(),
            target_concurrency: plan.target_concurrency(),
            max_lag_ms: plan.max_lag_ms,
            output_tokens: plan.fixed_output_tokens(),
            config: serde_json::to_value(plan).map_err(|_| SettingsError("config"))?,
        })
    }

    /// The inverse of `from_plan` over the keys it needs (`Plan`'s serialized form).
    pub fn from_config(config: &Value) -> Result<Self, SettingsError> {
        let load = config.get("load").ok_or(SettingsError("load"))?;
        let mode = load.get("mode").and_then(Value::as_str);
        let (open, trace) = (mode == Some("open"), mode == Some("trace"));
        let u32_of = |v: Option<&Value>| v.and_then(Value::as_u64).map(|n| n as u32);
        let target_concurrency = if open || trace {
            u32_of(load.get("max_concurrency"))
        } else {
            Some(u32_of(load.get("concurrency")).ok_or(SettingsError("load.concurrency"))?)
        };
        let target_rate = if open {
            let rate = load.get("request_rate").and_then(Value::as_f64);
            Some(rate.ok_or(SettingsError("load.request_rate"))?)
        } else if trace {
            // `null` when every line of the trace had the same timestamp.
            load.get("request_rate").and_then(Value::as_f64)
        } else {
            None
        };
        Ok(Settings {
            stream: config
                .get("stream")
                .and_then(Value::as_bool)
                .ok_or(SettingsError("stream"))?,
            goodput: slos_of(config.get("goodput"))?,
            percentiles: floats_of(config.get("percentiles"))
                .ok_or(SettingsError("percentiles"))?,
            target_rate,
            target_concurrency,
            max_lag_ms: config
                .get("max_lag_ms")
                .and_then(Value::as_f64)
                .ok_or(SettingsError("max_lag_ms"))?,
            output_tokens: fixed_output_tokens(config, trace),
            config: config.clone(),
        })
    }

    /// Other percentiles (`report --percentiles`); the config shows what was used.
    pub fn with_percentiles(mut self, percentiles: Vec<f64>) -> Self {
        self.config["percentiles"] = serde_json::json!(percentiles);
        self.percentiles = percentiles;
        self
    }

    /// Other SLOs (`report --goodput`); the config shows what was used.
    pub fn with_goodput(mut self, goodput: Vec<Slo>) -> Self {
        self.config["goodput"] = serde_json::to_value(&goodput).unwrap_or(Value::Null);
        self.goodput = goodput;
        self
    }
}

/// `Plan::fixed_output_tokens` read back from the config.
fn fixed_output_tokens(config: &Value, trace: bool) -> Option<u32> {
    let workload = config.get("workload");
    let output = workload
        .and_then(|w| w.get("output"))
        .filter(|o| !o.is_null());
    let dataset = workload
        .and_then(|w| w.get("dataset"))
        .filter(|d| !d.is_null());
    let as_u32 = |v: Option<&Value>| v.and_then(Value::as_u64).map(|n| n as u32);
    match (trace, output, dataset) {
        (true, _, _) => None,
        (_, Some(o), _) if o.get("kind").and_then(Value::as_str) == Some("fixed") => {
            as_u32(o.get("tokens"))
        }
        (_, Some(_), _) | (_, None, Some(_)) => None,
        (_, None, None) => as_u32(config.get("output_tokens")),
    }
}

fn floats_of(v: Option<&Value>) -> Option<Vec<f64>> {
    v?.as_array()?.iter().map(Value::as_f64).collect()
}

fn slos_of(v: Option<&Value>) -> Result<Vec<Slo>, SettingsError> {
    let bad = SettingsError("goodput");
    let Some(list) = v.and_then(Value::as_array) else {
        return Err(bad);
    };
    list.iter()
        .map(|s| {
            let metric = match s.get("metric").and_then(Value::as_str) {
                Some("ttft") => SloMetric::Ttft,
                Some("tpot") => SloMetric::Tpot,
                Some("itl") => SloMetric::Itl,
                Some("e2e") => SloMetric::E2e,
                Some("ntpot") => SloMetric::Ntpot,
                _ => return Err(bad.clone()),
            };
            let max_ms = s.get("max_ms").and_then(Value::as_f64).ok_or(bad.clone())?;
            Ok(Slo { metric, max_ms })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Arrival, Load};

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
        varied.workload.output = Some(crate::prepare::lengths::LengthDist::Uniform {
            mean: 100,
            range_ratio: 0.5,
        });
        let varied = Settings::from_plan(&varied).unwrap();
        assert_eq!(
            varied.output_tokens, None,
            "no OSL check against one length"
        );
        assert_eq!(Settings::from_config(&varied.config).unwrap(), varied);
        let mut broken = closed.config.clone();
        broken["goodput"] = serde_json::json!([{"metric": "vibes", "max_ms": 1.0}]);
        assert_eq!(
            Settings::from_config(&broken).unwrap_err(),
            SettingsError("goodput")
        );
    }
}
