//! Managing the server's streams and durable consumers (see `PROTOCOL.md`, "Managing
//! streams"): each call is one request, answered once the server has applied it (and, for a
//! change, persisted it).

use fogline_wire::{ConsumerDetail, Frame, Str, StreamDetail, StreamSpec};

use crate::client::{unexpected, Client};
use crate::error::ClientError;

/// Changes to a stream's settings for [`Client::stream_update`]; `None` fields stay as they
/// are. Retention values take [`NODE_DEFAULT`](fogline_wire::NODE_DEFAULT) for the node's
/// default and 0 for no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamUpdate {
    /// New subject filters.
    pub subjects: Option<Vec<String>>,
    /// New retention by size, bytes.
    pub retention_bytes: Option<u64>,
    /// New retention by age, milliseconds.
    pub retention_age_ms: Option<u64>,
}

impl Client {
    /// Creates a stream.
    ///
    /// # Errors
    /// `Server` with `Duplicate` (it exists), `Invalid` (a bad name, subject or setting);
    /// `Disconnected`, `Timeout`, `Closed`.
    pub async fn stream_create(&self, spec: StreamSpec) -> Result<StreamDetail, ClientError> {
        let request_id = self.inner.request_id();
        stream_ok(
            self.ask(request_id, Frame::StreamCreate { request_id, spec })
                .await?,
        )
    }

    /// Changes a stream's subjects or retention.
    ///
    /// # Errors
    /// `Server` with `UnknownStream` or `Invalid`; `Disconnected`, `Timeout`, `Closed`.
    pub async fn stream_update(
        &self,
        name: &str,
        change: StreamUpdate,
    ) -> Result<StreamDetail, ClientError> {
        let request_id = self.inner.request_id();
        let frame = Frame::StreamUpdate {
            request_id,
            name: name.into(),
            subjects: change
                .subjects
                .map(|s| s.iter().map(|x| Str::from(x.as_str())).collect()),
            retention_bytes: change.retention_bytes,
            retention_age_ms: change.retention_age_ms,
        };
        stream_ok(self.ask(request_id, frame).await?)
    }

    /// Drops every record of a stream (offsets go on where they were).
    ///
    /// # Errors
    /// `Server` with `UnknownStream` or `StorageFailed`; `Disconnected`, `Timeout`, `Closed`.
    pub async fn stream_purge(&self, name: &str) -> Result<StreamDetail, ClientError> {
        let request_id = self.inner.request_id();
        let frame = Frame::StreamPurge {
            request_id,
            name: name.into(),
        };
        stream_ok(self.ask(request_id, frame).await?)
    }

    /// Deletes a stream, its records and its consumers.
    ///
    /// # Errors
    /// `Server` with `UnknownStream`; `Disconnected`, `Timeout`, `Closed`.
    pub async fn stream_delete(&self, name: &str) -> Result<(), ClientError> {
        let request_id = self.inner.request_id();
        let frame = Frame::StreamDelete {
            request_id,
            name: name.into(),
        };
        done(self.ask(request_id, frame).await?)
    }

    /// One stream as it is now.
    ///
    /// # Errors
    /// `Server` with `UnknownStream`; `Disconnected`, `Timeout`, `Closed`.
    pub async fn stream_info(&self, name: &str) -> Result<StreamDetail, ClientError> {
        let request_id = self.inner.request_id();
        let frame = Frame::StreamGet {
            request_id,
            name: name.into(),
        };
        stream_ok(self.ask(request_id, frame).await?)
    }

    /// The consumers of every stream, or of `stream`: durable ones (open or not) and open
    /// ephemeral ones.
    ///
    /// # Errors
    /// `Server` with `UnknownStream`; `Disconnected`, `Timeout`, `Closed`.
    pub async fn consumers(
        &self,
        stream: Option<&str>,
    ) -> Result<Vec<ConsumerDetail>, ClientError> {
        self.list_consumers(stream.unwrap_or(""), "").await
    }

    /// The durable consumer `name` of `stream`.
    ///
    /// # Errors
    /// `Server` with `UnknownStream` or `UnknownConsumer`; `Disconnected`, `Timeout`,
    /// `Closed`.
    pub async fn consumer_info(
        &self,
        stream: &str,
        name: &str,
    ) -> Result<ConsumerDetail, ClientError> {
        let mut list = self.list_consumers(stream, name).await?;
        list.pop()
            .ok_or_else(|| ClientError::Protocol("an empty answer for one consumer".into()))
    }

    /// Deletes the durable consumer `name` of `stream` (its stored position).
    ///
    /// # Errors
    /// `Server` with `UnknownStream`, `UnknownConsumer`, or `Duplicate` while it is open;
    /// `Disconnected`, `Timeout`, `Closed`.
    pub async fn consumer_delete(&self, stream: &str, name: &str) -> Result<(), ClientError> {
        let request_id = self.inner.request_id();
        let frame = Frame::ConsumerDelete {
            request_id,
            stream: stream.into(),
            name: name.into(),
        };
        done(self.ask(request_id, frame).await?)
    }

    async fn list_consumers(
        &self,
        stream: &str,
        name: &str,
    ) -> Result<Vec<ConsumerDetail>, ClientError> {
        let request_id = self.inner.request_id();
        let frame = Frame::ConsumerList {
            request_id,
            stream: stream.into(),
            name: name.into(),
        };
        match self.ask(request_id, frame).await? {
            Frame::ConsumerListOk { consumers, .. } => Ok(consumers),
            other => Err(unexpected(&other)),
        }
    }

    async fn ask(&self, request_id: u64, frame: Frame) -> Result<Frame, ClientError> {
        self.inner.call(request_id, &frame).await
    }
}

fn stream_ok(f: Frame) -> Result<StreamDetail, ClientError> {
    match f {
        Frame::StreamOk { stream, .. } => Ok(stream),
        other => Err(unexpected(&other)),
    }
}

fn done(f: Frame) -> Result<(), ClientError> {
    match f {
        Frame::Done { .. } => Ok(()),
        other => Err(unexpected(&other)),
    }
}
