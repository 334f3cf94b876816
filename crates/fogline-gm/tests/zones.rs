//! Safe-zone properties: an admissible zone never hides a crossing, and the box never says
//! "safe" where the ball does not.

use fogline_gm::{Function, Kind, Side, Zone};
use proptest::prelude::*;

fn sum(vs: &[Vec<i64>], d: usize) -> Vec<i128> {
    (0..d)
        .map(|k| vs.iter().map(|v| v[k] as i128).sum())
        .collect()
}

/// References `v'_i`, new vectors `v_i` and zero-sum slacks: if every node's drift vector is
/// safe, `f(v)` is on the side of `f(e)`.
fn admissible(kind: Kind, t: f64, refs: &[[i64; 2]], now: &[[i64; 2]], slack_seed: u64) {
    let f = Function::new(kind, t, [20.0, 35.0], 0.01).unwrap();
    let n = refs.len();
    let d = f.dim();
    let r: Vec<Vec<i64>> = refs.iter().map(|&q| f.lift(q)).collect();
    let v: Vec<Vec<i64>> = now.iter().map(|&q| f.lift(q)).collect();
    let (rs, vs) = (sum(&r, d), sum(&v, d));
    let e: Vec<f64> = rs.iter().map(|&s| s as f64 / n as f64).collect();
    let side = f.side_of_sum(&rs, n);
    // zero-sum slack, small against the drifts
    let mut rng = fogline_gm::rng::Rng::new(slack_seed);
    let mut slack: Vec<Vec<f64>> = (0..n)
        .map(|_| {
            (0..d)
                .map(|k| rng.normal() * f.units[0] / f.units[k])
                .collect()
        })
        .collect();
    for k in 0..d {
        let m = slack.iter().map(|s| s[k]).sum::<f64>() / n as f64;
        for s in slack.iter_mut() {
            s[k] -= m;
        }
    }
    for zone in Zone::ALL {
        for use_slack in [false, true] {
            let all_safe = (0..n).all(|i| {
                let u: Vec<f64> = (0..d)
                    .map(|k| {
                        e[k] + (v[i][k] - r[i][k]) as f64
                            + if use_slack { slack[i][k] } else { 0.0 }
                    })
                    .collect();
                zone.is_safe(&f, &e, &u, side)
            });
            if all_safe {
                assert_eq!(
                    f.side_of_sum(&vs, n),
                    side,
                    "{zone:?} slack={use_slack} hid a crossing"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn variance_zones_are_admissible(
        pairs in prop::collection::vec(((-300i64..300, -300i64..300), (-30i64..30, -30i64..30)), 2..10),
        t in 0.1f64..3.0,
        seed: u64,
    ) {
        let refs: Vec<[i64; 2]> = pairs.iter().map(|p| [p.0.0, p.0.1]).collect();
        let now: Vec<[i64; 2]> = pairs.iter().map(|p| [p.0.0 + p.1.0, p.0.1 + p.1.1]).collect();
        admissible(Kind::Variance, (t * 100.0).round() / 100.0, &refs, &now, seed);
    }

    #[test]
    fn covariance_zones_are_admissible(
        pairs in prop::collection::vec(((-300i64..300, -300i64..300), (-40i64..40, -40i64..40)), 2..10),
        t in -2.0f64..2.0,
        seed: u64,
    ) {
        let refs: Vec<[i64; 2]> = pairs.iter().map(|p| [p.0.0, p.0.1]).collect();
        let now: Vec<[i64; 2]> = pairs.iter().map(|p| [p.0.0 + p.1.0, p.0.1 + p.1.1]).collect();
        admissible(Kind::Covariance, (t * 100.0).round() / 100.0, &refs, &now, seed);
    }

    #[test]
    fn average_zones_are_admissible(
        pairs in prop::collection::vec(((-300i64..300, 0i64..1), (-50i64..50, 0i64..1)), 2..10),
        t in 18.0f64..22.0,
        seed: u64,
    ) {
        let refs: Vec<[i64; 2]> = pairs.iter().map(|p| [p.0.0, 0]).collect();
        let now: Vec<[i64; 2]> = pairs.iter().map(|p| [p.0.0 + p.1.0, 0]).collect();
        admissible(Kind::Average, (t * 100.0).round() / 100.0, &refs, &now, seed);
    }

    /// The box contains the ball: where the box is safe, so is the ball.
    #[test]
    fn box_safe_implies_ball_safe(
        e in (-300.0f64..300.0, 0.0f64..200_000.0),
        du in (-200.0f64..200.0, -60_000.0f64..60_000.0),
        cov in (-300.0f64..300.0, -300.0f64..300.0, -90_000.0f64..90_000.0, -50.0f64..50.0, -50.0f64..50.0, -9_000.0f64..9_000.0),
    ) {
        let f = Function::thesis(Kind::Variance);
        let ev = [e.0, e.1];
        let u = [e.0 + du.0, e.1 + du.1];
        for side in [Side::Below, Side::Above] {
            if Zone::Box.is_safe(&f, &ev, &u, side) {
                prop_assert!(Zone::Ball.is_safe(&f, &ev, &u, side));
            }
        }
        let f = Function::thesis(Kind::Covariance);
        let ev = [cov.0, cov.1, cov.2];
        let u = [cov.0 + cov.3, cov.1 + cov.4, cov.2 + cov.5];
        for side in [Side::Below, Side::Above] {
            if Zone::Box.is_safe(&f, &ev, &u, side) {
                prop_assert!(Zone::Ball.is_safe(&f, &ev, &u, side));
            }
        }
    }
}

/// The convex zone for the variance is never smaller than the ball on the safe side of the
/// parabola (above `T` it is the exact region): wherever the ball is safe above, so is it.
#[test]
fn above_the_threshold_the_convex_zone_contains_the_ball() {
    let f = Function::thesis(Kind::Variance);
    let t = f.threshold();
    let mut rng = fogline_gm::rng::Rng::new(5);
    let mut checked = 0;
    for _ in 0..20_000 {
        let ex = rng.range(-300.0, 300.0);
        let e = [ex, ex * ex + t * rng.range(1.01, 4.0)];
        let u = [
            e[0] + rng.range(-100.0, 100.0),
            e[1] + rng.range(-40_000.0, 40_000.0),
        ];
        if Zone::Ball.is_safe(&f, &e, &u, Side::Above) {
            checked += 1;
            assert!(Zone::Convex.is_safe(&f, &e, &u, Side::Above), "{e:?} {u:?}");
        }
    }
    assert!(checked > 100);
}
