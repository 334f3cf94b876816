//! The profile types. Attribute names are compared exactly (case-sensitive, as R-Pulsar's
//! keywords); keyword predicates compare values exactly too unless stated.

/// A data profile: attributes, each with an optional value, in the order given. An attribute
/// appears at most once (a later pair replaces an earlier one when parsing).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataProfile {
    /// `(attribute, value)`; `None` for a bare attribute (`urgent`).
    pub pairs: Vec<(String, Option<String>)>,
}

impl DataProfile {
    /// The value of `attribute`: `None` when absent, `Some(None)` when present without one.
    pub fn get(&self, attribute: &str) -> Option<Option<&str>> {
        self.pairs
            .iter()
            .find(|(a, _)| a == attribute)
            .map(|(_, v)| v.as_deref())
    }
}

/// A point on the earth, degrees (latitude -90..=90, longitude -180..=180).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeoPoint {
    /// Latitude.
    pub lat: f64,
    /// Longitude.
    pub lon: f64,
}

/// A predicate on one attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// The attribute is present (with or without a value): `attr`.
    Present,
    /// The value is exactly this: `attr=lidar`.
    Exact(String),
    /// The value starts with this: `attr=Li*`.
    Prefix(String),
    /// The value ends with this: `attr=*dar`.
    Suffix(String),
    /// The value matches a pattern with `*` (any run) and `?` (one character) anywhere:
    /// `attr=L*d?r`. (`attr=*` parses as [`Predicate::Present`].) In the pattern,
    /// `\` makes the next character literal (`\*`, `\?`, `\\`), as the parser writes it.
    Wildcard(String),
    /// The value is a number within the bounds (inclusive; `None` = open): `attr=20..30`,
    /// `attr=20..`, `attr=..30`.
    Range {
        /// Lower bound.
        low: Option<f64>,
        /// Upper bound.
        high: Option<f64>,
    },
    /// The value is a point (`lat,lon`) inside the box between two corners:
    /// `attr=40.0,-74.5..40.1,-74.3`. A box whose west longitude is greater than its east
    /// one crosses the antimeridian.
    GeoBox {
        /// South-west corner.
        south_west: GeoPoint,
        /// North-east corner.
        north_east: GeoPoint,
    },
    /// The value is a point (`lat,lon`) within `radius_m` metres (great-circle) of
    /// `center`: `attr~40.05,-74.40,5km`.
    Near {
        /// The centre.
        center: GeoPoint,
        /// The radius in metres.
        radius_m: f64,
    },
}

/// One term of an interest: a predicate on an attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// The attribute.
    pub attribute: String,
    /// What its value must satisfy.
    pub predicate: Predicate,
}

/// An interest profile: every term must hold (a conjunction), and the topic filter, when
/// given, must match the record's topic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interest {
    /// The terms.
    pub terms: Vec<Term>,
    /// An MQTT topic filter the record's topic must match.
    pub topic: Option<String>,
}
