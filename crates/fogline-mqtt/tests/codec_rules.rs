//! Packet-format statements checked on the codec the server decodes with:
//! each case is a packet a server must refuse (malformed or protocol error)
//! or a shape it must produce.

use bytes::BytesMut;
use fogline_mqtt::codec::{
    decode, encode, Ack, CodecError, ConnAck, Packet, Publish, QoS, Version,
};

fn dec(bytes: &[u8], v: Version) -> Result<Option<Packet>, CodecError> {
    let mut b = BytesMut::from(bytes);
    decode(&mut b, v, usize::MAX)
}

fn refused(bytes: &[u8], v: Version) -> bool {
    matches!(
        dec(bytes, v),
        Err(CodecError::Malformed(_)) | Err(CodecError::Protocol(_))
    )
}

/// A CONNECT with `flags` and payload `rest` after the client id "ab".
fn connect(v: Version, flags: u8, rest: &[u8]) -> Vec<u8> {
    let mut body = vec![0, 4, b'M', b'Q', b'T', b'T', v as u8, flags, 0, 60];
    if v == Version::V5 {
        body.push(0); // no properties
    }
    body.extend_from_slice(&[0, 2, b'a', b'b']);
    body.extend_from_slice(rest);
    let mut out = vec![0x10, body.len() as u8];
    out.extend(body);
    out
}

/// A will for `v`: (v5 will properties), topic "w", message "m".
fn will(v: Version) -> Vec<u8> {
    let mut w = Vec::new();
    if v == Version::V5 {
        w.push(0);
    }
    w.extend_from_slice(&[0, 1, b'w', 0, 1, b'm']);
    w
}

#[test]
fn mqtt_3_1_2_11_13_15_will_qos_and_retain_need_the_will_flag() {
    for v in [Version::V4, Version::V5] {
        assert!(dec(&connect(v, 0x02, &[]), v).is_ok_and(|p| p.is_some()));
        assert!(
            refused(&connect(v, 0x02 | 0x08, &[]), v),
            "will QoS 1 without a will"
        );
        assert!(
            refused(&connect(v, 0x02 | 0x20, &[]), v),
            "will retain without a will"
        );
        // With the will flag both are fine, and the will fields are read [MQTT-3.1.2-9].
        let ok = connect(v, 0x02 | 0x04 | 0x08 | 0x20, &will(v));
        match dec(&ok, v) {
            Ok(Some(Packet::Connect(c))) => {
                let w = c.will.expect("a will");
                assert_eq!((w.topic.as_str(), &w.payload[..]), ("w", &b"m"[..]));
                assert!(w.retain && w.qos == QoS::AtLeastOnce);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn mqtt_3_1_2_14_will_qos_3_is_malformed() {
    for v in [Version::V4, Version::V5] {
        assert!(refused(&connect(v, 0x02 | 0x04 | 0x18, &will(v)), v));
    }
}

#[test]
fn mqtt_3_1_2_18_to_22_user_name_and_password_follow_their_flags() {
    // (5.0 numbers these MQTT-3.1.2-16 to 3.1.2-19.)
    for v in [Version::V4, Version::V5] {
        // User name flag set but no user name in the payload [MQTT-3.1.2-19].
        assert!(refused(&connect(v, 0x02 | 0x80, &[]), v));
        // Password flag set without the password [MQTT-3.1.2-21].
        assert!(refused(&connect(v, 0x02 | 0x80 | 0x40, &[0, 1, b'u']), v));
        // Fields the flags do not announce are trailing bytes [MQTT-3.1.2-18], [MQTT-3.1.2-20].
        assert!(refused(&connect(v, 0x02, &[0, 1, b'u']), v));
    }
    // 3.1.1 only: a password without a user name [MQTT-3.1.2-22].
    let v = Version::V4;
    assert!(refused(&connect(v, 0x02 | 0x40, &[0, 1, b'p']), v));
    let v = Version::V5;
    assert!(dec(&connect(v, 0x02 | 0x40, &[0, 1, b'p']), v).is_ok_and(|p| p.is_some()));
}

#[test]
fn mqtt_3_1_2_1_the_protocol_name_must_be_mqtt() {
    let mut bad = connect(Version::V4, 0x02, &[]);
    bad[5] = b'X';
    assert!(dec(&bad, Version::V4).is_err());
}

#[test]
fn mqtt_2_3_1_1_packet_identifier_0_is_malformed() {
    let v = Version::V4;
    assert!(refused(&[0x32, 5, 0, 1, b'a', 0, 0], v), "QoS 1 PUBLISH");
    assert!(refused(&[0x82, 6, 0, 0, 0, 1, b'a', 0], v), "SUBSCRIBE");
    assert!(refused(&[0xA2, 5, 0, 0, 0, 1, b'a'], v), "UNSUBSCRIBE");
    assert!(refused(&[0x40, 2, 0, 0], v), "PUBACK");
}

#[test]
fn mqtt_2_3_1_5_a_qos0_publish_carries_no_packet_identifier() {
    let p = Publish {
        dup: false,
        qos: QoS::AtMostOnce,
        retain: false,
        topic: "a".into(),
        pkid: 77,
        props: Default::default(),
        payload: bytes::Bytes::from_static(b"x"),
    };
    let mut b = BytesMut::new();
    encode(&Packet::Publish(p), Version::V4, &mut b).expect("encodes");
    assert_eq!(&b[..], &[0x30, 4, 0, 1, b'a', b'x']);
}

#[test]
fn mqtt_3_8_3_4_v311_and_3_8_3_5_v5_reserved_subscription_option_bits_are_malformed() {
    // Options byte after filter "a".
    let sub = |opts: u8| [0x82, 6, 0, 1, 0, 1, b'a', opts];
    assert!(dec(&sub(0x02), Version::V4).is_ok_and(|p| p.is_some()));
    assert!(refused(&sub(0x03), Version::V4), "QoS 3");
    assert!(refused(&sub(0x04), Version::V4), "3.1.1 reserved bit 2");
    let sub5 = |opts: u8| [0x82, 7, 0, 1, 0, 0, 1, b'a', opts];
    assert!(dec(&sub5(0x2E), Version::V5).is_ok_and(|p| p.is_some()));
    assert!(refused(&sub5(0x40), Version::V5), "5.0 reserved bit 6");
    assert!(refused(&sub5(0x30), Version::V5), "retain handling 3");
}

#[test]
fn mqtt_3_10_3_2_an_unsubscribe_without_a_filter_is_refused() {
    assert!(refused(&[0xA2, 2, 0, 1], Version::V4));
    assert!(refused(&[0xA2, 3, 0, 1, 0], Version::V5));
}

#[test]
fn mqtt_3_10_1_1_3_14_1_1_and_3_15_1_1_unsubscribe_disconnect_and_auth_reserved_flags_are_malformed(
) {
    assert!(refused(&[0xE1, 0], Version::V4));
    // UNSUBSCRIBE needs flags 0010 [MQTT-3.10.1-1].
    assert!(dec(&[0xA2, 5, 0, 1, 0, 1, b'a'], Version::V4).is_ok_and(|p| p.is_some()));
    assert!(refused(&[0xA0, 5, 0, 1, 0, 1, b'a'], Version::V4));
    assert!(refused(&[0xE2, 0], Version::V5));
    assert!(refused(&[0xF1, 0], Version::V5));
}

#[test]
fn mqtt_1_5_7_1_user_property_strings_must_be_utf8() {
    // v5 PUBLISH "a" QoS 0 with user property ("k", 0xC3 0x28).
    let bad = [
        0x30, 13, 0, 1, b'a', 8, 0x26, 0, 1, b'k', 0, 2, 0xC3, 0x28, b'x',
    ];
    assert!(refused(&bad, Version::V5));
    let good = [
        0x30, 13, 0, 1, b'a', 8, 0x26, 0, 1, b'k', 0, 2, b'o', b'k', b'x',
    ];
    assert!(dec(&good, Version::V5).is_ok_and(|p| p.is_some()));
}

#[test]
fn mqtt_1_5_4_3_a_bom_is_kept_not_stripped() {
    // Topic "\u{FEFF}a" (EF BB BF 61).
    let bytes = [0x30, 7, 0, 4, 0xEF, 0xBB, 0xBF, b'a', b'x'];
    match dec(&bytes, Version::V4) {
        Ok(Some(Packet::Publish(p))) => assert_eq!(p.topic.as_str(), "\u{FEFF}a"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn mqtt_2_2_2_1_v5_no_properties_is_a_property_length_of_zero() {
    let ack = ConnAck {
        session_present: false,
        code: 0x87,
        props: Default::default(),
    };
    let mut b = BytesMut::new();
    encode(&Packet::ConnAck(ack), Version::V5, &mut b).expect("encodes");
    assert_eq!(&b[..], &[0x20, 3, 0, 0x87, 0]);
    let mut a = Ack::ok(9);
    a.reason = 0x97;
    b.clear();
    encode(&Packet::PubAck(a), Version::V5, &mut b).expect("encodes");
    assert!(
        b[..] == [0x40, 3, 0, 9, 0x97] || b[..] == [0x40, 4, 0, 9, 0x97, 0],
        "{b:02x?}"
    );
}

#[test]
fn mqtt_3_1_3_4_3_1_3_11_3_8_3_1_3_10_3_1_every_string_field_must_be_utf8() {
    let bad = [0xC3u8, 0x28];
    let v = Version::V4;
    // Client id, then will topic, then user name.
    let mut id = vec![0x10, 14, 0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 60, 0, 2];
    id.extend_from_slice(&bad);
    assert!(refused(&id, v), "client id");
    let mut w = vec![0, 2];
    w.extend_from_slice(&bad);
    w.extend_from_slice(&[0, 1, b'm']);
    assert!(refused(&connect(v, 0x02 | 0x04, &w), v), "will topic");
    let mut u = vec![0, 2];
    u.extend_from_slice(&bad);
    assert!(refused(&connect(v, 0x02 | 0x80, &u), v), "user name");
    // SUBSCRIBE and UNSUBSCRIBE filters.
    assert!(
        refused(&[0x82, 7, 0, 1, 0, 2, bad[0], bad[1], 0], v),
        "subscribe"
    );
    assert!(
        refused(&[0xA2, 6, 0, 1, 0, 2, bad[0], bad[1]], v),
        "unsubscribe"
    );
    // v5 Response Topic (0x08) and Content Type (0x03).
    for id in [0x08u8, 0x03] {
        let p = [0x30, 10, 0, 1, b'a', 5, id, 0, 2, bad[0], bad[1], b'x'];
        assert!(refused(&p, Version::V5), "property {id:#x}");
    }
}
