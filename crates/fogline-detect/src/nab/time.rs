//! Timestamps as NAB writes them: `YYYY-MM-DD HH:MM:SS`, optionally followed by a
//! fraction (`.000000`), no time zone. Parsed to whole seconds since
//! 1970-01-01 00:00:00 (the fraction is dropped; NAB's are always zero).

/// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]` to seconds since the Unix epoch.
/// Returns `None` for anything else.
///
/// # Example
/// ```
/// use fogline_detect::nab::time::parse;
/// assert_eq!(parse("1970-01-02 00:00:01"), Some(86_401));
/// assert_eq!(parse("2014-04-10 07:15:00.000000"), parse("2014-04-10 07:15:00"));
/// assert_eq!(parse("2014-13-10 07:15:00"), None);
/// ```
pub fn parse(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b' '
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    if b.len() > 19 && (b[19] != b'.' || !b[20..].iter().all(u8::is_ascii_digit)) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = &b[r];
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// well-known civil-date algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(parse("1970-01-01 00:00:00"), Some(0));
        assert_eq!(parse("2000-03-01 00:00:00"), Some(951_868_800));
        assert_eq!(parse("2014-07-01 00:30:00"), Some(1_404_174_600));
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "2014-07-01",
            "2014/07/01 00:00:00",
            "2014-07-01 24:00:00",
            "2014-07-01 00:00:00x",
        ] {
            assert_eq!(parse(s), None, "{s}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = parse(&s);
        }
    }
}
