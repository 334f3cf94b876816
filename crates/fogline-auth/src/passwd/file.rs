//! A password file in memory: its lines as read (so a rewrite keeps every other line byte for
//! byte) and an index of its users.

use std::collections::HashMap;

use super::{Error, PasswordHash, Problem, UserNameError};

/// A Mosquitto password file: users and their password hashes, with its comments and blank
/// lines kept in place.
#[derive(Clone, Debug, Default)]
pub struct PasswordFile {
    lines: Vec<Line>,
    /// User name -> index in `lines`.
    users: HashMap<String, usize>,
}

#[derive(Clone, Debug)]
struct Line {
    /// The line as read or written, with its line ending (none on a last line without one).
    raw: String,
    /// Its user and hash; `None` for a comment or a blank line.
    entry: Option<(String, PasswordHash)>,
}

/// What [`PasswordFile::set`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The user is new, on a new last line.
    Added,
    /// The user's hash was replaced, on its line.
    Replaced,
}

impl PasswordFile {
    /// An empty file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a password file's contents: `#` comments, blank lines, and `user:hash` lines
    /// (blanks around the user and the hash are ignored, as Mosquitto ignores them).
    ///
    /// # Errors
    /// [`Error::Malformed`] for the first line that is not one of those (a plain-text
    /// password, an unknown hash type, bad base64, a user twice), with its number.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let mut file = PasswordFile::new();
        for (i, raw) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let malformed = |problem| Error::Malformed {
                path: None,
                line,
                problem,
            };
            let raw = std::str::from_utf8(raw).map_err(|_| malformed(Problem::NotUtf8))?;
            let entry = parse_line(raw).map_err(malformed)?;
            if let Some((user, _)) = &entry {
                if let Some(&first) = file.users.get(user) {
                    return Err(malformed(Problem::Duplicate { first: first + 1 }));
                }
                file.users.insert(user.clone(), file.lines.len());
            }
            file.lines.push(Line {
                raw: raw.to_owned(),
                entry,
            });
        }
        Ok(file)
    }

    /// The file's contents: the lines read, in order and unchanged, with changed users'
    /// lines rewritten and new users' lines at the end.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for line in &self.lines {
            // A last line without a newline may have had lines added after it.
            if !out.is_empty() && !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(line.raw.as_bytes());
        }
        out
    }

    /// Whether `password` is `user`'s. An unknown user costs as much time as a known one
    /// with the default iterations, so timing does not tell which users exist.
    pub fn verify(&self, user: &str, password: &[u8]) -> bool {
        match self.get(user) {
            Some(hash) => hash.verify(password),
            None => {
                PasswordHash::decoy().verify(password);
                false
            }
        }
    }

    /// `user`'s hash, if the file has the user.
    pub fn get(&self, user: &str) -> Option<&PasswordHash> {
        let i = *self.users.get(user)?;
        self.lines[i].entry.as_ref().map(|(_, hash)| hash)
    }

    /// The users, in the file's order.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .filter_map(|l| l.entry.as_ref().map(|(u, _)| u.as_str()))
    }

    /// How many users the file has.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether the file has no users.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Gives `user` a new `$7$` hash of `password` with `iterations` (see
    /// [`super::DEFAULT_ITERATIONS`]), replacing any hash the user had.
    ///
    /// # Errors
    /// [`Error::UserName`] for a name the file cannot hold (see [`check_user_name`]), and
    /// those of [`PasswordHash::new`].
    pub fn set(&mut self, user: &str, password: &[u8], iterations: u32) -> Result<Change, Error> {
        check_user_name(user).map_err(Error::UserName)?;
        let hash = PasswordHash::new(password, iterations)?;
        self.set_hash(user, hash).map_err(Error::UserName)
    }

    /// Gives `user` the hash `hash`, replacing any hash the user had.
    ///
    /// # Errors
    /// A name the file cannot hold (see [`check_user_name`]).
    pub fn set_hash(&mut self, user: &str, hash: PasswordHash) -> Result<Change, UserNameError> {
        check_user_name(user)?;
        let text = format!("{user}:{hash}");
        match self.users.get(user) {
            Some(&i) => {
                let line = &mut self.lines[i];
                // Keep the line's own ending (`\r\n`, `\n` or none).
                let ending = &line.raw[line.raw.trim_end_matches(['\r', '\n']).len()..];
                line.raw = text + ending;
                line.entry = Some((user.to_owned(), hash));
                Ok(Change::Replaced)
            }
            None => {
                self.users.insert(user.to_owned(), self.lines.len());
                self.lines.push(Line {
                    raw: text + "\n",
                    entry: Some((user.to_owned(), hash)),
                });
                Ok(Change::Added)
            }
        }
    }

    /// Deletes `user`'s line; false if the file has no such user.
    pub fn remove(&mut self, user: &str) -> bool {
        let Some(i) = self.users.remove(user) else {
            return false;
        };
        self.lines.remove(i);
        for at in self.users.values_mut() {
            if *at > i {
                *at -= 1;
            }
        }
        true
    }
}

/// Checks that `user` can be written to a password file and read back as the same name:
/// not empty, at most 65,535 bytes (an MQTT string), no `:`, no control characters, no
/// leading or trailing blank (Mosquitto trims them), not starting with `#` (a comment).
///
/// # Errors
/// The first rule broken.
pub fn check_user_name(user: &str) -> Result<(), UserNameError> {
    if user.is_empty() {
        Err(UserNameError::Empty)
    } else if user.len() > usize::from(u16::MAX) {
        Err(UserNameError::TooLong)
    } else if user.contains(':') {
        Err(UserNameError::Colon)
    } else if user.chars().any(char::is_control) {
        Err(UserNameError::Control)
    } else if user.starts_with(' ') || user.ends_with(' ') {
        Err(UserNameError::Blank)
    } else if user.starts_with('#') {
        Err(UserNameError::Hash)
    } else {
        Ok(())
    }
}

/// Mosquitto's blanks: C's `isspace`.
fn blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// One line: `None` for a comment or a blank line, else its user and hash.
fn parse_line(raw: &str) -> Result<Option<(String, PasswordHash)>, Problem> {
    let text = raw.trim_matches(blank);
    // Mosquitto skips a line starting with `#`, and one without a `:` (so an indented
    // comment too); any other line without a `:` is a mistake worth reporting.
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let Some((user, hash)) = text.split_once(':') else {
        return Err(Problem::NoColon);
    };
    let user = user.trim_matches(blank);
    check_user_name(user).map_err(Problem::UserName)?;
    let hash = hash.trim_matches(blank);
    if hash.contains(':') {
        return Err(Problem::TrailingField);
    }
    Ok(Some((user.to_owned(), PasswordHash::parse(hash)?)))
}
