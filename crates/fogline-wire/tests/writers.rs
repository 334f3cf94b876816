//! The hot-path writers produce exactly what `encode` produces for the
//! equivalent frame, and their record iterators give back what was written.

use bytes::{Bytes, BytesMut};
use fogline_wire::{
    decode, encode, encode_deliver, encode_publish_header, encode_records, Frame, RecordBlock,
    RecordsWriter, StoredBlock, StoredRecordRef, WireError, FLAG_HIGH_PRIORITY,
};

/// A header block holding `k = v`: frames that carry records refuse an invalid one.
const H: &[u8] = &[1, 0, 1, 0, b'k', 1, 0, 0, 0, b'v'];
#[test]
fn publish_writer_matches_encode_after_every_push() {
    let records: Vec<(u64, Vec<u8>, Vec<u8>)> = (0..5u8)
        .map(|i| {
            (
                u64::from(i),
                vec![i; i as usize],
                vec![b'p'; 3 * i as usize],
            )
        })
        .collect();
    let mut buf = BytesMut::from(&b"prefix"[..]);
    let mut w = encode_publish_header(&mut buf, 42, FLAG_HIGH_PRIORITY, "t/x").unwrap();
    for n in 0..=records.len() {
        if n > 0 {
            let (t, h, p) = &records[n - 1];
            w.push(&mut buf, *t, h, p).unwrap();
        }
        let block =
            RecordBlock::from_records(records[..n].iter().map(|(t, h, p)| (*t, &h[..], &p[..])))
                .unwrap();
        let frame = Frame::Publish {
            request_id: 42,
            flags: FLAG_HIGH_PRIORITY,
            topic: "t/x".into(),
            records: block,
        };
        let mut expected = BytesMut::from(&b"prefix"[..]);
        encode(&frame, &mut expected).unwrap();
        assert_eq!(buf, expected, "after {n} records");
        assert_eq!(w.count() as usize, n);
        assert_eq!(w.frame_len(&buf), expected.len() - 6);
    }
}

#[test]
fn publish_header_with_overlong_topic_writes_nothing() {
    let mut buf = BytesMut::new();
    let topic = "t".repeat(70_000);
    assert!(matches!(
        encode_publish_header(&mut buf, 0, 0, &topic),
        Err(WireError::TooLong { .. })
    ));
    assert!(buf.is_empty());
}

#[test]
fn record_iterator_yields_zero_copy_slices() {
    let block =
        RecordBlock::from_records([(1, H, &b"one"[..]), (0, &b""[..], &b"two"[..])]).unwrap();
    let got: Vec<_> = block
        .iter()
        .map(|r| (r.timestamp, r.headers, r.payload))
        .collect();
    assert_eq!(
        got,
        [
            (1, Bytes::from_static(H), Bytes::from_static(b"one")),
            (0, Bytes::new(), Bytes::from_static(b"two"))
        ]
    );
    let base = block.as_bytes().as_ptr() as usize;
    let first = block.iter().next().unwrap();
    let at = first.payload.as_ptr() as usize;
    assert!(
        at > base && at < base + block.as_bytes().len(),
        "payload points into the block"
    );
}

#[test]
fn deliver_forwards_a_publish_block_verbatim() {
    let block = RecordBlock::from_records([(0, &b""[..], &b"hello"[..])]).unwrap();
    let mut buf = BytesMut::new();
    encode_deliver(
        &mut buf,
        3,
        1,
        99,
        4,
        "a/b",
        block.count(),
        block.as_bytes(),
    )
    .unwrap();
    let expected = Frame::Deliver {
        sub_id: 3,
        flags: 1,
        batch_timestamp: 99,
        dropped: 4,
        topic: "a/b".into(),
        records: block,
    };
    let mut enc = BytesMut::new();
    encode(&expected, &mut enc).unwrap();
    assert_eq!(buf, enc);
    assert_eq!(decode(&mut buf, 1024).unwrap(), Some(expected));
}

#[test]
fn records_writer_and_encode_records_match_encode() {
    let refs = [
        StoredRecordRef {
            offset: 10,
            timestamp: 11,
            delivery_count: 1,
            topic: "a",
            headers: b"",
            payload: b"x",
        },
        StoredRecordRef {
            offset: 12,
            timestamp: 13,
            delivery_count: 2,
            topic: "b/c",
            headers: H,
            payload: b"",
        },
    ];
    let frame = Frame::Records {
        consumer_id: 9,
        records: StoredBlock::from_records(refs).unwrap(),
    };
    let mut expected = BytesMut::new();
    encode(&frame, &mut expected).unwrap();

    let mut a = BytesMut::new();
    encode_records(&mut a, 9, refs).unwrap();
    assert_eq!(a, expected);

    let mut b = BytesMut::new();
    let mut w = RecordsWriter::begin(&mut b, 9);
    for r in &refs {
        w.push(&mut b, r).unwrap();
    }
    assert_eq!(b, expected);
    assert_eq!(w.count(), 2);

    let Some(Frame::Records { records, .. }) = decode(&mut b, 1024).unwrap() else {
        panic!("expected Records");
    };
    let topics: Vec<String> = records.iter().map(|r| r.topic.to_string()).collect();
    assert_eq!(topics, ["a", "b/c"]);
    assert_eq!(
        records.iter().map(|r| r.delivery_count).collect::<Vec<_>>(),
        [1, 2]
    );
}

#[test]
fn empty_records_frame_is_valid() {
    let mut buf = BytesMut::new();
    encode_records(&mut buf, 1, []).unwrap();
    let Some(Frame::Records { records, .. }) = decode(&mut buf, 64).unwrap() else {
        panic!("expected Records");
    };
    assert!(records.is_empty());
}

#[test]
fn pop_front_walks_blocks_and_leaves_valid_rest() {
    let mut block =
        RecordBlock::from_records([(1, &b""[..], &b"a"[..]), (2, H, &b"bb"[..])]).unwrap();
    let first = block.pop_front().unwrap();
    assert_eq!((first.timestamp, &first.payload[..]), (1, &b"a"[..]));
    assert_eq!(block.count(), 1);
    assert_eq!(
        RecordBlock::parse(1, block.as_bytes().clone()).unwrap(),
        block
    );
    assert_eq!(
        block.pop_front().unwrap().payload,
        Bytes::from_static(b"bb")
    );
    assert_eq!(block.pop_front(), None);
    assert!(block.as_bytes().is_empty());

    let refs = [
        StoredRecordRef {
            offset: 1,
            timestamp: 0,
            delivery_count: 1,
            topic: "t",
            headers: b"",
            payload: b"x",
        },
        StoredRecordRef {
            offset: 2,
            timestamp: 0,
            delivery_count: 1,
            topic: "u",
            headers: b"",
            payload: b"y",
        },
    ];
    let mut stored = StoredBlock::from_records(refs).unwrap();
    assert_eq!(stored.pop_front().unwrap().offset, 1);
    assert_eq!(stored.pop_front().unwrap().topic, "u");
    assert_eq!(stored.pop_front(), None);
}

#[test]
fn a_single_record_block_equals_the_general_encoding() {
    for (ts, h, p) in [
        (0u64, &b""[..], &b""[..]),
        (7, b"\x00\x01k\x00\x01v", &[9u8; 300][..]),
    ] {
        let one = RecordBlock::single(ts, h, p).unwrap();
        let general = RecordBlock::from_records([(ts, h, p)]).unwrap();
        assert_eq!(one.as_bytes(), general.as_bytes());
        assert_eq!(one.count(), 1);
    }
}
