//! No function panics, whatever values it is given within its argument counts.

use proptest::prelude::*;

use super::{all, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-300i64..300).prop_map(Value::Int),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(-1), Just(0)].prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-0.0), Just(1e300)]
            .prop_map(Value::Float),
        prop_oneof![
            Just(""),
            Just("a,b,,c"),
            Just("héllo wörld"),
            Just("base64"),
            Just("zlib"),
            Just("gzip"),
            Just("bigint"),
            Just("datetime"),
            Just("yyyy-MM-dd HH:mm:ssSSS XXX 'q' \\"),
            Just("2024-02-29T23:59:59.999+01:00"),
            Just("(a|b)+$"),
            Just("[unclosed"),
            Just("0x7fffffffffffffff"),
            Just("-1h30m"),
            Just("{\"a\":[1,2.5,null]}"),
            Just("upper"),
            Just("a.b"),
        ]
        .prop_map(|s| Value::Str(s.to_owned())),
        "\\PC{0,8}".prop_map(Value::Str),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(|b| Value::Bytes(b.into())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[ab]|key|value", inner, 0..3).prop_map(Value::Object),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn no_function_panics(pick in any::<prop::sample::Index>(), extra in 0usize..3, args in proptest::collection::vec(value(), 6)) {
        let f = pick.get(all());
        let n = f.min_args.saturating_add(extra).min(f.max_args);
        let _ = (f.call)(&args[..n]);
    }
}
