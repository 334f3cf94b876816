//! A small HTTP/1.1 client on hyper: what the `rest` sink and the CLI need, one kept-alive
//! connection per user; `https://` through the transport layer's TLS connector
//! ([`TlsConnector`]: the server verified against a CA file, no system roots).

use std::time::Duration;

use bytes::Bytes;
use fogline_net::tls::{explain, TlsConnector};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL is not `http[s]://host[:port]/path`.
    #[error("bad url {0:?}: expected http[s]://host[:port]/path")]
    Url(String),
    /// An `https://` URL without TLS settings.
    #[error("{0}: https needs the CA that signed the server's certificate")]
    NoTls(String),
    /// The connection could not be made or broke.
    #[error("{0}")]
    Io(String),
    /// No answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// An answer.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Bytes,
}

/// A parsed `http://` or `https://` URL.
#[derive(Clone, Debug, PartialEq)]
pub struct Url {
    /// `https://`.
    pub tls: bool,
    /// `host:port`.
    pub authority: String,
    /// Path and query.
    pub path: String,
}

impl Url {
    /// Parses `http[s]://host[:port][/path]` (port 80, or 443 for https, when none).
    ///
    /// # Errors
    /// Another scheme or no host.
    pub fn parse(url: &str) -> Result<Url, HttpError> {
        let (tls, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => return Err(HttpError::Url(url.to_string())),
        };
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if host.is_empty() {
            return Err(HttpError::Url(url.to_string()));
        }
        let authority = if host
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            host.to_string()
        } else {
            format!("{host}:{}", if tls { 443 } else { 80 })
        };
        Ok(Url {
            tls,
            authority,
            path: path.to_string(),
        })
    }

    /// The host, without port or IPv6 brackets: the name a TLS server's certificate must
    /// hold unless told another.
    pub fn host(&self) -> &str {
        let host = self
            .authority
            .rsplit_once(':')
            .map_or(self.authority.as_str(), |(h, _)| h);
        host.trim_start_matches('[').trim_end_matches(']')
    }
}

/// One kept-alive connection to one server, made again when it breaks.
pub struct Connection {
    url: Url,
    tls: Option<TlsConnector>,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    /// A connection (made at the first request) to `url`'s server; an `https://` URL needs
    /// [`Connection::with_tls`].
    pub fn new(url: Url) -> Connection {
        Connection::with_tls(url, None)
    }

    /// A connection that runs `tls`'s handshake when `url` is `https://`.
    pub fn with_tls(url: Url, tls: Option<TlsConnector>) -> Connection {
        Connection {
            url,
            tls,
            sender: None,
        }
    }

    /// Sends one request to the URL's path and reads the whole answer.
    ///
    /// # Errors
    /// The connection failed or the answer did not come within `timeout`.
    pub async fn send(
        &mut self,
        method: &str,
        headers: &[(String, String)],
        body: Bytes,
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        match tokio::time::timeout(timeout, self.exchange(method, headers, body)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                self.sender = None;
                Err(e)
            }
            Err(_) => {
                self.sender = None;
                Err(HttpError::Timeout(timeout))
            }
        }
    }

    async fn exchange(
        &mut self,
        method: &str,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Result<Response, HttpError> {
        let io = |e: &dyn std::fmt::Display| HttpError::Io(format!("{}: {e}", self.url.authority));
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            let stream = tokio::net::TcpStream::connect(&self.url.authority)
                .await
                .map_err(|e| io(&e))?;
            stream.set_nodelay(true).map_err(|e| io(&e))?;
            let sender = match (self.url.tls, &self.tls) {
                (false, _) => handshake(stream).await,
                (true, None) => return Err(HttpError::NoTls(self.url.authority.clone())),
                (true, Some(tls)) => match tls.connect(stream).await {
                    Ok(stream) => handshake(stream).await,
                    Err(e) => return Err(io(&explain(&e).unwrap_or_else(|| e.to_string()))),
                },
            };
            self.sender = Some(sender.map_err(|e| io(&e))?);
        }
        let sender = self.sender.as_mut().expect("made above");
        sender
            .ready()
            .await
            .map_err(|e| HttpError::Io(describe(&e)))?;
        let mut req = hyper::Request::builder()
            .method(method.to_ascii_uppercase().as_str())
            .uri(self.url.path.as_str())
            .header(hyper::header::HOST, self.url.authority.as_str());
        let mut typed = false;
        for (k, v) in headers {
            typed |= k.eq_ignore_ascii_case("content-type");
            req = req.header(k.as_str(), v.as_str());
        }
        if !typed && !body.is_empty() {
            req = req.header(hyper::header::CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| HttpError::Io(format!("request: {e}")))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| HttpError::Io(describe(&e)))?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| HttpError::Io(describe(&e)))?
            .to_bytes();
        Ok(Response { status, body })
    }
}

/// `e` and its causes, the TLS ones in words a user can act on (a server's alert, such as
/// "certificate required", arrives with the first answer, not in the handshake).
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(tls) = c.downcast_ref::<std::io::Error>().and_then(explain) {
            return format!("{out}: {tls}");
        }
        out = format!("{out}: {c}");
        cause = c.source();
    }
    out
}

/// The HTTP/1.1 handshake on `io`, its connection driven by a task of its own.
async fn handshake<S>(io: S) -> hyper::Result<SendRequest<Full<Bytes>>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// One request on a new connection.
///
/// # Errors
/// As [`Connection::send`], and a bad URL.
pub async fn request(
    method: &str,
    url: &str,
    body: Bytes,
    timeout: Duration,
) -> Result<Response, HttpError> {
    Connection::new(Url::parse(url)?)
        .send(method, &[], body, timeout)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_default_port() {
        let u = Url::parse("http://127.0.0.1:8080/a/b?c=1").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.path.as_str()),
            ("127.0.0.1:8080", "/a/b?c=1")
        );
        let u = Url::parse("http://example.invalid").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.path.as_str()),
            ("example.invalid:80", "/")
        );
        let u = Url::parse("https://node.example/api").unwrap();
        assert!(u.tls);
        assert_eq!(
            (u.authority.as_str(), u.host()),
            ("node.example:443", "node.example")
        );
        let u = Url::parse("https://[::1]:7443/").unwrap();
        assert_eq!((u.authority.as_str(), u.host()), ("[::1]:7443", "::1"));
        assert!(!Url::parse("http://x/").unwrap().tls);
        assert!(Url::parse("ftp://x/").is_err());
        assert!(Url::parse("http:///x").is_err());
    }
}
