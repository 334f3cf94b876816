//! The memory behind a segment: a file mapping (MAP_SHARED) or an anonymous mapping, shared
//! between the writer and the `Bytes` handed to readers.
//!
//! Soundness rests on one invariant kept by `Segment`: a byte range is written only while it is
//! past the segment's visible end, and once made visible it is never written again. Readers
//! (`View`) only cover visible ranges, so no `&[u8]` ever aliases a range being written. The
//! exception is recovery, which rewrites a segment's tail before any `View` of it exists.
//! Mappings live as long as the last `Arc`, so a `Bytes` stays valid after retention deletes
//! the file. Another process writing the same files breaks the invariant: one process per data
//! directory.

use memmap2::{MmapOptions, MmapRaw};
use std::fs::File;
use std::io;
use std::sync::Arc;

/// A mapping shared by a segment and the `Bytes` returned from reads.
#[derive(Debug)]
pub struct MapBuf {
    map: MmapRaw,
}

impl MapBuf {
    /// An anonymous, zero-filled mapping (memory storage).
    pub fn anon(len: usize) -> io::Result<MapBuf> {
        let map = MmapOptions::new().len(len.max(1)).map_anon()?;
        Ok(MapBuf { map: map.into() })
    }

    /// A writable shared mapping of the whole file.
    pub fn file_rw(file: &File) -> io::Result<MapBuf> {
        Ok(MapBuf {
            map: MmapRaw::map_raw(file)?,
        })
    }

    /// A read-only shared mapping of the whole file (sealed segments).
    pub fn file_ro(file: &File) -> io::Result<MapBuf> {
        Ok(MapBuf {
            map: MmapOptions::new().map_raw_read_only(file)?,
        })
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Reads `[start, end)`.
    ///
    /// # Safety
    /// The range must be inside the mapping (and inside the file) and must not be written while
    /// the returned slice lives.
    pub unsafe fn slice(&self, start: usize, end: usize) -> &[u8] {
        debug_assert!(start <= end && end <= self.len());
        // SAFETY: in bounds and not concurrently written, per the caller's contract.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(start), end - start) }
    }

    /// Writes into `[start, end)`.
    ///
    /// # Safety
    /// The range must be inside a writable mapping and no other reference to it may exist while
    /// the returned slice lives (it is past every reader's visible end).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, start: usize, end: usize) -> &mut [u8] {
        debug_assert!(start <= end && end <= self.len());
        // SAFETY: in bounds and exclusively ours, per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(start), end - start) }
    }

    /// Faults in `[start, end)` writable in one call (`MADV_POPULATE_WRITE`), so appends do
    /// not take one page fault per 4 KiB. False when the kernel cannot (before Linux 5.14):
    /// the pages then fault on first write as before.
    pub fn populate(&self, start: usize, end: usize) -> bool {
        let end = end.min(self.len());
        if end <= start {
            return true;
        }
        #[cfg(target_os = "linux")]
        {
            self.map
                .advise_range(memmap2::Advice::PopulateWrite, start, end - start)
                .is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// With `on`, asks the kernel not to read ahead on faults in this mapping
    /// (`MADV_RANDOM`), so the page cache holds its pages as single 4 KiB pages; without,
    /// gives it back its default (`MADV_NORMAL`). Dirty state is kept per cached folio, and
    /// readahead builds folios of up to 2 MiB on Linux 6.x file systems that support large
    /// folios (ext4, xfs): an `msync` of one dirty page then writes its whole folio. Advice
    /// only: a kernel that refuses it leaves the mapping as it was.
    pub fn advise_single_pages(&self, on: bool) {
        #[cfg(unix)]
        {
            let advice = if on {
                memmap2::Advice::Random
            } else {
                memmap2::Advice::Normal
            };
            let _ = self.map.advise(advice);
        }
        #[cfg(not(unix))]
        let _ = on;
    }

    /// Takes the pages of `[start, end)` (whole pages only) out of this process's page tables
    /// (`MADV_DONTNEED`): they stay in the page cache and come back on the next access, but
    /// no longer count in the process's resident memory. Recovery reads a whole preallocated
    /// segment to check that the bytes past its data are zero; without this, every restart
    /// left each stream's segment (64 MiB by default) resident.
    ///
    /// # Safety
    /// Only for a shared file mapping (on an anonymous or private one the pages would read
    /// back as zeros), and no reference into the range may exist.
    pub unsafe fn release(&self, start: usize, end: usize) {
        let page = page_size();
        let start = start.div_ceil(page) * page;
        let end = end.min(self.len());
        if end <= start {
            return;
        }
        #[cfg(unix)]
        {
            // SAFETY: a shared file mapping (the caller's contract), so the pages are read back
            // from the file; no reference into the range exists.
            let r = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
            // Advice only: a kernel that refuses it leaves the pages resident, nothing else.
            let _ = r;
        }
    }

    /// msync(MS_SYNC) of `[start, end)`; a no-op for anonymous mappings' durability.
    pub fn flush(&self, start: usize, end: usize) -> io::Result<()> {
        if end > start {
            self.map.flush_range(start, end - start)?;
        }
        Ok(())
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// An owner for `Bytes::from_owner`: a visible range of a segment.
pub struct View {
    buf: Arc<MapBuf>,
    start: usize,
    end: usize,
}

impl View {
    /// A view of `[start, end)`; the caller guarantees the range is visible (never written again).
    pub fn new(buf: Arc<MapBuf>, start: usize, end: usize) -> View {
        assert!(start <= end && end <= buf.len(), "view out of bounds");
        View { buf, start, end }
    }
}

impl AsRef<[u8]> for View {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `new` checked the bounds; the range was visible when the view was made and
        // visible ranges are never written again (module invariant).
        unsafe { self.buf.slice(self.start, self.end) }
    }
}

#[cfg(test)]
mod tests {
    use super::MapBuf;

    #[test]
    fn populate_keeps_zeroes_and_clamps_to_the_mapping() {
        let b = MapBuf::anon(3 << 20).unwrap();
        let ok = b.populate(4096, 8 << 20);
        assert_eq!(ok, cfg!(target_os = "linux"));
        // SAFETY: in bounds; nothing writes this mapping.
        let all = unsafe { b.slice(0, b.len()) };
        assert!(all.iter().all(|&x| x == 0));
        assert!(b.populate(10, 10), "an empty range is a no-op");
    }
}
