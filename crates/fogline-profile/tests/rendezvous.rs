//! notify_interest against a brute-force model: after every operation, a producer is
//! "interested" iff some registered interest matches it, and the notices are exactly the
//! changes of that, for the producers that stayed.

use std::collections::{BTreeMap, BTreeSet};

use fogline_profile::rendezvous::{Notice, Rendezvous};
use fogline_profile::{DataProfile, Interest, InterestIndex};
use proptest::prelude::*;

/// The rendezvous with an index for its producers' matches, as the broker pairs them.
#[derive(Default)]
struct Point {
    r: Rendezvous,
    index: InterestIndex,
}

impl Point {
    fn add_producer(&mut self, id: u64, p: DataProfile, topic: &str) -> bool {
        let mut matched = Vec::new();
        self.index.matches(&p, topic, &mut matched);
        self.r.add_producer(id, p, topic, matched)
    }

    fn add_interest(&mut self, id: u64, i: Interest) -> Vec<Notice> {
        self.index.insert(id, &i);
        self.r.add_interest(id, |p, t| i.matches(p, t))
    }

    fn remove_interest(&mut self, id: u64) -> Vec<Notice> {
        self.index.remove(id);
        self.r.remove_interest(id)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Producer(u64, String, &'static str),
    DropProducer(u64),
    Interest(u64, String),
    DropInterest(u64),
}

fn profile() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a=x", "a=y", "b=1", "b=2", "c", "g=40.05,-74.4"]),
        0..4,
    )
    .prop_map(|v| v.join(" "))
}

fn interest() -> impl Strategy<Value = String> {
    // Distinct terms: an interest has at most one topic filter.
    prop::sample::subsequence(
        vec![
            "a=x",
            "a=*",
            "b=1..1.5",
            "b=2..",
            "c",
            "a=?",
            "g~40.05,-74.40,1km",
            "@s/#",
        ],
        0..3,
    )
    .prop_map(|v| v.join(" "))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..5, profile(), prop::sample::select(vec!["s/1", "t"]))
            .prop_map(|(i, p, t)| Op::Producer(i, p, t)),
        (0u64..5).prop_map(Op::DropProducer),
        (0u64..6, interest()).prop_map(|(i, s)| Op::Interest(i, s)),
        (0u64..6).prop_map(Op::DropInterest),
    ]
}

fn wanted(
    producers: &BTreeMap<u64, (DataProfile, &str)>,
    interests: &BTreeMap<u64, Interest>,
) -> BTreeSet<u64> {
    producers
        .iter()
        .filter(|(_, (p, t))| interests.values().any(|i| i.matches(p, t)))
        .map(|(id, _)| *id)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn notices_are_the_changes_of_interest(ops in prop::collection::vec(op(), 1..40)) {
        let mut r = Point::default();
        let mut producers = BTreeMap::new();
        let mut interests = BTreeMap::new();
        for op in ops {
            let before = wanted(&producers, &interests);
            // The producer an operation touches: its own state may change without a notice.
            let (notices, touched) = match op {
                Op::Producer(id, text, topic) => {
                    let p = DataProfile::parse(&text).unwrap();
                    let now = r.add_producer(id, p.clone(), topic);
                    producers.insert(id, (p, topic));
                    prop_assert_eq!(now, wanted(&producers, &interests).contains(&id));
                    (Vec::new(), Some(id))
                }
                Op::DropProducer(id) => {
                    prop_assert_eq!(r.r.remove_producer(id), producers.remove(&id).is_some());
                    (Vec::new(), Some(id))
                }
                Op::Interest(id, text) => {
                    let i = Interest::parse(&text).unwrap();
                    let n = r.add_interest(id, i.clone());
                    interests.insert(id, i);
                    (n, None)
                }
                Op::DropInterest(id) => {
                    let n = r.remove_interest(id);
                    interests.remove(&id);
                    (n, None)
                }
            };
            let after = wanted(&producers, &interests);
            for id in producers.keys() {
                prop_assert_eq!(r.r.interested(*id), after.contains(id));
            }
            let mut want: Vec<Notice> = Vec::new();
            for id in producers.keys().filter(|id| Some(**id) != touched) {
                match (before.contains(id), after.contains(id)) {
                    (false, true) => want.push(Notice::Start(*id)),
                    (true, false) => want.push(Notice::Stop(*id)),
                    _ => {}
                }
            }
            let mut got = notices;
            got.sort();
            want.sort();
            prop_assert_eq!(got, want);
            prop_assert_eq!(r.r.interest_count(), interests.len());
            prop_assert_eq!(r.r.producer_count(), producers.len());
        }
    }
}

#[test]
fn a_producer_starts_with_the_first_interest_and_stops_with_the_last() {
    let mut r = Point::default();
    let lidar = DataProfile::parse("type=drone sensor=lidar lat=40.05").unwrap();
    assert!(!r.add_producer(1, lidar, "site/nj/lidar"));
    assert_eq!(r.r.waiting(), [1]);
    let i = |s: &str| Interest::parse(s).unwrap();
    assert_eq!(r.add_interest(10, i("sensor=Li* lat=40..41")), []);
    assert_eq!(
        r.add_interest(11, i("sensor=li* lat=40..41")),
        [Notice::Start(1)]
    );
    assert_eq!(r.add_interest(12, i("type=drone @site/#")), []);
    assert!(r.r.interested(1));
    assert_eq!(r.remove_interest(11), []);
    // Replacing the last interest by one that still matches: no notice.
    assert_eq!(r.add_interest(12, i("type=drone")), []);
    assert_eq!(r.remove_interest(12), [Notice::Stop(1)]);
    assert!(!r.r.interested(1));
    assert!(r.r.remove_producer(1));
    assert_eq!(r.add_interest(13, i("type")), []);
}
