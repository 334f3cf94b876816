//! Client tests against an in-test fake server (see `fake.rs`).

mod consumers;
mod direct;
mod direct_read;
mod fake;
mod login;
#[path = "../../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod publish;
mod reconnect;
mod subscribe;
mod tls;

use fake::{Config, Fake};
use fogline_client::{Client, ClientOptions};

/// A fake server and a client connected to it.
pub async fn setup(config: Config, opts: ClientOptions) -> (Fake, Client) {
    let fake = Fake::start(config).await;
    let client = Client::connect(&fake.addr, opts).await.unwrap();
    (fake, client)
}

#[tokio::test]
async fn handshake_learns_limits_and_ping_answers() {
    let config = Config {
        max_message: 4096,
        ..Config::default()
    };
    let (fake, client) = setup(config, ClientOptions::default()).await;
    assert!(client.is_connected());
    assert_eq!(client.max_message(), 4096);
    assert_eq!(fake.stats().hellos, 1);
    client.ping().await.unwrap();
}

#[tokio::test]
async fn bad_addresses_and_refused_connections_fail() {
    for bad in ["nonsense", "tcp://:1", "unix:"] {
        let err = Client::connect(bad, ClientOptions::default())
            .await
            .err()
            .unwrap();
        assert!(
            matches!(err, fogline_client::ClientError::InvalidAddress(_)),
            "{bad}: {err}"
        );
    }
    // Bind then drop to find a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Client::connect(&format!("127.0.0.1:{port}"), ClientOptions::default())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, fogline_client::ClientError::Io(_)), "{err}");
}

#[tokio::test]
async fn unix_socket_addresses_work() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start_unix(Config::default(), &dir.path().join("f.sock")).await;
    let client = Client::connect(&fake.addr, ClientOptions::default())
        .await
        .unwrap();
    client.publish("u/x", b"hi").await.unwrap();
    client.flush().await.unwrap();
    fake.wait_for("the record", |s| s.records == 1).await;
}

#[tokio::test]
async fn stream_list_is_returned() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    client.publish("a", b"1").await.unwrap();
    client.flush().await.unwrap();
    let streams = client.streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].name, "s");
    assert_eq!(streams[0].storage, fogline_client::Storage::Memory);
}
