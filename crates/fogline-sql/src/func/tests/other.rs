//! The other, array and object families.

use super::{b, fl, i, run, s, scalar, Value, Want::*, NULL};
use crate::value::Row;

fn arr(v: Vec<Value>) -> Value {
    Value::Array(v)
}

fn obj(pairs: &[(&str, Value)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect::<Row>(),
    )
}

#[test]
fn other_table() {
    run(vec![
        ("isnull", vec![NULL], Is(b(true))),
        ("isnull", vec![i(0)], Is(b(false))),
        ("coalesce", vec![NULL, NULL, i(3), i(4)], Is(i(3))),
        ("coalesce", vec![NULL], Is(NULL)),
    ]);
}

#[test]
fn newuuid_is_a_random_version_4_uuid() {
    let call = scalar("newuuid").unwrap().call;
    let (Ok(Value::Str(a)), Ok(Value::Str(b))) = (call(&[]), call(&[])) else {
        panic!("not strings")
    };
    assert_ne!(a, b);
    let groups: Vec<usize> = a.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
    assert!(a
        .chars()
        .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_uppercase()));
    assert_eq!(&a[14..15], "4", "{a}");
    assert!("89ab".contains(&a[19..20]), "{a}");
}

#[test]
fn array_table() {
    let a123 = || arr(vec![i(1), i(2), i(3)]);
    run(vec![
        ("cardinality", vec![a123()], Is(i(3))),
        ("cardinality", vec![NULL], Is(i(0))),
        ("array_cardinality", vec![arr(vec![i(1), NULL])], Is(i(1))),
        ("array_position", vec![a123(), i(2)], Is(i(1))),
        ("array_position", vec![a123(), fl(2.0)], Is(i(-1))),
        ("array_position", vec![NULL, i(2)], Is(i(-1))),
        (
            "array_last_position",
            vec![arr(vec![i(1), i(2), i(1)]), i(1)],
            Is(i(2)),
        ),
        (
            "array_position",
            vec![s("x"), i(1)],
            Fails("expected an array, found string"),
        ),
        ("element_at", vec![a123(), i(0)], Is(i(1))),
        ("element_at", vec![a123(), i(-1)], Is(i(3))),
        ("element_at", vec![a123(), i(3)], Fails("index 3 outside")),
        ("element_at", vec![obj(&[("a", i(1))]), s("a")], Is(i(1))),
        ("element_at", vec![NULL, i(0)], Is(NULL)),
        ("array_contains", vec![a123(), i(3)], Is(b(true))),
        ("array_contains", vec![a123(), i(4)], Is(b(false))),
        ("array_contains", vec![NULL, i(4)], Is(NULL)),
        (
            "array_create",
            vec![i(1), NULL, s("a")],
            Is(arr(vec![i(1), s("a")])),
        ),
        ("array_create", vec![], Is(NULL)),
        (
            "array_remove",
            vec![arr(vec![i(1), i(2), i(1)]), i(1)],
            Is(arr(vec![i(2)])),
        ),
        (
            "array_contains_any",
            vec![a123(), arr(vec![i(9), i(3)])],
            Is(b(true)),
        ),
        ("array_contains_any", vec![NULL, a123()], Is(b(false))),
        (
            "array_intersect",
            vec![arr(vec![i(1), i(2), i(2)]), arr(vec![i(2), i(2), i(1)])],
            Is(arr(vec![i(2), i(1)])),
        ),
        (
            "array_union",
            vec![arr(vec![i(1), i(1)]), arr(vec![i(2), i(1)])],
            Is(arr(vec![i(1), i(2)])),
        ),
        (
            "array_union",
            vec![NULL, arr(vec![i(2)])],
            Is(arr(vec![i(2)])),
        ),
        (
            "array_except",
            vec![arr(vec![i(1), i(2), i(2), i(3)]), arr(vec![i(3)])],
            Is(arr(vec![i(1), i(2)])),
        ),
        (
            "array_max",
            vec![arr(vec![i(1), NULL, i(5), i(2)])],
            Is(i(5)),
        ),
        ("array_min", vec![arr(vec![fl(1.5), i(1), i(2)])], Is(i(1))),
        (
            "array_max",
            vec![arr(vec![s("a"), s("c"), s("b")])],
            Is(s("c")),
        ),
        (
            "array_max",
            vec![arr(vec![i(1), s("c")])],
            Fails("different types"),
        ),
        ("array_max", vec![arr(vec![])], Is(NULL)),
        ("repeat", vec![s("x"), i(2)], Is(arr(vec![s("x"), s("x")]))),
        ("repeat", vec![s("x"), i(-1)], Fails("length must be")),
        ("sequence", vec![i(1), i(3)], Is(a123())),
        (
            "sequence",
            vec![i(3), i(1)],
            Is(arr(vec![i(3), i(2), i(1)])),
        ),
        (
            "sequence",
            vec![i(1), i(6), i(2)],
            Is(arr(vec![i(1), i(3), i(5)])),
        ),
        ("sequence", vec![i(1), i(6), i(-2)], Is(arr(vec![]))),
        (
            "sequence",
            vec![i(1), i(2), i(0)],
            Fails("must not be zero"),
        ),
        (
            "array_flatten",
            vec![arr(vec![arr(vec![i(1), i(4)]), arr(vec![i(2), i(3)])])],
            Is(arr(vec![i(1), i(4), i(2), i(3)])),
        ),
        (
            "array_distinct",
            vec![arr(vec![i(1), i(1), fl(1.0), NULL, NULL])],
            Is(arr(vec![i(1), fl(1.0), NULL])),
        ),
        (
            "array_map",
            vec![s("upper"), arr(vec![s("a"), s("b")])],
            Is(arr(vec![s("A"), s("B")])),
        ),
        (
            "array_map",
            vec![s("concat"), arr(vec![s("a")])],
            Is(arr(vec![s("a")])),
        ),
        (
            "array_map",
            vec![s("pi"), arr(vec![i(1)])],
            Fails("not a one-argument scalar function"),
        ),
        (
            "array_map",
            vec![s("abs"), arr(vec![s("x")])],
            Fails("function abs: expected a number"),
        ),
        ("array_join", vec![a123(), s(",")], Is(s("1,2,3"))),
        (
            "array_join",
            vec![arr(vec![s("a"), NULL, s("b")]), s("-"), s("?")],
            Is(s("a-?-b")),
        ),
        (
            "array_join",
            vec![arr(vec![s("a"), NULL, s("b")]), s("-")],
            Is(s("a-b")),
        ),
        (
            "array_concat",
            vec![arr(vec![i(1)]), NULL, arr(vec![i(2)])],
            Is(arr(vec![i(1), i(2)])),
        ),
        ("array_concat", vec![i(1)], Fails("expected an array")),
        // The docs' example: [3, 2, "b", "a"] sorts to [2, 3, "a", "b"].
        (
            "array_sort",
            vec![arr(vec![i(3), i(2), s("b"), s("a")])],
            Is(arr(vec![i(2), i(3), s("a"), s("b")])),
        ),
        (
            "array_sort",
            vec![arr(vec![i(10), fl(9.5), NULL, b(true)])],
            Is(arr(vec![NULL, b(true), fl(9.5), i(10)])),
        ),
        // The docs' example.
        (
            "kvpair_array_to_obj",
            vec![arr(vec![
                obj(&[("key", s("key1")), ("value", i(1))]),
                obj(&[("key", s("key2")), ("value", i(2))]),
            ])],
            Is(obj(&[("key1", i(1)), ("key2", i(2))])),
        ),
        (
            "kvpair_array_to_obj",
            vec![arr(vec![i(1)])],
            Fails("expected {\"key\", \"value\"} members"),
        ),
    ]);
}

#[test]
fn array_shuffle_keeps_the_members() {
    let call = scalar("array_shuffle").unwrap().call;
    let items: Vec<Value> = (0..50).map(i).collect();
    let Ok(Value::Array(mut out)) = call(&[arr(items.clone())]) else {
        panic!("not an array")
    };
    assert_ne!(out, items, "50 members came back in order");
    out.sort_by_key(|v| match v {
        Value::Int(n) => *n,
        _ => -1,
    });
    assert_eq!(out, items);
}

#[test]
fn object_table() {
    let ab = || obj(&[("a", i(1)), ("b", i(2))]);
    // The docs' examples.
    run(vec![
        ("keys", vec![ab()], Is(arr(vec![s("a"), s("b")]))),
        ("values", vec![ab()], Is(arr(vec![i(1), i(2)]))),
        (
            "object",
            vec![arr(vec![s("a"), s("b")]), arr(vec![i(1), i(2)])],
            Is(ab()),
        ),
        (
            "object",
            vec![arr(vec![s("a")]), arr(vec![])],
            Fails("differ in length"),
        ),
        (
            "zip",
            vec![arr(vec![arr(vec![s("a"), i(1)]), arr(vec![s("b"), i(2)])])],
            Is(ab()),
        ),
        (
            "items",
            vec![ab()],
            Is(arr(vec![arr(vec![s("a"), i(1)]), arr(vec![s("b"), i(2)])])),
        ),
        (
            "object_construct",
            vec![s("a"), i(1), s("b"), i(2), s("c"), NULL],
            Is(ab()),
        ),
        ("object_construct", vec![s("a")], Fails("pairs")),
        (
            "object_concat",
            vec![
                obj(&[("a", i(1))]),
                obj(&[("b", i(2))]),
                obj(&[("b", i(3))]),
            ],
            Is(obj(&[("a", i(1)), ("b", i(3))])),
        ),
        (
            "erase",
            vec![
                obj(&[("baz", i(1)), ("bar", s("hello world")), ("foo", s("emq"))]),
                s("foo"),
            ],
            Is(obj(&[("baz", i(1)), ("bar", s("hello world"))])),
        ),
        ("erase", vec![ab(), arr(vec![s("a"), s("b")])], Is(obj(&[]))),
        (
            "object_pick",
            vec![obj(&[("baz", i(1)), ("foo", s("emq"))]), s("foo")],
            Is(obj(&[("foo", s("emq"))])),
        ),
        (
            "object_pick",
            vec![obj(&[("a", ab()), ("c", i(3))]), s("a.b"), s("c")],
            Is(obj(&[("a", obj(&[("b", i(2))])), ("c", i(3))])),
        ),
        (
            "obj_to_kvpair_array",
            vec![obj(&[("key1", i(1))])],
            Is(arr(vec![obj(&[("key", s("key1")), ("value", i(1))])])),
        ),
        ("object_size", vec![ab()], Is(i(2))),
        ("object_size", vec![NULL], Is(i(0))),
        ("keys", vec![i(1)], Fails("expected a struct, found bigint")),
        ("keys", vec![NULL], Is(NULL)),
    ]);
}
