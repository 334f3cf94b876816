//! The time family.

use super::{fl, i, run, s, Want::*, NULL};
use super::{scalar, SqlError, Value};
use crate::func::datetime;

fn call(name: &str, args: &[Value]) -> Result<Value, SqlError> {
    (scalar(name).unwrap().call)(args)
}

/// 2006-01-02T15:04:05.123Z, Go's reference time (a Monday), in milliseconds.
const REF: i64 = 1_136_214_245_123;

#[test]
fn time_table() {
    run(vec![
        // The docs' format_time examples, at UTC.
        (
            "format_time",
            vec![i(REF), s("YYYY-MM-dd T HH:mm:ss")],
            Is(s("2006-01-02 T 15:04:05")),
        ),
        (
            "format_time",
            vec![i(REF), s("YYYY/MM/dd HH:mm:ssSSS XXX")],
            Is(s("2006/01/02 15:04:05.123 +00:00")),
        ),
        (
            "format_time",
            vec![i(REF), s("yyyy-MM-ddTHH:mm:ssSS\\ZXX")],
            Is(s("2006-01-02T15:04:05.12Z+0000")),
        ),
        (
            "format_time",
            vec![i(REF), s("G yy M MMM MMMM d EEE EEEE h hh a m s z Z X")],
            Is(s(
                "AD 06 1 Jan January 2 Mon Monday 3 03 PM 4 5 UTC +0000 +00",
            )),
        ),
        (
            "format_time",
            vec![i(REF), s("'day' dd ''")],
            Is(s("day 02 '")),
        ),
        (
            "format_time",
            vec![s("2006-01-02 15:04:05"), s("yyyyMMddHHmmss")],
            Is(s("20060102150405")),
        ),
        (
            "format_time",
            vec![fl(0.0), s("yyyy-MM-dd")],
            Is(s("1970-01-01")),
        ),
        (
            "format_time",
            vec![i(REF), s("yyy")],
            Fails("invalid time format"),
        ),
        ("format_time", vec![i(REF), s("H")], Fails("hours are HH")),
        (
            "format_time",
            vec![s("soon"), s("yyyy")],
            Fails("cannot read \"soon\""),
        ),
        ("format_time", vec![NULL, s("yyyy")], Is(NULL)),
        (
            "date_calc",
            vec![s("2019-01-01"), s("1h30m10s")],
            Is(s("2019-01-01 01:30:10")),
        ),
        (
            "date_calc",
            vec![s("2019-01-01"), s("-1h30m")],
            Is(s("2018-12-31 22:30:00")),
        ),
        (
            "date_calc",
            vec![i(0), s("1.5h")],
            Is(s("1970-01-01 01:30:00")),
        ),
        ("date_calc", vec![i(0), s("1 day")], Fails("not a duration")),
        (
            "date_diff",
            vec![s("2024-02-27"), s("2024-03-01")],
            Is(i(3)),
        ),
        (
            "date_diff",
            vec![s("2024-03-01"), s("2024-02-27 12:00")],
            Is(i(-2)),
        ),
        ("day_name", vec![i(REF)], Is(s("Monday"))),
        ("day_of_week", vec![i(REF)], Is(i(2))),
        ("day_of_month", vec![i(REF)], Is(i(2))),
        ("day", vec![s("2024-12-31T23:59:59Z")], Is(i(31))),
        ("day_of_year", vec![s("2024-12-31")], Is(i(366))),
        ("hour", vec![s("2024-01-01T10:00:00+02:00")], Is(i(8))),
        ("minute", vec![i(REF)], Is(i(4))),
        ("second", vec![i(REF)], Is(i(5))),
        ("microsecond", vec![i(REF)], Is(i(123_000))),
        ("month", vec![i(REF)], Is(i(1))),
        ("month_name", vec![s("2024-02-10")], Is(s("February"))),
        ("last_day", vec![s("2024-02-10")], Is(s("2024-02-29"))),
        ("last_day", vec![s("2023-12-10")], Is(s("2023-12-31"))),
        ("from_days", vec![i(1)], Is(s("1970-01-01"))),
        ("from_days", vec![i(0)], Is(NULL)),
        (
            "from_unix_time",
            vec![i(1_136_214_245)],
            Is(s("2006-01-02 15:04:05")),
        ),
        ("from_unix_time", vec![i(0)], Is(NULL)),
        ("hour", vec![NULL], Is(NULL)),
        (
            "hour",
            vec![Value::Bool(true)],
            Fails("expected a datetime, found boolean"),
        ),
        ("now", vec![i(7)], Fails("fsp must be 0..=6")),
    ]);
}

#[test]
fn text_reads_as_ekuipers_default_formats_do() {
    let p = datetime::parse;
    assert_eq!(p("2006-01-02T15:04:05.123Z"), Some(REF));
    assert_eq!(p("2006-01-02 15:04:05.123456789 +0000 UTC"), Some(REF));
    assert_eq!(p("2006-01-02T17:04:05.123+02:00"), Some(REF));
    assert_eq!(p("2006-1-2 15:4:5.123"), Some(REF));
    assert_eq!(p("1970"), Some(0));
    assert_eq!(p("1970-01"), Some(0));
    assert_eq!(p("1969-12-31 23"), Some(-3_600_000));
    assert_eq!(p("2023-02-29"), None);
    assert_eq!(p("2023-01-01 25:00"), None);
    assert_eq!(p("yesterday"), None);
}

#[test]
fn now_has_the_documented_shape() {
    let shape = |v: Result<Value, SqlError>| match v {
        Ok(Value::Str(t)) => t
            .chars()
            .map(|c| if c.is_ascii_digit() { '9' } else { c })
            .collect::<String>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(shape(call("now", &[])), "9999-99-99 99:99:99");
    assert_eq!(shape(call("now", &[i(3)])), "9999-99-99 99:99:99.999");
    assert_eq!(shape(call("cur_time", &[])), "99:99:99");
    assert_eq!(shape(call("cur_date", &[])), "9999-99-99");
    let Ok(Value::Int(ms)) = call("tstamp", &[]) else {
        panic!("tstamp")
    };
    assert!(ms > REF, "the clock reads {ms}");
}
