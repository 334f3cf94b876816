//! The crate's one error type.

use std::path::PathBuf;

use fogline_broker::BrokerError;

/// What storing, starting or stopping a function can fail with.
#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    /// A name outside `[A-Za-z0-9_-]{1,64}`.
    #[error("invalid function name {0:?}: use 1 to 64 of A-Z a-z 0-9 _ -")]
    InvalidName(String),
    /// A spec that cannot run (no command, a zero limit, a wasm function without a module).
    #[error("invalid function {name}: {reason}")]
    InvalidSpec {
        /// The function.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No stored function of that name.
    #[error("no function named {0:?}")]
    NotFound(String),
    /// Delete refused: instances of the function are running.
    #[error("function {name} has {instances} running instance(s); stop them or force the delete")]
    Running {
        /// The function.
        name: String,
        /// How many instances run it.
        instances: usize,
    },
    /// No instance with that id.
    #[error("no function instance {0}")]
    NoInstance(u64),
    /// Reading or writing the function store failed.
    #[error("function store {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A stored file that does not parse or whose module does not match its checksum.
    #[error("function store {path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The WebAssembly module does not compile, lacks the ABI's exports or does not
    /// instantiate within its limits.
    #[error("function {name}: wasm module: {reason}")]
    Wasm {
        /// The function.
        name: String,
        /// The engine's message.
        reason: String,
    },
    /// The process could not be started.
    #[error("function {name}: cannot start command {command:?}: {source}")]
    Spawn {
        /// The function.
        name: String,
        /// The command as stored.
        command: String,
        /// Why the operating system refused.
        source: std::io::Error,
    },
    /// The broker refused the subscription (a malformed filter) or the output topic.
    #[error("function {name}: {source}")]
    Broker {
        /// The function.
        name: String,
        /// The broker's error.
        source: BrokerError,
    },
}

impl FunctionError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> FunctionError {
        FunctionError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn spec(name: &str, reason: impl Into<String>) -> FunctionError {
        FunctionError::InvalidSpec {
            name: name.to_string(),
            reason: reason.into(),
        }
    }
}
