//! The authentication hook: CONNECT's client id, user name and password are
//! handed to an [`Authenticator`] before a session is created.

/// Decides whether a client may connect.
pub trait Authenticator: Send + Sync + 'static {
    /// `Ok(())` admits the client; `Err` refuses it (CONNACK 0x05 in
    /// 3.1.1, 0x86 "bad user name or password" in 5.0).
    ///
    /// # Errors
    /// [`Refused`] with a reason for the log.
    fn authenticate(
        &self,
        client_id: &str,
        username: Option<&str>,
        password: Option<&[u8]>,
    ) -> Result<(), Refused>;
}

/// A refused connection.
#[derive(Debug, Clone, thiserror::Error)]
#[error("connection refused: {0}")]
pub struct Refused(pub String);

/// Admits every client (the default).
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl Authenticator for AllowAll {
    fn authenticate(&self, _: &str, _: Option<&str>, _: Option<&[u8]>) -> Result<(), Refused> {
        Ok(())
    }
}
