//! The message size limit applies to each record (payload plus headers), not to a batch.

use bytesize::ByteSize;
use fogline_broker::{Batch, Broker, BrokerConfig, BrokerError, StorageMode};
use fogline_wire::RecordBlock;

fn broker(max: u64) -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        max_message_bytes: ByteSize::b(max),
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

fn batch_of(broker: &Broker, sizes: &[usize]) -> Batch {
    let payloads: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![7u8; n]).collect();
    Batch {
        topic: "t".into(),
        records: RecordBlock::from_records(payloads.iter().map(|p| (0u64, &b""[..], &p[..])))
            .unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    }
}

#[test]
fn a_batch_larger_than_the_limit_passes_when_each_record_is_within_it() {
    let b = broker(1000);
    let many = batch_of(&b, &[900; 10]);
    assert!(many.records.as_bytes().len() > 1000);
    assert!(b.check_sizes(&many).is_ok());
    assert!(
        b.check_sizes(&batch_of(&b, &[1000])).is_ok(),
        "exactly at the limit"
    );
}

#[test]
fn one_record_over_the_limit_fails_the_batch_wherever_it_is() {
    let b = broker(1000);
    for sizes in [
        &[1001][..],
        &[10, 10, 1001, 10][..],
        &[900, 900, 900, 2000][..],
    ] {
        match b.check_sizes(&batch_of(&b, sizes)) {
            Err(BrokerError::MessageTooLarge { size, max }) => {
                assert_eq!((size, max), (sizes.iter().copied().max().unwrap(), 1000));
            }
            other => panic!("{sizes:?}: {other:?}"),
        }
    }
}
