//! The CONNECT / CONNACK handshake (sections 3.1, 3.2).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use fogline_broker::{Handoff, PeekRead, Protocol, SharedWrite, WriteHalf};
use fogline_wire::Str;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use fogline_net::intake::Intake;

use super::{Conn, READ_CHUNK};
use crate::codec::{self, CodecError, ConnAck, Connect, Packet, Properties, Version};
use crate::message::Message;
use crate::shared::{AttachError, Shared};
use fogline_auth::{Login, Refused};

/// Numbers assigned client identifiers.
static ASSIGNED: AtomicU64 = AtomicU64::new(1);

/// Serves one connection until either side closes it; `identity` is the client
/// certificate's CN when it is the username (`use_identity_as_username`).
pub(crate) async fn serve<S>(
    socket: S,
    peer: String,
    protocol: Protocol,
    identity: Option<String>,
    shared: Arc<Shared>,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (rd, wr) = tokio::io::split(socket);
    serve_halves(rd, wr, None, (peer, protocol, identity), shared).await;
}

/// [`serve`] for TCP, whose socket publishers' tasks may write messages to directly.
pub(crate) async fn serve_tcp(socket: TcpStream, peer: String, shared: Arc<Shared>) {
    let (rd, wr) = socket.into_split();
    let wr = Arc::new(WriteHalf::from(wr));
    // The publisher's segment is acknowledged after its forwards, not before (see PeekRead).
    let rd = PeekRead::new(rd);
    let from = (peer, Protocol::Mqtt, None);
    serve_halves(rd, SharedWrite(wr.clone()), Some(wr), from, shared).await;
}

/// The peer's address and how it is connected, for the node's list of connections, and
/// the certificate identity the transport established.
type From = (String, Protocol, Option<String>);

async fn serve_halves<R, W>(
    mut rd: R,
    wr: W,
    direct: Option<Arc<WriteHalf>>,
    from: From,
    shared: Arc<Shared>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    // A client that stops reading would otherwise hold this task in a write forever (its
    // keep-alive is checked only between writes).
    let mut wr = fogline_net::StallLimit::new(wr, shared.config.write_stall);
    let mut intake = shared.intake(READ_CHUNK);
    let mut buf = intake.buffer();
    let max_packet = max_packet(&shared);
    let first = tokio::time::timeout(
        shared.config.connect_timeout,
        read_first(&mut rd, &mut buf, max_packet, &mut intake),
    )
    .await;
    let connect = match first {
        Ok(Ok(Packet::Connect(c))) => c,
        Ok(Err(CodecError::UnsupportedVersion(level))) => {
            // [MQTT-3.1.2-2] 3.1.1 return code 0x01: unacceptable protocol version.
            let mut out = BytesMut::new();
            let ack = ConnAck {
                session_present: false,
                code: if level == 5 { 0x84 } else { 0x01 },
                props: Default::default(),
            };
            let _ = codec::encode(&Packet::ConnAck(ack), Version::V4, &mut out);
            let _ = wr.write_all(&out).await;
            let _ = wr.shutdown().await;
            return;
        }
        // [MQTT-3.1.0-1] the first packet must be CONNECT; malformed CONNECT closes [MQTT-3.1.4-1].
        Ok(Ok(_)) | Ok(Err(_)) | Err(_) => {
            let _ = wr.shutdown().await;
            return;
        }
    };
    let Some(mut conn) = handshake(*connect, &shared, &mut wr, max_packet, from).await else {
        let _ = wr.shutdown().await;
        return;
    };
    if let Some(w) = direct {
        conn.enable_direct(w);
    }
    let end = conn.run(&mut rd, &mut wr, &mut buf, &mut intake).await;
    // What is left unread is only discarded now: a grown buffer's room goes back first.
    buf.clear();
    intake.settle(&mut buf, true);
    conn.finish(&mut rd, &mut wr, &mut buf, end).await;
}

fn max_packet(shared: &Shared) -> usize {
    (shared.config.max_packet_size.as_u64() as usize).min(codec::VARINT_MAX as usize + 5)
}

/// Reads the first packet (the caller bounds the time it may take), its buffer under the
/// node's read budget.
async fn read_first<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    max_packet: usize,
    intake: &mut Intake,
) -> Result<Packet, CodecError> {
    loop {
        if let Some(p) = codec::decode(buf, Version::V4, max_packet)? {
            return Ok(p);
        }
        let budget = intake.budget();
        let freed = budget.room_freed();
        tokio::pin!(freed);
        let need = codec::announced(buf);
        if !intake.make_room(buf, need) {
            freed.as_mut().enable();
            if !intake.make_room(buf, need) {
                freed.await;
                continue;
            }
        }
        match rd.read_buf(buf).await {
            Ok(n) if n > 0 => {}
            _ => return Err(CodecError::Malformed("connection closed before CONNECT")),
        }
    }
}

async fn refuse<W: AsyncWrite + Unpin>(wr: &mut W, c: &Connect, v4: u8, v5: u8, text: &str) {
    let version = c.version;
    let mut props = Properties::default();
    if version == Version::V5 && !text.is_empty() {
        props.reason_string = Some(text.into());
    }
    let mut ack = ConnAck {
        session_present: false, // [MQTT-3.2.2-4] / [MQTT-3.2.2-6]
        code: if version == Version::V5 { v5 } else { v4 },
        props: props.into(),
    };
    let mut out = BytesMut::new();
    let limit = c
        .props
        .maximum_packet_size
        .map_or(usize::MAX, |m| m as usize);
    if codec::encode(&Packet::ConnAck(ack.clone()), version, &mut out).is_ok() && out.len() > limit
    {
        // No reason string past the client's Maximum Packet Size [MQTT-3.2.2-19].
        out.clear();
        ack.props.reason_string = None;
        let _ = codec::encode(&Packet::ConnAck(ack), version, &mut out);
    }
    if !out.is_empty() {
        let _ = wr.write_all(&out).await;
    }
}

async fn handshake<W: AsyncWrite + Unpin>(
    c: Connect,
    shared: &Arc<Shared>,
    wr: &mut W,
    max_packet: usize,
    (peer, protocol, identity): From,
) -> Option<Conn> {
    let v = c.version;
    let cfg = &shared.config;
    if c.props.auth_method.is_some() {
        refuse(
            wr,
            &c,
            0x05,
            0x8C,
            "enhanced authentication is not supported",
        )
        .await;
        return None;
    }
    let mut assigned = None;
    let client_id = if c.client_id.is_empty() {
        if v == Version::V4 && !c.clean_start {
            refuse(wr, &c, 0x02, 0x85, "").await; // [MQTT-3.1.3-8]
            return None;
        }
        // Never the id of an existing session [MQTT-3.2.2-16] (a client may have chosen it).
        let id = loop {
            let id = format!("fogline-{}", ASSIGNED.fetch_add(1, Ordering::Relaxed));
            if !shared.sessions.lock().contains_key(&id) {
                break id;
            }
        };
        assigned = Some(Str::from(id.as_str()));
        id
    } else {
        c.client_id.to_string()
    };
    let login = Login {
        client_id: client_id.clone(),
        username: c.username.as_deref().map(str::to_owned),
        password: c.password.as_deref().map(<[u8]>::to_vec),
        identity,
    };
    // A password hash takes milliseconds: not on the threads that serve connections.
    let auth = shared.auth.clone();
    let tried = login.clone();
    let checked = tokio::task::spawn_blocking(move || auth.authenticate(&login)).await;
    let user = match checked {
        Ok(Ok(user)) => user,
        Ok(Err(e)) => {
            shared
                .broker
                .guard()
                .count_auth_failure("mqtt", &peer, &tried, &e);
            match e {
                Refused::BadCredentials => refuse(wr, &c, 0x04, 0x86, "").await,
                Refused::NotAuthorized(_) => refuse(wr, &c, 0x05, 0x87, "").await,
            }
            return None;
        }
        Err(e) => {
            tracing::error!(client = client_id, error = %e, "MQTT authentication failed");
            refuse(wr, &c, 0x03, 0x88, "").await;
            return None;
        }
    };
    let will = match &c.will {
        Some(w) => {
            if fogline_wire::validate_topic(&w.topic).is_err() {
                // 3.1.1 has no code for it: close without CONNACK [MQTT-3.1.4-1].
                if v == Version::V5 {
                    refuse(wr, &c, 0x02, 0x90, "invalid will topic").await;
                }
                return None;
            }
            if super::inbound::invalid_response_topic(&w.props) {
                refuse(wr, &c, 0x02, 0x82, "invalid will response topic").await; // [MQTT-3.3.2-14]
                return None;
            }
            // A will the client may not publish is refused now, as Mosquitto does, not
            // dropped silently when the connection ends.
            let access = shared.broker.guard().client(user.as_deref(), &client_id);
            if !access.may_publish(&w.topic) {
                refuse(wr, &c, 0x05, 0x87, "").await;
                return None;
            }
            let p = codec::Publish {
                dup: false,
                qos: w.qos,
                retain: w.retain,
                topic: w.topic.clone(),
                pkid: 0,
                props: w.props.clone(),
                payload: w.payload.clone(),
            };
            Some((
                Message::from_publish(&p, w.topic.clone(), 0),
                w.props.will_delay.unwrap_or(0),
            ))
        }
        None => None,
    };
    let requested_expiry = match v {
        Version::V4 if c.clean_start => 0,
        Version::V4 => u32::MAX,
        Version::V5 => c.props.session_expiry.unwrap_or(0),
    };
    let expiry = requested_expiry.min(cfg.max_session_expiry);
    let mut keep_alive = c.keep_alive;
    let mut server_keep_alive = None;
    if v == Version::V5
        && cfg.max_keep_alive > 0
        && (keep_alive == 0 || keep_alive > cfg.max_keep_alive)
    {
        keep_alive = cfg.max_keep_alive;
        server_keep_alive = Some(keep_alive);
    }
    let (session, conn_id, kick, present) = match shared
        .attach(&client_id, user.as_deref(), c.clean_start, expiry)
        .await
    {
        Ok(attached) => attached,
        Err(AttachError::TooManySessions) => {
            tracing::warn!(
                client = client_id,
                max_sessions = cfg.max_sessions,
                "MQTT connection refused: too many sessions"
            );
            refuse(wr, &c, 0x03, 0x97, "too many sessions").await;
            return None;
        }
        Err(AttachError::NotOwner) => {
            // MQTT 5.0 section 5.4.2: a client id gives access to its session state.
            tracing::info!(
                client = client_id,
                user = user.as_deref().unwrap_or(""),
                "MQTT connection refused: the client id's session is another user's"
            );
            refuse(wr, &c, 0x05, 0x87, "").await;
            return None;
        }
        Err(AttachError::NotJournaled) => {
            tracing::warn!(
                client = client_id,
                "MQTT connection refused: the journal did not take the end of its older session"
            );
            refuse(wr, &c, 0x03, 0x80, "cannot store the session state").await;
            return None;
        }
    };
    let mut props = Properties::default();
    if v == Version::V5 {
        props.assigned_client_id = assigned;
        props.server_keep_alive = server_keep_alive;
        props.receive_maximum = Some(cfg.receive_maximum.max(1));
        props.maximum_packet_size = Some(max_packet as u32);
        if cfg.topic_alias_maximum > 0 {
            props.topic_alias_maximum = Some(cfg.topic_alias_maximum);
        }
        if expiry != requested_expiry {
            props.session_expiry = Some(expiry);
        }
    }
    let client = shared.broker.register_client(protocol, peer);
    client.set_name(&client_id);
    client.set_origin(session.origin);
    let mut conn = Conn {
        shared: shared.clone(),
        client: Arc::new(client),
        access: shared.access(&session),
        version: v,
        session,
        conn_id,
        kick,
        out: BytesMut::new(),
        keep_alive: (keep_alive > 0).then(|| Duration::from_secs(u64::from(keep_alive))),
        receive_max: usize::from(
            c.props
                .receive_maximum
                .unwrap_or(u16::MAX)
                .min(cfg.max_inflight.max(1)),
        ),
        client_max_packet: c
            .props
            .maximum_packet_size
            .map_or(usize::MAX, |m| m as usize),
        max_packet,
        aliases: HashMap::new(),
        will: None,
        will_delay: 0,
        connect_expiry: requested_expiry,
        handoff: Handoff::Direct,
        direct: false,
        acks: Default::default(),
        held_back: false,
        refused: false,
        announced: Default::default(),
        problem_info: c.props.request_problem_info != Some(0),
    };
    if let Some((msg, delay)) = will {
        conn.will = Some(msg);
        conn.will_delay = delay;
    }
    // [MQTT-3.2.2-2] clean start: session present 0; [MQTT-3.2.2-3] resumed: 1.
    conn.send(&Packet::ConnAck(ConnAck {
        session_present: present && !c.clean_start,
        code: 0,
        props: props.into(),
    }));
    let session = conn.session.clone();
    {
        let mut st = session.state.lock();
        conn.resend_inflight(&mut st);
    }
    Some(conn)
}
