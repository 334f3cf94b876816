//! Hello's credentials: checked against the node's users (`[auth]`), as MQTT's CONNECT
//! is, before the connection may do anything else.

use std::sync::Arc;

use fogline_auth::{Authenticator, Login, Refused};
use fogline_broker::BrokerError;
use fogline_wire::{Credentials, ErrorCode};

use crate::connection::Conn;

/// Admits the connection (setting what the ACL lets its user do) or refuses it with
/// `BadCredentials`; false when it must close.
pub(crate) async fn login(
    conn: &Arc<Conn>,
    client_name: &str,
    credentials: Option<Credentials>,
) -> bool {
    let guard = conn.broker.guard().clone();
    let (username, password) = match credentials {
        Some(c) => (
            Some(c.username.as_str().to_owned()),
            Some(c.password.as_str().as_bytes().to_vec()),
        ),
        None => (None, None),
    };
    let login = Login {
        client_id: client_name.to_owned(),
        username,
        password,
        identity: conn.identity().map(str::to_owned),
    };
    let checked = if guard.authenticates() {
        // A password hash takes milliseconds: not on the threads that serve connections.
        let (g, l) = (guard.clone(), login.clone());
        tokio::task::spawn_blocking(move || g.authenticate(&l))
            .await
            .unwrap_or_else(|e| Err(Refused::NotAuthorized(e.to_string())))
    } else {
        guard.authenticate(&login)
    };
    match checked {
        Ok(user) => {
            let access = guard.client(user.as_deref(), client_name);
            conn.set_access(access);
            true
        }
        Err(why) => {
            let peer = conn.client.addr().to_owned();
            guard.count_auth_failure("native", &peer, &login, &why);
            let message = match why {
                Refused::BadCredentials => "bad user name or password".to_owned(),
                Refused::NotAuthorized(m) => m,
            };
            conn.fail(ErrorCode::BadCredentials, &message);
            false
        }
    }
}

/// Whether the connection may read stream `name` through `filter` (a consumer, a replay,
/// a store query); an unknown stream is left for the caller to report.
pub(crate) fn may_read(conn: &Conn, name: &str, filter: &str) -> Result<(), BrokerError> {
    match conn.broker.stream(name) {
        Some(stream) => conn.access().check_stream(&stream, filter),
        None => Ok(()),
    }
}
