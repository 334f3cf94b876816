//! State shared by the client handles and the connection tasks.
//!
//! Lock order: `outbox` may be held while taking `table` (an acked publish
//! registers its waiter before the writer can see its frame), never the
//! other way round. A read (`reader::Incoming`) holds its read state while it
//! dispatches, which takes `table` or `outbox` (one at a time). No lock is held across
//! an `.await`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use fogline_net::tls::TlsConnector;
use fogline_wire::{encode, Credentials, ErrorCode, Frame, RecordBlock, StoredBlock, Str};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot, watch, Notify, OwnedSemaphorePermit, Semaphore};

use crate::error::ClientError;
use crate::options::{ClientOptions, ConsumerOptions};
use crate::outbox::Outbox;
use crate::reader::Incoming;
use crate::transport::Addr;

/// Connected: requests may be sent.
pub(crate) const CONNECTED: u8 = 0;
/// Between connections: publishes buffer, requests fail.
pub(crate) const RECONNECTING: u8 = 1;
/// Closed or gave up: everything fails.
pub(crate) const DEAD: u8 = 2;

/// Request ids start above every u32 so an `Error` frame's id never
/// confuses a request with a sub_id or consumer_id.
pub(crate) const FIRST_REQUEST_ID: u64 = 1 << 32;
/// Sub ids start in the upper half of u32, away from server-assigned
/// consumer ids (which count up from small numbers).
pub(crate) const FIRST_SUB_ID: u32 = 1 << 31;

pub(crate) struct Inner {
    pub opts: ClientOptions,
    pub addr: Addr,
    /// Loaded once from `opts.tls`; every (re)connection runs its handshake.
    pub tls: Option<TlsConnector>,
    /// What every Hello carries.
    pub credentials: Option<Credentials>,
    /// The server refused the login (code and message): the client gave up, and calls
    /// fail with this instead of `Disconnected`.
    pub refused: Mutex<Option<(ErrorCode, String)>>,
    pub outbox: Mutex<Outbox>,
    pub table: Mutex<Table>,
    /// The current connection's read side (see `reader`); `None` between connections.
    pub incoming: Mutex<Option<Arc<Incoming>>>,
    /// Wakes the writer when the buffers go from empty to not empty.
    pub writer_wake: Notify,
    /// Wakes publishers waiting for buffer room.
    pub space: Notify,
    /// Wakes `flush` waiters after writes, acks and disconnects.
    pub progress: Notify,
    pub state: AtomicU8,
    /// Connections lost so far.
    pub epoch: AtomicU64,
    pub max_message: AtomicU32,
    pub max_frame: AtomicU32,
    pub next_id: AtomicU64,
    pub next_sub: AtomicU32,
    pub ack_slots: Arc<Semaphore>,
    /// First failure of a `publish_tracked` batch since the last `flush`.
    pub ack_error: Mutex<Option<ClientError>>,
    pub shutdown: watch::Sender<bool>,
}

impl Inner {
    /// Loads the TLS files of `opts`.
    pub(crate) fn new(opts: ClientOptions, addr: Addr) -> Result<Inner, ClientError> {
        let tls = match &opts.tls {
            Some(settings) => {
                let host = match (addr.host(), &settings.server_name) {
                    (Some(host), _) => host,
                    (None, Some(name)) => name,
                    (None, None) => {
                        return Err(ClientError::Tls(
                            "a Unix socket address needs a server name to verify the server by"
                                .into(),
                        ))
                    }
                };
                Some(TlsConnector::new(settings, host)?)
            }
            None => None,
        };
        let credentials = opts.credentials()?;
        let slots = opts.max_inflight_acks.max(1);
        Ok(Inner {
            opts,
            addr,
            tls,
            credentials,
            refused: Mutex::new(None),
            outbox: Mutex::new(Outbox::default()),
            table: Mutex::new(Table::default()),
            incoming: Mutex::new(None),
            writer_wake: Notify::new(),
            space: Notify::new(),
            progress: Notify::new(),
            state: AtomicU8::new(RECONNECTING),
            epoch: AtomicU64::new(0),
            max_message: AtomicU32::new(u32::MAX),
            max_frame: AtomicU32::new(u32::MAX),
            next_id: AtomicU64::new(FIRST_REQUEST_ID),
            next_sub: AtomicU32::new(FIRST_SUB_ID),
            ack_slots: Arc::new(Semaphore::new(slots)),
            ack_error: Mutex::new(None),
            shutdown: watch::channel(false).0,
        })
    }

    pub(crate) fn request_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// The error a call gets when it cannot be sent now.
    pub(crate) fn unavailable(&self) -> ClientError {
        if let Some((code, message)) = self.refused.lock().clone() {
            ClientError::Server { code, message }
        } else if *self.shutdown.borrow() {
            ClientError::Closed
        } else {
            ClientError::Disconnected
        }
    }

    /// Encodes and queues a control frame.
    pub(crate) fn send_control(&self, frame: &Frame) -> Result<(), ClientError> {
        let mut buf = BytesMut::new();
        encode(frame, &mut buf)?;
        self.queue_control(&buf);
        Ok(())
    }

    /// Queues already encoded control frames.
    pub(crate) fn queue_control(&self, bytes: &[u8]) {
        let was_empty = self.outbox.lock().push_control(bytes);
        if was_empty {
            self.writer_wake.notify_one();
        }
    }

    /// Registers `pending` under `id` if connected, then sends `frame`.
    pub(crate) fn request(
        &self,
        id: u64,
        pending: Pending,
        frame: &Frame,
    ) -> Result<(), ClientError> {
        let mut buf = BytesMut::new();
        encode(frame, &mut buf)?;
        {
            let mut table = self.table.lock();
            if !table.connected {
                return Err(self.unavailable());
            }
            table.requests.insert(id, pending);
        }
        self.queue_control(&buf);
        Ok(())
    }

    /// Sends `frame` and waits for the reply frame registered under `id`.
    pub(crate) async fn call(&self, id: u64, frame: &Frame) -> Result<Frame, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.request(id, Pending::Reply(tx), frame)?;
        match tokio::time::timeout(self.opts.request_timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(self.unavailable()),
            Err(_) => {
                self.table.lock().requests.remove(&id);
                Err(ClientError::Timeout)
            }
        }
    }
}

/// What a request id is waiting for.
pub(crate) enum Pending {
    /// Callers waiting for one Publish frame's PubAck.
    Acks {
        waiters: Vec<oneshot::Sender<Result<(), ClientError>>>,
        /// Records of `publish_tracked` in the frame (no waiter each).
        tracked: u32,
        /// `Outbox::appended` at the frame's last record: once `done` has
        /// passed it, the frame was (or was being) written.
        end: u64,
        _slot: OwnedSemaphorePermit,
    },
    /// Any request answered by a single frame (ping, subscribe, stream list).
    Reply(oneshot::Sender<Result<Frame, ClientError>>),
    /// A consumer (re)opening; `reply` is set on the first open.
    Open {
        local: u64,
        reply: Option<oneshot::Sender<Result<u64, ClientError>>>,
    },
}

impl Pending {
    /// Fails every waiter; a tracked publish's failure is kept for `flush`.
    pub(crate) fn fail(self, inner: &Inner, err: impl Fn() -> ClientError) {
        match self {
            Pending::Acks {
                waiters, tracked, ..
            } => {
                for w in waiters {
                    let _ = w.send(Err(err()));
                }
                if tracked > 0 {
                    inner.ack_error.lock().get_or_insert_with(&err);
                }
            }
            Pending::Reply(tx) => {
                let _ = tx.send(Err(err()));
            }
            Pending::Open { reply, .. } => {
                if let Some(tx) = reply {
                    let _ = tx.send(Err(err()));
                }
            }
        }
    }
}

/// One Deliver's worth of records for a subscription.
pub(crate) struct Batch {
    pub topic: Str,
    pub priority: bool,
    pub batch_timestamp: u64,
    pub records: RecordBlock,
}

pub(crate) struct SubShared {
    pub sub_id: u32,
    pub filter: String,
    /// The interest's terms, when it routes by profile.
    pub interest: Option<String>,
    pub flags: u8,
    pub capacity: usize,
    /// Records queued in the channel.
    pub queued: AtomicUsize,
    /// Dropped by the server's drop-oldest policy (Deliver.dropped).
    pub dropped: AtomicU64,
    /// The server accepted it at least once (so reconnects re-subscribe).
    pub confirmed: AtomicBool,
    /// Signalled when `queued` falls back to `capacity`: the reader resumes.
    pub room: tokio::sync::Notify,
}

pub(crate) struct SubEntry {
    pub shared: Arc<SubShared>,
    pub tx: mpsc::UnboundedSender<Batch>,
    /// Why the subscription ended, read by `Subscription::error`.
    pub error: Arc<Mutex<Option<ClientError>>>,
}

pub(crate) struct ConsumerShared {
    pub local: u64,
    pub stream: String,
    pub opts: ConsumerOptions,
    pub server_id: AtomicU32,
    /// Offset after the last record received.
    pub next_offset: AtomicU64,
    /// Opened on the current connection.
    pub ready: AtomicBool,
    /// Opened at least once (so reconnects re-open it).
    pub opened: AtomicBool,
    pub fetch: Mutex<Option<oneshot::Sender<Result<StoredBlock, ClientError>>>>,
    /// Records that came when no fetch waited for them (the answer to a fetch that was
    /// cancelled or timed out): the next fetch returns them first.
    pub early: Mutex<std::collections::VecDeque<StoredBlock>>,
    /// Why the server refused to re-open it after a reconnect.
    pub error: Mutex<Option<ClientError>>,
}

/// A pushed block, tagged with the connection epoch it came on.
pub(crate) type Pushed = Result<(u64, StoredBlock), ClientError>;

pub(crate) struct ConsumerEntry {
    pub shared: Arc<ConsumerShared>,
    pub push_tx: Option<mpsc::UnboundedSender<Pushed>>,
}

#[derive(Default)]
pub(crate) struct Table {
    pub connected: bool,
    pub requests: HashMap<u64, Pending>,
    pub subs: HashMap<u32, SubEntry>,
    pub consumers: HashMap<u64, ConsumerEntry>,
    /// Announcements (notify_interest) by request id.
    pub announcements: HashMap<u64, crate::announce::AnnounceEntry>,
    /// Server consumer id -> local id, for the current connection.
    pub by_server: HashMap<u32, u64>,
}

impl SubShared {
    /// The frame that (re-)subscribes it.
    pub(crate) fn frame(&self) -> Frame {
        match &self.interest {
            Some(interest) => Frame::SubscribeProfile {
                sub_id: self.sub_id,
                flags: self.flags,
                filter: self.filter.as_str().into(),
                interest: interest.as_str().into(),
            },
            None => Frame::Subscribe {
                sub_id: self.sub_id,
                flags: self.flags,
                filter: self.filter.as_str().into(),
            },
        }
    }
}

impl Table {
    /// Forgets a subscription; the reader may be waiting for it to make room.
    pub(crate) fn remove_sub(&mut self, sub_id: u32) -> Option<SubEntry> {
        let entry = self.subs.remove(&sub_id);
        if let Some(e) = &entry {
            e.shared.room.notify_one();
        }
        entry
    }

    pub(crate) fn consumer_by_server(&self, server_id: u32) -> Option<&ConsumerEntry> {
        self.by_server
            .get(&server_id)
            .and_then(|local| self.consumers.get(local))
    }
}

/// Keeps the connection alive while any handle (client, subscription,
/// consumer) exists; the last one dropped shuts it down.
pub(crate) struct Guard(pub Arc<Inner>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.shutdown.send_replace(true);
    }
}
