//! Errors: positions, messages, and what is refused; no input panics.

use super::*;
use crate::ast::Expr;

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
    // Found by fuzzing: each record fell in 10^12 windows, all emitted.
    assert_eq!(
        window("HOPPINGWINDOW(ss, 4333333333344, 4)"),
        "HOPPINGWINDOW: a record would fall in 1083333333336 windows (length / hop); at most 1000"
    );
    assert!(crate::parse("SELECT * FROM s GROUP BY HOPPINGWINDOW(ss, 1000, 1)").is_ok());
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

/// The depth of a tree, without recursion.
fn tree_depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(e, 1)];
    while let Some((e, d)) = todo.pop() {
        deepest = deepest.max(d);
        let mut kids: Vec<&Expr> = Vec::new();
        match e {
            Expr::Literal(_) | Expr::Field { .. } | Expr::Wildcard { .. } => {}
            Expr::Arrow(x, _) | Expr::Unary(_, x) => kids.push(x),
            Expr::Index(x, y) | Expr::Binary(_, x, y) => kids.extend([&**x, &**y]),
            Expr::Slice(x, a, b) => {
                kids.push(x);
                kids.extend(a.iter().chain(b).map(|b| &**b));
            }
            Expr::Between {
                expr, low, high, ..
            } => kids.extend([&**expr, &**low, &**high]),
            Expr::In { expr, list, .. } => {
                kids.push(expr);
                kids.extend(list);
            }
            Expr::Like { expr, pattern, .. } => kids.extend([&**expr, &**pattern]),
            Expr::IsNull { expr, .. } => kids.push(expr),
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => {
                kids.extend(operand.iter().chain(otherwise).map(|b| &**b));
                kids.extend(whens.iter().flat_map(|(w, t)| [w, t]));
            }
            Expr::Call(c) => {
                kids.extend(&c.args);
                kids.extend(&c.partition_by);
                kids.extend(c.filter.iter().chain(&c.when).map(|b| &**b));
            }
        }
        todo.extend(kids.into_iter().map(|k| (k, d + 1)));
    }
    deepest
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let n = 100_000;
    let too_deep = [
        format!("{}a{}", "(".repeat(n), ")".repeat(n)),
        format!("a{}", " AND a".repeat(n)),
        format!("a{}", " + a".repeat(n)),
        format!("a{}", " = a".repeat(n)),
        format!("a{}", " IS NULL".repeat(n)),
        format!("{}a", "- ".repeat(n)),
        format!("{}a", "NOT ".repeat(n)),
        format!("a{}", "->b".repeat(n)),
        format!("a{}", "[0]".repeat(n)),
        format!("{}a{}", "f(".repeat(n), ")".repeat(n)),
        format!("{}1{}", "CASE WHEN ".repeat(n), " THEN 1 END".repeat(n)),
    ];
    for text in &too_deep {
        let e = parse_expr(text).unwrap_err().to_string();
        assert!(e.contains("levels deep"), "{e}");
    }
    let types = format!("{}BIGINT{}", "ARRAY(".repeat(n), ")".repeat(n));
    let e = parse(&format!("CREATE STREAM s (a {types}) WITH (KEY=\"a\")")).unwrap_err();
    assert!(e.to_string().contains("nested more than 64 levels deep"));
    // Within the bounds, deep trees still parse.
    let parens = |n| format!("{}a{}", "(".repeat(n), ")".repeat(n));
    assert!(parse_expr(&parens(63)).is_ok());
    assert_eq!(
        parse_expr(&parens(64)).unwrap_err().to_string(),
        "syntax error at 1:65: nested more than 64 levels deep"
    );
    assert_eq!(
        tree_depth(&parse_expr(&format!("a{}", " AND a".repeat(450))).unwrap()),
        451
    );
}

#[test]
fn accepted_trees_stay_within_the_bound() {
    // Chains inside chains: each level's first operand is the deeper one.
    let mut accepted = 0;
    for (levels, width) in [(10, 40), (30, 10), (60, 5), (10, 60), (40, 20), (5, 150)] {
        for op in [" AND a", " + a", "->b", "[0]", " = a", " OR a"] {
            let mut text = "a".to_string();
            for _ in 0..levels {
                text = format!("({text}{})", op.repeat(width));
            }
            if let Ok(e) = parse_expr(&text) {
                assert!(
                    tree_depth(&e) <= crate::parse::MAX_DEPTH,
                    "{levels}x{width}{op}"
                );
                accepted += 1;
            }
        }
    }
    assert!(accepted >= 12, "{accepted}");
}
