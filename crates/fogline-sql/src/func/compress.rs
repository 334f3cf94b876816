//! `compress` and `decompress` (eKuiper: transform_functions.md): zlib, gzip and flate.
//! zstd is refused: its Rust crates bind the C library.

use std::io::{Read, Write};

use flate2::{read, write, Compression};

use super::{any_null, bytes, f, fail, text, Scalar};
use crate::error::SqlError;
use crate::value::Value;

type R = Result<Value, SqlError>;

pub(super) const FUNCS: &[Scalar] = &[
    f("compress", 2, 2, compress),
    f("decompress", 2, 2, decompress),
];

/// The most bytes `decompress` writes: a small bomb must not exhaust an edge node.
const MAX_INFLATED: u64 = 64 << 20;

fn method<'a>(name: &str, v: &'a Value) -> Result<&'a str, SqlError> {
    match text(name, v)? {
        m @ ("zlib" | "gzip" | "flate") => Ok(m),
        "zstd" => Err(fail(name, "zstd is not supported here")),
        m => Err(fail(
            name,
            format_args!("unknown method {m:?}: expected zlib, gzip or flate"),
        )),
    }
}

/// A string's UTF-8 bytes or a bytea, compressed at the default level: a bytea.
fn compress(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let input = bytes("compress", &args[0])?;
    let level = Compression::default();
    let out = match method("compress", &args[1])? {
        "zlib" => {
            let mut w = write::ZlibEncoder::new(Vec::new(), level);
            w.write_all(input).and_then(|()| w.finish())
        }
        "gzip" => {
            let mut w = write::GzEncoder::new(Vec::new(), level);
            w.write_all(input).and_then(|()| w.finish())
        }
        _ => {
            let mut w = write::DeflateEncoder::new(Vec::new(), level);
            w.write_all(input).and_then(|()| w.finish())
        }
    };
    out.map(|b| Value::Bytes(b.into()))
        .map_err(|e| fail("compress", e))
}

/// A bytea (or string) decompressed: a bytea.
fn decompress(args: &[Value]) -> R {
    if any_null(args) {
        return Ok(Value::Null);
    }
    let input = bytes("decompress", &args[0])?;
    let reader: Box<dyn Read + '_> = match method("decompress", &args[1])? {
        "zlib" => Box::new(read::ZlibDecoder::new(input)),
        "gzip" => Box::new(read::GzDecoder::new(input)),
        _ => Box::new(read::DeflateDecoder::new(input)),
    };
    let mut out = Vec::new();
    reader
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|e| fail("decompress", e))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(fail(
            "decompress",
            format_args!("more than {MAX_INFLATED} bytes"),
        ));
    }
    Ok(Value::Bytes(out.into()))
}
