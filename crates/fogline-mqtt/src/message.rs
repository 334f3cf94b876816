//! Application messages and their mapping onto broker records.
//!
//! An MQTT PUBLISH becomes one record on the same topic; its payload is the
//! record's payload and its metadata travel as record headers:
//!
//! | header key | meaning |
//! | --- | --- |
//! | `mqtt.qos` | QoS it was published with: `0`, `1` or `2` |
//! | `mqtt.retain` | `1` when it was published with the retain flag |
//! | `mqtt.payload_format` | MQTT 5 Payload Format Indicator (`0`/`1`) |
//! | `mqtt.content_type` | MQTT 5 Content Type |
//! | `mqtt.response_topic` | MQTT 5 Response Topic |
//! | `mqtt.correlation_data` | MQTT 5 Correlation Data (bytes) |
//! | `mqtt.message_expiry` | MQTT 5 Message Expiry Interval in decimal seconds, counted from the record's timestamp |
//! | any other key | an MQTT 5 user property (both directions) |
//!
//! Records published natively (no `mqtt.qos`) count as QoS 1: the native
//! protocol acknowledges publishes. Header values that are not UTF-8 cannot
//! be user properties and are left out when delivering over MQTT.

use std::sync::OnceLock;

use bytes::Bytes;
use fogline_broker::Batch;
use fogline_wire::{Headers, HeadersBuilder, RecordBlock, RecordRef, Str, WireError};

use crate::codec::{Properties, Props, Publish, QoS};

/// Reserved header keys (see the module documentation).
pub mod key {
    /// Published QoS.
    pub const QOS: &str = "mqtt.qos";
    /// Published retain flag.
    pub const RETAIN: &str = "mqtt.retain";
    /// Payload Format Indicator.
    pub const PAYLOAD_FORMAT: &str = "mqtt.payload_format";
    /// Content Type.
    pub const CONTENT_TYPE: &str = "mqtt.content_type";
    /// Response Topic.
    pub const RESPONSE_TOPIC: &str = "mqtt.response_topic";
    /// Correlation Data.
    pub const CORRELATION_DATA: &str = "mqtt.correlation_data";
    /// Message Expiry Interval, decimal seconds.
    pub const MESSAGE_EXPIRY: &str = "mqtt.message_expiry";
}

/// An application message as the session layer keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Topic name.
    pub topic: Str,
    /// Payload.
    pub payload: Bytes,
    /// QoS it was published with.
    pub qos: QoS,
    /// Retain flag it was published with.
    pub retain: bool,
    /// Properties to forward (payload format, expiry, content type,
    /// response topic, correlation data, user properties).
    pub props: Props,
    /// When the server received it, microseconds since the UNIX epoch
    /// (message expiry counts from here).
    pub received: u64,
}

/// The header blocks of a message with no properties, by QoS level.
fn plain_headers() -> &'static [Bytes; 3] {
    static PLAIN: OnceLock<[Bytes; 3]> = OnceLock::new();
    PLAIN.get_or_init(|| {
        [b'0', b'1', b'2'].map(|q| {
            HeadersBuilder::new()
                .add(key::QOS, [q])
                .finish()
                .unwrap_or_default()
        })
    })
}

/// The QoS of a record whose headers carry nothing else: most do, and they are recognised
/// without parsing.
fn plain_qos(headers: &[u8]) -> Option<QoS> {
    let q = plain_headers().iter().position(|h| h[..] == *headers)?;
    QoS::from_u8(q as u8)
}

impl Message {
    /// The message a PUBLISH carries (topic already resolved from aliases).
    pub fn from_publish(p: &Publish, topic: Str, received: u64) -> Message {
        let src = &p.props;
        let props = if src.is_empty() {
            Props::default()
        } else {
            Properties {
                payload_format: src.payload_format,
                message_expiry: src.message_expiry,
                content_type: src.content_type.clone(),
                response_topic: src.response_topic.clone(),
                correlation_data: src.correlation_data.clone(),
                user: src.user.clone(),
                ..Properties::default()
            }
            .into()
        };
        Message {
            topic,
            payload: p.payload.clone(),
            qos: p.qos,
            retain: p.retain,
            props,
            received,
        }
    }

    /// Seconds of life left at `now` (micros): `None` when it never expires,
    /// `Some(0)` once expired.
    pub fn expiry_left(&self, now: u64) -> Option<u32> {
        let interval = self.props.message_expiry?;
        let elapsed = now.saturating_sub(self.received) / 1_000_000;
        Some(u64::from(interval).saturating_sub(elapsed) as u32)
    }

    /// The time to check its expiry against: the clock if it has an expiry interval, else 0
    /// (which no check reads). A clock read cost more than the rest of a delivery's checks.
    pub fn expiry_clock(&self) -> u64 {
        if self.props.message_expiry.is_some() {
            fogline_broker::now_micros()
        } else {
            0
        }
    }

    /// True when its expiry interval has passed.
    pub fn expired(&self, now: u64) -> bool {
        self.expiry_left(now) == Some(0)
    }

    /// The record header block carrying this message's metadata.
    ///
    /// # Errors
    /// A header that overflows its length field.
    pub fn headers(&self) -> Result<Bytes, WireError> {
        let p = &self.props;
        if !self.retain
            && p.payload_format.is_none()
            && p.content_type.is_none()
            && p.response_topic.is_none()
            && p.correlation_data.is_none()
            && p.message_expiry.is_none()
            && p.user.is_empty()
        {
            // The common message carries its QoS only: share one encoding per level.
            return Ok(plain_headers()[self.qos as usize].clone());
        }
        let mut h = HeadersBuilder::new().add(key::QOS, [b'0' + self.qos as u8]);
        if self.retain {
            h = h.add(key::RETAIN, "1");
        }
        if let Some(v) = p.payload_format {
            h = h.add(key::PAYLOAD_FORMAT, [b'0' + v]);
        }
        if let Some(v) = &p.content_type {
            h = h.add(key::CONTENT_TYPE, v.as_bytes());
        }
        if let Some(v) = &p.response_topic {
            h = h.add(key::RESPONSE_TOPIC, v.as_bytes());
        }
        if let Some(v) = &p.correlation_data {
            h = h.add(key::CORRELATION_DATA, v);
        }
        if let Some(v) = p.message_expiry {
            h = h.add(key::MESSAGE_EXPIRY, v.to_string());
        }
        for (k, v) in &p.user {
            h = h.add(k, v.as_bytes());
        }
        h.finish()
    }

    /// A one-record block for the broker.
    ///
    /// # Errors
    /// A field that overflows its length.
    pub fn to_block(&self) -> Result<RecordBlock, WireError> {
        let headers = self.headers()?;
        RecordBlock::single(0, &headers, &self.payload)
    }

    /// The message a record of a broker batch carries; a record without its own timestamp
    /// was received when the batch was.
    pub fn in_batch(b: &Batch, rec: RecordRef<'_>) -> Message {
        let received = if rec.timestamp != 0 {
            rec.timestamp
        } else {
            b.timestamp
        };
        Message::from_record_in(b.topic.clone(), b.records.as_bytes(), rec, received)
    }

    /// The message record `rec` of the block `block` stands for (see
    /// [`Message::from_record`]). Its headers are taken from the block only when they carry
    /// more than the QoS, so the common record costs one reference count (the payload's).
    pub fn from_record_in(topic: Str, block: &Bytes, rec: RecordRef<'_>, received: u64) -> Message {
        let payload = block.slice_ref(rec.payload);
        match plain_qos(rec.headers) {
            Some(qos) => Message::plain(topic, payload, qos, received),
            None => Message::from_record(topic, block.slice_ref(rec.headers), payload, received),
        }
    }

    fn plain(topic: Str, payload: Bytes, qos: QoS, received: u64) -> Message {
        Message {
            topic,
            payload,
            qos,
            retain: false,
            props: Props::default(),
            received,
        }
    }

    /// The message a broker record stands for. `received` is the record's
    /// timestamp (or its batch's when the record has none).
    pub fn from_record(topic: Str, headers: Bytes, payload: Bytes, received: u64) -> Message {
        // Native records count as QoS 1 (see the module documentation).
        let mut m = Message::plain(topic, payload, QoS::AtLeastOnce, received);
        if let Some(qos) = plain_qos(&headers) {
            m.qos = qos;
            return m;
        }
        let Ok(headers) = Headers::parse(headers) else {
            return m;
        };
        let text = |v: &Bytes| Str::from_utf8(v.clone()).ok();
        let num = |v: &Bytes| {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u32>().ok())
        };
        for (k, v) in headers.iter() {
            match k.as_str() {
                key::QOS => {
                    if let Some(q) = v.first().and_then(|b| QoS::from_u8(b.wrapping_sub(b'0'))) {
                        m.qos = q;
                    }
                }
                key::RETAIN => m.retain = &v[..] == b"1",
                key::PAYLOAD_FORMAT => m.props.payload_format = num(&v).map(|n| u8::from(n == 1)),
                key::CONTENT_TYPE => m.props.content_type = text(&v),
                key::RESPONSE_TOPIC => m.props.response_topic = text(&v),
                key::CORRELATION_DATA => m.props.correlation_data = Some(v),
                key::MESSAGE_EXPIRY => m.props.message_expiry = num(&v),
                other if other.starts_with("mqtt.") => {}
                _ => {
                    if let Some(v) = text(&v) {
                        m.props.user.push((k, v));
                    }
                }
            }
        }
        m
    }

    /// The PUBLISH that delivers this message with `qos`, `retain` and `pkid`.
    pub fn to_publish(
        &self,
        qos: QoS,
        retain: bool,
        pkid: u16,
        sub_ids: &[u32],
        now: u64,
    ) -> Publish {
        let mut props = self.props.clone();
        // Only what is set is written: a write allocates the property set.
        if let Some(left) = self.expiry_left(now) {
            props.message_expiry = Some(left);
        }
        if !sub_ids.is_empty() {
            props.subscription_ids = sub_ids.to_vec();
        }
        Publish {
            dup: false,
            qos,
            retain,
            topic: self.topic.clone(),
            pkid,
            props,
            payload: self.payload.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record read from its block is the message read from owned slices, with and
    /// without properties, native (no QoS header) or not.
    #[test]
    fn from_record_in_matches_from_record() {
        let plain = Message::from_record("t".into(), Bytes::new(), Bytes::from_static(b"p"), 1);
        let mut with_props = plain.clone();
        with_props.qos = QoS::ExactlyOnce;
        with_props.retain = true;
        with_props.props.content_type = Some("text/plain".into());
        with_props.props.user.push(("k".into(), "v".into()));
        let mut qos0 = plain.clone();
        qos0.qos = QoS::AtMostOnce;
        let native = RecordBlock::from_records([(0u64, &b""[..], &b"p"[..])]).unwrap();
        for block in [
            plain.to_block().unwrap(),
            with_props.to_block().unwrap(),
            qos0.to_block().unwrap(),
            native,
        ] {
            let owned = block.iter().next().unwrap();
            let borrowed = block.iter_ref().next().unwrap();
            let a = Message::from_record("t".into(), owned.headers, owned.payload, 1);
            let b = Message::from_record_in("t".into(), block.as_bytes(), borrowed, 1);
            assert_eq!(a, b);
        }
        let block = with_props.to_block().unwrap();
        let rec = block.iter_ref().next().unwrap();
        assert_eq!(
            Message::from_record_in("t".into(), block.as_bytes(), rec, 1),
            with_props
        );
    }

    /// A plain message's PUBLISH carries no property set (none is allocated) unless it has
    /// an expiry or subscription identifiers, which are then set.
    #[test]
    fn to_publish_sets_only_what_applies() {
        let m = Message::from_publish(
            &Publish {
                dup: false,
                qos: QoS::AtLeastOnce,
                retain: false,
                topic: "t".into(),
                pkid: 1,
                props: Props::default(),
                payload: Bytes::from_static(b"x"),
            },
            "t".into(),
            1_000_000,
        );
        assert!(m.props.is_empty());
        assert_eq!(m.expiry_clock(), 0, "no expiry: no clock read");
        let p = m.to_publish(QoS::AtMostOnce, false, 0, &[], 0);
        assert!(p.props.is_empty());
        let p = m.to_publish(QoS::AtMostOnce, false, 0, &[7], 0);
        assert_eq!(p.props.subscription_ids, [7]);
        assert_eq!(p.props.message_expiry, None);
        let mut e = m.clone();
        e.props.message_expiry = Some(10);
        assert!(e.expiry_clock() > 0);
        // 3 s after its receipt, 7 of 10 s are left.
        let p = e.to_publish(QoS::AtMostOnce, false, 0, &[], 4_000_000);
        assert_eq!(p.props.message_expiry, Some(7));
        assert!(p.props.subscription_ids.is_empty());
    }

    #[test]
    fn record_round_trip_keeps_metadata_and_user_properties() {
        let m = Message {
            topic: "a/b".into(),
            payload: Bytes::from_static(b"hi"),
            qos: QoS::ExactlyOnce,
            retain: true,
            props: Properties {
                payload_format: Some(1),
                message_expiry: Some(30),
                content_type: Some("text/plain".into()),
                response_topic: Some("r/t".into()),
                correlation_data: Some(Bytes::from_static(&[0, 1, 2])),
                user: vec![("k".into(), "v".into()), ("k".into(), "w".into())],
                ..Properties::default()
            }
            .into(),
            received: 5,
        };
        let block = m.to_block().unwrap();
        let rec = block.iter().next().unwrap();
        let back = Message::from_record("a/b".into(), rec.headers, rec.payload, 5);
        assert_eq!(back, m);
    }

    #[test]
    fn native_records_count_as_qos1_and_headers_become_user_properties() {
        let h = HeadersBuilder::new()
            .add("type", "drone")
            .add("bin", [0xffu8])
            .finish()
            .unwrap();
        let m = Message::from_record("t".into(), h, Bytes::new(), 0);
        assert_eq!(m.qos, QoS::AtLeastOnce);
        assert_eq!(m.props.user, vec![(Str::from("type"), Str::from("drone"))]);
    }

    #[test]
    fn plain_messages_share_the_headers_the_builder_would_make() {
        for q in [QoS::AtMostOnce, QoS::AtLeastOnce, QoS::ExactlyOnce] {
            let mut m = Message::from_record("t".into(), Bytes::new(), Bytes::new(), 1);
            m.qos = q;
            let built = HeadersBuilder::new()
                .add(key::QOS, [b'0' + q as u8])
                .finish()
                .unwrap();
            assert_eq!(m.headers().unwrap(), built);
            let back = Message::from_record("t".into(), built, Bytes::new(), 1);
            assert_eq!(back.qos, q);
            m.retain = true;
            let with_retain = Headers::parse(m.headers().unwrap()).unwrap();
            assert!(with_retain.iter().any(|(k, _)| k.as_str() == key::RETAIN));
        }
    }

    #[test]
    fn expiry_counts_down_from_receipt() {
        let mut m = Message::from_record("t".into(), Bytes::new(), Bytes::new(), 1_000_000);
        assert_eq!(m.expiry_left(9_000_000), None);
        m.props.message_expiry = Some(5);
        assert_eq!(m.expiry_left(3_000_000), Some(3));
        assert!(m.expired(7_000_000));
    }
}
