//! Deleted records, kept across restarts: the index is rebuilt from the log at start, and a
//! record deleted with the `delete` action must not come back. One file per stream, a list
//! of little-endian u64 offsets, appended and synced before a delete is answered; a torn
//! last entry (a crash mid-append) is ignored.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::PathBuf;

/// The deleted offsets of one stream.
pub(crate) struct Tombstones {
    path: Option<PathBuf>,
    pub(crate) offsets: BTreeSet<u64>,
}

impl Tombstones {
    /// Loads the file (none: nothing deleted); `path` `None` keeps them in memory only.
    pub(crate) fn load(path: Option<PathBuf>) -> std::io::Result<Tombstones> {
        let mut offsets = BTreeSet::new();
        if let Some(p) = &path {
            match File::open(p) {
                Ok(mut f) => {
                    let mut bytes = Vec::new();
                    f.read_to_end(&mut bytes)?;
                    for c in bytes.chunks_exact(8) {
                        offsets.insert(u64::from_le_bytes(c.try_into().expect("8 bytes")));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Tombstones { path, offsets })
    }

    /// Records `offsets` as deleted, durably.
    pub(crate) fn add(&mut self, offsets: &[u64]) -> std::io::Result<()> {
        if let Some(p) = &self.path {
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = OpenOptions::new().create(true).append(true).open(p)?;
            // A torn entry from a crash would shift every later one: start aligned.
            let len = f.metadata()?.len();
            if len % 8 != 0 {
                f.set_len(len - len % 8)?;
            }
            let mut buf = Vec::with_capacity(offsets.len() * 8);
            for o in offsets {
                buf.extend_from_slice(&o.to_le_bytes());
            }
            f.write_all(&buf)?;
            f.sync_data()?;
        }
        self.offsets.extend(offsets.iter().copied());
        Ok(())
    }

    /// Forgets offsets below `first` (gone from the log anyway) from memory.
    pub(crate) fn forget_before(&mut self, first: u64) {
        self.offsets = self.offsets.split_off(&first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletions_survive_a_reload_and_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.deleted");
        let mut t = Tombstones::load(Some(path.clone())).unwrap();
        t.add(&[3, 9]).unwrap();
        // A crash mid-append leaves part of an entry.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        let mut t = Tombstones::load(Some(path.clone())).unwrap();
        assert_eq!(t.offsets.iter().copied().collect::<Vec<_>>(), [3, 9]);
        t.add(&[12]).unwrap();
        let t = Tombstones::load(Some(path)).unwrap();
        assert_eq!(t.offsets.iter().copied().collect::<Vec<_>>(), [3, 9, 12]);
    }
}
