//! Parse errors: where (byte offset and the whole term) and what was expected.

use std::fmt;

/// A profile or interest that does not parse.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("in `{term}` at byte {position}: {kind}")]
pub struct ParseError {
    /// Byte offset into the parsed text where the problem is.
    pub position: usize,
    /// The term (whitespace-separated item) the problem is in.
    pub term: String,
    /// What was wrong, and what was expected instead.
    pub kind: ErrorKind,
}

/// What went wrong while parsing.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorKind {
    /// A term with no attribute name (`=x`).
    EmptyAttribute,
    /// A character that may not appear in an attribute name (or `@` leading one in a profile).
    AttributeChar(char),
    /// `attr=` with nothing after `=`.
    EmptyValue,
    /// A quoted value with no closing quote.
    UnterminatedQuote,
    /// Something other than whitespace right after a closing quote.
    AfterQuote,
    /// A `\` at the very end of the text.
    DanglingEscape,
    /// An unescaped `"` or `=` inside an unquoted value.
    ValueChar(char),
    /// Text that should be a finite number.
    Number(String),
    /// A range whose low bound is above its high one.
    RangeReversed {
        /// Low bound.
        low: f64,
        /// High bound.
        high: f64,
    },
    /// Text that should be `lat,lon`.
    Point(String),
    /// A latitude outside -90..=90.
    Latitude(f64),
    /// A longitude outside -180..=180.
    Longitude(f64),
    /// A box whose first corner is north of its second.
    BoxReversed {
        /// Latitude of the first (south-west) corner.
        south: f64,
        /// Latitude of the second (north-east) corner.
        north: f64,
    },
    /// `attr~` not followed by `lat,lon,radius`.
    Near(String),
    /// A radius that is not a positive finite number of `m` or `km`.
    Radius(String),
    /// A quoted value where only an unquoted one is allowed (ranges, geo, `~`).
    Quoted,
    /// A second `@topic` term.
    SecondTopic,
    /// An `@topic` term where the topic filter is given elsewhere ([`Interest::parse_terms`]).
    ///
    /// [`Interest::parse_terms`]: crate::Interest::parse_terms
    TopicHere,
    /// An invalid MQTT topic filter.
    Topic(fogline_wire::TopicError),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyAttribute => write!(f, "expected an attribute name"),
            Self::AttributeChar(c) => write!(
                f,
                "`{}` cannot appear in an attribute name (expected letters, digits or \
                 punctuation other than = ~ \" \\ * ?, not starting with @)",
                c.escape_debug()
            ),
            Self::EmptyValue => write!(f, "expected a value after `=` (write \"\" for empty)"),
            Self::UnterminatedQuote => write!(f, "expected a closing `\"`"),
            Self::AfterQuote => write!(f, "expected whitespace after the closing `\"`"),
            Self::DanglingEscape => write!(f, "expected a character after `\\`"),
            Self::ValueChar(c) => write!(
                f,
                "`{c}` in an unquoted value: expected the value in quotes or `\\{c}`"
            ),
            Self::Number(s) => write!(f, "expected a finite number, found `{s}`"),
            Self::RangeReversed { low, high } => {
                write!(f, "expected low <= high in a range, found {low} > {high}")
            }
            Self::Point(s) => write!(f, "expected a point `lat,lon`, found `{s}`"),
            Self::Latitude(v) => write!(f, "expected a latitude within -90..=90, found {v}"),
            Self::Longitude(v) => write!(f, "expected a longitude within -180..=180, found {v}"),
            Self::BoxReversed { south, north } => write!(
                f,
                "expected the south-west corner first (south <= north), found {south} > {north}"
            ),
            Self::Near(s) => write!(f, "expected `lat,lon,radius` after `~`, found `{s}`"),
            Self::Radius(s) => write!(
                f,
                "expected a radius > 0 in m or km (plain number = metres), found `{s}`"
            ),
            Self::Quoted => write!(f, "expected an unquoted value here"),
            Self::SecondTopic => write!(f, "expected at most one `@topic` filter"),
            Self::TopicHere => write!(
                f,
                "expected no `@topic` term here: the subscription's own filter is the topic filter"
            ),
            Self::Topic(e) => write!(f, "expected an MQTT topic filter: {e}"),
        }
    }
}
