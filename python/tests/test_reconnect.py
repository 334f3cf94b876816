"""Reconnecting across server restarts, and no acknowledged record lost to kill -9."""

from __future__ import annotations

import asyncio
import time
from typing import List, Set

import fogline
from conftest import Server, aio


@aio
async def test_reconnect_after_restart_resubscribes_and_reopens(server: Server) -> None:
    events: List[str] = []
    async with fogline.connect(
        server.address,
        reconnected_cb=lambda: events.append("up"),
        disconnected_cb=lambda exc: events.append("down"),
    ) as client:
        sub = await client.subscribe("live/#")
        await client.publish("jobs/a", b"0", ack=True)
        worker = await client.consumer("default", "w", filter="jobs/#", ack_timeout=30)
        first = await worker.fetch(10, timeout=2)
        assert [m.payload for m in first] == [b"0"]
        first[0].ack()
        await client.flush()

        await asyncio.get_running_loop().run_in_executor(None, server.restart)
        await client.wait_connected(timeout=20)
        assert events[:2] == ["down", "up"]

        # The subscription was made again: live records flow.
        for _ in range(100):
            await client.publish("live/x", b"after")
            try:
                msg = await sub.next(0.2)
                break
            except fogline.TimeoutError:
                continue
        else:
            raise AssertionError("no live record after the restart")
        assert msg.payload == b"after"

        # The durable consumer resumed after its acked record.
        await client.publish("jobs/a", b"1", ack=True)
        got: List[bytes] = []
        for _ in range(20):
            got += [m.payload for m in await worker.fetch(10, timeout=1)]
            if got:
                break
        assert got == [b"1"]


@aio
async def test_publishes_buffered_while_reconnecting_are_sent(server: Server) -> None:
    async with fogline.connect(server.address) as client:
        await client.publish("b/x", b"before", ack=True)
        server.stop()
        for _ in range(100):
            if not client.is_connected:
                break
            await asyncio.sleep(0.02)
        assert not client.is_connected
        with_ack = await client.publish_async("b/x", b"during-acked")
        await client.publish("b/x", b"during")
        with fogline_raises(fogline.NotConnectedError):
            await client.streams()
        await asyncio.get_running_loop().run_in_executor(None, server.start)
        await client.wait_connected(timeout=20)
        await with_ack
        await client.flush()
        payloads = [m.payload async for m in client.replay("default")]
        assert payloads == [b"before", b"during-acked", b"during"]


@aio
async def test_kill9_during_acked_publishing_loses_no_acked_record(server: Server) -> None:
    acked: Set[int] = set()
    retried = [0]
    n = 60_000
    # Small frames: many acknowledged Publish frames are in flight when the server dies.
    async with fogline.connect(server.address, reconnect_max_wait=0.2, max_batch_bytes=2048) as client:

        async def publisher() -> None:
            i = 0
            pending = {}
            while i < n or pending:
                while i < n and len(pending) < 5000:
                    fut = await client.publish_async("acked/seq", i.to_bytes(4, "little"))
                    pending[i] = fut
                    i += 1
                    if i % 500 == 0:
                        await asyncio.sleep(0)  # let acks in while publishing
                done = [k for k, f in pending.items() if f.done()]
                if not done:
                    await asyncio.wait({*pending.values()}, return_when=asyncio.FIRST_COMPLETED)
                    continue
                for k in done:
                    fut = pending.pop(k)
                    if fut.exception() is None:
                        acked.add(k)
                    else:
                        # Not acknowledged (the connection was lost): publish it again
                        # once connected, at least once.
                        retried[0] += 1
                        await client.wait_connected(timeout=30)
                        pending[k] = await client.publish_async("acked/seq", k.to_bytes(4, "little"))

        acked_before_kill: Set[int] = set()

        def killer() -> None:
            # In a thread, so the kill lands while the event loop is publishing.
            while len(acked) < n // 3:
                time.sleep(0.001)
            server.kill9()
            acked_before_kill.update(acked)
            time.sleep(0.3)
            server.start()

        task = asyncio.ensure_future(publisher())
        await asyncio.get_running_loop().run_in_executor(None, killer)
        await asyncio.wait_for(task, 90)
        assert len(acked) == n
        assert retried[0] > 0, "the kill cut no acknowledged publish in flight"

        stored = set()
        async for m in client.replay("default"):
            stored.add(int.from_bytes(m.payload, "little"))
        assert acked_before_kill <= stored
        assert acked <= stored  # every acknowledged record survived, some maybe twice


class fogline_raises:
    def __init__(self, exc: type) -> None:
        self.exc = exc

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: type, value: BaseException, tb: object) -> bool:
        assert typ is not None and issubclass(typ, self.exc), f"expected {self.exc}, got {typ}"
        return True
