//! Where the rules component keeps its state: `<data_dir>/.rules/` (a dot-name, so it can
//! never be a stream's directory). `rules/<id>.json` holds a rule as last created or
//! changed, `checkpoints/<id>.json` a qos 1 rule's last checkpoint, `patterns/<name>.json`
//! a pattern set.
//!
//! Every file is written whole to a temporary name, synced, renamed over the old one and
//! the directory synced: after kill -9 or a power cut a file is the old version or the new
//! one, never a torn mix. A node that keeps no files (storage `memory`) keeps all of it in
//! memory only.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// A directory of named JSON documents (or a map in memory).
pub struct Store {
    dir: Option<PathBuf>,
    memory: Mutex<std::collections::BTreeMap<String, Vec<u8>>>,
}

impl Store {
    /// Documents under `dir` (created if needed); `None`: in memory.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn open(dir: Option<PathBuf>) -> std::io::Result<Store> {
        if let Some(d) = &dir {
            fs::create_dir_all(d)?;
            // Temporary files of writes a crash interrupted.
            for e in fs::read_dir(d)?.flatten() {
                if e.file_name().to_string_lossy().ends_with(".tmp") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        Ok(Store {
            dir,
            memory: Mutex::new(Default::default()),
        })
    }

    fn path(dir: &Path, name: &str) -> PathBuf {
        dir.join(format!("{name}.json"))
    }

    /// Writes a document atomically.
    ///
    /// # Errors
    /// The disk refused it; the old version is still in place.
    pub fn put(&self, name: &str, body: &[u8]) -> std::io::Result<()> {
        let Some(dir) = &self.dir else {
            self.memory.lock().insert(name.to_string(), body.to_vec());
            return Ok(());
        };
        let tmp = dir.join(format!("{name}.json.tmp"));
        let mut f = fs::File::create(&tmp)?;
        f.write_all(body)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, Self::path(dir, name))?;
        fs::File::open(dir)?.sync_all()
    }

    /// Reads a document.
    ///
    /// # Errors
    /// It exists and cannot be read.
    pub fn get(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        let Some(dir) = &self.dir else {
            return Ok(self.memory.lock().get(name).cloned());
        };
        match fs::read(Self::path(dir, name)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deletes a document (absent is fine).
    ///
    /// # Errors
    /// The disk refused it.
    pub fn delete(&self, name: &str) -> std::io::Result<()> {
        let Some(dir) = &self.dir else {
            self.memory.lock().remove(name);
            return Ok(());
        };
        match fs::remove_file(Self::path(dir, name)) {
            Ok(()) => fs::File::open(dir)?.sync_all(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Every document, by name.
    ///
    /// # Errors
    /// The directory cannot be read.
    pub fn all(&self) -> std::io::Result<Vec<(String, Vec<u8>)>> {
        let Some(dir) = &self.dir else {
            return Ok(self
                .memory
                .lock()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect());
        };
        let mut out = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".json") {
                out.push((stem.to_string(), fs::read(e.path())?));
            }
        }
        out.sort();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_survive_reopen_and_torn_writes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(Some(dir.path().to_path_buf())).unwrap();
        s.put("a", b"1").unwrap();
        s.put("a", b"2").unwrap();
        s.put("b", b"3").unwrap();
        fs::write(dir.path().join("c.json.tmp"), b"torn").unwrap();
        let s = Store::open(Some(dir.path().to_path_buf())).unwrap();
        assert_eq!(s.get("a").unwrap().unwrap(), b"2");
        assert!(!dir.path().join("c.json.tmp").exists());
        s.delete("b").unwrap();
        s.delete("b").unwrap();
        let names: Vec<String> = s.all().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a"]);
    }

    #[test]
    fn a_memory_store_keeps_documents_in_memory() {
        let s = Store::open(None).unwrap();
        s.put("x", b"{}").unwrap();
        assert_eq!(s.get("x").unwrap().unwrap(), b"{}");
        assert_eq!(s.all().unwrap().len(), 1);
    }
}
