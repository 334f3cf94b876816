//! Mathematical functions (eKuiper: docs/en_US/sqls/functions/mathematical_functions.md).
//!
//! Result types follow eKuiper's: `abs` keeps its argument's type, the bitwise functions
//! and `sign` give a bigint, everything else (including `ceil`, `floor`, `round`, `mod`
//! and `power`) a float, as eKuiper computes them in float64. A NaN result of the
//! trigonometric and exponential functions is NULL, as in eKuiper.

use super::{any_null, f, fail, float_or_null, int, num, random_u64, text, Scalar};
use crate::error::SqlError;
use crate::value::Value;

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("abs", 1, 1, abs),
    f("acos", 1, 1, acos),
    f("asin", 1, 1, asin),
    f("atan", 1, 1, atan),
    f("atan2", 2, 2, atan2),
    f("bitand", 2, 2, bitand),
    f("bitor", 2, 2, bitor),
    f("bitxor", 2, 2, bitxor),
    f("bitnot", 1, 1, bitnot),
    f("ceil", 1, 1, ceil),
    f("ceiling", 1, 1, ceiling),
    f("conv", 3, 3, conv),
    f("cos", 1, 1, cos),
    f("cosh", 1, 1, cosh),
    f("cot", 1, 1, cot),
    f("degrees", 1, 1, degrees),
    f("exp", 1, 1, exp),
    f("floor", 1, 1, floor),
    f("ln", 1, 1, ln),
    f("log", 1, 2, log),
    f("mod", 2, 2, modulo),
    f("pi", 0, 0, pi),
    f("pow", 2, 2, pow),
    f("power", 2, 2, power),
    f("radians", 1, 1, radians),
    f("rand", 0, 0, rand),
    f("round", 1, 2, round),
    f("sign", 1, 1, sign),
    f("sin", 1, 1, sin),
    f("sinh", 1, 1, sinh),
    f("sqrt", 1, 1, sqrt),
    f("tan", 1, 1, tan),
    f("tanh", 1, 1, tanh),
];

/// One-argument float functions: NULL in, NULL out; NaN out is NULL.
macro_rules! unary {
    ($($fn:ident $name:literal $op:expr;)*) => {$(
        fn $fn(args: &[Value]) -> R {
            if any_null(args) {
                return Ok(Value::Null);
            }
            let op: fn(f64) -> f64 = $op;
            Ok(float_or_null(op(num($name, &args[0])?)))
        }
    )*};
}

unary! {
    acos "acos" f64::acos;
    asin "asin" f64::asin;
    atan "atan" f64::atan;
    cos "cos" f64::cos;
    cosh "cosh" f64::cosh;
    exp "exp" f64::exp;
    sin "sin" f64::sin;
    sinh "sinh" f64::sinh;
    tan "tan" f64::tan;
    tanh "tanh" f64::tanh;
    radians "radians" f64::to_radians;
    degrees "degrees" f64::to_degrees;
    ceil "ceil" f64::ceil;
    ceiling "ceiling" f64::ceil;
    floor "floor" f64::floor;
}

fn abs(args: &[Value]) -> R {
    match &args[0] {
        Value::Null => Ok(Value::Null),
        Value::Int(i) => i
            .checked_abs()
            .map(Value::Int)
            .ok_or_else(|| fail("abs", "bigint overflow")),
        Value::Float(x) => Ok(Value::Float(x.abs())),
        v => Err(super::expected("abs", "a number", v)),
    }
}

fn atan2(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let (y, x) = (num("atan2", &args[0])?, num("atan2", &args[1])?);
    Ok(float_or_null(y.atan2(x)))
}

/// Two-integer bitwise functions.
macro_rules! bitwise {
    ($($fn:ident $name:literal $op:tt;)*) => {$(
        fn $fn(args: &[Value]) -> R {
            if any_null(args) {
                return Ok(Value::Null);
            }
            Ok(Value::Int(int($name, &args[0])? $op int($name, &args[1])?))
        }
    )*};
}

bitwise! {
    bitand "bitand" &;
    bitor "bitor" |;
    bitxor "bitxor" ^;
}

fn bitnot(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    Ok(Value::Int(!int("bitnot", &args[0])?))
}

fn cot(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let r = 1.0 / num("cot", &args[0])?.tan();
    if r.is_infinite() {
        return Err(fail("cot", "out of range"));
    }
    Ok(float_or_null(r))
}

fn ln(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let x = num("ln", &args[0])?;
    if x <= 0.0 {
        return Err(fail(
            "ln",
            format_args!("expected a positive number, found {x}"),
        ));
    }
    Ok(Value::Float(x.ln()))
}

/// `log(x)` is base 10, `log(b, x)` base b; NULL when x <= 0 or b <= 1 (eKuiper's docs).
fn log(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let (base, x) = match args {
        [x] => (10.0, num("log", x)?),
        [b, x, ..] => (num("log", b)?, num("log", x)?),
        [] => return Ok(Value::Null),
    };
    if x <= 0.0 || base <= 1.0 {
        return Ok(Value::Null);
    }
    Ok(Value::Float(if base == 10.0 {
        x.log10()
    } else {
        x.ln() / base.ln()
    }))
}

fn modulo(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let (a, b) = (num("mod", &args[0])?, num("mod", &args[1])?);
    if b == 0.0 {
        return Err(fail("mod", "division by zero"));
    }
    // Rust's float `%` is C's fmod, as Go's math.Mod: the sign of the dividend.
    Ok(Value::Float(a % b))
}

fn pi(_: &[Value]) -> R {
    Ok(Value::Float(std::f64::consts::PI))
}

fn power_of(name: &str, args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    Ok(Value::Float(
        num(name, &args[0])?.powf(num(name, &args[1])?),
    ))
}

fn pow(args: &[Value]) -> R {
    power_of("pow", args)
}

fn power(args: &[Value]) -> R {
    power_of("power", args)
}

/// In [0, 1): 53 random bits over 2^53.
fn rand(_: &[Value]) -> R {
    Ok(Value::Float(
        (random_u64() >> 11) as f64 / (1u64 << 53) as f64,
    ))
}

/// Half away from zero, to `n` decimals (negative `n` rounds left of the point).
fn round(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let x = num("round", &args[0])?;
    let n = match args.get(1) {
        Some(n) => int("round", n)?,
        None => 0,
    };
    let n = n.clamp(-400, 400) as i32;
    let r = if n >= 0 {
        let factor = 10f64.powi(n);
        let scaled = x * factor;
        // Past float precision the value has no more decimals to round.
        if scaled.is_infinite() || factor.is_infinite() {
            x
        } else {
            scaled.round() / factor
        }
    } else {
        let factor = 10f64.powi(-n);
        // Rounding left of every digit leaves nothing.
        if factor.is_infinite() {
            0.0
        } else {
            (x / factor).round() * factor
        }
    };
    Ok(Value::Float(r))
}

fn sign(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let x = num("sign", &args[0])?;
    Ok(Value::Int(if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }))
}

fn sqrt(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let x = num("sqrt", &args[0])?;
    if x < 0.0 {
        return Err(fail(
            "sqrt",
            format_args!("expected a positive number, found {x}"),
        ));
    }
    Ok(Value::Float(x.sqrt()))
}

/// `conv(n, from_base, to_base)`, MySQL's: a negative `from_base` reads `n` as signed, a
/// negative `to_base` writes a signed result; otherwise negatives wrap as unsigned 64-bit.
/// Bases outside 2..=36 give NULL; an empty or invalid number converts as 0.
fn conv(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let digits = match &args[0] {
        Value::Int(i) => i.to_string(),
        v => text("conv", v)?.to_owned(),
    };
    let (from, to) = (int("conv", &args[1])?, int("conv", &args[2])?);
    let (signed_in, from) = (from < 0, from.unsigned_abs());
    let (signed_out, to) = (to < 0, to.unsigned_abs());
    if !(2..=36).contains(&from) || !(2..=36).contains(&to) {
        return Ok(Value::Null);
    }
    let digits = digits.trim();
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, digits),
    };
    // The longest valid prefix, saturating at u64::MAX as MySQL does.
    let mut val: u64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(from as u32) else {
            break;
        };
        val = val
            .checked_mul(from)
            .and_then(|v| v.checked_add(u64::from(d)))
            .unwrap_or(u64::MAX);
    }
    if signed_in {
        let limit = if negative {
            1u64 << 63
        } else {
            i64::MAX as u64
        };
        val = val.min(limit);
    }
    if negative {
        val = val.wrapping_neg();
    }
    let (minus, val) = if signed_out && (val as i64) < 0 {
        (true, val.wrapping_neg())
    } else {
        (false, val)
    };
    let mut out = Vec::new();
    let mut v = val;
    loop {
        out.push(std::char::from_digit((v % to) as u32, to as u32).unwrap_or('?'));
        v /= to;
        if v == 0 {
            break;
        }
    }
    if minus {
        out.push('-');
    }
    Ok(Value::Str(
        out.iter().rev().collect::<String>().to_uppercase(),
    ))
}
