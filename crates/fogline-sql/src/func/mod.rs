//! Scalar functions (placeholder until the `sql-func` branch lands): looked up by name.

use crate::error::SqlError;
use crate::value::Value;

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

fn abs(args: &[Value]) -> Result<Value, SqlError> {
    Ok(match &args[0] {
        Value::Int(i) => Value::Int(i.abs()),
        Value::Float(f) => Value::Float(f.abs()),
        Value::Null => Value::Null,
        _ => return Err(SqlError::Eval("abs: not a number".into())),
    })
}

fn upper(args: &[Value]) -> Result<Value, SqlError> {
    Ok(match &args[0] {
        Value::Str(s) => Value::Str(s.to_uppercase()),
        Value::Null => Value::Null,
        _ => return Err(SqlError::Eval("upper: not a string".into())),
    })
}

static ALL: [Scalar; 2] = [
    Scalar {
        name: "abs",
        min_args: 1,
        max_args: 1,
        call: abs,
    },
    Scalar {
        name: "upper",
        min_args: 1,
        max_args: 1,
        call: upper,
    },
];

/// The scalar function of that (lowercase) name.
pub fn scalar(name: &str) -> Option<&'static Scalar> {
    ALL.iter().find(|s| s.name == name)
}

impl std::fmt::Debug for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
