//! The evaluator against independent implementations: a DP wildcard matcher, Vincenty's
//! formula on the sphere, an unwrapped per-point test for boxes, and plain comparisons for ranges.

use fogline_profile::{box_contains, wildcard_matches, GeoPoint, Predicate, EARTH_RADIUS_M};
use proptest::prelude::*;

/// Brute force: `m[i][j]` = the first i pattern items match the first j characters.
fn dp_matches(pattern: &str, text: &str) -> bool {
    // Items: None = `*`, Some(None) = `?`, Some(Some(c)) = literal c.
    let mut items: Vec<Option<Option<char>>> = Vec::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        items.push(match c {
            '*' => None,
            '?' => Some(None),
            '\\' => Some(Some(chars.next().unwrap_or('\\'))),
            c => Some(Some(c)),
        });
    }
    let t: Vec<char> = text.chars().collect();
    let mut m = vec![vec![false; t.len() + 1]; items.len() + 1];
    m[0][0] = true;
    for i in 1..=items.len() {
        for j in 0..=t.len() {
            m[i][j] = match items[i - 1] {
                None => m[i - 1][j] || (j > 0 && m[i][j - 1]),
                Some(None) => j > 0 && m[i - 1][j - 1],
                Some(Some(c)) => j > 0 && t[j - 1] == c && m[i - 1][j - 1],
            };
        }
    }
    m[items.len()][t.len()]
}

/// Vincenty's great-circle formula (atan2 form), exact on a sphere at every distance.
fn vincenty_m(a: GeoPoint, b: GeoPoint) -> f64 {
    let (p1, p2) = (a.lat.to_radians(), b.lat.to_radians());
    let dl = (b.lon - a.lon).to_radians();
    let y = ((p2.cos() * dl.sin()).powi(2)
        + (p1.cos() * p2.sin() - p1.sin() * p2.cos() * dl.cos()).powi(2))
    .sqrt();
    let x = p1.sin() * p2.sin() + p1.cos() * p2.cos() * dl.cos();
    EARTH_RADIUS_M * y.atan2(x)
}

/// A box point by point: unwrap the east edge past 180 when the box crosses the antimeridian,
/// then try the point's longitude and its copies one turn either side.
fn naive_box(sw: GeoPoint, ne: GeoPoint, p: GeoPoint) -> bool {
    let lat_ok = sw.lat <= p.lat && p.lat <= ne.lat;
    let pole = p.lat == 90.0 || p.lat == -90.0;
    let east = if ne.lon < sw.lon {
        ne.lon + 360.0
    } else {
        ne.lon
    };
    let lon_ok = [p.lon - 360.0, p.lon, p.lon + 360.0]
        .iter()
        .any(|&l| sw.lon <= l && l <= east);
    lat_ok && (pole || lon_ok)
}

fn alphabet_text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[abü京]{{0,{max}}}")).unwrap()
}

fn alphabet_pattern() -> impl Strategy<Value = String> {
    proptest::string::string_regex("([abü京*?]|\\\\[*?\\\\a]){0,8}").unwrap()
}

/// Latitudes and longitudes biased to the poles, the antimeridian and round values.
fn lat() -> impl Strategy<Value = f64> {
    prop_oneof![
        -90.0..=90.0f64,
        80.0..=90.0f64,
        -90.0..=-80.0f64,
        prop_oneof![Just(90.0), Just(-90.0), Just(0.0), Just(89.5)],
    ]
}

fn lon() -> impl Strategy<Value = f64> {
    prop_oneof![
        -180.0..=180.0f64,
        170.0..=180.0f64,
        -180.0..=-170.0f64,
        prop_oneof![Just(180.0), Just(-180.0), Just(0.0), Just(179.5)],
    ]
}

fn point() -> impl Strategy<Value = GeoPoint> {
    (lat(), lon()).prop_map(|(lat, lon)| GeoPoint { lat, lon })
}

/// A second point a short way from `p` (possibly across the antimeridian or over a pole).
fn nearby() -> impl Strategy<Value = (GeoPoint, GeoPoint)> {
    (point(), -0.5..0.5f64, -0.5..0.5f64).prop_map(|(p, dlat, dlon)| {
        let lat = (p.lat + dlat).clamp(-90.0, 90.0);
        let mut lon = p.lon + dlon;
        if lon > 180.0 {
            lon -= 360.0;
        } else if lon < -180.0 {
            lon += 360.0;
        }
        (p, GeoPoint { lat, lon })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn wildcard_agrees_with_dp(p in alphabet_pattern(), t in alphabet_text(10)) {
        prop_assert_eq!(wildcard_matches(&p, &t), dp_matches(&p, &t), "{} vs {}", p, t);
        let w = Predicate::Wildcard(p.clone());
        prop_assert_eq!(w.holds(Some(&t)), dp_matches(&p, &t));
    }

    #[test]
    fn prefix_suffix_are_patterns(k in alphabet_text(3), t in alphabet_text(6)) {
        let prefix = Predicate::Prefix(k.clone()).holds(Some(&t));
        prop_assert_eq!(prefix, dp_matches(&format!("{k}*"), &t));
        let suffix = Predicate::Suffix(k.clone()).holds(Some(&t));
        prop_assert_eq!(suffix, dp_matches(&format!("*{k}"), &t));
        prop_assert_eq!(Predicate::Exact(k.clone()).holds(Some(&t)), dp_matches(&k, &t));
    }

    #[test]
    fn distance_agrees_with_vincenty(
        (a, b) in prop_oneof![nearby(), (point(), point())],
    ) {
        let (h, v) = (a.distance_m(b), vincenty_m(a, b));
        prop_assert!((h - v).abs() <= 1e-6 * v + 1e-6, "{:?} {:?}: {} vs {}", a, b, h, v);
    }

    #[test]
    fn near_agrees_with_vincenty((c, p) in nearby(), r in 1.0..80_000.0f64) {
        let v = vincenty_m(c, p);
        prop_assume!((v - r).abs() > 1e-6 * r);
        let near = Predicate::Near { center: c, radius_m: r };
        prop_assert_eq!(near.holds(Some(&format!("{},{}", p.lat, p.lon))), v <= r);
    }

    #[test]
    fn box_agrees_with_unwrapped(a in point(), b in point(), p in point()) {
        let sw = GeoPoint { lat: a.lat.min(b.lat), lon: a.lon };
        let ne = GeoPoint { lat: a.lat.max(b.lat), lon: b.lon };
        prop_assert_eq!(box_contains(sw, ne, p), naive_box(sw, ne, p));
        let pred = Predicate::GeoBox { south_west: sw, north_east: ne };
        prop_assert_eq!(pred.holds(Some(&format!("{},{}", p.lat, p.lon))), naive_box(sw, ne, p));
    }

    #[test]
    fn range_is_a_comparison(
        n in any::<f64>().prop_filter("finite", |v| v.is_finite()),
        low in proptest::option::of(-1e6..1e6f64),
        high in proptest::option::of(-1e6..1e6f64),
    ) {
        let range = Predicate::Range { low, high };
        let expected = low.is_none_or(|l| l <= n) && high.is_none_or(|h| n <= h);
        prop_assert_eq!(range.holds(Some(&n.to_string())), expected);
        prop_assert_eq!(range.holds(Some(&format!("{n:e}"))), expected);
    }
}
