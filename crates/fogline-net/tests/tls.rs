//! TLS on the accept loop with certificates made by `openssl` (EC and RSA): handshakes,
//! client certificates and their CN as the username, refusals, bad and silent clients that
//! cost only their own connection, and reload.

mod pki;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fogline_net::tls::{TlsAcceptor, TlsConfig};
use fogline_net::transport::{accept_loop, AcceptOptions, Conn, Listener};
use pki::{Kind, Pki};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::client::TlsStream;

const SLOW: Duration = Duration::from_secs(10);

fn settings(p: &Pki, require: bool) -> TlsConfig {
    TlsConfig {
        cafile: Some(p.ca.clone()),
        certfile: Some(p.server_cert.clone()),
        keyfile: Some(p.server_key.clone()),
        require_certificate: require,
        use_identity_as_username: require,
    }
}

/// Answers each 4-byte message with the connection's username (or `-`), then echoes.
async fn serve(mut c: Conn, _peer: String) {
    let mut buf = [0u8; 4];
    while c.read_exact(&mut buf).await.is_ok() {
        let who = c.username().unwrap_or("-").to_string();
        if c.write_all(who.as_bytes()).await.is_err() || c.flush().await.is_err() {
            return;
        }
    }
}

/// Serves TLS with `acceptor` on a fresh port until the returned sender is dropped.
async fn start(acceptor: Arc<TlsAcceptor>) -> (String, watch::Sender<bool>) {
    let l = Listener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr();
    let (stop_tx, stop) = watch::channel(false);
    let opts = AcceptOptions {
        tls: Some(acceptor),
        ..AcceptOptions::default()
    };
    tokio::spawn(accept_loop(l, opts, stop, serve));
    (addr, stop_tx)
}

fn client(ca: &Path, cert: Option<&Pki>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let b = ClientConfig::builder_with_provider(Arc::new(rustls_graviola::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match cert {
        Some(p) => {
            let chain = CertificateDer::pem_file_iter(&p.client_cert)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_file(&p.client_key).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
        None => b.with_no_client_auth(),
    })
}

async fn connect(addr: &str, cfg: Arc<ClientConfig>) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
}

/// Sends a message and reads the answer: the username the server saw, or the error (a
/// refused client certificate shows only here under TLS 1.3).
async fn ask(s: &mut TlsStream<TcpStream>) -> Result<String, String> {
    let exchange = async {
        s.write_all(b"who?").await?;
        let mut buf = vec![0u8; 64];
        let n = s.read(&mut buf).await?;
        buf.truncate(n);
        Ok::<_, std::io::Error>(buf)
    };
    match tokio::time::timeout(SLOW, exchange).await {
        Ok(Ok(b)) if !b.is_empty() => Ok(String::from_utf8(b).unwrap()),
        Ok(Ok(_)) => Err("closed".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => panic!("no answer and no close within {SLOW:?}"),
    }
}

#[tokio::test]
async fn client_certificates_are_verified_and_their_cn_is_the_username() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(&dir.path().join("a"), Kind::Ec, "CA A", "sensor-7");
    let other = Pki::new(&dir.path().join("b"), Kind::Ec, "CA B", "intruder");
    let acceptor = Arc::new(TlsAcceptor::new(settings(&p, true), SLOW).unwrap());
    let (addr, _stop) = start(acceptor).await;

    let mut ok = connect(&addr, client(&p.ca, Some(&p))).await.unwrap();
    assert_eq!(ask(&mut ok).await, Ok("sensor-7".to_string()));

    // No certificate, or one from a CA the server does not trust: refused.
    let mut none = connect(&addr, client(&p.ca, None)).await.unwrap();
    let err = ask(&mut none).await.unwrap_err();
    assert!(
        err.contains("CertificateRequired") || err == "closed",
        "{err}"
    );
    let mut foreign = connect(&addr, client(&p.ca, Some(&other))).await.unwrap();
    let err = ask(&mut foreign).await.unwrap_err();
    assert!(err.contains("UnknownCA") || err == "closed", "{err}");

    // A client that does not trust the server's CA refuses it.
    let err = connect(&addr, client(&other.ca, Some(&p)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");

    // The good connection was not disturbed by the others.
    assert_eq!(ask(&mut ok).await, Ok("sensor-7".to_string()));
}

#[tokio::test]
async fn rsa_certificates_from_openssl_work_without_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(dir.path(), Kind::Rsa, "RSA CA", "unused");
    let acceptor = Arc::new(TlsAcceptor::new(settings(&p, false), SLOW).unwrap());
    let (addr, _stop) = start(acceptor).await;
    let mut s = connect(&addr, client(&p.ca, None)).await.unwrap();
    assert_eq!(ask(&mut s).await, Ok("-".to_string()));
    // TLS 1.2 too (older Mosquitto clients and devices).
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(&p.ca).unwrap())
        .unwrap();
    let v12 = ClientConfig::builder_with_provider(Arc::new(rustls_graviola::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut s = connect(&addr, Arc::new(v12)).await.unwrap();
    assert_eq!(
        s.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    assert_eq!(ask(&mut s).await, Ok("-".to_string()));
}

#[tokio::test]
async fn plain_and_silent_clients_cost_only_their_connection() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(dir.path(), Kind::Ec, "CA", "c");
    let timeout = Duration::from_millis(500);
    let acceptor = Arc::new(TlsAcceptor::new(settings(&p, false), timeout).unwrap());
    let (addr, _stop) = start(acceptor).await;

    // An MQTT CONNECT sent in the clear is answered with a TLS alert and a close.
    let mut plain = TcpStream::connect(&addr).await.unwrap();
    plain
        .write_all(b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00")
        .await
        .unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(SLOW, plain.read_to_end(&mut rest))
        .await
        .expect("closed, not left hanging")
        .ok();

    // A client that says nothing is closed after the handshake timeout; meanwhile others
    // are served.
    let started = Instant::now();
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    let mut s = connect(&addr, client(&p.ca, None)).await.unwrap();
    assert_eq!(ask(&mut s).await, Ok("-".to_string()));
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(SLOW, silent.read(&mut buf))
        .await
        .expect("closed by the handshake timeout");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    let waited = started.elapsed();
    assert!(
        waited >= timeout && waited < timeout * 6,
        "closed after {waited:?}"
    );
}

#[tokio::test]
async fn reload_serves_new_certificates_to_new_connections_only() {
    let dir = tempfile::tempdir().unwrap();
    let old = Pki::new(&dir.path().join("old"), Kind::Ec, "Old CA", "c");
    let new = Pki::new(&dir.path().join("new"), Kind::Rsa, "New CA", "c");
    let live = Pki::new(&dir.path().join("live"), Kind::Ec, "Live CA", "c");
    let copy = |from: &Pki| {
        std::fs::copy(&from.server_cert, &live.server_cert).unwrap();
        std::fs::copy(&from.server_key, &live.server_key).unwrap();
    };
    copy(&old);
    let acceptor = Arc::new(TlsAcceptor::new(settings(&live, false), SLOW).unwrap());
    let (addr, _stop) = start(acceptor.clone()).await;
    let mut before = connect(&addr, client(&old.ca, None)).await.unwrap();
    assert_eq!(ask(&mut before).await, Ok("-".to_string()));

    copy(&new);
    acceptor.reload().unwrap();
    let mut after = connect(&addr, client(&new.ca, None)).await.unwrap();
    assert_eq!(ask(&mut after).await, Ok("-".to_string()));
    assert!(connect(&addr, client(&old.ca, None)).await.is_err());
    // The connection made before keeps its session.
    assert_eq!(ask(&mut before).await, Ok("-".to_string()));

    // A broken key is refused by reload, and the certificates in use stay.
    std::fs::write(&live.server_key, "not a key").unwrap();
    let err = acceptor.reload().unwrap_err().to_string();
    assert!(err.contains("server.key"), "{err}");
    let mut still = connect(&addr, client(&new.ca, None)).await.unwrap();
    assert_eq!(ask(&mut still).await, Ok("-".to_string()));
}

#[test]
fn settings_that_cannot_work_are_named() {
    let missing = TlsAcceptor::new(TlsConfig::default(), SLOW).unwrap_err();
    assert!(
        missing.to_string().contains("certfile and keyfile"),
        "{missing}"
    );
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(dir.path(), Kind::Ec, "CA", "c");
    let mut s = settings(&p, false);
    s.use_identity_as_username = true;
    let e = TlsAcceptor::new(s, SLOW).unwrap_err();
    assert!(e.to_string().contains("require_certificate"), "{e}");
    let mut s = settings(&p, true);
    s.cafile = None;
    let e = TlsAcceptor::new(s, SLOW).unwrap_err();
    assert!(e.to_string().contains("cafile"), "{e}");
    let mut s = settings(&p, false);
    s.certfile = Some(dir.path().join("nope.crt"));
    let e = TlsAcceptor::new(s, SLOW).unwrap_err();
    assert!(e.to_string().contains("nope.crt"), "{e}");
    // A key that is not the certificate's.
    let mut s = settings(&p, false);
    s.keyfile = Some(p.client_key.clone());
    assert!(TlsAcceptor::new(s, SLOW).is_err());
}
