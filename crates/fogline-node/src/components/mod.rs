//! The components of a node, in start order (the node stops them in reverse): the native
//! protocol, MQTT, the rules, the store, the bridges, the geometric monitor, then the admin API, which serves what the others report and
//! the routes they hand it. The broker is
//! opened before them all and closed after (see `node`).

mod admin;
mod bridge;
mod gm;
mod mqtt;
mod native;
mod rules;
mod store;

use crate::component::Component;

/// Every component, in start order.
pub(crate) const ALL: &[Component] = &[
    native::COMPONENT,
    mqtt::COMPONENT,
    rules::COMPONENT,
    store::COMPONENT,
    bridge::COMPONENT,
    gm::COMPONENT,
    admin::COMPONENT,
];
