//! Codec errors, each mapped to the MQTT 5 reason code the specification
//! prescribes for it (MQTT 3.1.1 has no codes: the connection just closes).

/// Why bytes could not be decoded or a packet encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The bytes break the packet layout (reason code 0x81).
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    /// Well formed but against the protocol's rules (reason code 0x82).
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    /// The packet exceeds the maximum packet size (reason code 0x95).
    /// Nothing was consumed.
    #[error("packet of {size} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// Size of the whole packet.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// CONNECT names a protocol level this codec does not speak.
    #[error("unsupported protocol level {0}")]
    UnsupportedVersion(u8),
    /// A value does not fit its field when encoding.
    #[error("{0} does not fit its length field")]
    TooLong(&'static str),
}

impl CodecError {
    /// The MQTT 5 reason code for a DISCONNECT (or CONNACK) caused by this error.
    pub fn reason_code(&self) -> u8 {
        match self {
            CodecError::Malformed(_) | CodecError::TooLong(_) => 0x81,
            CodecError::Protocol(_) => 0x82,
            CodecError::TooLarge { .. } => 0x95,
            CodecError::UnsupportedVersion(_) => 0x84,
        }
    }
}
