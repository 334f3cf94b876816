//! Decoder error paths: what is rejected, and what is consumed.

use bytes::BytesMut;
use fogline_wire::{decode, ErrorCode, Frame, HeadersBuilder, WireError};

#[test]
fn oversized_prefix_is_rejected_before_the_frame_arrives() {
    let mut buf = BytesMut::from(&[0x01, 0x00, 0x10, 0x00][..]); // 1 MiB + 1
    let err = decode(&mut buf, 1 << 20).unwrap_err();
    assert_eq!(
        err,
        WireError::FrameTooLarge {
            len: 0x10_0001,
            max: 1 << 20
        }
    );
    assert_eq!(err.code(), ErrorCode::FrameTooLarge);
    assert_eq!(buf.len(), 4, "nothing consumed");
}

#[test]
fn huge_prefix_within_limit_just_waits() {
    let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0x7f, 0x10][..]);
    assert_eq!(decode(&mut buf, u32::MAX), Ok(None));
    assert_eq!(buf.len(), 5);
}

#[test]
fn zero_length_frame_is_malformed_and_consumed() {
    let mut buf = BytesMut::from(&[0, 0, 0, 0, 9, 0, 0, 0, 3][..]);
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0, .. })
    ));
    assert_eq!(buf.len(), 5, "the empty frame is gone, the next one stays");
}

#[test]
fn unknown_kind_is_consumed_so_the_stream_continues() {
    let mut buf = BytesMut::from(
        &[
            2, 0, 0, 0, 0x99, 0xAA, 9, 0, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0,
        ][..],
    );
    let err = decode(&mut buf, 64).unwrap_err();
    assert_eq!(err, WireError::UnknownFrame { kind: 0x99 });
    assert_eq!(err.code(), ErrorCode::UnknownFrame);
    assert_eq!(decode(&mut buf, 64), Ok(Some(Frame::Ping { nonce: 1 })));
}

#[test]
fn trailing_bytes_are_malformed() {
    let mut buf = BytesMut::from(&[6, 0, 0, 0, 0x21, 7, 0, 0, 0, 0xEE][..]);
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0x21, .. })
    ));
    assert!(buf.is_empty());
}

#[test]
fn non_utf8_string_is_malformed() {
    let mut buf = BytesMut::from(&[7, 0, 0, 0, 0x01, 1, 0, 2, 0, 0xC3, 0x28][..]);
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0x01, .. })
    ));
}

#[test]
fn huge_counts_over_short_bodies_are_malformed_without_allocating() {
    // Publish announcing u32::MAX records in an empty block.
    let mut buf = BytesMut::from(
        &[
            17, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, b't', 0xff, 0xff, 0xff, 0xff,
        ][..],
    );
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0x10, .. })
    ));
    // Ack announcing u32::MAX offsets.
    let mut buf = BytesMut::from(&[9, 0, 0, 0, 0x35, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff][..]);
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0x35, .. })
    ));
    // StreamListOk announcing 65535 streams.
    let mut buf = BytesMut::from(&[11, 0, 0, 0, 0x41, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff][..]);
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0x41, .. })
    ));
    // ConsumerListOk announcing u32::MAX consumers.
    let mut buf = BytesMut::from(
        &[
            13, 0, 0, 0, 0x49, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ][..],
    );
    assert!(matches!(
        decode(&mut buf, 64),
        Err(WireError::Malformed { kind: 0x49, .. })
    ));
}

#[test]
fn a_stream_update_with_subjects_but_no_field_bit_is_malformed() {
    let mut body = vec![
        0x43, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's', 0, 1, 0, 1, 0, b'b',
    ];
    body.extend_from_slice(&[0; 16]);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body);
    assert!(matches!(
        decode(&mut buf, 128),
        Err(WireError::Malformed { kind: 0x43, .. })
    ));
}

#[test]
fn unknown_start_position_and_storage_are_malformed() {
    let mut open = vec![0x30, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's', 0, 0, 0, 0, 9];
    open.extend_from_slice(&[0; 8 + 12]);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&(open.len() as u32).to_le_bytes());
    buf.extend_from_slice(&open);
    assert!(matches!(
        decode(&mut buf, 128),
        Err(WireError::Malformed { kind: 0x30, .. })
    ));

    let mut list = vec![0x41, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, b's', 7, 0, 0];
    list.extend_from_slice(&[0; 40]);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&(list.len() as u32).to_le_bytes());
    buf.extend_from_slice(&list);
    assert!(matches!(
        decode(&mut buf, 128),
        Err(WireError::Malformed { kind: 0x41, .. })
    ));
}

#[test]
fn unknown_error_codes_survive() {
    let mut buf =
        BytesMut::from(&[13, 0, 0, 0, 0x7F, 0, 0, 0, 0, 0, 0, 0, 0, 0xE9, 0x03, 0, 0][..]);
    let Ok(Some(Frame::Error { code, .. })) = decode(&mut buf, 64) else {
        panic!("expected an Error frame");
    };
    assert_eq!(code, ErrorCode::Other(1001));
}

#[test]
fn reserve_read_does_not_trust_a_huge_announced_length() {
    const CHUNK: usize = 64 << 10;
    const MAX: u32 = 64 << 20;
    // 64 MiB announced, 10 bytes sent: the buffer grows by a bounded amount only.
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&MAX.to_le_bytes());
    buf.extend_from_slice(&[0; 6]);
    assert!(decode(&mut buf, MAX).unwrap().is_none());
    fogline_wire::reserve_read(&mut buf, CHUNK);
    let first = buf.capacity();
    assert!(first >= fogline_wire::RESERVE_AHEAD, "{first}");
    assert!(first <= 2 * fogline_wire::RESERVE_AHEAD, "{first}");
    // As the bytes arrive the room grows geometrically until the whole frame fits.
    let total = MAX as usize + 4;
    let mut grows = 0;
    while buf.len() < total {
        fogline_wire::reserve_read(&mut buf, CHUNK);
        let room = buf.capacity() - buf.len();
        assert!(room >= CHUNK / 4, "room for at least a read");
        let bound = 2 * buf.len().max(fogline_wire::RESERVE_AHEAD) + CHUNK;
        assert!(buf.capacity() <= bound, "{} > {bound}", buf.capacity());
        let fill = room.min(total - buf.len());
        buf.resize(buf.len() + fill, 0);
        grows += 1;
    }
    assert!(grows < 16, "geometric growth: {grows} reservations");
    let frame = decode(&mut buf, MAX);
    assert!(
        frame.is_err(),
        "an all-zero body is malformed, but it was read whole"
    );
}

#[test]
fn reserve_read_makes_room_for_a_whole_announced_frame() {
    const CHUNK: usize = 64 << 10;
    // A 1 MiB frame of which 10 bytes arrived: room for the rest in one read.
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&(1u32 << 20).to_le_bytes());
    buf.extend_from_slice(&[0; 6]);
    assert!(decode(&mut buf, 16 << 20).unwrap().is_none());
    fogline_wire::reserve_read(&mut buf, CHUNK);
    assert!(buf.capacity() - buf.len() >= (1 << 20) + 4 - 10);
    assert_eq!(buf.len(), 10, "nothing consumed");
    // No frame begun: a chunk's worth (at least a quarter) of room.
    let mut empty = BytesMut::new();
    fogline_wire::reserve_read(&mut empty, CHUNK);
    assert!(empty.capacity() >= CHUNK / 4);
    // A small frame: no regrowth while a chunk's room is left.
    let mut small = BytesMut::with_capacity(CHUNK);
    small.extend_from_slice(&100u32.to_le_bytes());
    let cap = small.capacity();
    fogline_wire::reserve_read(&mut small, CHUNK);
    assert_eq!(small.capacity(), cap);
}

/// Issue 31 (7): a record's header block is checked with the frame: a count it does not
/// hold, a truncated entry or trailing bytes make the frame malformed.
#[test]
fn a_record_header_block_that_breaks_its_layout_is_malformed() {
    let publish = |headers: &[u8]| {
        let mut body = vec![0x10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, b't', 1, 0, 0, 0];
        body.extend_from_slice(&0u64.to_le_bytes());
        body.extend_from_slice(&(headers.len() as u32).to_le_bytes());
        body.extend_from_slice(headers);
        body.extend_from_slice(&0u32.to_le_bytes());
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
        buf.extend_from_slice(&body);
        decode(&mut buf, 1 << 20)
    };
    for bad in [
        &[0xff, 0xff][..],
        &[1, 0, 1, 0],
        &[0, 0, 7],
        &[1, 0, 1, 0, 0xff, 0, 0, 0, 0],
    ] {
        assert!(
            matches!(publish(bad), Err(WireError::Malformed { kind: 0x10, .. })),
            "{bad:?}"
        );
    }
    let good = HeadersBuilder::new().add("k", "v").finish().unwrap();
    assert!(matches!(publish(&good), Ok(Some(Frame::Publish { .. }))));
    assert!(matches!(publish(&[]), Ok(Some(Frame::Publish { .. }))));
    assert!(matches!(publish(&[0, 0]), Ok(Some(Frame::Publish { .. }))));
}
