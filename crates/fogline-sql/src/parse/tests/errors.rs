//! Errors: positions, messages, and what is refused; no input panics.

use super::*;

#[test]
fn error_positions() {
    assert_eq!(
        parse("SELECT a, b\n  FROM demo WHERE")
            .unwrap_err()
            .to_string(),
        "syntax error at 2:18: expected an expression, found end of input"
    );
    assert_eq!(
        err("SELECT * FROM demo GROUP WHERE"),
        (1, 26, "expected BY, found 'WHERE'".into())
    );
    assert_eq!(
        err("SELECT temperature WHERE a > 1"),
        (1, 20, "expected AS, ',' or FROM, found 'WHERE'".into())
    );
    assert_eq!(
        err("SELECT a b FROM demo"),
        (1, 10, "expected AS, ',' or FROM, found 'b'".into())
    );
    assert_eq!(
        err("SELECT * FROM demo WHERE a > 1 LIMIT 2 x"),
        (1, 40, "expected end of input, found 'x'".into())
    );
    assert_eq!(
        err("SELECT * FROM from"),
        (1, 15, "expected a stream name, found 'from'".into())
    );
    assert_eq!(
        err("DROP STREAM x").2,
        "expected SELECT or CREATE STREAM, found 'DROP'"
    );
    assert_eq!(err("SELECT (a FROM s").2, "expected ')', found 'FROM'");
    assert_eq!(
        err("SELECT f(a b) FROM s").2,
        "expected ',' or ')', found 'b'"
    );
    assert_eq!(
        err("SELECT CASE WHEN a THEN 1 FROM s").2,
        "expected WHEN, ELSE or END, found 'FROM'"
    );
    assert_eq!(err("SELECT a IS 1 FROM s").2, "expected NULL, found '1'");
    assert_eq!(err("SELECT a[1 FROM s").2, "expected ']', found 'FROM'");
    assert_eq!(
        err("SELECT 9223372036854775808 FROM s").2,
        "integer out of range: 9223372036854775808"
    );
}

#[test]
fn rejected_with_reasons() {
    let msg = |sql: &str| err(sql).2;
    assert_eq!(
        msg("CREATE STREAM s () WITH (FORMAT=\"protobuf\")"),
        "unsupported FORMAT \"protobuf\": expected json, binary or delimited"
    );
    assert_eq!(
        err("CREATE STREAM s () WITH (FORMAT=\"protobuf\")"),
        (1, 33, msg("CREATE STREAM s () WITH (FORMAT=\"protobuf\")"))
    );
    assert_eq!(
        msg("CREATE STREAM s () WITH (SHARED=\"yes\")"),
        "SHARED must be \"true\" or \"false\", not \"yes\""
    );
    assert_eq!(
        msg("CREATE STREAM s () WITH (KEY=\"a\", key=\"b\")"),
        "option KEY is given twice"
    );
    assert_eq!(
        msg("CREATE STREAM s () WITH (KEY=1)"),
        "expected a string value for KEY, found '1'"
    );
    assert_eq!(
        msg("CREATE STREAM s (a INT) WITH (KEY=\"a\")")
            .split(',')
            .next()
            .unwrap(),
        "expected a type (BIGINT"
    );
    assert_eq!(
        msg("CREATE STREAM s (a BIGINT, a FLOAT) WITH (KEY=\"a\")"),
        "field 'a' is declared twice"
    );
    assert_eq!(
        msg("CREATE STREAM s (a BIGINT DEFAULT 1) WITH (KEY=\"a\")"),
        "DEFAULT values are not supported"
    );
    assert_eq!(
        msg("CREATE STREAM s (a BIGINT)"),
        "expected WITH, found end of input"
    );
    assert_eq!(
        msg("CREATE TABLE t () WITH (KEY=\"a\")"),
        "CREATE TABLE is not supported: only streams"
    );
    let window = |w: &str| msg(&format!("SELECT * FROM s GROUP BY {w}"));
    assert_eq!(
        window("TUMBLINGWINDOW(ss, 0)"),
        "the length must be above 0"
    );
    assert_eq!(
        window("TUMBLINGWINDOW(xx, 1)"),
        "expected a time unit (DD, HH, MI, SS or MS), found 'xx'"
    );
    assert_eq!(
        window("TUMBLINGWINDOW(ss, 1, 2)"),
        "expected ')', found ','"
    );
    assert_eq!(
        window("TUMBLINGWINDOW(ss, a)"),
        "expected an integer for the length, found 'a'"
    );
    assert_eq!(window("HOPPINGWINDOW(ss, 5)"), "expected ',', found ')'");
    assert_eq!(
        window("HOPPINGWINDOW(ss, 5, 6)"),
        "HOPPINGWINDOW's hop must not exceed its length"
    );
    assert_eq!(
        window("SESSIONWINDOW(ss, 5, 0)"),
        "the timeout must be above 0"
    );
    assert_eq!(
        window("COUNTWINDOW(2, 3)"),
        "COUNTWINDOW's interval (3) must not exceed its count (2)"
    );
    assert_eq!(window("COUNTWINDOW(0)"), "the count must be above 0");
    assert_eq!(
        window("TUMBLINGWINDOW(dd, 9999999999999)"),
        "the length (9999999999999) is too large"
    );
    assert_eq!(
        window("COUNTWINDOW(2), COUNTWINDOW(3)"),
        "only one window is allowed in GROUP BY"
    );
    assert_eq!(
        window("COUNTWINDOW(2) OVER (WHEN a)"),
        "OVER (WHEN ..) applies to SLIDINGWINDOW only, not COUNTWINDOW"
    );
    assert_eq!(window("STATEWINDOW(a > 1)"), "STATEWINDOW is not supported");
    assert_eq!(
        msg("SELECT * EXCEPT(a) FROM s"),
        "SELECT * EXCEPT/REPLACE is not supported"
    );
    assert_eq!(
        msg("SELECT * FROM a LEFT JOIN b ON a.x = b.x"),
        "joins are not supported: a rule reads one stream"
    );
    assert_eq!(
        msg("SELECT a->* FROM s"),
        "projections over '*' are not supported"
    );
    assert_eq!(
        msg("SELECT a[*] FROM s"),
        "projections over '*' are not supported"
    );
    assert_eq!(
        msg("SELECT * FROM s WHERE a IN b"),
        "expected '(' after IN (IN over an array expression is not supported), found 'b'"
    );
    assert_eq!(
        msg("SELECT lag(a) OVER () FROM s"),
        "expected PARTITION BY or WHEN, found ')'"
    );
    assert_eq!(
        msg("SELECT `f`(a) FROM s"),
        "a function name cannot be backquoted"
    );
    assert_eq!(
        msg("SELECT a + * FROM s"),
        "expected an expression, found '*'"
    );
}

proptest::proptest! {
    #[test]
    fn printable_text_never_panics(text in "[ -~\\n]{0,60}") {
        let _ = parse(&text);
        let _ = parse_expr(&text);
    }

    #[test]
    fn sql_like_text_never_panics(
        words in proptest::collection::vec(
            proptest::sample::select(vec![
                "SELECT", "*", "FROM", "s", "WHERE", "a", "->", "[", "]", ":", "(", ")", ",",
                "GROUP", "BY", "COUNTWINDOW", "SLIDINGWINDOW", "ss", "1", "-", "NOT", "IN",
                "BETWEEN", "AND", "CASE", "WHEN", "THEN", "END", "OVER", "FILTER", "'x'",
                "CREATE", "STREAM", "WITH", "=", "ARRAY", "STRUCT", ".", "IS", "NULL",
            ]),
            0..24,
        )
    ) {
        let text = words.join(" ");
        let _ = parse(&text);
        let _ = parse_expr(&text);
    }
}
