"""Every API of the asyncio client against a live server."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

import fogline
from fogline import ErrorCode
from conftest import Server, aio


@aio
async def test_publish_subscribe_with_headers_and_timestamps(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        assert client.is_connected and client.server_name.startswith("fogline")
        sub = await client.subscribe("site/+/temp")
        await client.publish("site/r1/temp", b"21.5", headers={"type": "thermo", "raw": b"\xff"})
        await client.publish("site/r2/temp", "22.0", timestamp=1_000_000)
        await client.publish("site/r2/other", b"not matched")
        first = await sub.next(5)
        second = await sub.next(5)
        assert (first.topic, first.payload) == ("site/r1/temp", b"21.5")
        assert first.headers == {"type": "thermo", "raw": "\udcff"}
        assert first.raw_headers == [("type", b"thermo"), ("raw", b"\xff")]
        assert first.offset is None and first.timestamp > 1_600_000_000_000_000
        assert (second.topic, second.payload, second.timestamp) == ("site/r2/temp", b"22.0", 1_000_000)
        with pytest.raises(fogline.TimeoutError):
            await sub.next(0.3)
        await sub.unsubscribe()
        with pytest.raises(StopAsyncIteration):
            await sub.next(1)


@aio
async def test_async_iteration_and_callback(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        got = []
        done = asyncio.Event()

        async def cb(msg: fogline.Message) -> None:
            got.append(msg.payload)
            if len(got) == 3:
                done.set()

        await client.subscribe("cb/#", cb=cb)
        sub = await client.subscribe("it/#")
        for i in range(3):
            await client.publish("cb/x", b"%d" % i)
            await client.publish("it/x", b"%d" % i)
        seen = []
        async for msg in sub:
            seen.append(msg.payload)
            if len(seen) == 3:
                break
        await asyncio.wait_for(done.wait(), 5)
        assert seen == got == [b"0", b"1", b"2"]


@aio
async def test_batched_publish_keeps_order_and_count(server: Server) -> None:
    async with fogline.connect(server.address, max_batch_bytes=4096) as client:
        sub = await client.subscribe("seq")
        n = 20_000
        for i in range(n):
            await client.publish("seq", i.to_bytes(4, "little"))
        await client.flush()
        got = []
        while len(got) < n:
            got.extend(await sub.next_batch(5))
        assert [int.from_bytes(m.payload, "little") for m in got] == list(range(n))
        assert sub.dropped == 0
        assert (await client.stream("default")).records == n


@aio
async def test_acked_pipelined_and_many(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        await client.publish("acked/one", b"1", ack=True)
        futures = [await client.publish_async("acked/pipe", b"%d" % i) for i in range(1000)]
        counts = await asyncio.gather(*futures)
        assert all(c >= 1 for c in counts)
        assert await client.publish_many("acked/many", [b"a", b"b", b"c"], ack=True) == 3
        info = await client.stream("default")
        assert info.records == 1 + 1000 + 3


@aio
async def test_priority_subscription_and_records(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        sub = await client.subscribe("robot/#", priority=True)
        await client.publish("robot/state", b"estop", priority=True, ack=True)
        msg = await sub.next(5)
        assert msg.payload == b"estop" and msg.priority


@aio
async def test_replay_from_offset_time_and_duration(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        for i in range(10):
            await client.publish("r/x", b"%d" % i, ack=True)
        middle = dt.datetime.now(dt.timezone.utc)
        await asyncio.sleep(0.05)
        for i in range(10, 15):
            await client.publish("r/x", b"%d" % i, ack=True)
        everything = [m async for m in client.replay("default")]
        assert [m.offset for m in everything] == list(range(15))
        assert [m.payload for m in everything] == [b"%d" % i for i in range(15)]
        from_offset = [m.offset async for m in client.replay("default", offset=12)]
        assert from_offset == [12, 13, 14]
        since = [m.payload async for m in client.replay("default", since=middle)]
        assert since == [b"%d" % i for i in range(10, 15)]
        recent = [m.offset async for m in client.replay("default", ago=dt.timedelta(minutes=5))]
        assert recent == list(range(15))
        assert [m async for m in client.replay("default", ago=-3600)] == []
        filtered = [m async for m in client.replay("default", filter="nothing/#")]
        assert filtered == []


@aio
async def test_durable_consumer_fetch_ack_redelivery_resume(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        for i in range(5):
            await client.publish("jobs/x", b"%d" % i, ack=True)
        c = await client.consumer("default", "worker", ack_timeout=0.5)
        first = await c.fetch(3, timeout=2)
        assert [m.offset for m in first] == [0, 1, 2]
        assert all(m.delivery_count == 1 for m in first)
        first[0].ack()
        c.ack(first[1])
        # offset 2 is not acked: it comes again after the ack timeout.
        rest = await c.fetch(10, timeout=2)
        assert [m.offset for m in rest] == [3, 4]
        c.ack(rest)
        again = await c.fetch(10, timeout=3)
        assert [(m.offset, m.delivery_count) for m in again] == [(2, 2)]
        again[0].ack()
        assert await c.fetch(10, timeout=0.7) == []
        await c.close()
        await client.publish("jobs/x", b"5", ack=True)
        c2 = await client.consumer("default", "worker")
        resumed = await c2.fetch(10, timeout=2)
        assert [m.offset for m in resumed] == [5]
        infos = await client.consumers("default", "worker")
        assert infos[0].name == "worker" and infos[0].open
        with pytest.raises(fogline.DuplicateError) as e:
            await client.consumer("default", "worker")
        assert e.value.code == ErrorCode.DUPLICATE
        await c2.close()
        await client.delete_consumer("default", "worker")
        with pytest.raises(fogline.UnknownConsumerError):
            await client.consumers("default", "worker")


@aio
async def test_ephemeral_consumer_latest_and_auto_ack(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        await client.publish("e/x", b"old", ack=True)
        async with await client.consumer(start="latest", ack_timeout=None) as c:
            await client.publish("e/x", b"new", ack=True)
            msgs = await c.fetch(10, timeout=2)
            assert [m.payload for m in msgs] == [b"new"]
            with pytest.raises(ValueError):
                msgs[0].ack()  # acknowledged on delivery: nothing to ack


@aio
async def test_stream_management(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        info = await client.create_stream("lab", ["lab/#"], storage="memory", retention_age=3600)
        assert (info.name, info.storage, info.subjects) == ("lab", "memory", ["lab/#"])
        assert info.retention_age_ms == 3_600_000
        await client.publish("lab/a", b"x", ack=True)
        assert (await client.stream("lab")).records == 1
        names = {s.name for s in await client.streams()}
        assert names >= {"default", "lab"}
        info = await client.update_stream("lab", subjects=["lab/#", "lab2/#"], retention_bytes=1 << 20)
        assert info.subjects == ["lab/#", "lab2/#"] and info.retention_bytes == 1 << 20
        info = await client.purge_stream("lab")
        assert info.records == 0 and info.next_offset == 1
        await client.delete_stream("lab")
        with pytest.raises(fogline.UnknownStreamError) as e:
            await client.stream("lab")
        assert e.value.code == ErrorCode.UNKNOWN_STREAM == 8


@aio
async def test_protocol_errors_carry_their_codes(server: Server) -> None:
    errors = []
    async with fogline.connect(server.address, error_cb=errors.append) as client:
        with pytest.raises(fogline.InvalidTopicError) as e:
            await client.publish("bad/#", b"x", ack=True)
        assert e.value.code == ErrorCode.INVALID_TOPIC == 6
        with pytest.raises(fogline.InvalidFilterError) as f:
            await client.subscribe("a/#/b")
        assert f.value.code == 7
        with pytest.raises(fogline.UnknownStreamError):
            await client.consumer("no-such-stream")
        with pytest.raises(fogline.InvalidError) as n:
            await client.consumer("default", ".bad name")
        assert n.value.code == ErrorCode.INVALID_NAME
        with pytest.raises(fogline.DuplicateError):
            await client.create_stream("default", ["x"])
        with pytest.raises(fogline.MessageTooLargeError) as m:
            await client.publish("big", b"x" * (client.max_message + 1), ack=True)
        assert m.value.code == 4
        with pytest.raises(fogline.InvalidError) as q:
            await client.query("k=v")  # this node has no store
        assert q.value.code == ErrorCode.INVALID
        # Without ack, the error goes to error_cb and the next flush.
        await client.publish("bad/+", b"x")
        with pytest.raises(fogline.InvalidTopicError):
            await client.flush()
        assert errors and errors[0].code == 6
        await client.flush()  # reported once
        assert client.is_connected


@aio
async def test_profiles_interest_and_announce(server: Server) -> None:
    async with fogline.connect(server.address) as producer, fogline.connect(server.address) as consumer:
        ann = await producer.announce("site/nj/lidar", "type=drone sensor=lidar")
        assert not ann.interested
        sub = await consumer.subscribe("site/#", interest="sensor=li*")
        await ann.wait_interested(True, timeout=5)
        await producer.publish("site/nj/lidar", b"hit", headers={"type": "drone", "sensor": "lidar"})
        await producer.publish("site/nj/lidar", b"miss", headers={"sensor": "radar"})
        await producer.flush()
        msg = await sub.next(5)
        assert msg.payload == b"hit" and msg.headers["sensor"] == "lidar"
        with pytest.raises(fogline.TimeoutError):
            await sub.next(0.3)
        await sub.unsubscribe()
        await ann.wait_interested(False, timeout=5)
        await ann.withdraw()
        with pytest.raises(fogline.InvalidError):
            await consumer.subscribe("site/#", interest="@x/y")


@aio
async def test_closed_client_refuses_calls(server: Server) -> None:
    client = await fogline.connect(server.address)
    sub = await client.subscribe("x")
    await client.close()
    assert not client.is_connected
    with pytest.raises(fogline.ConnectionClosedError):
        await client.publish("x", b"1")
    with pytest.raises(StopAsyncIteration):
        await sub.next(1)


@aio
async def test_connect_failure_is_not_retried() -> None:
    from conftest import free_port

    with pytest.raises(OSError):
        await fogline.connect(f"127.0.0.1:{free_port()}", connect_timeout=2)


@aio
async def test_keepalive_pings_keep_a_live_connection(server: Server) -> None:
    async with fogline.connect(server.address, keepalive=0.05) as client:
        await asyncio.sleep(0.5)
        assert client.is_connected
        await client.publish("k", b"1", ack=True)


@aio
async def test_keepalive_drops_a_silent_link_and_reconnects(server: Server) -> None:
    lost = asyncio.Event()
    async with fogline.connect(
        server.address, keepalive=0.2, disconnected_cb=lambda exc: lost.set()
    ) as client:
        # Stop the server process (SIGSTOP): the socket stays open, nothing answers.
        import signal

        assert server.proc is not None
        server.proc.send_signal(signal.SIGSTOP)
        try:
            await asyncio.wait_for(lost.wait(), 10)
        finally:
            server.proc.send_signal(signal.SIGCONT)
        await client.wait_connected(timeout=20)
        await client.publish("k", b"after", ack=True)


@aio
async def test_consumer_of_a_deleted_stream_gets_its_error_code(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        await client.create_stream("gone", ["gone/#"])
        c = await client.consumer("gone", "w")
        await client.delete_stream("gone")
        with pytest.raises(fogline.UnknownStreamError) as e:
            for _ in range(5):
                await c.fetch(10, timeout=0.5)
        assert e.value.code == ErrorCode.UNKNOWN_STREAM


@aio
async def test_large_records_get_frames_of_their_own(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        big = b"b" * (client.max_message - 64)
        sub = await client.subscribe("big/#", capacity=8)
        futures = []
        for i in range(3):
            futures.append(await client.publish_async("big/x", b"small-%d" % i))
            futures.append(await client.publish_async("big/x", big))
        await asyncio.gather(*futures)
        got = []
        while len(got) < 6:
            got.append(await sub.next(10))
        assert [len(m.payload) for m in got] == [7, len(big)] * 3
