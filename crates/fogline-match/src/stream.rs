//! Streaming: matches over a sequence of chunks, as if they were one buffer.
//!
//! Invariant: `tail` holds the last `min(max_len - 1, seen)` bytes fed so far. Every match is
//! reported by the `feed` call that delivers its last byte: matches starting in the new chunk by
//! scanning the chunk, matches starting in the tail by scanning `tail + head of chunk` with
//! starts limited to the tail and ends limited to the chunk.

use crate::sink::Callback;
use crate::{scan, Match, Matcher};

/// A streaming search over chunks; ends are offsets from the start of the stream.
///
/// # Example
///
/// ```
/// use fogline_match::MatcherBuilder;
///
/// let m = MatcherBuilder::new().add(1, "needle", false).build()?;
/// let mut s = m.stream();
/// let mut ends = Vec::new();
/// for chunk in [&b"hay nee"[..], b"dle hay need", b"le"] {
///     s.feed(chunk, |m| ends.push(m.end));
/// }
/// assert_eq!(ends, [10, 21]);
/// # Ok::<(), fogline_match::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Stream<'m> {
    matcher: &'m Matcher,
    tail: Vec<u8>,
    buf: Vec<u8>,
    offset: usize,
    started: bool,
}

impl<'m> Stream<'m> {
    pub(crate) fn new(matcher: &'m Matcher) -> Self {
        Stream {
            matcher,
            tail: Vec::new(),
            buf: Vec::new(),
            offset: 0,
            started: false,
        }
    }

    /// Bytes fed so far.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Feeds the next chunk and reports every match that ends in it.
    pub fn feed<F: FnMut(Match)>(&mut self, chunk: &[u8], mut f: F) {
        let t = &self.matcher.tables;
        if !self.started {
            self.started = true;
            for &id in t.empty_ids.iter() {
                f(Match {
                    pattern: id,
                    end: 0,
                });
            }
        }
        let keep = t.max_len.saturating_sub(1);
        if !self.tail.is_empty() && !chunk.is_empty() {
            self.buf.clear();
            self.buf.extend_from_slice(&self.tail);
            self.buf.extend_from_slice(&chunk[..chunk.len().min(keep)]);
            let mut sink = Callback {
                base: self.offset - self.tail.len(),
                f: &mut f,
            };
            let n = self.tail.len();
            scan::scan(self.matcher.imp, t, &self.buf, 0, n, n + 1, &mut sink);
        }
        let mut sink = Callback {
            base: self.offset,
            f: &mut f,
        };
        scan::scan(self.matcher.imp, t, chunk, 0, chunk.len(), 0, &mut sink);
        if !t.empty_ids.is_empty() {
            for end in 1..=chunk.len() {
                for &id in t.empty_ids.iter() {
                    f(Match {
                        pattern: id,
                        end: self.offset + end,
                    });
                }
            }
        }
        self.offset += chunk.len();
        if chunk.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[chunk.len() - keep..]);
        } else {
            self.tail.extend_from_slice(chunk);
            let extra = self.tail.len().saturating_sub(keep);
            self.tail.drain(..extra);
        }
    }
}
