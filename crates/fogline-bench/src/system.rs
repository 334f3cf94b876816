//! The systems the harness can measure, by name.

use serde::Serialize;

/// A system under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum System {
    /// fogline's native protocol (server started from this binary).
    Fogline,
    /// fogline over MQTT 3.1.1 (the same server's MQTT listener, rumqttc as client).
    FoglineMqtt,
    /// MQTT 3.1.1 QoS 0 (QoS 1 when persistent) against Mosquitto.
    Mosquitto,
    /// Redis pub/sub.
    Redis,
    /// NATS core pub/sub.
    Nats,
    /// NATS JetStream (a stream per topic).
    Jetstream,
    /// RabbitMQ over AMQP 0-9-1 (topic exchange, one queue per subscriber).
    Rabbitmq,
    /// Apache Kafka in KRaft mode (one partition per topic).
    Kafka,
    /// ZeroMQ PUB/SUB, brokerless.
    Zeromq,
    /// The harness's in-process loopback (its own overhead).
    Memory,
}

impl System {
    /// Every system, in report order.
    pub const ALL: [System; 10] = [
        System::Fogline,
        System::FoglineMqtt,
        System::Mosquitto,
        System::Redis,
        System::Nats,
        System::Jetstream,
        System::Rabbitmq,
        System::Kafka,
        System::Zeromq,
        System::Memory,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            System::Fogline => "fogline",
            System::FoglineMqtt => "fogline-mqtt",
            System::Mosquitto => "mosquitto",
            System::Redis => "redis",
            System::Nats => "nats",
            System::Jetstream => "jetstream",
            System::Rabbitmq => "rabbitmq",
            System::Kafka => "kafka",
            System::Zeromq => "zeromq",
            System::Memory => "memory",
        }
    }

    /// Parses a name as printed by [`System::name`].
    pub fn parse(s: &str) -> Option<System> {
        Self::ALL.into_iter().find(|x| x.name() == s)
    }

    /// The peer that `bench/peers/start.sh` starts for it (None: no server process to start
    /// with the scripts).
    pub fn peer_script_name(self) -> Option<&'static str> {
        match self {
            System::Mosquitto => Some("mosquitto"),
            System::Redis => Some("redis"),
            System::Nats | System::Jetstream => Some("nats"),
            System::Rabbitmq => Some("rabbitmq"),
            System::Kafka => Some("kafka"),
            System::Fogline | System::FoglineMqtt | System::Zeromq | System::Memory => None,
        }
    }

    /// Whether the system keeps what it receives (so a consumer can read it later).
    pub fn keeps_log(self) -> bool {
        matches!(self, System::Fogline | System::Jetstream | System::Kafka)
    }

    /// Whether a driver for it is compiled into this build.
    pub fn compiled_in(self) -> bool {
        matches!(self, System::Fogline | System::Memory) || cfg!(feature = "peers")
    }
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in System::ALL {
            assert_eq!(System::parse(s.name()), Some(s));
        }
        assert_eq!(System::parse("mariadb"), None);
    }
}
