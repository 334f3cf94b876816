//! Who may use the admin API: when the node authenticates clients (`[auth]`, no anonymous
//! clients) or has an API token (`[admin] token`), every request but `/healthz` needs
//! `Authorization: Bearer TOKEN` (everything allowed) or HTTP basic auth with a user of
//! the password file (or, on an HTTPS listener with `use_identity_as_username`, a client
//! certificate). A user's requests are then checked against the ACL as administration:
//! `$fogline/admin/<path under /api/v1/>`, read for GET and HEAD, write otherwise (the
//! dashboard's pages and `/metrics` are `$fogline/admin/dashboard` and `.../metrics`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use fogline_auth::{Authenticator, Login, Refused};
use fogline_broker::Guard;
use fogline_wire::ErrorCode;

use crate::api::error::ApiError;

/// The TLS client certificate's CN of the connection, when it is the user name.
#[derive(Clone, Debug)]
pub(crate) struct CertUser(pub String);

/// What the admin API checks requests with.
#[derive(Clone)]
pub(crate) struct HttpAuth {
    pub guard: Arc<Guard>,
    /// `[admin] token` (`None`: no token).
    pub token: Option<Arc<str>>,
}

impl HttpAuth {
    /// Whether a request without credentials is refused.
    fn required(&self) -> bool {
        self.token.is_some() || !self.guard.admits_anonymous()
    }
}

/// The middleware: admits, checks against the ACL, or answers 401/403.
pub(crate) async fn require(State(auth): State<HttpAuth>, req: Request, next: Next) -> Response {
    if req.uri().path() == "/healthz" {
        return next.run(req).await;
    }
    let cert = req.extensions().get::<CertUser>().map(|c| c.0.clone());
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let user = match (header, cert) {
        (Some(h), _) if h.starts_with("Bearer ") => {
            let given = h["Bearer ".len()..].trim().as_bytes();
            match &auth.token {
                Some(t) if same(given, t.as_bytes()) => return next.run(req).await,
                _ => return refused("bad token"),
            }
        }
        (Some(h), _) if h.starts_with("Basic ") => match basic(&auth, &h).await {
            Ok(user) => user,
            Err(why) => return refused(&why),
        },
        (Some(_), _) => return refused("unsupported Authorization scheme"),
        (None, Some(cn)) => Some(cn),
        (None, None) if auth.required() => return refused("credentials required"),
        (None, None) => None,
    };
    let (what, change) = target(req.method(), req.uri().path());
    let access = auth.guard.client(user.as_deref(), "http");
    match access.check_admin(&what, change) {
        Ok(()) => next.run(req).await,
        Err(e) => ApiError::new(ErrorCode::NotAuthorized, e.to_string()).into_response(),
    }
}

/// Checks HTTP basic credentials against the node's users; the user on success.
async fn basic(auth: &HttpAuth, header: &str) -> Result<Option<String>, String> {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(header["Basic ".len()..].trim())
        .map_err(|_| "malformed basic credentials".to_owned())?;
    let text = String::from_utf8(decoded).map_err(|_| "malformed basic credentials")?;
    let (user, password) = text.split_once(':').ok_or("malformed basic credentials")?;
    let login = Login {
        client_id: "http".into(),
        username: Some(user.to_owned()),
        password: Some(password.as_bytes().to_vec()),
        identity: None,
    };
    let guard = auth.guard.clone();
    let tried = login.clone();
    // A password hash takes milliseconds: not on the threads that serve requests.
    let checked = tokio::task::spawn_blocking(move || guard.authenticate(&login))
        .await
        .unwrap_or_else(|e| Err(Refused::NotAuthorized(e.to_string())));
    checked.map_err(|why| {
        auth.guard.count_auth_failure("http", "", &tried, &why);
        why.to_string()
    })
}

/// The `$fogline/admin/` topic a request concerns and whether it changes something.
fn target(method: &Method, path: &str) -> (String, bool) {
    let change = !matches!(*method, Method::GET | Method::HEAD);
    let what = match path.strip_prefix("/api/v1/") {
        Some(rest) => rest.trim_end_matches('/').to_owned(),
        None if path == "/metrics" => "metrics".to_owned(),
        None => "dashboard".to_owned(),
    };
    (what, change)
}

fn refused(why: &str) -> Response {
    let mut r = ApiError::new(ErrorCode::BadCredentials, why.to_owned()).into_response();
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Basic realm=\"fogline\", charset=\"UTF-8\""),
    );
    r
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_map_onto_admin_topics() {
        assert_eq!(
            target(&Method::GET, "/api/v1/streams/s"),
            ("streams/s".into(), false)
        );
        assert_eq!(
            target(&Method::DELETE, "/api/v1/streams/s/"),
            ("streams/s".into(), true)
        );
        assert_eq!(target(&Method::GET, "/metrics"), ("metrics".into(), false));
        assert_eq!(target(&Method::GET, "/"), ("dashboard".into(), false));
        assert_eq!(
            target(&Method::GET, "/assets/dashboard.js"),
            ("dashboard".into(), false)
        );
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"ab", b"abc"));
    }
}
