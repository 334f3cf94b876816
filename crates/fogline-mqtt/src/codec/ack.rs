//! PUBACK, PUBREC, PUBREL and PUBCOMP (3.4-3.7): packet id, then in v5 an
//! optional reason code and optional properties (a remaining length of 2
//! means reason 0x00 and no properties).

use bytes::{BufMut, BytesMut};

use super::prim::Reader;
use super::props::{Context, Properties, Props};
use super::{CodecError, Version};

/// The body shared by the four publish acknowledgements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Packet identifier.
    pub pkid: u16,
    /// Reason code (v5; always 0 in 3.1.1).
    pub reason: u8,
    /// Properties (v5).
    pub props: Props,
}

impl Ack {
    /// A success acknowledgement of `pkid`.
    pub fn ok(pkid: u16) -> Ack {
        Ack {
            pkid,
            reason: 0,
            props: Props::default(),
        }
    }

    pub(crate) fn read(version: Version, mut r: Reader) -> Result<Ack, CodecError> {
        let pkid = r.u16()?;
        if pkid == 0 {
            return Err(CodecError::Malformed("packet identifier 0"));
        }
        let mut ack = Ack::ok(pkid);
        if version == Version::V5 && r.remaining() > 0 {
            ack.reason = r.u8()?;
            if r.remaining() > 0 {
                ack.props = Properties::read(&mut r, Context::Ack)?.into();
            }
        }
        if r.remaining() != 0 {
            return Err(CodecError::Malformed(
                "trailing bytes after acknowledgement",
            ));
        }
        Ok(ack)
    }

    pub(crate) fn write_body(&self, version: Version, b: &mut BytesMut) -> Result<(), CodecError> {
        b.put_u16(self.pkid);
        if version == Version::V5 && (self.reason != 0 || !self.props.is_empty()) {
            b.put_u8(self.reason);
            if !self.props.is_empty() {
                self.props.write(b)?;
            }
        }
        Ok(())
    }
}
