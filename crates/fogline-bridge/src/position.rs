//! A bridge's saved position in its stream: `<data_dir>/.bridge/<name>.pos`, one line
//! `STREAM OFFSET` (the next offset to carry), replaced whole by a rename. It is a shortcut,
//! not the truth: a Kafka bridge reads back what Kafka holds before it sends, so a position
//! that is behind (kill -9 between saves) costs a replay, never a duplicate.

use std::path::PathBuf;

use crate::config::Start;

/// Where a bridge keeps its position (nowhere on a node that keeps no files).
#[derive(Debug)]
pub struct Position {
    path: Option<PathBuf>,
}

impl Position {
    /// The position kept at `path`.
    pub fn new(path: Option<PathBuf>) -> Self {
        Position { path }
    }

    /// The saved offset in `stream`; `None` when nothing was saved, or it was saved for
    /// another stream (the bridge was pointed elsewhere).
    ///
    /// # Errors
    /// The file exists but cannot be read or is not a position.
    pub fn load(&self, stream: &str) -> Result<Option<u64>, String> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        };
        let bad = || format!("{} is not a bridge position: {text:?}", path.display());
        let (saved_stream, offset) = text.trim_end().rsplit_once(' ').ok_or_else(bad)?;
        let offset: u64 = offset.parse().map_err(|_| bad())?;
        Ok((saved_stream == stream).then_some(offset))
    }

    /// Where a bridge resumes in `stream`, whose offsets run from `first` to `next`: the
    /// saved offset, or where `start` says, saved at once (a restart before anything was
    /// carried must not move a `latest` bridge past what was published meanwhile).
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn resume(
        &mut self,
        stream: &str,
        start: Start,
        (first, next): (u64, u64),
    ) -> Result<u64, String> {
        if let Some(saved) = self.load(stream)? {
            return Ok(saved);
        }
        let at = match start {
            Start::Earliest => first,
            Start::Latest => next,
        };
        self.save(stream, at)?;
        Ok(at)
    }

    /// Saves `offset` in `stream` (a temporary file renamed over the old one).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&mut self, stream: &str, offset: u64) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let io = |e: std::io::Error| format!("saving {}: {e}", path.display());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("pos.tmp");
        std::fs::write(&tmp, format!("{stream} {offset}\n")).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_kept_per_stream() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".bridge/core.pos");
        let mut p = Position::new(Some(path.clone()));
        assert_eq!(p.load("s").unwrap(), None);
        p.save("s", 42).unwrap();
        assert_eq!(p.load("s").unwrap(), Some(42));
        assert_eq!(p.load("other").unwrap(), None);
        p.save("my stream", 7).unwrap();
        assert_eq!(p.load("my stream").unwrap(), Some(7));
        assert_eq!(p.resume("my stream", Start::Latest, (3, 9)).unwrap(), 7);
        assert_eq!(p.resume("s", Start::Latest, (3, 9)).unwrap(), 9);
        assert_eq!(p.load("s").unwrap(), Some(9), "a start is saved at once");
        std::fs::write(&path, "garbage").unwrap();
        assert!(p.load("s").unwrap_err().contains("not a bridge position"));
        let mut none = Position::new(None);
        none.save("s", 1).unwrap();
        assert_eq!(none.load("s").unwrap(), None);
    }
}
