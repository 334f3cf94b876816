//! A small in-test fake server built on the wire codec. It speaks just
//! enough of the protocol to exercise the client: handshake, publish
//! (counting frames and records, acking, refusing topic `reject/...`, never
//! acking `hold/...`), subscribe (refusing `deny/...`; Deliver to matching
//! subscriptions of the same connection, `dropped = 3` for `lossy/...`),
//! one in-memory stream `s` for consumers (fetch, ack, push with credit;
//! a consumer named `once...` is refused when opened a second time),
//! stream list, ping, and dropping every connection on demand. With a login set, a Hello
//! whose credentials differ is answered `BadCredentials` and the connection closed; TLS
//! listeners run the server handshake first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fogline_net::tls::TlsAcceptor;
use fogline_wire::{
    decode, encode, encode_deliver, encode_records, filter_matches, ErrorCode, Frame, Storage,
    StoredRecordRef, StreamInfo,
};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::broadcast;

#[derive(Clone)]
pub struct Config {
    pub max_message: u32,
    pub max_frame: u32,
    /// false: after the handshake, never read again (a stalled server).
    pub read: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_message: 1 << 20,
            max_frame: 4 << 20,
            read: true,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub hellos: usize,
    pub publish_frames: usize,
    pub records: usize,
    pub subscribes: Vec<u32>,
    pub unsubscribes: Vec<u32>,
    pub acked_offsets: Vec<u64>,
    pub credits: u64,
    pub closes: usize,
    pub opens: Vec<(String, fogline_wire::StartPosition)>,
    /// The (user name, password) of each Hello, `None` for a Hello without.
    pub logins: Vec<Option<(String, String)>>,
}

struct State {
    config: Config,
    stats: Mutex<Stats>,
    /// The stream `s`: (topic, payload) of every published record.
    log: Mutex<Vec<(String, Bytes)>>,
    kill: broadcast::Sender<()>,
    /// The only (user name, password) accepted; `None`: any Hello is.
    login: Mutex<Option<(String, String)>>,
}

pub struct Fake {
    pub addr: String,
    state: Arc<State>,
}

impl Fake {
    pub async fn start(config: Config) -> Fake {
        Fake::start_tcp(config, None).await
    }

    /// A TCP listener that runs the TLS handshake with `tls` before the protocol.
    pub async fn start_tls(config: Config, tls: Arc<TlsAcceptor>) -> Fake {
        Fake::start_tcp(config, Some(tls)).await
    }

    async fn start_tcp(config: Config, tls: Option<Arc<TlsAcceptor>>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let state = new_state(config);
        let st = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (st, tls, kill) = (st.clone(), tls.clone(), st.kill.subscribe());
                tokio::spawn(async move {
                    match tls {
                        None => serve(stream, st, kill).await,
                        // A refused handshake ends just that connection.
                        Some(tls) => {
                            if let Ok(stream) = tls.accept(stream).await {
                                serve(stream, st, kill).await;
                            }
                        }
                    }
                });
            }
        });
        Fake { addr, state }
    }

    pub async fn start_unix(config: Config, path: &std::path::Path) -> Fake {
        let listener = UnixListener::bind(path).unwrap();
        let state = new_state(config);
        let st = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, st.clone(), st.kill.subscribe()));
            }
        });
        Fake {
            addr: format!("unix:{}", path.display()),
            state,
        }
    }

    /// Accepts only Hellos with this user name and password (`None`: any).
    pub fn set_login(&self, login: Option<(&str, &str)>) {
        *self.state.login.lock() = login.map(|(u, p)| (u.to_string(), p.to_string()));
    }

    /// Closes every open connection (the listener stays up).
    pub fn drop_connections(&self) {
        let _ = self.state.kill.send(());
    }

    pub fn stats(&self) -> Stats {
        self.state.stats.lock().clone()
    }

    /// Waits (up to 5 s) until `pred` holds for the stats.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Stats) -> bool) -> Stats {
        for _ in 0..1000 {
            let stats = self.stats();
            if pred(&stats) {
                return stats;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("timed out waiting for {what}: {:?}", self.stats());
    }
}

fn new_state(config: Config) -> Arc<State> {
    Arc::new(State {
        config,
        stats: Mutex::new(Stats::default()),
        log: Mutex::new(Vec::new()),
        kill: broadcast::channel(4).0,
        login: Mutex::new(None),
    })
}

struct FakeConsumer {
    pos: usize,
    credit: u32,
}

#[derive(Default)]
struct Conn {
    subs: HashMap<u32, (String, u8)>,
    consumers: HashMap<u32, FakeConsumer>,
    next_consumer: u32,
    /// Close once `out` is written (a refused login).
    close: bool,
}

async fn serve<S>(stream: S, state: Arc<State>, mut kill: broadcast::Receiver<()>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut r, mut w) = tokio::io::split(stream);
    let mut buf = BytesMut::new();
    let mut out = BytesMut::new();
    let mut conn = Conn {
        next_consumer: 1,
        ..Conn::default()
    };
    let mut greeted = false;
    loop {
        loop {
            match decode(&mut buf, state.config.max_frame) {
                Ok(Some(frame)) => handle(&state, &mut conn, frame, &mut out),
                Ok(None) => break,
                Err(e) => panic!("fake server got a bad frame: {e}"),
            }
            greeted = true;
        }
        if !out.is_empty() {
            if w.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if conn.close {
            return;
        }
        if greeted && !state.config.read {
            let _ = kill.recv().await;
            return;
        }
        tokio::select! {
            n = r.read_buf(&mut buf) => match n {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ = kill.recv() => return,
        }
    }
}

fn reply(out: &mut BytesMut, frame: Frame) {
    encode(&frame, out).unwrap();
}

fn handle(state: &State, conn: &mut Conn, frame: Frame, out: &mut BytesMut) {
    match frame {
        Frame::Hello { credentials, .. } => {
            let given = credentials.map(|c| (c.username.to_string(), c.password.to_string()));
            let refused = state
                .login
                .lock()
                .as_ref()
                .is_some_and(|login| given.as_ref() != Some(login));
            {
                let mut stats = state.stats.lock();
                stats.hellos += 1;
                stats.logins.push(given);
            }
            if refused {
                conn.close = true;
                return reply(
                    out,
                    Frame::Error {
                        request_id: 0,
                        code: ErrorCode::BadCredentials,
                        message: "bad user name or password".into(),
                    },
                );
            }
            reply(
                out,
                Frame::HelloOk {
                    version: 1,
                    server_name: "fake".into(),
                    max_message: state.config.max_message,
                    max_frame: state.config.max_frame,
                },
            );
        }
        Frame::Ping { nonce } => reply(out, Frame::Pong { nonce }),
        Frame::Publish {
            request_id,
            flags,
            topic,
            records,
        } => {
            {
                let mut stats = state.stats.lock();
                stats.publish_frames += 1;
                stats.records += records.count() as usize;
            }
            if topic.starts_with("reject/") {
                let err = Frame::error(request_id, ErrorCode::InvalidTopic, "rejected");
                return reply(out, err);
            }
            state.log.lock().extend(
                records
                    .iter()
                    .map(|r| (topic.to_string(), r.payload.clone())),
            );
            for (sub_id, (filter, sub_flags)) in &conn.subs {
                if filter_matches(filter, &topic) {
                    let dropped = if topic.starts_with("lossy/") { 3 } else { 0 };
                    encode_deliver(
                        out,
                        *sub_id,
                        flags | sub_flags,
                        777,
                        dropped,
                        &topic,
                        records.count(),
                        records.as_bytes(),
                    )
                    .unwrap();
                }
            }
            if request_id != 0 && !topic.starts_with("hold/") {
                let count = records.count();
                reply(out, Frame::PubAck { request_id, count });
            }
            push_all(state, conn, out);
        }
        Frame::Subscribe {
            sub_id,
            flags,
            filter,
        } => {
            state.stats.lock().subscribes.push(sub_id);
            if filter.starts_with("deny/") {
                let err = Frame::error(u64::from(sub_id), ErrorCode::InvalidFilter, "denied");
                return reply(out, err);
            }
            conn.subs.insert(sub_id, (filter.to_string(), flags));
            reply(out, Frame::SubOk { sub_id });
        }
        Frame::Unsubscribe { sub_id } => {
            state.stats.lock().unsubscribes.push(sub_id);
            conn.subs.remove(&sub_id);
        }
        Frame::ConsumerOpen {
            request_id,
            stream,
            name,
            start,
            push_credit,
            ..
        } => {
            let reopened = {
                let mut stats = state.stats.lock();
                let seen = stats.opens.iter().any(|(n, _)| *n == *name);
                stats.opens.push((name.to_string(), start));
                seen
            };
            if name.starts_with("once") && reopened {
                let err = Frame::error(request_id, ErrorCode::Duplicate, "only once");
                return reply(out, err);
            }
            if stream != "s" {
                let err = Frame::error(request_id, ErrorCode::UnknownStream, "no such stream");
                return reply(out, err);
            }
            let len = state.log.lock().len();
            let pos = match start {
                fogline_wire::StartPosition::Offset(o) => (o as usize).min(len),
                fogline_wire::StartPosition::Latest => len,
                _ => 0,
            };
            let consumer_id = conn.next_consumer;
            conn.next_consumer += 1;
            conn.consumers.insert(
                consumer_id,
                FakeConsumer {
                    pos,
                    credit: push_credit,
                },
            );
            reply(
                out,
                Frame::ConsumerOk {
                    request_id,
                    consumer_id,
                    next_offset: pos as u64,
                },
            );
            push_all(state, conn, out);
        }
        Frame::Fetch {
            consumer_id,
            max_records,
            ..
        } => {
            let Some(c) = conn.consumers.get_mut(&consumer_id) else {
                let err = Frame::error(u64::from(consumer_id), ErrorCode::UnknownConsumer, "?");
                return reply(out, err);
            };
            let log = state.log.lock();
            let end = (c.pos + max_records as usize).min(log.len());
            write_records(out, consumer_id, &log, c.pos, end);
            c.pos = end;
        }
        Frame::Credit {
            consumer_id,
            credit,
        } => {
            state.stats.lock().credits += u64::from(credit);
            if let Some(c) = conn.consumers.get_mut(&consumer_id) {
                c.credit += credit;
            }
            push_all(state, conn, out);
        }
        Frame::Ack { offsets, .. } => state.stats.lock().acked_offsets.extend(offsets),
        Frame::ConsumerClose { consumer_id } => {
            state.stats.lock().closes += 1;
            conn.consumers.remove(&consumer_id);
        }
        Frame::StreamList { request_id } => {
            let records = state.log.lock().len() as u64;
            let info = StreamInfo {
                name: "s".into(),
                storage: Storage::Memory,
                subjects: vec!["#".into()],
                first_offset: 0,
                next_offset: records,
                records,
                bytes: 0,
                segments: 0,
                consumers: conn.consumers.len() as u32,
            };
            reply(
                out,
                Frame::StreamListOk {
                    request_id,
                    streams: vec![info],
                },
            );
        }
        other => panic!("fake server got an unexpected frame {other:?}"),
    }
}

fn write_records(
    out: &mut BytesMut,
    consumer_id: u32,
    log: &[(String, Bytes)],
    from: usize,
    to: usize,
) {
    let refs = log[from..to]
        .iter()
        .enumerate()
        .map(|(i, (topic, payload))| StoredRecordRef {
            offset: (from + i) as u64,
            timestamp: 1000 + (from + i) as u64,
            delivery_count: 1,
            topic,
            headers: b"",
            payload,
        });
    encode_records(out, consumer_id, refs).unwrap();
}

/// Pushes what credit allows to every push consumer.
fn push_all(state: &State, conn: &mut Conn, out: &mut BytesMut) {
    let log = state.log.lock();
    for (id, c) in conn.consumers.iter_mut() {
        let n = (log.len() - c.pos).min(c.credit as usize);
        if n > 0 {
            write_records(out, *id, &log, c.pos, c.pos + n);
            c.pos += n;
            c.credit -= n as u32;
        }
    }
}
