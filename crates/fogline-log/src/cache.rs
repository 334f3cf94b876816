//! The page cache behind a file-backed log: writeback started when a segment is sealed (by
//! [`SealFiles`]), and its pages dropped once written (drop-behind, see
//! [`Segment::sealed_pages`]).
//!
//! A log written at hundreds of MB/s otherwise fills the page cache with pages nobody reads
//! again soon, and every page the writer faults in is fresh memory; dropped pages come back
//! to the next segment's faults still hot. Advice only: where the kernel lacks a call, or
//! refuses it, the pages stay cached as before.
//!
//! [`Segment::sealed_pages`]: crate::segment::Segment::sealed_pages
//! [`SealFiles`]: crate::segment::SealFiles

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::buf::MapBuf;

/// A sealed, file-backed segment's mapping and file, whose pages are dropped on the log's
/// housekeeping thread (see `remover`): it takes milliseconds per 64 MiB segment (fadvise
/// 3-5 ms, the madvise 1 ms, measured with `strace -T` on the broker), which inline would
/// stall every connection of the runtime thread that rolled the segment.
pub struct SealedPages {
    pub(crate) buf: Arc<MapBuf>,
    pub(crate) path: PathBuf,
}

impl SealedPages {
    /// Takes the pages out of this process's page tables and asks the page cache to drop the
    /// ones already written back; a later read faults them in from the file.
    pub fn drop_cached(self) {
        // SAFETY: a shared file mapping of a sealed segment, whose bytes never change: the
        // pages read back as they were, exactly as after the kernel's own reclaim, which may
        // take clean mapped pages at any time; references into the range stay valid.
        unsafe { self.buf.release(0, self.buf.len()) };
        drop_file_cache(&self.path);
    }
}

/// Starts writing `len` bytes of `file`'s dirty pages from `offset` back (`len` 0: to the
/// end) without waiting for them (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so they are
/// clean, and can be dropped, by the time the next segment is sealed. Not a durability
/// point: nothing waits or checks.
pub fn start_writeback(file: &File, offset: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (
            libc::off64_t::try_from(offset),
            libc::off64_t::try_from(len),
        ) else {
            return;
        };
        // SAFETY: a plain system call on a descriptor `file` keeps open; no memory is passed.
        let _ = unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// Asks the kernel to drop the cached pages of the file at `path` that are clean and not
/// mapped (`posix_fadvise(POSIX_FADV_DONTNEED)`).
fn drop_file_cache(path: &Path) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // A file retention already removed has nothing left to drop.
        if let Ok(file) = File::open(path) {
            // SAFETY: a plain system call on a descriptor `file` keeps open; no memory is
            // passed.
            let _ =
                unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}
