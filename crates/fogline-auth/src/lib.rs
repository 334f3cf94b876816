//! Users and access control for fogline, read from and written to the files a Mosquitto user
//! already has: `passwd`, the `password_file` (`mosquitto_passwd`'s format), and `acl`, the
//! `acl_file`; and [`Users`], which admits clients by the password file. Files in, values
//! out: the broker decides what to do with them.
#![deny(missing_docs)]

pub mod acl;
pub mod passwd;
pub mod users;

pub use users::{AllowAll, Authenticator, Login, Refused, Users};
