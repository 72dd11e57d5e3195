//! Before the run, beside the catalog (plan → **lengths** → catalog → schedule …): the
//! distributions input and output lengths are drawn from, parsed from their flags, and the
//! realized percentiles of what was drawn. Pure and seeded: the caller owns the random
//! generator, so the same seed gives the same lengths. Never used on the hot path; never prints.
//!
//! Why these four: `fixed` is the classic benchmark; `uniform` with a range ratio is vLLM's
//! `--random-range-ratio`; `normal` is what most papers state; `lognormal`, set by its median
//! and p99 and clipped to a maximum, is the heavy tail of real services (most requests short,
//! a few thousands of tokens), which is what drives p99 TPOT.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, LogNormal, Normal};
use serde::{Deserialize, Serialize};

/// z such that P(Z ≤ z) = 0.99 for a standard normal: ties a lognormal's p99 to its sigma.
const Z_P99: f64 = 2.326_347_874_040_840_8;

/// Longest length any distribution may produce: bounds prompt memory and `max_tokens`.
pub const MAX_LENGTH: u32 = 1 << 20;

/// A length distribution (tokens). Every draw is clipped to `[1, max]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LengthDist {
    Fixed {
        tokens: u32,
    },
    /// Uniform over `[mean·(1−range_ratio), mean·(1+range_ratio)]` (vLLM's meaning).
    Uniform {
        mean: u32,
        range_ratio: f64,
    },
    Normal {
        mean: f64,
        sd: f64,
        max: u32,
    },
    /// Set by its median and p99; draws above `max` are clipped to it.
    Lognormal {
        median: f64,
        p99: f64,
        max: u32,
    },
}

impl LengthDist {
    /// Parses `fixed:N`, `uniform:MEAN:RATIO`, `normal:MEAN:SD[:MAX]`,
    /// `lognormal:MEDIAN:P99[:MAX]`; a bare number is `fixed`. Errors name `flag` and the fix.
    pub fn parse(flag: &str, spec: &str) -> Result<LengthDist, String> {
        let parts: Vec<&str> = spec.split(':').map(str::trim).collect();
        let bad = |why: &str| {
            format!(
                "{flag} '{spec}': {why} (use fixed:N, uniform:MEAN:RATIO, normal:MEAN:SD[:MAX] \
                 or lognormal:MEDIAN:P99[:MAX], e.g. lognormal:300:4000:8000)"
            )
        };
        let num = |i: usize| -> Result<f64, String> {
            let s = parts.get(i).ok_or_else(|| bad("missing a number"))?;
            let v: f64 = s
                .parse()
                .map_err(|_| bad(&format!("'{s}' is not a number")))?;
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(bad(&format!("'{s}' must be a finite number ≥ 0")))
            }
        };
        let max_at = |i: usize| -> Result<u32, String> {
            if parts.len() <= i {
                return Ok(MAX_LENGTH);
            }
            let m = num(i)?;
            if m < 1.0 || m > MAX_LENGTH as f64 {
                return Err(bad(&format!("the max must be in [1, {MAX_LENGTH}]")));
            }
            Ok(m as u32)
        };
        let arity = |lo: usize, hi: usize| {
            if parts.len() < lo || parts.len() > hi {
                Err(bad("wrong number of fields"))
            } else {
                Ok(())
            }
        };
        let as_tokens = |v: f64| -> Result<u32, String> {
            if (1.0..=MAX_LENGTH as f64).contains(&v) {
                Ok(v.round() as u32)
            } else {
                Err(bad(&format!("lengths must be in [1, {MAX_LENGTH}]")))
            }
        };
        let dist = match parts[0] {
            _ if parts.len() == 1 => LengthDist::Fixed {
                tokens: as_tokens(num(0)?)?,
            },
            "fixed" => {
                arity(2, 2)?;
                LengthDist::Fixed {
                    tokens: as_tokens(num(1)?)?,
                }
            }
            "uniform" => {
                arity(3, 3)?;
                let range_ratio = num(2)?;
                if range_ratio >= 1.0 {
                    return Err(bad("the range ratio must be in [0, 1)"));
                }
                LengthDist::Uniform {
                    mean: as_tokens(num(1)?)?,
                    range_ratio,
                }
            }
            "normal" => {
                arity(3, 4)?;
                LengthDist::Normal {
                    mean: as_tokens(num(1)?)? as f64,
                    sd: num(2)?,
                    max: max_at(3)?,
                }
            }
            "lognormal" => {
                arity(3, 4)?;
                let (median, p99) = (as_tokens(num(1)?)? as f64, num(2)?);
                if p99 <= median {
                    return Err(bad("the p99 must be above the median"));
                }
                LengthDist::Lognormal {
                    median,
                    p99,
                    max: max_at(3)?,
                }
            }
            other => return Err(bad(&format!("unknown distribution '{other}'"))),
        };
        Ok(dist)
    }

    /// One length, clipped to `[1, max]`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let (v, max) = match *self {
            LengthDist::Fixed { tokens } => return tokens,
            LengthDist::Uniform { mean, range_ratio } => {
                let lo = (mean as f64 * (1.0 - range_ratio)).round().max(1.0) as u32;
                let hi = (mean as f64 * (1.0 + range_ratio)).round() as u32;
                return rng.random_range(lo..=hi.max(lo)).min(MAX_LENGTH);
            }
            LengthDist::Normal { mean, sd, max } => {
                let d = Normal::new(mean, sd).expect("sd checked ≥ 0 and finite");
                (d.sample(rng), max)
            }
            LengthDist::Lognormal { median, p99, max } => {
                let sigma = (p99 / median).ln() / Z_P99;
                let d = LogNormal::new(median.ln(), sigma).expect("p99 > median checked");
                (d.sample(rng), max)
            }
        };
        v.round().clamp(1.0, max as f64) as u32
    }

    /// The largest length a draw can have.
    pub fn upper_bound(&self) -> u32 {
        match *self {
            LengthDist::Fixed { tokens } => tokens,
            LengthDist::Uniform { mean, range_ratio } => {
                ((mean as f64 * (1.0 + range_ratio)).round() as u32).clamp(1, MAX_LENGTH)
            }
            LengthDist::Normal { max, .. } | LengthDist::Lognormal { max, .. } => max,
        }
    }
}

/// What a set of drawn lengths looks like: nearest-rank percentiles over all of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Realized {
    pub count: u64,
    pub mean: f64,
    pub min: u32,
    pub p50: u32,
    pub p90: u32,
    pub p99: u32,
    pub max: u32,
}

impl Realized {
    pub fn of(lengths: &[u32]) -> Realized {
        if lengths.is_empty() {
            return Realized::default();
        }
        let mut v = lengths.to_vec();
        v.sort_unstable();
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Realized {
            count: v.len() as u64,
            mean: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
            min: v[0],
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: v[v.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::SeedableRng;

    fn draws(d: &LengthDist, n: usize) -> Vec<u32> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    #[test]
    fn specs_parse_and_bad_ones_name_the_flag() {
        let p = |s| LengthDist::parse("--input-dist", s);
        assert_eq!(p("512"), Ok(LengthDist::Fixed { tokens: 512 }));
        assert_eq!(p("fixed:7"), Ok(LengthDist::Fixed { tokens: 7 }));
        assert_eq!(
            p("uniform:100:0.5"),
            Ok(LengthDist::Uniform {
                mean: 100,
                range_ratio: 0.5
            })
        );
        assert_eq!(
            p("lognormal:300:4000:8000"),
            Ok(LengthDist::Lognormal {
                median: 300.0,
                p99: 4000.0,
                max: 8000
            })
        );
        for bad in [
            "",
            "fixed:0",
            "uniform:100:1.5",
            "normal:100",
            "lognormal:300:200",
            "lognormal:300:4000:0",
            "zipf:3",
            "fixed:1:2",
            "normal:100:-5",
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.starts_with("--input-dist"), "{bad}: {e}");
        }
    }

    #[test]
    fn uniform_stays_in_its_range_and_covers_it() {
        let v = draws(
            &LengthDist::Uniform {
                mean: 100,
                range_ratio: 0.5,
            },
            20_000,
        );
        let r = Realized::of(&v);
        assert_eq!((r.min, r.max), (50, 150));
        assert!((r.mean - 100.0).abs() < 1.0, "{r:?}");
    }

    #[test]
    fn lognormal_hits_its_median_and_p99_and_its_clip() {
        let d = LengthDist::Lognormal {
            median: 300.0,
            p99: 4000.0,
            max: 100_000,
        };
        let r = Realized::of(&draws(&d, 100_000));
        assert!((r.p50 as f64 / 300.0 - 1.0).abs() < 0.03, "{r:?}");
        assert!((r.p99 as f64 / 4000.0 - 1.0).abs() < 0.08, "{r:?}");
        let clipped = LengthDist::Lognormal {
            median: 300.0,
            p99: 4000.0,
            max: 2000,
        };
        let r = Realized::of(&draws(&clipped, 10_000));
        assert_eq!(r.max, 2000);
        assert_eq!(clipped.upper_bound(), 2000);
    }

    #[test]
    fn normal_has_its_mean_and_sd_and_never_goes_below_one() {
        let v = draws(
            &LengthDist::Normal {
                mean: 200.0,
                sd: 50.0,
                max: MAX_LENGTH,
            },
            50_000,
        );
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let sd = (v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!(
            (mean - 200.0).abs() < 1.5 && (sd - 50.0).abs() < 1.5,
            "{mean} {sd}"
        );
        let wide = LengthDist::Normal {
            mean: 5.0,
            sd: 50.0,
            max: 30,
        };
        let r = Realized::of(&draws(&wide, 5_000));
        assert_eq!((r.min, r.max), (1, 30));
    }

    #[test]
    fn realized_percentiles_are_nearest_rank() {
        let v: Vec<u32> = (1..=100).rev().collect();
        let r = Realized::of(&v);
        assert_eq!((r.p50, r.p90, r.p99, r.min, r.max), (50, 90, 99, 1, 100));
        assert_eq!(Realized::of(&[]).count, 0);
    }
}
