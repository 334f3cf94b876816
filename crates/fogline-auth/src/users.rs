//! The authentication hook: a client's id, user name and password (MQTT's CONNECT, the
//! native protocol's Hello) and the TLS certificate's identity are handed to an
//! [`Authenticator`] before a session is created. [`Users`] is Mosquitto's `password_file`
//! and `allow_anonymous`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::sync::RwLock;

use crate::passwd::{self, PasswordFile};

/// What a client presented when it connected.
#[derive(Clone, Debug, Default)]
pub struct Login {
    /// The client identifier (assigned by the server when the client sent none).
    pub client_id: String,
    /// CONNECT's user name.
    pub username: Option<String>,
    /// CONNECT's password.
    pub password: Option<Vec<u8>>,
    /// The client certificate's CN, on a TLS listener with `use_identity_as_username`.
    pub identity: Option<String>,
}

/// Decides whether a client may connect.
pub trait Authenticator: Send + Sync + 'static {
    /// `Ok(user)` admits the client as `user` (`None`: anonymous); `Err` refuses it.
    /// Called off the async threads: it may take as long as a password hash does.
    ///
    /// # Errors
    /// [`Refused`], which says the CONNACK code.
    fn authenticate(&self, login: &Login) -> Result<Option<String>, Refused>;

    /// Whether a client may connect without proving who it is (for the start-up warning).
    fn admits_anonymous(&self) -> bool;
}

/// A refused connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A wrong password or an unknown user (3.1.1: 0x04, 5.0: 0x86).
    #[error("bad user name or password")]
    BadCredentials,
    /// The client may not connect (3.1.1: 0x05, 5.0: 0x87).
    #[error("not authorized: {0}")]
    NotAuthorized(String),
}

/// Admits every client, as whom it says it is (fogline's default when nothing is configured).
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl Authenticator for AllowAll {
    fn authenticate(&self, login: &Login) -> Result<Option<String>, Refused> {
        Ok(login.identity.clone().or_else(|| login.username.clone()))
    }

    fn admits_anonymous(&self) -> bool {
        true
    }
}

/// Mosquitto's `password_file` and `allow_anonymous`: a client with a user name must have
/// that user's password; one without is admitted only when anonymous clients are. A TLS
/// certificate identity is the user and needs no password, as in Mosquitto.
#[derive(Debug)]
pub struct Users {
    path: Option<PathBuf>,
    file: RwLock<Arc<PasswordFile>>,
    allow_anonymous: bool,
}

impl Users {
    /// Reads the password file at `path` (`None`: no users, so every user name is refused).
    ///
    /// # Errors
    /// The file cannot be read or has a malformed line.
    pub fn load(path: Option<&Path>, allow_anonymous: bool) -> Result<Users, passwd::Error> {
        let file = match path {
            Some(p) => PasswordFile::load(p)?,
            None => PasswordFile::new(),
        };
        Ok(Users {
            path: path.map(Path::to_path_buf),
            file: RwLock::new(Arc::new(file)),
            allow_anonymous,
        })
    }

    /// Reads the password file again; connected clients stay, new ones are checked against
    /// it. Returns the number of users.
    ///
    /// # Errors
    /// The file cannot be read or is malformed: the users before stay.
    pub fn reload(&self) -> Result<usize, passwd::Error> {
        let Some(path) = &self.path else {
            return Ok(0);
        };
        let file = PasswordFile::load(path)?;
        let n = file.len();
        *self.file.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(file);
        Ok(n)
    }
}

impl Authenticator for Users {
    fn authenticate(&self, login: &Login) -> Result<Option<String>, Refused> {
        if let Some(id) = &login.identity {
            return Ok(Some(id.clone()));
        }
        let Some(user) = &login.username else {
            return if self.allow_anonymous {
                Ok(None)
            } else {
                Err(Refused::NotAuthorized(
                    "anonymous clients are not allowed".into(),
                ))
            };
        };
        if self.path.is_none() {
            // Nothing to check a user name against: it proves nothing, as no name at all.
            return if self.allow_anonymous {
                Ok(Some(user.clone()))
            } else {
                Err(Refused::NotAuthorized("no password_file".into()))
            };
        }
        // The file is read under the lock only long enough to take it: a hash takes long.
        let file = self.file.read().unwrap_or_else(|e| e.into_inner()).clone();
        let password = login.password.as_deref().unwrap_or_default();
        if file.verify(user, password) {
            Ok(Some(user.clone()))
        } else {
            Err(Refused::BadCredentials)
        }
    }

    fn admits_anonymous(&self) -> bool {
        self.allow_anonymous
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(user: Option<&str>, pw: Option<&str>, identity: Option<&str>) -> Login {
        Login {
            client_id: "c".into(),
            username: user.map(Into::into),
            password: pw.map(|p| p.as_bytes().to_vec()),
            identity: identity.map(Into::into),
        }
    }

    fn file_with(dir: &Path, users: &[(&str, &str)]) -> PathBuf {
        let mut f = PasswordFile::new();
        for (u, p) in users {
            f.set(u, p.as_bytes(), 10).unwrap();
        }
        let path = dir.join("passwd");
        f.save(&path).unwrap();
        path
    }

    #[test]
    fn checks_passwords_and_anonymous() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with(dir.path(), &[("alice", "pw")]);
        let users = Users::load(Some(&path), false).unwrap();
        let ok = users.authenticate(&login(Some("alice"), Some("pw"), None));
        assert_eq!(ok, Ok(Some("alice".into())));
        for bad in [
            login(Some("alice"), Some("nope"), None),
            login(Some("alice"), None, None),
            login(Some("mallory"), Some("pw"), None),
        ] {
            assert_eq!(users.authenticate(&bad), Err(Refused::BadCredentials));
        }
        let anon = users.authenticate(&login(None, None, None));
        assert!(matches!(anon, Err(Refused::NotAuthorized(_))));
        // The certificate's identity needs no password.
        let cert = users.authenticate(&login(Some("x"), None, Some("dev1")));
        assert_eq!(cert, Ok(Some("dev1".into())));

        let open = Users::load(Some(&path), true).unwrap();
        assert_eq!(open.authenticate(&login(None, None, None)), Ok(None));
        let bad = open.authenticate(&login(Some("alice"), Some("nope"), None));
        assert_eq!(bad, Err(Refused::BadCredentials));
    }

    #[test]
    fn without_a_file_a_name_is_anonymous() {
        let closed = Users::load(None, false).unwrap();
        let named = closed.authenticate(&login(Some("alice"), Some("pw"), None));
        assert!(matches!(named, Err(Refused::NotAuthorized(_))));
        let open = Users::load(None, true).unwrap();
        let named = open.authenticate(&login(Some("alice"), None, None));
        assert_eq!(named, Ok(Some("alice".into())));
    }

    #[test]
    fn reload_replaces_the_users_and_keeps_them_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with(dir.path(), &[("alice", "pw")]);
        let users = Users::load(Some(&path), false).unwrap();
        file_with(dir.path(), &[("bob", "pw2")]);
        assert_eq!(users.reload().unwrap(), 1);
        assert!(users
            .authenticate(&login(Some("alice"), Some("pw"), None))
            .is_err());
        assert!(users
            .authenticate(&login(Some("bob"), Some("pw2"), None))
            .is_ok());
        std::fs::write(&path, "not a password line\n").unwrap();
        assert!(users.reload().is_err());
        assert!(users
            .authenticate(&login(Some("bob"), Some("pw2"), None))
            .is_ok());
    }
}
