//! Keeps a small read from pinning a large read buffer.
//!
//! Decoded frames are zero-copy slices of the read buffer, and a slice keeps its whole
//! allocation alive. A sensor that sends one 100-byte message per read would make each
//! message queued for a slow subscriber (or kept as a retained message) hold a 64 KiB
//! buffer: 640 times its size, beyond every byte limit the queues count. After a read that
//! left at most a few KiB pending, [`compact`] moves those bytes to an allocation of their
//! own (one small copy, only on small reads: at high rates reads are large and nothing is
//! copied); [`restore`] moves what is left back into the large buffer before the next read.

use bytes::BytesMut;

/// Pending bytes up to which a read is compacted.
pub const COMPACT_MAX: usize = 4096;

/// After a read into `buf`: if it holds at most [`COMPACT_MAX`] bytes in a buffer much
/// larger than them, they move to an exact-size buffer and the large one waits in `spare`.
pub fn compact(buf: &mut BytesMut, spare: &mut BytesMut) {
    let len = buf.len();
    if len == 0 || len > COMPACT_MAX || buf.capacity() < 4 * len || spare.capacity() > 0 {
        return;
    }
    let exact = BytesMut::from(&buf[..]);
    let mut large = std::mem::replace(buf, exact);
    large.clear();
    *spare = large;
}

/// Before the next read: the bytes left in a compacted `buf` (a partial frame, if any) go
/// back to the large buffer in `spare`, which becomes `buf` again.
pub fn restore(buf: &mut BytesMut, spare: &mut BytesMut) {
    if spare.capacity() == 0 {
        return;
    }
    let mut large = std::mem::take(spare);
    large.extend_from_slice(buf);
    *buf = large;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(inner: &[u8], outer_start: *const u8, outer_len: usize) -> bool {
        let p = inner.as_ptr() as usize;
        let s = outer_start as usize;
        p >= s && p < s + outer_len
    }

    #[test]
    fn a_small_read_is_sliced_from_its_own_allocation() {
        let mut buf = BytesMut::with_capacity(64 << 10);
        let mut spare = BytesMut::new();
        let (start, cap) = (buf.as_ptr(), buf.capacity());
        buf.extend_from_slice(b"one small frame, and the start of the next");
        compact(&mut buf, &mut spare);
        let frame = buf.split_to(15).freeze();
        assert_eq!(&frame[..], b"one small frame");
        assert!(
            !within(&frame, start, cap),
            "the frame pins the large buffer"
        );
        assert_eq!(
            spare.capacity(),
            cap,
            "the large buffer waits for the next read"
        );
        // The partial frame goes back to the large buffer, which the next read fills.
        restore(&mut buf, &mut spare);
        assert_eq!(&buf[..], b", and the start of the next");
        assert!(within(&buf, start, cap));
        assert_eq!(spare.capacity(), 0);
        drop(frame);
    }

    #[test]
    fn large_reads_are_left_alone() {
        let mut buf = BytesMut::with_capacity(64 << 10);
        let mut spare = BytesMut::new();
        buf.extend_from_slice(&[7u8; COMPACT_MAX + 1]);
        let start = buf.as_ptr();
        compact(&mut buf, &mut spare);
        assert_eq!(buf.as_ptr(), start);
        assert_eq!(spare.capacity(), 0);
        restore(&mut buf, &mut spare);
        assert_eq!(buf.as_ptr(), start);
        // A buffer about the size of its bytes is not copied either.
        let mut tight = BytesMut::from(&[1u8; 100][..]);
        let start = tight.as_ptr();
        compact(&mut tight, &mut spare);
        assert_eq!(tight.as_ptr(), start);
    }
}
