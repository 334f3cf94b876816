//! Records to MQTT 5 publishes and back, with fogline-mqtt's header names
//! (`fogline_mqtt::message::key`): the MQTT 5 properties a record carries in `mqtt.*`
//! headers become properties again, every other header is a user property (values that are
//! not UTF-8 cannot be and are left out). Not carried: the retain flag and message expiry.

use bytes::Bytes;
use fogline_mqtt::message::key;
use rumqttc::v5::mqttbytes::v5::{Publish, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;

use super::ORIGIN;

/// The properties of a record with `headers` (an encoded header block) going out.
pub fn properties_out(headers: &[u8]) -> Option<PublishProperties> {
    let entries = fogline_wire::header_entries(headers).ok()?;
    let mut p = PublishProperties::default();
    let mut any = false;
    for (k, v) in entries {
        let text = || std::str::from_utf8(v).ok().map(str::to_string);
        match k {
            key::PAYLOAD_FORMAT => p.payload_format_indicator = v.first().map(|b| b - b'0'),
            key::CONTENT_TYPE => p.content_type = text(),
            key::RESPONSE_TOPIC => p.response_topic = text(),
            key::CORRELATION_DATA => p.correlation_data = Some(Bytes::copy_from_slice(v)),
            ORIGIN => continue,
            _ if k.starts_with("mqtt.") => continue,
            _ => match text() {
                Some(v) => p.user_properties.push((k.to_string(), v)),
                None => continue,
            },
        }
        any = true;
    }
    any.then_some(p)
}

/// Whether a record with `headers` came in through the bridge `name`.
pub fn came_from(headers: &[u8], name: &str) -> bool {
    fogline_wire::header_entries(headers)
        .map(|mut e| e.any(|(k, v)| k == ORIGIN && v == name.as_bytes()))
        .unwrap_or(false)
}

/// The headers of a record stored from `p`, received through the bridge `name`.
pub fn headers_in(p: &Publish, name: &str) -> Vec<(String, Vec<u8>)> {
    let qos = match p.qos {
        QoS::AtMostOnce => b"0",
        QoS::AtLeastOnce => b"1",
        QoS::ExactlyOnce => b"2",
    };
    let mut h = vec![
        (key::QOS.to_string(), qos.to_vec()),
        (ORIGIN.to_string(), name.as_bytes().to_vec()),
    ];
    if let Some(props) = &p.properties {
        if let Some(v) = props.payload_format_indicator {
            h.push((key::PAYLOAD_FORMAT.into(), vec![b'0' + v]));
        }
        if let Some(v) = &props.content_type {
            h.push((key::CONTENT_TYPE.into(), v.as_bytes().to_vec()));
        }
        if let Some(v) = &props.response_topic {
            h.push((key::RESPONSE_TOPIC.into(), v.as_bytes().to_vec()));
        }
        if let Some(v) = &props.correlation_data {
            h.push((key::CORRELATION_DATA.into(), v.to_vec()));
        }
        for (k, v) in &props.user_properties {
            // Our own origin is set above; a remote one claiming it is not believed.
            if k != ORIGIN {
                h.push((k.clone(), v.as_bytes().to_vec()));
            }
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use fogline_wire::HeadersBuilder;

    #[test]
    fn properties_and_user_properties_go_both_ways() {
        let mut p = Publish::new("t", QoS::AtLeastOnce, "x", None);
        p.properties = Some(PublishProperties {
            content_type: Some("application/json".into()),
            correlation_data: Some(Bytes::from_static(&[0, 255])),
            user_properties: vec![
                ("site".into(), "r1".into()),
                (ORIGIN.into(), "forged".into()),
            ],
            ..PublishProperties::default()
        });
        let headers = headers_in(&p, "up");
        let block = headers
            .iter()
            .fold(HeadersBuilder::new(), |b, (k, v)| b.add(k, v))
            .finish()
            .unwrap();
        assert!(came_from(&block, "up"));
        assert!(!came_from(&block, "other"));
        let out = properties_out(&block).unwrap();
        assert_eq!(out.content_type.as_deref(), Some("application/json"));
        assert_eq!(out.correlation_data.as_deref(), Some(&[0u8, 255][..]));
        // The origin and mqtt.qos stay home; user properties travel.
        assert_eq!(
            out.user_properties,
            [("site".to_string(), "r1".to_string())]
        );
    }

    #[test]
    fn plain_records_have_no_properties() {
        let block = HeadersBuilder::new().add(key::QOS, "1").finish().unwrap();
        assert_eq!(properties_out(&block), None);
        assert_eq!(properties_out(&[]), None);
        assert!(!came_from(&[], "up"));
        let binary = HeadersBuilder::new().add("k", [0xff]).finish().unwrap();
        assert_eq!(properties_out(&binary), None);
    }
}
