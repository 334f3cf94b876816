//! MQTT over WebSocket (MQTT 5.0 section 6, 3.1.1 section 6): after the
//! HTTP upgrade, binary frames carry the MQTT byte stream; frame and packet
//! boundaries need not line up. The server selects the subprotocol `mqtt`
//! when the client offers it [MQTT-6.0.0-3]; a text frame closes the
//! connection [MQTT-6.0.0-1]. The bridge feeds the same connection code as
//! TCP through an in-memory pipe.

use std::sync::Arc;
use std::time::Duration;

use fogline_broker::Protocol;
use fogline_net::transport::Conn;
use fogline_net::StallLimit;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::shared::Shared;

/// Bytes buffered between the WebSocket and the MQTT connection each way.
const PIPE: usize = 256 * 1024;

/// Upgrades `sock` and serves MQTT over it until either side closes.
///
/// The upgrade must finish within `connect_timeout`; the socket's writes give up after
/// `write_stall` without progress (so the bridge cannot hang on a client that stopped
/// reading once the MQTT side has ended); a WebSocket message or frame is at most
/// `max_packet_size` and a little, so it is refused before it is buffered whole.
pub(crate) async fn serve(sock: Conn, peer: String, shared: Arc<Shared>) {
    let cfg = &shared.config;
    let identity = sock.username().map(str::to_owned);
    let limit = (cfg.max_packet_size.as_u64() as usize).saturating_add(64 << 10);
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit));
    let sock = StallLimit::new(sock, cfg.write_stall);
    let upgrade =
        tokio_tungstenite::accept_hdr_async_with_config(sock, select_mqtt, Some(ws_config));
    let ws = match tokio::time::timeout(cfg.connect_timeout, upgrade).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "WebSocket upgrade failed");
            return;
        }
        Err(_) => {
            tracing::debug!("WebSocket upgrade not finished in time");
            return;
        }
    };
    let (mine, theirs) = tokio::io::duplex(PIPE);
    // One task for both halves: ending it (server shutdown) ends the connection too.
    tokio::join!(
        bridge(ws, mine),
        crate::connection::serve(theirs, peer, Protocol::MqttWs, identity, shared)
    );
}

/// The handshake callback: answers with subprotocol `mqtt` when offered.
// The error type is tungstenite's (an HTTP response), not ours to shrink.
#[allow(clippy::result_large_err)]
fn select_mqtt(req: &Request, mut resp: Response) -> Result<Response, ErrorResponse> {
    let offered = req
        .headers()
        .get_all("Sec-WebSocket-Protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|p| p.trim().eq_ignore_ascii_case("mqtt")));
    if offered {
        resp.headers_mut()
            .insert("Sec-WebSocket-Protocol", HeaderValue::from_static("mqtt"));
    }
    Ok(resp)
}

async fn bridge(ws: WebSocketStream<StallLimit<Conn>>, pipe: DuplexStream) {
    let (mut sink, mut stream) = ws.split();
    let (mut rd, mut wr) = tokio::io::split(pipe);
    let inbound = async {
        while let Some(msg) = stream.next().await {
            match msg {
                Ok(Message::Binary(b)) => {
                    if wr.write_all(&b).await.is_err() {
                        break;
                    }
                }
                Ok(Message::Text(_)) | Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => {} // ping, pong: answered by tungstenite
            }
        }
        let _ = wr.shutdown().await;
    };
    let outbound = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let frame = Message::Binary(bytes::Bytes::copy_from_slice(&buf[..n]));
                    if sink.send(frame).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = sink.close().await;
    };
    tokio::pin!(inbound, outbound);
    // When one direction ends, give the other a moment to finish its close.
    tokio::select! {
        _ = &mut inbound => { let _ = tokio::time::timeout(Duration::from_secs(1), outbound).await; }
        _ = &mut outbound => { let _ = tokio::time::timeout(Duration::from_secs(1), inbound).await; }
    }
}
