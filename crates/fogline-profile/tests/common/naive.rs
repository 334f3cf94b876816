//! A naive evaluator written apart from the index, to test it against (and to time a scan).
#![allow(dead_code)]

use fogline_profile::{DataProfile, GeoPoint, Interest, Predicate};

fn number(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|x| !x.is_nan())
}

fn point(v: &str) -> Option<GeoPoint> {
    let mut it = v.splitn(2, ',');
    let lat: f64 = it.next()?.parse().ok()?;
    let lon: f64 = it.next()?.parse().ok()?;
    if lat.abs() <= 90.0 && lon.abs() <= 180.0 {
        Some(GeoPoint { lat, lon })
    } else {
        None
    }
}

fn glob(p: &[char], v: &[char]) -> bool {
    match p.split_first() {
        None => v.is_empty(),
        Some(('*', rest)) => (0..=v.len()).any(|k| glob(rest, &v[k..])),
        Some(('?', rest)) => !v.is_empty() && glob(rest, &v[1..]),
        Some((c, rest)) => v.first() == Some(c) && glob(rest, &v[1..]),
    }
}

fn haversine(a: GeoPoint, b: GeoPoint) -> f64 {
    let r = 6_371_008.8;
    let (la1, la2) = (a.lat.to_radians(), b.lat.to_radians());
    let s1 = ((la2 - la1) / 2.0).sin();
    let s2 = ((b.lon - a.lon).to_radians() / 2.0).sin();
    let h = s1 * s1 + la1.cos() * la2.cos() * s2 * s2;
    2.0 * r * h.sqrt().min(1.0).asin()
}

/// Whether `p` holds for an attribute's value (`None` = present without one).
pub fn holds(p: &Predicate, value: Option<&str>) -> bool {
    if matches!(p, Predicate::Present) {
        return true;
    }
    let Some(v) = value else { return false };
    match p {
        Predicate::Present => true,
        Predicate::Exact(k) => v == k,
        Predicate::Prefix(k) => v.starts_with(k.as_str()),
        Predicate::Suffix(k) => v.ends_with(k.as_str()),
        Predicate::Wildcard(k) => {
            let (pc, vc): (Vec<char>, Vec<char>) = (k.chars().collect(), v.chars().collect());
            glob(&pc, &vc)
        }
        Predicate::Range { low, high } => {
            number(v).is_some_and(|x| low.is_none_or(|l| x >= l) && high.is_none_or(|h| x <= h))
        }
        Predicate::GeoBox {
            south_west: sw,
            north_east: ne,
        } => point(v).is_some_and(|q| {
            let lat_ok = sw.lat <= q.lat && q.lat <= ne.lat;
            let lon_ok = if sw.lon > ne.lon {
                q.lon >= sw.lon || q.lon <= ne.lon
            } else {
                sw.lon <= q.lon && q.lon <= ne.lon
            };
            lat_ok && lon_ok
        }),
        Predicate::Near { center, radius_m } => {
            point(v).is_some_and(|q| haversine(*center, q) <= *radius_m)
        }
    }
}

/// Whether `interest` matches (topic checked with the wire crate's filter rules).
pub fn matches(interest: &Interest, profile: &DataProfile, topic: &str) -> bool {
    interest
        .topic
        .as_deref()
        .is_none_or(|f| fogline_wire::filter_matches(f, topic))
        && interest.terms.iter().all(|t| {
            profile
                .get(&t.attribute)
                .is_some_and(|v| holds(&t.predicate, v))
        })
}
