//! Runs of one repeated byte ("floods"): what can match inside them, decided per run instead of
//! per position.
//!
//! For an input byte `x` and a pattern whose first byte matches `x`, let `r` be the number of
//! leading pattern bytes that match `x` ("pure" patterns have `r == len`). In a run of `x`
//! spanning `[p, e)`, a start `s` with `R = e - s` bytes of run left:
//!
//! - If `R >= m_x = max(min(len, r + 1))`: exactly the pure patterns match (each fits; any other
//!   has a byte that does not match `x` at an offset still inside the run). Any byte `x`.
//! - Otherwise, when `x` is not an ASCII letter (so "matches `x`" means "equals `x`" for every
//!   pattern): the pure patterns with `len <= R` match, and among the others only those with
//!   `r == R` can, and only when their byte `r` matches `hay[e]`, the first byte after the run.
//!
//! So a run costs a few operations whatever its length: the starts with `R >= m_x` are counted
//! per pure pattern in one step; of the last starts, each pure pattern matches at those with
//! `R >= len` (one range per pattern), and the other candidates are exactly the tails keyed by
//! the byte after the run with `r` in the range of `R` left, one binary search per run.
//!
//! Invariants: `pure[x]` is sorted by length; for non-letter `x`, `keys[tails_at[x]..]` (up to
//! the next byte's start) is sorted, and `entries[k]` is the pattern of `keys[k] =
//! fold(pattern[r]) << 24 | r`.

use crate::fold::fold;
use crate::sink::Sink;
use crate::tables::{Entry, Source};

/// A pattern made only of one repeated byte: `(id, len)`.
pub(crate) type Pure = (u32, u32);

#[derive(Debug, Clone)]
pub(crate) struct Runs {
    /// Per input byte: `m_x` (0 when no pattern starts with `x`).
    pub m: Box<[u32]>,
    /// Per input byte: range of `pure`.
    pure_at: Box<[(u32, u32)]>,
    pure: Box<[Pure]>,
    /// Per input byte (and one past the last): start of its tails in `keys` / `entries`.
    tails_at: Box<[u32]>,
    keys: Box<[u32]>,
    entries: Box<[Entry]>,
    arena: Box<[u8]>,
}

/// Whether "pattern byte matches `x`" is plain equality for every pattern.
fn caseless_byte(x: u8) -> bool {
    !x.is_ascii_alphabetic()
}

fn byte_matches(p: u8, nocase: bool, x: u8) -> bool {
    if nocase {
        p == fold(x)
    } else {
        p == x
    }
}

impl Runs {
    /// `stored` holds each source's bytes as compared (folded when nocase).
    pub(crate) fn build(src: &[Source], stored: &[Vec<u8>]) -> Runs {
        let mut m = vec![0u32; 256];
        let mut pure_lists: Vec<Vec<Pure>> = vec![Vec::new(); 256];
        let mut tail_lists: Vec<Vec<(u32, usize)>> = vec![Vec::new(); 256];
        for (i, (s, p)) in src.iter().zip(stored).enumerate() {
            let Some(&first) = p.first() else { continue };
            // The input bytes the first pattern byte matches: one, or two for a folded letter.
            let xs: &[u8] = if s.nocase && first.is_ascii_lowercase() {
                &[first, first.to_ascii_uppercase()]
            } else {
                &[first]
            };
            for &x in xs {
                let r = p
                    .iter()
                    .take_while(|&&c| byte_matches(c, s.nocase, x))
                    .count();
                let decide = if r == p.len() { r } else { r + 1 };
                let mx = &mut m[usize::from(x)];
                *mx = (*mx).max(decide as u32);
                if r == p.len() {
                    pure_lists[usize::from(x)].push((s.id, p.len() as u32));
                } else {
                    tail_lists[usize::from(x)].push((r as u32, i));
                }
            }
        }
        let mut pure_at = Vec::with_capacity(256);
        let mut pure = Vec::new();
        for mut list in pure_lists {
            list.sort_unstable_by_key(|&(_, len)| len);
            let start = pure.len() as u32;
            pure.extend(list);
            pure_at.push((start, pure.len() as u32));
        }
        let (mut tails_at, mut keys, mut entries, mut arena) =
            (Vec::with_capacity(257), Vec::new(), Vec::new(), Vec::new());
        for (x, list) in tail_lists.into_iter().enumerate() {
            tails_at.push(keys.len() as u32);
            if !caseless_byte(x as u8) {
                continue;
            }
            let mut keyed: Vec<(u32, usize)> = list
                .into_iter()
                .map(|(r, i)| (u32::from(fold(stored[i][r as usize])) << 24 | r, i))
                .collect();
            keyed.sort_unstable();
            for (key, i) in keyed {
                keys.push(key);
                entries.push(Entry::new(
                    src[i].id,
                    &stored[i],
                    arena.len(),
                    src[i].nocase,
                ));
                arena.extend_from_slice(&stored[i]);
            }
        }
        tails_at.push(keys.len() as u32);
        Runs {
            m: m.into_boxed_slice(),
            pure_at: pure_at.into_boxed_slice(),
            pure: pure.into_boxed_slice(),
            tails_at: tails_at.into_boxed_slice(),
            keys: keys.into_boxed_slice(),
            entries: entries.into_boxed_slice(),
            arena: arena.into_boxed_slice(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&*self.m)
            + size_of_val(&*self.pure_at)
            + size_of_val(&*self.pure)
            + size_of_val(&*self.tails_at)
            + size_of_val(&*self.keys)
            + size_of_val(&*self.entries)
            + size_of_val(&*self.arena)
    }

    fn pure(&self, x: u8) -> &[Pure] {
        let (a, b) = self.pure_at[usize::from(x)];
        &self.pure[a as usize..b as usize]
    }

    /// Reports every match starting in `s..` inside the run of `hay[s]` that begins at `s`,
    /// for starts below `end`; returns the first start it did not decide. `min_run` is the
    /// shortest run worth the call for letter bytes (whose short tails are not indexed).
    pub(crate) fn region<S: Sink>(
        &self,
        hay: &[u8],
        s: usize,
        end: usize,
        min_end: usize,
        min_run: usize,
        sink: &mut S,
    ) -> usize {
        let x = hay[s];
        let e = run_end(hay, s);
        let m = self.m[usize::from(x)] as usize;
        if m == 0 {
            // No pattern starts with `x`: nothing starts inside the run.
            return e.min(end);
        }
        let caseless = caseless_byte(x);
        if !caseless && e - s < m + min_run {
            return s;
        }
        let pure = self.pure(x);
        let full_last = (e + 1).saturating_sub(m).min(end); // starts below this have R >= m
        if s < full_last {
            sink.flood(pure, s, full_last - 1, min_end);
        }
        if !caseless {
            return full_last.max(s);
        }
        let stop = e.min(end);
        let lo = full_last.max(s);
        if lo >= stop {
            return stop;
        }
        // Starts `lo..stop`: each pure pattern where it still fits (`start + len <= e`).
        for &(id, len) in pure {
            let Some(last) = e.checked_sub(len as usize) else {
                break;
            };
            if last < lo {
                break;
            }
            sink.flood(&[(id, len)], lo, last.min(stop - 1), min_end);
        }
        // The byte after the run, as the keys store it; none when the run ends the input (then
        // only pure patterns can match).
        let Some(&after) = hay.get(e) else {
            return stop;
        };
        let (a, z) = (
            self.tails_at[usize::from(x)] as usize,
            self.tails_at[usize::from(x) + 1] as usize,
        );
        let keys = &self.keys[a..z];
        // Tails with `r = e - start` for a start in `lo..stop`.
        let key = |r: usize| u32::from(fold(after)) << 24 | r as u32;
        let first = keys.partition_point(|&k| k < key(e - (stop - 1)));
        let last = keys.partition_point(|&k| k <= key(e - lo));
        for (t, &k) in self.entries[a + first..a + last]
            .iter()
            .zip(&keys[first..last])
        {
            let r = (k & 0x00ff_ffff) as usize;
            let start = e - r;
            let len = t.len as usize;
            let end_at = start + len;
            if end_at < min_end || end_at > hay.len() {
                continue;
            }
            let pat = &self.arena[t.off as usize + r..t.off as usize + len];
            let h = &hay[e..end_at];
            let same = if t.nocase {
                crate::fold::eq_folded(h, pat)
            } else {
                crate::fold::eq_exact(h, pat)
            };
            if same {
                sink.emit(t.id, end_at);
            }
        }
        stop
    }
}

/// The end of the run of `hay[pos]` that starts at `pos`: 32 bytes per step while the run
/// lasts (zero padding in real traffic runs for kilobytes), then the first differing byte from
/// the lowest set bit of a word difference.
pub(crate) fn run_end(hay: &[u8], pos: usize) -> usize {
    use crate::fold::read_u64;
    let x = hay[pos];
    let w = u64::from(x) * 0x0101_0101_0101_0101;
    let mut e = pos;
    while e + 32 <= hay.len() {
        let d = (read_u64(hay, e) ^ w)
            | (read_u64(hay, e + 8) ^ w)
            | (read_u64(hay, e + 16) ^ w)
            | (read_u64(hay, e + 24) ^ w);
        if d != 0 {
            break;
        }
        e += 32;
    }
    while e + 8 <= hay.len() {
        let d = read_u64(hay, e) ^ w;
        if d != 0 {
            return e + (d.trailing_zeros() / 8) as usize;
        }
        e += 8;
    }
    while e < hay.len() && hay[e] == x {
        e += 1;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::run_end;

    #[test]
    fn run_end_finds_the_first_other_byte() {
        for len in 0..100 {
            for at in 0..len {
                let mut hay = vec![7u8; len];
                hay[at] = 8;
                for pos in 0..len {
                    let want = if hay[pos] == 8 {
                        pos + 1
                    } else if pos < at {
                        at
                    } else {
                        len
                    };
                    assert_eq!(
                        run_end(&hay, pos),
                        want,
                        "len {len} other at {at} from {pos}"
                    );
                }
            }
        }
    }
}
