//! Errors of parsing, planning and running SQL.

/// What went wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SqlError {
    /// The text is not valid SQL of the dialect.
    #[error("syntax error at {line}:{column}: {message}")]
    Parse {
        /// Line, from 1.
        line: usize,
        /// Column, from 1 (in characters).
        column: usize,
        /// What was expected or found.
        message: String,
    },
    /// Valid SQL that cannot run: an unknown function, a wrong number of arguments, an
    /// aggregate outside a window, a field not in the stream's schema.
    #[error("{0}")]
    Plan(String),
    /// A record could not be evaluated: a type mismatch, a division by zero.
    #[error("{0}")]
    Eval(String),
    /// A payload could not be decoded in the stream's format or schema.
    #[error("cannot decode payload: {0}")]
    Decode(String),
}
