"""Drives a fogline server with Eclipse Paho (paho-mqtt 2.x).

Usage: python3 scenario.py PORT VERSION [ws]   (VERSION: 311 or 5; ws: over WebSocket)
Prints OK and exits 0 when every check passed; raises otherwise.
"""
import sys
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

PORT = int(sys.argv[1])
V5 = sys.argv[2] == "5"
PROTO = mqtt.MQTTv5 if V5 else mqtt.MQTTv311
TRANSPORT = "websockets" if sys.argv[3:] == ["ws"] else "tcp"
TIMEOUT = 10


class Client:
    def __init__(self, cid, clean=True, will=None, expiry=None):
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cid, protocol=PROTO, transport=TRANSPORT,
                             clean_session=None if V5 else clean)
        self.msgs = []
        self.cond = threading.Condition()
        self.c.on_message = self._on_message
        self.connected = threading.Event()
        self.c.on_connect = lambda c, u, f, rc, p: self._on_connect(f, rc)
        self.session_present = None
        if will:
            self.c.will_set(*will)
        props = None
        if V5:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = expiry if expiry is not None else 0
        self.c.connect("127.0.0.1", PORT, keepalive=30,
                       clean_start=clean if V5 else mqtt.MQTT_CLEAN_START_FIRST_ONLY,
                       properties=props)
        self.c.loop_start()
        assert self.connected.wait(TIMEOUT), "no CONNACK"

    def _on_connect(self, flags, rc):
        assert not rc.is_failure, f"connect refused: {rc}"
        self.session_present = flags.session_present
        self.connected.set()

    def _on_message(self, c, u, m):
        with self.cond:
            self.msgs.append(m)
            self.cond.notify_all()

    def subscribe(self, topic, qos, props=None, **opts):
        done = threading.Event()
        self.c.on_subscribe = lambda c, u, mid, codes, p: done.set()
        if V5:
            self.c.subscribe(topic, options=mqtt.SubscribeOptions(qos=qos, **opts), properties=props)
        else:
            self.c.subscribe(topic, qos)
        assert done.wait(TIMEOUT), "no SUBACK"

    def unsubscribe(self, topic):
        done = threading.Event()
        self.c.on_unsubscribe = lambda c, u, mid, codes, p: done.set()
        self.c.unsubscribe(topic)
        assert done.wait(TIMEOUT), "no UNSUBACK"

    def publish(self, topic, payload, qos=0, retain=False, props=None):
        info = self.c.publish(topic, payload, qos=qos, retain=retain, properties=props)
        info.wait_for_publish(TIMEOUT)
        assert info.is_published(), "publish not acknowledged"

    def wait(self, n):
        with self.cond:
            ok = self.cond.wait_for(lambda: len(self.msgs) >= n, TIMEOUT)
        assert ok, f"got {len(self.msgs)} of {n} messages"
        return self.msgs[:n]

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()


def qos_levels():
    sub = Client("paho-sub")
    sub.subscribe("paho/#", 2)
    pub = Client("paho-pub")
    for q in (0, 1, 2):
        pub.publish(f"paho/q{q}", f"m{q}", qos=q)
    got = sub.wait(3)
    assert [(m.topic, m.payload, m.qos) for m in got] == [
        ("paho/q0", b"m0", 0), ("paho/q1", b"m1", 1), ("paho/q2", b"m2", 2)], got
    sub.close()
    pub.close()


def properties():
    if not V5:
        return
    sub = Client("paho-props-sub")
    sub.subscribe("req/#", 1)
    pub = Client("paho-props-pub")
    props = Properties(PacketTypes.PUBLISH)
    props.UserProperty = [("site", "lab"), ("robot", "7")]
    props.ContentType = "application/json"
    props.ResponseTopic = "resp/7"
    props.CorrelationData = b"\x01\x02"
    props.MessageExpiryInterval = 60
    pub.publish("req/x", "{}", qos=1, props=props)
    m = sub.wait(1)[0]
    p = m.properties
    assert p.UserProperty == [("site", "lab"), ("robot", "7")], p
    assert p.ContentType == "application/json", p
    assert p.ResponseTopic == "resp/7", p
    assert p.CorrelationData == b"\x01\x02", p
    assert 0 < p.MessageExpiryInterval <= 60, p
    sub.close()
    pub.close()


def retained():
    pub = Client("paho-ret-pub")
    pub.publish("paho-ret/a", "kept", qos=1, retain=True)
    sub = Client("paho-ret-sub")
    sub.subscribe("paho-ret/#", 1)
    m = sub.wait(1)[0]
    assert (m.payload, m.retain) == (b"kept", True), m
    pub.publish("paho-ret/a", "", qos=1, retain=True)
    sub.close()
    late = Client("paho-ret-late")
    late.subscribe("paho-ret/#", 1)
    time.sleep(0.3)
    assert late.msgs == [], late.msgs
    late.close()
    pub.close()


def persistent_session():
    s = Client("paho-persist", clean=False, expiry=300)
    s.subscribe("persist/#", 1)
    s.close()
    pub = Client("paho-persist-pub")
    for i in range(5):
        pub.publish(f"persist/{i}", str(i), qos=1)
    again = Client("paho-persist", clean=False, expiry=300)
    assert again.session_present, "session resumed"
    got = again.wait(5)
    assert [m.payload for m in got] == [b"0", b"1", b"2", b"3", b"4"], got
    again.close()
    pub.close()


def will():
    watcher = Client("paho-watch")
    watcher.subscribe("paho-will/#", 1)
    dying = Client("paho-dying", will=("paho-will/x", "gone", 1, False))
    dying.c.loop_stop()
    dying.c.socket().close()  # no DISCONNECT: the will must be published
    m = watcher.wait(1)[0]
    assert (m.topic, m.payload) == ("paho-will/x", b"gone"), m
    watcher.close()


def shared():
    a = Client("paho-share-a")
    b = Client("paho-share-b")
    a.subscribe("$share/g/share/+", 1)
    b.subscribe("$share/g/share/+", 1)
    pub = Client("paho-share-pub")
    for i in range(10):
        pub.publish("share/x", str(i), qos=1)
    deadline = time.time() + TIMEOUT
    while len(a.msgs) + len(b.msgs) < 10 and time.time() < deadline:
        time.sleep(0.05)
    got = sorted(int(m.payload) for m in a.msgs + b.msgs)
    assert got == list(range(10)), got
    for c in (a, b, pub):
        c.close()


def rendezvous():
    """notify_interest (both versions) and a fogline-interest subscription (MQTT 5): see
    docs/PROFILES.md, "Over MQTT"."""
    producer = Client("paho-producer")
    producer.subscribe("$fogline/notify/#", 0)
    producer.publish("$fogline/announce/site/nj/lidar", "type=drone sensor=lidar", qos=1)
    notices = lambda n: [(m.topic, m.payload) for m in producer.wait(n)]
    notice = "$fogline/notify/site/nj/lidar"
    assert notices(1) == [(notice, b"stop")], producer.msgs
    consumer = Client("paho-consumer")
    sub_props = None
    if V5:
        sub_props = Properties(PacketTypes.SUBSCRIBE)
        sub_props.UserProperty = [("fogline-interest", "sensor=li*")]
    consumer.subscribe("site/#", 1, props=sub_props)
    assert notices(2)[1] == (notice, b"start"), producer.msgs
    for sensor in ("camera", "lidar"):
        props = None
        if V5:
            props = Properties(PacketTypes.PUBLISH)
            props.UserProperty = [("sensor", sensor)]
        producer.publish("site/nj/lidar", sensor, qos=1, props=props)
    want = [b"lidar"] if V5 else [b"camera", b"lidar"]
    consumer.wait(len(want))
    time.sleep(0.2)
    assert [m.payload for m in consumer.msgs] == want, consumer.msgs
    consumer.unsubscribe("site/#")
    assert notices(3)[2] == (notice, b"stop"), producer.msgs
    for c in (consumer, producer):
        c.close()


for check in (qos_levels, properties, retained, persistent_session, will, shared, rendezvous):
    check()
print("OK")
