//! Safe zones: the local test a node runs on its drift vector `u_i = e + (v_i - v'_i) + s_i`.
//!
//! Every zone here is *admissible*: if every node passes, the global vector `v` is on the same
//! side of `T` as the estimate `e`.
//! - [`Zone::Ball`] (thesis section 3.2.1, after Sharfman et al.): the ball on the diameter
//!   `[e, u_i]` lies wholly on `e`'s side. Sound because the union of these balls covers the
//!   convex hull of the `u_i`, which holds `v`, for any reference point `e`.
//! - [`Zone::Box`] (thesis section 3.3.1): the ball's bounding box instead; contains the ball,
//!   so it never hides a crossing, and it raises a few extra violations.
//! - [`Zone::Convex`] (AutoMon's ADCD-E, Sivan et al. SIGMOD 2022): split `f = g - h` with `g`,
//!   `h` convex (`A`'s positive and negative eigen-parts) and linearise the part that would
//!   make the region non-convex at `e`. The result is a convex set `C(e)` inside `e`'s side
//!   that contains `e`; `v`, the mean of the `u_i`, is in `C(e)` when every `u_i` is. For the
//!   variance above `T` this is the exact region `y - x^2 > T`; below `T` it is the half-plane
//!   under the tangent of the parabola at `e_x`.
//! - [`Zone::Band`] (fogline's): the convex zone with a far edge. A node also reports when its
//!   drift has moved the zone's bound on `f` *away* from `T` by more than [`BAND_FAR`] times
//!   the slack `|T - f(e)|`. A subset of the convex zone, so just as admissible. Why: with a
//!   one-sided zone only drifts toward `T` are ever reported, so the estimate takes those in
//!   and never the drifts the other way, which cancel them in `v`; `f(e)` creeps toward `T`,
//!   every node's slack shrinks with it, and the fleet ends in a burst of updates that
//!   re-centres `e`. Reporting the far drifts too keeps `e` near `v` and the slack whole.

use serde::Serialize;

use crate::function::{Function, Side};
use crate::linalg;

/// A safe-zone shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Zone {
    /// The thesis' ball on the diameter `[e, u]`.
    Ball,
    /// The bounding box of that ball (thesis 3.3.1).
    Box,
    /// A convex zone from the DC decomposition of `f` (ADCD-E).
    Convex,
    /// The convex zone with a far edge at [`BAND_FAR`] times the slack.
    Band,
}

/// Where the band's far edge lies: a drift that moved the convex zone's bound on `f` away from
/// `T` by more than this many times the slack `|T - f(e)|` is reported. Chosen on Table 3.2's
/// data (docs/GEOMETRIC_MONITORING.md): 2 to 6 all gave 17-33 % fewer updates than the
/// convex zone; 4 was the best or near it on most data sets.
pub const BAND_FAR: f64 = 4.0;

impl Zone {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Zone::Ball => "ball",
            Zone::Box => "box",
            Zone::Convex => "convex",
            Zone::Band => "band",
        }
    }

    /// Every zone.
    pub const ALL: [Zone; 4] = [Zone::Ball, Zone::Box, Zone::Convex, Zone::Band];

    /// Parses [`Zone::name`].
    pub fn parse(s: &str) -> Option<Zone> {
        Zone::ALL.into_iter().find(|z| z.name() == s)
    }

    /// Whether the drift vector `u` is safe, for estimate `e` whose exact side is `side`.
    /// `u == e` is always safe: a node whose drift is zero has nothing to report.
    pub fn is_safe(self, f: &Function, e: &[f64], u: &[f64], side: Side) -> bool {
        if u == e {
            return true;
        }
        // f(x) = x'Ax + b'x is homogeneous in the physical units: the same A and b apply.
        let (e, u) = (&f.to_physical(e)[..], &f.to_physical(u)[..]);
        let t = f.threshold() * f.f_unit;
        match self {
            Zone::Ball | Zone::Box => {
                let c: Vec<f64> = e.iter().zip(u).map(|(a, b)| 0.5 * (a + b)).collect();
                let r = 0.5
                    * e.iter()
                        .zip(u)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>()
                        .sqrt();
                let g = f.grad(&c);
                let lmax = f.lambda.iter().fold(0.0f64, |m, l| m.max(l.abs()));
                let margin = f.margin(f.scale(&c) + linalg::dot(&g, &g).sqrt() * r + lmax * r * r);
                match side {
                    Side::Above => self.min_over(f, &c, r, false) > t + margin,
                    Side::Below => -self.min_over(f, &c, r, true) <= t - margin,
                }
            }
            Zone::Convex | Zone::Band => {
                let (value, scale) = convex_value(f, e, u, side);
                let margin = f.margin(scale);
                let near = match side {
                    Side::Above => value > t + margin,
                    Side::Below => value <= t - margin,
                };
                // The far edge is no safety condition: no rounding margin is needed there.
                let far = || {
                    let fe = f.eval(e);
                    match side {
                        Side::Above => value <= fe + BAND_FAR * (fe - t),
                        Side::Below => value >= fe - BAND_FAR * (t - fe),
                    }
                };
                near && (self == Zone::Convex || far())
            }
        }
    }

    /// A lower bound on `min f` (or on `min -f` when `negate`) over the ball or its box.
    fn min_over(self, f: &Function, c: &[f64], r: f64, negate: bool) -> f64 {
        let s = if negate { -1.0 } else { 1.0 };
        match self {
            Zone::Ball => {
                // f(c + z) = f(c) + grad f(c)'z + z'Az
                let g: Vec<f64> = f.grad(c).iter().map(|x| s * x).collect();
                let lambda: Vec<f64> = f.lambda.iter().map(|x| s * x).collect();
                s * f.eval(c) + linalg::ball_min(&lambda, &f.vecs, &g, r)
            }
            Zone::Box => {
                let a: linalg::Mat =
                    f.a.iter()
                        .map(|row| row.iter().map(|x| s * x).collect())
                        .collect();
                let b: Vec<f64> = f.b.iter().map(|x| s * x).collect();
                let lo: Vec<f64> = c.iter().map(|x| x - r).collect();
                let hi: Vec<f64> = c.iter().map(|x| x + r).collect();
                linalg::box_min(&a, &b, &lo, &hi)
            }
            Zone::Convex | Zone::Band => unreachable!("the convex zones are not balls"),
        }
    }
}

/// The convex zone's test function at `u` (to be kept `<= T` below, `> T` above), with a scale
/// for the rounding margin. Below: `g(u) - h(e) - grad h(e)'(u - e)`, an upper bound on `f(u)`.
/// Above: `g(e) + grad g(e)'(u - e) - h(u)`, a lower bound on `f(u)`.
fn convex_value(f: &Function, e: &[f64], u: &[f64], side: Side) -> (f64, f64) {
    let d = f.dim();
    // A = P + Q with P >= 0 (positive eigen-part), Q <= 0; g = x'Px + b'x, h = -x'Qx.
    let part = |x: &[f64], positive: bool| -> f64 {
        (0..d)
            .filter(|&i| (f.lambda[i] > 0.0) == positive && f.lambda[i] != 0.0)
            .map(|i| {
                let p: f64 = (0..d).map(|k| f.vecs[k][i] * x[k]).sum();
                f.lambda[i] * p * p
            })
            .sum()
    };
    let part_grad = |x: &[f64], positive: bool| -> Vec<f64> {
        let mut out = vec![0.0; d];
        for i in (0..d).filter(|&i| (f.lambda[i] > 0.0) == positive && f.lambda[i] != 0.0) {
            let p: f64 = (0..d).map(|k| f.vecs[k][i] * x[k]).sum();
            for (k, o) in out.iter_mut().enumerate() {
                *o += 2.0 * f.lambda[i] * p * f.vecs[k][i];
            }
        }
        out
    };
    let diff: Vec<f64> = u.iter().zip(e).map(|(a, b)| a - b).collect();
    let lin = |x: &[f64]| linalg::dot(&f.b, x);
    let terms = match side {
        // g(u) - h(e) - grad h(e)'(u-e), with h = -(Q-part), so -h = Q-part
        Side::Below => [
            part(u, true),
            lin(u),
            part(e, false),
            linalg::dot(&part_grad(e, false), &diff),
            0.0,
        ],
        // g(e) + grad g(e)'(u-e) - h(u)
        Side::Above => [
            part(e, true),
            lin(e),
            linalg::dot(&part_grad(e, true), &diff),
            linalg::dot(&f.b, &diff),
            part(u, false),
        ],
    };
    // rounding is relative to the terms, not to their (possibly cancelling) sum
    (terms.iter().sum(), terms.iter().map(|x| x.abs()).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::Kind;

    #[test]
    fn convex_zone_for_variance_is_the_tangent_half_plane_and_the_exact_region() {
        let f = Function::thesis(Kind::Variance);
        let t = f.threshold();
        let e = [10.0, 100.0 + 0.5 * t];
        // below: y - 2 e_x x + e_x^2 <= T
        let u = [12.0, 2.0 * 10.0 * 12.0 - 100.0 + t - 1.0];
        assert!(Zone::Convex.is_safe(&f, &e, &u, Side::Below));
        let u = [12.0, 2.0 * 10.0 * 12.0 - 100.0 + t + 1.0];
        assert!(!Zone::Convex.is_safe(&f, &e, &u, Side::Below));
        // above: the exact region
        let e = [0.0, 2.0 * t];
        assert!(Zone::Convex.is_safe(&f, &e, &[5.0, 25.0 + t + 1.0], Side::Above));
        assert!(!Zone::Convex.is_safe(&f, &e, &[5.0, 25.0 + t - 1.0], Side::Above));
    }

    #[test]
    fn the_band_is_the_convex_zone_with_a_far_edge() {
        let f = Function::thesis(Kind::Variance);
        let t = f.threshold();
        // below: f(e) = T - 1, so the far edge is at f(e) - 4 = T - 5 on the tangent's scale
        let e = [10.0, 100.0 + t - 1.0];
        let at = |bound: f64| [12.0, 2.0 * 10.0 * 12.0 - 100.0 + bound];
        for (bound, convex, band) in [
            (t - 0.5, true, true),
            (t + 0.5, false, false),
            (t - 4.5, true, true),
            (t - 5.5, true, false),
        ] {
            let u = at(bound);
            assert_eq!(
                Zone::Convex.is_safe(&f, &e, &u, Side::Below),
                convex,
                "{bound}"
            );
            assert_eq!(Zone::Band.is_safe(&f, &e, &u, Side::Below), band, "{bound}");
        }
        // above: f(e) = T + 1, far edge at f(u) = T + 5
        let e = [0.0, t + 1.0];
        let u = |fu: f64| [5.0, 25.0 + fu];
        assert!(Zone::Band.is_safe(&f, &e, &u(t + 4.5), Side::Above));
        assert!(!Zone::Band.is_safe(&f, &e, &u(t + 5.5), Side::Above));
        assert!(Zone::Convex.is_safe(&f, &e, &u(t + 5.5), Side::Above));
        assert!(!Zone::Band.is_safe(&f, &e, &u(t - 0.5), Side::Above));
        // no drift is always safe
        assert!(Zone::Band.is_safe(&f, &e, &e, Side::Above));
    }

    #[test]
    fn box_is_never_safer_than_ball() {
        let f = Function::thesis(Kind::Variance);
        let t = f.threshold();
        let e = [0.0, 0.5 * t];
        for k in 0..200 {
            let ang = k as f64 * 0.1;
            let r = 0.2 * k as f64;
            let u = [e[0] + r * ang.cos(), e[1] + r * 50.0 * ang.sin()];
            if Zone::Box.is_safe(&f, &e, &u, Side::Below) {
                assert!(Zone::Ball.is_safe(&f, &e, &u, Side::Below), "{u:?}");
            }
        }
    }
}
