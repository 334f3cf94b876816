//! Property tests of the text form: display then parse gives back the same value, and no
//! input makes either parser panic.

use fogline_profile::{DataProfile, GeoPoint, Interest, Predicate, Term};
use proptest::prelude::*;

fn attribute() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.:/,#+!üé東京-][a-zA-Z0-9_.:/,#+!@üé東京-]{0,7}"
}

/// Any text, biased towards the characters the grammar gives a meaning.
fn text(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::string::string_regex(&format!("(?s).{{0,{max}}}")).unwrap(),
        proptest::string::string_regex(&format!("[ab.,*?=~@\"\\\\ \t\n0-9ü京-]{{0,{max}}}"))
            .unwrap(),
    ]
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-1000i32..1000).prop_map(f64::from),
        -1e6..1e6f64,
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
    ]
}

fn point() -> impl Strategy<Value = GeoPoint> {
    let lat = prop_oneof![-90.0..=90.0f64, Just(90.0), Just(-90.0)];
    let lon = prop_oneof![-180.0..=180.0f64, Just(180.0), Just(-180.0)];
    (lat, lon).prop_map(|(lat, lon)| GeoPoint { lat, lon })
}

/// A wildcard pattern as the parser writes it: with `*` or `?`, not a bare prefix,
/// suffix or `*`.
fn wildcard() -> impl Strategy<Value = String> {
    let lit = text(1).prop_filter("non-empty", |s| !s.is_empty());
    let piece = prop_oneof![Just("*".to_string()), Just("?".to_string()), lit];
    proptest::collection::vec(piece, 1..6).prop_filter_map("canonical", |pieces| {
        let metas: Vec<usize> = (0..pieces.len())
            .filter(|&i| pieces[i] == "*" || pieces[i] == "?")
            .collect();
        let shape = metas.len() == 1 && pieces[metas[0]] == "*";
        let at_end = metas.first() == Some(&(pieces.len() - 1)) || metas == [0];
        if metas.is_empty() || (shape && at_end) {
            return None;
        }
        let mut pattern = String::new();
        for (i, p) in pieces.iter().enumerate() {
            if metas.contains(&i) {
                pattern.push_str(p);
                continue;
            }
            for c in p.chars() {
                if matches!(c, '*' | '?' | '\\') {
                    pattern.push('\\');
                }
                pattern.push(c);
            }
        }
        Some(pattern)
    })
}

fn predicate() -> impl Strategy<Value = Predicate> {
    let bound = || proptest::option::of(number());
    prop_oneof![
        Just(Predicate::Present),
        text(10).prop_map(Predicate::Exact),
        text(10)
            .prop_filter("non-empty", |s| !s.is_empty())
            .prop_map(Predicate::Prefix),
        text(10)
            .prop_filter("non-empty", |s| !s.is_empty())
            .prop_map(Predicate::Suffix),
        wildcard().prop_map(Predicate::Wildcard),
        (bound(), bound()).prop_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => Predicate::Range {
                low: Some(a.min(b)),
                high: Some(a.max(b)),
            },
            (low, high) => Predicate::Range { low, high },
        }),
        (point(), point()).prop_map(|(a, b)| Predicate::GeoBox {
            south_west: GeoPoint {
                lat: a.lat.min(b.lat),
                lon: a.lon
            },
            north_east: GeoPoint {
                lat: a.lat.max(b.lat),
                lon: b.lon
            },
        }),
        (
            point(),
            prop_oneof![1e-3..2.1e7f64, (1u32..50).prop_map(|k| f64::from(k) * 1e3)]
        )
            .prop_map(|(center, radius_m)| Predicate::Near { center, radius_m }),
    ]
}

fn topic() -> impl Strategy<Value = Option<String>> {
    let level = prop_oneof![Just("+".to_string()), "[a-z ü\"\\\\]{1,3}"];
    let filter = (proptest::collection::vec(level, 1..4), any::<bool>()).prop_map(|(l, hash)| {
        let mut f = l.join("/");
        if hash {
            f.push_str("/#");
        }
        f
    });
    proptest::option::of(filter)
}

fn interest() -> impl Strategy<Value = Interest> {
    let term = (attribute(), predicate()).prop_map(|(attribute, predicate)| Term {
        attribute,
        predicate,
    });
    (proptest::collection::vec(term, 0..6), topic())
        .prop_map(|(terms, topic)| Interest { terms, topic })
}

fn profile() -> impl Strategy<Value = DataProfile> {
    let pair = (attribute(), proptest::option::of(text(12)));
    proptest::collection::vec(pair, 0..8)
        .prop_map(|pairs| DataProfile::from_pairs(pairs).expect("valid attributes"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn profiles_round_trip(p in profile()) {
        let text = p.to_string();
        prop_assert_eq!(DataProfile::parse(&text), Ok(p), "{}", text);
    }

    #[test]
    fn interests_round_trip(i in interest()) {
        let text = i.to_string();
        prop_assert_eq!(Interest::parse(&text), Ok(i), "{}", text);
    }

    #[test]
    fn nothing_panics(s in text(40), t in text(12)) {
        // Whatever parses reads back the same from its display.
        if let Ok(p) = DataProfile::parse(&s) {
            prop_assert_eq!(DataProfile::parse(&p.to_string()), Ok(p.clone()));
            if let Ok(i) = Interest::parse(&s) {
                prop_assert_eq!(Interest::parse(&i.to_string()), Ok(i.clone()));
                let _ = i.matches(&p, &t);
            }
        }
        if let Ok(i) = Interest::parse(&s) {
            prop_assert_eq!(Interest::parse(&i.to_string()), Ok(i.clone()));
            for term in &i.terms {
                let _ = term.predicate.holds(Some(&t));
            }
        }
    }
}
