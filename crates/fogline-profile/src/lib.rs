//! Associative Rendezvous profiles (R-Pulsar, paper 004 section IV-D1), usable alone.
//!
//! A **data profile** is a set of attributes and attribute-value pairs that a record carries
//! (`type=drone sensor=lidar lat=40.0583 lon=-74.4056 urgent`). An **interest profile** is a
//! conjunction of predicates over data profiles (`type=drone sensor=Li* lat=40..41`). An
//! attribute predicate is true iff the data profile has the attribute; an attribute-value
//! predicate is true iff the data profile has the attribute and its value satisfies the
//! predicate (exact keyword, partial keyword, numeric range, geographic box or radius).
//!
//! - `model`: the types ([`DataProfile`], [`Interest`], [`Predicate`]).
//! - `parse`, `display`: the text form (`DataProfile::parse`, `Interest::parse`, `Display`),
//!   grammar in `docs/PROFILES.md`; errors are [`ParseError`].
//! - `carry`: a data profile as record headers (`DataProfile::from_headers`, `to_headers`).
//! - `eval`: the reference semantics ([`Interest::matches`], [`Predicate::holds`]).
//! - `index`: [`InterestIndex`], one data profile against many interests without a scan.
//! - `rendezvous`: `notify_interest`, producers told to start and stop as interests come
//!   and go.
//!
//! ```
//! use fogline_profile::{DataProfile, Interest};
//!
//! let data = DataProfile::parse("type=drone sensor=lidar geo=40.0583,-74.4056 urgent")?;
//! let interest = Interest::parse("@site/+/lidar sensor=li* geo~40.05,-74.40,5km urgent")?;
//! assert!(interest.matches(&data, "site/nj/lidar"));
//! assert_eq!(Interest::parse(&interest.to_string())?, interest);
//! # Ok::<(), fogline_profile::ParseError>(())
//! ```
#![deny(missing_docs)]

mod carry;
mod display;
mod error;
mod eval;
pub mod index;
mod lex;
pub mod model;
mod parse;
pub mod rendezvous;
#[doc(hidden)]
pub mod workload;

pub use carry::{carried_pairs, carried_pairs_counted, Skipped};
pub use error::{ErrorKind, ParseError};
pub use eval::{box_contains, wildcard_matches, EARTH_RADIUS_M};
pub use index::{InterestId, InterestIndex};
pub use lex::{attribute_char, parse_number, parse_point, valid_attribute};
pub use model::{DataProfile, GeoPoint, Interest, Predicate, Term};
