//! The naive evaluator: the reference semantics any index must agree with.

use crate::lex::{parse_number, parse_point};
use crate::model::{DataProfile, GeoPoint, Interest, Predicate};

/// The mean earth radius (IUGG), metres: distances are great-circle on this sphere.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

impl Interest {
    /// Whether a record with `profile` on `topic` matches: the topic filter (when given)
    /// matches `topic` with MQTT semantics, and every term holds.
    pub fn matches(&self, profile: &DataProfile, topic: &str) -> bool {
        self.topic
            .as_deref()
            .is_none_or(|filter| fogline_wire::filter_matches(filter, topic))
            && self.terms.iter().all(|t| {
                profile
                    .get(&t.attribute)
                    .is_some_and(|value| t.predicate.holds(value))
            })
    }
}

impl Predicate {
    /// Whether the predicate holds for an attribute that is present with `value` (`None`:
    /// present without one, for which only [`Predicate::Present`] holds).
    pub fn holds(&self, value: Option<&str>) -> bool {
        let Some(v) = value else {
            return matches!(self, Predicate::Present);
        };
        match self {
            Predicate::Present => true,
            Predicate::Exact(s) => v == s,
            Predicate::Prefix(p) => v.starts_with(p.as_str()),
            Predicate::Suffix(s) => v.ends_with(s.as_str()),
            Predicate::Wildcard(pattern) => wildcard_matches(pattern, v),
            Predicate::Range { low, high } => parse_number(v).is_some_and(|n| {
                low.is_none_or(|low| low <= n) && high.is_none_or(|high| n <= high)
            }),
            Predicate::GeoBox {
                south_west,
                north_east,
            } => parse_point(v).is_some_and(|p| box_contains(*south_west, *north_east, p)),
            Predicate::Near { center, radius_m } => {
                parse_point(v).is_some_and(|p| center.distance_m(p) <= *radius_m)
            }
        }
    }
}

impl GeoPoint {
    /// Great-circle distance in metres on a sphere of [`EARTH_RADIUS_M`] (haversine, which
    /// stays accurate for short distances).
    pub fn distance_m(self, other: GeoPoint) -> f64 {
        let (p1, p2) = (self.lat.to_radians(), other.lat.to_radians());
        let dp = p2 - p1;
        let dl = (other.lon - self.lon).to_radians();
        let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
        2.0 * EARTH_RADIUS_M * h.clamp(0.0, 1.0).sqrt().asin()
    }
}

/// Whether `p` lies in the box from `sw` to `ne`. Longitudes wrap when `sw.lon > ne.lon`
/// (the box crosses the antimeridian); -180 and 180 are the same meridian; a pole (latitude
/// ±90) lies in every box reaching it, whatever the longitude written with it.
pub fn box_contains(sw: GeoPoint, ne: GeoPoint, p: GeoPoint) -> bool {
    if p.lat < sw.lat || p.lat > ne.lat {
        return false;
    }
    if p.lat.abs() == 90.0 {
        return true;
    }
    let inside = |lon: f64| {
        if sw.lon <= ne.lon {
            sw.lon <= lon && lon <= ne.lon
        } else {
            lon >= sw.lon || lon <= ne.lon
        }
    };
    inside(p.lon) || (p.lon == 180.0 && inside(-180.0)) || (p.lon == -180.0 && inside(180.0))
}

/// Whether `text` matches `pattern`: `*` any run of characters, `?` exactly one, `\x` the
/// character x; characters are Unicode scalar values. Iterative: O(pattern × text) at worst.
pub fn wildcard_matches(pattern: &str, text: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Star,
        One,
        Lit(char),
    }
    let mut pat = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        pat.push(match c {
            '*' => P::Star,
            '?' => P::One,
            '\\' => P::Lit(it.next().unwrap_or('\\')),
            c => P::Lit(c),
        });
    }
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // The last `*` seen and the text position it is currently made to cover up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pat.get(p) {
            Some(P::Star) => {
                star = Some((p, t));
                p += 1;
            }
            Some(P::One) => {
                p += 1;
                t += 1;
            }
            Some(P::Lit(c)) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // Let the last star swallow one more character and retry after it; earlier
                // stars never need to change, so this cannot blow up.
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    p = sp + 1;
                    t = st + 1;
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|x| *x == P::Star)
}
