//! SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK (3.8-3.11).
//!
//! SUBSCRIBE: packet id | [v5 properties] | (filter, options)+ where the
//! options byte is QoS (bits 0-1), no local (2), retain as published (3),
//! retain handling (4-5); 3.1.1 only has the QoS bits.

use bytes::{BufMut, BytesMut};
use fogline_wire::Str;

use super::prim::{put_bin, Reader};
use super::props::{Context, Properties, Props};
use super::{CodecError, QoS, Version};

/// One filter of a SUBSCRIBE with its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// The topic filter (possibly `$share/group/filter`).
    pub filter: Str,
    /// Maximum QoS granted to matching messages.
    pub qos: QoS,
    /// Do not deliver the subscriber's own publications (v5).
    pub no_local: bool,
    /// Keep the retain flag of forwarded messages (v5).
    pub retain_as_published: bool,
    /// 0: send retained messages; 1: only for a new subscription; 2: never (v5).
    pub retain_handling: u8,
}

/// SUBSCRIBE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscribe {
    /// Packet identifier.
    pub pkid: u16,
    /// Properties (v5: subscription identifier, user properties).
    pub props: Props,
    /// At least one filter.
    pub filters: Vec<Filter>,
}

fn pkid(r: &mut Reader) -> Result<u16, CodecError> {
    match r.u16()? {
        0 => Err(CodecError::Malformed("packet identifier 0")),
        id => Ok(id),
    }
}

impl Subscribe {
    pub(crate) fn read(version: Version, mut r: Reader) -> Result<Subscribe, CodecError> {
        let pkid = pkid(&mut r)?;
        let props = match version {
            Version::V5 => Properties::read(&mut r, Context::Subscribe)?.into(),
            Version::V4 => Props::default(),
        };
        let mut filters = Vec::new();
        while r.remaining() > 0 {
            let filter = r.string()?;
            let o = r.u8()?;
            let reserved = match version {
                Version::V4 => 0xfc,
                Version::V5 => 0xc0,
            };
            if o & reserved != 0 {
                return Err(CodecError::Malformed("SUBSCRIBE options reserved bits set"));
                // [MQTT-3.8.3-4] (3.1.1), [MQTT-3-8.3-5] (5.0)
            }
            let qos = QoS::from_u8(o & 3).ok_or(CodecError::Malformed("subscription QoS 3"))?;
            let retain_handling = (o >> 4) & 3;
            if retain_handling == 3 {
                return Err(CodecError::Protocol("retain handling 3"));
            }
            filters.push(Filter {
                filter,
                qos,
                no_local: o & 0x04 != 0,
                retain_as_published: o & 0x08 != 0,
                retain_handling,
            });
        }
        if filters.is_empty() {
            return Err(CodecError::Protocol("SUBSCRIBE without a filter")); // [MQTT-3.8.3-3]
        }
        Ok(Subscribe {
            pkid,
            props,
            filters,
        })
    }

    pub(crate) fn write_body(&self, version: Version, b: &mut BytesMut) -> Result<(), CodecError> {
        b.put_u16(self.pkid);
        if version == Version::V5 {
            self.props.write(b)?;
        }
        for f in &self.filters {
            put_bin(b, f.filter.as_bytes())?;
            let mut o = f.qos as u8;
            if version == Version::V5 {
                o |= u8::from(f.no_local) << 2
                    | u8::from(f.retain_as_published) << 3
                    | f.retain_handling << 4;
            }
            b.put_u8(o);
        }
        Ok(())
    }
}

/// SUBACK and UNSUBACK: packet id, v5 properties, one code per filter
/// (UNSUBACK has no codes in 3.1.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubAck {
    /// Packet identifier of the request.
    pub pkid: u16,
    /// Properties (v5).
    pub props: Props,
    /// Return or reason codes, in the order of the request's filters.
    pub codes: Vec<u8>,
}

impl SubAck {
    pub(crate) fn read(version: Version, mut r: Reader) -> Result<SubAck, CodecError> {
        let pkid = pkid(&mut r)?;
        let props = match version {
            Version::V5 => Properties::read(&mut r, Context::SubAck)?.into(),
            Version::V4 => Props::default(),
        };
        let codes = r.rest().to_vec();
        Ok(SubAck { pkid, props, codes })
    }

    pub(crate) fn write_body(&self, version: Version, b: &mut BytesMut) -> Result<(), CodecError> {
        b.put_u16(self.pkid);
        if version == Version::V5 {
            self.props.write(b)?;
        }
        b.put_slice(&self.codes);
        Ok(())
    }
}

/// UNSUBSCRIBE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsubscribe {
    /// Packet identifier.
    pub pkid: u16,
    /// Properties (v5: user properties).
    pub props: Props,
    /// At least one filter.
    pub filters: Vec<Str>,
}

impl Unsubscribe {
    pub(crate) fn read(version: Version, mut r: Reader) -> Result<Unsubscribe, CodecError> {
        let pkid = pkid(&mut r)?;
        let props = match version {
            Version::V5 => Properties::read(&mut r, Context::Unsubscribe)?.into(),
            Version::V4 => Props::default(),
        };
        let mut filters = Vec::new();
        while r.remaining() > 0 {
            filters.push(r.string()?);
        }
        if filters.is_empty() {
            return Err(CodecError::Protocol("UNSUBSCRIBE without a filter")); // [MQTT-3.10.3-2]
        }
        Ok(Unsubscribe {
            pkid,
            props,
            filters,
        })
    }

    pub(crate) fn write_body(&self, version: Version, b: &mut BytesMut) -> Result<(), CodecError> {
        b.put_u16(self.pkid);
        if version == Version::V5 {
            self.props.write(b)?;
        }
        for f in &self.filters {
            put_bin(b, f.as_bytes())?;
        }
        Ok(())
    }
}
