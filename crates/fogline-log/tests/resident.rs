//! Reopening a log does not leave its active segment resident: recovery reads every page to
//! check that the bytes past the data are zero, then gives the pages past the data back
//! (they stay in the page cache, not in the process's resident memory).

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

#[test]
fn a_reopened_segment_is_not_left_resident() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LogOptions {
        storage: Storage::Mmap,
        dir: Some(dir.path().to_path_buf()),
        segment_bytes: 16 << 20,
        ..LogOptions::default()
    };
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    for i in 0..100u64 {
        log.append(i + 1, b"t", b"", &[7u8; 100]).unwrap();
    }
    log.commit().unwrap();
    drop(log);
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
