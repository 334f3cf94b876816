//! notify_interest (R-Pulsar's NOTIFY_START / NOTIFY_STOP): [`Client::announce`] registers
//! what this client would publish and [`Announcement`] follows whether anybody wants it.
//! Announcements are made again after a reconnect, like subscriptions.

use std::sync::Arc;

use fogline_wire::{validate_topic, Frame};
use tokio::sync::watch;

use crate::client::{unexpected, Client};
use crate::error::ClientError;
use crate::shared::{Guard, Inner, Pending};

pub(crate) struct AnnounceEntry {
    pub topic: String,
    pub profile: String,
    tx: watch::Sender<bool>,
}

impl AnnounceEntry {
    /// The frame that (re-)announces it.
    pub(crate) fn frame(&self, request_id: u64) -> Frame {
        Frame::Announce {
            request_id,
            topic: self.topic.as_str().into(),
            profile: self.profile.as_str().into(),
        }
    }
}

impl Client {
    /// Announces that this client would publish records of data `profile` (text form,
    /// `docs/PROFILES.md`) on `topic`, and returns once the server said whether anybody is
    /// interested. Publishing is up to the caller: see [`Announcement::changed`].
    ///
    /// # Errors
    /// `InvalidTopic`, `InvalidProfile`; `Server` when refused; `Disconnected`, `Timeout`.
    pub async fn announce(&self, topic: &str, profile: &str) -> Result<Announcement, ClientError> {
        validate_topic(topic).map_err(ClientError::InvalidTopic)?;
        fogline_profile::DataProfile::parse(profile)
            .map_err(|e| ClientError::InvalidProfile(e.to_string()))?;
        let inner = &self.inner;
        let id = inner.request_id();
        let (tx, rx) = watch::channel(false);
        let entry = AnnounceEntry {
            topic: topic.to_string(),
            profile: profile.to_string(),
            tx,
        };
        let frame = entry.frame(id);
        inner.table.lock().announcements.insert(id, entry);
        let mut announcement = Announcement {
            inner: inner.clone(),
            id,
            rx,
            _guard: self.guard.clone(),
        };
        match inner.call(id, &frame).await? {
            Frame::Notice { interested, .. } => {
                announcement.rx.borrow_and_update();
                debug_assert_eq!(*announcement.rx.borrow(), interested);
                Ok(announcement)
            }
            other => Err(unexpected(&other)),
        }
    }
}

/// The server's `Notice` for announcement `request_id`.
pub(crate) fn notice(inner: &Inner, request_id: u64, interested: bool) {
    let mut table = inner.table.lock();
    if let Some(a) = table.announcements.get(&request_id) {
        a.tx.send_replace(interested);
    }
    if let Some(Pending::Reply(tx)) = table.requests.remove(&request_id) {
        let _ = tx.send(Ok(Frame::Notice {
            request_id,
            interested,
        }));
    }
}

/// An announcement; dropping it withdraws it.
pub struct Announcement {
    inner: Arc<Inner>,
    id: u64,
    rx: watch::Receiver<bool>,
    _guard: Arc<Guard>,
}

impl Announcement {
    /// Whether somebody wanted what it would publish, as the server last said.
    pub fn interested(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits for the server to say something new, and returns it: `true` start sending,
    /// `false` stop. Changes in quick succession may be seen as one (the latest always is).
    ///
    /// # Errors
    /// `Closed` once the client is gone.
    pub async fn changed(&mut self) -> Result<bool, ClientError> {
        self.rx.changed().await.map_err(|_| ClientError::Closed)?;
        Ok(*self.rx.borrow_and_update())
    }
}

impl Drop for Announcement {
    fn drop(&mut self) {
        let connected = {
            let mut table = self.inner.table.lock();
            table.announcements.remove(&self.id);
            table.connected
        };
        if connected {
            let _ = self.inner.send_control(&Frame::Withdraw {
                request_id: self.id,
            });
        }
    }
}
