//! Payloads to rows by format and schema.
mod common;

use common::*;
use fogline_sql::{PlanOptions, SqlError, Value};

fn decoder(stream_sql: &str) -> fogline_sql::Plan {
    try_plan(stream_sql, "SELECT * FROM demo", PlanOptions::default()).unwrap()
}

fn json_rows(p: &fogline_sql::Plan, payload: &str) -> Vec<String> {
    p.decode(payload.as_bytes())
        .unwrap()
        .into_iter()
        .map(|r| Value::Object(r).to_json().to_string())
        .collect()
}

#[test]
fn json_objects_and_arrays_of_objects() {
    let p = decoder(DEMO);
    assert_eq!(
        json_rows(&p, r#"{"a":1,"b":[1.5,"x"]}"#),
        [r#"{"a":1,"b":[1.5,"x"]}"#]
    );
    assert_eq!(
        json_rows(&p, r#"[{"a":1},{"a":2}]"#),
        [r#"{"a":1}"#, r#"{"a":2}"#]
    );
    for bad in ["[1]", "3", "{", ""] {
        assert!(
            matches!(p.decode(bad.as_bytes()), Err(SqlError::Decode(_))),
            "{bad}"
        );
    }
}

#[test]
fn a_schema_keeps_declared_fields_and_converts_them() {
    let p = decoder(
        r#"CREATE STREAM demo (id BIGINT, t FLOAT, name STRING, ok BOOLEAN, s STRUCT(x BIGINT))
           WITH (DATASOURCE="d", FORMAT="json")"#,
    );
    assert_eq!(
        json_rows(
            &p,
            r#"{"id":"7","t":3,"name":"n","ok":"true","s":{"x":2.0,"y":1},"extra":1}"#
        ),
        [r#"{"id":7,"name":"n","ok":true,"s":{"x":2},"t":3.0}"#]
    );
    assert_eq!(json_rows(&p, r#"{"id":1}"#), [r#"{"id":1}"#]);
    assert!(p.decode(br#"{"id":"seven"}"#).is_err());
}

#[test]
fn strict_validation_rejects_mismatches_and_missing_fields() {
    let p = decoder(
        r#"CREATE STREAM demo (id BIGINT, t FLOAT)
           WITH (DATASOURCE="d", FORMAT="json", STRICT_VALIDATION="true")"#,
    );
    assert_eq!(json_rows(&p, r#"{"id":1,"t":2}"#), [r#"{"id":1,"t":2.0}"#]);
    assert!(p.decode(br#"{"id":"1","t":2}"#).is_err());
    assert!(p.decode(br#"{"id":1}"#).is_err());
}

#[test]
fn binary_and_delimited() {
    let p = decoder(r#"CREATE STREAM demo () WITH (DATASOURCE="d", FORMAT="binary")"#);
    let rows = p.decode(b"\x01\x02").unwrap();
    assert_eq!(
        rows[0]["self"],
        Value::Bytes(bytes::Bytes::from_static(b"\x01\x02"))
    );

    let p = decoder(
        r#"CREATE STREAM demo (id BIGINT, t FLOAT, name STRING)
           WITH (DATASOURCE="d", FORMAT="delimited", DELIMITER="|")"#,
    );
    assert_eq!(
        json_rows(&p, "1|2.5|x\n"),
        [r#"{"id":1,"name":"x","t":2.5}"#]
    );
}
