//! Authentication and access control in Mosquitto's file formats (`acl`: the `acl_file`).
pub mod acl;
