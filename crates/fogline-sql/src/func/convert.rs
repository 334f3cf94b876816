//! Transform and JSON functions (eKuiper: docs/en_US/sqls/functions/transform_functions.md
//! and json_functions.md): `cast`, encodings, `trunc`, `chr`, hex, JSON text.

use base64::Engine as _;

use super::datetime::datetime;
use super::{any_null, bytes, expected, f, fail, int, num, text, to_text, Scalar};
use crate::error::SqlError;
use crate::value::{base64, Value};

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("cast", 2, 2, cast),
    f("chr", 1, 1, chr),
    f("dec2hex", 1, 1, dec2hex),
    f("decode", 2, 2, decode),
    f("encode", 2, 2, encode),
    f("hex2dec", 1, 1, hex2dec),
    f("parse_json", 1, 1, parse_json),
    f("to_json", 1, 1, to_json),
    f("to_seconds", 1, 1, to_seconds),
    f("trunc", 2, 2, trunc),
];

/// `cast(x, type)`: eKuiper's conversions (`CONVERT_ALL`). A datetime is Int milliseconds.
fn cast(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let v = &args[0];
    let to = text("cast", &args[1])?.to_ascii_lowercase();
    let cannot = || fail("cast", format_args!("cannot convert {v:?} to {to}"));
    Ok(match to.as_str() {
        "bigint" => Value::Int(match v {
            Value::Int(i) => *i,
            Value::Float(x) if x.is_finite() => *x as i64,
            Value::Bool(b) => i64::from(*b),
            Value::Str(s) => go_int(s).ok_or_else(cannot)?,
            _ => return Err(cannot()),
        }),
        "float" => Value::Float(match v {
            Value::Int(i) => *i as f64,
            Value::Float(x) => *x,
            Value::Bool(b) => f64::from(u8::from(*b)),
            Value::Str(s) => s.trim().parse().map_err(|_| cannot())?,
            _ => return Err(cannot()),
        }),
        "string" => Value::Str(to_text(v)),
        "boolean" => Value::Bool(match v {
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(x) => *x != 0.0,
            // Go's strconv.ParseBool.
            Value::Str(s) => match s.as_str() {
                "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
                "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
                _ => return Err(cannot()),
            },
            _ => return Err(cannot()),
        }),
        // Text is base64 when it decodes, else its UTF-8 bytes (as eKuiper).
        "bytea" => match v {
            Value::Bytes(b) => Value::Bytes(b.clone()),
            Value::Str(s) => Value::Bytes(match STANDARD.decode(s) {
                Ok(b) => b.into(),
                Err(_) => s.clone().into_bytes().into(),
            }),
            _ => return Err(cannot()),
        },
        "datetime" => Value::Int(datetime("cast", v)?),
        _ => {
            return Err(fail(
                "cast",
                format_args!(
                    "unknown type {to}: expected bigint, float, string, boolean, bytea or datetime"
                ),
            ))
        }
    })
}

const STANDARD: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Go's `strconv.ParseInt(s, 0, 64)`: a sign, then `0x`/`0o`/`0b` or a leading `0`
/// (octal) choose the base.
fn go_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(r) = lower.strip_prefix("0x") {
        (16, r)
    } else if let Some(r) = lower.strip_prefix("0o") {
        (8, r)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (2, r)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = i128::from(u64::from_str_radix(body, radix).ok()?);
    i64::try_from(if neg { -magnitude } else { magnitude }).ok()
}

/// `chr(n)`: the character with code point n, as a one-character string.
fn chr(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let code = match &args[0] {
        Value::Str(s) if s.chars().count() == 1 => return Ok(Value::Str(s.clone())),
        Value::Str(_) => return Err(fail("chr", "expected one character")),
        Value::Float(x) => *x as i64,
        v => int("chr", v)?,
    };
    u32::try_from(code)
        .ok()
        .and_then(char::from_u32)
        .map(|c| Value::Str(c.to_string()))
        .ok_or_else(|| fail("chr", format_args!("{code} is not a character code")))
}

/// The encoding argument: only `base64`, as in eKuiper.
fn base64_only(name: &str, v: &Value) -> Result<(), SqlError> {
    match text(name, v)? {
        "base64" => Ok(()),
        other => Err(fail(
            name,
            format_args!("unsupported encoding {other:?}: only base64"),
        )),
    }
}

fn encode(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    base64_only("encode", &args[1])?;
    Ok(Value::Str(base64(bytes("encode", &args[0])?)))
}

/// `decode(s, 'base64')`: a bytea.
fn decode(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    base64_only("decode", &args[1])?;
    let s = text("decode", &args[0])?;
    let raw = STANDARD
        .decode(s)
        .map_err(|e| fail("decode", format_args!("not base64: {e}")))?;
    Ok(Value::Bytes(raw.into()))
}

/// `trunc(x, n)`: x cut (toward zero) to n decimals, n clamped to 0..=34 (eKuiper's
/// docs). Cut in decimal text, so 0.29 stays 0.29 at 2 decimals.
fn trunc(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let x = num("trunc", &args[0])?;
    let n = int("trunc", &args[1])?.clamp(0, 34) as usize;
    if !x.is_finite() {
        return Ok(Value::Float(x));
    }
    let plain = x.to_string();
    let cut = match plain.split_once('.') {
        Some((whole, frac)) if frac.len() > n => format!("{whole}.{}", &frac[..n]),
        _ => plain,
    };
    Ok(Value::Float(cut.parse().unwrap_or(x)))
}

/// `to_seconds(x)`: a datetime as whole seconds since the epoch.
fn to_seconds(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    Ok(Value::Int(
        datetime("to_seconds", &args[0])?.div_euclid(1000),
    ))
}

/// `hex2dec('0x10')` and `hex2dec('10')` are 16.
fn hex2dec(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let s = text("hex2dec", &args[0])?;
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let body = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .unwrap_or(body);
    let v = i64::from_str_radix(body, 16)
        .map_err(|_| fail("hex2dec", format_args!("{s:?} is not hexadecimal")))?;
    Ok(Value::Int(if neg { -v } else { v }))
}

/// `dec2hex(16)` is `'0x10'` (a negative is `-0x..`, as Go prints it).
fn dec2hex(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let v = int("dec2hex", &args[0])?;
    let sign = if v < 0 { "-" } else { "" };
    Ok(Value::Str(format!("{sign}0x{:x}", v.unsigned_abs())))
}

/// `to_json(x)`: JSON text (bytea as base64).
fn to_json(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    Ok(Value::Str(args[0].to_json().to_string()))
}

/// `parse_json(s)`: the value JSON text holds.
fn parse_json(args: &[Value]) -> R {
    match &args[0] {
        Value::Null => Ok(Value::Null),
        Value::Str(s) => Value::from_json(s.as_bytes()).map_err(|e| fail("parse_json", e)),
        Value::Bytes(b) => Value::from_json(b).map_err(|e| fail("parse_json", e)),
        v => Err(expected("parse_json", "a string", v)),
    }
}
