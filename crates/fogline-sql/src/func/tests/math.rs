//! The math family.

use super::{b, fl, i, run, s, Want::*, NULL};
use std::f64::consts::PI;

#[test]
fn math_table() {
    run(vec![
        ("abs", vec![i(-3)], Is(i(3))),
        ("abs", vec![fl(-2.5)], Is(fl(2.5))),
        ("abs", vec![NULL], Is(NULL)),
        (
            "abs",
            vec![s("x")],
            Fails("expected a number, found string"),
        ),
        ("abs", vec![i(i64::MIN)], Fails("overflow")),
        ("acos", vec![i(1)], Is(fl(0.0))),
        ("acos", vec![i(2)], Is(NULL)),
        ("asin", vec![fl(1.0)], About(PI / 2.0)),
        ("atan", vec![i(1)], About(PI / 4.0)),
        ("atan2", vec![i(1), i(1)], About(PI / 4.0)),
        ("atan2", vec![NULL, i(1)], Is(NULL)),
        ("bitand", vec![i(12), i(10)], Is(i(8))),
        ("bitor", vec![i(12), i(10)], Is(i(14))),
        ("bitxor", vec![i(12), i(10)], Is(i(6))),
        ("bitnot", vec![i(12)], Is(i(-13))),
        ("bitand", vec![fl(6.0), i(3)], Is(i(2))),
        (
            "bitand",
            vec![fl(1.5), i(1)],
            Fails("expected an integer, found float"),
        ),
        ("bitor", vec![i(1), NULL], Is(NULL)),
        ("ceil", vec![fl(1.2)], Is(fl(2.0))),
        ("ceiling", vec![fl(-1.2)], Is(fl(-1.0))),
        ("ceil", vec![i(3)], Is(fl(3.0))),
        ("floor", vec![fl(-1.2)], Is(fl(-2.0))),
        ("floor", vec![b(true)], Fails("found boolean")),
        ("cos", vec![i(0)], Is(fl(1.0))),
        ("cosh", vec![i(0)], Is(fl(1.0))),
        ("cot", vec![fl(PI / 4.0)], About(1.0)),
        ("cot", vec![i(0)], Fails("out of range")),
        ("degrees", vec![fl(PI)], About(180.0)),
        ("radians", vec![i(180)], About(PI)),
        ("exp", vec![i(0)], Is(fl(1.0))),
        ("ln", vec![fl(std::f64::consts::E)], About(1.0)),
        ("ln", vec![i(0)], Fails("expected a positive number")),
        ("log", vec![i(100)], Is(fl(2.0))),
        ("log", vec![i(2), i(8)], About(3.0)),
        ("log", vec![i(0)], Is(NULL)),
        ("log", vec![i(1), i(8)], Is(NULL)),
        ("mod", vec![i(7), i(3)], Is(fl(1.0))),
        ("mod", vec![fl(-7.5), i(2)], Is(fl(-1.5))),
        ("mod", vec![i(1), i(0)], Fails("division by zero")),
        ("pi", vec![], Is(fl(PI))),
        ("power", vec![i(2), i(10)], Is(fl(1024.0))),
        ("pow", vec![i(4), fl(0.5)], Is(fl(2.0))),
        ("pow", vec![s("4"), i(2)], Fails("found string")),
        // The docs' examples: round(42.4) -> 42, round(42.4382, 2) -> 42.44.
        ("round", vec![fl(42.4)], Is(fl(42.0))),
        ("round", vec![fl(42.4382), i(2)], Is(fl(42.44))),
        ("round", vec![fl(2.5)], Is(fl(3.0))),
        ("round", vec![fl(-2.5)], Is(fl(-3.0))),
        ("round", vec![i(1250), i(-2)], Is(fl(1300.0))),
        ("round", vec![fl(1.5), i(400)], Is(fl(1.5))),
        ("round", vec![i(1250), i(-400)], Is(fl(0.0))),
        ("round", vec![fl(1.5), NULL], Is(NULL)),
        ("sign", vec![fl(-0.1)], Is(i(-1))),
        ("sign", vec![i(0)], Is(i(0))),
        ("sign", vec![i(9)], Is(i(1))),
        ("sin", vec![i(0)], Is(fl(0.0))),
        ("sinh", vec![i(0)], Is(fl(0.0))),
        ("sqrt", vec![i(16)], Is(fl(4.0))),
        ("sqrt", vec![i(-1)], Fails("expected a positive number")),
        ("tan", vec![i(0)], Is(fl(0.0))),
        ("tanh", vec![i(0)], Is(fl(0.0))),
        // The docs' conv examples.
        ("conv", vec![s("a"), i(16), i(2)], Is(s("1010"))),
        ("conv", vec![s("6E"), i(18), i(8)], Is(s("172"))),
        ("conv", vec![i(-17), i(10), i(-18)], Is(s("-H"))),
        ("conv", vec![i(-1), i(10), i(16)], Is(s("FFFFFFFFFFFFFFFF"))),
        ("conv", vec![s(""), i(10), i(2)], Is(s("0"))),
        ("conv", vec![i(5), i(1), i(2)], Is(NULL)),
    ]);
}

#[test]
fn rand_is_in_the_unit_interval_and_varies() {
    let rand = super::scalar("rand").unwrap().call;
    let draws: Vec<f64> = (0..100)
        .map(|_| match rand(&[]) {
            Ok(super::Value::Float(x)) => x,
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
    assert!(draws.windows(2).any(|w| w[0] != w[1]));
}
