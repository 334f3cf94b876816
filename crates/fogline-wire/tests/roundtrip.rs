//! Property tests: every frame round-trips through encode/decode, and
//! arbitrary bytes never panic the decoder.

use bytes::{Bytes, BytesMut};
use fogline_wire::{
    decode, decode_frame, encode, ConsumerDetail, Credentials, ErrorCode, Frame, HeadersBuilder,
    RecordBlock, StartPosition, Storage, StoredBlock, StoredRecordRef, Str, StreamDetail,
    StreamInfo, StreamSpec,
};
use proptest::collection::vec;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = Str> {
    ".{0,12}".prop_map(Str::from)
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..24)
}

/// A header block: valid, as frames carrying records must hold (the decoder checks it).
fn header_block() -> impl Strategy<Value = Vec<u8>> {
    vec(("[a-z]{0,6}", blob()), 0..3).prop_map(|entries| {
        entries
            .iter()
            .fold(HeadersBuilder::new(), |b, (k, v)| b.add(k, v))
            .finish()
            .unwrap()
            .to_vec()
    })
}

fn record_block() -> impl Strategy<Value = RecordBlock> {
    vec((any::<u64>(), header_block(), blob()), 0..5).prop_map(|records| {
        RecordBlock::from_records(records.iter().map(|(t, h, p)| (*t, &h[..], &p[..]))).unwrap()
    })
}

fn stored_block() -> impl Strategy<Value = StoredBlock> {
    vec(
        (any::<(u64, u64, u16)>(), ".{0,8}", header_block(), blob()),
        0..5,
    )
    .prop_map(|records| {
        StoredBlock::from_records(
            records
                .iter()
                .map(|((o, t, d), topic, h, p)| StoredRecordRef {
                    offset: *o,
                    timestamp: *t,
                    delivery_count: *d,
                    topic,
                    headers: h,
                    payload: p,
                }),
        )
        .unwrap()
    })
}

fn start() -> impl Strategy<Value = StartPosition> {
    prop_oneof![
        Just(StartPosition::Earliest),
        Just(StartPosition::Latest),
        any::<u64>().prop_map(StartPosition::Offset),
        any::<u64>().prop_map(StartPosition::Time),
        Just(StartPosition::Resume),
    ]
}

fn stream_info() -> impl Strategy<Value = StreamInfo> {
    (
        text(),
        prop_oneof![
            Just(Storage::Memory),
            Just(Storage::Mmap),
            Just(Storage::Fsync)
        ],
        vec(text(), 0..3),
        any::<(u64, u64, u64, u64, u32, u32)>(),
    )
        .prop_map(|(name, storage, subjects, (f, n, r, b, s, c))| StreamInfo {
            name,
            storage,
            subjects,
            first_offset: f,
            next_offset: n,
            records: r,
            bytes: b,
            segments: s,
            consumers: c,
        })
}

fn storage() -> impl Strategy<Value = Storage> {
    prop_oneof![
        Just(Storage::Memory),
        Just(Storage::Mmap),
        Just(Storage::Fsync)
    ]
}

fn stream_spec() -> impl Strategy<Value = StreamSpec> {
    (
        text(),
        proptest::option::of(storage()),
        vec(text(), 0..3),
        any::<(u64, u64, u64)>(),
    )
        .prop_map(|(name, storage, subjects, (b, a, s))| StreamSpec {
            name,
            storage,
            subjects,
            retention_bytes: b,
            retention_age_ms: a,
            segment_bytes: s,
        })
}

fn stream_detail() -> impl Strategy<Value = StreamDetail> {
    (
        (text(), storage(), vec(text(), 0..3)),
        any::<(u64, u64, u64, bool, bool)>(),
        any::<(u64, u64, u64, u64, u32, u32, u64, u64)>(),
    )
        .prop_map(
            |((name, storage, subjects), (rb, ra, sb, bd, ad), (f, n, r, b, s, c, ft, lt))| {
                StreamDetail {
                    name,
                    storage,
                    subjects,
                    retention_bytes: rb,
                    retention_age_ms: ra,
                    segment_bytes: sb,
                    retention_bytes_default: bd,
                    retention_age_default: ad,
                    first_offset: f,
                    next_offset: n,
                    records: r,
                    bytes: b,
                    segments: s,
                    consumers: c,
                    first_timestamp: ft,
                    last_timestamp: lt,
                }
            },
        )
}

fn consumer_detail() -> impl Strategy<Value = ConsumerDetail> {
    (
        (text(), text(), any::<bool>(), text()),
        proptest::option::of(0..u64::MAX),
        any::<(u64, u64, u64, u64, u64, u64)>(),
    )
        .prop_map(
            |((stream, name, open, filter), cursor, (af, p, l, d, r, o))| ConsumerDetail {
                stream,
                name,
                open,
                filter,
                ack_floor: af,
                cursor,
                pending_acks: p,
                lag: l,
                delivered: d,
                redelivered: r,
                opened_at: o,
            },
        )
}

/// The management frames (streams and consumers).
fn admin_frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u64>(), stream_spec())
            .prop_map(|(request_id, spec)| Frame::StreamCreate { request_id, spec }),
        (
            any::<u64>(),
            text(),
            proptest::option::of(vec(text(), 0..3)),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>())
        )
            .prop_map(|(request_id, name, subjects, rb, ra)| Frame::StreamUpdate {
                request_id,
                name,
                subjects,
                retention_bytes: rb,
                retention_age_ms: ra,
            }),
        (any::<u64>(), text())
            .prop_map(|(request_id, name)| Frame::StreamPurge { request_id, name }),
        (any::<u64>(), text())
            .prop_map(|(request_id, name)| Frame::StreamDelete { request_id, name }),
        (any::<u64>(), text()).prop_map(|(request_id, name)| Frame::StreamGet { request_id, name }),
        (any::<u64>(), stream_detail())
            .prop_map(|(request_id, stream)| Frame::StreamOk { request_id, stream }),
        (any::<u64>(), text(), text()).prop_map(|(request_id, stream, name)| {
            Frame::ConsumerList {
                request_id,
                stream,
                name,
            }
        }),
        (any::<u64>(), vec(consumer_detail(), 0..3)).prop_map(|(request_id, consumers)| {
            Frame::ConsumerListOk {
                request_id,
                consumers,
            }
        }),
        (any::<u64>(), text(), text()).prop_map(|(request_id, stream, name)| {
            Frame::ConsumerDelete {
                request_id,
                stream,
                name,
            }
        }),
        any::<u64>().prop_map(|request_id| Frame::Done { request_id }),
    ]
}

/// The frames of Associative Rendezvous (interests and announcements).
fn profile_frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u32>(), any::<u8>(), text(), text()).prop_map(
            |(sub_id, flags, filter, interest)| {
                Frame::SubscribeProfile {
                    sub_id,
                    flags,
                    filter,
                    interest,
                }
            }
        ),
        (any::<u64>(), text(), text()).prop_map(|(request_id, topic, profile)| {
            Frame::Announce {
                request_id,
                topic,
                profile,
            }
        }),
        (any::<u64>(), any::<bool>()).prop_map(|(request_id, interested)| Frame::Notice {
            request_id,
            interested
        }),
        any::<u64>().prop_map(|request_id| Frame::Withdraw { request_id }),
        (any::<u64>(), text(), text(), any::<u64>(), any::<u64>()).prop_map(
            |(request_id, stream, interest, since, until)| Frame::Delete {
                request_id,
                stream,
                interest,
                since,
                until,
            }
        ),
        (any::<u64>(), any::<u64>())
            .prop_map(|(request_id, count)| Frame::Deleted { request_id, count }),
        (
            (any::<u64>(), text(), text(), any::<u64>()),
            (
                any::<u64>(),
                text(),
                any::<u32>(),
                any::<u64>(),
                any::<u8>()
            )
        )
            .prop_map(
                |(
                    (request_id, stream, interest, since),
                    (until, latest_by, limit, after, flags),
                )| {
                    Frame::Query {
                        request_id,
                        stream,
                        interest,
                        since,
                        until,
                        latest_by,
                        limit,
                        after,
                        flags,
                    }
                }
            ),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![data_frame(), admin_frame(), profile_frame()]
}

/// The frames of the data path.
fn data_frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u16>(), text(), proptest::option::of((text(), text()))).prop_map(
            |(version, client_name, login)| Frame::Hello {
                version,
                client_name,
                credentials: login.map(|(username, password)| Credentials { username, password }),
            }
        ),
        (any::<u16>(), text(), any::<u32>(), any::<u32>()).prop_map(|(v, s, m, f)| {
            Frame::HelloOk {
                version: v,
                server_name: s,
                max_message: m,
                max_frame: f,
            }
        }),
        any::<u64>().prop_map(|nonce| Frame::Ping { nonce }),
        any::<u64>().prop_map(|nonce| Frame::Pong { nonce }),
        (any::<u64>(), any::<u8>(), text(), record_block()).prop_map(|(r, f, t, b)| {
            Frame::Publish {
                request_id: r,
                flags: f,
                topic: t,
                records: b,
            }
        }),
        (any::<u64>(), any::<u32>())
            .prop_map(|(request_id, count)| Frame::PubAck { request_id, count }),
        (any::<u32>(), any::<u8>(), text()).prop_map(|(sub_id, flags, filter)| {
            Frame::Subscribe {
                sub_id,
                flags,
                filter,
            }
        }),
        any::<u32>().prop_map(|sub_id| Frame::SubOk { sub_id }),
        any::<u32>().prop_map(|sub_id| Frame::Unsubscribe { sub_id }),
        (any::<(u32, u8, u64, u32)>(), text(), record_block()).prop_map(
            |((sub_id, flags, batch_timestamp, dropped), topic, records)| Frame::Deliver {
                sub_id,
                flags,
                batch_timestamp,
                dropped,
                topic,
                records,
            }
        ),
        (
            any::<u64>(),
            text(),
            text(),
            text(),
            start(),
            any::<(u32, u32, u32)>()
        )
            .prop_map(|(request_id, stream, name, filter, start, (a, m, p))| {
                Frame::ConsumerOpen {
                    request_id,
                    stream,
                    name,
                    filter,
                    start,
                    ack_timeout_ms: a,
                    max_inflight: m,
                    push_credit: p,
                }
            }),
        any::<(u64, u32, u64)>().prop_map(|(request_id, consumer_id, next_offset)| {
            Frame::ConsumerOk {
                request_id,
                consumer_id,
                next_offset,
            }
        }),
        any::<(u32, u32, u32)>().prop_map(|(consumer_id, max_records, max_wait_ms)| {
            Frame::Fetch {
                consumer_id,
                max_records,
                max_wait_ms,
            }
        }),
        (any::<u32>(), stored_block()).prop_map(|(consumer_id, records)| Frame::Records {
            consumer_id,
            records
        }),
        any::<(u32, u32)>().prop_map(|(consumer_id, credit)| Frame::Credit {
            consumer_id,
            credit
        }),
        (any::<u32>(), vec(any::<u64>(), 0..8)).prop_map(|(consumer_id, offsets)| Frame::Ack {
            consumer_id,
            offsets
        }),
        any::<u32>().prop_map(|consumer_id| Frame::ConsumerClose { consumer_id }),
        any::<u64>().prop_map(|request_id| Frame::StreamList { request_id }),
        (any::<u64>(), vec(stream_info(), 0..3)).prop_map(|(request_id, streams)| {
            Frame::StreamListOk {
                request_id,
                streams,
            }
        }),
        (any::<u64>(), any::<u16>(), text()).prop_map(|(request_id, code, message)| {
            Frame::Error {
                request_id,
                code: ErrorCode::from_u16(code),
                message,
            }
        }),
    ]
}

proptest! {
    /// Borrowed iteration yields exactly what owned iteration does, record by record.
    #[test]
    fn borrowed_records_match_owned_ones(records in vec((any::<u64>(), blob(), blob()), 0..6)) {
        let block =
            RecordBlock::from_records(records.iter().map(|(t, h, p)| (*t, &h[..], &p[..]))).unwrap();
        let owned: Vec<_> = block
            .iter()
            .map(|r| (r.timestamp, r.headers.to_vec(), r.payload.to_vec()))
            .collect();
        let borrowed: Vec<_> = block
            .iter_ref()
            .map(|r| (r.timestamp, r.headers.to_vec(), r.payload.to_vec()))
            .collect();
        prop_assert_eq!(&owned, &records);
        prop_assert_eq!(borrowed, records);
        prop_assert_eq!(block.iter_ref().size_hint(), (block.count() as usize, Some(block.count() as usize)));
    }

    #[test]
    fn frames_round_trip(frames in vec(frame(), 1..4)) {
        let mut buf = BytesMut::new();
        for f in &frames {
            encode(f, &mut buf).unwrap();
        }
        for f in &frames {
            prop_assert_eq!(decode(&mut buf, u32::MAX).unwrap(), Some(f.clone()));
        }
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn split_reads_decode_the_same(f in frame(), split in any::<prop::sample::Index>()) {
        let mut whole = BytesMut::new();
        encode(&f, &mut whole).unwrap();
        let at = split.index(whole.len());
        let mut buf = BytesMut::from(&whole[..at]);
        prop_assert_eq!(decode(&mut buf, u32::MAX).unwrap(), None);
        buf.extend_from_slice(&whole[at..]);
        prop_assert_eq!(decode(&mut buf, u32::MAX).unwrap(), Some(f));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..256), max in any::<u32>()) {
        let mut buf = BytesMut::from(&bytes[..]);
        // Keep decoding until the input is exhausted or unrecoverable.
        while let Ok(Some(_)) | Err(fogline_wire::WireError::Malformed { .. })
            | Err(fogline_wire::WireError::UnknownFrame { .. }) = decode(&mut buf, max)
        {
            if buf.is_empty() {
                break;
            }
        }
        let _ = decode_frame(Bytes::from(bytes));
    }

    #[test]
    fn mutated_frames_never_panic(f in frame(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut buf = BytesMut::new();
        encode(&f, &mut buf).unwrap();
        let i = at.index(buf.len());
        buf[i] = byte;
        if let Ok(Some(decoded)) = decode(&mut buf, u32::MAX) {
            // Whatever decodes must itself re-encode and decode to the same frame.
            let mut again = BytesMut::new();
            encode(&decoded, &mut again).unwrap();
            prop_assert_eq!(decode(&mut again, u32::MAX).unwrap(), Some(decoded));
        }
    }
}
