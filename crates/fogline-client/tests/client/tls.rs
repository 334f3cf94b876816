//! TLS against the fake server behind fogline-net's acceptor, with certificates made by
//! `openssl`: the server verified by its CA (by IP SAN and by DNS name), a client
//! certificate where one is required, clear refusals, and TLS redone on reconnect.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fogline_client::{Client, ClientError, ClientOptions, ClientTls, SubscribeOptions};
use fogline_net::tls::{TlsAcceptor, TlsConfig};

use crate::fake::{Config, Fake};
use crate::pki::{Kind, Pki};
use crate::reconnect::fast_reconnect;

async fn tls_fake(p: &Pki, require_certificate: bool) -> Fake {
    let settings = TlsConfig {
        cafile: Some(p.ca.clone()),
        certfile: Some(p.server_cert.clone()),
        keyfile: Some(p.server_key.clone()),
        require_certificate,
        use_identity_as_username: false,
    };
    let acceptor = TlsAcceptor::new(settings, Duration::from_secs(5)).unwrap();
    Fake::start_tls(Config::default(), Arc::new(acceptor)).await
}

fn tls(ca: &Path, client: Option<&Pki>) -> ClientOptions {
    ClientOptions {
        tls: Some(ClientTls {
            cafile: ca.to_path_buf(),
            certfile: client.map(|p| p.client_cert.clone()),
            keyfile: client.map(|p| p.client_key.clone()),
            server_name: None,
        }),
        ..fast_reconnect()
    }
}

async fn refusal(addr: &str, opts: ClientOptions) -> String {
    match Client::connect(addr, opts).await {
        Err(ClientError::Tls(why)) => why,
        Err(other) => panic!("not a TLS error: {other}"),
        Ok(_) => panic!("connected"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_flow_over_tls_and_a_reconnect_runs_the_handshake_again() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(dir.path(), Kind::Ec, "fogline test CA", "unused");
    let fake = tls_fake(&p, false).await;
    // 127.0.0.1: the server name is the address, matched against the IP SAN.
    let client = Client::connect(&fake.addr, tls(&p.ca, None)).await.unwrap();
    let mut sub = client
        .subscribe("t/#", SubscribeOptions::default())
        .await
        .unwrap();
    client.publish("t/1", b"sealed").await.unwrap();
    assert_eq!(&sub.recv().await.unwrap().payload[..], b"sealed");

    fake.drop_connections();
    fake.wait_for("the second hello", |s| s.hellos == 2).await;
    fake.wait_for("the re-subscribe", |s| s.subscribes.len() == 2)
        .await;
    client.publish("t/2", vec![7u8; 300_000]).await.unwrap();
    let m = sub.recv().await.unwrap();
    assert_eq!((&*m.topic, m.payload.len()), ("t/2", 300_000));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_returns_once_the_tls_task_sent_everything() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(dir.path(), Kind::Ec, "fogline test CA", "unused");
    let fake = tls_fake(&p, false).await;
    let (addr, opts) = (fake.addr.clone(), tls(&p.ca, None));
    // A runtime of its own, dropped right after `close` as a program's would be at exit:
    // what the TLS task had not sent by then would be lost.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let client = Client::connect(&addr, opts).await.unwrap();
            for i in 0..1000usize {
                client.publish("c/x", vec![1u8; 1000 + i]).await.unwrap();
            }
            client.close().await.unwrap();
        });
    })
    .join()
    .unwrap();
    fake.wait_for("every record", |s| s.records == 1000).await;
}

#[tokio::test]
async fn the_server_must_verify() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("a"),
        Kind::Rsa,
        "fogline test CA",
        "unused",
    );
    let other = Pki::new(&dir.path().join("b"), Kind::Ec, "Another CA", "unused");
    let fake = tls_fake(&p, false).await;

    let why = refusal(&fake.addr, tls(&other.ca, None)).await;
    assert!(why.contains("not signed by a CA of the CA file"), "{why}");

    let mut named = tls(&p.ca, None);
    named.tls.as_mut().unwrap().server_name = Some("localhost".into());
    Client::connect(&fake.addr, named.clone()).await.unwrap();
    named.tls.as_mut().unwrap().server_name = Some("elsewhere.example".into());
    let why = refusal(&fake.addr, named).await;
    assert!(why.contains("not valid for the server name"), "{why}");

    let not_pem = dir.path().join("not-a-ca.crt");
    std::fs::write(&not_pem, "hello").unwrap();
    let why = refusal(&fake.addr, tls(&not_pem, None)).await;
    assert!(
        why.contains("not-a-ca.crt") && why.contains("no PEM"),
        "{why}"
    );
    let why = refusal(&fake.addr, tls(&dir.path().join("missing.crt"), None)).await;
    assert!(why.contains("missing.crt"), "{why}");
    assert_eq!(
        fake.stats().hellos,
        1,
        "only the verified client said Hello"
    );
}

#[tokio::test]
async fn a_required_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("a"),
        Kind::Ec,
        "fogline test CA",
        "sensor-7",
    );
    let other = Pki::new(&dir.path().join("b"), Kind::Ec, "Another CA", "intruder");
    let fake = tls_fake(&p, true).await;

    let client = Client::connect(&fake.addr, tls(&p.ca, Some(&p)))
        .await
        .unwrap();
    client.ping().await.unwrap();

    // The refusal comes as an alert after the handshake; a reset that overtakes it leaves
    // the client only the closed connection to report.
    let why = refusal(&fake.addr, tls(&p.ca, None)).await;
    assert!(
        why.contains("requires a client certificate") || why.contains("closed the connection"),
        "{why}"
    );
    let why = refusal(&fake.addr, tls(&p.ca, Some(&other))).await;
    assert!(
        why.contains("refused the client certificate") || why.contains("closed the connection"),
        "{why}"
    );
    let mut half = tls(&p.ca, Some(&p));
    half.tls.as_mut().unwrap().keyfile = None;
    let why = refusal(&fake.addr, half).await;
    assert!(why.contains("needs its key"), "{why}");
    assert_eq!(fake.stats().hellos, 1);
}
