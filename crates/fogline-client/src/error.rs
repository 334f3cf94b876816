//! The client's error type.

use fogline_wire::{ErrorCode, TopicError, WireError};

/// What went wrong with a client call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not `host:port`, `tcp://host:port` or `unix:/path`.
    #[error("invalid address {0:?}")]
    InvalidAddress(String),
    /// Connecting or handshaking failed at the socket level.
    #[error("connect failed: {0}")]
    Io(#[from] std::io::Error),
    /// TLS cannot be set up (a CA, certificate or key file that cannot be used), or the
    /// TLS handshake failed (the server's certificate does not verify, the server refused
    /// the client's certificate).
    #[error("TLS: {0}")]
    Tls(String),
    /// The server answered something the protocol does not allow here.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server refused the request with an `Error` frame. A refused login
    /// (`BadCredentials`, `NotAuthorized` in answer to Hello) ends the client: it does not
    /// reconnect.
    #[error("server error {code}: {message}")]
    Server {
        /// The stable error code.
        code: ErrorCode,
        /// The server's explanation.
        message: String,
    },
    /// The connection was lost before the request was answered (or while
    /// disconnected). The request may or may not have taken effect.
    #[error("disconnected from the server")]
    Disconnected,
    /// The client was shut down.
    #[error("client closed")]
    Closed,
    /// A record's headers + payload exceed the server's `max_message`.
    #[error("record of {size} bytes exceeds the server's max_message of {max}")]
    MessageTooLarge {
        /// Headers + payload bytes.
        size: usize,
        /// The server's limit.
        max: u32,
    },
    /// The topic breaks the topic rules.
    #[error("invalid topic: {0}")]
    InvalidTopic(TopicError),
    /// The filter breaks the filter rules.
    #[error("invalid filter: {0}")]
    InvalidFilter(TopicError),
    /// An interest profile that does not parse (or names a topic where it may not).
    #[error("invalid interest: {0}")]
    InvalidInterest(String),
    /// A data profile that does not parse.
    #[error("invalid profile: {0}")]
    InvalidProfile(String),
    /// A value does not fit the wire format.
    #[error("cannot encode: {0}")]
    Encode(#[from] WireError),
    /// The server did not answer within the request timeout.
    #[error("request timed out")]
    Timeout,
    /// The call does not fit the object's mode (e.g. `recv` on a pull consumer).
    #[error("{0}")]
    Usage(&'static str),
}

impl ClientError {
    /// The server's error code, when the server refused the request.
    pub fn server_code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl From<fogline_net::tls::TlsError> for ClientError {
    fn from(e: fogline_net::tls::TlsError) -> ClientError {
        // Its text starts with "TLS: " already.
        let text = e.to_string();
        ClientError::Tls(text.strip_prefix("TLS: ").unwrap_or(&text).to_string())
    }
}
