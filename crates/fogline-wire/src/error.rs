//! Codec errors and the protocol's stable numeric error codes.

/// Why a frame could not be decoded or encoded.
///
/// This is the codec's own error: it says what is wrong with bytes, not what
/// the server thinks of a request. [`WireError::code`] maps it to the
/// [`ErrorCode`] a server sends back in an `Error` frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The length prefix announces a frame larger than the allowed maximum.
    /// The stream cannot be resynchronised: close the connection.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    FrameTooLarge {
        /// The announced length (kind + body).
        len: u32,
        /// The maximum the decoder was given.
        max: u32,
    },
    /// The frame kind byte is not one this codec knows. The frame was consumed.
    #[error("unknown frame kind 0x{kind:02x}")]
    UnknownFrame {
        /// The kind byte.
        kind: u8,
    },
    /// The frame's body does not follow its kind's layout. The frame was consumed.
    #[error("malformed frame 0x{kind:02x}: {reason}")]
    Malformed {
        /// The kind byte (0 when the frame had no kind byte at all).
        kind: u8,
        /// What was wrong.
        reason: &'static str,
    },
    /// A value is too long for its length field and cannot be encoded.
    #[error("{field} is {len} bytes, more than its length field can hold")]
    TooLong {
        /// Which field.
        field: &'static str,
        /// Its length in bytes (or items, for counted lists).
        len: usize,
    },
}

impl WireError {
    /// The error code a server answers this decoding error with.
    pub fn code(&self) -> ErrorCode {
        match self {
            WireError::FrameTooLarge { .. } => ErrorCode::FrameTooLarge,
            WireError::UnknownFrame { .. } => ErrorCode::UnknownFrame,
            WireError::Malformed { .. } | WireError::TooLong { .. } => ErrorCode::Malformed,
        }
    }
}

/// Stable numeric error codes carried by `Error` frames.
///
/// Numbers are part of the protocol: never change or reuse one. Codes this
/// build does not know are kept as [`ErrorCode::Other`] so a newer peer's
/// code survives a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 1: the frame's body does not follow its layout.
    Malformed,
    /// 2: the frame kind is unknown.
    UnknownFrame,
    /// 3: the frame exceeds the server's `max_frame`.
    FrameTooLarge,
    /// 4: a record exceeds the server's `max_message`.
    MessageTooLarge,
    /// 5: the Hello version is not supported.
    UnsupportedVersion,
    /// 6: the topic breaks the topic rules.
    InvalidTopic,
    /// 7: the filter breaks the filter rules.
    InvalidFilter,
    /// 8: no stream by that name.
    UnknownStream,
    /// 9: no consumer with that id on this connection, or no durable consumer of that name.
    UnknownConsumer,
    /// 10: no subscription with that id on this connection.
    UnknownSubscription,
    /// 11: the connection was too slow and is being disconnected.
    SlowConsumer,
    /// 12: the server could not store the records.
    StorageFailed,
    /// 13: a frame arrived before Hello.
    NotConnected,
    /// 14: the sub_id or consumer name is already in use.
    Duplicate,
    /// 15: the server is shutting down.
    ServerShutdown,
    /// 16: an internal server error.
    Internal,
    /// 17: a name (durable consumer) breaks the naming rules.
    InvalidName,
    /// 18: a per-connection limit (consumers, subscriptions) is reached.
    TooMany,
    /// 19: a request that carries nothing to do (a Publish of zero records).
    EmptyRequest,
    /// 20: a request whose values cannot be applied (a stream's settings, a change that is
    /// not allowed); the message says which and why.
    Invalid,
    /// 21: no such resource: a path or method the HTTP admin API does not serve (not sent
    /// on the native protocol, whose unknown frames are `UnknownFrame`).
    NotFound,
    /// 22: the records at the offsets a consumer reached were damaged, or lost to damage
    /// found earlier: the message names the offsets; the consumer has moved past them.
    DataLost,
    /// 23: a frame did not arrive whole within the server's frame time limit once its first
    /// byte had (or found no room in the server's read budget in that time).
    FrameTimeout,
    /// 24: Hello's user name and password do not match a user of the node, or it carried
    /// none and the node admits no anonymous clients; the connection is closed.
    BadCredentials,
    /// 25: the connection's user may not do this (the node's access control list); the
    /// message names the topic or operation.
    NotAuthorized,
    /// A code this build does not know, kept as received.
    Other(u16),
}

impl ErrorCode {
    /// The code's number on the wire.
    pub fn as_u16(self) -> u16 {
        match self {
            ErrorCode::Malformed => 1,
            ErrorCode::UnknownFrame => 2,
            ErrorCode::FrameTooLarge => 3,
            ErrorCode::MessageTooLarge => 4,
            ErrorCode::UnsupportedVersion => 5,
            ErrorCode::InvalidTopic => 6,
            ErrorCode::InvalidFilter => 7,
            ErrorCode::UnknownStream => 8,
            ErrorCode::UnknownConsumer => 9,
            ErrorCode::UnknownSubscription => 10,
            ErrorCode::SlowConsumer => 11,
            ErrorCode::StorageFailed => 12,
            ErrorCode::NotConnected => 13,
            ErrorCode::Duplicate => 14,
            ErrorCode::ServerShutdown => 15,
            ErrorCode::Internal => 16,
            ErrorCode::InvalidName => 17,
            ErrorCode::TooMany => 18,
            ErrorCode::EmptyRequest => 19,
            ErrorCode::Invalid => 20,
            ErrorCode::NotFound => 21,
            ErrorCode::DataLost => 22,
            ErrorCode::FrameTimeout => 23,
            ErrorCode::BadCredentials => 24,
            ErrorCode::NotAuthorized => 25,
            ErrorCode::Other(code) => code,
        }
    }

    /// The code for a number; unknown numbers become [`ErrorCode::Other`].
    pub fn from_u16(code: u16) -> ErrorCode {
        match code {
            1 => ErrorCode::Malformed,
            2 => ErrorCode::UnknownFrame,
            3 => ErrorCode::FrameTooLarge,
            4 => ErrorCode::MessageTooLarge,
            5 => ErrorCode::UnsupportedVersion,
            6 => ErrorCode::InvalidTopic,
            7 => ErrorCode::InvalidFilter,
            8 => ErrorCode::UnknownStream,
            9 => ErrorCode::UnknownConsumer,
            10 => ErrorCode::UnknownSubscription,
            11 => ErrorCode::SlowConsumer,
            12 => ErrorCode::StorageFailed,
            13 => ErrorCode::NotConnected,
            14 => ErrorCode::Duplicate,
            15 => ErrorCode::ServerShutdown,
            16 => ErrorCode::Internal,
            17 => ErrorCode::InvalidName,
            18 => ErrorCode::TooMany,
            19 => ErrorCode::EmptyRequest,
            20 => ErrorCode::Invalid,
            21 => ErrorCode::NotFound,
            22 => ErrorCode::DataLost,
            23 => ErrorCode::FrameTimeout,
            24 => ErrorCode::BadCredentials,
            25 => ErrorCode::NotAuthorized,
            other => ErrorCode::Other(other),
        }
    }

    /// The code's stable name (`"UnknownStream"`), as the HTTP admin API reports it;
    /// `"Other"` for a code this build does not know.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Malformed => "Malformed",
            ErrorCode::UnknownFrame => "UnknownFrame",
            ErrorCode::FrameTooLarge => "FrameTooLarge",
            ErrorCode::MessageTooLarge => "MessageTooLarge",
            ErrorCode::UnsupportedVersion => "UnsupportedVersion",
            ErrorCode::InvalidTopic => "InvalidTopic",
            ErrorCode::InvalidFilter => "InvalidFilter",
            ErrorCode::UnknownStream => "UnknownStream",
            ErrorCode::UnknownConsumer => "UnknownConsumer",
            ErrorCode::UnknownSubscription => "UnknownSubscription",
            ErrorCode::SlowConsumer => "SlowConsumer",
            ErrorCode::StorageFailed => "StorageFailed",
            ErrorCode::NotConnected => "NotConnected",
            ErrorCode::Duplicate => "Duplicate",
            ErrorCode::ServerShutdown => "ServerShutdown",
            ErrorCode::Internal => "Internal",
            ErrorCode::InvalidName => "InvalidName",
            ErrorCode::TooMany => "TooMany",
            ErrorCode::EmptyRequest => "EmptyRequest",
            ErrorCode::Invalid => "Invalid",
            ErrorCode::NotFound => "NotFound",
            ErrorCode::DataLost => "DataLost",
            ErrorCode::FrameTimeout => "FrameTimeout",
            ErrorCode::BadCredentials => "BadCredentials",
            ErrorCode::NotAuthorized => "NotAuthorized",
            ErrorCode::Other(_) => "Other",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorCode::Other(code) => write!(f, "error code {code}"),
            known => write!(f, "{known:?} ({})", known.as_u16()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_known_numbers_are_stable() {
        for n in 0..=u16::MAX {
            assert_eq!(ErrorCode::from_u16(n).as_u16(), n);
        }
        assert_eq!(ErrorCode::Malformed.as_u16(), 1);
        assert_eq!(ErrorCode::SlowConsumer.as_u16(), 11);
        assert_eq!(ErrorCode::Internal.as_u16(), 16);
        assert_eq!(ErrorCode::TooMany.as_u16(), 18);
        assert_eq!(ErrorCode::Invalid.as_u16(), 20);
        assert_eq!(ErrorCode::NotFound.as_u16(), 21);
        assert_eq!(ErrorCode::DataLost.as_u16(), 22);
        assert_eq!(ErrorCode::FrameTimeout.as_u16(), 23);
        assert_eq!(ErrorCode::BadCredentials.as_u16(), 24);
        assert_eq!(ErrorCode::NotAuthorized.as_u16(), 25);
        assert_eq!(ErrorCode::from_u16(26), ErrorCode::Other(26));
        for n in 1..=25 {
            let code = ErrorCode::from_u16(n);
            assert_ne!(code.name(), "Other", "{n}");
            assert_eq!(format!("{code:?}"), code.name());
        }
        assert_eq!(ErrorCode::from_u16(0), ErrorCode::Other(0));
    }
}
