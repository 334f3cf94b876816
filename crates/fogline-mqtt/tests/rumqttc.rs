//! Interop with rumqttc (Rust), MQTT 3.1.1 and 5.0: ordered exactly-once
//! delivery at QoS 1 and 2, topic aliases and user properties.

mod common;

use std::time::Duration;

use common::*;

mod v4 {
    use super::*;
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};

    fn client(id: &str, port: u16) -> (AsyncClient, rumqttc::EventLoop) {
        let mut o = MqttOptions::new(id, "127.0.0.1", port);
        o.set_keep_alive(Duration::from_secs(5));
        AsyncClient::new(o, 100)
    }

    #[tokio::test]
    async fn rumqttc_v311_mqtt_4_6_0_6_and_4_3_3_qos1_and_qos2_arrive_in_order_exactly_once() {
        let s = TestServer::start(|_| {}).await;
        let (sub, mut sub_loop) = client("rq-sub", s.port);
        sub.subscribe("rq/#", QoS::ExactlyOnce)
            .await
            .expect("subscribe");
        loop {
            if let Event::Incoming(Packet::SubAck(_)) = sub_loop.poll().await.expect("poll") {
                break;
            }
        }
        let (pubc, mut pub_loop) = client("rq-pub", s.port);
        // The client's request channel is bounded: publish from one task while
        // another drives the event loop.
        tokio::spawn(async move {
            for i in 0..200u32 {
                let qos = if i % 2 == 0 {
                    QoS::AtLeastOnce
                } else {
                    QoS::ExactlyOnce
                };
                pubc.publish("rq/n", qos, false, i.to_be_bytes().to_vec())
                    .await
                    .expect("publish");
            }
        });
        let publisher = tokio::spawn(async move {
            let mut acked = 0;
            while acked < 200 {
                match pub_loop.poll().await.expect("poll") {
                    Event::Incoming(Packet::PubAck(_)) | Event::Incoming(Packet::PubComp(_)) => {
                        acked += 1
                    }
                    _ => {}
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < 200 {
            let ev = tokio::time::timeout(WAIT, sub_loop.poll())
                .await
                .expect("in time")
                .expect("poll");
            if let Event::Incoming(Packet::Publish(p)) = ev {
                got.push(u32::from_be_bytes(
                    p.payload[..4].try_into().expect("4 bytes"),
                ));
            }
        }
        assert_eq!(
            got,
            (0..200).collect::<Vec<u32>>(),
            "[MQTT-4.6.0-6] ordered, no duplicates"
        );
        publisher.await.expect("publisher");
        s.stop().await;
    }
}

mod v5 {
    use super::*;
    use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};

    fn client(id: &str, port: u16, persistent: bool) -> (AsyncClient, EventLoop) {
        let mut o = MqttOptions::new(id, "127.0.0.1", port);
        o.set_keep_alive(Duration::from_secs(5));
        if persistent {
            o.set_clean_start(false);
            o.set_session_expiry_interval(Some(300));
        }
        AsyncClient::new(o, 100)
    }

    async fn until_suback(l: &mut EventLoop) {
        loop {
            if let Event::Incoming(Packet::SubAck(_)) = l.poll().await.expect("poll") {
                return;
            }
        }
    }

    #[tokio::test]
    async fn rumqttc_v5_mqtt_3_3_2_17_user_properties_and_4_4_0_1_persistent_session() {
        let s = TestServer::start(|_| {}).await;
        let (sub, mut sub_loop) = client("r5-sub", s.port, true);
        sub.subscribe("r5/#", QoS::AtLeastOnce)
            .await
            .expect("subscribe");
        until_suback(&mut sub_loop).await;
        let (pubc, mut pub_loop) = client("r5-pub", s.port, false);
        let props = PublishProperties {
            user_properties: vec![("k".into(), "v".into())],
            content_type: Some("text/plain".into()),
            ..PublishProperties::default()
        };
        pubc.publish_with_properties("r5/a", QoS::AtLeastOnce, false, "hello", props)
            .await
            .expect("publish");
        let got = loop {
            tokio::select! {
                ev = sub_loop.poll() => if let Event::Incoming(Packet::Publish(p)) = ev.expect("poll") { break p },
                ev = pub_loop.poll() => { ev.expect("poll"); }
            }
        };
        let props = got.properties.expect("properties");
        assert_eq!(
            props.user_properties,
            vec![("k".to_string(), "v".to_string())]
        );
        assert_eq!(props.content_type.as_deref(), Some("text/plain"));
        // Leave, let messages arrive meanwhile, come back: the session is there.
        sub.disconnect().await.expect("disconnect");
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while sub_loop.poll().await.is_ok() {}
        })
        .await;
        drop(sub_loop);
        for i in 0..10u8 {
            pubc.publish("r5/b", QoS::AtLeastOnce, false, vec![i])
                .await
                .expect("publish");
        }
        let mut acked = 0;
        while acked < 10 {
            if let Event::Incoming(Packet::PubAck(_)) = pub_loop.poll().await.expect("poll") {
                acked += 1;
            }
        }
        let (_sub, mut sub_loop) = client("r5-sub", s.port, true);
        let mut seen = Vec::new();
        while seen.len() < 10 {
            let ev = tokio::time::timeout(WAIT, sub_loop.poll())
                .await
                .expect("in time")
                .expect("poll");
            match ev {
                Event::Incoming(Packet::ConnAck(a)) => assert!(a.session_present),
                Event::Incoming(Packet::Publish(p)) => seen.push(p.payload[0]),
                _ => {}
            }
        }
        assert_eq!(seen, (0..10).collect::<Vec<u8>>());
        s.stop().await;
    }
}
