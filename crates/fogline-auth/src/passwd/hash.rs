//! One password hash: `$7$ITERATIONS$SALT$HASH` (PBKDF2-HMAC-SHA512, what `mosquitto_passwd`
//! 2.x writes) or `$6$SALT$HASH` (SHA-512 of the password then the salt, Mosquitto 1.x), salt
//! and hash in standard base64.

use std::fmt;
use std::sync::OnceLock;

use base64::alphabet::STANDARD;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use sha2::{Digest, Sha512};
use subtle::ConstantTimeEq;

use super::{Error, Problem};

/// PBKDF2 iterations of a new hash: what Debian's `mosquitto_passwd` (2.0.11) writes.
pub const DEFAULT_ITERATIONS: u32 = 101;

/// The most PBKDF2 iterations a hash may have. Every connection with a password pays them;
/// beyond this one check takes seconds, which is a mistake or an attack on the broker.
pub const MAX_ITERATIONS: u32 = 10_000_000;

/// Bytes of salt in a new hash, as Mosquitto.
const SALT_LEN: usize = 12;

/// Salt read from a file: Mosquitto writes 12 bytes; more than this is not a salt.
const MAX_SALT_LEN: usize = 64;

/// SHA-512's output, the length of every hash.
const HASH_LEN: usize = 64;

/// Writes padded base64 (as Mosquitto does) and reads it with or without padding.
const B64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// How a hash was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `$6$`: SHA-512 over the password then the salt (Mosquitto 1.x; weak, read only).
    Sha512,
    /// `$7$`: PBKDF2-HMAC-SHA512 with this many iterations.
    Pbkdf2Sha512 {
        /// PBKDF2 iterations, 1 to [`MAX_ITERATIONS`].
        iterations: u32,
    },
}

/// A password's hash as a password file holds it. Its `Debug` shows only the scheme.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash {
    scheme: Scheme,
    salt: Vec<u8>,
    hash: [u8; HASH_LEN],
}

impl PasswordHash {
    /// A new `$7$` hash of `password` with a fresh random salt.
    ///
    /// # Errors
    /// [`Error::Iterations`] outside 1 to [`MAX_ITERATIONS`]; [`Error::Random`] when the
    /// system has no random numbers to give.
    pub fn new(password: &[u8], iterations: u32) -> Result<Self, Error> {
        if !(1..=MAX_ITERATIONS).contains(&iterations) {
            return Err(Error::Iterations(iterations));
        }
        let mut salt = vec![0; SALT_LEN];
        getrandom::fill(&mut salt).map_err(Error::Random)?;
        let scheme = Scheme::Pbkdf2Sha512 { iterations };
        let hash = digest(scheme, &salt, password);
        Ok(PasswordHash { scheme, salt, hash })
    }

    /// Reads `$7$...` or `$6$...`, exactly (no blanks around it).
    ///
    /// # Errors
    /// The [`Problem`] with the text.
    pub fn parse(text: &str) -> Result<Self, Problem> {
        let Some(rest) = text.strip_prefix('$') else {
            return Err(Problem::NotHashed);
        };
        let mut fields = rest.split('$');
        let scheme = match fields.next() {
            Some("7") => {
                let iterations = fields.next().and_then(parse_iterations);
                Scheme::Pbkdf2Sha512 {
                    iterations: iterations.ok_or(Problem::Iterations)?,
                }
            }
            Some("6") => Scheme::Sha512,
            _ => return Err(Problem::Scheme),
        };
        let salt = fields
            .next()
            .and_then(|s| B64.decode(s).ok())
            .filter(|s| (1..=MAX_SALT_LEN).contains(&s.len()))
            .ok_or(Problem::Salt)?;
        let hash = fields
            .next()
            .and_then(|h| B64.decode(h).ok())
            .and_then(|h| <[u8; HASH_LEN]>::try_from(h).ok())
            .ok_or(Problem::Hash)?;
        if fields.next().is_some() {
            return Err(Problem::TrailingField);
        }
        Ok(PasswordHash { scheme, salt, hash })
    }

    /// How this hash was made.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Whether `password` is the one hashed; the comparison takes the same time wherever the
    /// hashes differ.
    pub fn verify(&self, password: &[u8]) -> bool {
        digest(self.scheme, &self.salt, password)
            .ct_eq(&self.hash)
            .into()
    }

    /// A hash no password is checked against for real: verifying against it costs what a
    /// default hash costs, so an unknown user takes as long as a known one.
    pub(crate) fn decoy() -> &'static PasswordHash {
        static DECOY: OnceLock<PasswordHash> = OnceLock::new();
        DECOY.get_or_init(|| {
            let scheme = Scheme::Pbkdf2Sha512 {
                iterations: DEFAULT_ITERATIONS,
            };
            let salt = vec![0; SALT_LEN];
            let hash = digest(scheme, &salt, b"");
            PasswordHash { scheme, salt, hash }
        })
    }
}

fn parse_iterations(text: &str) -> Option<u32> {
    // Digits only: `u32::from_str` would also take a leading `+`.
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse()
        .ok()
        .filter(|n| (1..=MAX_ITERATIONS).contains(n))
}

fn digest(scheme: Scheme, salt: &[u8], password: &[u8]) -> [u8; HASH_LEN] {
    let mut out = [0; HASH_LEN];
    match scheme {
        Scheme::Sha512 => {
            let mut h = Sha512::new();
            h.update(password);
            h.update(salt);
            out.copy_from_slice(&h.finalize());
        }
        Scheme::Pbkdf2Sha512 { iterations } => {
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
        }
    }
    out
}

impl fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scheme {
            Scheme::Sha512 => f.write_str("$6$")?,
            Scheme::Pbkdf2Sha512 { iterations } => write!(f, "$7${iterations}$")?,
        }
        write!(f, "{}${}", B64.encode(&self.salt), B64.encode(self.hash))
    }
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordHash")
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}
