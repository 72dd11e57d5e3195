//! The length distributions (`plan::workload::LengthDist`) against what they promise: specs
//! parse (and bad ones name the flag), draws are seeded, and their realized percentiles
//! (`summary::workload::Realized`) land where the parameters say.

use crate::plan::workload::{LengthDist, MAX_LENGTH};
use crate::summary::workload::Realized;
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
