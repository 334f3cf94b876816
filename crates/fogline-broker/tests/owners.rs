//! A durable consumer belongs to the user who first opens it: another user (or an
//! anonymous client) may not open it, across restarts too, even one that crashed before it
//! acknowledged anything; one without an owner goes to the next logged-in user; deleting it
//! frees the name. The rules' consumers are the node's: no client opens them.

mod common;

use common::{batch, broker, durable};

use tokio::time::Instant;

use fogline_broker::{Broker, BrokerError, Handoff, Opener, StorageMode};

/// Opens `name` as `user`, reads one record, acks it, closes; the offset read.
fn read_one(b: &Broker, name: &str, user: Option<&str>) -> Result<u64, BrokerError> {
    let mut c = b.open_consumer_as("default", durable(name), Opener::Client(user))?;
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
        // Listings name the owner (the admin API's `owner`).
        let owner = b.stream("default").unwrap().consumer("c").unwrap().owner;
        assert_eq!(owner.as_deref(), Some("alice"));

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

/// The owner is saved when it is bound, before anything is acknowledged: a crash right
/// after the open does not leave the name to whoever comes next.
#[tokio::test(flavor = "current_thread")]
async fn the_owner_is_saved_at_the_first_open() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Fsync);
    b.publish(batch(&b, &[1]), Handoff::Queue).await.unwrap();
    let c = b
        .open_consumer_as("default", durable("d"), Opener::Client(Some("alice")))
        .unwrap();
    b.sync_positions();
    // As after kill -9: the consumer is not closed, nothing was acked.
    std::mem::forget(c);
    let text = std::fs::read_to_string(dir.path().join("default/consumers/d")).unwrap();
    assert_eq!(text, "0\nowner alice");
}

/// The rules' consumers (`rule.<id>`) open for the node only; the node's components are
/// not refused a consumer a user opened.
#[tokio::test(flavor = "current_thread")]
async fn rule_consumers_are_the_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Mmap);
    for i in 0..3u8 {
        b.publish(batch(&b, &[i]), Handoff::Queue).await.unwrap();
    }
    for user in [Some("alice"), None] {
        let r = b.open_consumer_as("default", durable("rule.r1"), Opener::Client(user));
        assert!(matches!(r, Err(BrokerError::NotAuthorized(_))), "{user:?}");
    }
    drop(b.open_consumer("default", durable("rule.r1")).unwrap());
    assert_eq!(read_one(&b, "mine", Some("alice")).unwrap(), 0);
    drop(b.open_consumer("default", durable("mine")).unwrap());
    // Blank names are no login: nothing is bound to them.
    assert_eq!(read_one(&b, "blank", Some("  ")).unwrap(), 0);
    assert_eq!(read_one(&b, "blank", Some("bob")).unwrap(), 1);
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
