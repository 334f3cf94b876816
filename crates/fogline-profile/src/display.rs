//! The text form of profiles and interests; `parse(x.to_string()) == x` for anything the
//! parsers produce.

use std::fmt::{self, Display, Formatter, Write};

use crate::model::{DataProfile, GeoPoint, Interest, Predicate, Term};

/// A number in the shortest form that reads back exactly and fits the number grammar.
pub(crate) struct Num(pub f64);

impl Display for Num {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let a = self.0.abs();
        // Plain decimals stay readable in this band; outside it they run to hundreds of digits.
        if a == 0.0 || (1e-5..1e16).contains(&a) {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

impl Display for GeoPoint {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", Num(self.lat), Num(self.lon))
    }
}

/// `s` in double quotes, `"` and `\` escaped.
fn quoted(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('"')
}

/// Whether `c` must be escaped (or the value quoted) in an unquoted value.
fn special(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\\' | '=' | '*' | '?')
}

/// A value: unquoted when it reads back as itself, quoted otherwise.
fn value(f: &mut Formatter<'_>, s: &str, keyword: bool) -> fmt::Result {
    let plain = !s.is_empty()
        && !s.starts_with('"')
        && !s
            .chars()
            .any(|c| special(c) && (keyword || !matches!(c, '*' | '?')))
        && (!keyword || !s.contains(".."));
    if plain {
        f.write_str(s)
    } else {
        quoted(f, s)
    }
}

/// Literal characters of a pattern, each special one escaped.
fn literal(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    for c in s.chars() {
        if special(c) {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    Ok(())
}

impl Display for DataProfile {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, (attribute, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            f.write_str(attribute)?;
            if let Some(v) = v {
                f.write_char('=')?;
                value(f, v, false)?;
            }
        }
        Ok(())
    }
}

impl Display for Term {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.attribute)?;
        match &self.predicate {
            Predicate::Present => Ok(()),
            Predicate::Exact(s) => {
                f.write_char('=')?;
                value(f, s, true)
            }
            Predicate::Prefix(p) => {
                f.write_char('=')?;
                literal(f, p)?;
                f.write_char('*')
            }
            Predicate::Suffix(s) => {
                f.write_str("=*")?;
                literal(f, s)
            }
            Predicate::Wildcard(pattern) => {
                f.write_char('=')?;
                let mut chars = pattern.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '*' | '?' => f.write_char(c)?,
                        // Already escaped in the pattern: keep it so.
                        '\\' => match chars.next() {
                            Some(c) => write!(f, "\\{c}")?,
                            None => f.write_str("\\\\")?,
                        },
                        c => literal(f, c.encode_utf8(&mut [0; 4]))?,
                    }
                }
                Ok(())
            }
            Predicate::Range { low, high } => {
                f.write_char('=')?;
                if let Some(low) = low {
                    write!(f, "{}", Num(*low))?;
                }
                f.write_str("..")?;
                match high {
                    Some(high) => write!(f, "{}", Num(*high)),
                    None => Ok(()),
                }
            }
            Predicate::GeoBox {
                south_west,
                north_east,
            } => write!(f, "={south_west}..{north_east}"),
            Predicate::Near { center, radius_m } => {
                // Whole kilometres read better as km; anything else stays exact in metres.
                let km = radius_m / 1000.0;
                if *radius_m >= 1000.0 && radius_m % 1000.0 == 0.0 && km * 1000.0 == *radius_m {
                    write!(f, "~{center},{}km", Num(km))
                } else {
                    write!(f, "~{center},{}m", Num(*radius_m))
                }
            }
        }
    }
}

impl Display for Interest {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut first = true;
        if let Some(topic) = &self.topic {
            f.write_char('@')?;
            value(f, topic, false)?;
            first = false;
        }
        for term in &self.terms {
            if !first {
                f.write_char(' ')?;
            }
            write!(f, "{term}")?;
            first = false;
        }
        Ok(())
    }
}
