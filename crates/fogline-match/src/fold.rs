//! ASCII case folding. Only `A`-`Z` fold (to `a`-`z`); every other byte is its own fold, as
//! Snort's `nocase` and Hyperscan's `HS_FLAG_CASELESS` define it.

/// The folded (lower-case) value of one byte.
#[inline(always)]
pub(crate) fn fold(b: u8) -> u8 {
    b.to_ascii_lowercase()
}

/// Folds the four bytes of `x` at once (SWAR): a byte is upper case when its low seven bits lie
/// in 0x41..=0x5a and its top bit is clear.
#[inline(always)]
pub(crate) fn fold_u32(x: u32) -> u32 {
    let low7 = x & 0x7f7f_7f7f;
    let ge_a = low7.wrapping_add(0x3f3f_3f3f);
    let gt_z = low7.wrapping_add(0x2525_2525);
    let upper = ge_a & !gt_z & !x & 0x8080_8080;
    x | (upper >> 2)
}

/// Folds the eight bytes of `x` at once (same trick as [`fold_u32`]).
#[inline(always)]
pub(crate) fn fold_u64(x: u64) -> u64 {
    let low7 = x & 0x7f7f_7f7f_7f7f_7f7f;
    let ge_a = low7.wrapping_add(0x3f3f_3f3f_3f3f_3f3f);
    let gt_z = low7.wrapping_add(0x2525_2525_2525_2525);
    let upper = ge_a & !gt_z & !x & 0x8080_8080_8080_8080;
    x | (upper >> 2)
}

/// Reads four bytes at `at` as a little-endian `u32`; the caller guarantees `at + 4 <= hay.len()`.
#[inline(always)]
pub(crate) fn read_u32(hay: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&hay[at..at + 4]);
    u32::from_le_bytes(w)
}

/// Reads eight bytes at `at` as a little-endian `u64`; the caller guarantees `at + 8 <= hay.len()`.
#[inline(always)]
pub(crate) fn read_u64(hay: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&hay[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Whether `hay` equals `pat` when both are folded; `pat` is already folded.
#[inline]
pub(crate) fn eq_folded(hay: &[u8], pat: &[u8]) -> bool {
    debug_assert_eq!(hay.len(), pat.len());
    let n = pat.len();
    let mut i = 0;
    while i + 8 <= n {
        if fold_u64(read_u64(hay, i)) != read_u64(pat, i) {
            return false;
        }
        i += 8;
    }
    while i < n {
        if fold(hay[i]) != pat[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `hay` equals `pat` byte for byte; inline (patterns are short, and a `memcmp` call
/// per candidate costs more than the comparison).
#[inline]
pub(crate) fn eq_exact(hay: &[u8], pat: &[u8]) -> bool {
    debug_assert_eq!(hay.len(), pat.len());
    let n = pat.len();
    let mut i = 0;
    while i + 8 <= n {
        if read_u64(hay, i) != read_u64(pat, i) {
            return false;
        }
        i += 8;
    }
    if i + 4 <= n {
        if read_u32(hay, i) != read_u32(pat, i) {
            return false;
        }
        i += 4;
    }
    while i < n {
        if hay[i] != pat[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swar_fold_agrees_with_bytewise_fold_on_every_byte() {
        for b in 0..=255u8 {
            let x = u32::from_le_bytes([b, b.wrapping_add(1), 0x5a, 0xc1]);
            let want = u32::from_le_bytes([fold(b), fold(b.wrapping_add(1)), b'z', 0xc1]);
            assert_eq!(fold_u32(x), want, "byte {b:#x}");
            let y = u64::from(x) | (u64::from(x) << 32);
            assert_eq!(fold_u64(y), u64::from(want) | (u64::from(want) << 32));
        }
    }

    #[test]
    fn eq_exact_compares_every_byte() {
        let a = b"0123456789abcdefXYZ";
        for n in 0..a.len() {
            assert!(eq_exact(&a[..n], &a[..n]));
            for k in 0..n {
                let mut b = a[..n].to_vec();
                b[k] ^= 1;
                assert!(!eq_exact(&a[..n], &b), "len {n} byte {k}");
            }
        }
    }

    #[test]
    fn eq_folded_compares_case_insensitively() {
        assert!(eq_folded(b"HeLLo, WoRLD!xyz", b"hello, world!xyz"));
        assert!(!eq_folded(b"HeLLo, WoRLD!xyz", b"hello, world!xyy"));
        assert!(!eq_folded(b"\xc1", b"\xe1"));
    }
}
