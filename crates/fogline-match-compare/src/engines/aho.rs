//! The `aho-corasick` crate as an engine: one automaton for the exact patterns and one built
//! with `ascii_case_insensitive` for the `nocase` ones (the crate's case flag is per automaton).

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::Engine;
use crate::{Error, PatternLine};

pub(crate) struct Aho {
    parts: Vec<(AhoCorasick, Vec<u32>)>,
    dfa: bool,
}

impl Aho {
    pub(crate) fn new(patterns: &[PatternLine], dfa: bool) -> Result<Self, Error> {
        let kind = if dfa {
            AhoCorasickKind::DFA
        } else {
            AhoCorasickKind::ContiguousNFA
        };
        let mut parts = Vec::new();
        for nocase in [false, true] {
            let group: Vec<&PatternLine> = patterns.iter().filter(|p| p.nocase == nocase).collect();
            if group.is_empty() {
                continue;
            }
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .ascii_case_insensitive(nocase)
                .kind(Some(kind))
                .build(group.iter().map(|p| &p.bytes))
                .map_err(|e| Error::Build {
                    engine: "aho-corasick",
                    message: e.to_string(),
                })?;
            parts.push((ac, group.iter().map(|p| p.id).collect()));
        }
        Ok(Aho { parts, dfa })
    }
}

impl Engine for Aho {
    fn name(&self) -> &'static str {
        if self.dfa {
            "aho-corasick-dfa"
        } else {
            "aho-corasick-nfa"
        }
    }

    fn count(&mut self, hay: &[u8]) -> u64 {
        self.parts
            .iter()
            .map(|(ac, _)| ac.find_overlapping_iter(hay).count() as u64)
            .sum()
    }

    fn for_each(&mut self, hay: &[u8], f: &mut dyn FnMut(u32, usize)) {
        for (ac, ids) in &self.parts {
            for m in ac.find_overlapping_iter(hay) {
                f(ids[m.pattern().as_usize()], m.end());
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|(ac, ids)| ac.memory_usage() + ids.len() * 4)
            .sum()
    }
}
