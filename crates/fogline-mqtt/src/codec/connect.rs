//! CONNECT (3.1) and CONNACK (3.2).
//!
//! CONNECT: protocol name "MQTT" | level (4 = 3.1.1, 5 = 5.0) | flags |
//! keep alive u16 | [v5 properties] | client id | [will properties, will
//! topic, will payload] | [user name] | [password].

use bytes::{BufMut, Bytes, BytesMut};
use fogline_wire::Str;

use super::prim::{put_bin, Reader};
use super::props::{Context, Properties, Props};
use super::{CodecError, QoS, Version};

/// A will message carried in CONNECT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Will {
    /// Topic it is published to.
    pub topic: Str,
    /// Payload.
    pub payload: Bytes,
    /// QoS it is published with.
    pub qos: QoS,
    /// Published as retained.
    pub retain: bool,
    /// Will properties (v5).
    pub props: Props,
}

/// CONNECT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connect {
    /// Protocol level.
    pub version: Version,
    /// Clean session (3.1.1) / clean start (5.0).
    pub clean_start: bool,
    /// Keep alive in seconds; 0 disables it.
    pub keep_alive: u16,
    /// Client identifier (may be empty).
    pub client_id: Str,
    /// Will message.
    pub will: Option<Will>,
    /// User name.
    pub username: Option<Str>,
    /// Password.
    pub password: Option<Bytes>,
    /// CONNECT properties (v5).
    pub props: Props,
}

impl Connect {
    pub(crate) fn read(flags: u8, mut r: Reader) -> Result<Connect, CodecError> {
        if flags != 0 {
            return Err(CodecError::Malformed("reserved fixed-header flags set"));
        }
        let name = r.binary()?;
        let level = r.u8()?;
        if &name[..] != b"MQTT" {
            // [MQTT-3.1.2-1] MQIsdp (3.1) and anything else are not spoken.
            return Err(CodecError::UnsupportedVersion(level));
        }
        let version = match level {
            4 => Version::V4,
            5 => Version::V5,
            other => return Err(CodecError::UnsupportedVersion(other)),
        };
        let cf = r.u8()?;
        if cf & 0x01 != 0 {
            return Err(CodecError::Malformed("CONNECT reserved flag set")); // [MQTT-3.1.2-3]
        }
        let will_flag = cf & 0x04 != 0;
        let will_qos = (cf >> 3) & 0x03;
        let will_retain = cf & 0x20 != 0;
        let password_flag = cf & 0x40 != 0;
        let username_flag = cf & 0x80 != 0;
        if !will_flag && (will_qos != 0 || will_retain) {
            return Err(CodecError::Malformed("will QoS or retain without a will"));
            // [MQTT-3.1.2-11], [MQTT-3.1.2-13], [MQTT-3.1.2-15]
        }
        let will_qos = QoS::from_u8(will_qos).ok_or(CodecError::Malformed("will QoS 3"))?; // [MQTT-3.1.2-14]
        if version == Version::V4 && password_flag && !username_flag {
            return Err(CodecError::Malformed("password without user name")); // [MQTT-3.1.2-22]
        }
        let keep_alive = r.u16()?;
        let props = match version {
            Version::V5 => Properties::read(&mut r, Context::Connect)?.into(),
            Version::V4 => Props::default(),
        };
        let client_id = r.string()?;
        let will = if will_flag {
            let props = match version {
                Version::V5 => Properties::read(&mut r, Context::Will)?.into(),
                Version::V4 => Props::default(),
            };
            let topic = r.string()?;
            let payload = r.binary()?;
            Some(Will {
                topic,
                payload,
                qos: will_qos,
                retain: will_retain,
                props,
            })
        } else {
            None
        };
        let username = if username_flag {
            Some(r.string()?)
        } else {
            None
        };
        let password = if password_flag {
            Some(r.binary()?)
        } else {
            None
        };
        if r.remaining() != 0 {
            return Err(CodecError::Malformed("trailing bytes after CONNECT"));
        }
        Ok(Connect {
            version,
            clean_start: cf & 0x02 != 0,
            keep_alive,
            client_id,
            will,
            username,
            password,
            props,
        })
    }

    pub(crate) fn write_body(&self, b: &mut BytesMut) -> Result<(), CodecError> {
        put_bin(b, b"MQTT")?;
        b.put_u8(self.version as u8);
        let mut cf = 0u8;
        if self.clean_start {
            cf |= 0x02;
        }
        if let Some(w) = &self.will {
            cf |= 0x04 | ((w.qos as u8) << 3);
            if w.retain {
                cf |= 0x20;
            }
        }
        if self.password.is_some() {
            cf |= 0x40;
        }
        if self.username.is_some() {
            cf |= 0x80;
        }
        b.put_u8(cf);
        b.put_u16(self.keep_alive);
        if self.version == Version::V5 {
            self.props.write(b)?;
        }
        put_bin(b, self.client_id.as_bytes())?;
        if let Some(w) = &self.will {
            if self.version == Version::V5 {
                w.props.write(b)?;
            }
            put_bin(b, w.topic.as_bytes())?;
            put_bin(b, &w.payload)?;
        }
        if let Some(u) = &self.username {
            put_bin(b, u.as_bytes())?;
        }
        if let Some(p) = &self.password {
            put_bin(b, p)?;
        }
        Ok(())
    }
}

/// CONNACK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnAck {
    /// Session present flag.
    pub session_present: bool,
    /// Return code (3.1.1, 0..=5) or reason code (5.0).
    pub code: u8,
    /// CONNACK properties (v5).
    pub props: Props,
}

impl ConnAck {
    pub(crate) fn read(version: Version, flags: u8, mut r: Reader) -> Result<ConnAck, CodecError> {
        if flags != 0 {
            return Err(CodecError::Malformed("reserved fixed-header flags set"));
        }
        let ack = r.u8()?;
        if ack & 0xfe != 0 {
            return Err(CodecError::Malformed("CONNACK reserved flags set"));
        }
        let code = r.u8()?;
        let props = match version {
            Version::V5 => Properties::read(&mut r, Context::ConnAck)?.into(),
            Version::V4 => Props::default(),
        };
        if r.remaining() != 0 {
            return Err(CodecError::Malformed("trailing bytes after CONNACK"));
        }
        Ok(ConnAck {
            session_present: ack & 1 != 0,
            code,
            props,
        })
    }

    pub(crate) fn write_body(&self, version: Version, b: &mut BytesMut) -> Result<(), CodecError> {
        b.put_u8(u8::from(self.session_present));
        b.put_u8(self.code);
        if version == Version::V5 {
            self.props.write(b)?;
        }
        Ok(())
    }
}
