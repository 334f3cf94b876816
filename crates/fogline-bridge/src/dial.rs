//! How every bridge reaches its peer over TLS (the MQTT bridge's relay, the Kafka relay, the
//! Kafka consumer-group connections): TCP without Nagle's algorithm, then the handshake for
//! the host's own name with the bridge's files, and a failure in words.

use fogline_net::tls::{explain, ClientStream, TlsConnector};
use tokio::net::TcpStream;

/// A TLS connection to a peer.
pub type TlsStream = ClientStream<TcpStream>;

/// TCP to `host:port`, Nagle's algorithm off (small packets and acknowledgements must not
/// wait for it).
///
/// # Errors
/// `host:port: why`.
pub async fn dial(host: &str, port: u16) -> Result<TcpStream, String> {
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("{host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

/// [`dial`], then TLS with `tls`'s files, the certificate checked for `host`.
///
/// # Errors
/// `host:port: why`; a refused handshake says what about the certificates.
pub async fn dial_tls(tls: &TlsConnector, host: &str, port: u16) -> Result<TlsStream, String> {
    let tcp = dial(host, port).await?;
    let tls = tls
        .for_host(host)
        .map_err(|e| format!("{host}:{port}: {e}"))?;
    tls.connect(tcp).await.map_err(|e| match explain(&e) {
        Some(why) => format!("{host}:{port}: TLS: {why}"),
        None => format!("{host}:{port}: TLS handshake: {e}"),
    })
}

/// `host:port` split, a bracketed IPv6 host without its brackets.
///
/// # Errors
/// No port, or not a number.
pub fn split_host_port(addr: &str) -> Result<(&str, u16), String> {
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| format!("{addr:?} is not host:port"))?;
    let port = port
        .parse()
        .map_err(|_| format!("{addr:?} is not host:port"))?;
    Ok((host.trim_start_matches('[').trim_end_matches(']'), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split() {
        assert_eq!(
            split_host_port("broker.example:9093"),
            Ok(("broker.example", 9093))
        );
        assert_eq!(split_host_port("[::1]:9093"), Ok(("::1", 9093)));
        assert!(split_host_port("broker").is_err());
        assert!(split_host_port("broker:x").is_err());
    }
}
