//! How a data profile travels with a record: one header per attribute (name = attribute,
//! value = its value; a bare attribute has an empty value), as `docs/PROFILES.md` states.
//! MQTT 5 user properties on PUBLISH become headers in the MQTT front end, so this is the
//! carriage for both protocols. Headers named `mqtt.*` are the broker's, not attributes.

use fogline_wire::{header_entries, Headers, HeadersBuilder, WireError};

use crate::lex::valid_attribute;

use crate::model::DataProfile;

/// Above this many pairs, [`carried_pairs`] finds a repeated name by hashing, not by a scan.
const SCAN_MAX: usize = 32;

/// The pairs [`DataProfile::from_header_block`] holds, borrowed from the block instead of
/// copied into a profile, appended to `out` (cleared first): the same rules (`mqtt.*`
/// headers, invalid names and non-UTF-8 values left out; a name given twice keeps its first
/// place and takes the later value; an invalid block carries nothing). For the store's
/// indexer, which files every record of a stream and kept nothing of the profile it built.
pub fn carried_pairs<'a>(block: &'a [u8], out: &mut Vec<(&'a str, Option<&'a str>)>) {
    // An invalid block leaves `out` empty, as documented.
    let _ = carried_pairs_counted(block, out);
}

/// [`carried_pairs`], with what it left out counted as [`DataProfile::from_headers`]
/// counts it. For the broker's routing by interest, which reads each record's profile
/// once and needs no copy of it.
///
/// # Errors
/// `block` is not a header block (`out` is left empty).
pub fn carried_pairs_counted<'a>(
    block: &'a [u8],
    out: &mut Vec<(&'a str, Option<&'a str>)>,
) -> Result<Skipped, WireError> {
    out.clear();
    let entries = header_entries(block)?;
    let mut skipped = Skipped::default();
    let mut places: Option<std::collections::HashMap<&'a str, usize>> = None;
    for (name, value) in entries {
        if name.starts_with("mqtt.") {
            continue;
        }
        // In `from_headers`'s order: a binary value is counted before the name is checked.
        let Ok(value) = std::str::from_utf8(value) else {
            skipped.binary_values += 1;
            continue;
        };
        if !valid_attribute(name) {
            skipped.bad_names += 1;
            continue;
        }
        let value = (!value.is_empty()).then_some(value);
        if out.len() == SCAN_MAX && places.is_none() {
            places = Some(out.iter().enumerate().map(|(i, (a, _))| (*a, i)).collect());
        }
        let seen = match &mut places {
            Some(places) => places.get(name).copied(),
            None => out.iter().position(|(a, _)| *a == name),
        };
        match seen {
            Some(i) => out[i].1 = value,
            None => {
                if let Some(places) = &mut places {
                    places.insert(name, out.len());
                }
                out.push((name, value));
            }
        }
    }
    Ok(skipped)
}

/// What [`DataProfile::from_headers`] left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Headers whose name is not a valid attribute (`docs/PROFILES.md`).
    pub bad_names: usize,
    /// Headers whose value is not UTF-8 (a profile's values are text).
    pub binary_values: usize,
}

impl DataProfile {
    /// The data profile a record's headers carry; what cannot be an attribute is left out
    /// and counted. A name given twice: the later value wins, as in the text form. The rules
    /// are [`carried_pairs_counted`]'s, with the pairs copied out.
    pub fn from_headers(headers: &Headers) -> (DataProfile, Skipped) {
        let mut pairs = Vec::new();
        // A parsed `Headers` is a valid block: the error cannot happen here.
        let skipped = carried_pairs_counted(headers.as_bytes(), &mut pairs).unwrap_or_default();
        let pairs = pairs
            .into_iter()
            .map(|(a, v)| (a.to_string(), v.map(str::to_string)))
            .collect();
        (DataProfile { pairs }, skipped)
    }

    /// The data profile of a record's header block as stored or sent (empty: none; a block
    /// that is not a valid header block carries none either).
    pub fn from_header_block(block: &bytes::Bytes) -> DataProfile {
        if block.is_empty() {
            return DataProfile::default();
        }
        Headers::parse(block.clone())
            .map(|h| DataProfile::from_headers(&h).0)
            .unwrap_or_default()
    }

    /// The header block carrying this profile.
    ///
    /// # Errors
    /// More attributes or longer ones than a header block holds.
    pub fn to_headers(&self) -> Result<bytes::Bytes, WireError> {
        self.pairs
            .iter()
            .fold(HeadersBuilder::new(), |b, (a, v)| {
                b.add(a, v.as_deref().unwrap_or(""))
            })
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &[u8])]) -> Headers {
        let block = pairs
            .iter()
            .fold(HeadersBuilder::new(), |b, (k, v)| b.add(k, v))
            .finish()
            .unwrap();
        Headers::parse(block).unwrap()
    }

    /// The carriage rules written out plainly (`docs/PROFILES.md`), as `from_headers` was
    /// before it read through `carried_pairs_counted`: the reference both are held to.
    fn reference(headers: &Headers) -> (DataProfile, Skipped) {
        let mut profile = DataProfile::default();
        let mut skipped = Skipped::default();
        for (name, value) in headers {
            let name = name.as_str();
            if name.starts_with("mqtt.") {
                continue;
            }
            let Ok(value) = std::str::from_utf8(&value) else {
                skipped.binary_values += 1;
                continue;
            };
            let value = (!value.is_empty()).then(|| value.to_string());
            if profile.insert(name, value).is_err() {
                skipped.bad_names += 1;
            }
        }
        (profile, skipped)
    }

    fn borrowed(block: &[u8]) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        carried_pairs(block, &mut out);
        out.iter()
            .map(|(a, v)| (a.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn carried_pairs_are_the_profile_of_the_block() {
        let mut many = HeadersBuilder::new();
        for i in 0..(3 * SCAN_MAX) {
            many = many.add(&format!("a{}", i % (2 * SCAN_MAX)), format!("{i}"));
        }
        let blocks = [
            headers(&[("type", b"drone"), ("mqtt.qos", b"1"), ("type", b"robot")]),
            headers(&[
                ("bad name", b"x"),
                ("v", &[0xff]),
                ("urgent", b""),
                ("@x", b"1"),
            ]),
            Headers::parse(many.finish().unwrap()).unwrap(),
            Headers::default(),
        ];
        for h in &blocks {
            let want = DataProfile::from_header_block(h.as_bytes()).pairs;
            assert_eq!(borrowed(h.as_bytes()), want);
            assert_eq!(want, reference(h).0.pairs);
        }
        assert!(
            borrowed(&[3, 0, 1]).is_empty(),
            "an invalid block carries nothing"
        );
    }

    /// `carried_pairs_counted` counts what it leaves out as `from_headers` does, and refuses
    /// a block `Headers::parse` refuses.
    #[test]
    fn left_out_headers_are_counted_alike() {
        let blocks = [
            headers(&[
                ("type", b"drone"),
                ("mqtt.qos", &[0xff]),
                ("type", b"robot"),
            ]),
            headers(&[
                ("bad name", b"x"),
                ("v", &[0xff]),
                ("bad name 2", &[0xfe]),
                ("urgent", b""),
                ("@x", b"1"),
            ]),
            Headers::default(),
        ];
        for h in &blocks {
            let (profile, want) = DataProfile::from_headers(h);
            let mut out = Vec::new();
            let got = carried_pairs_counted(h.as_bytes(), &mut out).unwrap();
            assert_eq!(got, want);
            assert_eq!(out.len(), profile.pairs.len());
            assert_eq!((profile, want), reference(h));
        }
        let mut out = vec![("stale", None)];
        assert!(carried_pairs_counted(&[3, 0, 1], &mut out).is_err());
        assert!(Headers::parse(bytes::Bytes::from_static(&[3, 0, 1])).is_err());
        assert!(out.is_empty());
    }

    proptest::proptest! {
        /// Any headers (past SCAN_MAX too, where repeated names are found by hashing): the
        /// borrowed pairs and counts are `from_headers`'s profile and counts, and both are
        /// the reference's.
        #[test]
        fn borrowed_pairs_and_counts_match_the_profile(
            hs in proptest::collection::vec(
                (proptest::prop_oneof![4 => "[a-h]{1,2}", 1 => "(mqtt\\.)?[a-c@. é]{1,4}"], proptest::collection::vec(
                    proptest::prop_oneof![8 => proptest::prelude::Just(b'x'), 1 => proptest::prelude::any::<u8>()], 0..4)),
                0..80,
            )
        ) {
            let Ok(block) = hs
                .iter()
                .fold(HeadersBuilder::new(), |b, (k, v)| b.add(k, v))
                .finish()
            else {
                return Ok(());
            };
            let h = Headers::parse(block.clone()).unwrap();
            let (profile, want) = DataProfile::from_headers(&h);
            let mut out = Vec::new();
            let got = carried_pairs_counted(&block, &mut out).unwrap();
            proptest::prop_assert_eq!(&got, &want);
            let out: Vec<_> = out.iter().map(|(a, v)| (a.to_string(), v.map(str::to_string))).collect();
            proptest::prop_assert_eq!(&out, &profile.pairs);
            proptest::prop_assert_eq!((profile, want), reference(&h));
        }
    }

    #[test]
    fn a_profile_round_trips_through_headers() {
        let p = DataProfile::parse("type=drone sensor=lidar geo=40.0583,-74.4056 urgent 城市=東京")
            .unwrap();
        let block = p.to_headers().unwrap();
        let (back, skipped) = DataProfile::from_headers(&Headers::parse(block).unwrap());
        assert_eq!(back, p);
        assert_eq!(skipped, Skipped::default());
    }

    #[test]
    fn a_header_block_gives_its_profile_and_a_bad_one_none() {
        let p = DataProfile::parse("type=drone urgent").unwrap();
        assert_eq!(DataProfile::from_header_block(&p.to_headers().unwrap()), p);
        assert_eq!(
            DataProfile::from_header_block(&bytes::Bytes::new()),
            DataProfile::default()
        );
        assert_eq!(
            DataProfile::from_header_block(&bytes::Bytes::from_static(b"\x01")),
            DataProfile::default()
        );
    }

    #[test]
    fn broker_headers_bad_names_and_binary_values_are_left_out() {
        let h = headers(&[
            ("mqtt.content_type", b"json"),
            ("type", b"drone"),
            ("bad name", b"x"),
            ("blob", &[0xff, 0xfe]),
            ("urgent", b""),
            ("type", b"robot"),
        ]);
        let (p, skipped) = DataProfile::from_headers(&h);
        assert_eq!(p, DataProfile::parse("type=robot urgent").unwrap());
        assert_eq!(
            skipped,
            Skipped {
                bad_names: 1,
                binary_values: 1
            }
        );
    }
}
