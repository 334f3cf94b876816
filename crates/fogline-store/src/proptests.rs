//! The index against a naive scan with the reference evaluator, [`Interest::matches`], over
//! random profiles, interests, time ranges, pages, deletes and retention. The pools lean on
//! the corners: open ranges, -0, the antimeridian, the poles, unicode, escapes, bare
//! attributes, repeated attributes, `$` topics.

use proptest::prelude::*;

use fogline_profile::{DataProfile, GeoPoint, Interest, Predicate, Term};

use crate::{Hit, ProfileIndex, Query};

const ATTRS: &[&str] = &["a", "n", "geo", "城"];
const VALUES: &[&str] = &[
    "lidar",
    "Lidar7",
    "radar",
    "",
    "Li*",
    "東京",
    "京都",
    "x y",
    "-0",
    "0",
    "1",
    "1.5",
    "2e1",
    "-3",
    "+5",
    "1e300",
    "0,179.99",
    "0,-179.99",
    "90,-135",
    "-90,0",
    "89.99,10",
    "0,180",
    "0,-180",
    "40.05,-74.4",
    "91,0",
    "10,10",
];
const TOPICS: &[&str] = &["site/a/lidar", "site/b/radar", "$sys/x", "other"];
const FILTERS: &[&str] = &["site/+/lidar", "site/#", "#", "+/a/+", "$sys/#", "other"];

fn value() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        6 => proptest::sample::select(VALUES).prop_map(|v| Some(v.to_string())),
        2 => "[aLbi*?\\\\d京0-9.,-]{0,5}".prop_map(Some),
    ]
}

fn profile() -> impl Strategy<Value = DataProfile> {
    proptest::collection::vec((proptest::sample::select(ATTRS), value()), 0..5).prop_map(|p| {
        DataProfile {
            pairs: p.into_iter().map(|(a, v)| (a.to_string(), v)).collect(),
        }
    })
}

fn num() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(proptest::sample::select(
        &[-5.0, -0.0, 0.0, 1.0, 1.5, 20.0, 1e300][..],
    ))
}

fn point() -> impl Strategy<Value = GeoPoint> {
    let lat = proptest::sample::select(&[-90.0, -10.0, 0.0, 10.0, 40.0, 80.0, 89.9, 90.0][..]);
    let lon = proptest::sample::select(&[-180.0, -179.99, -170.0, 0.0, 170.0, 179.99, 180.0][..]);
    (lat, lon).prop_map(|(lat, lon)| GeoPoint { lat, lon })
}

fn predicate() -> impl Strategy<Value = Predicate> {
    let s = |pool: &'static [&'static str]| proptest::sample::select(pool).prop_map(String::from);
    prop_oneof![
        Just(Predicate::Present),
        s(VALUES).prop_map(Predicate::Exact),
        s(&["Li", "li", "", "東", "1", "x ", "0,"]).prop_map(Predicate::Prefix),
        s(&["dar", "京", "", "7", "0", ",10"]).prop_map(Predicate::Suffix),
        s(&["?ida*", "*a*", "L*d?r", r"Li\*", "*", "??", "*京*", "1*", "*,1?"])
            .prop_map(Predicate::Wildcard),
        (num(), num()).prop_map(|(low, high)| Predicate::Range { low, high }),
        (point(), point()).prop_map(|(south_west, north_east)| Predicate::GeoBox {
            south_west,
            north_east
        }),
        (
            point(),
            proptest::sample::select(&[1.0, 3000.0, 20_000.0, 1e6, 2e7][..])
        )
            .prop_map(|(center, radius_m)| Predicate::Near { center, radius_m }),
    ]
}

fn interest() -> impl Strategy<Value = Interest> {
    let term = (proptest::sample::select(ATTRS), predicate()).prop_map(|(a, p)| Term {
        attribute: a.to_string(),
        predicate: p,
    });
    let topic = proptest::option::of(proptest::sample::select(FILTERS).prop_map(String::from));
    (proptest::collection::vec(term, 0..3), topic)
        .prop_map(|(terms, topic)| Interest { terms, topic })
}

fn query() -> impl Strategy<Value = Query> {
    let t = || proptest::option::of(0u64..40);
    let key = proptest::option::of(proptest::sample::select(ATTRS).prop_map(String::from));
    (interest(), t(), t(), key, 1usize..5, any::<bool>()).prop_map(
        |(interest, since_us, until_us, latest_by, limit, newest_first)| Query {
            interest,
            since_us,
            until_us,
            latest_by,
            limit,
            after: None,
            newest_first,
        },
    )
}

#[derive(Clone, Debug)]
enum Op {
    /// Offset step (0 = a repeated offset, refused), time step (may go back), topic, profile.
    Insert(u64, i8, usize, DataProfile),
    RemoveBefore(u64),
    Delete(Query),
    Query(Query),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u64..3, -1i8..3, 0..TOPICS.len(), profile())
            .prop_map(|(d, t, topic, p)| Op::Insert(d, t, topic, p)),
        1 => (0u64..60).prop_map(Op::RemoveBefore),
        1 => query().prop_map(Op::Delete),
        4 => query().prop_map(Op::Query),
    ]
}

/// The model: every record inserted and still held, as the index should see it.
#[derive(Default)]
struct Model {
    records: Vec<(Hit, &'static str, DataProfile)>,
    next: u64,
    time: u64,
}

impl Model {
    /// Held records that the interest and time range match, ascending.
    fn matching(&self, q: &Query) -> Vec<Hit> {
        self.records
            .iter()
            .filter(|(h, topic, p)| {
                q.since_us.is_none_or(|s| h.timestamp_us >= s)
                    && q.until_us.is_none_or(|u| h.timestamp_us <= u)
                    && q.interest.matches(p, topic)
            })
            .map(|(h, _, _)| *h)
            .collect()
    }

    /// Every hit the query should return over all its pages, in order.
    fn answer(&self, q: &Query) -> Vec<Hit> {
        let mut hits = self.matching(q);
        if let Some(key) = &q.latest_by {
            let mut seen = Vec::new();
            hits.reverse();
            hits.retain(|h| {
                let (_, _, p) = self.records.iter().find(|r| r.0 == *h).unwrap();
                match p.get(key) {
                    Some(v) if !seen.contains(&v) => {
                        seen.push(v);
                        true
                    }
                    _ => false,
                }
            });
            hits.reverse();
        }
        if q.newest_first {
            hits.reverse();
        }
        hits
    }
}

/// All pages of `q`, concatenated; checks that each page but the last says there is a next.
fn paged(index: &ProfileIndex, q: &Query) -> Vec<Hit> {
    let mut q = q.clone();
    let mut all = Vec::new();
    loop {
        let page = index.query(&q);
        assert!(page.hits.len() <= q.limit);
        all.extend(&page.hits);
        match page.next {
            None => return all,
            Some(next) => {
                assert_eq!(page.hits.len(), q.limit, "a short page with a next cursor");
                assert_eq!(Some(next), page.hits.last().map(|h| h.offset));
                q.after = Some(next);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_index_answers_as_the_reference_evaluator(ops in proptest::collection::vec(op(), 1..80)) {
        let mut index = ProfileIndex::new();
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Insert(step, dt, topic, profile) => {
                    let offset = (model.next + step).saturating_sub(1);
                    let time = model.time.saturating_add_signed(i64::from(dt));
                    // Both ways in: the profile, and a header block carrying it (where a
                    // repeated attribute takes its later value, as the text form's does).
                    let (ok, profile) = if offset % 2 == 0 {
                        (index.insert(offset, time, TOPICS[topic], &profile), profile)
                    } else {
                        let block = profile.to_headers().unwrap();
                        let ok = index.insert_block(offset, time, TOPICS[topic], &block);
                        (ok, DataProfile::from_header_block(&block))
                    };
                    prop_assert_eq!(ok, step > 0 || model.next == 0 && offset == 0);
                    if ok {
                        model.time = time.max(model.time);
                        model.next = offset + 1;
                        let hit = Hit { offset, timestamp_us: model.time };
                        model.records.push((hit, TOPICS[topic], profile));
                    }
                }
                Op::RemoveBefore(offset) => {
                    index.remove_before(offset);
                    model.records.retain(|(h, _, _)| h.offset >= offset);
                }
                Op::Delete(q) => {
                    let expect: Vec<u64> = model.matching(&q).iter().map(|h| h.offset).collect();
                    prop_assert_eq!(index.delete(&q), expect.clone());
                    model.records.retain(|(h, _, _)| !expect.contains(&h.offset));
                }
                Op::Query(q) => {
                    let expect = model.answer(&q);
                    prop_assert_eq!(&paged(&index, &q), &expect, "paged {:?}", q);
                    let one = index.query(&Query { limit: usize::MAX, ..q.clone() });
                    prop_assert_eq!(&one.hits, &expect);
                    prop_assert_eq!(one.next, None);
                }
            }
            prop_assert_eq!(index.len(), model.records.len());
            prop_assert_eq!(index.next_offset(), model.next);
        }
    }
}
