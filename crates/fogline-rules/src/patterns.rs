//! Pattern sets for the matcher operators (`match_count(payload, 'snort')`,
//! `matches(...)`): named lists of literal patterns uploaded over REST, compiled once into
//! a `fogline_match::Matcher` shared by every rule that names the set. Replacing a set
//! takes effect for rules started afterwards and for running rules at their next record.

use std::collections::HashMap;
use std::sync::Arc;

use fogline_match::{Matcher, MatcherBuilder};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::store::Store;

/// A pattern set as uploaded: `{"name", "patterns": ["GET /", ...], "caseInsensitive"?,
/// "hex"?}`. With `"hex": true` each pattern is its bytes in hexadecimal (`"0d0a0d0a"`), for
/// binary patterns such as those of IDS rules.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatternSet {
    /// Its name (as rule ids are named).
    pub name: String,
    /// The literals (escape sequences are the JSON string's own).
    pub patterns: Vec<String>,
    /// Match ASCII letters regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// The patterns are written in hexadecimal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hex: bool,
}

/// Every pattern set, compiled.
pub struct Patterns {
    store: Store,
    sets: RwLock<HashMap<String, (PatternSet, Arc<Matcher>)>>,
}

impl Patterns {
    /// Loads the stored sets.
    ///
    /// # Errors
    /// A stored set cannot be read or compiled.
    pub fn open(store: Store) -> Result<Patterns, String> {
        let mut sets = HashMap::new();
        for (name, body) in store.all().map_err(|e| e.to_string())? {
            let set: PatternSet =
                serde_json::from_slice(&body).map_err(|e| format!("pattern set {name}: {e}"))?;
            let m = compile(&set)?;
            sets.insert(name, (set, m));
        }
        Ok(Patterns {
            store,
            sets: RwLock::new(sets),
        })
    }

    /// Adds or replaces a set.
    ///
    /// # Errors
    /// A bad name, no patterns, an empty pattern, or the disk refused it.
    pub fn put(&self, set: PatternSet) -> Result<(), String> {
        if !crate::spec::valid_id(&set.name) {
            return Err(format!("invalid pattern set name {:?}", set.name));
        }
        let m = compile(&set)?;
        let body = serde_json::to_vec(&set).map_err(|e| e.to_string())?;
        self.store
            .put(&set.name, &body)
            .map_err(|e| format!("cannot store pattern set {}: {e}", set.name))?;
        self.sets.write().insert(set.name.clone(), (set, m));
        Ok(())
    }

    /// Deletes a set; false when there was none.
    ///
    /// # Errors
    /// The disk refused it.
    pub fn delete(&self, name: &str) -> Result<bool, String> {
        if self.sets.read().get(name).is_none() {
            return Ok(false);
        }
        self.store.delete(name).map_err(|e| e.to_string())?;
        Ok(self.sets.write().remove(name).is_some())
    }

    /// A set as uploaded.
    pub fn get(&self, name: &str) -> Option<PatternSet> {
        self.sets.read().get(name).map(|(s, _)| s.clone())
    }

    /// Every set's name and size.
    pub fn list(&self) -> Vec<(String, usize)> {
        let mut v: Vec<_> = self
            .sets
            .read()
            .values()
            .map(|(s, _)| (s.name.clone(), s.patterns.len()))
            .collect();
        v.sort();
        v
    }

    /// The compiled matcher of a set.
    pub fn matcher(&self, name: &str) -> Option<Arc<Matcher>> {
        self.sets.read().get(name).map(|(_, m)| m.clone())
    }
}

fn compile(set: &PatternSet) -> Result<Arc<Matcher>, String> {
    if set.patterns.is_empty() {
        return Err(format!("pattern set {}: no patterns", set.name));
    }
    let mut b = MatcherBuilder::new();
    for (i, p) in set.patterns.iter().enumerate() {
        if p.is_empty() {
            return Err(format!("pattern set {}: pattern {i} is empty", set.name));
        }
        let bytes = if set.hex {
            unhex(p).ok_or_else(|| {
                format!(
                    "pattern set {}: pattern {i} is not hexadecimal: {p:?}",
                    set.name
                )
            })?
        } else {
            p.as_bytes().to_vec()
        };
        b.add(i as u32, bytes, set.case_insensitive);
    }
    b.build()
        .map(Arc::new)
        .map_err(|e| format!("pattern set {}: {e}", set.name))
}

/// Bytes from hexadecimal digits (an even number of them).
fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if digits.len() % 2 != 0 {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    digits
        .chunks(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_patterns_decode_and_bad_ones_are_named() {
        assert_eq!(unhex("0d0A00ff"), Some(vec![0x0d, 0x0a, 0x00, 0xff]));
        assert_eq!(unhex("0d0"), None);
        assert_eq!(unhex("zz"), None);
        let set = |p: &str| PatternSet {
            name: "s".into(),
            patterns: vec![p.into()],
            case_insensitive: false,
            hex: true,
        };
        let m = compile(&set("00ff")).unwrap();
        assert_eq!(m.count(b"a\x00\xffb\x00\xff"), 2);
        let e = compile(&set("0g")).err().unwrap();
        assert!(e.contains("pattern 0 is not hexadecimal"), "{e}");
    }
}
