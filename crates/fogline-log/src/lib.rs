//! Segmented, append-only, memory-mapped record log: the storage under every fogline stream.
//!
//! # Storage modes
//!
//! - `memory`: segments are anonymous mappings; nothing touches the disk.
//! - `mmap`: segments are files mapped `MAP_SHARED`; `append` copies the record into the
//!   mapping, so once `append` returned the record is in the kernel's page cache and survives
//!   `kill -9` of the process (not a power loss).
//! - `fsync`: as `mmap`, and `commit` msyncs (`MS_SYNC`, a data sync of the range) the bytes
//!   appended since the previous commit before making them visible. Fsync policy: every commit
//!   (one per acknowledged batch) is durable before it returns; creating a segment fsyncs the
//!   preallocated file and the directory; sealing fsyncs the truncated file, the index file and
//!   the directory; retention fsyncs the directory after deleting a segment's files; opening
//!   fsyncs the active segment and the directory, since after a `kill -9` they may hold
//!   records and segment files that are only in the page cache, which the log then serves.
//!   A record acknowledged after `commit` survives power loss. For group commit,
//!   [`Log::sync_job`] hands out the same flush to run on another thread while appends go on;
//!   [`Log::finish_sync`] then makes what it flushed visible (the broker's streams do this, so
//!   one `msync` serves every batch appended before it began).
//!
//!   `tests/power_cut` checks this. Every durability point (the `durability` module) tells a
//!   hook the test installs what became durable; at each one the test builds the disks a power
//!   cut there may leave (exactly what was synced, all of the page cache, or random pages and
//!   directory entries of it) and opens them: every record made visible before the cut must
//!   be there and intact, every record served must be the one appended at its offset, and the
//!   log must verify and take appends. Its seeded workload rolls, seals, purges, applies
//!   retention, and restarts after power cuts and kills in the middle of any of it.
//!
//!   With `fsync` storage the active segment's mapping is advised `MADV_RANDOM` (sealing
//!   takes the advice back), so its pages sit in the page cache as single pages faulted in by
//!   the writer, not as the large folios (up to 2 MiB on Linux 6.x ext4 and xfs) that
//!   readahead builds: dirty state is per folio, so the msync of one record's page wrote its
//!   whole folio. (`mmap` storage keeps large folios: it has no msync per commit.)
//!
//! # Appending and reading
//!
//! `append` assigns the next offset and copies the record into the active segment (no
//! allocation); `commit` makes everything appended so far readable (after syncing it, for
//! `fsync`). `read` returns committed records as `Bytes` slices of the mapping (no copy),
//! `next_offset` is the offset the next append gets, `committed_offset` the end of what reads
//! can see. Lookups go through a sparse per-segment index (offset -> position and time).
//!
//! # On-disk format
//!
//! One directory per stream holding segment files `BASE.log` (`BASE` = offset of the segment's
//! first record, 20 zero-padded decimal digits) and, for sealed segments, `BASE.idx`.
//!
//! A segment file is a sequence of records (little-endian, no padding), followed by zeros:
//!
//! ```text
//! 0   u32  len          bytes after this field: 32 + topic_len + headers_len + payload_len
//! 4   u32  crc          CRC-32 (IEEE, crc32fast) of bytes [8, 4 + len)
//! 8   u64  offset       base + index of the record in the segment
//! 16  u64  timestamp    microseconds since the UNIX epoch
//! 24  u32  topic_len
//! 28  u32  headers_len
//! 32  u32  payload_len
//! 36  topic | headers | payload
//! ```
//!
//! A record with an empty topic is a *loss marker*: it stands for the offsets from its own up
//! to the next record's (or the next segment's base), whose records were damaged and dropped by
//! recovery; `append` refuses empty topics. (Index files of the layout before markers,
//! `FLOGIDX1`, are rebuilt on the first open.)
//!
//! The active (last) segment is preallocated to `segment_bytes` (`set_len` plus
//! `posix_fallocate`, so a full disk fails the roll with an error instead of raising SIGBUS on
//! a write through the mapping; the next segment's file is made ahead on the housekeeping
//! thread once the active one is three quarters full, `prepare`) and written through the
//! mapping; the first zero `len` (or
//! fewer than four bytes left) ends the data. The writer faults pages in ahead of itself
//! (`MADV_POPULATE_WRITE`), 1 MiB at a time once the segment holds 1 MiB (from 16 KiB, so the
//! first record of a fresh segment does not wait for 256 pages; that first step is taken when
//! the segment is created or opened, as the first fault into the file's unwritten tail
//! zero-fills a whole readahead window): one call instead of 256 page faults, which took about 10% (file) and 20% (memory) of a server's CPU time for 100 kB
//! records.
//! When a record does not fit, the segment is sealed: it is committed at once, then (on the
//! log's housekeeping thread) its file is cut to its data length and
//! its sparse index is written to `BASE.idx` (format in the `index` module: summary, entries
//! of `(offset - base, position, timestamp)` every 4 KiB of records, CRC). A record larger than
//! `segment_bytes` gets a segment sized for it.
//!
//! # Invariants
//!
//! 1. Offsets are consecutive within a segment (a loss marker stands for the offsets it
//!    replaced); segment `k+1` starts at segment `k`'s next offset. Offsets are never reused:
//!    retention drops whole oldest segments and never the active one. (A gap between segments
//!    means a segment file was deleted behind the log's back: reads in it fail with `Lost`,
//!    `verify` fails, and `verify --repair` puts a marker segment in its place.)
//! 2. Timestamps never decrease within a log (`append` raises an older one).
//! 3. Every record of the active segment is valid, and in file storage every byte after its
//!    data is zero (memory storage, which is never recovered, may reuse a mapping with stale
//!    bytes past the write position; reads stop there). Recovery re-establishes this by
//!    zeroing an invalid tail to the end of the file, so bytes that survived a crash out of
//!    order can never be read as records after new appends.
//! 4. Once its seal is finished, a sealed segment's file length equals its data length, and a
//!    valid `BASE.idx` describes exactly that data; before (the work runs after the roll, or
//!    a crash came first), the file has zeros after its data and no index, which the next
//!    open finishes quietly and `verify` reports as `Unfinished`.
//! 5. Bytes of committed records are never written again while mapped; readers receive
//!    `Bytes` that keep the mapping alive, even after retention deletes the file.
//!
//! # Recovery (`Log::open`)
//!
//! The last segment is checked record by record (length, CRC, consecutive offsets, monotone
//! timestamps). A sealed segment is trusted when its index decodes (CRC), its summary matches
//! the file length and base, and its first and last records pass the full check; otherwise it
//! is scanned and re-indexed. A scan that meets damage finds the next valid record (see the
//! `format` module) and overwrites the damaged bytes with a loss marker for their offsets, so
//! only the damaged records are lost; damage with nothing valid after it ends the data (the
//! active segment's tail is zeroed, a sealed segment's becomes a marker up to the next base).
//! Records read from a segment trusted on its index have their CRC checked on every read, so
//! damage inside it is refused (`LogError::Corrupt`, which says where reading goes on), never
//! served; a marked offset reads as `LogError::Lost`. Temporary files are deleted. With `fsync`
//! storage the active segment (with its repairs) and the directory are synced before the log
//! is returned. Nothing is refused: every repair is listed in the [`RecoveryReport`].
//! [`verify`] checks every record of every segment and every index entry.
//!
//! One log per stream directory: `Log::open` takes an exclusive `flock` on `DIR/.lock` (held
//! until the log is dropped, released by the kernel if the process dies) and fails with
//! `LogError::Locked` when another log holds it.

#![deny(missing_docs)]

mod buf;
mod cache;
mod durability;
mod error;
mod format;
mod index;
mod log;
mod options;
mod prepare;
mod recovery;
mod remover;
mod scan;
mod segment;
mod verify;

#[doc(hidden)]
pub use durability::{set_sync_hook, Synced};
pub use error::LogError;
pub use format::{records_len, Damage};
pub use log::{now_micros, Log, LogStats, RetentionReport};
pub use options::{LogOptions, Record, Storage};
pub use recovery::{RecoveryReport, Repair};
pub use segment::SyncJob;
pub use verify::{verify, IndexStatus, LostRange, SegmentReport, StreamReport, VerifyReport};

/// Size of a record's fixed fields; a record's encoded size is this plus topic, headers and
/// payload lengths.
pub const RECORD_OVERHEAD: usize = format::RECORD_HEADER;
