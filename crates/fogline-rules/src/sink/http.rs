//! A small HTTP/1.1 client on hyper: what the `rest` sink and the CLI need (plain
//! `http://` until the transport layer has TLS), one kept-alive connection per user.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL is not `http://host:port/path`.
    #[error("bad url {0:?}: expected http://host[:port]/path")]
    Url(String),
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

/// A parsed `http://` URL.
#[derive(Clone, Debug, PartialEq)]
pub struct Url {
    /// `host:port`.
    pub authority: String,
    /// Path and query.
    pub path: String,
}

impl Url {
    /// Parses `http://host[:port][/path]`.
    ///
    /// # Errors
    /// Another scheme or no host.
    pub fn parse(url: &str) -> Result<Url, HttpError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| HttpError::Url(url.to_string()))?;
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
            format!("{host}:80")
        };
        Ok(Url {
            authority,
            path: path.to_string(),
        })
    }
}

/// One kept-alive connection to one server, made again when it breaks.
pub struct Connection {
    url: Url,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    /// A connection (made at the first request) to `url`'s server.
    pub fn new(url: Url) -> Connection {
        Connection { url, sender: None }
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
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| io(&e))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            self.sender = Some(sender);
        }
        let sender = self.sender.as_mut().expect("made above");
        sender
            .ready()
            .await
            .map_err(|e| HttpError::Io(e.to_string()))?;
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
            .map_err(|e| HttpError::Io(e.to_string()))?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| HttpError::Io(e.to_string()))?
            .to_bytes();
        Ok(Response { status, body })
    }
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
        assert!(Url::parse("https://x/").is_err());
        assert!(Url::parse("http:///x").is_err());
    }
}
