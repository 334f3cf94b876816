//! The hash family.

use super::Value;
use super::{i, run, s, Want::*, NULL};

#[test]
fn hash_table() {
    // Known vectors: RFC 1321 (md5), FIPS 180 "abc" (sha*), and crc32 check values.
    run(vec![
        (
            "md5",
            vec![s("")],
            Is(s("d41d8cd98f00b204e9800998ecf8427e")),
        ),
        (
            "md5",
            vec![s("abc")],
            Is(s("900150983cd24fb0d6963f7d28e17f72")),
        ),
        (
            "sha1",
            vec![s("abc")],
            Is(s("a9993e364706816aba3e25717850c26c9cd0d89d")),
        ),
        (
            "sha256",
            vec![s("abc")],
            Is(s(
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            )),
        ),
        (
            "sha384",
            vec![s("abc")],
            Is(s(concat!(
                "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded163",
                "1a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
            ))),
        ),
        (
            "sha512",
            vec![s("abc")],
            Is(s(concat!(
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a",
                "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
            ))),
        ),
        ("crc32", vec![s("123456789")], Is(s("cbf43926"))),
        ("crc32", vec![s("")], Is(s("0"))),
        (
            "crc32",
            vec![Value::Bytes(b"123456789".as_slice().into())],
            Is(s("cbf43926")),
        ),
        ("md5", vec![NULL], Is(NULL)),
        (
            "sha256",
            vec![i(1)],
            Fails("expected a string, found bigint"),
        ),
    ]);
}
