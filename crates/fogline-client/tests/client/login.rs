//! Credentials in Hello: sent on every connection, and a refused login is final.

use std::time::Duration;

use fogline_client::{Client, ClientError, ClientOptions, ErrorCode};

use crate::fake::{Config, Fake};
use crate::reconnect::fast_reconnect;

fn login(user: &str, password: &str) -> ClientOptions {
    ClientOptions {
        username: Some(user.into()),
        password: Some(password.into()),
        ..fast_reconnect()
    }
}

fn pair(user: &str, password: &str) -> Option<(String, String)> {
    Some((user.to_string(), password.to_string()))
}

#[tokio::test]
async fn hello_carries_the_credentials_on_every_connection() {
    let fake = Fake::start(Config::default()).await;
    fake.set_login(Some(("ana", "s3cret")));
    let client = Client::connect(&fake.addr, login("ana", "s3cret"))
        .await
        .unwrap();
    assert_eq!(fake.stats().logins, vec![pair("ana", "s3cret")]);

    fake.drop_connections();
    fake.wait_for("the second hello", |s| s.hellos == 2).await;
    assert_eq!(fake.stats().logins[1], pair("ana", "s3cret"));
    client.publish("l/1", b"after").await.unwrap();
    client.flush().await.unwrap();
    fake.wait_for("the record", |s| s.records == 1).await;
}

#[tokio::test]
async fn without_credentials_hello_carries_none_and_a_user_alone_an_empty_password() {
    let fake = Fake::start(Config::default()).await;
    let _anonymous = Client::connect(&fake.addr, ClientOptions::default())
        .await
        .unwrap();
    let user_only = ClientOptions {
        username: Some("bo".into()),
        ..ClientOptions::default()
    };
    let _bo = Client::connect(&fake.addr, user_only).await.unwrap();
    assert_eq!(fake.stats().logins, vec![None, pair("bo", "")]);

    let password_only = ClientOptions {
        password: Some("x".into()),
        ..ClientOptions::default()
    };
    let err = Client::connect(&fake.addr, password_only)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ClientError::Usage(_)), "{err}");
}

#[tokio::test]
async fn bad_credentials_fail_connect_without_retrying() {
    let fake = Fake::start(Config::default()).await;
    fake.set_login(Some(("ana", "s3cret")));
    let err = Client::connect(&fake.addr, login("ana", "wrong"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.server_code(), Some(ErrorCode::BadCredentials), "{err}");
    assert!(
        err.to_string().contains("bad user name or password"),
        "{err}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fake.stats().hellos, 1);
}

#[tokio::test]
async fn a_login_refused_on_reconnect_ends_the_client() {
    let fake = Fake::start(Config::default()).await;
    fake.set_login(Some(("ana", "s3cret")));
    let client = Client::connect(&fake.addr, login("ana", "s3cret"))
        .await
        .unwrap();
    // The password changed on the node; the connection drops.
    fake.set_login(Some(("ana", "changed")));
    fake.drop_connections();
    fake.wait_for("the refused hello", |s| s.hellos == 2).await;
    // Reconnecting every 10-100 ms would have tried again by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.stats().hellos, 2, "no attempt after the refusal");
    assert!(!client.is_connected());
    let err = client.ping().await.err().unwrap();
    assert_eq!(err.server_code(), Some(ErrorCode::BadCredentials), "{err}");
    let err = client.flush().await.err().unwrap();
    assert_eq!(err.server_code(), Some(ErrorCode::BadCredentials), "{err}");
}
