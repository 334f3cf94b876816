//! The benchmark message: a fixed header followed by padding up to the requested size.
//!
//! Layout (little endian):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | producer id (`WARMUP_PRODUCER` marks a warm-up probe, not counted) |
//! | 4 | 8 | sequence number, from 0, per producer |
//! | 12 | 8 | send time, [`crate::clock::now_ns`] |
//! | 20 | n | padding (`0x5a`) |
//!
//! A message is never shorter than [`HEADER_LEN`]: a requested size below it (the 1 B and
//! 10 B cells of seed003) is sent as 20 bytes, and the report says so.

use bytes::{BufMut, Bytes, BytesMut};

/// Bytes of header in every message.
pub const HEADER_LEN: usize = 20;

/// Producer id of warm-up probes, which check that every subscription is live.
pub const WARMUP_PRODUCER: u32 = u32::MAX;

/// The decoded header of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Which producer sent it.
    pub producer: u32,
    /// Its sequence number within that producer's stream.
    pub seq: u64,
    /// When it was sent, in [`crate::clock::now_ns`] nanoseconds.
    pub sent_ns: u64,
}

/// The size a message of `requested` bytes really has on the wire.
pub fn wire_size(requested: usize) -> usize {
    requested.max(HEADER_LEN)
}

/// Bytes allocated at a time for messages smaller than this.
const ENCODE_CHUNK: usize = 64 << 10;

/// Builds messages of one size, reusing the padding.
#[derive(Debug, Clone)]
pub struct Encoder {
    size: usize,
    buf: BytesMut,
}

impl Encoder {
    /// An encoder for messages of `size` bytes (at least [`HEADER_LEN`]).
    pub fn new(size: usize) -> Self {
        Self {
            size: wire_size(size),
            buf: BytesMut::new(),
        }
    }

    /// One message with this header.
    pub fn encode(&mut self, header: Header) -> Bytes {
        self.encode_stamped(header.producer, header.seq, || header.sent_ns)
    }

    /// One message whose send time is read from `now` once the message is built, so that
    /// a latency does not include building it (at 1 MiB, an allocation and a 1 MiB fill).
    pub fn encode_stamped(&mut self, producer: u32, seq: u64, now: impl FnOnce() -> u64) -> Bytes {
        // Small messages share one allocation: an allocation (and a free) per message cost
        // the load generator a quarter of its time at 100 B.
        if self.buf.capacity() < self.size {
            self.buf.reserve(self.size.max(ENCODE_CHUNK));
        }
        self.buf.put_u32_le(producer);
        self.buf.put_u64_le(seq);
        self.buf.put_u64_le(0);
        self.buf.put_bytes(PADDING, self.size - HEADER_LEN);
        self.buf[12..HEADER_LEN].copy_from_slice(&now().to_le_bytes());
        self.buf.split().freeze()
    }
}

/// The padding byte after the header.
pub const PADDING: u8 = 0x5a;

/// Reads the header of a message that looks like one of ours: exactly a header, or a header
/// followed by [`PADDING`] only. Other payloads (text, sensor data) are `None`, so a tool
/// that counts probe messages does not mistake them for ones with absurd numbers.
pub fn decode_strict(msg: &[u8]) -> Option<Header> {
    let h = decode(msg)?;
    msg[HEADER_LEN..].iter().all(|&b| b == PADDING).then_some(h)
}

/// Reads the header of a received message; `None` if it is too short to be one of ours.
pub fn decode(msg: &[u8]) -> Option<Header> {
    let producer = u32::from_le_bytes(msg.get(0..4)?.try_into().ok()?);
    let seq = u64::from_le_bytes(msg.get(4..12)?.try_into().ok()?);
    let sent_ns = u64::from_le_bytes(msg.get(12..20)?.try_into().ok()?);
    Some(Header {
        producer,
        seq,
        sent_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_size() {
        let mut enc = Encoder::new(256);
        let h = Header {
            producer: 7,
            seq: 1 << 40,
            sent_ns: 123_456_789,
        };
        let m = enc.encode(h);
        assert_eq!(m.len(), 256);
        assert_eq!(decode(&m), Some(h));
        assert!(m[HEADER_LEN..].iter().all(|&b| b == 0x5a));
    }

    #[test]
    fn strict_decoding_wants_our_padding() {
        let m = Encoder::new(64).encode(Header {
            producer: 1,
            seq: 2,
            sent_ns: 3,
        });
        assert_eq!(decode_strict(&m).map(|h| h.seq), Some(2));
        assert_eq!(decode_strict(&m[..HEADER_LEN]).map(|h| h.seq), Some(2));
        let mut other = m.to_vec();
        other[40] = b'x';
        assert_eq!(decode_strict(&other), None);
        assert!(decode(&other).is_some());
        assert_eq!(decode_strict(b"short"), None);
    }

    /// The send time is read after the padding is written, not before.
    #[test]
    fn the_send_time_is_read_once_the_message_is_built() {
        let mut enc = Encoder::new(1 << 20);
        let before = crate::clock::now_ns();
        let mut read_at = 0;
        let m = enc.encode_stamped(3, 4, || {
            read_at = crate::clock::now_ns();
            read_at
        });
        let h = decode(&m).unwrap();
        assert_eq!((h.producer, h.seq, h.sent_ns), (3, 4, read_at));
        assert!(read_at >= before);
        assert_eq!(m.len(), 1 << 20);
        assert!(m[HEADER_LEN..].iter().all(|&b| b == 0x5a));
        // A second message from the same encoder is whole too (the buffer is not reused).
        let m2 = enc.encode_stamped(3, 5, || 9);
        assert_eq!(decode(&m2).unwrap().sent_ns, 9);
        assert_eq!(decode(&m).unwrap().sent_ns, read_at);
    }

    #[test]
    fn golden_bytes() {
        let m = Encoder::new(22).encode(Header {
            producer: 1,
            seq: 2,
            sent_ns: 3,
        });
        assert_eq!(
            &m[..],
            &[1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0x5a, 0x5a]
        );
    }

    #[test]
    fn small_sizes_carry_the_header() {
        assert_eq!(
            Encoder::new(1)
                .encode(Header {
                    producer: 0,
                    seq: 0,
                    sent_ns: 0
                })
                .len(),
            20
        );
        assert_eq!(wire_size(10), 20);
        assert_eq!(wire_size(10_000), 10_000);
    }

    #[test]
    fn short_input_is_rejected() {
        for n in 0..HEADER_LEN {
            assert_eq!(decode(&vec![0u8; n]), None);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..10_000 {
            let len = rng.usize(0..64);
            let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            assert_eq!(decode(&bytes).is_some(), len >= HEADER_LEN);
        }
    }
}
