//! Object functions (eKuiper: docs/en_US/sqls/functions/object_functions.md), over
//! structs. Keys come out in name order (a [`Row`] is ordered; Go's maps are not).

use super::{any_null, expected, f, fail, text, Scalar, MANY};
use crate::error::SqlError;
use crate::value::{Row, Value};

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("erase", 2, 2, erase),
    f("items", 1, 1, items),
    f("keys", 1, 1, keys),
    f("obj_to_kvpair_array", 1, 1, obj_to_kvpair_array),
    f("object", 2, 2, object),
    f("object_concat", 2, MANY, object_concat),
    f("object_construct", 0, MANY, object_construct),
    f("object_pick", 2, MANY, object_pick),
    f("object_size", 1, 1, object_size),
    f("values", 1, 1, values),
    f("zip", 1, 1, zip),
];

fn obj<'a>(name: &str, v: &'a Value) -> Result<&'a Row, SqlError> {
    match v {
        Value::Object(o) => Ok(o),
        _ => Err(expected(name, "a struct", v)),
    }
}

fn keys(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let o = obj("keys", &args[0])?;
    Ok(Value::Array(o.keys().cloned().map(Value::Str).collect()))
}

fn values(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    Ok(Value::Array(
        obj("values", &args[0])?.values().cloned().collect(),
    ))
}

/// `[[key, value], ...]`; NULL for an empty struct (as eKuiper).
fn items(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let o = obj("items", &args[0])?;
    if o.is_empty() {
        return Ok(Value::Null);
    }
    let pairs = o
        .iter()
        .map(|(k, v)| Value::Array(vec![Value::Str(k.clone()), v.clone()]));
    Ok(Value::Array(pairs.collect()))
}

/// `object(keys, values)`; NULL when both are empty (as eKuiper).
fn object(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let (Value::Array(ks), Value::Array(vs)) = (&args[0], &args[1]) else {
        let bad = if matches!(args[0], Value::Array(_)) {
            &args[1]
        } else {
            &args[0]
        };
        return Err(expected("object", "an array", bad));
    };
    if ks.len() != vs.len() {
        return Err(fail("object", "keys and values differ in length"));
    }
    if ks.is_empty() {
        return Ok(Value::Null);
    }
    let mut out = Row::new();
    for (k, v) in ks.iter().zip(vs) {
        out.insert(text("object", k)?.to_owned(), v.clone());
    }
    Ok(Value::Object(out))
}

/// `zip([[key, value], ...])`; NULL entries are skipped, NULL for an empty array.
fn zip(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let entries = match &args[0] {
        Value::Array(a) => a,
        v => return Err(expected("zip", "an array", v)),
    };
    if entries.is_empty() {
        return Ok(Value::Null);
    }
    let mut out = Row::new();
    for e in entries {
        match e {
            Value::Null => {}
            Value::Array(kv) if kv.len() == 2 => {
                out.insert(text("zip", &kv[0])?.to_owned(), kv[1].clone());
            }
            v => return Err(expected("zip", "[key, value] entries", v)),
        }
    }
    Ok(Value::Object(out))
}

/// Later structs win on duplicate keys; NULLs are skipped.
fn object_concat(args: &[Value]) -> R {
    let mut out = Row::new();
    for v in args.iter().filter(|v| !v.is_null()) {
        out.extend(
            obj("object_concat", v)?
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
    }
    Ok(Value::Object(out))
}

/// `object_construct(k1, v1, ...)`: pairs with a NULL value (or key) are left out.
fn object_construct(args: &[Value]) -> R {
    if args.len() % 2 != 0 {
        return Err(fail("object_construct", "expected key, value pairs"));
    }
    let mut out = Row::new();
    for pair in args.chunks(2) {
        if pair[0].is_null() || pair[1].is_null() {
            continue;
        }
        out.insert(
            text("object_construct", &pair[0])?.to_owned(),
            pair[1].clone(),
        );
    }
    Ok(Value::Object(out))
}

/// Key names from a string or an array of strings.
fn key_list<'a>(name: &str, v: &'a Value) -> Result<Vec<&'a str>, SqlError> {
    match v {
        Value::Str(s) => Ok(vec![s]),
        Value::Array(a) => a.iter().map(|k| text(name, k)).collect(),
        v => Err(expected(name, "a string or an array of strings", v)),
    }
}

/// `erase(obj, key | [keys])`: the struct without those keys.
fn erase(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let mut out = obj("erase", &args[0])?.clone();
    for k in key_list("erase", &args[1])? {
        out.remove(k);
    }
    Ok(Value::Object(out))
}

/// `object_pick(obj, key | [keys], ...)`: only those keys; `a.b` picks a nested key,
/// keeping its path.
fn object_pick(args: &[Value]) -> R {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let from = obj("object_pick", &args[0])?;
    let mut out = Row::new();
    for keys in args[1..].iter().filter(|v| !v.is_null()) {
        for path in key_list("object_pick", keys)? {
            pick(from, &mut out, path);
        }
    }
    Ok(Value::Object(out))
}

fn pick(from: &Row, into: &mut Row, path: &str) {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    match (from.get(head), rest) {
        (Some(v), None) => {
            into.insert(head.to_owned(), v.clone());
        }
        (Some(Value::Object(inner)), Some(rest)) => {
            let slot = into
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Row::new()));
            if let Value::Object(slot) = slot {
                pick(inner, slot, rest);
            }
        }
        _ => {}
    }
}

/// `{k: v, ...}` to `[{"key": k, "value": v}, ...]`.
fn obj_to_kvpair_array(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let pairs = obj("obj_to_kvpair_array", &args[0])?.iter().map(|(k, v)| {
        Value::Object(Row::from([
            ("key".to_owned(), Value::Str(k.clone())),
            ("value".to_owned(), v.clone()),
        ]))
    });
    Ok(Value::Array(pairs.collect()))
}

/// The number of keys; NULL is 0.
fn object_size(args: &[Value]) -> R {
    if args[0].is_null() {
        return Ok(Value::Int(0));
    }
    Ok(Value::Int(obj("object_size", &args[0])?.len() as i64))
}
