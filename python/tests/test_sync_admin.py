"""The synchronous facade and the HTTP admin helpers."""

from __future__ import annotations

import threading

import pytest

import fogline
from fogline.admin import Admin
from fogline.sync import connect
from conftest import Server


def test_sync_publish_subscribe_consume_replay(server: Server) -> None:
    with connect(server.address) as client:
        assert client.is_connected and client.ping() >= 0
        with client.subscribe("s/#") as sub:
            for i in range(1000):
                client.publish("s/x", b"%d" % i, headers={"i": str(i)})
            client.publish("s/x", b"acked", ack=True)
            futures = [client.publish_async("s/y", b"%d" % i) for i in range(100)]
            assert all(f.result(10) >= 1 for f in futures)
            client.flush()
            got = [sub.next(5) for _ in range(1101)]
            assert [m.payload for m in got[:1000]] == [b"%d" % i for i in range(1000)]
            assert got[999].headers == {"i": "999"}
            assert got[1000].payload == b"acked"
            with pytest.raises(fogline.TimeoutError):
                sub.next(0.2)
        assert [m.offset for m in client.replay("default")] == list(range(1101))
        with client.consumer("default", "sync-worker", ack_timeout=30) as c:
            msgs = c.fetch(500, timeout=2)
            assert len(msgs) == 500
            c.ack(msgs)
            msgs[0].ack()  # acking twice is harmless
            # Acks from another thread are handed to the loop.
            more = c.fetch(10, timeout=2)
            t = threading.Thread(target=c.ack, args=(more,))
            t.start()
            t.join()
        client.flush()
        info = client.consumers("default", "sync-worker")[0]
        assert info.ack_floor == 510
        with pytest.raises(fogline.InvalidTopicError):
            client.publish("bad/#", b"x", ack=True)
        assert client.create_stream("lab", ["lab/#"]).name == "lab"
        assert {s.name for s in client.streams()} >= {"default", "lab"}
        client.delete_stream("lab")


def test_admin_streams_consumers_rules(server: Server) -> None:
    admin = Admin(server.http)
    assert admin.healthz()
    assert "fogline_" in admin.metrics()
    created = admin.create_stream("lab", ["lab/#"], storage="memory", retention_age_seconds=60)
    assert created["name"] == "lab"
    assert {s["name"] for s in admin.streams()} >= {"default", "lab"}
    assert admin.update_stream("lab", subjects=["lab/#", "x/#"])["subjects"] == ["lab/#", "x/#"]
    with pytest.raises(fogline.DuplicateError) as dup:
        admin.create_stream("lab", ["lab/#"])
    assert dup.value.code == fogline.ErrorCode.DUPLICATE
    with fogline.sync.connect(server.address) as client:
        client.publish("lab/a", b'{"id": "r1", "t": 35.0}', ack=True)
        c = client.consumer("lab", "dash")
        c.fetch(10, timeout=2)
        assert admin.consumer("lab", "dash")["name"] == "dash"
        assert [x["name"] for x in admin.consumers("lab")] == ["dash"]
        c.close()
    admin.delete_consumer("lab", "dash")
    admin.purge_stream("lab")
    admin.delete_stream("lab")
    with pytest.raises(fogline.UnknownStreamError):
        admin.stream("lab")

    admin.create_stream(
        sql='CREATE STREAM demo (id STRING, t FLOAT) WITH (DATASOURCE="sensors/+/temp", FORMAT="json")'
    )
    admin.create_rule(
        {
            "id": "hot",
            "sql": "SELECT id, t FROM demo WHERE t > 30",
            "actions": [{"publish": {"topic": "alerts/{id}"}}],
        }
    )
    assert [r["id"] for r in admin.rules()] == ["hot"]
    assert isinstance(admin.rule_status("hot"), dict)
    with fogline.sync.connect(server.address) as client:
        with client.subscribe("alerts/#") as alerts:
            for _ in range(50):
                client.publish("sensors/r1/temp", b'{"id": "r1", "t": 35.0}', ack=True)
                try:
                    msg = alerts.next(0.3)
                    break
                except fogline.TimeoutError:
                    continue
            else:
                raise AssertionError("the rule published no alert")
            assert msg.topic == "alerts/r1"
    admin.delete_rule("hot")
    assert admin.rules() == []
