//! The arithmetic of a load curve (after **summary**; it reads only numbers already taken
//! from finished runs): medians and spread over repeats, isotonic smoothing, the knee of the
//! load curve (throughput and latency together) and the interpolated SLO crossing. Pure
//! functions over slices; nothing here runs, reads files or prints.

use crate::summary::study::Knee;
use crate::summary::study::KneeFinding;
use crate::summary::study::KneePart;
use crate::summary::study::Spread;

impl Spread {
    /// The spread of one figure's values, one per repeat in run order; `None`s are kept in `values`
    /// and left out of the rest.
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

/// A bend smaller than this, in normalized units (a tenth of the curve's range), is not a
/// knee: a straight line measured with a few percent of run-to-run noise bends that much.
pub const MIN_BEND: f64 = 0.1;
/// A curve whose range is under this fraction of its largest value is flat: nothing climbs
/// or stops growing on it, and normalizing it would only magnify noise.
pub const MIN_RISE: f64 = 0.1;

/// The combined rule, as reported beside every combined knee.
pub const KNEE_METHOD: &str = "kneedle (Satopää et al. 2011) on the latency-throughput curve: \
the point maximizing normalized throughput minus normalized e2e p50 (isotonic in load), where \
added latency stops buying throughput; only when throughput vs load bends (its own kneedle knee) \
and e2e p50 rises by at least 10% over the range";
const THROUGHPUT_METHOD: &str =
    "kneedle on throughput vs load (concave): maximum of normalized throughput minus normalized load";
const LATENCY_METHOD: &str = "kneedle on e2e p50 vs load (convex, isotonic): maximum of \
normalized load minus normalized latency";

/// One point of the curve: its index among the sweep's points, load, throughput and e2e
/// p50 (`None` when not measured). Points must be in load order.
#[derive(Clone, Copy, Debug)]
pub struct CurvePoint {
    pub index: usize,
    pub load: f64,
    pub throughput: f64,
    pub latency_ms: Option<f64>,
}

/// "Where throughput stops growing while latency starts climbing" (issue 6), from the
/// curve. The throughput knee is Kneedle on throughput vs load (concave: where more load
/// buys little); the latency knee is Kneedle on e2e p50 vs load (convex: where latency
/// starts climbing). Neither alone is the knee, and the latency knee is absent
/// whenever latency grows in proportion to load, which a closed loop past saturation does
/// (Little's law: latency = users / throughput). So the combined knee is Kneedle on the two
/// curves against each other, the latency-throughput "hockey stick": the point maximizing
/// normalized throughput minus normalized latency, past which each step of latency buys
/// less throughput. It reads only what the server delivered, so it is the same point
/// whether the load was users or requests per second. It is reported only when throughput
/// bends and latency rises; otherwise the note names the missing component. Latency is isotonic-smoothed first (it may not fall as
/// load rises; a dip is noise); throughput is taken as measured, since a server past its
/// knee may really lose throughput.
pub fn knee(points: &[CurvePoint]) -> KneeFinding {
    let with_latency: Vec<CurvePoint> = points
        .iter()
        .copied()
        .filter(|p| p.latency_ms.is_some())
        .collect();
    let smoothed = isotonic_increasing(
        &with_latency
            .iter()
            .map(|p| p.latency_ms.unwrap_or(0.0))
            .collect::<Vec<_>>(),
    );
    let curve: Vec<CurvePoint> = with_latency
        .iter()
        .zip(&smoothed)
        .map(|(p, &l)| CurvePoint {
            latency_ms: Some(l),
            ..*p
        })
        .collect();
    let throughput_knee = part(points, throughput_knee(points), THROUGHPUT_METHOD);
    let latency_knee = part(&curve, latency_knee(&curve), LATENCY_METHOD);
    let combined = combined_knee(&curve, &throughput_knee);
    let (knee, note) = match combined {
        Ok(i) => (Some(knee_at(&curve[i], KNEE_METHOD)), None),
        Err(why) => (None, Some(why)),
    };
    KneeFinding {
        knee,
        note,
        throughput_knee,
        latency_knee,
    }
}

fn knee_at(p: &CurvePoint, method: &str) -> Knee {
    Knee {
        load: p.load,
        throughput: p.throughput,
        latency_ms: p.latency_ms,
        index: p.index,
        method: method.into(),
    }
}

fn part(points: &[CurvePoint], found: Result<usize, String>, method: &str) -> KneePart {
    match found {
        Ok(i) => KneePart {
            knee: Some(knee_at(&points[i], method)),
            note: None,
        },
        Err(why) => KneePart {
            knee: None,
            note: Some(why),
        },
    }
}

fn combined_knee(curve: &[CurvePoint], tput: &KneePart) -> Result<usize, String> {
    if curve.len() < 3 {
        return Err(format!(
            "fewer than 3 points with both throughput and e2e p50 ({})",
            curve.len()
        ));
    }
    if let Some(why) = &tput.note {
        return Err(format!("throughput component missing: {why}"));
    }
    let lat: Vec<f64> = curve.iter().map(|p| p.latency_ms.unwrap_or(0.0)).collect();
    if flat(&lat) {
        return Err(format!(
            "latency component missing: e2e p50 rises by less than {:.0}% over these loads \
             (throughput is not limited by the server's latency here; check errors and the \
             client's overhead)",
            MIN_RISE * 100.0
        ));
    }
    let tput: Vec<f64> = curve.iter().map(|p| p.throughput).collect();
    let (i, bend) = farthest(&tput, &lat).ok_or("throughput does not change")?;
    if bend < MIN_BEND {
        return Err("throughput and latency grow in step: no bend in range".into());
    }
    Ok(i)
}

/// Kneedle on throughput vs load (concave, increasing).
fn throughput_knee(points: &[CurvePoint]) -> Result<usize, String> {
    if points.len() < 3 {
        return Err(format!("fewer than 3 points ({})", points.len()));
    }
    let tput: Vec<f64> = points.iter().map(|p| p.throughput).collect();
    if flat(&tput) {
        return Err(format!(
            "throughput varies by less than {:.0}% over these loads",
            MIN_RISE * 100.0
        ));
    }
    let loads: Vec<f64> = points.iter().map(|p| p.load).collect();
    let (i, bend) = farthest(&tput, &loads).ok_or("loads do not differ")?;
    if bend < MIN_BEND || i == points.len() - 1 {
        return Err("throughput never stops growing over these loads (no knee in range)".into());
    }
    if i == 0 {
        return Err(
            "throughput is highest relative to load at the lowest load: the knee is \
                    at or below the range swept"
                .into(),
        );
    }
    Ok(i)
}

/// Kneedle on (isotonic) latency vs load (convex, increasing).
fn latency_knee(curve: &[CurvePoint]) -> Result<usize, String> {
    if curve.len() < 3 {
        return Err(format!(
            "fewer than 3 points with an e2e p50 ({})",
            curve.len()
        ));
    }
    let lat: Vec<f64> = curve.iter().map(|p| p.latency_ms.unwrap_or(0.0)).collect();
    if flat(&lat) {
        return Err(format!(
            "e2e p50 rises by less than {:.0}% over these loads",
            MIN_RISE * 100.0
        ));
    }
    let loads: Vec<f64> = curve.iter().map(|p| p.load).collect();
    let (i, bend) = farthest(&loads, &lat).ok_or("loads do not differ")?;
    if bend < MIN_BEND {
        return Err(
            "e2e p50 grows in proportion to load (no bend where it starts climbing)".into(),
        );
    }
    Ok(i)
}

/// Kneedle's difference curve: both series normalized to [0, 1], the index where `above`
/// exceeds `below` the most, and by how much.
fn farthest(above: &[f64], below: &[f64]) -> Option<(usize, f64)> {
    let a = normalize(above)?;
    let b = normalize(below)?;
    a.iter()
        .zip(&b)
        .map(|(x, y)| x - y)
        .enumerate()
        .max_by(|p, q| p.1.total_cmp(&q.1))
}

fn flat(v: &[f64]) -> bool {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    hi - lo <= MIN_RISE * hi.abs().max(lo.abs())
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

    fn curve(
        loads: &[f64],
        tput: impl Fn(f64) -> f64,
        lat: impl Fn(f64) -> f64,
    ) -> Vec<CurvePoint> {
        loads
            .iter()
            .enumerate()
            .map(|(index, &load)| CurvePoint {
                index,
                load,
                throughput: tput(load),
                latency_ms: Some(lat(load)),
            })
            .collect()
    }

    fn load_of(p: &KneePart) -> Option<f64> {
        p.knee.as_ref().map(|k| k.load)
    }

    #[test]
    fn closed_loop_saturating_smoothly_has_its_knee_where_throughput_bends() {
        // M/M/1-ish closed loop: throughput c / (1 + c/16) per ms; by Little's law latency
        // = c / throughput = 1 + c/16 ms, a straight line in c.
        let loads: Vec<f64> = (1..=16).map(|i| f64::from(4 * i)).collect();
        let f = knee(&curve(&loads, |c| c / (1.0 + c / 16.0), |c| 1.0 + c / 16.0));
        let k = f.knee.as_ref().expect("a knee");
        // Continuous Kneedle: slope 1/(1 + c/16)² equals the chord's (12.8 − 3.2)/60 at
        // c = 16(√(1/0.16) − 1) = 24, a grid point.
        assert_eq!((k.load, k.index), (24.0, 5), "{f:?}");
        assert!(k.method.contains("latency-throughput"), "{}", k.method);
        assert_eq!(k.latency_ms, Some(2.5));
        assert_eq!(load_of(&f.throughput_knee), Some(24.0));
        // Latency proportional to load has no bend of its own: the component says so.
        assert_eq!(f.latency_knee.knee, None);
        assert!(f
            .latency_knee
            .note
            .as_deref()
            .unwrap()
            .contains("in proportion"));
    }

    #[test]
    fn closed_loop_with_a_hard_capacity_has_every_knee_at_it() {
        // 16 requests at a time, 1 ms each: throughput min(c, 16), latency max(1, c/16).
        let loads: Vec<f64> = (1..=32).map(|i| f64::from(2 * i)).collect();
        let f = knee(&curve(&loads, |c| c.min(16.0), |c| (c / 16.0).max(1.0)));
        assert_eq!(f.knee.as_ref().map(|k| k.load), Some(16.0), "{f:?}");
        assert_eq!(load_of(&f.throughput_knee), Some(16.0));
        assert_eq!(load_of(&f.latency_knee), Some(16.0));
    }

    #[test]
    fn open_loop_knee_is_at_the_capacity_and_latency_knee_not_before_it_climbs() {
        // Throughput follows the rate up to 100/s, then holds; latency 10/(1 − λ/110) ms below
        // the cap, then a queue that grows with the excess.
        let rates = [20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 140.0, 160.0];
        let lat = |r: f64| {
            if r <= 100.0 {
                10.0 / (1.0 - r / 110.0)
            } else {
                110.0 + 10.0 * (r - 100.0)
            }
        };
        let f = knee(&curve(&rates, |r| r.min(100.0), lat));
        assert_eq!(f.knee.as_ref().map(|k| k.load), Some(100.0), "{f:?}");
        assert_eq!(load_of(&f.throughput_knee), Some(100.0));
        // Latency has doubled from its lowest-load value by 80/s; its knee is not before.
        let lk = load_of(&f.latency_knee).unwrap();
        assert!((80.0..=100.0).contains(&lk), "{f:?}");
    }

    #[test]
    fn a_noisy_dip_in_latency_is_smoothed_before_the_knee() {
        let loads: Vec<f64> = (1..=32).map(|i| f64::from(2 * i)).collect();
        let mut c = curve(&loads, |c| c.min(16.0), |c| (c / 16.0).max(1.0));
        // Load 40 measured far too fast (0.9 ms for 2.5): raw, it would be the point of full
        // throughput at the lowest latency and so the knee. Pooled with its neighbours
        // (isotonic: 1.93 ms for loads 32 to 40), it is not.
        c[19].latency_ms = Some(0.9);
        let f = knee(&c);
        assert_eq!(f.knee.as_ref().map(|k| k.load), Some(16.0), "{f:?}");
    }

    #[test]
    fn flat_latency_names_the_missing_component_and_invents_no_knee() {
        // Throughput saturates while latency holds: the limit is not the server's latency.
        let loads: Vec<f64> = (1..=16).map(|i| f64::from(4 * i)).collect();
        let f = knee(&curve(
            &loads,
            |c| c / (1.0 + c / 16.0),
            |c| 5.0 + (c % 3.0) * 0.01,
        ));
        assert_eq!(f.knee, None);
        assert!(
            f.note
                .as_deref()
                .unwrap()
                .contains("latency component missing"),
            "{f:?}"
        );
        assert_eq!(load_of(&f.throughput_knee), Some(24.0));
        assert!(f
            .latency_knee
            .note
            .as_deref()
            .unwrap()
            .contains("less than 10%"));
    }

    #[test]
    fn no_knee_when_throughput_keeps_growing_falls_or_too_few_points() {
        let loads = [1.0, 2.0, 3.0, 4.0];
        for tput in [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 4.0, 8.0]] {
            let pts = curve(&loads, |c| tput[c as usize - 1], |c| 10.0 * c);
            let f = knee(&pts);
            assert_eq!(f.knee, None);
            let note = f.note.unwrap();
            assert!(note.contains("throughput component missing"), "{note}");
            assert!(note.contains("never stops growing"), "{note}");
        }
        // Throughput c / (4c − 2): highest at one user, so the knee is below the range.
        let f = knee(&curve(&loads, |c| c / (4.0 * c - 2.0), |c| 4.0 * c - 2.0));
        assert_eq!(f.knee, None);
        assert!(f.note.unwrap().contains("below the range"));
        let f = knee(&curve(&[1.0, 2.0], |c| c, |c| c));
        assert!(f.note.unwrap().contains("fewer than 3"));
        assert!(f.throughput_knee.note.unwrap().contains("fewer than 3"));
        assert!(f.latency_knee.note.unwrap().contains("fewer than 3"));
    }

    #[test]
    fn points_without_latency_are_left_out_and_indices_kept() {
        let loads: Vec<f64> = (1..=32).map(|i| f64::from(2 * i)).collect();
        let mut c = curve(&loads, |c| c.min(16.0), |c| (c / 16.0).max(1.0));
        c[0].latency_ms = None;
        let f = knee(&c);
        let k = f.knee.unwrap();
        assert_eq!((k.load, k.index), (16.0, 7));
    }

    #[test]
    fn crossing_interpolates_between_pass_and_fail() {
        assert_eq!(interpolate_crossing(10.0, 400.0, 20.0, 600.0, 500.0), 15.0);
        assert_eq!(interpolate_crossing(10.0, 400.0, 20.0, 300.0, 500.0), 20.0);
    }
}
