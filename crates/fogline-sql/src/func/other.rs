//! Other functions (eKuiper: docs/en_US/sqls/functions/other_functions.md) that need no
//! rule context: `isnull`, `coalesce`, `newuuid`. (`tstamp` is with the time functions;
//! `cardinality` with the array functions.)

use super::{f, random_u64, Scalar, MANY};
use crate::error::SqlError;
use crate::value::Value;

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("coalesce", 1, MANY, coalesce),
    f("isnull", 1, 1, isnull),
    f("newuuid", 0, 0, newuuid),
];

fn isnull(args: &[Value]) -> R {
    Ok(Value::Bool(args[0].is_null()))
}

/// The first argument that is not NULL, else NULL.
fn coalesce(args: &[Value]) -> R {
    Ok(args
        .iter()
        .find(|v| !v.is_null())
        .cloned()
        .unwrap_or(Value::Null))
}

/// A random (version 4) UUID, as text: `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
fn newuuid(_: &[Value]) -> R {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&random_u64().to_le_bytes());
    b[8..].copy_from_slice(&random_u64().to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(Value::Str(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )))
}
