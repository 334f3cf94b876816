//! The filtering round (V-PATCH section 2.4.1, "Filtering", and 2.4.2): for each input position,
//! the merged 2-byte filter (bits "short" and "long") and, for positions passing "long", the
//! hashed 4-byte filter. Positions that pass are written to candidate arrays, verified later in a
//! separate round so that the filters and the verification tables do not evict each other.
//!
//! Every implementation writes exactly the same candidates for the same input; they differ only
//! in how many positions they test per instruction. All stop early at a *flood*: a block of 32
//! identical bytes at a position at or after `flood_from` (see `scan`).

pub(crate) mod scalar;
pub(crate) mod table;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;
#[cfg(target_arch = "x86_64")]
pub(crate) mod table_x86;

use std::mem::MaybeUninit;

use crate::tables::Tables;

/// Positions filtered per round; candidates of one round fit in L1 next to the filters.
pub(crate) const CHUNK: usize = 1024;

/// Candidate positions of one round, relative to the round's first position.
///
/// Invariant: `short[..nshort]` and `long[..nlong]` are initialised; the arrays are left
/// uninitialised otherwise so that a scan of a small packet does not pay to zero them. They have
/// `SLACK` spare slots so that vector code can store a whole register of positions past the
/// last candidate (a full store is cheaper than a compress-store to memory, which is known to be
/// slow on AMD Zen 4).
pub(crate) struct Cands {
    short: [MaybeUninit<u32>; CHUNK + SLACK],
    nshort: usize,
    long: [MaybeUninit<u32>; CHUNK + SLACK],
    nlong: usize,
}

/// Spare slots after `CHUNK`: one 16-lane register.
const SLACK: usize = 16;

impl Cands {
    pub(crate) fn new() -> Self {
        Cands {
            short: [MaybeUninit::uninit(); CHUNK + SLACK],
            nshort: 0,
            long: [MaybeUninit::uninit(); CHUNK + SLACK],
            nlong: 0,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.nshort = 0;
        self.nlong = 0;
    }

    /// Adds a short candidate; at most `CHUNK` per round (one per position).
    #[inline(always)]
    pub(crate) fn push_short(&mut self, r: u32) {
        self.short[self.nshort] = MaybeUninit::new(r);
        self.nshort += 1;
    }

    /// Adds a long candidate; at most `CHUNK` per round (one per position).
    #[inline(always)]
    pub(crate) fn push_long(&mut self, r: u32) {
        self.long[self.nlong] = MaybeUninit::new(r);
        self.nlong += 1;
    }

    /// Adds a long candidate when `keep`, without a branch (the slot is written either way).
    #[inline(always)]
    pub(crate) fn push_long_if(&mut self, r: u32, keep: bool) {
        self.long[self.nlong] = MaybeUninit::new(r);
        self.nlong += usize::from(keep);
    }

    pub(crate) fn short(&self) -> &[u32] {
        // SAFETY: the first `nshort` elements were written (invariant above).
        unsafe { std::slice::from_raw_parts(self.short.as_ptr().cast(), self.nshort) }
    }

    pub(crate) fn long(&self) -> &[u32] {
        // SAFETY: the first `nlong` elements were written (invariant above).
        unsafe { std::slice::from_raw_parts(self.long.as_ptr().cast(), self.nlong) }
    }

    /// Raw write access for vector stores: pointers to the next free slots and room left
    /// (always at least `SLACK` while fewer than `CHUNK` positions were filtered). The caller
    /// must add what it wrote with `grow`.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn spare(&mut self) -> (*mut u32, *mut u32, usize) {
        let room = CHUNK + SLACK - self.nshort.max(self.nlong);
        (
            self.short[self.nshort..].as_mut_ptr().cast(),
            self.long[self.nlong..].as_mut_ptr().cast(),
            room,
        )
    }

    /// The next free short slot, for whole-vector stores of up to 64 positions (a block): a
    /// round has at most `CHUNK` positions and blocks start at most one position after it, so
    /// fewer than `CHUNK - 64 + 2` candidates precede a block. Add what was written with `grow`.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn spare_short(&mut self) -> *mut u32 {
        assert!(self.nshort + 64 <= CHUNK + SLACK);
        self.short[self.nshort..].as_mut_ptr().cast()
    }

    /// As `spare_short`, for long candidates.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn spare_long(&mut self) -> *mut u32 {
        assert!(self.nlong + 64 <= CHUNK + SLACK);
        self.long[self.nlong..].as_mut_ptr().cast()
    }

    /// Records `ns` and `nl` elements written through `spare`.
    ///
    /// # Safety
    /// Exactly that many elements must have been written after the previous ends.
    #[cfg(target_arch = "x86_64")]
    pub(crate) unsafe fn grow(&mut self, ns: usize, nl: usize) {
        debug_assert!(self.nshort + ns <= CHUNK && self.nlong + nl <= CHUNK);
        self.nshort += ns;
        self.nlong += nl;
    }
}

/// Where a filter call stopped: positions `from..stop` are filtered; `flood` says that a run of
/// at least 32 equal bytes starts at `stop`.
pub(crate) struct Stop {
    pub stop: usize,
    pub flood: bool,
}

/// A filter implementation, chosen once when the matcher is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simd {
    /// The fastest measured (see `results/`): the strided table filter, on every CPU. The
    /// gather filters stay available by name.
    Auto,
    /// Portable scalar code, one position at a time (S-PATCH, Algorithm 1).
    Scalar,
    /// Portable block filter: byte-per-bigram table, 64 positions per block, bit-mask output.
    Table,
    /// x86-64 AVX2 with 8-lane gathers.
    Avx2,
    /// x86-64 AVX-512 (F, BW, VBMI) with 16-lane gathers and compress-stores.
    Avx512,
    /// aarch64 NEON: vector case folding and flood tests, scalar filter lookups (no gather).
    Neon,
}

/// The code a matcher runs, fixed when it is built (CPU features are detected once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Impl {
    Scalar,
    Table,
    /// The table filter compiled with BMI1/2, POPCNT and AVX2.
    #[cfg(target_arch = "x86_64")]
    TableX86,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "aarch64")]
    Neon,
}

impl Simd {
    /// Resolves `Auto`; returns the public name and the code to run, or `None` when the
    /// requested implementation is not available on this CPU.
    pub(crate) fn resolve(self) -> Option<(Simd, Impl)> {
        let simd = if self == Simd::Auto { best() } else { self };
        let imp = match simd {
            Simd::Scalar => Impl::Scalar,
            #[cfg(target_arch = "x86_64")]
            Simd::Table if table_x86::has_x86_features() => Impl::TableX86,
            Simd::Table => Impl::Table,
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 if has_avx2() => Impl::Avx2,
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 if has_avx512() => Impl::Avx512,
            #[cfg(target_arch = "aarch64")]
            Simd::Neon => Impl::Neon,
            _ => return None,
        };
        Some((simd, imp))
    }
}

/// The strided table filter beat the AVX2 and AVX-512 gather filters on the benchmark machine
/// (an AMD EPYC with AVX-512, where the gathers were the bottleneck) on every data set; without
/// a machine with fast gathers to show otherwise, it is the default everywhere.
fn best() -> Simd {
    Simd::Table
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
}

/// Filters positions `from..to` of `hay` into `c` with implementation `simd` (already resolved).
#[inline]
pub(crate) fn run(
    imp: Impl,
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    debug_assert!(to - from <= CHUNK && to <= hay.len());
    match imp {
        // SAFETY: `resolve` returned these only after detecting the CPU features.
        #[cfg(target_arch = "x86_64")]
        Impl::Avx2 => unsafe { avx2::filter(t, hay, from, to, flood_from, c) },
        #[cfg(target_arch = "x86_64")]
        Impl::Avx512 => unsafe { avx512::filter(t, hay, from, to, flood_from, c) },
        #[cfg(target_arch = "x86_64")]
        Impl::TableX86 => unsafe { table_x86::filter_x86(t, hay, from, to, flood_from, c) },
        #[cfg(target_arch = "aarch64")]
        Impl::Neon => neon::filter(t, hay, from, to, flood_from, c),
        Impl::Table => table::filter(t, hay, from, to, flood_from, c),
        Impl::Scalar => scalar::filter(t, hay, from, to, flood_from, c),
    }
}
