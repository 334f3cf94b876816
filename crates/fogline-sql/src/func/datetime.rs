//! Datetimes for the time and conversion functions: civil dates, eKuiper's format letters,
//! text to datetime. A datetime is Int milliseconds since the epoch, in UTC (eKuiper uses
//! its configured time zone; fogline has one zone, UTC).

use super::{expected, fail};
use crate::error::SqlError;
use crate::value::Value;

/// Nanoseconds in a second, a millisecond, a day.
pub(super) const NS: i128 = 1_000_000_000;
const MS_NS: i128 = 1_000_000;
pub(super) const DAY_MS: i64 = 86_400_000;

/// A datetime argument: a bigint or float is milliseconds since the epoch; a string is
/// parsed (see [`parse`]).
pub(super) fn datetime(func: &str, v: &Value) -> Result<i64, SqlError> {
    match v {
        Value::Int(ms) => Ok(*ms),
        Value::Float(ms) if ms.is_finite() => Ok(*ms as i64),
        Value::Str(s) => {
            parse(s).ok_or_else(|| fail(func, format_args!("cannot read {s:?} as a datetime")))
        }
        v => Err(expected(func, "a datetime", v)),
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number from 1970-01-01: (year, month 1..=12, day 1..=31).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// A moment broken into its calendar fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// Nanoseconds within the second.
    pub nanos: u32,
    /// 0 = Sunday.
    pub weekday: u32,
    /// 1..=366.
    pub yday: u32,
}

impl Civil {
    /// From nanoseconds since the epoch. Days beyond ±2^40 (about 3 billion years) are
    /// taken as that bound, so the calendar arithmetic cannot overflow.
    pub fn at_nanos(t: i128) -> Civil {
        const LIMIT: i128 = 1 << 40;
        let days = t.div_euclid(NS * 86_400).clamp(-LIMIT, LIMIT) as i64;
        let rem = t.rem_euclid(NS * 86_400);
        let secs = (rem / NS) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            nanos: (rem % NS) as u32,
            weekday: (days + 4).rem_euclid(7) as u32,
            yday: (days - days_from_civil(year, 1, 1) + 1) as u32,
        }
    }

    /// From milliseconds since the epoch.
    pub fn at_millis(ms: i64) -> Civil {
        Civil::at_nanos(i128::from(ms) * MS_NS)
    }
}

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(super) const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Formats with eKuiper's pattern letters (Java-like: `yyyy-MM-dd HH:mm:ss`, `SSS` writes
/// `.` and that many fraction digits, `\x` and `'text'` are literal, other characters are
/// copied). Zone letters write UTC's.
pub(super) fn format(c: &Civil, pattern: &str) -> Result<String, String> {
    let p: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let bad = |what: &str| format!("invalid time format {pattern:?}: {what}");
    while i < p.len() {
        let r = p[i];
        // The run of this letter, capped where eKuiper caps it.
        let cap = match r {
            'Y' | 'y' | 'M' | 'E' => 4,
            'X' => 3,
            'd' | 'H' | 'h' | 'm' | 's' => 2,
            'S' => usize::MAX,
            _ => 1,
        };
        let mut n = 1;
        while n < cap && p.get(i + n) == Some(&r) {
            n += 1;
        }
        let h12 = if c.hour % 12 == 0 { 12 } else { c.hour % 12 };
        match (r, n) {
            ('\\', _) => {
                let lit = p.get(i + 1).ok_or_else(|| bad("a trailing \\"))?;
                out.push(*lit);
                i += 1;
            }
            ('\'', _) if p.get(i + 1) == Some(&'\'') => {
                out.push('\'');
                i += 1;
            }
            ('\'', _) => {
                let end = p[i + 1..].iter().position(|&q| q == '\'');
                let end = end.map_or(p.len(), |e| i + 1 + e);
                out.extend(&p[i + 1..end]);
                i = end;
            }
            ('Y' | 'y', 4) => out += &format!("{:04}", c.year),
            ('Y' | 'y', 2) => out += &format!("{:02}", c.year.rem_euclid(100)),
            ('Y' | 'y', _) => return Err(bad("years are yyyy or yy")),
            ('G', _) => out += "AD",
            ('M', 1) => out += &c.month.to_string(),
            ('M', 2) => out += &format!("{:02}", c.month),
            ('M', 3) => out += &MONTHS[c.month as usize - 1][..3],
            ('M', _) => out += MONTHS[c.month as usize - 1],
            ('d', 1) => out += &c.day.to_string(),
            ('d', _) => out += &format!("{:02}", c.day),
            ('E', 3) => out += &WEEKDAYS[c.weekday as usize][..3],
            ('E', 4) => out += WEEKDAYS[c.weekday as usize],
            ('E', _) => return Err(bad("weekdays are EEE or EEEE")),
            ('H', 2) => out += &format!("{:02}", c.hour),
            ('H', _) => return Err(bad("hours are HH")),
            ('h', 1) => out += &h12.to_string(),
            ('h', _) => out += &format!("{h12:02}"),
            ('a', _) => out += if c.hour < 12 { "AM" } else { "PM" },
            ('m', 1) => out += &c.minute.to_string(),
            ('m', _) => out += &format!("{:02}", c.minute),
            ('s', 1) => out += &c.second.to_string(),
            ('s', _) => out += &format!("{:02}", c.second),
            ('S', _) => {
                let digits = format!("{:09}", c.nanos);
                out.push('.');
                out.extend(digits.chars().chain(std::iter::repeat('0')).take(n));
            }
            ('z', _) => out += "UTC",
            ('Z', _) => out += "+0000",
            ('X', 1) => out += "+00",
            ('X', 2) => out += "+0000",
            ('X', _) => out += "+00:00",
            (other, _) => out.push(other),
        }
        i += n;
    }
    Ok(out)
}

/// Reads a datetime from text, to milliseconds since the epoch. Accepts what eKuiper's
/// default formats do for dates with a year: `2006`, `2006-1`, `2006-1-2`, then optionally
/// (after a space or `T`) `15`, `15:4`, `15:4:5`, `15:4:5.999999999`, then optionally a
/// zone (`Z`, `+07`, `-0700`, `-07:00`) and a zone name, which is ignored. Without a zone,
/// UTC.
pub(super) fn parse(text: &str) -> Option<i64> {
    let mut s = Scanner(text.trim().as_bytes());
    let year = s.number(4, 4)?;
    let (mut month, mut day) = (1, 1);
    if s.eat(b'-') {
        month = s.number(1, 2)?;
        if s.eat(b'-') {
            day = s.number(1, 2)?;
        }
    }
    let (mut hour, mut minute, mut second, mut nanos) = (0, 0, 0, 0i64);
    if s.eat(b'T') || (s.peek_at(1).is_some_and(|c| c.is_ascii_digit()) && s.eat(b' ')) {
        hour = s.number(1, 2)?;
        if s.eat(b':') {
            minute = s.number(1, 2)?;
            if s.eat(b':') {
                second = s.number(1, 2)?;
                if s.eat(b'.') {
                    let start = s.0;
                    let frac = s.number(1, 9)?;
                    let len = start.len() - s.0.len();
                    nanos = frac * 10i64.pow(9 - len as u32);
                }
            }
        }
    }
    s.spaces();
    let mut offset = 0i64;
    let zulu = s.eat(b'Z');
    if let (false, Some(sign @ (b'+' | b'-'))) = (zulu, s.peek_at(0)) {
        s.0 = &s.0[1..];
        let hh = s.number(2, 2)?;
        s.eat(b':');
        let mm = if s.peek_at(0).is_some_and(|c| c.is_ascii_digit()) {
            s.number(2, 2)?
        } else {
            0
        };
        offset = (hh * 60 + mm) * 60_000 * if sign == b'-' { -1 } else { 1 };
    }
    s.spaces();
    while s.peek_at(0).is_some_and(|c| c.is_ascii_alphabetic()) {
        s.0 = &s.0[1..];
    }
    let valid = (1..=12).contains(&month)
        && (1..=days_in_month(year, month as u32) as i64).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60;
    if !s.0.is_empty() || !valid {
        return None;
    }
    let days = days_from_civil(year, month as u32, day as u32);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(secs * 1000 + nanos / 1_000_000 - offset)
}

pub(super) fn days_in_month(year: i64, month: u32) -> u32 {
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (days_from_civil(ny, nm, 1) - days_from_civil(year, month, 1)) as u32
}

struct Scanner<'a>(&'a [u8]);

impl Scanner<'_> {
    fn peek_at(&self, i: usize) -> Option<u8> {
        self.0.get(i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.0.first() == Some(&c);
        if hit {
            self.0 = &self.0[1..];
        }
        hit
    }
    fn spaces(&mut self) {
        while self.eat(b' ') {}
    }
    /// `min..=max` decimal digits.
    fn number(&mut self, min: usize, max: usize) -> Option<i64> {
        let n = self
            .0
            .iter()
            .take(max)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n < min {
            return None;
        }
        let v = std::str::from_utf8(&self.0[..n]).ok()?.parse().ok()?;
        self.0 = &self.0[n..];
        Some(v)
    }
}

/// Go's duration syntax (`1h30m`, `-1.5s`, `200us`) to nanoseconds.
pub(super) fn duration(text: &str) -> Option<i128> {
    let (neg, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total: f64 = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * unit;
    }
    let ns = total.round() as i128;
    Some(if neg { -ns } else { ns })
}
