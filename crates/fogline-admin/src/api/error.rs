//! Errors as the admin API answers them: an HTTP status and a JSON body with the native
//! protocol's error code (`{"error": {"code": 8, "name": "UnknownStream", "message": ...}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use fogline_broker::BrokerError;
use fogline_wire::ErrorCode;

/// A refused request.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The protocol's code.
    pub code: ErrorCode,
    /// What was wrong.
    pub message: String,
}

impl ApiError {
    /// An error with the status its code implies.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status: status_of(code),
            code,
            message: message.into(),
        }
    }

    /// A request body or query that cannot be read.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Invalid, message)
    }
}

/// The HTTP status for a protocol error code.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UnknownStream
        | ErrorCode::UnknownConsumer
        | ErrorCode::UnknownSubscription
        | ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Duplicate => StatusCode::CONFLICT,
        ErrorCode::MessageTooLarge | ErrorCode::FrameTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::Malformed
        | ErrorCode::Invalid
        | ErrorCode::InvalidName
        | ErrorCode::InvalidTopic
        | ErrorCode::InvalidFilter
        | ErrorCode::EmptyRequest
        | ErrorCode::UnknownFrame
        | ErrorCode::UnsupportedVersion => StatusCode::BAD_REQUEST,
        ErrorCode::TooMany => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::ServerShutdown => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::FrameTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorCode::DataLost => StatusCode::GONE,
        ErrorCode::BadCredentials => StatusCode::UNAUTHORIZED,
        ErrorCode::NotAuthorized => StatusCode::FORBIDDEN,
        ErrorCode::StorageFailed
        | ErrorCode::Internal
        | ErrorCode::SlowConsumer
        | ErrorCode::NotConnected
        | ErrorCode::Other(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<BrokerError> for ApiError {
    fn from(e: BrokerError) -> ApiError {
        ApiError::new(fogline_native::broker_code(&e), e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": {
                "code": self.code.as_u16(),
                "name": self.code.name(),
                "message": self.message,
            }
        });
        (self.status, Json(body)).into_response()
    }
}
