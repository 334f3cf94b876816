//! Hashing functions (eKuiper: docs/en_US/sqls/functions/hashing_functions.md).
//!
//! Each hashes a string's UTF-8 bytes (or a bytea's bytes) and returns lowercase hex, as
//! eKuiper does. `crc32` is Go's `%x` of the IEEE checksum: no leading zeros.

use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::{any_null, bytes, f, Scalar};
use crate::error::SqlError;
use crate::value::Value;

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("crc32", 1, 1, crc32),
    f("md5", 1, 1, md5),
    f("sha1", 1, 1, sha1),
    f("sha256", 1, 1, sha256),
    f("sha384", 1, 1, sha384),
    f("sha512", 1, 1, sha512),
];

fn hex(digest: &[u8]) -> Value {
    use std::fmt::Write;
    let mut out = String::with_capacity(digest.len() * 2);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    Value::Str(out)
}

macro_rules! digests {
    ($($fn:ident $name:literal $hasher:ty;)*) => {$(
        fn $fn(args: &[Value]) -> R {
            if any_null(args) {
                return Ok(Value::Null);
            }
            Ok(hex(&<$hasher>::digest(bytes($name, &args[0])?)))
        }
    )*};
}

digests! {
    md5 "md5" Md5;
    sha1 "sha1" Sha1;
    sha256 "sha256" Sha256;
    sha384 "sha384" Sha384;
    sha512 "sha512" Sha512;
}

fn crc32(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let sum = crc32fast::hash(bytes("crc32", &args[0])?);
    Ok(Value::Str(format!("{sum:x}")))
}
