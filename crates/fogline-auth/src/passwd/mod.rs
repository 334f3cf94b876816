//! Users and their passwords, in Mosquitto's `password_file` format, read unchanged.
//!
//! # The format
//! One user per line, `USER:HASH`, where HASH is
//! - `$7$ITERATIONS$SALT$HASH`: PBKDF2-HMAC-SHA512 of the password with the salt, ITERATIONS
//!   times (what `mosquitto_passwd` 2.x writes: a 12-byte salt, 101 iterations), or
//! - `$6$SALT$HASH`: SHA-512 of the password then the salt (Mosquitto 1.x; read, not
//!   written),
//!
//! SALT and HASH in standard base64 (HASH is 64 bytes). A line starting with `#` is a
//! comment; blank lines are skipped; blanks around the user and the hash are ignored (as in
//! Mosquitto).
//!
//! # Invariants
//! - A file is read whole or not at all: the first malformed line is an error naming its
//!   number (Mosquitto 2.0 drops such a line's user with a log line; a broker that refuses
//!   the file tells the operator at once instead of locking a user out).
//! - Every user name read back is the one written ([`check_user_name`]); no user twice.
//! - Writing changes only the lines of the users changed: [`PasswordFile::to_bytes`] of a
//!   file read and not changed is the bytes read.
//! - Passwords are compared in constant time, and an unknown user costs a verification too.
//! - Reading is bounded ([`MAX_FILE_BYTES`]); replacing is atomic ([`PasswordFile::save`]).

mod error;
mod file;
mod hash;
mod io;
#[cfg(test)]
mod tests;

pub use error::{Error, Problem, UserNameError};
pub use file::{check_user_name, Change, PasswordFile};
pub use hash::{PasswordHash, Scheme, DEFAULT_ITERATIONS, MAX_ITERATIONS};
pub use io::MAX_FILE_BYTES;
