//! Reading a password file with a size limit, and replacing it atomically.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::{Error, PasswordFile};

/// The largest password file [`PasswordFile::load`] reads: about 130,000 users of
/// `mosquitto_passwd`'s 120-byte lines, and a bound on what a bad path can make it allocate.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

impl PasswordFile {
    /// Reads the password file at `path`, at most [`MAX_FILE_BYTES`].
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::TooLarge`], or [`Error::Malformed`] with `path` and the line.
    pub fn load(path: &Path) -> Result<Self, Error> {
        Self::load_with_limit(path, MAX_FILE_BYTES)
    }

    /// Reads the password file at `path`, refusing one larger than `limit` bytes.
    ///
    /// # Errors
    /// As [`PasswordFile::load`].
    pub fn load_with_limit(path: &Path, limit: u64) -> Result<Self, Error> {
        let io_err = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        let mut bytes = Vec::new();
        // One byte past the limit tells a file at the limit from a larger one without
        // reading the larger one whole.
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_err)?;
        if bytes.len() as u64 > limit {
            return Err(Error::TooLarge {
                path: path.to_owned(),
                limit,
            });
        }
        Self::parse(&bytes).map_err(|e| match e {
            Error::Malformed { line, problem, .. } => Error::Malformed {
                path: Some(path.to_owned()),
                line,
                problem,
            },
            other => other,
        })
    }

    /// Replaces the file at `path` with this one, atomically: written to a temporary file
    /// in the same directory, flushed to disk, renamed over `path`. A reader (a broker
    /// reloading) sees the old file or the new one, never a part. A symbolic link at
    /// `path` is followed (the file it names is replaced); an existing file's permissions
    /// are kept; a new file is readable by its owner only.
    ///
    /// # Errors
    /// [`Error::Io`]: the directory must be writable.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let target = resolve(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| Error::Io { path, source }
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(".fogline-passwd.")
            .tempfile_in(&dir)
            .map_err(io_err(&dir))?;
        if let Ok(meta) = fs::metadata(&target) {
            tmp.as_file()
                .set_permissions(meta.permissions())
                .map_err(io_err(tmp.path()))?;
        }
        tmp.write_all(&self.to_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(io_err(tmp.path()))?;
        tmp.persist(&target).map_err(|e| io_err(&target)(e.error))?;
        // The rename is durable once the directory is.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(&dir))
    }
}

/// `path`, or the file it links to (the link itself stays).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_owned()),
    }
}
