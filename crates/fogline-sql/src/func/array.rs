//! Array functions (eKuiper: docs/en_US/sqls/functions/array_functions.md).
//!
//! Elements compare as values of their own type: `1` and `1.0` differ, as in eKuiper
//! (Go compares them as different types).

use std::cmp::Ordering;

use super::{any_null, expected, f, fail, int, random_u64, scalar, text, to_text, Scalar, MANY};
use crate::error::SqlError;
use crate::value::{Row, Value};

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("array_cardinality", 1, 1, array_cardinality),
    f("array_concat", 1, MANY, array_concat),
    f("array_contains", 2, 2, array_contains),
    f("array_contains_any", 2, 2, array_contains_any),
    f("array_create", 0, MANY, array_create),
    f("array_distinct", 1, 1, array_distinct),
    f("array_except", 2, 2, array_except),
    f("array_flatten", 1, 1, array_flatten),
    f("array_intersect", 2, 2, array_intersect),
    f("array_join", 2, 3, array_join),
    f("array_last_position", 2, 2, array_last_position),
    f("array_map", 2, 2, array_map),
    f("array_max", 1, 1, array_max),
    f("array_min", 1, 1, array_min),
    f("array_position", 2, 2, array_position),
    f("array_remove", 2, 2, array_remove),
    f("array_shuffle", 1, 1, array_shuffle),
    f("array_sort", 1, 1, array_sort),
    f("array_union", 2, 2, array_union),
    f("cardinality", 1, 1, cardinality),
    f("element_at", 2, 2, element_at),
    f("kvpair_array_to_obj", 1, 1, kvpair_array_to_obj),
    f("repeat", 2, 2, repeat),
    f("sequence", 2, 3, sequence),
];

/// The most elements `repeat` and `sequence` build: one bad record must not exhaust an
/// edge node.
const MAX_LEN: i64 = 1 << 20;

fn arr<'a>(name: &str, v: &'a Value) -> Result<&'a [Value], SqlError> {
    match v {
        Value::Array(a) => Ok(a),
        _ => Err(expected(name, "an array", v)),
    }
}

/// An array, or empty for NULL.
fn arr_or_empty<'a>(name: &str, v: &'a Value) -> Result<&'a [Value], SqlError> {
    if v.is_null() {
        Ok(&[])
    } else {
        arr(name, v)
    }
}

/// Keeps the first of equal elements, in order.
fn distinct(items: impl IntoIterator<Item = Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for v in items {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The number of members; NULL (or a non-array) is 0.
fn cardinality(args: &[Value]) -> R {
    Ok(Value::Int(match &args[0] {
        Value::Array(a) => a.len() as i64,
        _ => 0,
    }))
}

/// Non-NULL members; NULL is 0.
fn array_cardinality(args: &[Value]) -> R {
    let a = arr_or_empty("array_cardinality", &args[0])?;
    Ok(Value::Int(a.iter().filter(|v| !v.is_null()).count() as i64))
}

/// NULL arguments are treated as empty arrays.
fn array_concat(args: &[Value]) -> R {
    let mut out = Vec::new();
    for v in args {
        out.extend_from_slice(arr_or_empty("array_concat", v)?);
    }
    Ok(Value::Array(out))
}

/// NULL for a NULL array (eKuiper's docs).
fn array_contains(args: &[Value]) -> R {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    Ok(Value::Bool(
        arr("array_contains", &args[0])?.contains(&args[1]),
    ))
}

/// False when the first array is NULL.
fn array_contains_any(args: &[Value]) -> R {
    let a = arr_or_empty("array_contains_any", &args[0])?;
    let b = arr_or_empty("array_contains_any", &args[1])?;
    Ok(Value::Bool(a.iter().any(|v| b.contains(v))))
}

/// The non-NULL arguments; NULL when there are none (as eKuiper).
fn array_create(args: &[Value]) -> R {
    let items: Vec<Value> = args.iter().filter(|v| !v.is_null()).cloned().collect();
    Ok(if items.is_empty() {
        Value::Null
    } else {
        Value::Array(items)
    })
}

fn array_distinct(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    Ok(Value::Array(distinct(
        arr("array_distinct", &args[0])?.to_vec(),
    )))
}

/// Members of the first not in the second, without duplicates.
fn array_except(args: &[Value]) -> R {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let a = arr("array_except", &args[0])?;
    let b = arr_or_empty("array_except", &args[1])?;
    Ok(Value::Array(distinct(
        a.iter().filter(|v| !b.contains(v)).cloned(),
    )))
}

/// One level: array members are spliced in, others kept.
fn array_flatten(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let mut out = Vec::new();
    for v in arr("array_flatten", &args[0])? {
        match v {
            Value::Array(inner) => out.extend_from_slice(inner),
            v => out.push(v.clone()),
        }
    }
    Ok(Value::Array(out))
}

/// Members of both, without duplicates, in the second array's order (as eKuiper).
fn array_intersect(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let a = arr("array_intersect", &args[0])?;
    let b = arr("array_intersect", &args[1])?;
    Ok(Value::Array(distinct(
        b.iter().filter(|v| a.contains(v)).cloned(),
    )))
}

/// Members joined by the delimiter; NULLs are skipped unless a non-empty replacement is
/// given.
fn array_join(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let name = "array_join";
    let a = arr(name, &args[0])?;
    let delimiter = text(name, &args[1])?;
    let null_as = match args.get(2) {
        Some(v) => text(name, v)?,
        None => "",
    };
    let mut parts = Vec::with_capacity(a.len());
    for v in a {
        match v {
            Value::Null if null_as.is_empty() => {}
            Value::Null => parts.push(null_as.to_owned()),
            Value::Array(_) | Value::Object(_) => return Err(expected(name, "scalar members", v)),
            v => parts.push(to_text(v)),
        }
    }
    Ok(Value::Str(parts.join(delimiter)))
}

fn position(name: &str, args: &[Value], last: bool) -> R {
    if args[0].is_null() {
        return Ok(Value::Int(-1));
    }
    let a = arr(name, &args[0])?;
    let found = if last {
        a.iter().rposition(|v| *v == args[1])
    } else {
        a.iter().position(|v| *v == args[1])
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

/// 0-based index of the first occurrence, or -1 (also for a NULL array).
fn array_position(args: &[Value]) -> R {
    position("array_position", args, false)
}

fn array_last_position(args: &[Value]) -> R {
    position("array_last_position", args, true)
}

/// `array_map(function, array)`: a one-argument scalar function applied to each member.
fn array_map(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let fname = text("array_map", &args[0])?.to_ascii_lowercase();
    let func = scalar(&fname)
        .filter(|s| s.min_args <= 1 && s.max_args >= 1)
        .ok_or_else(|| {
            fail(
                "array_map",
                format_args!("{fname} is not a one-argument scalar function"),
            )
        })?;
    let a = arr("array_map", &args[1])?;
    let mapped = a.iter().map(|v| (func.call)(std::slice::from_ref(v)));
    let mapped = mapped.collect::<Result<_, _>>();
    Ok(Value::Array(mapped.map_err(|e| fail("array_map", e))?))
}

/// Greatest (or least) non-NULL member: all numbers or all strings.
fn extreme(name: &str, args: &[Value], want: Ordering) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let mut best: Option<&Value> = None;
    for v in arr(name, &args[0])?.iter().filter(|v| !v.is_null()) {
        let Some(b) = best else {
            if !matches!(v, Value::Int(_) | Value::Float(_) | Value::Str(_)) {
                return Err(expected(name, "numbers or strings", v));
            }
            best = Some(v);
            continue;
        };
        let ord = match (v, b) {
            (Value::Str(x), Value::Str(y)) => x.cmp(y),
            (Value::Int(x), Value::Int(y)) => x.cmp(y),
            (x, y) => match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
                _ => return Err(fail(name, "members of different types")),
            },
        };
        if ord == want {
            best = Some(v);
        }
    }
    Ok(best.cloned().unwrap_or(Value::Null))
}

fn array_max(args: &[Value]) -> R {
    extreme("array_max", args, Ordering::Greater)
}

fn array_min(args: &[Value]) -> R {
    extreme("array_min", args, Ordering::Less)
}

/// Every occurrence of the value removed; NULL for a NULL array.
fn array_remove(args: &[Value]) -> R {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let a = arr("array_remove", &args[0])?;
    Ok(Value::Array(
        a.iter().filter(|v| **v != args[1]).cloned().collect(),
    ))
}

fn array_shuffle(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let mut a = arr("array_shuffle", &args[0])?.to_vec();
    for i in (1..a.len()).rev() {
        a.swap(i, (random_u64() % (i as u64 + 1)) as usize);
    }
    Ok(Value::Array(a))
}

/// Sort order across types: NULL, booleans, numbers (by value), strings, then the rest by
/// their JSON text. (eKuiper compares the printed text, so 10 sorts before 9 there.)
fn order(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Str(_) => 3,
            _ => 4,
        }
    }
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => rank(a)
                .cmp(&rank(b))
                .then_with(|| to_text(a).cmp(&to_text(b))),
        },
    }
}

fn array_sort(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let mut a = arr("array_sort", &args[0])?.to_vec();
    a.sort_by(order);
    Ok(Value::Array(a))
}

/// Members of either, without duplicates; NULL counts as empty.
fn array_union(args: &[Value]) -> R {
    let a = arr_or_empty("array_union", &args[0])?;
    let b = arr_or_empty("array_union", &args[1])?;
    Ok(Value::Array(distinct(a.iter().chain(b).cloned())))
}

/// `element_at(array, i)` (negative i counts from the end) or `element_at(struct, key)`.
fn element_at(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    match &args[0] {
        Value::Array(a) => {
            let i = int("element_at", &args[1])?;
            let n = a.len() as i64;
            let at = if i < 0 { n + i } else { i };
            if !(0..n).contains(&at) {
                return Err(fail(
                    "element_at",
                    format_args!("index {i} outside the {n} members"),
                ));
            }
            Ok(a[at as usize].clone())
        }
        Value::Object(o) => Ok(o
            .get(text("element_at", &args[1])?)
            .cloned()
            .unwrap_or(Value::Null)),
        v => Err(expected("element_at", "an array or a struct", v)),
    }
}

/// `[{"key": k, "value": v}, ...]` to `{k: v, ...}`.
fn kvpair_array_to_obj(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let name = "kvpair_array_to_obj";
    let mut out = Row::new();
    for item in arr(name, &args[0])? {
        let pair = match item {
            Value::Object(o) if o.len() == 2 => o,
            v => return Err(expected(name, "{\"key\", \"value\"} members", v)),
        };
        match (pair.get("key"), pair.get("value")) {
            (Some(Value::Str(k)), Some(v)) => out.insert(k.clone(), v.clone()),
            _ => return Err(expected(name, "{\"key\", \"value\"} members", item)),
        };
    }
    Ok(Value::Object(out))
}

fn bounded_len(name: &str, n: i64) -> Result<usize, SqlError> {
    if !(0..=MAX_LEN).contains(&n) {
        return Err(fail(
            name,
            format_args!("length must be 0..={MAX_LEN}, found {n}"),
        ));
    }
    Ok(n as usize)
}

/// `repeat(v, n)`: an array of n copies of v.
fn repeat(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let n = bounded_len("repeat", int("repeat", &args[1])?)?;
    Ok(Value::Array(vec![args[0].clone(); n]))
}

/// `sequence(start, stop[, step])`: integers from start to stop inclusive; the default
/// step is 1 or -1 toward stop. A step away from stop gives an empty array.
fn sequence(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let name = "sequence";
    let (start, stop) = (int(name, &args[0])?, int(name, &args[1])?);
    let step = match args.get(2) {
        Some(s) => int(name, s)?,
        None if start <= stop => 1,
        None => -1,
    };
    if step == 0 {
        return Err(fail(name, "the step must not be zero"));
    }
    let n = ((i128::from(stop) - i128::from(start)) / i128::from(step) + 1).max(0);
    let n = bounded_len(name, i64::try_from(n).unwrap_or(i64::MAX))?;
    let items =
        (0..n as i128).map(|k| Value::Int((i128::from(start) + k * i128::from(step)) as i64));
    Ok(Value::Array(items.collect()))
}
