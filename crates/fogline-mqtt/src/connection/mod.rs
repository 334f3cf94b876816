//! One MQTT network connection, served by a single task: it decodes
//! packets and applies them, moves the session's messages to the socket
//! (within the client's receive maximum) and enforces the keep-alive.
//! Protocol errors cost this connection only: the answers owed for the valid
//! packets before the bad one go out first, then an MQTT 5 client is told the
//! reason in a DISCONNECT, then the socket closes [MQTT-4.13.1-1] (see `finish`).

mod acks;
mod connect;
mod control;
mod inbound;
mod outbound;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use fogline_broker::{AckQueue, ClientHandle, DirectSocket, Handoff, WriteHalf};
use fogline_net::intake::Intake;
use fogline_net::yield_to_woken;
use fogline_wire::Str;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::codec::{self, Disconnect, Packet, Version};
use crate::direct::DirectOut;
use crate::message::Message;
use crate::profile::Announced;
use crate::session::{Session, State, RESYNC_BACKOFF};
use crate::shared::{PendingWill, Shared};

pub(crate) use connect::{serve, serve_tcp};

/// Most bytes encoded for the socket before they are written.
const OUT_LIMIT: usize = 1 << 20;
/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;
/// How long an ending connection may take to write what it owes and close: a client that
/// stopped reading (or sending) cannot hold it longer.
const CLOSING_LIMIT: Duration = Duration::from_secs(1);

/// Why a connection ends.
#[derive(Debug)]
pub(crate) enum End {
    /// The client sent DISCONNECT; `will` unless its reason was 0x00.
    Client { will: bool },
    /// The socket closed or failed.
    Lost,
    /// The server closes it with an MQTT 5 reason code.
    Error { reason: u8, text: String },
    /// Another connection took the session over (0x8E).
    TakenOver,
}

impl End {
    pub fn error(reason: u8, text: impl Into<String>) -> End {
        End::Error {
            reason,
            text: text.into(),
        }
    }
}

/// A connected client's state that dies with the connection.
pub(crate) struct Conn {
    shared: Arc<Shared>,
    /// This connection in the node's list of connections, with its traffic.
    client: Arc<ClientHandle>,
    /// What the ACL lets its user do.
    access: fogline_broker::ClientGuard,
    version: Version,
    session: Arc<Session>,
    conn_id: u64,
    kick: Arc<Notify>,
    out: BytesMut,
    keep_alive: Option<Duration>,
    /// Most QoS 1/2 messages inflight towards the client.
    receive_max: usize,
    /// Largest packet the client accepts.
    client_max_packet: usize,
    max_packet: usize,
    aliases: HashMap<u16, Str>,
    will: Option<Message>,
    will_delay: u32,
    /// The session expiry CONNECT asked for (DISCONNECT may not raise it from 0).
    connect_expiry: u32,
    /// For the packet being handled: `Queue` when more of the client's bytes are already
    /// read, so a burst reaches subscribers through their writers, batched.
    handoff: Handoff,
    /// Publishers may write QoS 0/1 messages to this connection's socket (TCP).
    direct: bool,
    /// Stored QoS 1 and 2 messages waiting for durability before their PUBACK or PUBREC, by
    /// packet id and QoS.
    acks: AckQueue<(u16, codec::QoS)>,
    /// `send_pending` held a QoS 2 message back for the journal: the connection tries again
    /// after [`RESYNC_BACKOFF`], not only at its next wake (which, with keep-alive 0 and no
    /// traffic, may never come).
    held_back: bool,
    /// A 3.1.1 message was refused by ending the connection (3.1.1 has no refusal code): the
    /// ones after it are still delivered, as they are stored, but not acknowledged, as their
    /// PUBACKs or PUBRECs would overtake the one it never gets (see `acks`: in order).
    refused: bool,
    /// The client's announcements (`$fogline/announce/...`): withdrawn when it ends.
    announced: Announced,
    /// The client did not set Request Problem Information to 0: reason strings may go in
    /// packets other than CONNACK and DISCONNECT [MQTT-3.1.2-29].
    problem_info: bool,
}

impl Conn {
    /// Encodes a packet for the socket.
    fn send(&mut self, p: &Packet) {
        if let Packet::Publish(pb) = p {
            self.client
                .count_out(1, (pb.topic.len() + pb.payload.len()) as u64);
        }
        if let Err(e) = codec::encode(p, self.version, &mut self.out) {
            tracing::error!(error = %e, "cannot encode an MQTT packet");
        }
    }

    /// Serves the connection until it ends. Stored QoS 1 and 2 messages still waiting for
    /// durability are then delivered all the same, and their PUBACKs and PUBRECs join the
    /// answers still unwritten in `out`, which `finish` writes before it closes.
    async fn run<R, W>(
        &mut self,
        rd: &mut R,
        wr: &mut W,
        buf: &mut BytesMut,
        intake: &mut Intake,
    ) -> End
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let end = self.serve_packets(rd, wr, buf, intake).await;
        // A refusal (3.1.1) ends `drain_acks` after answering one message: go on to the rest
        // (delivered, not acknowledged: see `refused`).
        while !self.acks.is_empty() {
            let _ = self.drain_acks().await;
        }
        end
    }

    async fn serve_packets<R, W>(
        &mut self,
        rd: &mut R,
        wr: &mut W,
        buf: &mut BytesMut,
        intake: &mut Intake,
    ) -> End
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut last_rx = Instant::now();
        // One keep-alive timer, moved only when it fires: re-arming a timer for every read
        // cost a timer-wheel insert and removal per packet.
        let keep_alive = self.keep_alive.map(|k| k + k / 2);
        let timer =
            tokio::time::sleep_until(last_rx + keep_alive.unwrap_or(Duration::from_secs(86_400)));
        tokio::pin!(timer);
        let retry = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(retry);
        let mut retry_armed = false;
        // On a one-thread runtime a self-wake queues this task behind the subscribers it woke;
        // on a multi-threaded one it would only wake an idle worker to steal it.
        let one_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread);
        // Waits made once, not per pass: registering and dropping a waiter under the Notify's
        // lock on every pass cost about 500 instructions per message (callgrind). A wake-up
        // while the task is busy still completes the registered wait (or leaves a permit).
        let kick = self.kick.clone();
        let kicked = kick.notified();
        tokio::pin!(kicked);
        let session = self.session.clone();
        let woken = session.waker.notified();
        tokio::pin!(woken);
        // Holds the large buffer while a small read's bytes are decoded from their own.
        let mut spare = BytesMut::new();
        let budget = intake.budget();
        loop {
            if self.direct {
                self.take_back();
            }
            let mut received = false;
            let mut published = false;
            loop {
                if self.acks.is_full() {
                    self.acks.oldest_ready().await;
                    if let Err(end) = self.answer_ready().await {
                        return end;
                    }
                }
                match codec::decode(buf, self.version, self.max_packet) {
                    Ok(Some(p)) => {
                        received = true;
                        self.handoff = if buf.is_empty() {
                            Handoff::Direct
                        } else {
                            Handoff::Queue
                        };
                        published |= matches!(p, Packet::Publish(_));
                        if let Err(end) = self.handle(p).await {
                            return end;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::info!(client = %self.session.client_id, error = %e, "bad MQTT packet; closing the connection");
                        return End::error(e.reason_code(), e.to_string());
                    }
                }
            }
            // Messages made durable meanwhile are answered now, not only when reading pauses.
            if let Err(end) = self.answer_ready().await {
                return end;
            }
            if published && one_thread && !self.out.is_empty() {
                // The subscribers' tasks were woken: let them write before this task's
                // PUBACKs/PUBRECs, as a broker that writes to subscribers inside its publish
                // handler would. Once per read, so a burst yields once. (With nothing to
                // write, this task's turn ends at its next read anyway.)
                yield_to_woken().await;
            }
            let (more, idle) = {
                let mut st = session.state.lock();
                let more = session.pump(&self.shared, &mut st);
                if std::mem::take(&mut st.cut_off) {
                    // 0x97 quota exceeded: the client did not keep up and lost messages.
                    return End::error(0x97, "too slow: messages of a subscription were dropped");
                }
                let room = self.send_pending(&mut st);
                let more = more && room;
                // Nothing to write and nothing left: idle now, under this same lock.
                let idle = self.direct && !more && self.out.is_empty();
                if idle {
                    self.set_idle_in(&mut st);
                }
                (more, idle)
            };
            if std::mem::take(&mut self.held_back) && !retry_armed {
                retry.as_mut().reset(Instant::now() + RESYNC_BACKOFF);
                retry_armed = true;
            }
            if !self.out.is_empty() {
                if wr.write_all(&self.out).await.is_err() {
                    return End::Lost;
                }
                self.out.clear();
                if self.out.capacity() > 4 * OUT_LIMIT {
                    self.out = BytesMut::new();
                }
            }
            if received {
                last_rx = Instant::now();
            }
            fogline_wire::readbuf::restore(buf, &mut spare);
            intake.settle(buf, received);
            // Registered only when needed (the wait costs a lock), then room is asked again
            // so a release in between is not missed.
            let freed = budget.room_freed();
            tokio::pin!(freed);
            let need = codec::announced(buf);
            let mut room = intake.make_room(buf, need);
            if !room {
                freed.as_mut().enable();
                room = intake.make_room(buf, need);
            }
            let deadline = intake.deadline();
            if self.direct && !more && !idle {
                self.set_idle_in(&mut session.state.lock());
            }
            tokio::select! {
                biased;
                () = kicked.as_mut() => return End::TakenOver,
                n = rd.read_buf(buf), if room => match n {
                    Ok(0) | Err(_) => return End::Lost,
                    // A retained or queued message then holds its own bytes, not 64 KiB.
                    Ok(_) => fogline_wire::readbuf::compact(buf, &mut spare),
                },
                // Room in the node's read budget came back: try again.
                () = &mut freed, if !room => {}
                // 0x97 quota exceeded: the packet took too long (or found no room).
                () = until(deadline) => {
                    intake.expire();
                    tracing::info!(
                        client = %self.session.client_id,
                        pending = buf.len(),
                        "a packet did not arrive whole in time; closing the connection"
                    );
                    return End::error(
                        0x97,
                        format!("a packet did not arrive whole within {:?}", intake.timeout()),
                    );
                }
                () = woken.as_mut() => woken.set(session.waker.notified()),
                () = self.acks.oldest_ready() => {
                    if let Err(end) = self.answer_ready().await {
                        return end;
                    }
                }
                // A QoS 2 message held back for the journal is tried again (`held_back`).
                () = retry.as_mut(), if retry_armed => retry_armed = false,
                // [MQTT-3.1.2-24] (3.1.1: [MQTT-3.1.2-24]) one and a half keep-alives without a packet.
                () = timer.as_mut(), if keep_alive.is_some() => {
                    let deadline = last_rx + keep_alive.unwrap_or_default();
                    if Instant::now() >= deadline {
                        return End::error(0x8D, "keep alive timeout");
                    }
                    timer.as_mut().reset(deadline);
                }
                _ = std::future::ready(()), if more => {}
            }
        }
    }

    /// Lets publishers write QoS 0/1 messages to `wr`, this connection's socket, while the
    /// task is idle (see [`crate::direct`]).
    pub(super) fn enable_direct(&mut self, wr: Arc<WriteHalf>) {
        let mut st = self.session.state.lock();
        if let Some(h) = st.conn.as_mut().filter(|h| h.id == self.conn_id) {
            h.direct = Some(DirectOut {
                socket: DirectSocket::new(wr),
                client: self.client.clone(),
                version: self.version,
                client_max_packet: self.client_max_packet,
                receive_max: self.receive_max,
            });
            self.direct = true;
        }
    }

    /// The task takes the socket back from publishers; the rest of a partial direct write
    /// goes out first. With `release`, publishers never write to it again.
    fn take_back_with(&mut self, release: bool) {
        let mut st = self.session.state.lock();
        let Some(h) = st.conn.as_mut().filter(|h| h.id == self.conn_id) else {
            return;
        };
        let Some(d) = h.direct.as_mut() else {
            return;
        };
        d.socket.take_back(&mut self.out);
        if release {
            h.direct = None;
        }
    }

    fn take_back(&mut self) {
        self.take_back_with(false);
    }

    /// Nothing in hand: publishers may write until the task wakes.
    fn set_idle_in(&self, st: &mut State) {
        if let Some(d) = st
            .conn
            .as_mut()
            .filter(|h| h.id == self.conn_id)
            .and_then(|h| h.direct.as_mut())
        {
            d.socket.set_idle();
        }
    }

    /// Ends the connection. Unless the socket was lost, what the connection owes goes out
    /// first, in order: the rest of a partial direct write, the answers in `out` (to every
    /// packet handled before the end, including the messages `run` answered once durable),
    /// then the DISCONNECT with the reason (MQTT 5). Then the socket closes, and the session
    /// is let go. All within [`CLOSING_LIMIT`].
    async fn finish<R, W>(mut self, rd: &mut R, wr: &mut W, buf: &mut BytesMut, end: End)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        tracing::debug!(client = %self.session.client_id, ?end, "MQTT connection ends");
        let deadline = Instant::now() + CLOSING_LIMIT;
        if self.direct {
            // The rest of a partial direct write goes first: its head is on the wire.
            self.take_back_with(true);
        }
        let reason = match &end {
            End::Error { reason, text } => Some((*reason, text.as_str())),
            End::TakenOver => Some((0x8E, "session taken over")),
            _ => None,
        };
        if let (Some((reason, text)), Version::V5) = (reason, self.version) {
            let answers = self.out.len();
            self.send(&Packet::Disconnect(Disconnect::with_reason(reason, text)));
            if self.out.len() - answers > self.client_max_packet {
                // No reason string past the client's Maximum Packet Size [MQTT-3.14.2-3].
                self.out.truncate(answers);
                self.send(&Packet::Disconnect(Disconnect::with_reason(reason, "")));
            }
        }
        let lost = matches!(end, End::Lost);
        if !lost {
            let _ = tokio::time::timeout_at(deadline, wr.write_all(&self.out)).await;
        }
        let _ = tokio::time::timeout_at(deadline, wr.shutdown()).await;
        let will = match end {
            End::Client { will: false } => None, // [MQTT-3.1.2-10]
            _ => self.will.take(),
        };
        let will = will.map(|msg| PendingWill {
            msg,
            delay: self.will_delay,
        });
        // Announcements end with the connection; notices not sent yet would tell a later
        // connection of the session about announcements it never made.
        self.announced.end(&self.session);
        self.shared.detach(&self.session, self.conn_id, will);
        if !lost {
            // Closing a TCP socket with bytes of the client unread resets the connection, and a
            // reset discards what the client has not received yet: the answers just written.
            // So what the client still sends is read and dropped until it closes too.
            let _ = tokio::time::timeout_at(deadline, discard_input(rd, buf)).await;
        }
    }
}

/// Reads and drops what the client sends until it closes the connection.
async fn discard_input<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut BytesMut) {
    loop {
        buf.clear();
        if buf.capacity() < READ_CHUNK {
            buf.reserve(READ_CHUNK);
        }
        match rd.read_buf(buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Waits until `deadline`, or forever when there is none.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
