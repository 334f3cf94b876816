use proptest::prelude::*;

use super::*;

/// Hex with spaces, for golden bytes written by hand from the protocol guide.
fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

#[test]
fn find_coordinator_golden_bytes() {
    let want = hex("00 00 00 13  00 0a  00 01  00 00 00 07  00 02 63 31  00 04 67 72 70 31  00");
    assert_eq!(find_coordinator(7, "c1", "grp1"), want);
}

#[test]
fn offset_commit_golden_bytes() {
    let offsets = vec![("t".to_string(), vec![(0, 5), (2, 256)])];
    let want = hex(concat!(
        "00 00 00 42  00 08  00 02  00 00 00 01  00 00 ",
        "00 01 67  ff ff ff ff  00 00  ff ff ff ff ff ff ff ff ",
        "00 00 00 01  00 01 74  00 00 00 02 ",
        "00 00 00 00  00 00 00 00 00 00 00 05  ff ff ",
        "00 00 00 02  00 00 00 00 00 00 01 00  ff ff",
    ));
    assert_eq!(offset_commit(1, "", "g", &offsets), want);
}

#[test]
fn offset_fetch_golden_bytes() {
    let topics = vec![("ab".to_string(), vec![0, 1])];
    let want = hex(concat!(
        "00 00 00 22  00 09  00 02  00 00 00 03  00 01 63 ",
        "00 01 67  00 00 00 01  00 02 61 62  00 00 00 02  00 00 00 00  00 00 00 01",
    ));
    assert_eq!(offset_fetch(3, "c", "g", &topics), want);
}

fn coordinator_body() -> Vec<u8> {
    hex("00 00 00 00  00 00  ff ff  00 00 00 01  00 09 31 32 37 2e 30 2e 30 2e 31  00 00 23 84")
}

fn commit_body() -> Vec<u8> {
    hex("00 00 00 01  00 01 74  00 00 00 02  00 00 00 00 00 00  00 00 00 02 00 19")
}

fn fetch_body() -> Vec<u8> {
    hex(concat!(
        "00 00 00 01  00 01 74  00 00 00 02 ",
        "00 00 00 00  00 00 00 00 00 00 00 2a  00 00  00 00 ",
        "00 00 00 01  ff ff ff ff ff ff ff ff  ff ff  00 00 ",
        "00 00",
    ))
}

#[test]
fn answers_decode() {
    assert_eq!(
        decode_find_coordinator(&coordinator_body()).unwrap(),
        Coordinator {
            error: 0,
            message: None,
            node_id: 1,
            host: "127.0.0.1".into(),
            port: 9092,
        }
    );
    let committed = decode_offset_commit(&commit_body()).unwrap();
    assert_eq!(committed.len(), 2);
    assert_eq!((committed[0].partition, committed[0].error), (0, 0));
    // 25: UNKNOWN_MEMBER_ID.
    assert_eq!((committed[1].partition, committed[1].error), (2, 25));
    let fetched = decode_offset_fetch(&fetch_body()).unwrap();
    assert_eq!(fetched.error, 0);
    let offsets: Vec<(i32, i64)> = fetched
        .partitions
        .iter()
        .map(|p| (p.partition, p.offset))
        .collect();
    assert_eq!(offsets, [(0, 42), (1, -1)]);
    assert!(fetched.partitions.iter().all(|p| p.topic == "t"));
}

#[test]
fn a_response_is_matched_to_its_request() {
    let frame = hex("00 00 00 07  aa");
    assert_eq!(response_body(&frame, 7).unwrap(), [0xaa]);
    assert_eq!(
        response_body(&frame, 8),
        Err(CodecError::Correlation { want: 8, got: 7 })
    );
    assert!(response_body(&frame[..3], 7).is_err());
}

#[test]
fn every_truncation_and_any_trailing_byte_is_refused() {
    type Decode = fn(&[u8]) -> Result<(), CodecError>;
    let cases: [(Vec<u8>, Decode); 3] = [
        (coordinator_body(), |b| decode_find_coordinator(b).map(drop)),
        (commit_body(), |b| decode_offset_commit(b).map(drop)),
        (fetch_body(), |b| decode_offset_fetch(b).map(drop)),
    ];
    for (body, decode) in cases {
        assert!(decode(&body).is_ok());
        for cut in 0..body.len() {
            assert!(decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(decode(&longer), Err(CodecError::Invalid("trailing bytes")));
    }
}

#[test]
fn a_huge_count_is_refused_before_allocating() {
    let body = hex("7f ff ff ff  00 01 74");
    assert_eq!(
        decode_offset_commit(&body),
        Err(CodecError::Truncated("topics"))
    );
}

#[test]
fn sasl_handshake_golden_bytes() {
    // size 18, key 17, version 1, correlation 1, client "c", mechanism "PLAIN"
    let want = hex("00 00 00 12  00 11  00 01  00 00 00 01  00 01 63  00 05 50 4c 41 49 4e");
    assert_eq!(sasl_handshake(1, "c", "PLAIN"), want);
    let answer = hex(
        "00 00  00 00 00 02  00 05 50 4c 41 49 4e  00 0d 53 43 52 41 4d 2d 53 48 41 2d 32 35 36",
    );
    assert_eq!(
        decode_sasl_handshake(&answer).unwrap(),
        Mechanisms {
            error: 0,
            mechanisms: vec!["PLAIN".into(), "SCRAM-SHA-256".into()],
        }
    );
}

#[test]
fn sasl_authenticate_golden_bytes() {
    // size 19, key 36, version 1, correlation 2, client "c", bytes "\0u\0p"
    let want = hex("00 00 00 13  00 24  00 01  00 00 00 02  00 01 63  00 00 00 04 00 75 00 70");
    assert_eq!(sasl_authenticate(2, "c", b"\0u\0p"), want);
    let refused = hex("00 3a  00 03 62 61 64  00 00 00 00  00 00 00 00 00 00 00 00");
    assert_eq!(
        decode_sasl_authenticate(&refused).unwrap(),
        AuthAnswer {
            error: 58,
            message: Some("bad".into()),
            auth_bytes: Vec::new(),
        }
    );
    let next = hex("00 00  ff ff  00 00 00 02 61 62  00 00 00 00 00 00 0e 10");
    assert_eq!(decode_sasl_authenticate(&next).unwrap().auth_bytes, b"ab");
    assert!(decode_sasl_authenticate(&next[..next.len() - 1]).is_err());
}

proptest! {
    #[test]
    fn any_bytes_decode_or_fail_without_panicking(body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode_find_coordinator(&body);
        let _ = decode_offset_commit(&body);
        let _ = decode_offset_fetch(&body);
        let _ = decode_sasl_handshake(&body);
        let _ = decode_sasl_authenticate(&body);
        let _ = response_body(&body, 1);
    }
}
