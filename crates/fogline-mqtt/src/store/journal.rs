//! The append side of `state.log`: a failed append leaves no torn entry behind.
//!
//! Replay stops at the first bad entry, so a half-written entry left at the end would hide
//! every entry appended after it. A failed write is therefore cut off again (`set_len` to
//! the length before it); when even that fails, or a sync fails (the kernel may have
//! dropped the written pages), the journal is broken and takes no more entries, so it
//! never holds a gap that replay would read past.
//!
//! While a compaction builds its snapshot, what is appended is also kept in `copy`, to
//! follow the snapshot in the new file (see `Store::finish_compaction`).

use std::fs::File;
use std::io::{self, Write};

/// What the journal needs of its file (a fake in the tests injects failures).
pub(super) trait JournalFile: Write {
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn sync_data(&self) -> io::Result<()>;
}

impl JournalFile for File {
    fn set_len(&self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
}

/// Why an append failed.
#[derive(Debug)]
pub(super) enum AppendError {
    /// The write or sync failed.
    Io(io::Error),
    /// An earlier failure could not be undone: nothing more is written.
    Broken,
}

/// Most bytes kept in `copy` while a compaction runs; past it the compaction is abandoned.
const COPY_LIMIT: usize = 64 << 20;

/// An append-only file of framed entries and its length.
pub(super) struct Journal<F> {
    pub(super) file: F,
    pub(super) len: u64,
    broken: bool,
    /// What was appended since a compaction began (`None`: none runs, or it overflowed).
    pub(super) copy: Option<Vec<u8>>,
    /// Its server stopped: no compaction may begin or finish (a new server may own the
    /// file by now).
    pub(super) closed: bool,
    /// Its length when it was opened or last compacted.
    pub(super) base: u64,
    /// After a failed compaction (a full disk, say): the length it must reach before the
    /// next try, so that a failure is not retried on every append.
    pub(super) retry_at: u64,
}

impl<F: JournalFile> Journal<F> {
    /// A journal whose file (opened for appending) is `len` bytes long.
    pub(super) fn new(file: F, len: u64) -> Self {
        Self {
            file,
            len,
            broken: false,
            copy: None,
            closed: false,
            base: len,
            retry_at: 0,
        }
    }

    /// Takes no more entries (its file is no longer the journal).
    pub(super) fn set_broken(&mut self) {
        self.broken = true;
    }

    /// True when an append failed beyond repair.
    pub(super) fn broken(&self) -> bool {
        self.broken
    }

    /// Appends `buf` whole, or leaves the file as it was (or broken).
    pub(super) fn append(&mut self, buf: &[u8], sync: bool) -> Result<(), AppendError> {
        if self.broken {
            return Err(AppendError::Broken);
        }
        if let Err(e) = self.file.write_all(buf) {
            if self.file.set_len(self.len).is_err() {
                self.broken = true;
            }
            return Err(AppendError::Io(e));
        }
        if sync {
            if let Err(e) = self.file.sync_data() {
                self.broken = true;
                return Err(AppendError::Io(e));
            }
        }
        self.len += buf.len() as u64;
        if let Some(copy) = &mut self.copy {
            if copy.len() + buf.len() > COPY_LIMIT {
                self.copy = None;
            } else {
                copy.extend_from_slice(buf);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;

    /// A file in memory that writes `room` more bytes and then fails, like a full disk.
    struct Fake {
        data: RefCell<Vec<u8>>,
        room: Cell<usize>,
        truncate_fails: bool,
        sync_fails: bool,
    }

    impl Fake {
        fn new(room: usize) -> Self {
            Self {
                data: RefCell::new(Vec::new()),
                room: Cell::new(room),
                truncate_fails: false,
                sync_fails: false,
            }
        }
    }

    impl Write for Fake {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.room.get());
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            self.room.set(self.room.get() - n);
            self.data.borrow_mut().extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl JournalFile for Fake {
        fn set_len(&self, len: u64) -> io::Result<()> {
            if self.truncate_fails {
                return Err(io::Error::other("cannot truncate"));
            }
            self.data.borrow_mut().truncate(len as usize);
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            if self.sync_fails {
                return Err(io::Error::other("sync failed"));
            }
            Ok(())
        }
    }

    #[test]
    fn a_torn_append_is_cut_off_and_later_appends_follow_the_last_whole_one() {
        let mut j = Journal::new(Fake::new(10), 0);
        j.append(b"aaaa", false).unwrap();
        assert!(matches!(
            j.append(b"bbbbbbbbbb", false),
            Err(AppendError::Io(_))
        ));
        assert_eq!(&j.file.data.borrow()[..], b"aaaa", "the torn part is gone");
        j.file.room.set(100); // space freed
        j.append(b"cc", false).unwrap();
        assert_eq!(&j.file.data.borrow()[..], b"aaaacc");
        assert_eq!(j.len, 6);
    }

    #[test]
    fn a_tear_that_cannot_be_cut_off_breaks_the_journal() {
        let mut f = Fake::new(6);
        f.truncate_fails = true;
        let mut j = Journal::new(f, 0);
        j.append(b"aaaa", false).unwrap();
        assert!(matches!(j.append(b"bbbb", false), Err(AppendError::Io(_))));
        j.file.room.set(100);
        assert!(matches!(j.append(b"cc", false), Err(AppendError::Broken)));
        assert_eq!(
            &j.file.data.borrow()[..],
            b"aaaabb",
            "nothing written after the tear"
        );
    }

    #[test]
    fn appends_during_a_compaction_are_copied_until_the_copy_overflows() {
        let mut j = Journal::new(Fake::new(usize::MAX), 0);
        j.append(b"before", false).unwrap();
        j.copy = Some(Vec::new());
        j.append(b"during", false).unwrap();
        assert_eq!(j.copy.as_deref(), Some(&b"during"[..]));
        let big = vec![0u8; COPY_LIMIT];
        j.append(&big, false).unwrap();
        assert!(j.copy.is_none(), "abandoned, not unbounded");
    }

    #[test]
    fn a_failed_sync_breaks_the_journal() {
        let mut f = Fake::new(100);
        f.sync_fails = true;
        let mut j = Journal::new(f, 0);
        assert!(matches!(j.append(b"aaaa", true), Err(AppendError::Io(_))));
        assert!(matches!(j.append(b"bb", false), Err(AppendError::Broken)));
        assert_eq!(&j.file.data.borrow()[..], b"aaaa");
    }
}
