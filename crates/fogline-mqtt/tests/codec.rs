//! The packet codec alone: golden bytes from the specification's layouts,
//! round trips of every packet in both versions, truncation sweeps, and
//! arbitrary bytes (the same entry point the fuzz target drives).

use bytes::{Bytes, BytesMut};
use fogline_mqtt::codec::{
    decode, encode, Ack, CodecError, ConnAck, Connect, Disconnect, Filter, Packet, Properties,
    Publish, QoS, SubAck, Subscribe, Unsubscribe, Version, Will,
};
use proptest::prelude::*;

fn enc(p: &Packet, v: Version) -> Vec<u8> {
    let mut b = BytesMut::new();
    encode(p, v, &mut b).expect("encodes");
    b.to_vec()
}

fn dec(bytes: &[u8], v: Version) -> Result<Option<Packet>, CodecError> {
    decode(&mut BytesMut::from(bytes), v, usize::MAX)
}

#[test]
fn golden_v311_connect_publish_and_acks() {
    let c = Connect {
        version: Version::V4,
        clean_start: true,
        keep_alive: 60,
        client_id: "ab".into(),
        will: None,
        username: Some("u".into()),
        password: Some(Bytes::from_static(b"p")),
        props: Default::default(),
    };
    let bytes = [
        0x10, 20, 0, 4, b'M', b'Q', b'T', b'T', 4, 0xC2, 0, 60, 0, 2, b'a', b'b', 0, 1, b'u', 0, 1,
        b'p',
    ];
    assert_eq!(
        enc(&Packet::Connect(Box::new(c.clone())), Version::V4),
        bytes
    );
    assert_eq!(
        dec(&bytes, Version::V4),
        Ok(Some(Packet::Connect(Box::new(c))))
    );
    let p = Publish {
        dup: false,
        qos: QoS::AtLeastOnce,
        retain: true,
        topic: "a/b".into(),
        pkid: 10,
        props: Default::default(),
        payload: Bytes::from_static(b"hi"),
    };
    let bytes = [0x33, 9, 0, 3, b'a', b'/', b'b', 0, 10, b'h', b'i'];
    assert_eq!(enc(&Packet::Publish(p.clone()), Version::V4), bytes);
    assert_eq!(dec(&bytes, Version::V4), Ok(Some(Packet::Publish(p))));
    assert_eq!(
        enc(&Packet::PubRel(Ack::ok(5)), Version::V4),
        [0x62, 2, 0, 5]
    );
    assert_eq!(enc(&Packet::PingResp, Version::V4), [0xD0, 0]);
    let ack = ConnAck {
        session_present: true,
        code: 0,
        props: Default::default(),
    };
    assert_eq!(enc(&Packet::ConnAck(ack), Version::V4), [0x20, 2, 1, 0]);
    let ua = SubAck {
        pkid: 3,
        props: Default::default(),
        codes: vec![0],
    };
    assert_eq!(
        enc(&Packet::UnsubAck(ua), Version::V4),
        [0xB0, 2, 0, 3],
        "3.1.1 UNSUBACK has no codes"
    );
}

#[test]
fn golden_v5_connack_properties_and_short_acks() {
    let ack = ConnAck {
        session_present: false,
        code: 0,
        props: Properties {
            receive_maximum: Some(10),
            ..Properties::default()
        }
        .into(),
    };
    assert_eq!(
        enc(&Packet::ConnAck(ack), Version::V5),
        [0x20, 6, 0, 0, 3, 0x21, 0, 10]
    );
    // A v5 PUBACK with reason 0 and no properties may be two bytes long.
    assert_eq!(
        dec(&[0x40, 2, 0, 1], Version::V5),
        Ok(Some(Packet::PubAck(Ack::ok(1))))
    );
    let mut a = Ack::ok(1);
    a.reason = 0x10;
    assert_eq!(
        dec(&[0x40, 3, 0, 1, 0x10], Version::V5),
        Ok(Some(Packet::PubAck(a)))
    );
    assert_eq!(
        dec(&[0xE0, 0], Version::V5),
        Ok(Some(Packet::Disconnect(Disconnect::default())))
    );
}

#[test]
fn mqtt_1_5_5_1_variable_byte_integers_must_be_minimal() {
    assert!(matches!(
        dec(&[0xC0, 0x80, 0x00], Version::V4),
        Err(CodecError::Malformed(_))
    ));
    assert!(matches!(
        dec(&[0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], Version::V4),
        Err(CodecError::Malformed(_))
    ));
}

#[test]
fn mqtt_2_2_2_2_reserved_flags_are_malformed() {
    assert!(matches!(
        dec(&[0x80, 6, 0, 1, 0, 1, b'a', 0], Version::V4),
        Err(CodecError::Malformed(_))
    ));
    assert!(matches!(
        dec(&[0x60, 2, 0, 1], Version::V4),
        Err(CodecError::Malformed(_))
    ));
    assert!(matches!(
        dec(&[0xC1, 0], Version::V4),
        Err(CodecError::Malformed(_))
    ));
    assert!(
        matches!(
            dec(&[0x36, 5, 0, 1, b'a', 0, 1], Version::V4),
            Err(CodecError::Malformed(_))
        ),
        "QoS 3 [MQTT-3.3.1-4]"
    );
    assert!(
        matches!(dec(&[0x00, 0], Version::V4), Err(CodecError::Malformed(_))),
        "reserved type 0"
    );
}

#[test]
fn mqtt_1_5_4_strings_must_be_utf8_without_nul() {
    assert!(matches!(
        dec(&[0x30, 4, 0, 2, 0xC3, 0x28], Version::V4),
        Err(CodecError::Malformed(_))
    ));
    assert!(matches!(
        dec(&[0x30, 4, 0, 2, b'a', 0], Version::V4),
        Err(CodecError::Malformed(_))
    ));
}

#[test]
fn mqtt_2_2_2_v5_properties_duplicates_and_misplaced_ones_are_protocol_errors() {
    // PUBLISH with topic "a", qos 0, properties: content type twice.
    let dup = [0x30, 12, 0, 1, b'a', 8, 0x03, 0, 1, b'x', 0x03, 0, 1, b'y'];
    assert!(matches!(
        dec(&dup[..], Version::V5),
        Err(CodecError::Protocol(_)) | Err(CodecError::Malformed(_))
    ));
    // PUBLISH with a session expiry property (only CONNECT/CONNACK/DISCONNECT).
    let bad = [0x30, 9, 0, 1, b'a', 5, 0x11, 0, 0, 0, 1];
    assert!(matches!(
        dec(&bad[..], Version::V5),
        Err(CodecError::Protocol(_))
    ));
}

#[test]
fn too_large_is_reported_before_the_packet_arrives() {
    let mut b = BytesMut::from(&[0x30u8, 0xFF, 0x7F][..]);
    assert_eq!(
        decode(&mut b, Version::V4, 1000),
        Err(CodecError::TooLarge {
            size: 16386,
            max: 1000
        })
    );
    assert_eq!(b.len(), 3, "nothing consumed");
}

fn samples() -> Vec<Packet> {
    let props = Properties {
        message_expiry: Some(9),
        content_type: Some("t".into()),
        user: vec![("k".into(), "v".into())],
        ..Properties::default()
    };
    vec![
        Packet::Connect(Box::new(Connect {
            version: Version::V5,
            clean_start: false,
            keep_alive: 5,
            client_id: "c".into(),
            will: Some(Will {
                topic: "w".into(),
                payload: Bytes::from_static(b"bye"),
                qos: QoS::ExactlyOnce,
                retain: true,
                props: Properties {
                    will_delay: Some(3),
                    ..Properties::default()
                }
                .into(),
            }),
            username: None,
            password: Some(Bytes::from_static(b"pw")),
            props: Properties {
                session_expiry: Some(100),
                receive_maximum: Some(5),
                ..Properties::default()
            }
            .into(),
        })),
        Packet::ConnAck(ConnAck {
            session_present: true,
            code: 0x80,
            props: Properties {
                assigned_client_id: Some("id".into()),
                topic_alias_maximum: Some(4),
                ..Properties::default()
            }
            .into(),
        }),
        Packet::Publish(Publish {
            dup: true,
            qos: QoS::ExactlyOnce,
            retain: false,
            topic: "x/y".into(),
            pkid: 65535,
            props: Properties {
                topic_alias: Some(2),
                subscription_ids: vec![1, 268_435_455],
                ..props.clone()
            }
            .into(),
            payload: Bytes::from(vec![7u8; 300]),
        }),
        Packet::PubAck(Ack {
            pkid: 1,
            reason: 0x10,
            props: Default::default(),
        }),
        Packet::PubRec(Ack {
            pkid: 2,
            reason: 0,
            props: Properties {
                reason_string: Some("r".into()),
                ..Properties::default()
            }
            .into(),
        }),
        Packet::PubRel(Ack::ok(3)),
        Packet::PubComp(Ack::ok(4)),
        Packet::Subscribe(Subscribe {
            pkid: 5,
            props: Properties {
                subscription_ids: vec![7],
                ..Properties::default()
            }
            .into(),
            filters: vec![Filter {
                filter: "a/#".into(),
                qos: QoS::AtLeastOnce,
                no_local: true,
                retain_as_published: true,
                retain_handling: 2,
            }],
        }),
        Packet::SubAck(SubAck {
            pkid: 5,
            props: Default::default(),
            codes: vec![1, 0x80],
        }),
        Packet::Unsubscribe(Unsubscribe {
            pkid: 6,
            props: Default::default(),
            filters: vec!["a".into(), "b/+".into()],
        }),
        Packet::UnsubAck(SubAck {
            pkid: 6,
            props: Default::default(),
            codes: vec![0, 0x11],
        }),
        Packet::PingReq,
        Packet::PingResp,
        Packet::Disconnect(Disconnect::with_reason(0x8E, "taken over")),
        Packet::Auth(Disconnect {
            reason: 0x18,
            props: Properties {
                auth_method: Some("m".into()),
                ..Properties::default()
            }
            .into(),
        }),
    ]
}

fn for_v4(p: &Packet) -> Option<Packet> {
    let clear = Properties::default();
    Some(match p.clone() {
        Packet::Connect(mut c) => {
            c.version = Version::V4;
            c.props = clear.clone().into();
            if let Some(w) = &mut c.will {
                w.props = clear.into();
            }
            c.username = Some("u".into());
            Packet::Connect(c)
        }
        Packet::ConnAck(mut a) => {
            a.props = clear.into();
            a.code = 5;
            Packet::ConnAck(a)
        }
        Packet::Publish(mut x) => {
            x.props = clear.into();
            Packet::Publish(x)
        }
        Packet::PubAck(a) => Packet::PubAck(Ack::ok(a.pkid)),
        Packet::PubRec(a) => Packet::PubRec(Ack::ok(a.pkid)),
        Packet::Subscribe(mut s) => {
            s.props = clear.into();
            for f in &mut s.filters {
                f.no_local = false;
                f.retain_as_published = false;
                f.retain_handling = 0;
            }
            Packet::Subscribe(s)
        }
        Packet::SubAck(mut s) => {
            s.props = clear.into();
            Packet::SubAck(s)
        }
        Packet::Unsubscribe(mut s) => {
            s.props = clear.into();
            Packet::Unsubscribe(s)
        }
        Packet::UnsubAck(s) => Packet::UnsubAck(SubAck {
            codes: vec![],
            props: clear.into(),
            pkid: s.pkid,
        }),
        Packet::Disconnect(_) => Packet::Disconnect(Disconnect::default()),
        Packet::Auth(_) => return None,
        other => other,
    })
}

#[test]
fn every_packet_round_trips_in_both_versions_and_every_truncation_is_incomplete() {
    for p in samples() {
        for (v, p) in [(Version::V5, Some(p.clone())), (Version::V4, for_v4(&p))] {
            let Some(p) = p else { continue };
            let bytes = enc(&p, v);
            assert_eq!(dec(&bytes, v), Ok(Some(p.clone())), "{v:?} {p:?}");
            for cut in 0..bytes.len() {
                assert_eq!(dec(&bytes[..cut], v), Ok(None), "{v:?} cut {cut} of {p:?}");
            }
            // Two packets back to back decode one at a time.
            let mut two = BytesMut::from(&[bytes.clone(), bytes.clone()].concat()[..]);
            assert_eq!(decode(&mut two, v, usize::MAX), Ok(Some(p.clone())));
            assert_eq!(decode(&mut two, v, usize::MAX), Ok(Some(p)));
            assert!(two.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Arbitrary bytes never panic; whatever decodes re-encodes to bytes that
    /// decode to the same packet (the fuzz target's property).
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512), v5 in any::<bool>(), max in 2usize..1024) {
        let v = if v5 { Version::V5 } else { Version::V4 };
        let mut buf = BytesMut::from(&data[..]);
        loop {
            let before = buf.len();
            match decode(&mut buf, v, max) {
                Ok(Some(p)) => {
                    let mut again = BytesMut::new();
                    if encode(&p, v, &mut again).is_ok() {
                        let back = decode(&mut again, v, usize::MAX);
                        prop_assert_eq!(back, Ok(Some(p)));
                    }
                }
                Ok(None) | Err(CodecError::TooLarge { .. }) => break,
                Err(_) if buf.len() == before => break, // a bad fixed header consumes nothing
                Err(_) => {}
            }
        }
    }

    /// Bytes that start as a valid PUBLISH header and continue randomly.
    #[test]
    fn arbitrary_bodies_behind_valid_headers(kind in 1u8..16, flags in 0u8..16, body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut data = vec![kind << 4 | flags, body.len() as u8];
        if body.len() >= 128 {
            data = vec![kind << 4 | flags, (body.len() as u8 & 0x7f) | 0x80, (body.len() >> 7) as u8];
        }
        data.extend_from_slice(&body);
        for v in [Version::V4, Version::V5] {
            let _ = dec(&data, v);
        }
    }
}
