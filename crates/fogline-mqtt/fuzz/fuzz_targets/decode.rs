//! Feeds arbitrary bytes to the MQTT packet decoder in both protocol
//! versions and with a small and a large packet limit; anything that decodes
//! must re-encode to bytes that decode to the same packet.
#![no_main]

use bytes::BytesMut;
use fogline_mqtt::codec::{decode, encode, CodecError, Version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for v in [Version::V4, Version::V5] {
        for max in [64, usize::MAX] {
            let mut buf = BytesMut::from(data);
            loop {
                let before = buf.len();
                match decode(&mut buf, v, max) {
                    Ok(Some(p)) => {
                        let mut again = BytesMut::new();
                        if encode(&p, v, &mut again).is_ok() {
                            assert_eq!(decode(&mut again, v, usize::MAX), Ok(Some(p)));
                        }
                    }
                    Ok(None) | Err(CodecError::TooLarge { .. }) => break,
                    // A bad fixed header consumes nothing (the connection closes).
                    Err(_) if buf.len() == before => break,
                    Err(_) => {}
                }
            }
        }
    }
});
