//! A durable consumer belongs to the user who first opens it: another user (or an
//! anonymous client) may not open it, across restarts too; one without an owner goes to the
//! next logged-in user; deleting it frees the name.

mod common;

use common::{batch, broker};

use std::time::Duration;

use tokio::time::Instant;

use fogline_broker::{Broker, BrokerError, ConsumerOptions, Handoff, Start, StorageMode};

fn durable(name: &str) -> ConsumerOptions {
    ConsumerOptions {
        name: Some(name.into()),
        filter: None,
        start: Start::Resume,
        ack_timeout: Some(Duration::from_secs(30)),
        max_inflight: 100,
    }
}

/// Opens `name` as `user`, reads one record, acks it, closes; the offset read.
fn read_one(b: &Broker, name: &str, user: Option<&str>) -> Result<u64, BrokerError> {
    let mut c = b.open_consumer_as("default", durable(name), user)?;
    let got = c.poll(1, Instant::now())?;
    let offset = got[0].record.offset;
    c.ack(&[offset]);
    c.save()?;
    Ok(offset)
}

fn refused(r: Result<u64, BrokerError>) -> bool {
    matches!(r, Err(BrokerError::NotAuthorized(_)))
}

#[tokio::test(flavor = "current_thread")]
async fn a_durable_consumer_is_its_first_users() {
    for storage in [StorageMode::Memory, StorageMode::Mmap, StorageMode::Fsync] {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path(), storage);
        for i in 0..10u8 {
            b.publish(batch(&b, &[i]), Handoff::Queue).await.unwrap();
        }
        assert_eq!(read_one(&b, "c", Some("alice")).unwrap(), 0);
        assert!(refused(read_one(&b, "c", Some("bob"))), "{storage:?}");
        assert!(refused(read_one(&b, "c", None)), "{storage:?}: anonymous");
        assert_eq!(read_one(&b, "c", Some("alice")).unwrap(), 1, "{storage:?}");

        // Opened anonymously, it has no owner; the next user to log in and open it gets it.
        assert_eq!(read_one(&b, "open", None).unwrap(), 0);
        assert_eq!(read_one(&b, "open", None).unwrap(), 1);
        assert_eq!(read_one(&b, "open", Some("bob")).unwrap(), 2);
        assert!(refused(read_one(&b, "open", Some("alice"))), "{storage:?}");

        if storage != StorageMode::Memory {
            b.sync_positions();
            drop(b);
            let b = broker(dir.path(), storage);
            assert!(
                refused(read_one(&b, "c", Some("bob"))),
                "{storage:?}: restarted"
            );
            assert_eq!(read_one(&b, "c", Some("alice")).unwrap(), 2, "{storage:?}");
            assert!(refused(read_one(&b, "open", Some("alice"))), "{storage:?}");
            // Deleting it (an admin operation) frees the name for anyone.
            b.delete_consumer("default", "c").unwrap();
            assert_eq!(read_one(&b, "c", Some("bob")).unwrap(), 0, "{storage:?}");
        }
    }
}

/// Position files written before owners were kept (a number alone) still load, unowned.
#[tokio::test(flavor = "current_thread")]
async fn positions_saved_before_owners_load_unowned() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Mmap);
    for i in 0..5u8 {
        b.publish(batch(&b, &[i]), Handoff::Queue).await.unwrap();
    }
    drop(b);
    let consumers = dir.path().join("default/consumers");
    std::fs::create_dir_all(&consumers).unwrap();
    std::fs::write(consumers.join("old"), "3").unwrap();
    let b = broker(dir.path(), StorageMode::Mmap);
    assert_eq!(read_one(&b, "old", Some("carol")).unwrap(), 3);
    assert!(refused(read_one(&b, "old", Some("dave"))));
    b.sync_positions();
    let text = std::fs::read_to_string(consumers.join("old")).unwrap();
    assert_eq!(text, "4\nowner carol");
}
