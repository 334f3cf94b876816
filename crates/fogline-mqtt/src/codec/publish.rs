//! PUBLISH (3.3): fixed-header flags DUP | QoS (2 bits) | RETAIN, then
//! topic | [packet id if QoS > 0] | [v5 properties] | payload (the rest).

use bytes::{BufMut, Bytes, BytesMut};
use fogline_wire::Str;

use super::prim::{put_bin, put_varint, varint_len, Reader};
use super::props::{Context, Properties, Props};
use super::{CodecError, QoS, Version};

/// PUBLISH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Publish {
    /// Redelivery flag.
    pub dup: bool,
    /// Quality of service.
    pub qos: QoS,
    /// Retain flag.
    pub retain: bool,
    /// Topic name (empty in v5 when a topic alias stands for it).
    pub topic: Str,
    /// Packet identifier (0 for QoS 0).
    pub pkid: u16,
    /// Properties (v5).
    pub props: Props,
    /// Application message, a zero-copy slice of the read buffer.
    pub payload: Bytes,
}

impl Publish {
    pub(crate) fn read(version: Version, flags: u8, mut r: Reader) -> Result<Publish, CodecError> {
        let qos =
            QoS::from_u8((flags >> 1) & 3).ok_or(CodecError::Malformed("PUBLISH with QoS 3"))?; // [MQTT-3.3.1-4]
        let dup = flags & 0x08 != 0;
        if dup && qos == QoS::AtMostOnce {
            return Err(CodecError::Malformed("DUP set on a QoS 0 PUBLISH")); // [MQTT-3.3.1-2]
        }
        let topic = r.string()?;
        let pkid = if qos == QoS::AtMostOnce {
            0
        } else {
            let id = r.u16()?;
            if id == 0 {
                return Err(CodecError::Malformed("packet identifier 0")); // [MQTT-2.3.1-1]
            }
            id
        };
        let props = match version {
            Version::V5 => Properties::read(&mut r, Context::Publish)?.into(),
            Version::V4 => Props::default(),
        };
        Ok(Publish {
            dup,
            qos,
            retain: flags & 1 != 0,
            topic,
            pkid,
            props,
            payload: r.rest(),
        })
    }

    /// Appends the whole packet; the payload is copied once, into `buf`.
    pub(crate) fn write(&self, version: Version, buf: &mut BytesMut) -> Result<(), CodecError> {
        let props_len = match version {
            Version::V5 => self.props.encoded_len()?,
            Version::V4 => 0,
        };
        let pkid_len = if self.qos == QoS::AtMostOnce { 0 } else { 2 };
        let len = 2 + self.topic.len() + pkid_len + props_len + self.payload.len();
        let len32 = u32::try_from(len).map_err(|_| CodecError::TooLong("PUBLISH"))?;
        let mut flags = (self.qos as u8) << 1;
        if self.dup {
            flags |= 0x08;
        }
        if self.retain {
            flags |= 1;
        }
        let mark = buf.len();
        buf.reserve(1 + varint_len(len32) + len);
        buf.put_u8(0x30 | flags);
        let res = put_varint(buf, len32)
            .and_then(|()| put_bin(buf, self.topic.as_bytes()))
            .and_then(|()| {
                if pkid_len > 0 {
                    buf.put_u16(self.pkid);
                }
                match version {
                    Version::V5 => self.props.write(buf),
                    Version::V4 => Ok(()),
                }
            });
        if let Err(e) = res {
            buf.truncate(mark);
            return Err(e);
        }
        buf.put_slice(&self.payload);
        Ok(())
    }

    /// Size of the encoded packet.
    pub fn encoded_len(&self, version: Version) -> usize {
        let props_len = match version {
            Version::V5 => self.props.encoded_len().unwrap_or(usize::MAX / 4),
            Version::V4 => 0,
        };
        let pkid_len = if self.qos == QoS::AtMostOnce { 0 } else { 2 };
        let len = 2 + self.topic.len() + pkid_len + props_len + self.payload.len();
        1 + varint_len(u32::try_from(len).unwrap_or(u32::MAX)) + len
    }
}
