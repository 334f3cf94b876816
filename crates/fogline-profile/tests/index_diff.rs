//! The index against a scan with the crate's reference semantics (`Interest::matches`), on
//! random interests and profiles.

use fogline_profile::{DataProfile, GeoPoint, Interest, InterestIndex, Predicate, Term};
use proptest::prelude::*;

fn text(alphabet: Vec<char>, max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet), 0..max).prop_map(String::from_iter)
}

fn keyword() -> impl Strategy<Value = String> {
    text(vec!['a', 'b', 'é', '日'], 3)
}

fn lat() -> impl Strategy<Value = f64> {
    prop_oneof![
        -90.0..=90.0,
        84.0..=90.0,
        -90.0..=-84.0,
        Just(90.0),
        Just(-90.0),
        -1.0..1.0
    ]
}

fn lon() -> impl Strategy<Value = f64> {
    prop_oneof![
        -180.0..=180.0,
        174.0..=180.0,
        -180.0..=-174.0,
        Just(180.0),
        Just(-180.0)
    ]
}

fn point() -> impl Strategy<Value = GeoPoint> {
    (lat(), lon()).prop_map(|(lat, lon)| GeoPoint { lat, lon })
}

fn bound() -> impl Strategy<Value = Option<f64>> {
    prop::option::of(prop_oneof![(-5i32..5).prop_map(f64::from), -5.0..5.0])
}

fn predicate() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        Just(Predicate::Present),
        keyword().prop_map(Predicate::Exact),
        keyword().prop_map(Predicate::Prefix),
        keyword().prop_map(Predicate::Suffix),
        text(vec!['a', 'b', 'é', '*', '?'], 5).prop_map(Predicate::Wildcard),
        (bound(), bound()).prop_map(|(low, high)| Predicate::Range { low, high }),
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
        (point(), prop_oneof![0.0..2e4, 0.0..2e6, 0.0..2.1e7])
            .prop_map(|(center, radius_m)| { Predicate::Near { center, radius_m } }),
    ]
}

fn attribute() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "ü"]).prop_map(String::from)
}

fn interest() -> impl Strategy<Value = Interest> {
    let term = (attribute(), predicate()).prop_map(|(attribute, predicate)| Term {
        attribute,
        predicate,
    });
    let topic = prop::option::of(prop::sample::select(vec!["s/#", "s/+", "t", "#"]));
    (prop::collection::vec(term, 0..4), topic).prop_map(|(terms, topic)| Interest {
        terms,
        topic: topic.map(String::from),
    })
}

fn value() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        keyword(),
        (-5i32..5).prop_map(|x| x.to_string()),
        (-5.0f64..5.0).prop_map(|x| x.to_string()),
        prop::sample::select(vec!["NaN", "inf", "-inf", "91,0", "x,1", "1e0"])
            .prop_map(String::from),
        point().prop_map(|p| format!("{},{}", p.lat, p.lon)),
        point().prop_map(|p| format!("{},{}", p.lat, p.lon)),
    ])
}

fn profile() -> impl Strategy<Value = DataProfile> {
    prop::collection::vec((attribute(), value()), 0..5).prop_map(|pairs| DataProfile { pairs })
}

fn topic() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["s/x", "s/y/z", "t", "u"])
}

/// Compares the index with a scan over `live` (id, interest) for every profile.
fn check(index: &InterestIndex, live: &[(u64, Interest)], profiles: &[(DataProfile, &str)]) {
    assert_eq!(index.len(), live.len());
    let mut got = Vec::new();
    for (p, t) in profiles {
        index.matches(p, t, &mut got);
        let mut want: Vec<u64> = live
            .iter()
            .filter(|(_, i)| i.matches(p, t))
            .map(|(id, _)| *id)
            .collect();
        want.sort_unstable();
        assert_eq!(got, want, "profile {p:?} topic {t}");
        assert_eq!(index.any_match(p, t), !want.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn index_equals_scan(
        interests in prop::collection::vec(interest(), 0..40),
        profiles in prop::collection::vec((profile(), topic()), 1..10),
        drop in prop::collection::vec(any::<bool>(), 40),
        again in prop::collection::vec(interest(), 0..20),
    ) {
        let mut index = InterestIndex::new();
        let mut live: Vec<(u64, Interest)> = Vec::new();
        for (i, it) in interests.iter().enumerate() {
            // Ids out of insertion order, to check the sort.
            let id = (i as u64 * 7919) % 1000;
            index.insert(id, it);
            live.retain(|(x, _)| *x != id);
            live.push((id, it.clone()));
        }
        check(&index, &live, &profiles);
        for (k, (id, _)) in live.clone().iter().enumerate() {
            if drop[k] {
                prop_assert!(index.remove(*id));
                prop_assert!(!index.remove(*id));
                live.retain(|(x, _)| x != id);
            }
        }
        check(&index, &live, &profiles);
        // Re-insert: some replace a live id, some fill freed slots.
        for (k, it) in again.iter().enumerate() {
            let id = if k % 2 == 0 { (k as u64 * 7919) % 1000 } else { 5000 + k as u64 };
            index.insert(id, it);
            live.retain(|(x, _)| *x != id);
            live.push((id, it.clone()));
        }
        check(&index, &live, &profiles);
        for (id, _) in live.clone() {
            index.remove(id);
        }
        prop_assert!(index.is_empty());
        check(&index, &[], &profiles);
    }
}

/// A point within a few degrees of the antimeridian, a pole or a plain spot.
fn near_anchor() -> impl Strategy<Value = GeoPoint> {
    let anchors = vec![
        (0.0, 180.0),
        (0.0, -180.0),
        (89.5, 0.0),
        (-89.5, 90.0),
        (45.0, 10.0),
    ];
    (prop::sample::select(anchors), -3.0..3.0f64, -3.0..3.0f64).prop_map(|((a, o), dl, dn)| {
        let lon = o + dn;
        let lon = if lon > 180.0 {
            lon - 360.0
        } else if lon < -180.0 {
            lon + 360.0
        } else {
            lon
        };
        GeoPoint {
            lat: (a + dl).clamp(-90.0, 90.0),
            lon,
        }
    })
}

fn geo_interest() -> impl Strategy<Value = Interest> {
    let pred = prop_oneof![
        (near_anchor(), near_anchor()).prop_map(|(a, b)| Predicate::GeoBox {
            south_west: GeoPoint {
                lat: a.lat.min(b.lat),
                lon: a.lon
            },
            north_east: GeoPoint {
                lat: a.lat.max(b.lat),
                lon: b.lon
            },
        }),
        (near_anchor(), 0.0..5e5)
            .prop_map(|(center, radius_m)| Predicate::Near { center, radius_m }),
    ];
    prop::collection::vec(pred, 1..3).prop_map(|ps| Interest {
        terms: ps
            .into_iter()
            .map(|predicate| Term {
                attribute: "g".into(),
                predicate,
            })
            .collect(),
        topic: None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn geo_index_equals_scan(
        interests in prop::collection::vec(geo_interest(), 1..40),
        points in prop::collection::vec(near_anchor(), 1..20),
    ) {
        let mut index = InterestIndex::new();
        let live: Vec<(u64, Interest)> = interests.into_iter().enumerate().map(|(i, it)| (i as u64, it)).collect();
        for (id, it) in &live {
            index.insert(*id, it);
        }
        let profiles: Vec<(DataProfile, &str)> = points
            .iter()
            .map(|p| (DataProfile { pairs: vec![("g".into(), Some(format!("{},{}", p.lat, p.lon)))] }, "t"))
            .collect();
        check(&index, &live, &profiles);
    }
}

#[test]
fn index_is_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<InterestIndex>();
}

#[test]
fn examples() {
    let term = |a: &str, p| Term {
        attribute: a.into(),
        predicate: p,
    };
    let pt = |lat, lon| GeoPoint { lat, lon };
    let mut ix = InterestIndex::new();
    ix.insert(
        1,
        &Interest {
            terms: vec![
                term("type", Predicate::Exact("drone".into())),
                term("sensor", Predicate::Prefix("Li".into())),
                term(
                    "lat",
                    Predicate::Range {
                        low: Some(40.0),
                        high: Some(41.0),
                    },
                ),
            ],
            topic: None,
        },
    );
    ix.insert(
        2,
        &Interest {
            terms: vec![term(
                "at",
                Predicate::GeoBox {
                    south_west: pt(-10.0, 170.0),
                    north_east: pt(10.0, -170.0),
                },
            )],
            topic: Some("geo/#".into()),
        },
    );
    ix.insert(
        3,
        &Interest {
            terms: vec![term(
                "at",
                Predicate::Near {
                    center: pt(89.99, 0.0),
                    radius_m: 5_000.0,
                },
            )],
            topic: None,
        },
    );
    let p = |s: &[(&str, &str)]| DataProfile {
        pairs: s
            .iter()
            .map(|(a, v)| (a.to_string(), Some(v.to_string())))
            .collect(),
    };
    let mut out = Vec::new();
    ix.matches(
        &p(&[("type", "drone"), ("sensor", "Lidar"), ("lat", "40.05")]),
        "x",
        &mut out,
    );
    assert_eq!(out, [1]);
    ix.matches(&p(&[("at", "0,179.5")]), "geo/a", &mut out);
    assert_eq!(out, [2]);
    ix.matches(&p(&[("at", "0,179.5")]), "other", &mut out);
    assert!(out.is_empty());
    ix.matches(&p(&[("at", "89.99,179")]), "x", &mut out);
    assert_eq!(out, [3]);
    assert!(ix.heap_bytes() > 0);
}
