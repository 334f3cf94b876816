//! Primitive readers and writers: little-endian integers, `str16`
//! (u16 length + UTF-8) and `blob32` (u32 length + bytes).
//!
//! The reader never trusts a length field: it checks that the bytes are
//! present before slicing, and slices (`Bytes::split_to`) instead of copying.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::WireError;
use crate::text::Str;

/// Reads one frame's body; every error names the frame kind.
pub(crate) struct Reader {
    bytes: Bytes,
    kind: u8,
}

impl Reader {
    pub(crate) fn new(kind: u8, bytes: Bytes) -> Reader {
        Reader { bytes, kind }
    }

    pub(crate) fn malformed(&self, reason: &'static str) -> WireError {
        WireError::Malformed {
            kind: self.kind,
            reason,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        if self.bytes.len() < N {
            return Err(self.malformed(what));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[..N]);
        bytes::Buf::advance(&mut self.bytes, N);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        self.array(what).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// The next `n` bytes as a zero-copy slice.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<Bytes, WireError> {
        if self.bytes.len() < n {
            return Err(self.malformed(what));
        }
        Ok(self.bytes.split_to(n))
    }

    pub(crate) fn str16(&mut self, what: &'static str) -> Result<Str, WireError> {
        let n = usize::from(self.u16(what)?);
        let raw = self.take(n, what)?;
        Str::from_utf8(raw).map_err(|_| self.malformed("string is not UTF-8"))
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> Bytes {
        std::mem::take(&mut self.bytes)
    }

    /// Fails unless the body was consumed exactly.
    pub(crate) fn finish(self) -> Result<(), WireError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.malformed("trailing bytes after body"))
        }
    }
}

/// Reads little-endian integers from a slice at a cursor; `None` when short.
/// Used to validate record blocks without creating `Bytes` per field.
pub(crate) struct SliceCursor<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> SliceCursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> SliceCursor<'a> {
        SliceCursor { data, pos: 0 }
    }

    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.pos.checked_add(n)?;
        if end > self.data.len() {
            return None;
        }
        self.pos = end;
        Some(())
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let slice = self.data.get(self.pos..self.pos.checked_add(N)?)?;
        self.pos += N;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Some(out)
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    /// Skips a `u32` length and that many bytes; returns the body's range.
    pub(crate) fn blob32(&mut self) -> Option<(usize, usize)> {
        let n = self.u32()? as usize;
        let start = self.pos;
        self.skip(n)?;
        Some((start, self.pos))
    }

    /// Skips a `u16` length and that many bytes; returns the body's range.
    pub(crate) fn str16(&mut self) -> Option<(usize, usize)> {
        let n = usize::from(self.u16()?);
        let start = self.pos;
        self.skip(n)?;
        Some((start, self.pos))
    }
}

/// Writes a `str16`.
///
/// # Errors
/// [`WireError::TooLong`] when `s` is longer than 65535 bytes.
pub(crate) fn put_str16(
    buf: &mut BytesMut,
    s: &[u8],
    field: &'static str,
) -> Result<(), WireError> {
    let n = u16::try_from(s.len()).map_err(|_| WireError::TooLong {
        field,
        len: s.len(),
    })?;
    buf.put_u16_le(n);
    buf.put_slice(s);
    Ok(())
}

/// Writes a `blob32`.
///
/// # Errors
/// [`WireError::TooLong`] when `b` is longer than `u32::MAX` bytes.
pub(crate) fn put_blob32(
    buf: &mut BytesMut,
    b: &[u8],
    field: &'static str,
) -> Result<(), WireError> {
    let n = u32::try_from(b.len()).map_err(|_| WireError::TooLong {
        field,
        len: b.len(),
    })?;
    buf.put_u32_le(n);
    buf.put_slice(b);
    Ok(())
}

/// Converts a list length to its count field type.
pub(crate) fn count<T: TryFrom<usize>>(len: usize, field: &'static str) -> Result<T, WireError> {
    T::try_from(len).map_err(|_| WireError::TooLong { field, len })
}

/// Overwrites 4 bytes at `at` with a little-endian u32.
pub(crate) fn patch_u32(buf: &mut BytesMut, at: usize, v: u32) {
    if let Some(slot) = buf.get_mut(at..at + 4) {
        slot.copy_from_slice(&v.to_le_bytes());
    }
}
