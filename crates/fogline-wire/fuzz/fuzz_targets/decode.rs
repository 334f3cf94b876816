//! Feeds arbitrary bytes to the streaming decoder (with a small and a large
//! frame limit), to the whole-frame decoder and to the header and record
//! block parsers; anything that decodes must re-encode to a frame that
//! decodes to itself, and popping a block's records must match iterating it.
#![no_main]

use bytes::{Bytes, BytesMut};
use fogline_wire::{decode, decode_frame, encode, Headers, RecordBlock, WireError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for max in [64, u32::MAX] {
        let mut buf = BytesMut::from(data);
        loop {
            match decode(&mut buf, max) {
                Ok(Some(frame)) => {
                    let mut again = BytesMut::new();
                    if encode(&frame, &mut again).is_ok() {
                        assert_eq!(decode(&mut again, u32::MAX), Ok(Some(frame)));
                    }
                }
                Err(WireError::Malformed { .. } | WireError::UnknownFrame { .. }) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
    let bytes = Bytes::copy_from_slice(data);
    let _ = decode_frame(bytes.clone());
    if let Ok(headers) = Headers::parse(bytes.clone()) {
        assert_eq!(headers.iter().count(), headers.len());
    }
    if let Some((&n, rest)) = data.split_first() {
        if let Ok(mut block) = RecordBlock::parse(u32::from(n), Bytes::copy_from_slice(rest)) {
            let all: Vec<_> = block.iter().collect();
            assert_eq!(all.len(), usize::from(n));
            let mut popped = Vec::new();
            while let Some(r) = block.pop_front() {
                popped.push(r);
            }
            assert_eq!(all, popped);
            assert!(block.as_bytes().is_empty());
        }
    }
});
