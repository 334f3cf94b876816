//! The `rest` sink: each message as the body of an HTTP request.

use std::time::Duration;

use bytes::Bytes;

use super::http::{Connection, HttpError, Url};
use super::{Failure, Props};

/// A `rest` action's settings.
#[derive(Clone, Debug)]
pub struct Rest {
    url: Url,
    method: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl Rest {
    pub(super) fn parse(p: &mut Props<'_>) -> Result<Rest, String> {
        let url = p
            .string("url")?
            .ok_or_else(|| "action rest: a url is required".to_string())?;
        let url = Url::parse(&url).map_err(|e| format!("action rest: {e}"))?;
        let method = p.string("method")?.unwrap_or_else(|| "post".into());
        if !["post", "put", "patch", "get", "delete"]
            .contains(&method.to_ascii_lowercase().as_str())
        {
            return Err(format!("action rest: unknown method {method:?}"));
        }
        let headers = p
            .object("headers")?
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => Ok((k, s)),
                other => Err(format!(
                    "action rest: header {k} must be a string, not {other}"
                )),
            })
            .collect::<Result<_, _>>()?;
        if let Some(t) = p.string("bodyType")? {
            if t != "json" {
                return Err(format!("action rest: bodyType {t:?}: only json is sent"));
            }
        }
        Ok(Rest {
            url,
            method,
            headers,
            timeout: Duration::from_millis(p.uint("timeout")?.unwrap_or(5000).max(1)),
        })
    }
}

/// A `rest` sink's connection.
pub(super) struct Client {
    rest: Rest,
    conn: Connection,
}

impl Client {
    pub(super) fn new(rest: Rest) -> Client {
        Client {
            conn: Connection::new(rest.url.clone()),
            rest,
        }
    }

    /// Sends one message: a 2xx answer delivers it; 5xx, 429 and connection failures may
    /// succeed later; other answers will not.
    pub(super) async fn post(&mut self, body: Bytes) -> Result<(), Failure> {
        let r = &self.rest;
        match self.conn.send(&r.method, &r.headers, body, r.timeout).await {
            Ok(resp) if (200..300).contains(&resp.status) => Ok(()),
            Ok(resp) => {
                let msg = format!(
                    "rest {}{}: HTTP {}: {}",
                    r.url.authority,
                    r.url.path,
                    resp.status,
                    String::from_utf8_lossy(&resp.body[..resp.body.len().min(200)])
                );
                if resp.status >= 500 || resp.status == 429 {
                    Err(Failure::retry(msg))
                } else {
                    Err(Failure::dropped(msg))
                }
            }
            Err(e @ (HttpError::Io(_) | HttpError::Timeout(_) | HttpError::Url(_))) => Err(
                Failure::retry(format!("rest {}{}: {e}", r.url.authority, r.url.path)),
            ),
        }
    }
}
