//! notify_interest on the native protocol (`Announce`, `Notice`, `Withdraw`; see
//! PROTOCOL.md): each announcement is a task holding the broker's
//! [`Announcement`](fogline_broker::Announcement) and replying a `Notice` whenever
//! interest in it changes; withdrawing or closing aborts the task, which withdraws it.

use std::sync::Arc;

use fogline_profile::{DataProfile, Interest};
use fogline_wire::{ErrorCode, Frame};

use crate::connection::Conn;
use crate::errors::broker_code;

/// Most announcements on one connection.
pub(crate) const MAX_ANNOUNCEMENTS: usize = 1024;

pub(crate) fn announce(conn: &Arc<Conn>, request_id: u64, topic: &str, profile: &str) {
    // Announcing is the first step of publishing: it asks the same right.
    if fogline_wire::validate_topic(topic).is_ok() {
        if let Err(e) = conn.access().check_publish(topic) {
            conn.error(request_id, crate::errors::broker_code(&e), e.to_string());
            return;
        }
    }
    {
        let tasks = conn.announcements.lock();
        if tasks.contains_key(&request_id) {
            conn.error(
                request_id,
                ErrorCode::Duplicate,
                format!("announcement {request_id} exists"),
            );
            return;
        }
        if tasks.len() >= MAX_ANNOUNCEMENTS {
            conn.error(
                request_id,
                ErrorCode::TooMany,
                format!("at most {MAX_ANNOUNCEMENTS} announcements per connection"),
            );
            return;
        }
    }
    let profile = match DataProfile::parse(profile) {
        Ok(p) => p,
        Err(e) => {
            conn.error(request_id, ErrorCode::Invalid, format!("profile: {e}"));
            return;
        }
    };
    let mut ann = match conn.broker.announce(topic, profile, conn.origin) {
        Ok(a) => a,
        Err(e) => {
            conn.error(request_id, broker_code(&e), e.to_string());
            return;
        }
    };
    let c = conn.clone();
    let task = tokio::spawn(async move {
        let mut interested = ann.interested();
        loop {
            c.reply(&Frame::Notice {
                request_id,
                interested,
            });
            interested = ann.changed().await;
        }
    });
    conn.announcements.lock().insert(request_id, task);
}

pub(crate) fn withdraw(conn: &Conn, request_id: u64) {
    match conn.announcements.lock().remove(&request_id) {
        Some(task) => {
            task.abort();
            conn.reply(&Frame::Done { request_id });
        }
        None => conn.error(
            request_id,
            ErrorCode::NotFound,
            format!("no announcement {request_id}"),
        ),
    }
}

/// The interest of a `SubscribeProfile`: its terms; a topic term is refused (the frame's
/// filter is the topic filter).
pub(crate) fn interest(text: &str) -> Result<Interest, String> {
    Interest::parse_terms(text).map_err(|e| format!("interest: {e}"))
}
