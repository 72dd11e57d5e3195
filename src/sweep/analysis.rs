//! The arithmetic of a load curve (after **summary**; it reads only numbers already taken
//! from finished runs): medians and spread over repeats, isotonic smoothing, the knee of the
//! throughput curve and the interpolated SLO crossing. Pure functions over slices; nothing
//! here runs, reads files or prints.

use serde::{Deserialize, Serialize};

/// One figure over a point's repeats: the median and the range it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// (max − min) / median: the run-to-run spread as a fraction.
    pub rel_spread: Option<f64>,
    pub values: Vec<Option<f64>>,
}

impl Spread {
    pub fn of(values: Vec<Option<f64>>) -> Spread {
        let mut xs: Vec<f64> = values.iter().flatten().copied().collect();
        xs.sort_by(f64::total_cmp);
        let median = median_sorted(&xs);
        let (min, max) = (xs.first().copied(), xs.last().copied());
        let rel_spread = match (min, max, median) {
            (Some(lo), Some(hi), Some(m)) if m != 0.0 => Some((hi - lo) / m.abs()),
            _ => None,
        };
        Spread {
            median,
            min,
            max,
            rel_spread,
            values,
        }
    }
}

fn median_sorted(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(xs[n / 2]),
        _ => Some((xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

/// Pool-adjacent-violators: the non-decreasing sequence closest (least squares) to `ys`,
/// which must already be in load order. Latency should not fall as load rises; a measured
/// dip is noise, and smoothing it keeps one lucky probe from moving a search's bracket.
pub fn isotonic_increasing(ys: &[f64]) -> Vec<f64> {
    let weighted: Vec<(f64, f64)> = ys.iter().map(|&y| (y, 1.0)).collect();
    isotonic_increasing_weighted(&weighted)
}

/// Weighted pool-adjacent-violators over `(value, weight)` pairs in load order: a value
/// measured `w` times (the mean of `w` probes at one load) counts `w` times.
pub fn isotonic_increasing_weighted(ys: &[(f64, f64)]) -> Vec<f64> {
    // Blocks of (mean, weight, how many inputs), merged while a block's mean is below its
    // predecessor's.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(ys.len());
    for &(y, w) in ys {
        blocks.push((y, w, 1));
        while blocks.len() >= 2 {
            let (m2, w2, n2) = blocks[blocks.len() - 1];
            let (m1, w1, n1) = blocks[blocks.len() - 2];
            if m1 <= m2 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = ((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2);
        }
    }
    blocks
        .iter()
        .flat_map(|&(m, _, n)| std::iter::repeat_n(m, n))
        .collect()
}

/// Where throughput stops growing, and how it was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    pub load: f64,
    pub throughput: f64,
    /// Index into the sweep's points (in load order).
    pub index: usize,
    pub method: String,
}

/// The knee of a throughput-vs-load curve by Kneedle (Satopää et al., 2011): normalize both
/// axes to [0, 1] and take the point farthest above the diagonal, where the curve turns from
/// "throughput grows with load" to "more load buys little". Load stays linear, as in the
/// paper (on a log axis a saturating curve looks S-shaped and the rule picks its end). Like
/// any knee rule it depends on the range swept. `None` with fewer than 3 points, or when
/// the curve never bends (the farthest point is the last one, or none is above the diagonal).
pub fn knee(loads: &[f64], throughput: &[f64]) -> Option<Knee> {
    if loads.len() < 3 || loads.len() != throughput.len() {
        return None;
    }
    let xn = normalize(loads)?;
    let yn = normalize(throughput)?;
    let (index, best) = xn
        .iter()
        .zip(&yn)
        .map(|(x, y)| y - x)
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if best <= 0.0 || index == loads.len() - 1 {
        return None;
    }
    Some(Knee {
        load: loads[index],
        throughput: throughput[index],
        index,
        method:
            "kneedle (Satopää et al. 2011): maximum of normalized throughput minus normalized load"
                .into(),
    })
}

fn normalize(v: &[f64]) -> Option<Vec<f64>> {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = hi - lo;
    (span > 0.0 && span.is_finite()).then(|| v.iter().map(|x| (x - lo) / span).collect())
}

/// The load where a rising metric crosses `bound`, linear between a passing point
/// `(x0, v0)` and a failing one `(x1, v1)`; the failing load when the values do not rise.
pub fn interpolate_crossing(x0: f64, v0: f64, x1: f64, v1: f64, bound: f64) -> f64 {
    if v1 <= v0 {
        return x1;
    }
    let t = ((bound - v0) / (v1 - v0)).clamp(0.0, 1.0);
    x0 + t * (x1 - x0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_takes_median_and_range() {
        let s = Spread::of(vec![Some(3.0), Some(1.0), None, Some(2.0)]);
        assert_eq!((s.median, s.min, s.max), (Some(2.0), Some(1.0), Some(3.0)));
        assert_eq!(s.rel_spread, Some(1.0));
        assert_eq!(Spread::of(vec![Some(1.0), Some(2.0)]).median, Some(1.5));
        assert_eq!(Spread::of(vec![None]).median, None);
    }

    #[test]
    fn isotonic_pools_violators_and_keeps_monotone_input() {
        assert_eq!(isotonic_increasing(&[1.0, 2.0, 3.0]), vec![1.0, 2.0, 3.0]);
        assert_eq!(
            isotonic_increasing(&[1.0, 3.0, 2.0, 4.0]),
            vec![1.0, 2.5, 2.5, 4.0]
        );
        assert_eq!(isotonic_increasing(&[3.0, 2.0, 1.0]), vec![2.0, 2.0, 2.0]);
        let out = isotonic_increasing(&[5.0, 1.0, 1.0, 9.0, 2.0]);
        assert!(out.windows(2).all(|w| w[0] <= w[1]), "{out:?}");
        let (a, b): (f64, f64) = (out.iter().sum(), [5.0, 1.0, 1.0, 9.0, 2.0].iter().sum());
        assert!((a - b).abs() < 1e-9, "PAV keeps the sum");
    }

    #[test]
    fn weighted_isotonic_counts_repeated_measurements() {
        // 30 measured twice at a mean of 60 outweighs one 90 below it: pooled (90 + 2·60) / 3.
        assert_eq!(
            isotonic_increasing_weighted(&[(50.0, 1.0), (90.0, 1.0), (60.0, 2.0)]),
            vec![50.0, 70.0, 70.0]
        );
        assert_eq!(
            isotonic_increasing_weighted(&[(1.0, 3.0), (2.0, 1.0)]),
            vec![1.0, 2.0]
        );
    }

    #[test]
    fn knee_of_a_saturating_curve_is_where_it_bends() {
        // Throughput c / (1 + c/16): grows linearly, then flattens towards 16.
        let loads: Vec<f64> = (1..=16).map(|i| f64::from(4 * i)).collect();
        let tput: Vec<f64> = loads.iter().map(|c| c / (1.0 + c / 16.0)).collect();
        let k = knee(&loads, &tput).unwrap();
        assert_eq!(k.load, 24.0, "{k:?}");
        // Open loop: throughput follows the rate up to 100/s, then holds.
        let rates = [20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 140.0, 160.0];
        let held: Vec<f64> = rates.iter().map(|r: &f64| r.min(100.0)).collect();
        assert_eq!(knee(&rates, &held).unwrap().load, 100.0);
    }

    #[test]
    fn no_knee_when_throughput_keeps_growing_or_too_few_points() {
        let loads = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(knee(&loads, &[1.0, 2.0, 3.0, 4.0]), None);
        assert_eq!(knee(&loads, &[1.0, 2.0, 4.0, 8.0]), None);
        assert_eq!(knee(&[1.0, 2.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn crossing_interpolates_between_pass_and_fail() {
        assert_eq!(interpolate_crossing(10.0, 400.0, 20.0, 600.0, 500.0), 15.0);
        assert_eq!(interpolate_crossing(10.0, 400.0, 20.0, 300.0, 500.0), 20.0);
    }
}
