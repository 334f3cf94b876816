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
        (x / factor).round() * factor
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

#[cfg(test)]
mod tests {
    use super::super::tests::{b, fl, i, run, s, Want::*, NULL};
    use std::f64::consts::PI;

    #[test]
    fn math_table() {
        run(vec![
            ("abs", vec![i(-3)], Is(i(3))),
            ("abs", vec![fl(-2.5)], Is(fl(2.5))),
            ("abs", vec![NULL], Is(NULL)),
            (
                "abs",
                vec![s("x")],
                Fails("expected a number, found string"),
            ),
            ("abs", vec![i(i64::MIN)], Fails("overflow")),
            ("acos", vec![i(1)], Is(fl(0.0))),
            ("acos", vec![i(2)], Is(NULL)),
            ("asin", vec![fl(1.0)], About(PI / 2.0)),
            ("atan", vec![i(1)], About(PI / 4.0)),
            ("atan2", vec![i(1), i(1)], About(PI / 4.0)),
            ("atan2", vec![NULL, i(1)], Is(NULL)),
            ("bitand", vec![i(12), i(10)], Is(i(8))),
            ("bitor", vec![i(12), i(10)], Is(i(14))),
            ("bitxor", vec![i(12), i(10)], Is(i(6))),
            ("bitnot", vec![i(12)], Is(i(-13))),
            (
                "bitand",
                vec![fl(1.5), i(1)],
                Fails("expected an integer, found float"),
            ),
            ("bitor", vec![i(1), NULL], Is(NULL)),
            ("ceil", vec![fl(1.2)], Is(fl(2.0))),
            ("ceiling", vec![fl(-1.2)], Is(fl(-1.0))),
            ("ceil", vec![i(3)], Is(fl(3.0))),
            ("floor", vec![fl(-1.2)], Is(fl(-2.0))),
            ("floor", vec![b(true)], Fails("found boolean")),
            ("cos", vec![i(0)], Is(fl(1.0))),
            ("cosh", vec![i(0)], Is(fl(1.0))),
            ("cot", vec![fl(PI / 4.0)], About(1.0)),
            ("cot", vec![i(0)], Fails("out of range")),
            ("degrees", vec![fl(PI)], About(180.0)),
            ("radians", vec![i(180)], About(PI)),
            ("exp", vec![i(0)], Is(fl(1.0))),
            ("ln", vec![fl(std::f64::consts::E)], About(1.0)),
            ("ln", vec![i(0)], Fails("expected a positive number")),
            ("log", vec![i(100)], Is(fl(2.0))),
            ("log", vec![i(2), i(8)], About(3.0)),
            ("log", vec![i(0)], Is(NULL)),
            ("log", vec![i(1), i(8)], Is(NULL)),
            ("mod", vec![i(7), i(3)], Is(fl(1.0))),
            ("mod", vec![fl(-7.5), i(2)], Is(fl(-1.5))),
            ("mod", vec![i(1), i(0)], Fails("division by zero")),
            ("pi", vec![], Is(fl(PI))),
            ("power", vec![i(2), i(10)], Is(fl(1024.0))),
            ("pow", vec![i(4), fl(0.5)], Is(fl(2.0))),
            ("pow", vec![s("4"), i(2)], Fails("found string")),
            // The docs' examples: round(42.4) -> 42, round(42.4382, 2) -> 42.44.
            ("round", vec![fl(42.4)], Is(fl(42.0))),
            ("round", vec![fl(42.4382), i(2)], Is(fl(42.44))),
            ("round", vec![fl(2.5)], Is(fl(3.0))),
            ("round", vec![fl(-2.5)], Is(fl(-3.0))),
            ("round", vec![i(1250), i(-2)], Is(fl(1300.0))),
            ("round", vec![fl(1.5), i(400)], Is(fl(1.5))),
            ("round", vec![fl(1.5), NULL], Is(NULL)),
            ("sign", vec![fl(-0.1)], Is(i(-1))),
            ("sign", vec![i(0)], Is(i(0))),
            ("sign", vec![i(9)], Is(i(1))),
            ("sin", vec![i(0)], Is(fl(0.0))),
            ("sinh", vec![i(0)], Is(fl(0.0))),
            ("sqrt", vec![i(16)], Is(fl(4.0))),
            ("sqrt", vec![i(-1)], Fails("expected a positive number")),
            ("tan", vec![i(0)], Is(fl(0.0))),
            ("tanh", vec![i(0)], Is(fl(0.0))),
            // The docs' conv examples.
            ("conv", vec![s("a"), i(16), i(2)], Is(s("1010"))),
            ("conv", vec![s("6E"), i(18), i(8)], Is(s("172"))),
            ("conv", vec![i(-17), i(10), i(-18)], Is(s("-H"))),
            ("conv", vec![i(-1), i(10), i(16)], Is(s("FFFFFFFFFFFFFFFF"))),
            ("conv", vec![s(""), i(10), i(2)], Is(s("0"))),
            ("conv", vec![i(5), i(1), i(2)], Is(NULL)),
        ]);
    }

    #[test]
    fn rand_is_in_the_unit_interval_and_varies() {
        let rand = super::super::scalar("rand").unwrap().call;
        let draws: Vec<f64> = (0..100)
            .map(|_| match rand(&[]) {
                Ok(super::Value::Float(x)) => x,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(draws.windows(2).any(|w| w[0] != w[1]));
    }
}
