//! MQTT over WebSocket (MQTT 5.0 section 6, 3.1.1 section 6): after the
//! HTTP upgrade, binary frames carry the MQTT byte stream; frame and packet
//! boundaries need not line up. The server selects the subprotocol `mqtt`
//! when the client offers it [MQTT-6.0.0-3]; a text frame closes the
//! connection [MQTT-6.0.0-1]. The bridge feeds the same connection code as
//! TCP through an in-memory pipe.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::shared::Shared;

/// Bytes buffered between the WebSocket and the MQTT connection each way.
const PIPE: usize = 256 * 1024;

/// Upgrades `sock` and serves MQTT over it until either side closes.
pub(crate) async fn serve(sock: TcpStream, shared: Arc<Shared>) {
    let ws = match tokio_tungstenite::accept_hdr_async(sock, select_mqtt).await {
        Ok(ws) => ws,
        Err(e) => {
            tracing::debug!(error = %e, "WebSocket upgrade failed");
            return;
        }
    };
    let (mine, theirs) = tokio::io::duplex(PIPE);
    let conn = tokio::spawn(crate::connection::serve(theirs, shared));
    bridge(ws, mine).await;
    let _ = conn.await;
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

async fn bridge(ws: WebSocketStream<TcpStream>, pipe: DuplexStream) {
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
