//! Record headers: string attributes carried with a record
//! (`type=drone sensor=lidar`; MQTT user properties map onto them).
//!
//! Layout of a header block (itself the `headers` blob32 of a record):
//! `count: u16`, then `count` x `{key: str16, value: blob32}`.
//! A zero-length block means "no headers", as does `count = 0`.
//! Keys may repeat; [`Headers::get`] returns the first match.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{put_blob32, put_str16, SliceCursor};
use crate::error::WireError;
use crate::text::Str;

/// Checks a header block's layout (see the module doc) and returns its entry count.
///
/// # Errors
/// What is wrong, for a `Malformed` error: a count the block does not hold, a truncated
/// entry, a key that is not UTF-8, trailing bytes.
pub(crate) fn validate(bytes: &[u8]) -> Result<u16, &'static str> {
    if bytes.is_empty() {
        return Ok(0);
    }
    let mut cur = SliceCursor::new(bytes);
    let count = cur.u16().ok_or("header count truncated")?;
    for _ in 0..count {
        let (ks, ke) = cur.str16().ok_or("header key truncated")?;
        if std::str::from_utf8(&bytes[ks..ke]).is_err() {
            return Err("header key is not UTF-8");
        }
        cur.blob32().ok_or("header value truncated")?;
    }
    if cur.pos != bytes.len() {
        return Err("trailing bytes after headers");
    }
    Ok(count)
}

/// A validated header block (zero-copy view over its bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    bytes: Bytes,
    count: u16,
}

impl Headers {
    /// Validates a header block.
    ///
    /// # Errors
    /// [`WireError::Malformed`] (kind 0) when the block does not follow the
    /// layout, has trailing bytes, or a key is not UTF-8.
    pub fn parse(bytes: Bytes) -> Result<Headers, WireError> {
        let count = validate(&bytes).map_err(|reason| WireError::Malformed { kind: 0, reason })?;
        Ok(Headers { bytes, count })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The raw block.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The entries in order, as zero-copy slices.
    pub fn iter(&self) -> HeadersIter<'_> {
        HeadersIter {
            headers: self,
            pos: 2,
            left: self.count,
        }
    }

    /// The value of the first entry named `key`.
    pub fn get(&self, key: &str) -> Option<Bytes> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// The entries of a header block borrowed from it, without the reference-counted slices
/// [`Headers`] hands out: for hot paths that only read them (the store's indexer).
///
/// # Errors
/// As [`Headers::parse`].
pub fn header_entries(block: &[u8]) -> Result<HeaderEntries<'_>, WireError> {
    let left = validate(block).map_err(|reason| WireError::Malformed { kind: 0, reason })?;
    Ok(HeaderEntries {
        block,
        pos: 2,
        left,
    })
}

/// Iterator of [`header_entries`]: `(key, value)` in block order.
#[derive(Debug, Clone)]
pub struct HeaderEntries<'a> {
    block: &'a [u8],
    pos: usize,
    left: u16,
}

impl<'a> Iterator for HeaderEntries<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<(&'a str, &'a [u8])> {
        if self.left == 0 {
            return None;
        }
        let mut cur = SliceCursor::new(self.block);
        cur.pos = self.pos;
        let (ks, ke) = cur.str16()?;
        let (vs, ve) = cur.blob32()?;
        self.pos = cur.pos;
        self.left -= 1;
        // SAFETY: `header_entries` validated the block, every key's UTF-8 included, and the
        // block is borrowed immutably for the iterator's life. (Checking again was about a
        // tenth of the store's indexing time.)
        let key = unsafe { std::str::from_utf8_unchecked(&self.block[ks..ke]) };
        Some((key, &self.block[vs..ve]))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.left)))
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = (Str, Bytes);
    type IntoIter = HeadersIter<'a>;
    fn into_iter(self) -> HeadersIter<'a> {
        self.iter()
    }
}

/// Iterator over `(key, value)` of a [`Headers`].
pub struct HeadersIter<'a> {
    headers: &'a Headers,
    pos: usize,
    left: u16,
}

impl Iterator for HeadersIter<'_> {
    type Item = (Str, Bytes);

    fn next(&mut self) -> Option<(Str, Bytes)> {
        if self.left == 0 {
            return None;
        }
        let bytes = &self.headers.bytes;
        let mut cur = SliceCursor::new(bytes);
        cur.pos = self.pos;
        // The block was validated in `parse`; a failure here ends iteration.
        let (ks, ke) = cur.str16()?;
        let (vs, ve) = cur.blob32()?;
        self.pos = cur.pos;
        self.left -= 1;
        let key = Str::from_utf8(bytes.slice(ks..ke)).ok()?;
        Some((key, bytes.slice(vs..ve)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.left)))
    }
}

/// Builds a header block.
///
/// ```
/// use fogline_wire::{Headers, HeadersBuilder};
/// let block = HeadersBuilder::new().add("type", "drone").add("sensor", "lidar").finish()?;
/// let headers = Headers::parse(block)?;
/// assert_eq!(headers.get("sensor").as_deref(), Some(&b"lidar"[..]));
/// # Ok::<(), fogline_wire::WireError>(())
/// ```
#[derive(Debug, Default)]
pub struct HeadersBuilder {
    buf: BytesMut,
    count: usize,
    error: Option<WireError>,
}

impl HeadersBuilder {
    /// An empty builder.
    pub fn new() -> HeadersBuilder {
        HeadersBuilder::default()
    }

    /// Appends an entry (keys may repeat).
    pub fn add(mut self, key: &str, value: impl AsRef<[u8]>) -> HeadersBuilder {
        if self.error.is_some() {
            return self;
        }
        if self.buf.is_empty() {
            self.buf.put_u16_le(0);
        }
        let result = put_str16(&mut self.buf, key.as_bytes(), "header key")
            .and_then(|()| put_blob32(&mut self.buf, value.as_ref(), "header value"));
        match result {
            Ok(()) => self.count += 1,
            Err(e) => self.error = Some(e),
        }
        self
    }

    /// The finished block; empty (zero bytes) when nothing was added.
    ///
    /// # Errors
    /// [`WireError::TooLong`] when a key exceeds 65535 bytes, a value
    /// `u32::MAX` bytes, or there are more than 65535 entries.
    pub fn finish(mut self) -> Result<Bytes, WireError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let count = u16::try_from(self.count).map_err(|_| WireError::TooLong {
            field: "header count",
            len: self.count,
        })?;
        if let Some(slot) = self.buf.get_mut(0..2) {
            slot.copy_from_slice(&count.to_le_bytes());
        }
        Ok(self.buf.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_entries_are_the_owned_ones() {
        let block = HeadersBuilder::new()
            .add("k", "v")
            .add("k", [0xffu8])
            .add("城", "")
            .finish()
            .unwrap();
        let owned: Vec<(String, Vec<u8>)> = Headers::parse(block.clone())
            .unwrap()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        let borrowed: Vec<(String, Vec<u8>)> = header_entries(&block)
            .unwrap()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        assert_eq!(owned, borrowed);
        assert_eq!(header_entries(&[]).unwrap().count(), 0);
        assert!(header_entries(&block[..block.len() - 1]).is_err());
        assert!(
            header_entries(&[1, 0, 1, 0, 0xff, 0, 0, 0, 0]).is_err(),
            "non-UTF-8 key"
        );
    }

    #[test]
    fn builder_golden_bytes_and_lookup() {
        let block = HeadersBuilder::new()
            .add("k", "v")
            .add("ab", [1u8, 2])
            .finish()
            .unwrap();
        let expected: &[u8] = &[
            2, 0, // count
            1, 0, b'k', 1, 0, 0, 0, b'v', // k=v
            2, 0, b'a', b'b', 2, 0, 0, 0, 1, 2, // ab=[1,2]
        ];
        assert_eq!(&block[..], expected);
        let h = Headers::parse(block).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h.get("ab").as_deref(), Some(&[1u8, 2][..]));
        assert_eq!(h.get("zz"), None);
        let keys: Vec<String> = h.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, ["k", "ab"]);
    }

    #[test]
    fn empty_block_means_no_headers() {
        assert_eq!(HeadersBuilder::new().finish().unwrap().len(), 0);
        assert!(Headers::parse(Bytes::new()).unwrap().is_empty());
        assert!(Headers::parse(Bytes::from_static(&[0, 0]))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn every_truncation_and_trailing_byte_is_rejected() {
        let block = HeadersBuilder::new().add("key", "value").finish().unwrap();
        for cut in 1..block.len() {
            assert!(Headers::parse(block.slice(..cut)).is_err(), "cut {cut}");
        }
        let mut long = block.to_vec();
        long.push(0);
        assert!(Headers::parse(Bytes::from(long)).is_err());
    }

    #[test]
    fn non_utf8_key_is_rejected() {
        let bad = Bytes::from_static(&[1, 0, 1, 0, 0xff, 0, 0, 0, 0]);
        assert!(Headers::parse(bad).is_err());
    }

    #[test]
    fn overlong_key_is_an_error_not_a_panic() {
        let key = "k".repeat(70_000);
        assert!(matches!(
            HeadersBuilder::new().add(&key, "v").finish(),
            Err(WireError::TooLong { .. })
        ));
    }
}
