//! Reopening a log does not leave its active segment resident: recovery reads every page to
//! check that the bytes past the data are zero, then gives the pages past the data back
//! (they stay in the page cache, not in the process's resident memory).

mod common;

use common::file_opts;
use fogline_log::{Log, LogOptions, Storage};

/// Resident KiB of the mappings of `file` in this process (`/proc/self/smaps`).
fn resident_kib(file: &std::path::Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let name = file.to_string_lossy();
    let mut total = 0;
    let mut inside = false;
    for line in smaps.lines() {
        if line.contains('-') && line.split_whitespace().count() >= 5 {
            let first = line.split_whitespace().next().unwrap_or("");
            if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                inside = line.ends_with(name.as_ref());
                continue;
            }
        }
        if inside {
            if let Some(kib) = line.strip_prefix("Rss:") {
                total += kib
                    .trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0);
            }
        }
    }
    total
}

/// The options of a log in `dir` (16 MiB segments) holding 100 committed records, closed.
fn closed_log_of_100(dir: &std::path::Path) -> LogOptions {
    let opts = file_opts(dir, Storage::Mmap, 16 << 20);
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    for i in 0..100u64 {
        log.append(i + 1, b"t", b"", &[7u8; 100]).unwrap();
    }
    log.commit().unwrap();
    opts
}

#[test]
fn a_reopened_segment_is_not_left_resident() {
    let dir = tempfile::tempdir().unwrap();
    let opts = closed_log_of_100(dir.path());
    let (log, report) = Log::open(opts).unwrap();
    assert!(report.is_clean());
    assert_eq!(log.stats().records, 100);
    let segment = dir.path().join("00000000000000000000.log");
    let kib = resident_kib(&segment);
    assert!(
        kib < 1024,
        "{kib} KiB of the 16 MiB segment resident after the reopen"
    );
    // What is read still reads.
    assert_eq!(log.read(99, 1, 1 << 20).unwrap()[0].payload.len(), 100);
}

/// Pages of the file at `path` in the page cache (`mincore` over a fresh mapping of it).
fn cached_pages(path: &std::path::Path) -> usize {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    let page = 4096;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: a read-only shared mapping of `len` bytes of a file this test holds open,
    // unmapped before return; mincore writes one byte per page into `vec`, sized for it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
        libc::munmap(p, len);
    }
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

/// True for tmpfs, whose pages are the file's only copy and never dropped.
fn on_tmpfs(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: statfs fills the zeroed struct it is given; `c` is a valid C string.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        assert_eq!(libc::statfs(c.as_ptr(), &mut st), 0);
        st.f_type == 0x0102_1994
    }
}

/// Drop-behind: once the segment after it is sealed too, a written-back segment's pages
/// leave the page cache, and everything in it still reads, through `Bytes` taken before the
/// drop as well as through new reads.
#[test]
fn sealed_segments_are_dropped_behind_and_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let opts = file_opts(dir.path(), Storage::Mmap, 1 << 20);
    let (mut log, _) = Log::open(opts).unwrap();
    let payload = |i: u64| vec![(i % 251) as u8; 1000];
    let mut i = 0u64;
    let mut fill_segments = |log: &mut Log, n: usize| {
        let start = log.stats().segments;
        while log.stats().segments < start + n {
            log.append(i + 1, b"t", b"", &payload(i)).unwrap();
            log.commit().unwrap();
            i += 1;
        }
    };
    fill_segments(&mut log, 1);
    let first = dir.path().join("00000000000000000000.log");
    let held = log.read(0, 1, 1 << 20).unwrap().remove(0);
    assert!(cached_pages(&first) > 200, "the sealed segment was cached");
    // Its writeback is under way; wait for it so that the drop finds the pages clean.
    log.wait_for_removals();
    std::fs::File::open(&first).unwrap().sync_all().unwrap();
    fill_segments(&mut log, 1);
    log.wait_for_removals();
    if on_tmpfs(dir.path()) {
        eprintln!("tmpfs: its pages cannot be dropped; checking reads only");
    } else {
        let left = cached_pages(&first);
        assert!(left < 8, "{left} pages of the first segment still cached");
    }
    assert_eq!(held.payload, payload(0));
    let n = log.stats().records;
    let mut from = 0;
    while from < n {
        for r in log.read(from, 500, 4 << 20).unwrap() {
            assert_eq!(r.payload, payload(r.offset), "offset {}", r.offset);
            from = r.offset + 1;
        }
    }
}

/// Reopening a log finds its records whatever was written where in the active segment's
/// preallocated tail: a stray byte far past the data (beyond the written region the scan
/// now stops at, were it a hole) is still found and dropped.
#[test]
fn a_reopen_finds_stray_bytes_anywhere_in_the_tail() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let opts = closed_log_of_100(dir.path());
    let segment = dir.path().join("00000000000000000000.log");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap();
    file.write_all_at(&[0xAB; 3], (12 << 20) + 5).unwrap();
    drop(file);
    let (log, report) = Log::open(opts).unwrap();
    assert!(!report.is_clean(), "the stray bytes were found");
    assert_eq!(log.stats().records, 100);
    let mut tail = [1u8; 3];
    std::fs::File::open(&segment)
        .unwrap()
        .read_exact_at(&mut tail, (12 << 20) + 5)
        .unwrap();
    assert_eq!(tail, [0; 3], "and zeroed");
}

/// Cached and dirty pages of `[offset, offset + len)` of the file at `path` (`cachestat`,
/// Linux 6.5); None where the kernel lacks the call.
fn cache_stat(path: &std::path::Path, offset: u64, len: u64) -> Option<(u64, u64)> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    // 451 on every architecture (numbers from 424 up are shared).
    const SYS_CACHESTAT: libc::c_long = 451;
    let file = std::fs::File::open(path).unwrap();
    let range = Range { off: offset, len };
    let mut stat = Stat::default();
    // SAFETY: the kernel reads `range` and writes `stat`, both live and laid out as it
    // expects; the descriptor is open.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0,
        )
    };
    (rc == 0).then_some((stat.nr_cache, stat.nr_dirty))
}

/// With `mmap` storage the active segment's writeback starts every 8 MiB as it fills, so
/// its dirty pages do not pile up until the kernel throttles the writer: with 20 MiB
/// written, no page of the first 16 MiB is dirty any more (left to the kernel, all 4,096
/// are, for half a minute, unless memory runs short).
#[test]
fn the_active_segment_is_written_back_as_it_fills() {
    let dir = tempfile::tempdir().unwrap();
    if on_tmpfs(dir.path()) {
        eprintln!("tmpfs: nothing is written back");
        return;
    }
    let opts = file_opts(dir.path(), Storage::Mmap, 64 << 20);
    let (mut log, _) = Log::open(opts).unwrap();
    let payload = vec![5u8; 1000];
    let mut bytes = 0;
    while bytes < 20 << 20 {
        log.append(1, b"t", b"", &payload).unwrap();
        log.commit().unwrap();
        bytes += payload.len() + 40;
    }
    assert_eq!(log.stats().segments, 1);
    let segment = dir.path().join("00000000000000000000.log");
    let Some((cached, dirty)) = cache_stat(&segment, 0, 16 << 20) else {
        eprintln!("no cachestat (before Linux 6.5): not checked");
        return;
    };
    assert!(cached > 3000, "{cached} pages of the first 16 MiB cached");
    assert_eq!(dirty, 0, "pages of the first 16 MiB still dirty");
}
