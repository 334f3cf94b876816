//! The verification round (V-PATCH section 2.4.1, "Verification"): exact comparison of the
//! patterns that could start at a candidate position, found through the trie of folded 4-byte
//! chunks (long patterns), the direct 2-byte index of `short` (2- and 3-byte patterns) and the
//! 1-byte table.

use crate::fold::{eq_exact, eq_folded, fold_u32, fold_u64, read_u32};
use crate::map::ROOT;
use crate::sink::Sink;
use crate::tables::{Entry, Tables};

/// The input word at `s` (zero bytes past the end), raw and folded.
#[inline(always)]
fn words_at(hay: &[u8], s: usize) -> (u64, u64) {
    let raw = match hay.get(s..).and_then(|h| h.first_chunk::<8>()) {
        Some(w) => u64::from_le_bytes(*w),
        None => {
            let mut w = [0u8; 8];
            let rest = hay.get(s..).unwrap_or_default();
            w[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(w)
        }
    };
    (raw, fold_u64(raw))
}

/// Whether `e` matches at `s`: its first eight bytes against the input word (one masked
/// compare, no loop, no branch per byte), then the rest, if any.
#[inline(always)]
fn check(t: &Tables, e: &Entry, hay: &[u8], s: usize, (raw, folded): (u64, u64)) -> bool {
    let len = e.len as usize;
    if s + len > hay.len() {
        return false;
    }
    let word = if e.nocase { folded } else { raw };
    let mask = if len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    };
    if (word ^ e.head) & mask != 0 {
        return false;
    }
    if len <= 8 {
        return true;
    }
    let pat = &t.arena[e.off as usize + 8..e.off as usize + len];
    let h = &hay[s + 8..s + len];
    if e.nocase {
        eq_folded(h, pat)
    } else {
        eq_exact(h, pat)
    }
}

/// Reports every pattern of at least 4 bytes that starts at `s`.
#[inline(always)]
pub(crate) fn long<S: Sink>(t: &Tables, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
    let mut parent = ROOT;
    let mut depth = 0;
    while s + depth + 4 <= hay.len() {
        let chunk = fold_u32(read_u32(hay, s + depth));
        let Some(node) = t.map.get(parent, chunk) else {
            return;
        };
        depth += 4;
        let words = words_at(hay, s);
        for e in &t.entries[node.start as usize..node.end as usize] {
            let end = s + e.len as usize;
            if end >= min_end {
                sink.emit_if(e.id, end, check(t, e, hay, s, words));
            }
        }
        if !node.split {
            return;
        }
        parent = node.slot;
    }
}

/// Reports every pattern of 2 or 3 bytes that starts at `s`.
#[inline(always)]
pub(crate) fn short<S: Sink>(t: &Tables, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
    t.short.verify(hay, s, min_end, sink);
}

/// Reports the 1-byte patterns at every start in `from..to`.
#[inline(always)]
pub(crate) fn one_bytes<S: Sink>(t: &Tables, hay: &[u8], from: usize, to: usize, sink: &mut S) {
    if sink.counts_only() {
        // Counting needs only how many patterns each byte matches.
        sink.add(count_ones(t, &hay[from..to]));
        return;
    }
    for (k, &b) in hay[from..to].iter().enumerate() {
        let (a, z) = t.one[usize::from(b)];
        sink.emit_all(&t.one_ids[a as usize..z as usize], from + k + 1);
    }
}

/// Sum over `bytes` of the number of 1-byte patterns each matches.
fn count_ones(t: &Tables, bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Ok(table) = <&[u8; 256]>::try_from(&*t.one_count8) {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
        {
            // SAFETY: the CPU supports AVX-512 F, BW and VBMI (checked just above).
            return unsafe { count_ones_vbmi(table, bytes) };
        }
    }
    bytes
        .iter()
        .map(|&b| u64::from(t.one_count[usize::from(b)]))
        .sum()
}

/// `count_ones` with the 256-entry count table held in four registers: two `vpermi2b` look up
/// 64 bytes at once (index bits 0-6), the top bit picks between them, `vpsadbw` sums.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn count_ones_vbmi(table: &[u8; 256], bytes: &[u8]) -> u64 {
    use std::arch::x86_64::*;
    let t = table.as_ptr();
    let (t0, t1) = (
        _mm512_loadu_si512(t.cast()),
        _mm512_loadu_si512(t.add(64).cast()),
    );
    let (t2, t3) = (
        _mm512_loadu_si512(t.add(128).cast()),
        _mm512_loadu_si512(t.add(192).cast()),
    );
    let zero = _mm512_setzero_si512();
    let mut acc = zero;
    let mut chunks = bytes.chunks_exact(64);
    for c in &mut chunks {
        let v = _mm512_loadu_si512(c.as_ptr().cast());
        let low = _mm512_permutex2var_epi8(t0, v, t1);
        let high = _mm512_permutex2var_epi8(t2, v, t3);
        let counts = _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), low, high);
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(counts, zero));
    }
    let rest: u64 = chunks
        .remainder()
        .iter()
        .map(|&b| u64::from(table[usize::from(b)]))
        .sum();
    _mm512_reduce_add_epi64(acc) as u64 + rest
}
