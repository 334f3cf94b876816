//! The TLS relay of a Kafka bridge: a SOCKS5 server (RFC 1928, CONNECT, no authentication)
//! on a loopback port, which rskafka is told to connect through. For each connection it
//! reads the broker asked for, connects to it, runs the TLS handshake for that broker's
//! name (fogline-net's connector), answers the request, and copies both ways.
//!
//! A loopback port can be reached by every process of the machine, and the relay holds the
//! bridge's client certificate: so a connection is served only if it comes from
//! 127.0.0.1 and its other end is a socket of this process (found through `/proc/net/tcp`
//! and `/proc/self/fd`, Linux's own record of them; off the runtime threads, a few at a
//! time); any other is closed unanswered and logged. Reaching a broker is given up after
//! [`META_TIMEOUT`], and dropping the relay ends every connection it serves.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use fogline_net::tls::TlsConnector;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::META_TIMEOUT;
use crate::dial::dial_tls;

/// Own-process checks run at once (each reads `/proc/net/tcp` and this process's fds).
const CHECKS: usize = 4;

/// The relay, running until dropped.
pub struct TlsProxy {
    addr: SocketAddr,
    failure: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsProxy {
    /// Listens on a free loopback port and serves connections with `tls`'s settings.
    ///
    /// # Errors
    /// It cannot listen.
    pub async fn start(tls: TlsConnector) -> io::Result<TlsProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let failure = Arc::new(Mutex::new(None));
        let task = tokio::spawn(serve(listener, tls, failure.clone()));
        Ok(TlsProxy {
            addr,
            failure,
            task,
        })
    }

    /// Where rskafka connects (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Why it last failed to reach a broker (taken).
    pub fn take_failure(&self) -> Option<String> {
        self.failure.lock().take()
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, tls: TlsConnector, failure: Arc<Mutex<Option<String>>>) {
    let port = listener.local_addr().map_or(0, |a| a.port());
    let checks = Arc::new(Semaphore::new(CHECKS));
    // Owned here, so that ending this task (the relay dropped) ends every connection.
    let mut conns = JoinSet::new();
    loop {
        let (sock, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "Kafka TLS relay: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
        };
        let (tls, failure, checks) = (tls.clone(), failure.clone(), checks.clone());
        conns.spawn(async move {
            let ours = match checks.acquire_owned().await {
                Ok(_permit) => tokio::task::spawn_blocking(move || from_this_process(peer, port))
                    .await
                    .unwrap_or(false),
                Err(_) => false,
            };
            if !ours {
                tracing::warn!(%peer, "Kafka TLS relay: a connection from another process, closed");
                return;
            }
            relay(sock, &tls, &failure).await;
        });
    }
}

/// SOCKS5 replies (RFC 1928 section 6).
const SUCCEEDED: u8 = 0;
const GENERAL_FAILURE: u8 = 1;
const COMMAND_NOT_SUPPORTED: u8 = 7;

/// Serves one connection; a failure to reach the broker is kept in `failure`, in words,
/// before the client is told (it may ask for it as soon as it hears).
async fn relay(mut client: TcpStream, tls: &TlsConnector, failure: &Mutex<Option<String>>) {
    let _ = client.set_nodelay(true);
    let Ok((host, port)) = request(&mut client).await else {
        // Not SOCKS5 CONNECT (rskafka always is): nothing to report.
        return;
    };
    let reached = tokio::time::timeout(META_TIMEOUT, dial_tls(tls, &host, port))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "{host}:{port}: no TLS connection within {META_TIMEOUT:?}"
            ))
        });
    match reached {
        Ok(mut broker) => {
            if reply(&mut client, SUCCEEDED).await.is_ok() {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut broker).await;
            }
        }
        Err(why) => {
            *failure.lock() = Some(why);
            let _ = reply(&mut client, GENERAL_FAILURE).await;
        }
    }
}

/// Reads the greeting and the CONNECT request; the target's host and port.
async fn request(c: &mut TcpStream) -> io::Result<(String, u16)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut head = [0u8; 2];
    c.read_exact(&mut head).await?;
    if head[0] != 5 {
        return Err(bad("not SOCKS5"));
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    c.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        c.write_all(&[5, 0xff]).await?;
        return Err(bad("no acceptable method"));
    }
    c.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    c.read_exact(&mut req).await?;
    if req[0] != 5 || req[1] != 1 {
        reply(c, COMMAND_NOT_SUPPORTED).await?;
        return Err(bad("only CONNECT is served"));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            c.read_exact(&mut a).await?;
            Ipv4Addr::from(a).to_string()
        }
        3 => {
            let mut n = [0u8; 1];
            c.read_exact(&mut n).await?;
            let mut name = vec![0u8; usize::from(n[0])];
            c.read_exact(&mut name).await?;
            String::from_utf8(name).map_err(|_| bad("a host name that is not UTF-8"))?
        }
        4 => {
            let mut a = [0u8; 16];
            c.read_exact(&mut a).await?;
            Ipv6Addr::from(a).to_string()
        }
        _ => return Err(bad("unknown address type")),
    };
    let mut port = [0u8; 2];
    c.read_exact(&mut port).await?;
    Ok((host, u16::from_be_bytes(port)))
}

async fn reply(c: &mut TcpStream, code: u8) -> io::Result<()> {
    c.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}

/// Whether the socket at the other end of an accepted loopback connection from `peer` to
/// port `port` is one of this process's: its entry in `/proc/net/tcp` (local `peer`,
/// remote `127.0.0.1:port`) names an inode that one of `/proc/self/fd` links to. Anything
/// unreadable counts as no.
fn from_this_process(peer: SocketAddr, port: u16) -> bool {
    // Every 127.x.y.z reaches a 127.0.0.1 listener, and another address with the port of
    // one of ours would match our socket's entry below: only 127.0.0.1 itself is taken.
    let SocketAddr::V4(peer) = peer else {
        return false;
    };
    if *peer.ip() != Ipv4Addr::LOCALHOST {
        return false;
    }
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let Some(inode) = socket_inode(&table, peer.port(), port) else {
        return false;
    };
    let link = format!("socket:[{inode}]");
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == link.as_str()))
}

/// The inode of the socket `127.0.0.1:from` -> `127.0.0.1:to` in a `/proc/net/tcp` table.
fn socket_inode(table: &str, from: u16, to: u16) -> Option<u64> {
    // Addresses are the IPv4 address as a native-endian hex word, then the port in hex.
    let local = format!("{:08X}:{from:04X}", u32::from_ne_bytes([127, 0, 0, 1]));
    let remote = format!("{:08X}:{to:04X}", u32::from_ne_bytes([127, 0, 0, 1]));
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 9 && f[1] == local && f[2] == remote).then(|| f[9].parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_is_found_in_the_table_by_its_ends() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:8E2A 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 424242 1 0000000000000000 20 4 30 10 -1
   1: 0100007F:1F90 0100007F:8E2A 01 00000000:00000000 00:00000000 00000000     0        0 434343 1 0000000000000000 20 4 30 10 -1
";
        // On a little-endian machine 127.0.0.1 reads 0100007F.
        if cfg!(target_endian = "little") {
            assert_eq!(socket_inode(table, 0x8e2a, 0x1f90), Some(424242));
            assert_eq!(socket_inode(table, 0x1f90, 0x8e2a), Some(434343));
        }
        assert_eq!(socket_inode(table, 1, 2), None);
    }

    /// A client of this process is recognised, one of another process is not; the check
    /// reads the real tables.
    #[tokio::test]
    async fn only_connections_of_this_process_are_recognised() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (_server, peer) = listener.accept().await.unwrap();
        assert!(from_this_process(peer, port));
        // bash's /dev/tcp: a connection held open by another process.
        let mut other = std::process::Command::new("bash")
            .args(["-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 5")])
            .spawn()
            .unwrap();
        let (_server, peer) = listener.accept().await.unwrap();
        assert!(!from_this_process(peer, port));
        let _ = other.kill();
        let _ = other.wait();
        // Another process on 127.0.0.2 with the port of our live connection: its entry
        // is not ours, and the table would show ours under 127.0.0.1 with that port.
        let ours = _client.local_addr().unwrap().port();
        let mut spoof = std::process::Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import socket,time; s=socket.socket(); s.bind(('127.0.0.2', {ours})); \
                 s.connect(('127.0.0.1', {port})); time.sleep(5)"
            ))
            .spawn()
            .unwrap();
        let (_server, peer) = listener.accept().await.unwrap();
        assert_eq!(peer, SocketAddr::from(([127, 0, 0, 2], ours)));
        assert!(!from_this_process(peer, port));
        let _ = spoof.kill();
        let _ = spoof.wait();
    }
}
