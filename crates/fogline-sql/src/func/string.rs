//! String functions (eKuiper: docs/en_US/sqls/functions/string_functions.md).
//!
//! Positions and lengths count characters, not bytes (eKuiper's `substring` and
//! `indexof` count bytes, which only differs on non-ASCII text and can split a character).
//! Regular expressions are RE2 syntax, as in eKuiper (Go's `regexp`), run by the `regex`
//! crate, whose syntax is RE2's.

use std::cell::RefCell;

use regex::Regex;

use super::{any_null, expected, f, fail, int, num, text, to_text, Scalar, MANY};
use crate::error::SqlError;
use crate::value::Value;

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("concat", 1, MANY, concat),
    f("endswith", 2, 2, endswith),
    f("format", 2, 3, format),
    f("indexof", 2, 2, indexof),
    f("length", 1, 1, length),
    f("lower", 1, 1, lower),
    f("lpad", 2, 2, lpad),
    f("ltrim", 1, 1, ltrim),
    f("numbytes", 1, 1, numbytes),
    f("regexp_matches", 2, 2, regexp_matches),
    f("regexp_replace", 3, 3, regexp_replace),
    f("regexp_substr", 2, 2, regexp_substr),
    f("regexp_substring", 2, 2, regexp_substring),
    f("reverse", 1, 1, reverse),
    f("rpad", 2, 2, rpad),
    f("rtrim", 1, 1, rtrim),
    f("split_value", 3, 3, split_value),
    f("startswith", 2, 2, startswith),
    f("substring", 2, 3, substring),
    f("trim", 1, 1, trim),
    f("upper", 1, 1, upper),
];

/// The most padding `lpad`/`rpad` add: eKuiper has no bound and warns about memory; a
/// bound keeps one bad record from exhausting an edge node.
const MAX_PAD: i64 = 1 << 20;

/// Strings and arrays concatenate; NULL counts as an empty string (as in eKuiper). When
/// every non-NULL argument is an array the result is their concatenation.
fn concat(args: &[Value]) -> R {
    let mut present = args.iter().filter(|v| !v.is_null()).peekable();
    if present.peek().is_some() && present.clone().all(|v| matches!(v, Value::Array(_))) {
        let items = present.flat_map(|v| match v {
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        });
        return Ok(Value::Array(items.collect()));
    }
    let mut out = String::new();
    for v in args {
        match v {
            Value::Array(_) | Value::Object(_) => return Err(expected("concat", "a string", v)),
            v => out.push_str(&to_text(v)),
        }
    }
    Ok(Value::Str(out))
}

/// One-string-in functions: NULL in, NULL out.
macro_rules! string_map {
    ($($fn:ident $name:literal $op:expr;)*) => {$(
        fn $fn(args: &[Value]) -> R {
            if any_null(args) {
                return Ok(Value::Null);
            }
            let op: fn(&str) -> String = $op;
            Ok(Value::Str(op(text($name, &args[0])?)))
        }
    )*};
}

string_map! {
    lower "lower" str::to_lowercase;
    upper "upper" str::to_uppercase;
    trim "trim" |s| s.trim().to_owned();
    ltrim "ltrim" |s| s.trim_start().to_owned();
    rtrim "rtrim" |s| s.trim_end().to_owned();
    reverse "reverse" |s| s.chars().rev().collect();
}

/// Two-string predicates: false when either is NULL (as in eKuiper).
macro_rules! string_test {
    ($($fn:ident $name:literal $op:expr;)*) => {$(
        fn $fn(args: &[Value]) -> R {
            if any_null(args) {
                return Ok(Value::Bool(false));
            }
            let op: fn(&str, &str) -> bool = $op;
            Ok(Value::Bool(op(text($name, &args[0])?, text($name, &args[1])?)))
        }
    )*};
}

string_test! {
    endswith "endswith" |a, b| a.ends_with(b);
    startswith "startswith" |a, b| a.starts_with(b);
}

/// The character index of the first occurrence, or -1 (also for NULL).
fn indexof(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Int(-1));
    }
    let (hay, needle) = (text("indexof", &args[0])?, text("indexof", &args[1])?);
    Ok(Value::Int(match hay.find(needle) {
        Some(at) => hay[..at].chars().count() as i64,
        None => -1,
    }))
}

/// Characters of a string, members of an array or struct, bytes of a bytea; NULL is 0.
fn length(args: &[Value]) -> R {
    let n = match &args[0] {
        Value::Null => 0,
        Value::Str(s) => s.chars().count(),
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        Value::Bytes(b) => b.len(),
        v => to_text(v).chars().count(),
    };
    Ok(Value::Int(n as i64))
}

/// UTF-8 bytes of a string; NULL is 0.
fn numbytes(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Int(0));
    }
    Ok(Value::Int(text("numbytes", &args[0])?.len() as i64))
}

fn pad_width(name: &str, v: &Value) -> Result<usize, SqlError> {
    let n = int(name, v)?;
    if !(0..=MAX_PAD).contains(&n) {
        return Err(fail(
            name,
            format_args!("padding must be 0..={MAX_PAD}, found {n}"),
        ));
    }
    Ok(n as usize)
}

/// `lpad(s, n)`: n spaces, then s.
fn lpad(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let s = text("lpad", &args[0])?;
    Ok(Value::Str(" ".repeat(pad_width("lpad", &args[1])?) + s))
}

/// `rpad(s, n)`: s, then n spaces.
fn rpad(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let s = text("rpad", &args[0])?;
    Ok(Value::Str(
        s.to_owned() + &" ".repeat(pad_width("rpad", &args[1])?),
    ))
}

/// Compiles a pattern, caching the last few per thread: rules reuse one literal pattern
/// for every record, and compiling is far dearer than matching.
fn with_regex<T>(
    name: &str,
    pattern: &str,
    use_it: impl FnOnce(&Regex) -> T,
) -> Result<T, SqlError> {
    const KEEP: usize = 16;
    thread_local! {
        static CACHE: RefCell<Vec<(String, Regex)>> = const { RefCell::new(Vec::new()) };
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let at = match cache.iter().position(|(p, _)| p == pattern) {
            Some(at) => at,
            None => {
                let re = Regex::new(pattern).map_err(|e| fail(name, e))?;
                if cache.len() == KEEP {
                    cache.remove(0);
                }
                cache.push((pattern.to_owned(), re));
                cache.len() - 1
            }
        };
        Ok(use_it(&cache[at].1))
    })
}

/// True when the string contains a match; false when either argument is NULL.
fn regexp_matches(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Bool(false));
    }
    let name = "regexp_matches";
    let (s, p) = (text(name, &args[0])?, text(name, &args[1])?);
    with_regex(name, p, |re| Value::Bool(re.is_match(s)))
}

/// Replaces every match; `$1` and `${name}` in the replacement expand as in Go.
fn regexp_replace(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let name = "regexp_replace";
    let (s, p, with) = (
        text(name, &args[0])?,
        text(name, &args[1])?,
        text(name, &args[2])?,
    );
    with_regex(name, p, |re| {
        Value::Str(re.replace_all(s, with).into_owned())
    })
}

/// The first match, or an empty string when none (as Go's `FindString`).
fn first_match(name: &str, args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let (s, p) = (text(name, &args[0])?, text(name, &args[1])?);
    with_regex(name, p, |re| {
        Value::Str(re.find(s).map_or("", |m| m.as_str()).to_owned())
    })
}

/// eKuiper registers this name; its docs say `regexp_substring`. Both are here.
fn regexp_substr(args: &[Value]) -> R {
    first_match("regexp_substr", args)
}

fn regexp_substring(args: &[Value]) -> R {
    first_match("regexp_substring", args)
}

/// `split_value(s, sep, i)`: the i-th piece (negative i counts from the end).
fn split_value(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let name = "split_value";
    let (s, sep, i) = (
        text(name, &args[0])?,
        text(name, &args[1])?,
        int(name, &args[2])?,
    );
    // Go splits on an empty separator into characters; so do we.
    let pieces: Vec<String> = if sep.is_empty() {
        s.chars().map(String::from).collect()
    } else {
        s.split(sep).map(str::to_owned).collect()
    };
    let n = pieces.len() as i64;
    let at = if i < 0 { n + i } else { i };
    if !(0..n).contains(&at) {
        return Err(fail(name, format_args!("index {i} outside the {n} pieces")));
    }
    Ok(Value::Str(pieces[at as usize].clone()))
}

/// `substring(s, start[, end])`: characters `start..end` (0-based, end exclusive, as
/// eKuiper implements it; its docs call the third argument a length). Ranges past the
/// end are clipped.
fn substring(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let name = "substring";
    let s = text(name, &args[0])?;
    let start = int(name, &args[1])?;
    let end = match args.get(2) {
        Some(e) => int(name, e)?,
        None => i64::MAX,
    };
    if start < 0 || end < 0 {
        return Err(fail(name, "indexes must not be negative"));
    }
    if start > end {
        return Err(fail(name, "the start index is past the end index"));
    }
    let taken = s.chars().skip(start as usize).take((end - start) as usize);
    Ok(Value::Str(taken.collect()))
}

/// `format(x, d[, locale])`: x rounded to d decimals. Without a locale there is no digit
/// grouping; the locales of eKuiper's documented examples group as documented.
fn format(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let x = num("format", &args[0])?;
    let d = int("format", &args[1])?;
    if !(0..=100).contains(&d) {
        return Err(fail(
            "format",
            format_args!("decimal places must be 0..=100, found {d}"),
        ));
    }
    let (group, point) = match args.get(2) {
        None => ("", "."),
        Some(l) => match text("format", l)? {
            l if l.starts_with("en_") || l.starts_with("zh_") => (",", "."),
            "de_DE" => (".", ","),
            "de_CH" => ("'", "."),
            l => return Err(fail("format", format_args!("locale {l} is not supported"))),
        },
    };
    let plain = std::format!("{x:.*}", d as usize);
    let (sign, plain) = match plain.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", plain.as_str()),
    };
    let (whole, frac) = plain.split_once('.').unwrap_or((plain, ""));
    let mut out = String::from(sign);
    for (k, c) in whole.chars().enumerate() {
        if k > 0 && (whole.len() - k) % 3 == 0 {
            out.push_str(group);
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push_str(point);
        out.push_str(frac);
    }
    Ok(Value::Str(out))
}
