//! `filter_matches` against an independent recursive model of MQTT
//! matching, over small random topics and valid filters.

use fogline_wire::{filter_matches, validate_filter, validate_topic};
use proptest::prelude::*;

/// Reference: levels matched recursively, `$` rule applied up front.
fn model(filter: &[&str], topic: &[&str], first: bool) -> bool {
    if first && topic.first().is_some_and(|l| l.starts_with('$')) {
        if let Some(&("+" | "#")) = filter.first() {
            return false;
        }
    }
    match (filter.split_first(), topic.split_first()) {
        (Some((&"#", _)), _) => true,
        (Some((&"+", fr)), Some((_, tr))) => model(fr, tr, false),
        (Some((f, fr)), Some((t, tr))) => f == t && model(fr, tr, false),
        (None, None) => true,
        _ => false,
    }
}

fn topic() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![Just("a"), Just("b"), Just(""), Just("$s"), Just("ab")],
        1..5,
    )
    .prop_map(|l| l.join("/"))
}

fn filter() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            prop_oneof![Just("a"), Just("b"), Just(""), Just("+"), Just("$s")],
            0..4,
        ),
        any::<bool>(),
    )
        .prop_map(|(mut levels, hash)| {
            if hash || levels.is_empty() {
                levels.push("#");
            }
            levels.join("/")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]
    #[test]
    fn matches_the_model(f in filter(), t in topic()) {
        prop_assume!(validate_filter(&f).is_ok());
        prop_assume!(validate_topic(&t).is_ok());
        let fl: Vec<&str> = f.split('/').collect();
        let tl: Vec<&str> = t.split('/').collect();
        prop_assert_eq!(filter_matches(&f, &t), model(&fl, &tl, true), "{} vs {}", f, t);
    }
}
