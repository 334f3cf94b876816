//! [`Str`]: a `Bytes` that is known to hold UTF-8, so decoded names and
//! topics stay zero-copy slices of the read buffer yet read as `&str`.

use bytes::Bytes;

/// Immutable UTF-8 text backed by [`Bytes`] (cheap to clone, zero-copy).
///
/// Invariant: the bytes are valid UTF-8 (checked on every construction path).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Str(Bytes);

impl Str {
    /// Wraps bytes that must be valid UTF-8.
    ///
    /// # Errors
    /// Returns the bytes back when they are not UTF-8.
    pub fn from_utf8(bytes: Bytes) -> Result<Str, Bytes> {
        match std::str::from_utf8(&bytes) {
            Ok(_) => Ok(Str(bytes)),
            Err(_) => Err(bytes),
        }
    }

    /// A `Str` from a static string, without copying.
    pub const fn from_static(s: &'static str) -> Str {
        Str(Bytes::from_static(s.as_bytes()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        debug_assert!(std::str::from_utf8(&self.0).is_ok());
        // SAFETY: every constructor takes a `str` or checks the bytes (`from_utf8`), and the
        // bytes never change after. Checking again here cost a UTF-8 scan of every topic on
        // every routing and delivery lookup.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// The underlying bytes (a cheap clone).
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// Gives up the text for its bytes.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Deref for Str {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Str {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Str {
    fn from(s: &str) -> Str {
        Str(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl From<String> for Str {
    fn from(s: String) -> Str {
        Str(Bytes::from(s))
    }
}

impl std::fmt::Debug for Str {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Str {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Str {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Str {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
