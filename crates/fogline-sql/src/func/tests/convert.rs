//! The transform and JSON family.

use super::{b, fl, i, run, s, Value, Want::*, NULL};

fn bytea(b: &[u8]) -> Value {
    Value::Bytes(b.to_vec().into())
}

#[test]
fn convert_table() {
    run(vec![
        ("cast", vec![s("42"), s("bigint")], Is(i(42))),
        ("cast", vec![s("0x1F"), s("bigint")], Is(i(31))),
        ("cast", vec![s("-010"), s("bigint")], Is(i(-8))),
        ("cast", vec![fl(-3.9), s("bigint")], Is(i(-3))),
        ("cast", vec![b(true), s("bigint")], Is(i(1))),
        ("cast", vec![s("4.5"), s("bigint")], Fails("cannot convert")),
        ("cast", vec![s("4.5"), s("float")], Is(fl(4.5))),
        ("cast", vec![i(4), s("FLOAT")], Is(fl(4.0))),
        ("cast", vec![b(false), s("float")], Is(fl(0.0))),
        ("cast", vec![fl(2.5), s("string")], Is(s("2.5"))),
        ("cast", vec![fl(3.0), s("string")], Is(s("3"))),
        ("cast", vec![i(-7), s("string")], Is(s("-7"))),
        ("cast", vec![b(true), s("string")], Is(s("true"))),
        (
            "cast",
            vec![Value::Array(vec![i(1), s("a")]), s("string")],
            Is(s(r#"[1,"a"]"#)),
        ),
        ("cast", vec![s("T"), s("boolean")], Is(b(true))),
        ("cast", vec![i(0), s("boolean")], Is(b(false))),
        (
            "cast",
            vec![s("yes"), s("boolean")],
            Fails("cannot convert"),
        ),
        ("cast", vec![s("aGk="), s("bytea")], Is(bytea(b"hi"))),
        ("cast", vec![s("hi!"), s("bytea")], Is(bytea(b"hi!"))),
        ("cast", vec![i(1), s("bytea")], Fails("cannot convert")),
        (
            "cast",
            vec![s("1970-01-01T00:00:01Z"), s("datetime")],
            Is(i(1000)),
        ),
        ("cast", vec![fl(1500.7), s("datetime")], Is(i(1500))),
        ("cast", vec![NULL, s("bigint")], Is(NULL)),
        (
            "cast",
            vec![i(1), s("decimal")],
            Fails("unknown type decimal"),
        ),
        ("chr", vec![i(65)], Is(s("A"))),
        ("chr", vec![fl(97.0)], Is(s("a"))),
        ("chr", vec![s("z")], Is(s("z"))),
        ("chr", vec![s("zz")], Fails("expected one character")),
        ("chr", vec![i(-1)], Fails("not a character code")),
        ("encode", vec![s("hello"), s("base64")], Is(s("aGVsbG8="))),
        (
            "encode",
            vec![bytea(&[0xff, 0]), s("base64")],
            Is(s("/wA=")),
        ),
        ("encode", vec![s("x"), s("hex")], Fails("only base64")),
        (
            "decode",
            vec![s("aGVsbG8="), s("base64")],
            Is(bytea(b"hello")),
        ),
        ("decode", vec![s("!!"), s("base64")], Fails("not base64")),
        ("decode", vec![NULL, s("base64")], Is(NULL)),
        ("trunc", vec![fl(5.6789), i(2)], Is(fl(5.67))),
        ("trunc", vec![fl(0.29), i(2)], Is(fl(0.29))),
        ("trunc", vec![fl(-2.789), i(1)], Is(fl(-2.7))),
        ("trunc", vec![fl(2.5), i(-3)], Is(fl(2.0))),
        ("trunc", vec![i(7), i(2)], Is(fl(7.0))),
        ("trunc", vec![s("1"), i(2)], Fails("expected a number")),
        ("to_seconds", vec![i(1_500)], Is(i(1))),
        ("to_seconds", vec![s("1970-01-02")], Is(i(86_400))),
        // The docs' hex examples.
        ("hex2dec", vec![s("0x10")], Is(i(16))),
        ("hex2dec", vec![s("10")], Is(i(16))),
        ("hex2dec", vec![s("zz")], Fails("not hexadecimal")),
        ("dec2hex", vec![i(16)], Is(s("0x10"))),
        ("dec2hex", vec![i(-255)], Is(s("-0xff"))),
        (
            "to_json",
            vec![Value::Array(vec![i(1), fl(2.5), s("a"), NULL])],
            Is(s(r#"[1,2.5,"a",null]"#)),
        ),
        ("to_json", vec![s("a\"b")], Is(s(r#""a\"b""#))),
        ("to_json", vec![NULL], Is(NULL)),
        (
            "parse_json",
            vec![s(r#"{"a":[1,2.5]}"#)],
            Is(Value::Object(
                [("a".to_owned(), Value::Array(vec![i(1), fl(2.5)]))].into(),
            )),
        ),
        ("parse_json", vec![s("{")], Fails("EOF")),
        ("parse_json", vec![NULL], Is(NULL)),
    ]);
}

#[test]
fn compress_round_trips_and_reads_other_encoders() {
    use base64::Engine as _;
    let b64 = |t: &str| bytea(&base64::engine::general_purpose::STANDARD.decode(t).unwrap());
    let call = |name: &str, args: &[Value]| (super::scalar(name).unwrap().call)(args);
    let plain = "hello, hello, hello";
    // Made by Python's zlib and gzip modules.
    let made = [
        ("zlib", "eJzLSM3JyddRyECiAEQoBtU="),
        ("flate", "y0jNycnXUchAogA="),
        ("gzip", "H4sIAAAAAAACA8tIzcnJ11HIQKIAn6HKCRMAAAA="),
    ];
    for (method, coded) in made {
        assert_eq!(
            call("decompress", &[b64(coded), s(method)]),
            Ok(bytea(plain.as_bytes()))
        );
        let packed = call("compress", &[s(plain), s(method)]).unwrap();
        assert!(matches!(packed, Value::Bytes(_)), "{method}: {packed:?}");
        assert_eq!(
            call("decompress", &[packed, s(method)]),
            Ok(bytea(plain.as_bytes()))
        );
    }
    run(vec![
        (
            "compress",
            vec![s("x"), s("zstd")],
            Fails("zstd is not supported"),
        ),
        ("compress", vec![s("x"), s("lz4")], Fails("unknown method")),
        (
            "decompress",
            vec![bytea(b"not zlib"), s("zlib")],
            Fails("function decompress: "),
        ),
        ("compress", vec![NULL, s("zlib")], Is(NULL)),
    ]);
}
