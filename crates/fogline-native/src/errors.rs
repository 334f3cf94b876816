//! How broker errors travel back to clients.

use fogline_broker::BrokerError;
use fogline_wire::ErrorCode;

/// The stable wire code for a broker error (the HTTP admin API reports the same codes).
pub fn broker_code(e: &BrokerError) -> ErrorCode {
    match e {
        BrokerError::Storage { source, .. } if source.resume().is_some() => ErrorCode::DataLost,
        // A held stream cannot store, as a full disk cannot; the message says why.
        BrokerError::Storage { .. } | BrokerError::Io { .. } | BrokerError::Held { .. } => {
            ErrorCode::StorageFailed
        }
        BrokerError::UnknownStream(_) => ErrorCode::UnknownStream,
        BrokerError::StreamExists(_) => ErrorCode::Duplicate,
        BrokerError::UnknownConsumer(_) => ErrorCode::UnknownConsumer,
        BrokerError::Invalid(_) => ErrorCode::Invalid,
        BrokerError::InvalidTopic(_) => ErrorCode::InvalidTopic,
        BrokerError::InvalidFilter(_) => ErrorCode::InvalidFilter,
        BrokerError::MessageTooLarge { .. } => ErrorCode::MessageTooLarge,
        BrokerError::ConsumerInUse(_) => ErrorCode::Duplicate,
        BrokerError::InvalidName(_) => ErrorCode::InvalidName,
        BrokerError::EmptyBatch => ErrorCode::EmptyRequest,
        BrokerError::Config(_) => ErrorCode::Internal,
        BrokerError::NotAuthorized(_) => ErrorCode::NotAuthorized,
    }
}
