//! The string family.

use super::Value;
use super::{b, fl, i, run, s, Want::*, NULL};

#[test]
fn string_table() {
    let arr = |v: Vec<Value>| Value::Array(v);
    run(vec![
        ("concat", vec![s("a"), s("b"), s("c")], Is(s("abc"))),
        (
            "concat",
            vec![s("a"), NULL, i(1), fl(2.5), b(true)],
            Is(s("a12.5true")),
        ),
        ("concat", vec![NULL], Is(s(""))),
        (
            "concat",
            vec![arr(vec![i(1)]), NULL, arr(vec![i(2), i(3)])],
            Is(arr(vec![i(1), i(2), i(3)])),
        ),
        (
            "concat",
            vec![s("a"), arr(vec![])],
            Fails("expected a string, found array"),
        ),
        ("endswith", vec![s("abc"), s("bc")], Is(b(true))),
        ("endswith", vec![s("abc"), s("b")], Is(b(false))),
        ("endswith", vec![NULL, s("b")], Is(b(false))),
        ("startswith", vec![s("abc"), s("ab")], Is(b(true))),
        (
            "startswith",
            vec![s("abc"), i(1)],
            Fails("expected a string, found bigint"),
        ),
        ("indexof", vec![s("abcb"), s("b")], Is(i(1))),
        ("indexof", vec![s("héllo"), s("l")], Is(i(2))),
        ("indexof", vec![s("abc"), s("z")], Is(i(-1))),
        ("indexof", vec![NULL, s("z")], Is(i(-1))),
        ("length", vec![s("héllo")], Is(i(5))),
        ("length", vec![arr(vec![i(1), i(2)])], Is(i(2))),
        ("length", vec![NULL], Is(i(0))),
        ("numbytes", vec![s("héllo")], Is(i(6))),
        ("numbytes", vec![NULL], Is(i(0))),
        ("lower", vec![s("AbC")], Is(s("abc"))),
        ("upper", vec![s("AbC")], Is(s("ABC"))),
        ("upper", vec![NULL], Is(NULL)),
        ("lower", vec![i(1)], Fails("expected a string")),
        ("trim", vec![s(" \t a b \n")], Is(s("a b"))),
        ("ltrim", vec![s("  a ")], Is(s("a "))),
        ("rtrim", vec![s("  a ")], Is(s("  a"))),
        ("reverse", vec![s("abé")], Is(s("éba"))),
        ("lpad", vec![s("a"), i(2)], Is(s("  a"))),
        ("rpad", vec![s("a"), i(2)], Is(s("a  "))),
        ("rpad", vec![s("a"), i(-1)], Fails("padding must be")),
        ("lpad", vec![s("a"), NULL], Is(NULL)),
        (
            "regexp_matches",
            vec![s("device42"), s("[0-9]+$")],
            Is(b(true)),
        ),
        (
            "regexp_matches",
            vec![s("device"), s("[0-9]+$")],
            Is(b(false)),
        ),
        ("regexp_matches", vec![s("ÄB"), s("(?i)^äb$")], Is(b(true))),
        ("regexp_matches", vec![NULL, s("x")], Is(b(false))),
        (
            "regexp_matches",
            vec![s("x"), s("(")],
            Fails("regex parse error"),
        ),
        (
            "regexp_replace",
            vec![s("a1b22"), s("[0-9]+"), s("#")],
            Is(s("a#b#")),
        ),
        (
            "regexp_replace",
            vec![s("ab"), s("(a)(b)"), s("$2$1")],
            Is(s("ba")),
        ),
        ("regexp_replace", vec![NULL, s("a"), s("b")], Is(NULL)),
        (
            "regexp_substr",
            vec![s("a12b345"), s("[0-9]+")],
            Is(s("12")),
        ),
        ("regexp_substring", vec![s("abc"), s("[0-9]+")], Is(s(""))),
        // The docs' split_value examples.
        (
            "split_value",
            vec![s("/test/device001/message"), s("/"), i(0)],
            Is(s("")),
        ),
        (
            "split_value",
            vec![s("/test/device001/message"), s("/"), i(3)],
            Is(s("message")),
        ),
        ("split_value", vec![s("a/b"), s("/"), i(-1)], Is(s("b"))),
        (
            "split_value",
            vec![s("a/b"), s("/"), i(2)],
            Fails("index 2 outside"),
        ),
        ("split_value", vec![s("ab"), s(""), i(1)], Is(s("b"))),
        ("substring", vec![s("abcdefg"), i(1), i(3)], Is(s("bc"))),
        ("substring", vec![s("abcdefg"), i(4)], Is(s("efg"))),
        ("substring", vec![s("abc"), i(5)], Is(s(""))),
        ("substring", vec![s("abc"), i(1), i(99)], Is(s("bc"))),
        ("substring", vec![s("héllo"), i(1), i(2)], Is(s("é"))),
        (
            "substring",
            vec![s("abc"), i(2), i(1)],
            Fails("past the end index"),
        ),
        (
            "substring",
            vec![s("abc"), i(-1)],
            Fails("must not be negative"),
        ),
        // The docs' format example and locale table.
        (
            "format",
            vec![fl(12332.1234567), i(4), s("en_US")],
            Is(s("12,332.1235")),
        ),
        (
            "format",
            vec![fl(123456.78), i(2), s("de_DE")],
            Is(s("123.456,78")),
        ),
        (
            "format",
            vec![fl(123456.78), i(2), s("de_CH")],
            Is(s("123'456.78")),
        ),
        ("format", vec![fl(-1234567.5), i(0)], Is(s("-1234568"))),
        ("format", vec![i(12), i(2)], Is(s("12.00"))),
        (
            "format",
            vec![i(1), i(2), s("xx_YY")],
            Fails("not supported"),
        ),
    ]);
}
