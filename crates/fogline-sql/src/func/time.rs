//! Date and time functions (eKuiper: docs/en_US/sqls/functions/datetime_functions.md, and
//! `format_time` from string_functions.md). Datetime arguments are Int milliseconds since
//! the epoch, or text `datetime::parse` reads; everything is in UTC.

use std::time::{SystemTime, UNIX_EPOCH};

use super::datetime::{self, datetime, Civil, DAY_MS, MONTHS, NS, WEEKDAYS};
use super::{any_null, f, fail, int, text, Scalar};
use crate::error::SqlError;
use crate::value::Value;

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("cur_date", 0, 0, cur_date),
    f("cur_time", 0, 1, cur_time),
    f("current_date", 0, 0, cur_date),
    f("current_time", 0, 1, current_time),
    f("current_timestamp", 0, 1, current_timestamp),
    f("date_calc", 2, 2, date_calc),
    f("date_diff", 2, 2, date_diff),
    f("day", 1, 1, day),
    f("day_name", 1, 1, day_name),
    f("day_of_month", 1, 1, day_of_month),
    f("day_of_week", 1, 1, day_of_week),
    f("day_of_year", 1, 1, day_of_year),
    f("format_time", 2, 2, format_time),
    f("from_days", 1, 1, from_days),
    f("from_unix_time", 1, 1, from_unix_time),
    f("hour", 1, 1, hour),
    f("last_day", 1, 1, last_day),
    f("local_time", 0, 1, local_time),
    f("local_timestamp", 0, 1, local_timestamp),
    f("microsecond", 1, 1, microsecond),
    f("minute", 1, 1, minute),
    f("month", 1, 1, month),
    f("month_name", 1, 1, month_name),
    f("now", 0, 1, now),
    f("second", 1, 1, second),
    f("tstamp", 0, 0, tstamp),
];

const DATE: &str = "yyyy-MM-dd";
const DATE_TIME: &str = "yyyy-MM-dd HH:mm:ss";

/// Nanoseconds since the epoch, now.
fn clock() -> i128 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// `tstamp()`: milliseconds since the epoch, now (eKuiper lists it with other functions).
fn tstamp(_: &[Value]) -> R {
    Ok(Value::Int(clock().div_euclid(1_000_000) as i64))
}

fn show(name: &str, c: &Civil, pattern: &str) -> R {
    datetime::format(c, pattern)
        .map(Value::Str)
        .map_err(|e| fail(name, e))
}

/// The current time as `pattern` plus `fsp` (0..=6) fraction digits.
fn current(name: &str, args: &[Value], pattern: &str) -> R {
    let fsp = match args.first() {
        None | Some(Value::Null) => 0,
        Some(v) => int(name, v)?,
    };
    if !(0..=6).contains(&fsp) {
        return Err(fail(name, format_args!("fsp must be 0..=6, found {fsp}")));
    }
    let pattern = format!("{pattern}{}", "S".repeat(fsp as usize));
    show(name, &Civil::at_nanos(clock()), &pattern)
}

fn now(args: &[Value]) -> R {
    current("now", args, DATE_TIME)
}
fn current_timestamp(args: &[Value]) -> R {
    current("current_timestamp", args, DATE_TIME)
}
fn local_time(args: &[Value]) -> R {
    current("local_time", args, DATE_TIME)
}
fn local_timestamp(args: &[Value]) -> R {
    current("local_timestamp", args, DATE_TIME)
}
fn cur_time(args: &[Value]) -> R {
    current("cur_time", args, "HH:mm:ss")
}
fn current_time(args: &[Value]) -> R {
    current("current_time", args, "HH:mm:ss")
}
fn cur_date(_: &[Value]) -> R {
    current("cur_date", &[], DATE)
}

fn format_time(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let at = datetime("format_time", &args[0])?;
    let pattern = text("format_time", &args[1])?;
    show("format_time", &Civil::at_millis(at), pattern)
}

/// `date_calc(date, duration)`: the date moved by a Go duration (`-1h30m`), as text.
fn date_calc(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let at = datetime("date_calc", &args[0])?;
    let d = text("date_calc", &args[1])?;
    let ns = datetime::duration(d)
        .ok_or_else(|| fail("date_calc", format_args!("{d:?} is not a duration")))?;
    let moved = i128::from(at) * 1_000_000 + ns;
    show("date_calc", &Civil::at_nanos(moved), DATE_TIME)
}

/// `date_diff(date1, date2)`: whole days from date1 to date2 (eKuiper's docs say days).
fn date_diff(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let (a, b) = (
        datetime("date_diff", &args[0])?,
        datetime("date_diff", &args[1])?,
    );
    Ok(Value::Int((i128::from(b) - i128::from(a)) as i64 / DAY_MS))
}

/// One-datetime functions: NULL in, NULL out.
macro_rules! part {
    ($($fn:ident $name:literal |$c:ident| $body:expr;)*) => {$(
        fn $fn(args: &[Value]) -> R {
            if any_null(args) {
                return Ok(Value::Null);
            }
            let $c = Civil::at_millis(datetime($name, &args[0])?);
            Ok($body)
        }
    )*};
}

part! {
    day "day" |c| Value::Int(c.day.into());
    day_of_month "day_of_month" |c| Value::Int(c.day.into());
    day_name "day_name" |c| Value::Str(WEEKDAYS[c.weekday as usize].into());
    // Sunday is 1, as in eKuiper's docs.
    day_of_week "day_of_week" |c| Value::Int(i64::from(c.weekday) + 1);
    day_of_year "day_of_year" |c| Value::Int(c.yday.into());
    hour "hour" |c| Value::Int(c.hour.into());
    minute "minute" |c| Value::Int(c.minute.into());
    second "second" |c| Value::Int(c.second.into());
    microsecond "microsecond" |c| Value::Int((c.nanos / 1000).into());
    month "month" |c| Value::Int(c.month.into());
    month_name "month_name" |c| Value::Str(MONTHS[c.month as usize - 1].into());
    last_day "last_day" |c| {
        let d = datetime::days_in_month(c.year, c.month);
        Value::Str(format!("{:04}-{:02}-{d:02}", c.year, c.month))
    };
}

/// `from_days(n)`: the date n - 1 days after 1970-01-01 (as eKuiper computes it); 0 is NULL.
fn from_days(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let days = int("from_days", &args[0])?;
    if days == 0 {
        return Ok(Value::Null);
    }
    let at = (i128::from(days) - 1) * 86_400 * NS;
    show("from_days", &Civil::at_nanos(at), DATE)
}

/// `from_unix_time(seconds)` as `yyyy-MM-dd HH:mm:ss`; 0 is NULL (as in eKuiper).
fn from_unix_time(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let secs = int("from_unix_time", &args[0])?;
    if secs == 0 {
        return Ok(Value::Null);
    }
    show(
        "from_unix_time",
        &Civil::at_nanos(i128::from(secs) * NS),
        DATE_TIME,
    )
}
