//! The lexical layer both parsers share: terms, attribute names, quoted and unquoted values,
//! numbers and points.

use crate::error::{ErrorKind, ParseError};
use crate::model::GeoPoint;

/// Whether `c` may appear in an attribute name (anywhere but first: `@` is allowed there too).
pub fn attribute_char(c: char) -> bool {
    !(c.is_whitespace() || c.is_control() || matches!(c, '=' | '~' | '"' | '\\' | '*' | '?'))
}

/// [`attribute_char`] of each ASCII character.
const ASCII_ATTRIBUTE: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8 as char;
        // `attribute_char` for ASCII: whitespace and controls are `..= ' '` and DEL.
        t[b] = !(c.is_ascii_whitespace()
            || c.is_ascii_control()
            || c == ' '
            || matches!(c, '=' | '~' | '"' | '\\' | '*' | '?'));
        b += 1;
    }
    t
};

/// Whether `s` is a valid attribute name: non-empty, [`attribute_char`]s, not starting with `@`.
pub fn valid_attribute(s: &str) -> bool {
    if s.is_empty() || s.starts_with('@') {
        return false;
    }
    if s.is_ascii() {
        // Byte by byte through a table, without decoding (the store's indexer runs this on
        // every header of every record).
        return s.bytes().all(|b| ASCII_ATTRIBUTE[usize::from(b)]);
    }
    s.chars().all(attribute_char)
}

/// A number as profiles and interests write it: `[+-]digits[.digits][(e|E)[+-]digits]`,
/// finite. No `inf`, `nan`, `.5` or `5.`; no surrounding whitespace.
pub fn parse_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    if !digits(&mut i) {
        return None;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return None;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A point `lat,lon` (no spaces), latitude within -90..=90 and longitude within -180..=180;
/// `None` otherwise. Data profile values are read with this.
pub fn parse_point(s: &str) -> Option<GeoPoint> {
    point(s).ok()
}

/// [`parse_point`] with the reason it failed.
pub(crate) fn point(s: &str) -> Result<GeoPoint, ErrorKind> {
    let bad = || ErrorKind::Point(s.to_string());
    let (lat, lon) = s.split_once(',').ok_or_else(bad)?;
    let lat = parse_number(lat).ok_or_else(bad)?;
    let lon = parse_number(lon).ok_or_else(bad)?;
    if !(-90.0..=90.0).contains(&lat) {
        return Err(ErrorKind::Latitude(lat));
    }
    if !(-180.0..=180.0).contains(&lon) {
        return Err(ErrorKind::Longitude(lon));
    }
    Ok(GeoPoint { lat, lon })
}

/// A value as written: its characters after unquoting, each marked when it was escaped.
pub(crate) struct Value {
    /// Byte offset of the value's first character (its quote, when quoted).
    pub start: usize,
    /// Written in double quotes.
    pub quoted: bool,
    /// `(character, escaped with \)`.
    pub chars: Vec<(char, bool)>,
}

impl Value {
    /// The value's text with escapes resolved.
    pub fn text(&self) -> String {
        self.chars.iter().map(|&(c, _)| c).collect()
    }
}

/// A cursor over the text being parsed.
pub(crate) struct Lexer<'a> {
    pub src: &'a str,
    pub pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    pub fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips whitespace; the start of the next term, or `None` at the end.
    pub fn next_term(&mut self) -> Option<usize> {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
        (self.pos < self.src.len()).then_some(self.pos)
    }

    /// An error in the term starting at `start`.
    pub fn error(&self, start: usize, position: usize, kind: ErrorKind) -> ParseError {
        ParseError {
            position,
            term: self.src[start..term_end(self.src, start)].to_string(),
            kind,
        }
    }

    /// An attribute name, up to whitespace, `=` or (when `tilde_ends`) `~`.
    pub fn attribute(&mut self, start: usize, tilde_ends: bool) -> Result<&'a str, ParseError> {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == '=' || (tilde_ends && c == '~') {
                break;
            }
            if !attribute_char(c) || (c == '@' && self.pos == start) {
                return Err(self.error(start, self.pos, ErrorKind::AttributeChar(c)));
            }
            self.bump();
        }
        if self.pos == start {
            return Err(self.error(start, start, ErrorKind::EmptyAttribute));
        }
        Ok(&self.src[start..self.pos])
    }

    /// A value, quoted or not, up to whitespace or the end; `\` makes the next character
    /// literal in both.
    pub fn value(&mut self, term: usize) -> Result<Value, ParseError> {
        let start = self.pos;
        let quoted = match self.peek() {
            None => return Err(self.error(term, start, ErrorKind::EmptyValue)),
            Some(c) if c.is_whitespace() => {
                return Err(self.error(term, start, ErrorKind::EmptyValue))
            }
            Some('"') => {
                self.bump();
                true
            }
            Some(_) => false,
        };
        let mut chars = Vec::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None if quoted => {
                    return Err(self.error(term, start, ErrorKind::UnterminatedQuote))
                }
                None => break,
                Some('\\') => match self.bump() {
                    Some(c) => chars.push((c, true)),
                    None if quoted => {
                        return Err(self.error(term, start, ErrorKind::UnterminatedQuote))
                    }
                    None => return Err(self.error(term, at, ErrorKind::DanglingEscape)),
                },
                Some('"') if quoted => break,
                Some(c) if quoted => chars.push((c, false)),
                Some(c) if c.is_whitespace() => {
                    self.pos = at;
                    break;
                }
                Some(c @ ('"' | '=')) => return Err(self.error(term, at, ErrorKind::ValueChar(c))),
                Some(c) => chars.push((c, false)),
            }
        }
        if quoted && self.peek().is_some_and(|c| !c.is_whitespace()) {
            return Err(self.error(term, self.pos, ErrorKind::AfterQuote));
        }
        Ok(Value {
            start,
            quoted,
            chars,
        })
    }
}

/// Where the term starting at `start` ends: the first whitespace outside quotes.
fn term_end(src: &str, start: usize) -> usize {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in src[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return start + i,
            _ => {}
        }
    }
    src.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The byte-wise ASCII path agrees with the definition by characters.
        #[test]
        fn valid_attribute_is_its_definition(s in "[ -~\\t\\n\\x7f\\x00@=é京 ]{0,6}") {
            let by_chars = !s.is_empty() && !s.starts_with('@') && s.chars().all(attribute_char);
            proptest::prop_assert_eq!(valid_attribute(&s), by_chars);
        }
    }

    #[test]
    fn the_ascii_table_is_attribute_char() {
        for b in 0..128u8 {
            assert_eq!(
                ASCII_ATTRIBUTE[usize::from(b)],
                attribute_char(char::from(b)),
                "{b:#x}"
            );
        }
    }

    #[test]
    fn attribute_names() {
        for ok in ["a", "sensor", "城", "a.b-c_d", "x@y"] {
            assert!(valid_attribute(ok), "{ok}");
        }
        for bad in [
            "", "@a", "a b", "a=b", "a~", "a\"", "a\\", "a*", "a?", "a\u{7f}", "a\t",
        ] {
            assert!(!valid_attribute(bad), "{bad:?}");
        }
    }
}
