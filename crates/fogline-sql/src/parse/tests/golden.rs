//! Golden trees and precedence.

use super::*;
use crate::ast::*;
use crate::value::Value;

#[test]
fn select_with_every_clause() {
    let s = select(
        "SELECT d.a AS x, count(*) FROM demo AS d WHERE a > 1 \
         GROUP BY b, TUMBLINGWINDOW(ss, 10) FILTER (WHERE c = 'y') \
         HAVING count(*) >= 2 ORDER BY x DESC, b LIMIT 5;",
    );
    let count = Expr::Call(call("count", vec![Expr::Wildcard { stream: None }]));
    assert_eq!(
        s,
        Select {
            fields: vec![
                SelectField {
                    expr: Expr::Field {
                        stream: Some("d".into()),
                        name: "a".into()
                    },
                    alias: Some("x".into()),
                },
                SelectField {
                    expr: count.clone(),
                    alias: None
                },
            ],
            from: "demo".into(),
            from_alias: Some("d".into()),
            filter: Some(bin(BinaryOp::Gt, field("a"), int(1))),
            group_by: vec![field("b")],
            window: Some(Window {
                kind: WindowKind::Tumbling { length_ms: 10_000 },
                filter: Some(bin(BinaryOp::Eq, field("c"), str_lit("y"))),
                trigger: None,
            }),
            having: Some(bin(BinaryOp::Ge, count, int(2))),
            order_by: vec![
                OrderBy {
                    expr: field("x"),
                    descending: true
                },
                OrderBy {
                    expr: field("b"),
                    descending: false
                },
            ],
            limit: Some(5),
        }
    );
}

#[test]
fn create_stream_with_types_and_options() {
    let sql = "create stream `my demo` (id bigint, tags Array(string), \
               pos STRUCT(x FLOAT, y float), raw BYTEA, at DATETIME, ok BOOLEAN) \
               WITH (datasource=\"a/+/b\", Format='DELIMITED', Timestamp=\"at\", \
               timestamp_format=\"YYYY\", key=\"id\", type=\"mqtt\", shared=\"TRUE\", \
               delimiter=\";\", strict_validation=\"true\", conf_key=\"c1\", odd=\"x\")";
    let Ok(Statement::CreateStream(def)) = parse(sql) else {
        panic!("{:?}", parse(sql))
    };
    let f = |name: &str, kind| FieldDef {
        name: name.into(),
        kind,
    };
    assert_eq!(def.name, "my demo");
    assert_eq!(
        def.fields,
        vec![
            f("id", FieldType::Bigint),
            f("tags", FieldType::Array(Box::new(FieldType::String))),
            f(
                "pos",
                FieldType::Struct(vec![f("x", FieldType::Float), f("y", FieldType::Float)])
            ),
            f("raw", FieldType::Bytea),
            f("at", FieldType::Datetime),
            f("ok", FieldType::Boolean),
        ]
    );
    let o = &def.options;
    assert_eq!(o.datasource.as_deref(), Some("a/+/b"));
    assert_eq!(o.format, Format::Delimited);
    assert_eq!(o.timestamp.as_deref(), Some("at"));
    assert_eq!(o.timestamp_format.as_deref(), Some("YYYY"));
    assert_eq!(o.key.as_deref(), Some("id"));
    assert_eq!(o.kind.as_deref(), Some("mqtt"));
    assert!(o.shared && o.strict_validation);
    assert_eq!(o.delimiter.as_deref(), Some(";"));
    assert_eq!(o.raw.len(), 11);
    assert_eq!(o.raw[9], ("CONF_KEY".into(), "c1".into()));
    assert_eq!(o.raw[10], ("ODD".into(), "x".into()));
}

#[test]
fn schemaless_stream_defaults() {
    let Ok(Statement::CreateStream(def)) = parse("CREATE STREAM demo () WITH (DATASOURCE=\"t\")")
    else {
        panic!()
    };
    assert!(def.fields.is_empty());
    assert_eq!(def.options.format, Format::Json);
    assert!(!def.options.shared);
}

#[test]
fn windows_in_milliseconds() {
    let kind = |sql: &str| select(sql).window.unwrap().kind;
    let q = |w: &str| format!("SELECT * FROM s GROUP BY {w}");
    assert_eq!(
        kind(&q("hoppingwindow(mi, 10, 5)")),
        WindowKind::Hopping {
            length_ms: 600_000,
            hop_ms: 300_000
        }
    );
    assert_eq!(
        kind(&q("SLIDINGWINDOW(hh, 1)")),
        WindowKind::Sliding {
            length_ms: 3_600_000,
            delay_ms: 0
        }
    );
    assert_eq!(
        kind(&q("SlidingWindow(ms, 500, 0)")),
        WindowKind::Sliding {
            length_ms: 500,
            delay_ms: 0
        }
    );
    assert_eq!(
        kind(&q("SESSIONWINDOW(dd, 2, 1)")),
        WindowKind::Session {
            max_length_ms: 172_800_000,
            timeout_ms: 86_400_000
        }
    );
    assert_eq!(
        kind(&q("COUNTWINDOW(5)")),
        WindowKind::Count {
            count: 5,
            interval: 0
        }
    );
    assert_eq!(
        kind(&q("COUNTWINDOW(5, 2)")),
        WindowKind::Count {
            count: 5,
            interval: 2
        }
    );
    // The window may stand anywhere among the keys.
    let s = select("SELECT * FROM s GROUP BY COUNTWINDOW(3), a, b.c");
    assert_eq!(s.group_by.len(), 2);
    let w = select("SELECT * FROM s GROUP BY SLIDINGWINDOW(ss, 1) OVER (WHEN a > 2)").window;
    assert_eq!(
        w.unwrap().trigger,
        Some(bin(BinaryOp::Gt, field("a"), int(2)))
    );
}

#[test]
fn precedence() {
    use BinaryOp::*;
    assert_eq!(
        expr("a OR b AND NOT c = 1"),
        bin(
            Or,
            field("a"),
            bin(
                And,
                field("b"),
                Expr::Unary(UnaryOp::Not, Box::new(bin(Eq, field("c"), int(1))))
            )
        )
    );
    assert_eq!(
        expr("1 | 2 ^ 3 & 4 + 5 * -x"),
        bin(
            BitOr,
            int(1),
            bin(
                BitXor,
                int(2),
                bin(
                    BitAnd,
                    int(3),
                    bin(
                        Add,
                        int(4),
                        bin(Mul, int(5), Expr::Unary(UnaryOp::Neg, Box::new(field("x"))))
                    )
                )
            )
        )
    );
    assert_eq!(
        expr("a - b - c"),
        bin(Sub, bin(Sub, field("a"), field("b")), field("c"))
    );
    assert_eq!(expr("-a->b"), expr("-(a->b)"));
    assert_eq!(expr("a + 1 > b * 2"), expr("(a + 1) > (b * 2)"));
    assert_eq!(
        expr("a BETWEEN 1 AND 2 AND b"),
        expr("(a BETWEEN 1 AND 2) AND b")
    );
    assert_eq!(expr("-1"), int(-1));
    assert_eq!(expr("-9223372036854775808"), int(i64::MIN));
    assert_eq!(expr("- 2.5"), Expr::Literal(Value::Float(-2.5)));
}

#[test]
fn predicates() {
    let e = |s: &str| Box::new(expr(s));
    assert_eq!(
        expr("a NOT BETWEEN 1 AND 1 + 1"),
        Expr::Between {
            expr: e("a"),
            low: e("1"),
            high: e("1 + 1"),
            negated: true
        }
    );
    assert_eq!(
        expr("a not in (1, 'x')"),
        Expr::In {
            expr: e("a"),
            list: vec![int(1), str_lit("x")],
            negated: true
        }
    );
    assert_eq!(
        expr("a LIKE 'p\\%%'"),
        Expr::Like {
            expr: e("a"),
            pattern: e("'p\\%%'"),
            negated: false
        }
    );
    assert_eq!(
        expr("a IS NOT NULL"),
        Expr::IsNull {
            expr: e("a"),
            negated: true
        }
    );
    assert_eq!(
        expr("CASE a WHEN 1 THEN 'x' ELSE 'y' END"),
        Expr::Case {
            operand: Some(e("a")),
            whens: vec![(int(1), str_lit("x"))],
            otherwise: Some(e("'y'")),
        }
    );
    assert_eq!(
        expr("case when a then b end"),
        Expr::Case {
            operand: None,
            whens: vec![(field("a"), field("b"))],
            otherwise: None,
        }
    );
    assert_eq!(expr("TRUE"), Expr::Literal(Value::Bool(true)));
    assert_eq!(expr("null"), Expr::Literal(Value::Null));
}

#[test]
fn paths_and_subscripts() {
    let b = |s: &str| Box::new(expr(s));
    assert_eq!(
        expr("demo.a->b[0]"),
        Expr::Index(
            Box::new(Expr::Arrow(
                Box::new(Expr::Field {
                    stream: Some("demo".into()),
                    name: "a".into()
                }),
                "b".into()
            )),
            b("0")
        )
    );
    // A dot after a path steps into a struct, like `->`.
    assert_eq!(expr("a->b.c"), expr("a->b->c"));
    assert_eq!(expr("s.a.b"), Expr::Arrow(b("s.a"), "b".into()));
    assert_eq!(
        expr("a[1:3]"),
        Expr::Slice(b("a"), Some(b("1")), Some(b("3")))
    );
    assert_eq!(expr("a[:2]"), Expr::Slice(b("a"), None, Some(b("2"))));
    assert_eq!(expr("a[-1:]"), Expr::Slice(b("a"), Some(b("-1")), None));
    assert_eq!(expr("a[:]"), Expr::Slice(b("a"), None, None));
    assert_eq!(expr("`select`"), field("select"));
}

#[test]
fn calls_and_their_clauses() {
    assert_eq!(
        expr("META(*)"),
        Expr::Call(call("meta", vec![Expr::Wildcard { stream: None }]))
    );
    assert_eq!(
        expr("window_start()"),
        Expr::Call(call("window_start", vec![]))
    );
    assert_eq!(
        expr("meta(topic)"),
        Expr::Call(call("meta", vec![field("topic")]))
    );
    let mut c = call("lag", vec![field("a")]);
    c.partition_by = vec![field("b"), field("c")];
    c.when = Some(Box::new(bin(BinaryOp::Gt, field("a"), int(1))));
    assert_eq!(
        expr("lag(a) OVER (PARTITION BY b, c WHEN a > 1)"),
        Expr::Call(c)
    );
    let mut c = call("avg", vec![field("a")]);
    c.filter = Some(Box::new(bin(BinaryOp::Lt, field("a"), int(9))));
    c.when = Some(Box::new(field("w")));
    assert_eq!(
        expr("avg(a) filter (where a < 9) over (when w)"),
        Expr::Call(c)
    );
    assert_eq!(
        expr("collect(d.*)[1]"),
        Expr::Index(
            Box::new(Expr::Call(call(
                "collect",
                vec![Expr::Wildcard {
                    stream: Some("d".into())
                }]
            ))),
            Box::new(int(1))
        )
    );
}

#[test]
fn trailing_semicolon_and_comments() {
    assert_eq!(
        select("SELECT a /* x */ FROM s -- y\n;"),
        select("select a from s")
    );
    assert!(parse("SELECT a FROM s;;").is_err());
    assert!(parse_expr("a > 1;").is_err());
}
