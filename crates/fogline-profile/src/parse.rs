//! Parsing data profiles and interests from text (grammar: `docs/PROFILES.md`).

use std::str::FromStr;

use crate::error::{ErrorKind, ParseError};
use crate::lex::{attribute_char, parse_number, point, Lexer, Value};
use crate::model::{DataProfile, Interest, Predicate, Term};

impl DataProfile {
    /// Parses `attr` and `attr=value` items separated by whitespace. Values may be quoted
    /// (`name="big drone"`); `\` makes the next character literal. A repeated attribute keeps
    /// its first position and takes the later value.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut lx = Lexer::new(text);
        let mut profile = DataProfile::default();
        while let Some(start) = lx.next_term() {
            let attribute = lx.attribute(start, false)?;
            let value = if lx.peek() == Some('=') {
                lx.pos += 1;
                Some(lx.value(start)?.text())
            } else {
                None
            };
            profile.set(attribute.to_string(), value);
        }
        Ok(profile)
    }

    /// A profile from `(attribute, value)` pairs; a repeated attribute as in
    /// [`DataProfile::parse`]. Fails on an attribute name the text form cannot carry.
    pub fn from_pairs<I, A, V>(pairs: I) -> Result<Self, ParseError>
    where
        I: IntoIterator<Item = (A, Option<V>)>,
        A: Into<String>,
        V: Into<String>,
    {
        let mut profile = DataProfile::default();
        for (attribute, value) in pairs {
            profile.insert(attribute, value.map(Into::into))?;
        }
        Ok(profile)
    }

    /// Sets `attribute` (replacing its value when present) after checking its name.
    pub fn insert(
        &mut self,
        attribute: impl Into<String>,
        value: Option<String>,
    ) -> Result<(), ParseError> {
        let attribute = attribute.into();
        check_attribute(&attribute)?;
        self.set(attribute, value);
        Ok(())
    }

    fn set(&mut self, attribute: String, value: Option<String>) {
        match self.pairs.iter_mut().find(|(a, _)| *a == attribute) {
            Some((_, v)) => *v = value,
            None => self.pairs.push((attribute, value)),
        }
    }
}

fn check_attribute(attribute: &str) -> Result<(), ParseError> {
    let error = |position, kind| ParseError {
        position,
        term: attribute.to_string(),
        kind,
    };
    if attribute.is_empty() {
        return Err(error(0, ErrorKind::EmptyAttribute));
    }
    for (i, c) in attribute.char_indices() {
        if !attribute_char(c) || (i == 0 && c == '@') {
            return Err(error(i, ErrorKind::AttributeChar(c)));
        }
    }
    Ok(())
}

impl Interest {
    /// Parses whitespace-separated terms (`attr`, `attr=value`, `attr~lat,lon,radius`) and at
    /// most one topic filter (`@site/+/lidar`). See `docs/PROFILES.md`.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        Self::parse_with(text, true)
    }

    /// Parses the terms of an interest whose topic filter is given elsewhere (a
    /// subscription's own filter, a stream's subjects): as [`Interest::parse`], but an
    /// `@topic` term is an error ([`ErrorKind::TopicHere`]).
    pub fn parse_terms(text: &str) -> Result<Self, ParseError> {
        Self::parse_with(text, false)
    }

    fn parse_with(text: &str, topic_allowed: bool) -> Result<Self, ParseError> {
        let mut lx = Lexer::new(text);
        let mut interest = Interest::default();
        while let Some(start) = lx.next_term() {
            if lx.peek() == Some('@') {
                if !topic_allowed {
                    return Err(lx.error(start, start, ErrorKind::TopicHere));
                }
                if interest.topic.is_some() {
                    return Err(lx.error(start, start, ErrorKind::SecondTopic));
                }
                interest.topic = Some(topic(&mut lx, start)?);
                continue;
            }
            let attribute = lx.attribute(start, true)?.to_string();
            let predicate = match lx.peek() {
                Some('=') => {
                    lx.pos += 1;
                    let value = lx.value(start)?;
                    classify(&lx, start, &value)?
                }
                Some('~') => {
                    lx.pos += 1;
                    let value = lx.value(start)?;
                    near(&lx, start, &value)?
                }
                _ => Predicate::Present,
            };
            interest.terms.push(Term {
                attribute,
                predicate,
            });
        }
        Ok(interest)
    }
}

fn topic(lx: &mut Lexer<'_>, start: usize) -> Result<String, ParseError> {
    lx.pos += 1;
    if lx.peek().is_none_or(char::is_whitespace) {
        let e = ErrorKind::Topic(fogline_wire::TopicError::Empty);
        return Err(lx.error(start, lx.pos, e));
    }
    let value = lx.value(start)?;
    let filter = value.text();
    fogline_wire::validate_filter(&filter)
        .map_err(|e| lx.error(start, value.start, ErrorKind::Topic(e)))?;
    Ok(filter)
}

/// One piece of an unquoted keyword value: `*`, `?` or a literal character.
#[derive(Clone, Copy, PartialEq)]
enum Piece {
    Star,
    One,
    Lit(char),
}

/// What an `attr=value` term means: quoted = exact; unescaped `*`/`?` = a pattern; `..` =
/// a range or a box; otherwise exact.
fn classify(lx: &Lexer<'_>, term: usize, value: &Value) -> Result<Predicate, ParseError> {
    if value.quoted {
        return Ok(Predicate::Exact(value.text()));
    }
    let pieces: Vec<Piece> = value
        .chars
        .iter()
        .map(|&(c, escaped)| match c {
            '*' if !escaped => Piece::Star,
            '?' if !escaped => Piece::One,
            c => Piece::Lit(c),
        })
        .collect();
    let literal = |ps: &[Piece]| -> Option<String> {
        ps.iter()
            .map(|p| match p {
                Piece::Lit(c) => Some(*c),
                _ => None,
            })
            .collect()
    };
    if let Some(text) = literal(&pieces) {
        return if text.contains("..") {
            range_or_box(lx, term, value.start, &text)
        } else {
            Ok(Predicate::Exact(text))
        };
    }
    if pieces == [Piece::Star] {
        return Ok(Predicate::Present);
    }
    if let Some((Piece::Star, init)) = pieces.split_last() {
        if let Some(prefix) = literal(init) {
            return Ok(Predicate::Prefix(prefix));
        }
    }
    if let Some((Piece::Star, tail)) = pieces.split_first() {
        if let Some(suffix) = literal(tail) {
            return Ok(Predicate::Suffix(suffix));
        }
    }
    let mut pattern = String::new();
    for p in pieces {
        match p {
            Piece::Star => pattern.push('*'),
            Piece::One => pattern.push('?'),
            Piece::Lit(c) => {
                if matches!(c, '*' | '?' | '\\') {
                    pattern.push('\\');
                }
                pattern.push(c);
            }
        }
    }
    Ok(Predicate::Wildcard(pattern))
}

fn range_or_box(
    lx: &Lexer<'_>,
    term: usize,
    at: usize,
    text: &str,
) -> Result<Predicate, ParseError> {
    let fail = |kind| lx.error(term, at, kind);
    let (low, high) = text.split_once("..").expect("caller saw `..`");
    if low.contains(',') || high.contains(',') {
        let south_west = point(low).map_err(fail)?;
        let north_east = point(high).map_err(fail)?;
        if south_west.lat > north_east.lat {
            let (south, north) = (south_west.lat, north_east.lat);
            return Err(fail(ErrorKind::BoxReversed { south, north }));
        }
        return Ok(Predicate::GeoBox {
            south_west,
            north_east,
        });
    }
    let bound = |s: &str| match s {
        "" => Ok(None),
        s => parse_number(s)
            .map(Some)
            .ok_or_else(|| fail(ErrorKind::Number(s.to_string()))),
    };
    let (low, high) = (bound(low)?, bound(high)?);
    if let (Some(low), Some(high)) = (low, high) {
        if low > high {
            return Err(fail(ErrorKind::RangeReversed { low, high }));
        }
    }
    Ok(Predicate::Range { low, high })
}

fn near(lx: &Lexer<'_>, term: usize, value: &Value) -> Result<Predicate, ParseError> {
    let fail = |kind| lx.error(term, value.start, kind);
    if value.quoted {
        return Err(fail(ErrorKind::Quoted));
    }
    let text = value.text();
    let bad = || fail(ErrorKind::Near(text.clone()));
    let (center, radius) = text.rsplit_once(',').ok_or_else(bad)?;
    if !center.contains(',') {
        return Err(bad());
    }
    let center = point(center).map_err(fail)?;
    let (number, unit) = match radius.strip_suffix("km") {
        Some(n) => (n, 1000.0),
        None => (radius.strip_suffix('m').unwrap_or(radius), 1.0),
    };
    let radius_m = parse_number(number)
        .map(|n| n * unit)
        .filter(|r| *r > 0.0 && r.is_finite())
        .ok_or_else(|| fail(ErrorKind::Radius(radius.to_string())))?;
    Ok(Predicate::Near { center, radius_m })
}

impl FromStr for DataProfile {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        Self::parse(s)
    }
}

impl FromStr for Interest {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        Self::parse(s)
    }
}
