//! fogline-match as an engine.

use fogline_match::{Matcher, MatcherBuilder, Simd};

use super::Engine;
use crate::{Error, PatternLine};

pub(crate) struct Fogline {
    m: Matcher,
    callback: bool,
    name: &'static str,
}

impl Fogline {
    pub(crate) fn new(patterns: &[PatternLine], callback: bool, simd: Simd) -> Result<Self, Error> {
        let mut b = MatcherBuilder::new();
        b.simd(simd);
        for p in patterns {
            b.add(p.id, &p.bytes, p.nocase);
        }
        let m = b.build().map_err(|e| Error::Build {
            engine: "fogline",
            message: e.to_string(),
        })?;
        let name = match (callback, simd) {
            (true, _) => "fogline-callback",
            (false, Simd::Auto) => "fogline",
            (false, s) => super::EngineKind::FoglineForced(s).name(),
        };
        Ok(Fogline { m, callback, name })
    }
}

impl Engine for Fogline {
    fn name(&self) -> &'static str {
        self.name
    }

    fn count(&mut self, hay: &[u8]) -> u64 {
        if self.callback {
            let mut n = 0u64;
            self.m.for_each_match(hay, |_| n += 1);
            n
        } else {
            self.m.count(hay)
        }
    }

    fn for_each(&mut self, hay: &[u8], f: &mut dyn FnMut(u32, usize)) {
        self.m.for_each_match(hay, |m| f(m.pattern, m.end));
    }

    fn heap_bytes(&self) -> usize {
        self.m.heap_bytes()
    }
}
