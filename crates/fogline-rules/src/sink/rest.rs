//! The `rest` sink: each message as the body of an HTTP request. An `https://` url needs
//! `rootCaPath` (eKuiper's name), the PEM file of the CAs the server's certificate must
//! chain to (a system bundle such as `/etc/ssl/certs/ca-certificates.crt` will do), and
//! takes a client certificate as `certificationPath` and `privateKeyPath`.

use std::time::Duration;

use bytes::Bytes;
use fogline_net::tls::{ClientTls, TlsConnector};

use super::http::{Connection, HttpError, Url};
use super::{Failure, Props};

/// A `rest` action's settings.
#[derive(Clone, Debug)]
pub struct Rest {
    url: Url,
    tls: Option<TlsConnector>,
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
        let tls = Rest::tls(p, &url)?;
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
            tls,
            method,
            headers,
            timeout: Duration::from_millis(p.uint("timeout")?.unwrap_or(5000).max(1)),
        })
    }

    /// The TLS settings of an `https://` url, loaded now so that a wrong file fails the rule's
    /// creation, not its first message.
    fn tls(p: &mut Props<'_>, url: &Url) -> Result<Option<TlsConnector>, String> {
        let path = |p: &mut Props<'_>, key: &str| -> Result<_, String> {
            Ok(p.string(key)?.map(std::path::PathBuf::from))
        };
        let cafile = path(p, "rootCaPath")?;
        let certfile = path(p, "certificationPath")?;
        let keyfile = path(p, "privateKeyPath")?;
        if !url.tls {
            return match (&cafile, &certfile, &keyfile) {
                (None, None, None) => Ok(None),
                _ => Err(
                    "action rest: rootCaPath, certificationPath and privateKeyPath are \
                          for an https:// url"
                        .into(),
                ),
            };
        }
        let Some(cafile) = cafile else {
            return Err(
                "action rest: an https:// url needs rootCaPath, the PEM file of the \
                        CAs that sign the server's certificate"
                    .into(),
            );
        };
        let settings = ClientTls {
            cafile,
            certfile,
            keyfile,
            server_name: None,
        };
        TlsConnector::new(&settings, url.host())
            .map(Some)
            .map_err(|e| format!("action rest: {e}"))
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
            conn: Connection::with_tls(rest.url.clone(), rest.tls.clone()),
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
            Err(e @ HttpError::NoTls(_)) => Err(Failure::dropped(format!("rest: {e}"))),
        }
    }
}
