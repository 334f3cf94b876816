//! DISCONNECT (3.14) and AUTH (3.15): in v5 a reason code and properties,
//! both optional (a remaining length of 0 means reason 0x00).

use bytes::{BufMut, BytesMut};

use super::prim::Reader;
use super::props::{Context, Properties, Props};
use super::{CodecError, Version};

/// DISCONNECT or AUTH body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disconnect {
    /// Reason code (v5; 0 = normal disconnection / success).
    pub reason: u8,
    /// Properties (v5).
    pub props: Props,
}

impl Disconnect {
    /// A DISCONNECT with `reason` and a reason string.
    pub fn with_reason(reason: u8, text: &str) -> Disconnect {
        let mut props = Properties::default();
        if !text.is_empty() {
            props.reason_string = Some(text.into());
        }
        Disconnect {
            reason,
            props: props.into(),
        }
    }

    pub(crate) fn read(
        version: Version,
        ctx: Context,
        mut r: Reader,
    ) -> Result<Disconnect, CodecError> {
        let mut d = Disconnect::default();
        if version == Version::V5 && r.remaining() > 0 {
            d.reason = r.u8()?;
            if r.remaining() > 0 {
                d.props = Properties::read(&mut r, ctx)?.into();
            }
        }
        if r.remaining() != 0 {
            return Err(CodecError::Malformed(
                "trailing bytes after DISCONNECT or AUTH",
            ));
        }
        Ok(d)
    }

    pub(crate) fn write_body(&self, version: Version, b: &mut BytesMut) -> Result<(), CodecError> {
        if version == Version::V5 && (self.reason != 0 || !self.props.is_empty()) {
            b.put_u8(self.reason);
            self.props.write(b)?;
        }
        Ok(())
    }
}
