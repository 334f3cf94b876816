//! One driver per system, each on the system's standard Rust client.

use std::sync::Arc;

use crate::driver::{Driver, DriverError, Durability};
use crate::system::System;

pub mod fogline;
#[cfg(feature = "peers")]
pub mod kafka;
pub mod memory;
#[cfg(feature = "peers")]
pub mod mqtt;
#[cfg(feature = "peers")]
pub mod nats;
#[cfg(feature = "peers")]
pub mod rabbitmq;
#[cfg(feature = "peers")]
pub mod redis;
#[cfg(feature = "peers")]
pub mod zeromq;

/// A driver for `system` reachable at `addr` (`127.0.0.1:port`).
///
/// # Errors
/// [`DriverError::Unsupported`] when the system's driver is not compiled into this build.
pub fn connect(
    system: System,
    addr: &str,
    durability: Durability,
) -> Result<Arc<dyn Driver>, DriverError> {
    match system {
        System::Memory => Ok(Arc::new(memory::MemoryDriver::default())),
        System::Fogline => Ok(Arc::new(fogline::FoglineDriver::new(addr, durability))),
        #[cfg(feature = "peers")]
        System::FoglineMqtt => Ok(Arc::new(mqtt::MqttDriver::new(
            "fogline-mqtt",
            addr,
            durability,
        )?)),
        #[cfg(feature = "peers")]
        System::Mosquitto => Ok(Arc::new(mqtt::MqttDriver::new(
            "mosquitto",
            addr,
            durability,
        )?)),
        #[cfg(feature = "peers")]
        System::Redis => Ok(Arc::new(redis::RedisDriver::new(addr)?)),
        #[cfg(feature = "peers")]
        System::Rabbitmq => Ok(Arc::new(rabbitmq::RabbitDriver::new(addr, durability))),
        #[cfg(feature = "peers")]
        System::Kafka => Ok(Arc::new(kafka::KafkaDriver::new(addr, durability))),
        #[cfg(feature = "peers")]
        System::Zeromq => Ok(Arc::new(zeromq::ZmqDriver::new())),
        #[cfg(feature = "peers")]
        System::Nats => Ok(Arc::new(nats::NatsDriver::new(addr))),
        #[cfg(feature = "peers")]
        System::Jetstream => Ok(Arc::new(nats::JetStreamDriver::new(addr, durability))),
        // Reachable only in builds without the `peers` feature.
        #[allow(unreachable_patterns)]
        _ => Err(DriverError::Unsupported {
            system: system.name(),
            what: "this build (driver not compiled in; build fogline with `--features peers`)",
        }),
    }
}
