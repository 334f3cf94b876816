//! eKuiper's scalar functions: row-wise and stateless, looked up by lowercase name.
//!
//! The evaluator evaluates the arguments, checks their count against [`Scalar::min_args`]
//! and [`Scalar::max_args`], and calls [`Scalar::call`]. Functions follow eKuiper's
//! documented behaviour (see `FUNCTIONS.md`): most return NULL when an argument is NULL,
//! and a value of the wrong type is an [`SqlError::Eval`] naming the function.

use std::sync::LazyLock;

use crate::error::SqlError;
use crate::value::Value;

mod array;
mod compress;
mod convert;
mod datetime;
mod hash;
mod math;
mod object;
mod other;
mod string;
mod time;

/// A scalar function: evaluated arguments in, one value out.
pub type ScalarFn = fn(&[Value]) -> Result<Value, SqlError>;

/// A function's entry: how many arguments it takes and its body.
#[derive(Clone, Copy)]
pub struct Scalar {
    /// The name, lowercase.
    pub name: &'static str,
    /// The fewest arguments it takes.
    pub min_args: usize,
    /// The most arguments it takes; `usize::MAX` when variadic.
    pub max_args: usize,
    /// Its body.
    pub call: ScalarFn,
}

impl std::fmt::Debug for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scalar")
            .field("name", &self.name)
            .field("min_args", &self.min_args)
            .field("max_args", &self.max_args)
            .finish_non_exhaustive()
    }
}

/// Variadic: no upper bound on the argument count.
const MANY: usize = usize::MAX;

/// Every family's table, sorted by name once so lookups can binary-search.
static ALL: LazyLock<Vec<Scalar>> = LazyLock::new(|| {
    let mut all: Vec<Scalar> = [
        math::FUNCS,
        string::FUNCS,
        array::FUNCS,
        object::FUNCS,
        convert::FUNCS,
        compress::FUNCS,
        hash::FUNCS,
        time::FUNCS,
        other::FUNCS,
    ]
    .into_iter()
    .flatten()
    .copied()
    .collect();
    all.sort_by_key(|s| s.name);
    all
});

/// Looks a function up by lowercase name.
pub fn scalar(name: &str) -> Option<&'static Scalar> {
    let all: &'static [Scalar] = &ALL;
    all.binary_search_by(|s| s.name.cmp(name))
        .ok()
        .map(|i| &all[i])
}

/// Every scalar function, for docs and the conformance table.
pub fn all() -> &'static [Scalar] {
    &ALL
}

/// A table entry.
const fn f(name: &'static str, min_args: usize, max_args: usize, call: ScalarFn) -> Scalar {
    Scalar {
        name,
        min_args,
        max_args,
        call,
    }
}

/// eKuiper's name for a value's type, for error messages.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "bigint",
        Value::Float(_) => "float",
        Value::Str(_) => "string",
        Value::Bytes(_) => "bytea",
        Value::Array(_) => "array",
        Value::Object(_) => "struct",
    }
}

/// `function NAME: MESSAGE`.
fn fail(func: &str, message: impl std::fmt::Display) -> SqlError {
    SqlError::Eval(format!("function {func}: {message}"))
}

/// `function NAME: expected WHAT, found TYPE`.
fn expected(func: &str, what: &str, found: &Value) -> SqlError {
    fail(
        func,
        format_args!("expected {what}, found {}", type_name(found)),
    )
}

/// True when any argument is NULL: most functions then return NULL.
fn any_null(args: &[Value]) -> bool {
    args.iter().any(Value::is_null)
}

/// A number as a float.
fn num(func: &str, v: &Value) -> Result<f64, SqlError> {
    v.as_f64().ok_or_else(|| expected(func, "a number", v))
}

/// An integer: a bigint, or a float with no fraction (eKuiper's strict integer
/// arguments take `4.0` and refuse `4.5`).
fn int(func: &str, v: &Value) -> Result<i64, SqlError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Ok(*x as i64),
        _ => Err(expected(func, "an integer", v)),
    }
}

/// A string.
fn text<'a>(func: &str, v: &'a Value) -> Result<&'a str, SqlError> {
    match v {
        Value::Str(s) => Ok(s),
        _ => Err(expected(func, "a string", v)),
    }
}

/// A string or a bytea, as bytes (the hash and encoding functions take either).
fn bytes<'a>(func: &str, v: &'a Value) -> Result<&'a [u8], SqlError> {
    match v {
        Value::Str(s) => Ok(s.as_bytes()),
        Value::Bytes(b) => Ok(b),
        _ => Err(expected(func, "a string", v)),
    }
}

/// A scalar as text, as eKuiper prints values into strings (`concat`, `cast(x, 'string')`):
/// numbers without exponent, booleans as `true`/`false`, arrays and structs as JSON.
fn to_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Str(s) => s.clone(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Array(_) | Value::Object(_) => v.to_json().to_string(),
    }
}

/// A float result, NULL when it is NaN (eKuiper's rule for the trigonometric functions).
fn float_or_null(x: f64) -> Value {
    if x.is_nan() {
        Value::Null
    } else {
        Value::Float(x)
    }
}

/// 64 random bits from std's per-process random keys (no RNG crate needed for `rand()`
/// and `newuuid()`): each `RandomState` gets fresh keys, hashed with a counter.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

#[cfg(test)]
mod tests;
