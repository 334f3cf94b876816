//! Primitive MQTT data types (section 1.5): two- and four-byte integers,
//! variable byte integers, UTF-8 strings and binary data, each string or
//! blob prefixed by a big-endian u16 length.

use bytes::{BufMut, Bytes, BytesMut};
use fogline_wire::Str;

use super::CodecError;

/// Largest value a variable byte integer holds (four bytes).
pub const VARINT_MAX: u32 = 268_435_455;

/// Reads a variable byte integer from the start of `b`: `Ok(None)` when more
/// bytes are needed, else the value and how many bytes it took.
pub(crate) fn read_varint(b: &[u8]) -> Result<Option<(u32, usize)>, CodecError> {
    let mut value: u32 = 0;
    for i in 0..4 {
        let Some(&byte) = b.get(i) else {
            return Ok(None);
        };
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            // [MQTT-1.5.5-1] the minimum number of bytes must be used.
            if i > 0 && byte == 0 {
                return Err(CodecError::Malformed("variable byte integer not minimal"));
            }
            return Ok(Some((value, i + 1)));
        }
    }
    Err(CodecError::Malformed(
        "variable byte integer longer than 4 bytes",
    ))
}

/// Bytes a variable byte integer takes.
pub(crate) fn varint_len(v: u32) -> usize {
    match v {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

/// Appends a variable byte integer.
pub(crate) fn put_varint(buf: &mut BytesMut, mut v: u32) -> Result<(), CodecError> {
    if v > VARINT_MAX {
        return Err(CodecError::TooLong("variable byte integer"));
    }
    loop {
        let mut byte = (v & 0x7f) as u8;
        v >>= 7;
        if v > 0 {
            byte |= 0x80;
        }
        buf.put_u8(byte);
        if v == 0 {
            return Ok(());
        }
    }
}

/// Appends a u16-length-prefixed byte string.
pub(crate) fn put_bin(buf: &mut BytesMut, b: &[u8]) -> Result<(), CodecError> {
    let len = u16::try_from(b.len()).map_err(|_| CodecError::TooLong("string or binary"))?;
    buf.put_u16(len);
    buf.put_slice(b);
    Ok(())
}

/// A cursor over one packet's body; every read fails as malformed past the end.
pub(crate) struct Reader {
    bytes: Bytes,
    pos: usize,
}

const SHORT: CodecError = CodecError::Malformed("packet shorter than its fields");

impl Reader {
    pub fn new(bytes: Bytes) -> Reader {
        Reader { bytes, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        let v = *self.bytes.get(self.pos).ok_or(SHORT)?;
        self.pos += 1;
        Ok(v)
    }

    pub fn u16(&mut self) -> Result<u16, CodecError> {
        let s = self.bytes.get(self.pos..self.pos + 2).ok_or(SHORT)?;
        self.pos += 2;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, CodecError> {
        let s = self.bytes.get(self.pos..self.pos + 4).ok_or(SHORT)?;
        self.pos += 4;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    pub fn varint(&mut self) -> Result<u32, CodecError> {
        let (v, n) = read_varint(&self.bytes[self.pos..])?.ok_or(SHORT)?;
        self.pos += n;
        Ok(v)
    }

    pub fn take(&mut self, n: usize) -> Result<Bytes, CodecError> {
        if self.remaining() < n {
            return Err(SHORT);
        }
        let b = self.bytes.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    pub fn binary(&mut self) -> Result<Bytes, CodecError> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }

    /// A UTF-8 string: well formed [MQTT-1.5.4-1], without U+0000 [MQTT-1.5.4-2].
    pub fn string(&mut self) -> Result<Str, CodecError> {
        let b = self.binary()?;
        if b.contains(&0) {
            return Err(CodecError::Malformed("string contains U+0000"));
        }
        Str::from_utf8(b).map_err(|_| CodecError::Malformed("string is not UTF-8"))
    }

    /// The rest of the body.
    pub fn rest(&mut self) -> Bytes {
        let b = self.bytes.slice(self.pos..);
        self.pos = self.bytes.len();
        b
    }
}
