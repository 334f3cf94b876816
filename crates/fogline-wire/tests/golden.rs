//! Golden-byte tests: each frame kind against hand-written bytes, both
//! directions, plus a truncation sweep over every golden frame.

use bytes::{Bytes, BytesMut};
use fogline_wire::{
    decode, decode_frame, encode, ConsumerDetail, Credentials, ErrorCode, Frame, HeadersBuilder,
    RecordBlock, StartPosition, Storage, StoredBlock, StoredRecordRef, StreamDetail, StreamInfo,
    StreamSpec, WireError, NODE_DEFAULT,
};

const MAX: u32 = 1 << 20;

fn golden() -> Vec<(Frame, Vec<u8>)> {
    let headers = HeadersBuilder::new().add("k", "v").finish().unwrap();
    let publish_block =
        RecordBlock::from_records([(0x10, &b""[..], &b"hi"[..]), (0, &headers[..], &b""[..])])
            .unwrap();
    let deliver_block = RecordBlock::from_records([(0, &b""[..], &b"x"[..])]).unwrap();
    let stored = StoredBlock::from_records([StoredRecordRef {
        offset: 0x100,
        timestamp: 2,
        delivery_count: 1,
        topic: "a",
        headers: b"",
        payload: b"z",
    }])
    .unwrap();
    vec![
        (
            Frame::Hello {
                version: 1,
                client_name: "cli".into(),
                credentials: None,
            },
            vec![8, 0, 0, 0, 0x01, 1, 0, 3, 0, b'c', b'l', b'i'],
        ),
        (
            Frame::HelloOk {
                version: 1,
                server_name: "srv".into(),
                max_message: 0x10_0000,
                max_frame: 0x40_0000,
            },
            vec![
                16, 0, 0, 0, 0x02, 1, 0, 3, 0, b's', b'r', b'v', 0, 0, 0x10, 0, 0, 0, 0x40, 0,
            ],
        ),
        (
            Frame::Ping {
                nonce: 0x0102_0304_0506_0708,
            },
            vec![9, 0, 0, 0, 0x03, 8, 7, 6, 5, 4, 3, 2, 1],
        ),
        (
            Frame::Pong { nonce: 1 },
            vec![9, 0, 0, 0, 0x04, 1, 0, 0, 0, 0, 0, 0, 0],
        ),
        (
            Frame::Publish {
                request_id: 5,
                flags: 1,
                topic: "a/b".into(),
                records: publish_block,
            },
            vec![
                63, 0, 0, 0, 0x10, // len, kind
                5, 0, 0, 0, 0, 0, 0, 0, // request_id
                1, // flags
                3, 0, b'a', b'/', b'b', // topic
                2, 0, 0, 0, // count
                0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, b'h', b'i', // record 1
                0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 1, 0, 1, 0, b'k', 1, 0, 0, 0, b'v', 0, 0, 0,
                0, // record 2
            ],
        ),
        (
            Frame::PubAck {
                request_id: 5,
                count: 2,
            },
            vec![13, 0, 0, 0, 0x11, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0],
        ),
        (
            Frame::Subscribe {
                sub_id: 7,
                flags: 1,
                filter: "a/#".into(),
            },
            vec![11, 0, 0, 0, 0x20, 7, 0, 0, 0, 1, 3, 0, b'a', b'/', b'#'],
        ),
        (
            Frame::SubOk { sub_id: 7 },
            vec![5, 0, 0, 0, 0x21, 7, 0, 0, 0],
        ),
        (
            Frame::Unsubscribe { sub_id: 7 },
            vec![5, 0, 0, 0, 0x22, 7, 0, 0, 0],
        ),
        (
            Frame::Deliver {
                sub_id: 7,
                flags: 0,
                batch_timestamp: 0x1122,
                dropped: 3,
                topic: "a/b".into(),
                records: deliver_block,
            },
            vec![
                44, 0, 0, 0, 0x23, // len, kind
                7, 0, 0, 0, // sub_id
                0, // flags
                0x22, 0x11, 0, 0, 0, 0, 0, 0, // batch_timestamp
                3, 0, 0, 0, // dropped
                3, 0, b'a', b'/', b'b', // topic
                1, 0, 0, 0, // count
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'x', // record
            ],
        ),
        (
            Frame::ConsumerOpen {
                request_id: 9,
                stream: "s".into(),
                name: "d".into(),
                filter: "".into(),
                start: StartPosition::Offset(0x100),
                ack_timeout_ms: 30_000,
                max_inflight: 64,
                push_credit: 0,
            },
            vec![
                38, 0, 0, 0, 0x30, // len, kind
                9, 0, 0, 0, 0, 0, 0, 0, // request_id
                1, 0, b's', 1, 0, b'd', 0, 0, // stream, name, filter
                2, 0, 1, 0, 0, 0, 0, 0, 0, // start, start_value
                0x30, 0x75, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, // ack timeout, inflight, credit
            ],
        ),
        (
            Frame::ConsumerOk {
                request_id: 9,
                consumer_id: 4,
                next_offset: 0x100,
            },
            vec![
                21, 0, 0, 0, 0x31, 9, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            Frame::Fetch {
                consumer_id: 4,
                max_records: 100,
                max_wait_ms: 250,
            },
            vec![13, 0, 0, 0, 0x32, 4, 0, 0, 0, 100, 0, 0, 0, 250, 0, 0, 0],
        ),
        (
            Frame::Records {
                consumer_id: 4,
                records: stored,
            },
            vec![
                39, 0, 0, 0, 0x33, 4, 0, 0, 0, 1, 0, 0, 0, // len, kind, consumer, count
                0, 1, 0, 0, 0, 0, 0, 0, // offset
                2, 0, 0, 0, 0, 0, 0, 0, // timestamp
                1, 0, // delivery_count
                1, 0, b'a', 0, 0, 0, 0, 1, 0, 0, 0, b'z', // topic, headers, payload
            ],
        ),
        (
            Frame::Credit {
                consumer_id: 4,
                credit: 10,
            },
            vec![9, 0, 0, 0, 0x34, 4, 0, 0, 0, 10, 0, 0, 0],
        ),
        (
            Frame::Ack {
                consumer_id: 4,
                offsets: vec![1, 0x100],
            },
            vec![
                25, 0, 0, 0, 0x35, 4, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                0, 0, 0,
            ],
        ),
        (
            Frame::ConsumerClose { consumer_id: 4 },
            vec![5, 0, 0, 0, 0x36, 4, 0, 0, 0],
        ),
        (
            Frame::StreamList { request_id: 3 },
            vec![9, 0, 0, 0, 0x40, 3, 0, 0, 0, 0, 0, 0, 0],
        ),
        (
            Frame::StreamListOk {
                request_id: 3,
                streams: vec![StreamInfo {
                    name: "s".into(),
                    storage: Storage::Mmap,
                    subjects: vec!["a/#".into()],
                    first_offset: 0,
                    next_offset: 2,
                    records: 2,
                    bytes: 0x40,
                    segments: 1,
                    consumers: 0,
                }],
            },
            vec![
                62, 0, 0, 0, 0x41, 3, 0, 0, 0, 0, 0, 0, 0, 1,
                0, // len, kind, request_id, count
                1, 0, b's', 1, // name, storage
                1, 0, 3, 0, b'a', b'/', b'#', // subjects
                0, 0, 0, 0, 0, 0, 0, 0, // first_offset
                2, 0, 0, 0, 0, 0, 0, 0, // next_offset
                2, 0, 0, 0, 0, 0, 0, 0, // records
                0x40, 0, 0, 0, 0, 0, 0, 0, // bytes
                1, 0, 0, 0, 0, 0, 0, 0, // segments, consumers
            ],
        ),
        (
            Frame::StreamCreate {
                request_id: 6,
                spec: StreamSpec {
                    name: "s".into(),
                    storage: None,
                    subjects: vec!["a/#".into()],
                    retention_bytes: 0,
                    retention_age_ms: NODE_DEFAULT,
                    segment_bytes: 0x1000,
                },
            },
            vec![
                44, 0, 0, 0, 0x42, 6, 0, 0, 0, 0, 0, 0, 0, // len, kind, request_id
                1, 0, b's', 0xFF, // name, storage: the node's default
                1, 0, 3, 0, b'a', b'/', b'#', // subjects
                0, 0, 0, 0, 0, 0, 0, 0, // retention_bytes: no limit
                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // retention_age_ms: default
                0, 0x10, 0, 0, 0, 0, 0, 0, // segment_bytes
            ],
        ),
        (
            Frame::StreamUpdate {
                request_id: 7,
                name: "s".into(),
                subjects: Some(vec!["b".into()]),
                retention_bytes: None,
                retention_age_ms: Some(60_000),
            },
            vec![
                34, 0, 0, 0, 0x43, 7, 0, 0, 0, 0, 0, 0, 0, // len, kind, request_id
                1, 0, b's', 5, // name, fields: subjects and retention_age_ms
                1, 0, 1, 0, b'b', // subjects
                0, 0, 0, 0, 0, 0, 0, 0, // retention_bytes (not given)
                0x60, 0xEA, 0, 0, 0, 0, 0, 0, // retention_age_ms
            ],
        ),
        (
            Frame::StreamPurge {
                request_id: 8,
                name: "s".into(),
            },
            vec![12, 0, 0, 0, 0x44, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's'],
        ),
        (
            Frame::StreamDelete {
                request_id: 9,
                name: "s".into(),
            },
            vec![12, 0, 0, 0, 0x45, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's'],
        ),
        (
            Frame::StreamGet {
                request_id: 10,
                name: "s".into(),
            },
            vec![12, 0, 0, 0, 0x46, 10, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's'],
        ),
        (
            Frame::StreamOk {
                request_id: 10,
                stream: StreamDetail {
                    name: "s".into(),
                    storage: Storage::Fsync,
                    subjects: vec!["a".into()],
                    retention_bytes: 0x100,
                    retention_age_ms: 0,
                    segment_bytes: 0x1000,
                    retention_bytes_default: true,
                    retention_age_default: false,
                    first_offset: 1,
                    next_offset: 3,
                    records: 2,
                    bytes: 0x40,
                    segments: 1,
                    consumers: 2,
                    first_timestamp: 5,
                    last_timestamp: 6,
                },
            },
            vec![
                99, 0, 0, 0, 0x47, 10, 0, 0, 0, 0, 0, 0, 0, // len, kind, request_id
                1, 0, b's', 2, // name, storage
                1, 0, 1, 0, b'a', // subjects
                0, 1, 0, 0, 0, 0, 0, 0, // retention_bytes
                0, 0, 0, 0, 0, 0, 0, 0, // retention_age_ms: none
                0, 0x10, 0, 0, 0, 0, 0, 0, // segment_bytes
                1, // flags: retention_bytes is the node's default
                1, 0, 0, 0, 0, 0, 0, 0, // first_offset
                3, 0, 0, 0, 0, 0, 0, 0, // next_offset
                2, 0, 0, 0, 0, 0, 0, 0, // records
                0x40, 0, 0, 0, 0, 0, 0, 0, // bytes
                1, 0, 0, 0, 2, 0, 0, 0, // segments, consumers
                5, 0, 0, 0, 0, 0, 0, 0, // first_timestamp
                6, 0, 0, 0, 0, 0, 0, 0, // last_timestamp
            ],
        ),
        (
            Frame::ConsumerList {
                request_id: 11,
                stream: "s".into(),
                name: "".into(),
            },
            vec![14, 0, 0, 0, 0x48, 11, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's', 0, 0],
        ),
        (
            Frame::ConsumerListOk {
                request_id: 11,
                consumers: vec![ConsumerDetail {
                    stream: "s".into(),
                    name: "w".into(),
                    open: true,
                    filter: "".into(),
                    ack_floor: 2,
                    cursor: Some(4),
                    pending_acks: 2,
                    lag: 1,
                    delivered: 4,
                    redelivered: 1,
                    opened_at: 9,
                }],
            },
            vec![
                78, 0, 0, 0, 0x49, 11, 0, 0, 0, 0, 0, 0, 0, // len, kind, request_id
                1, 0, 0, 0, // count
                1, 0, b's', 1, 0, b'w', 1, 0, 0, // stream, name, flags: open, filter
                2, 0, 0, 0, 0, 0, 0, 0, // ack_floor
                4, 0, 0, 0, 0, 0, 0, 0, // cursor
                2, 0, 0, 0, 0, 0, 0, 0, // pending_acks
                1, 0, 0, 0, 0, 0, 0, 0, // lag
                4, 0, 0, 0, 0, 0, 0, 0, // delivered
                1, 0, 0, 0, 0, 0, 0, 0, // redelivered
                9, 0, 0, 0, 0, 0, 0, 0, // opened_at
            ],
        ),
        (
            Frame::ConsumerDelete {
                request_id: 12,
                stream: "s".into(),
                name: "w".into(),
            },
            vec![
                15, 0, 0, 0, 0x4A, 12, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's', 1, 0, b'w',
            ],
        ),
        (
            Frame::Done { request_id: 12 },
            vec![9, 0, 0, 0, 0x4B, 12, 0, 0, 0, 0, 0, 0, 0],
        ),
        (
            Frame::SubscribeProfile {
                sub_id: 3,
                flags: 0,
                filter: "#".into(),
                interest: "k=v".into(),
            },
            vec![
                14, 0, 0, 0, 0x24, 3, 0, 0, 0, 0, 1, 0, b'#', 3, 0, b'k', b'=', b'v',
            ],
        ),
        (
            Frame::Announce {
                request_id: 7,
                topic: "t".into(),
                profile: "k".into(),
            },
            vec![
                15, 0, 0, 0, 0x50, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, b't', 1, 0, b'k',
            ],
        ),
        (
            Frame::Notice {
                request_id: 7,
                interested: true,
            },
            vec![10, 0, 0, 0, 0x51, 7, 0, 0, 0, 0, 0, 0, 0, 1],
        ),
        (
            Frame::Query {
                request_id: 1,
                stream: "s".into(),
                interest: "k".into(),
                since: 0,
                until: u64::MAX,
                latest_by: "".into(),
                limit: 10,
                after: u64::MAX,
                flags: 1,
            },
            vec![
                46, 0, 0, 0, 0x54, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, b's', 1, 0, b'k', 0, 0, 0, 0, 0,
                0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 10, 0, 0, 0, 255, 255, 255,
                255, 255, 255, 255, 255, 1,
            ],
        ),
        (
            Frame::QueryOk {
                request_id: 1,
                next: 9,
                records: StoredBlock::default(),
            },
            vec![
                21, 0, 0, 0, 0x55, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            Frame::Delete {
                request_id: 2,
                stream: "".into(),
                interest: "k".into(),
                since: 0,
                until: u64::MAX,
            },
            vec![
                30, 0, 0, 0, 0x56, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, b'k', 0, 0, 0, 0, 0, 0, 0,
                0, 255, 255, 255, 255, 255, 255, 255, 255,
            ],
        ),
        (
            Frame::Deleted {
                request_id: 2,
                count: 3,
            },
            vec![
                17, 0, 0, 0, 0x57, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            Frame::Withdraw { request_id: 7 },
            vec![9, 0, 0, 0, 0x52, 7, 0, 0, 0, 0, 0, 0, 0],
        ),
        (
            Frame::Error {
                request_id: 5,
                code: ErrorCode::SlowConsumer,
                message: "slow".into(),
            },
            vec![
                17, 0, 0, 0, 0x7F, 5, 0, 0, 0, 0, 0, 0, 0, 11, 0, 4, 0, b's', b'l', b'o', b'w',
            ],
        ),
    ]
}

#[test]
fn every_kind_has_a_golden_frame() {
    let kinds: Vec<u8> = golden().iter().map(|(f, _)| f.kind()).collect();
    assert_eq!(kinds.len(), 38);
    let mut unique = kinds.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), kinds.len());
}

/// The shared test vectors (`tests/vectors/frames.json`) are these golden frames, in this
/// order, byte for byte: the Python SDK's codec is tested against the same file
/// (`python/tests/test_vectors.py`), so the two codecs cannot drift apart.
#[test]
fn shared_vectors_are_the_golden_bytes() {
    let text = include_str!("vectors/frames.json");
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    let golden = golden();
    assert_eq!(vectors.len(), golden.len());
    for (v, (frame, bytes)) in vectors.iter().zip(golden) {
        let name = v["name"].as_str().unwrap();
        assert_eq!(v["kind"].as_u64(), Some(u64::from(frame.kind())), "{name}");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(v["hex"].as_str(), Some(hex.as_str()), "{name}");
        let mut buf = BytesMut::from(&bytes[..]);
        let decoded = decode(&mut buf, MAX).unwrap().unwrap();
        let mut again = BytesMut::new();
        encode(&decoded, &mut again).unwrap();
        assert_eq!(&again[..], &bytes[..], "{name}");
    }
}

#[test]
fn encode_matches_golden_bytes() {
    for (frame, bytes) in golden() {
        let mut buf = BytesMut::new();
        encode(&frame, &mut buf).unwrap();
        assert_eq!(&buf[..], &bytes[..], "{frame:?}");
    }
}

#[test]
fn decode_matches_golden_frames() {
    for (frame, bytes) in golden() {
        let mut buf = BytesMut::from(&bytes[..]);
        assert_eq!(decode(&mut buf, MAX).unwrap(), Some(frame));
        assert!(buf.is_empty());
    }
}

#[test]
fn every_prefix_is_incomplete_and_consumes_nothing() {
    for (_, bytes) in golden() {
        for cut in 0..bytes.len() {
            let mut buf = BytesMut::from(&bytes[..cut]);
            assert_eq!(decode(&mut buf, MAX), Ok(None), "cut {cut} of {bytes:?}");
            assert_eq!(buf.len(), cut);
        }
    }
}

#[test]
fn every_truncated_body_is_malformed() {
    for (_, bytes) in golden() {
        let whole = Bytes::from(bytes[4..].to_vec());
        for cut in 1..whole.len() {
            let err = decode_frame(whole.slice(..cut)).unwrap_err();
            assert!(
                matches!(err, WireError::Malformed { kind, .. } if kind == whole[0]),
                "cut {cut} of {whole:?}: {err:?}"
            );
        }
    }
}

#[test]
fn frames_back_to_back_decode_in_order() {
    let all = golden();
    let mut buf = BytesMut::new();
    for (_, bytes) in &all {
        buf.extend_from_slice(bytes);
    }
    for (frame, _) in all {
        assert_eq!(decode(&mut buf, MAX).unwrap(), Some(frame));
    }
    assert_eq!(decode(&mut buf, MAX), Ok(None));
}

#[test]
fn hello_with_credentials_has_golden_bytes_and_only_one_valid_cut() {
    let frame = Frame::Hello {
        version: 1,
        client_name: "c".into(),
        credentials: Some(Credentials {
            username: "u".into(),
            password: "pw".into(),
        }),
    };
    let bytes = [
        13, 0, 0, 0, 0x01, 1, 0, 1, 0, b'c', 1, 0, b'u', 2, 0, b'p', b'w',
    ];
    let mut buf = BytesMut::new();
    encode(&frame, &mut buf).unwrap();
    assert_eq!(&buf[..], &bytes[..]);
    assert_eq!(decode(&mut buf, MAX).unwrap(), Some(frame));
    // The credentials are optional as a pair: a body that ends after the client name is an
    // anonymous Hello; one that ends inside them is malformed.
    let whole = Bytes::from(bytes[4..].to_vec());
    for cut in 1..whole.len() {
        let got = decode_frame(whole.slice(..cut));
        if cut == 6 {
            assert!(
                matches!(
                    got,
                    Ok(Frame::Hello {
                        credentials: None,
                        ..
                    })
                ),
                "{got:?}"
            );
        } else {
            assert!(
                matches!(got, Err(WireError::Malformed { .. })),
                "cut {cut}: {got:?}"
            );
        }
    }
}
