//! SubscribeProfile, Announce, Notice and Withdraw frames as PROTOCOL.md states them.

mod common;

use common::{Raw, TestServer};
use fogline_wire::{ErrorCode, Frame};

fn code(f: &Frame) -> Option<(u64, ErrorCode)> {
    match f {
        Frame::Error {
            request_id, code, ..
        } => Some((*request_id, *code)),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announcements_get_notices_and_bad_requests_get_errors() {
    let srv = TestServer::start(|_| {}).await;
    let mut p = Raw::connect(&srv.addr).await;
    let announce = |request_id, topic: &str, profile: &str| Frame::Announce {
        request_id,
        topic: topic.into(),
        profile: profile.into(),
    };
    p.send(&announce(7, "site/a", "sensor=lidar")).await;
    assert_eq!(
        p.recv().await,
        Frame::Notice {
            request_id: 7,
            interested: false
        }
    );
    p.send(&announce(7, "site/a", "k")).await;
    assert_eq!(code(&p.recv().await), Some((7, ErrorCode::Duplicate)));
    p.send(&announce(8, "site/+", "k")).await;
    assert_eq!(code(&p.recv().await), Some((8, ErrorCode::InvalidTopic)));
    p.send(&announce(9, "site/a", "k=\"open")).await;
    assert_eq!(code(&p.recv().await), Some((9, ErrorCode::Invalid)));
    p.send(&Frame::Withdraw { request_id: 99 }).await;
    assert_eq!(code(&p.recv().await), Some((99, ErrorCode::NotFound)));

    let mut s = Raw::connect(&srv.addr).await;
    let sub = |sub_id, interest: &str| Frame::SubscribeProfile {
        sub_id,
        flags: 0,
        filter: "site/#".into(),
        interest: interest.into(),
    };
    s.send(&sub(1, "@x k")).await;
    assert_eq!(code(&s.recv().await), Some((1, ErrorCode::Invalid)));
    s.send(&sub(1, "alt=1..x")).await;
    assert_eq!(code(&s.recv().await), Some((1, ErrorCode::Invalid)));
    s.send(&sub(2, "sensor=radar")).await;
    assert_eq!(s.recv().await, Frame::SubOk { sub_id: 2 });
    s.send(&sub(3, "sensor=lid*")).await;
    assert_eq!(s.recv().await, Frame::SubOk { sub_id: 3 });
    assert_eq!(
        p.recv().await,
        Frame::Notice {
            request_id: 7,
            interested: true
        }
    );
    s.send(&Frame::Unsubscribe { sub_id: 3 }).await;
    assert_eq!(
        p.recv().await,
        Frame::Notice {
            request_id: 7,
            interested: false
        }
    );
    p.send(&Frame::Withdraw { request_id: 7 }).await;
    assert_eq!(p.recv().await, Frame::Done { request_id: 7 });
    // Withdrawn: a new interest tells it nothing.
    s.send(&sub(4, "sensor")).await;
    assert_eq!(s.recv().await, Frame::SubOk { sub_id: 4 });
    assert!(p
        .recv_within(std::time::Duration::from_millis(300))
        .await
        .is_none());
    srv.stop().await;
}
