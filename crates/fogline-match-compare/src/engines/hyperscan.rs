//! Hyperscan through a thin hand-written FFI shim (no bindgen): `hs_compile_lit_multi` in block
//! mode, one `hs_scan` per buffer, `HS_FLAG_CASELESS` on `nocase` patterns. Hyperscan reports
//! every end offset of every literal, the same semantics as overlapping Aho-Corasick.
//!
//! Links `libhs` (Debian: `libhyperscan-dev`). Declarations follow `hs/hs_compile.h`,
//! `hs/hs_runtime.h` and `hs/hs_common.h` of Hyperscan 5.4.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::ptr;

use super::Engine;
use crate::{Error, PatternLine};

#[repr(C)]
struct HsDatabase {
    _private: [u8; 0],
}

#[repr(C)]
struct HsScratch {
    _private: [u8; 0],
}

#[repr(C)]
struct HsCompileError {
    message: *mut c_char,
    expression: c_int,
}

type MatchHandler = unsafe extern "C" fn(
    id: c_uint,
    from: c_ulonglong,
    to: c_ulonglong,
    flags: c_uint,
    ctx: *mut c_void,
) -> c_int;

const HS_SUCCESS: c_int = 0;
const HS_MODE_BLOCK: c_uint = 1;
const HS_FLAG_CASELESS: c_uint = 1;

#[link(name = "hs")]
extern "C" {
    fn hs_compile_lit_multi(
        expressions: *const *const c_char,
        flags: *const c_uint,
        ids: *const c_uint,
        lens: *const usize,
        elements: c_uint,
        mode: c_uint,
        platform: *const c_void,
        db: *mut *mut HsDatabase,
        error: *mut *mut HsCompileError,
    ) -> c_int;
    fn hs_free_compile_error(error: *mut HsCompileError) -> c_int;
    fn hs_free_database(db: *mut HsDatabase) -> c_int;
    fn hs_database_size(db: *const HsDatabase, size: *mut usize) -> c_int;
    fn hs_alloc_scratch(db: *const HsDatabase, scratch: *mut *mut HsScratch) -> c_int;
    fn hs_scratch_size(scratch: *const HsScratch, size: *mut usize) -> c_int;
    fn hs_free_scratch(scratch: *mut HsScratch) -> c_int;
    fn hs_scan(
        db: *const HsDatabase,
        data: *const c_char,
        length: c_uint,
        flags: c_uint,
        scratch: *mut HsScratch,
        on_event: MatchHandler,
        ctx: *mut c_void,
    ) -> c_int;
}

/// Owns a database and its scratch space; freed on drop.
pub(crate) struct Hyperscan {
    db: *mut HsDatabase,
    scratch: *mut HsScratch,
}

fn build_err(message: String) -> Error {
    Error::Build {
        engine: "hyperscan",
        message,
    }
}

impl Hyperscan {
    pub(crate) fn new(patterns: &[PatternLine]) -> Result<Self, Error> {
        let exprs: Vec<*const c_char> = patterns.iter().map(|p| p.bytes.as_ptr().cast()).collect();
        let lens: Vec<usize> = patterns.iter().map(|p| p.bytes.len()).collect();
        let flags: Vec<c_uint> = patterns
            .iter()
            .map(|p| if p.nocase { HS_FLAG_CASELESS } else { 0 })
            .collect();
        let ids: Vec<c_uint> = patterns.iter().map(|p| p.id).collect();
        let n =
            c_uint::try_from(patterns.len()).map_err(|_| build_err("too many patterns".into()))?;
        let mut db = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: the four arrays have `n` elements and outlive the call; literals are passed
        // with explicit lengths, so they need no NUL terminator.
        let rc = unsafe {
            hs_compile_lit_multi(
                exprs.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                lens.as_ptr(),
                n,
                HS_MODE_BLOCK,
                ptr::null(),
                &mut db,
                &mut err,
            )
        };
        if rc != HS_SUCCESS {
            let msg = if err.is_null() {
                format!("hs_compile_lit_multi returned {rc}")
            } else {
                // SAFETY: on failure `err` points to a compile error with a C string message,
                // which we copy before freeing it.
                unsafe {
                    let m = CStr::from_ptr((*err).message)
                        .to_string_lossy()
                        .into_owned();
                    let at = (*err).expression;
                    hs_free_compile_error(err);
                    format!("{m} (pattern index {at})")
                }
            };
            return Err(build_err(msg));
        }
        let mut scratch = ptr::null_mut();
        // SAFETY: `db` is a valid database from the successful compile.
        let rc = unsafe { hs_alloc_scratch(db, &mut scratch) };
        if rc != HS_SUCCESS {
            // SAFETY: `db` is ours and not used again.
            unsafe { hs_free_database(db) };
            return Err(build_err(format!("hs_alloc_scratch returned {rc}")));
        }
        Ok(Hyperscan { db, scratch })
    }

    fn scan(&mut self, hay: &[u8], handler: MatchHandler, ctx: *mut c_void) {
        // Block mode takes an `unsigned int` length; the runner rejects larger inputs.
        let len = c_uint::try_from(hay.len()).unwrap_or(c_uint::MAX);
        // SAFETY: `db` and `scratch` are valid and owned by `self` (`&mut self` gives the
        // scratch to one scan at a time); `hay` outlives the call; `ctx` is what `handler`
        // expects.
        unsafe {
            hs_scan(
                self.db,
                hay.as_ptr().cast(),
                len,
                0,
                self.scratch,
                handler,
                ctx,
            );
        }
    }
}

unsafe extern "C" fn on_count(
    _: c_uint,
    _: c_ulonglong,
    _: c_ulonglong,
    _: c_uint,
    ctx: *mut c_void,
) -> c_int {
    // SAFETY: `ctx` is the `&mut u64` passed by `count`.
    unsafe { *ctx.cast::<u64>() += 1 };
    0
}

unsafe extern "C" fn on_each(
    id: c_uint,
    _: c_ulonglong,
    to: c_ulonglong,
    _: c_uint,
    ctx: *mut c_void,
) -> c_int {
    // SAFETY: `ctx` is the `&mut &mut dyn FnMut` passed by `for_each`.
    let f = unsafe { &mut *ctx.cast::<&mut dyn FnMut(u32, usize)>() };
    f(id, to as usize);
    0
}

impl Engine for Hyperscan {
    fn name(&self) -> &'static str {
        "hyperscan"
    }

    fn count(&mut self, hay: &[u8]) -> u64 {
        let mut n = 0u64;
        self.scan(hay, on_count, (&mut n as *mut u64).cast());
        n
    }

    fn for_each(&mut self, hay: &[u8], mut f: &mut dyn FnMut(u32, usize)) {
        let ctx: *mut &mut dyn FnMut(u32, usize) = &mut f;
        self.scan(hay, on_each, ctx.cast());
    }

    fn heap_bytes(&self) -> usize {
        let (mut d, mut s) = (0usize, 0usize);
        // SAFETY: both handles are valid; the functions only write the sizes.
        unsafe {
            hs_database_size(self.db, &mut d);
            hs_scratch_size(self.scratch, &mut s);
        }
        d + s
    }
}

impl Drop for Hyperscan {
    fn drop(&mut self) {
        // SAFETY: both were allocated by Hyperscan in `new` and are freed once.
        unsafe {
            hs_free_scratch(self.scratch);
            hs_free_database(self.db);
        }
    }
}
