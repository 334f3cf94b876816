//! MQTT over WebSocket on raw frames: packets split across frames and
//! several in one frame, the `mqtt` subprotocol, text frames refused.

mod common;

use bytes::BytesMut;
use common::*;
use fogline_mqtt::codec::{self, Packet, Version};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

fn bytes_of(packets: &[Packet]) -> Vec<u8> {
    let mut b = BytesMut::new();
    for p in packets {
        codec::encode(p, Version::V4, &mut b).expect("encode");
    }
    b.to_vec()
}

#[tokio::test]
async fn mqtt_6_0_0_2_packets_need_not_align_with_frames_and_6_0_0_1_text_frames_close() {
    let s = TestServer::start(|c| c.mqtt.ws_listen = vec!["127.0.0.1:0".into()]).await;
    let url = format!("ws://127.0.0.1:{}/mqtt", s.ws_port.expect("ws port"));
    let mut req = url.as_str().into_client_request().expect("request");
    req.headers_mut()
        .insert("Sec-WebSocket-Protocol", "mqtt".parse().expect("header"));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.ws_port.expect("ws port")))
        .await
        .expect("tcp");
    let (mut ws, resp) = tokio_tungstenite::client_async(req, tcp).await.expect("ws");
    assert_eq!(
        resp.headers()
            .get("Sec-WebSocket-Protocol")
            .and_then(|v| v.to_str().ok()),
        Some("mqtt"),
        "[MQTT-6.0.0-4]"
    );
    // CONNECT in two frames, then two PINGREQs in one frame.
    let connect = bytes_of(&[Packet::Connect(Box::new(connect_packet(
        Version::V4,
        "ws-raw",
        true,
    )))]);
    let (a, b) = connect.split_at(5);
    ws.send(Message::Binary(a.to_vec().into()))
        .await
        .expect("send");
    ws.send(Message::Binary(b.to_vec().into()))
        .await
        .expect("send");
    ws.send(Message::Binary(
        bytes_of(&[Packet::PingReq, Packet::PingReq]).into(),
    ))
    .await
    .expect("send");
    let mut got = BytesMut::new();
    let mut packets = Vec::new();
    while packets.len() < 3 {
        match tokio::time::timeout(WAIT, ws.next()).await {
            Ok(Some(Ok(Message::Binary(data)))) => got.extend_from_slice(&data),
            other => panic!("expected binary frames, got {other:?}"),
        }
        while let Some(p) = codec::decode(&mut got, Version::V4, usize::MAX).expect("decode") {
            packets.push(p);
        }
    }
    assert!(matches!(packets[0], Packet::ConnAck(ref a) if a.code == 0));
    assert!(matches!(packets[1..], [Packet::PingResp, Packet::PingResp]));
    // A text frame closes the connection.
    ws.send(Message::Text("hello".into())).await.expect("send");
    match tokio::time::timeout(WAIT, ws.next()).await {
        Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => {}
        Ok(Some(Ok(m))) => panic!("expected the connection to close, got {m:?}"),
        Err(_) => panic!("the connection stayed open after a text frame"),
    }
    s.stop().await;
}

/// A connection that never completes the WebSocket upgrade is closed after
/// `connect_timeout`: it held its socket and task forever.
#[tokio::test]
async fn an_upgrade_that_never_comes_is_closed_after_the_connect_timeout() {
    use tokio::io::AsyncReadExt;
    let s = TestServer::start(|c| {
        c.mqtt.ws_listen = vec!["127.0.0.1:0".into()];
        c.mqtt.connect_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.ws_port.expect("ws port")))
        .await
        .expect("tcp");
    let start = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert!(start.elapsed() < std::time::Duration::from_secs(3));
    s.stop().await;
}
