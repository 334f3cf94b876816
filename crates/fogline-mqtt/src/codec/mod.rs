//! The MQTT 3.1.1 / 5.0 packet codec: pure (bytes in, values out; no I/O).
//!
//! Every packet is a fixed header (type << 4 | flags, then the remaining
//! length as a variable byte integer) and a body. [`decode`] takes whole
//! packets off a read buffer; payloads stay zero-copy slices of it.
//! [`encode`] appends one packet. One file per packet family.

mod ack;
mod connect;
mod disconnect;
mod error;
mod prim;
pub mod props;
mod publish;
mod subscribe;

use bytes::{BufMut, BytesMut};

pub use ack::Ack;
pub use connect::{ConnAck, Connect, Will};
pub use disconnect::Disconnect;
pub use error::CodecError;
pub use prim::VARINT_MAX;
pub use props::{Properties, Props};
pub use publish::Publish;
pub use subscribe::{Filter, SubAck, Subscribe, Unsubscribe};

use prim::{put_varint, read_varint, Reader};
use props::Context;

/// Protocol level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// MQTT 3.1.1 (level 4).
    V4 = 4,
    /// MQTT 5.0 (level 5).
    V5 = 5,
}

/// Quality of service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QoS {
    /// At most once.
    AtMostOnce = 0,
    /// At least once.
    AtLeastOnce = 1,
    /// Exactly once.
    ExactlyOnce = 2,
}

impl QoS {
    /// The QoS numbered `v` (0..=2).
    pub fn from_u8(v: u8) -> Option<QoS> {
        match v {
            0 => Some(QoS::AtMostOnce),
            1 => Some(QoS::AtLeastOnce),
            2 => Some(QoS::ExactlyOnce),
            _ => None,
        }
    }
}

/// One MQTT control packet.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // variants are the packets of the same name
pub enum Packet {
    Connect(Box<Connect>),
    ConnAck(ConnAck),
    Publish(Publish),
    PubAck(Ack),
    PubRec(Ack),
    PubRel(Ack),
    PubComp(Ack),
    Subscribe(Subscribe),
    SubAck(SubAck),
    Unsubscribe(Unsubscribe),
    UnsubAck(SubAck),
    PingReq,
    PingResp,
    Disconnect(Disconnect),
    Auth(Disconnect),
}

impl Packet {
    fn type_flags(&self) -> u8 {
        match self {
            Packet::Connect(_) => 0x10,
            Packet::ConnAck(_) => 0x20,
            Packet::Publish(_) => 0x30,
            Packet::PubAck(_) => 0x40,
            Packet::PubRec(_) => 0x50,
            Packet::PubRel(_) => 0x62,
            Packet::PubComp(_) => 0x70,
            Packet::Subscribe(_) => 0x82,
            Packet::SubAck(_) => 0x90,
            Packet::Unsubscribe(_) => 0xa2,
            Packet::UnsubAck(_) => 0xb0,
            Packet::PingReq => 0xc0,
            Packet::PingResp => 0xd0,
            Packet::Disconnect(_) => 0xe0,
            Packet::Auth(_) => 0xf0,
        }
    }
}

/// The whole size of the packet `buf` starts with, as its fixed header says (0 until the
/// remaining length is all here, or when it is malformed: `decode` reports that).
pub fn announced(buf: &[u8]) -> usize {
    match buf.get(1..).map(read_varint) {
        Some(Ok(Some((len, n)))) => 1 + n + len as usize,
        _ => 0,
    }
}

/// Takes one whole packet off the front of `buf`.
///
/// `version` is the connection's protocol level (CONNECT carries its own).
/// Returns `Ok(None)` while the packet is incomplete.
///
/// # Errors
/// [`CodecError::TooLarge`] as soon as the fixed header announces a packet
/// over `max_packet` (nothing consumed); a malformed remaining length
/// consumes nothing either; otherwise the packet is consumed and
/// [`CodecError::Malformed`], [`CodecError::Protocol`] or
/// [`CodecError::UnsupportedVersion`] says what is wrong with it.
pub fn decode(
    buf: &mut BytesMut,
    version: Version,
    max_packet: usize,
) -> Result<Option<Packet>, CodecError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let Some((len, n)) = read_varint(&buf[1..])? else {
        return Ok(None);
    };
    let total = 1 + n + len as usize;
    if total > max_packet {
        return Err(CodecError::TooLarge {
            size: total,
            max: max_packet,
        });
    }
    if buf.len() < total {
        return Ok(None);
    }
    let mut packet = buf.split_to(total).freeze();
    bytes::Buf::advance(&mut packet, 1 + n);
    decode_body(first, version, Reader::new(packet)).map(Some)
}

fn decode_body(first: u8, version: Version, r: Reader) -> Result<Packet, CodecError> {
    let flags = first & 0x0f;
    let need_flags = |want: u8| {
        if flags == want {
            Ok(())
        } else {
            Err(CodecError::Malformed("invalid fixed-header flags")) // [MQTT-2.2.2-2]
        }
    };
    let empty = |r: &Reader| {
        if r.remaining() == 0 {
            Ok(())
        } else {
            Err(CodecError::Malformed("packet must have no body"))
        }
    };
    Ok(match first >> 4 {
        1 => Packet::Connect(Box::new(Connect::read(flags, r)?)),
        2 => Packet::ConnAck(ConnAck::read(version, flags, r)?),
        3 => Packet::Publish(Publish::read(version, flags, r)?),
        4 => {
            need_flags(0)?;
            Packet::PubAck(Ack::read(version, r)?)
        }
        5 => {
            need_flags(0)?;
            Packet::PubRec(Ack::read(version, r)?)
        }
        6 => {
            need_flags(2)?;
            Packet::PubRel(Ack::read(version, r)?)
        }
        7 => {
            need_flags(0)?;
            Packet::PubComp(Ack::read(version, r)?)
        }
        8 => {
            need_flags(2)?; // [MQTT-3.8.1-1]
            Packet::Subscribe(Subscribe::read(version, r)?)
        }
        9 => {
            need_flags(0)?;
            Packet::SubAck(SubAck::read(version, r)?)
        }
        10 => {
            need_flags(2)?; // [MQTT-3.10.1-1]
            Packet::Unsubscribe(Unsubscribe::read(version, r)?)
        }
        11 => {
            need_flags(0)?;
            if version == Version::V4 && r.remaining() != 2 {
                return Err(CodecError::Malformed("3.1.1 UNSUBACK is a packet id only"));
            }
            Packet::UnsubAck(SubAck::read(version, r)?)
        }
        12 => {
            need_flags(0)?;
            empty(&r)?;
            Packet::PingReq
        }
        13 => {
            need_flags(0)?;
            empty(&r)?;
            Packet::PingResp
        }
        14 => {
            need_flags(0)?;
            Packet::Disconnect(Disconnect::read(version, Context::Disconnect, r)?)
        }
        15 if version == Version::V5 => {
            need_flags(0)?;
            Packet::Auth(Disconnect::read(version, Context::Auth, r)?)
        }
        _ => return Err(CodecError::Malformed("reserved packet type")),
    })
}

/// Appends `packet` encoded for protocol level `version`.
///
/// # Errors
/// [`CodecError::TooLong`] when a field overflows its length (nothing is
/// appended).
pub fn encode(packet: &Packet, version: Version, buf: &mut BytesMut) -> Result<(), CodecError> {
    if let Packet::Publish(p) = packet {
        return p.write(version, buf);
    }
    let mut body = BytesMut::new();
    match packet {
        Packet::Connect(c) => c.write_body(&mut body)?,
        Packet::ConnAck(c) => c.write_body(version, &mut body)?,
        Packet::PubAck(a) | Packet::PubRec(a) | Packet::PubRel(a) | Packet::PubComp(a) => {
            a.write_body(version, &mut body)?
        }
        Packet::Subscribe(s) => s.write_body(version, &mut body)?,
        Packet::SubAck(s) => s.write_body(version, &mut body)?,
        Packet::UnsubAck(s) => {
            if version == Version::V5 {
                s.write_body(version, &mut body)?
            } else {
                body.put_u16(s.pkid)
            }
        }
        Packet::Unsubscribe(u) => u.write_body(version, &mut body)?,
        Packet::Disconnect(d) | Packet::Auth(d) => d.write_body(version, &mut body)?,
        Packet::PingReq | Packet::PingResp | Packet::Publish(_) => {}
    }
    let len = u32::try_from(body.len()).map_err(|_| CodecError::TooLong("packet"))?;
    if len > VARINT_MAX {
        return Err(CodecError::TooLong("packet"));
    }
    buf.put_u8(packet.type_flags());
    put_varint(buf, len)?;
    buf.put_slice(&body);
    Ok(())
}
