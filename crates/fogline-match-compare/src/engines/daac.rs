//! `daachorse` as an engine. It has no case-insensitive mode and rejects duplicate patterns, so:
//! exact patterns go to one automaton; `nocase` patterns are folded to lower case and go to a
//! second one that scans a lower-cased copy of the input (the copy is part of the timed work);
//! each automaton value indexes a list of the pattern ids sharing those bytes.

use daachorse::{DoubleArrayAhoCorasick, DoubleArrayAhoCorasickBuilder, MatchKind};

use super::Engine;
use crate::{Error, PatternLine};

struct Part {
    pma: DoubleArrayAhoCorasick<u32>,
    /// Ids per automaton value.
    ids: Vec<Vec<u32>>,
    nocase: bool,
}

pub(crate) struct Daac {
    parts: Vec<Part>,
    folded: Vec<u8>,
}

impl Daac {
    pub(crate) fn new(patterns: &[PatternLine]) -> Result<Self, Error> {
        let mut parts = Vec::new();
        for nocase in [false, true] {
            let mut uniq: Vec<(Vec<u8>, u32)> = patterns
                .iter()
                .filter(|p| p.nocase == nocase)
                .map(|p| {
                    let b = if nocase {
                        p.bytes.to_ascii_lowercase()
                    } else {
                        p.bytes.clone()
                    };
                    (b, p.id)
                })
                .collect();
            if uniq.is_empty() {
                continue;
            }
            uniq.sort();
            let mut pats: Vec<Vec<u8>> = Vec::new();
            let mut ids: Vec<Vec<u32>> = Vec::new();
            for (b, id) in uniq {
                if pats.last() == Some(&b) {
                    if let Some(last) = ids.last_mut() {
                        last.push(id);
                    }
                } else {
                    pats.push(b);
                    ids.push(vec![id]);
                }
            }
            let pma = DoubleArrayAhoCorasickBuilder::new()
                .match_kind(MatchKind::Standard)
                .build_with_values(pats.iter().zip(0u32..))
                .map_err(|e| Error::Build {
                    engine: "daachorse",
                    message: e.to_string(),
                })?;
            parts.push(Part { pma, ids, nocase });
        }
        Ok(Daac {
            parts,
            folded: Vec::new(),
        })
    }
}

impl Engine for Daac {
    fn name(&self) -> &'static str {
        "daachorse"
    }

    fn count(&mut self, hay: &[u8]) -> u64 {
        let mut n = 0u64;
        for part in &self.parts {
            let input = if part.nocase {
                self.folded.clear();
                self.folded.extend(hay.iter().map(u8::to_ascii_lowercase));
                &self.folded[..]
            } else {
                hay
            };
            for m in part.pma.find_overlapping_iter(input) {
                n += part.ids[m.value() as usize].len() as u64;
            }
        }
        n
    }

    fn for_each(&mut self, hay: &[u8], f: &mut dyn FnMut(u32, usize)) {
        for part in &self.parts {
            let input = if part.nocase {
                self.folded.clear();
                self.folded.extend(hay.iter().map(u8::to_ascii_lowercase));
                &self.folded[..]
            } else {
                hay
            };
            for m in part.pma.find_overlapping_iter(input) {
                for &id in &part.ids[m.value() as usize] {
                    f(id, m.end());
                }
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.pma.heap_bytes() + p.ids.iter().map(|v| 8 + v.len() * 4).sum::<usize>())
            .sum()
    }
}
