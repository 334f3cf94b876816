"""The synchronous client: the same :class:`fogline.Client` run on an event loop in a
background thread (as redis-py offers ``redis.Redis`` beside ``redis.asyncio``)::

    from fogline.sync import connect

    with connect("127.0.0.1:7766") as client:
        client.publish("site/r1/temp", b"21.5")
        with client.subscribe("site/#") as sub:
            for msg in sub:
                print(msg.topic, msg.payload)

Fire-and-forget publishes do not cross to the loop thread one by one: they are queued
here and handed over in batches, one thread hop per batch.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from typing import Any, Coroutine, Iterator, List, Optional, Tuple, TypeVar

from .client import Client, Headers, Payload
from .consumer import Consumer
from .errors import TimeoutError
from .message import ConsumerInfo, Message, QueryPage, StreamInfo
from .subscription import Subscription

__all__ = ["SyncClient", "SyncSubscription", "SyncConsumer", "connect"]

R = TypeVar("R")
_Item = Tuple[str, Payload, Optional[Headers], bool, int, Optional[concurrent.futures.Future]]


class SyncClient:
    """A blocking client; every method is the :class:`fogline.Client` one, waited for.
    Use :func:`connect` to make one."""

    def __init__(self, address: str = "127.0.0.1:7766", **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fogline", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._queue: List[_Item] = []
        self._scheduled = False
        self._max_queue = 65536

        async def make() -> Client:
            # Made on the loop's thread: Python 3.9's asyncio objects bind to the
            # loop of the thread that creates them.
            return await Client(address, **options).connect()

        try:
            self._client = self._run(make())
        except BaseException:
            self._stop_loop()
            raise

    @property
    def aio(self) -> Client:
        """The asyncio client underneath (runs on the background loop)."""
        return self._client

    def _run(self, coro: Coroutine[Any, Any, R], timeout: Optional[float] = None) -> R:
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise TimeoutError("timed out") from None

    # ------------------------------------------------------------ publishing

    def _enqueue(self, item: _Item) -> None:
        with self._lock:
            self._queue.append(item)
            schedule = not self._scheduled
            self._scheduled = True
            full = len(self._queue) >= self._max_queue
        if schedule:
            self._loop.call_soon_threadsafe(self._drain)
        if full:
            self._run(self._settle())

    def _drain(self) -> None:
        with self._lock:
            items, self._queue = self._queue, []
            self._scheduled = False
        append = self._client._append
        for topic, payload, headers, priority, ts, cf in items:
            try:
                fut = append(topic, payload, headers, priority, cf is not None, ts)
            except Exception as e:
                if cf is not None:
                    cf.set_exception(e)
                continue
            if cf is not None and fut is not None:
                fut.add_done_callback(functools.partial(_copy, dst=cf))

    async def _settle(self) -> None:
        self._drain()
        await self._client._wait_writable()

    def publish(
        self,
        topic: str,
        payload: Payload = b"",
        *,
        headers: Optional[Headers] = None,
        ack: bool = False,
        priority: bool = False,
        timestamp: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> None:
        """As :meth:`fogline.Client.publish`: with ``ack`` returns once stored."""
        cf = self.publish_async(topic, payload, headers=headers, priority=priority, timestamp=timestamp) if ack else None
        if cf is None:
            self._enqueue((topic, payload, headers, priority, timestamp or 0, None))
            return
        try:
            cf.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError("no acknowledgement") from None

    def publish_async(
        self,
        topic: str,
        payload: Payload = b"",
        *,
        headers: Optional[Headers] = None,
        priority: bool = False,
        timestamp: Optional[int] = None,
    ) -> "concurrent.futures.Future[int]":
        """Pipelined acknowledged publishing: a ``concurrent.futures.Future`` that is
        done once the record is stored."""
        cf: concurrent.futures.Future = concurrent.futures.Future()
        self._enqueue((topic, payload, headers, priority, timestamp or 0, cf))
        return cf

    def flush(self, timeout: Optional[float] = None) -> None:
        """As :meth:`fogline.Client.flush`."""

        async def run() -> None:
            self._drain()
            await self._client.flush(timeout)

        self._run(run())

    def ping(self) -> float:
        """Round-trip time in seconds."""
        return self._run(self._client.ping())

    # ------------------------------------------------------------ reading

    def subscribe(
        self,
        filter: str,
        *,
        priority: bool = False,
        interest: Optional[str] = None,
        capacity: int = 65536,
    ) -> "SyncSubscription":
        """As :meth:`fogline.Client.subscribe`; iterate the result."""
        sub = self._run(
            self._client.subscribe(filter, priority=priority, interest=interest, capacity=capacity)
        )
        return SyncSubscription(self, sub)

    def consumer(self, stream: str = "default", name: str = "", **options: Any) -> "SyncConsumer":
        """As :meth:`fogline.Client.consumer`."""
        return SyncConsumer(self, self._run(self._client.consumer(stream, name, **options)))

    def replay(self, stream: str = "default", **options: Any) -> Iterator[Message]:
        """As :meth:`fogline.Client.replay`, as a plain iterator."""
        gen = self._client.replay(stream, **options)

        async def take(n: int) -> List[Message]:
            out: List[Message] = []
            try:
                while len(out) < n:
                    out.append(await gen.__anext__())
            except StopAsyncIteration:
                pass
            return out

        try:
            while True:
                batch = self._run(take(1000))
                yield from batch
                if len(batch) < 1000:
                    return
        finally:
            self._run(gen.aclose())

    # ------------------------------------------------------------ management

    def streams(self) -> List[StreamInfo]:
        return self._run(self._client.streams())

    def stream(self, name: str) -> StreamInfo:
        return self._run(self._client.stream(name))

    def create_stream(self, name: str, subjects: Any = (), **options: Any) -> StreamInfo:
        return self._run(self._client.create_stream(name, subjects, **options))

    def update_stream(self, name: str, **options: Any) -> StreamInfo:
        return self._run(self._client.update_stream(name, **options))

    def purge_stream(self, name: str) -> StreamInfo:
        return self._run(self._client.purge_stream(name))

    def delete_stream(self, name: str) -> None:
        self._run(self._client.delete_stream(name))

    def consumers(self, stream: str = "", name: str = "") -> List[ConsumerInfo]:
        return self._run(self._client.consumers(stream, name))

    def delete_consumer(self, stream: str, name: str) -> None:
        self._run(self._client.delete_consumer(stream, name))

    def query(self, interest: str = "", **options: Any) -> QueryPage:
        return self._run(self._client.query(interest, **options))

    # ------------------------------------------------------------ lifecycle

    @property
    def is_connected(self) -> bool:
        return self._client.is_connected

    def close(self) -> None:
        """Flushes, closes the connection and stops the background loop."""
        if not self._loop.is_running():
            return
        try:
            self._run(self._settle())
            self._run(self._client.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SyncSubscription:
    """A blocking iterator of a live subscription's messages."""

    def __init__(self, client: SyncClient, sub: Subscription) -> None:
        self._client = client
        self._sub = sub
        self._buf: List[Message] = []

    @property
    def dropped(self) -> int:
        return self._sub.dropped

    def next(self, timeout: Optional[float] = None) -> Message:
        """The next message (:class:`fogline.TimeoutError` after ``timeout``)."""
        if not self._buf:
            batch = self._client._run(self._sub.next_batch(timeout))
            if not batch:
                if self._sub._done:
                    raise StopIteration
                raise TimeoutError("no message")
            self._buf = batch[::-1]
        return self._buf.pop()

    def __iter__(self) -> "SyncSubscription":
        return self

    def __next__(self) -> Message:
        while True:
            try:
                return self.next(1.0)
            except TimeoutError:
                continue

    def unsubscribe(self) -> None:
        self._client._run(self._sub.unsubscribe())

    def __enter__(self) -> "SyncSubscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unsubscribe()


class SyncConsumer:
    """A blocking :class:`fogline.Consumer`."""

    def __init__(self, client: SyncClient, consumer: Consumer) -> None:
        self._client = client
        self._consumer = consumer

    @property
    def next_offset(self) -> int:
        return self._consumer.next_offset

    def fetch(self, n: int = 100, timeout: float = 1.0) -> List[Message]:
        return self._client._run(self._consumer.fetch(n, timeout))

    def ack(self, *offsets: Any) -> None:
        self._consumer.ack(*offsets)

    def close(self) -> None:
        self._client._run(self._consumer.close())

    def __enter__(self) -> "SyncConsumer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _copy(src: asyncio.Future, dst: concurrent.futures.Future) -> None:
    if dst.done():
        return
    if src.cancelled():
        dst.cancel()
    elif src.exception() is not None:
        dst.set_exception(src.exception())
    else:
        dst.set_result(src.result())


def connect(address: str = "127.0.0.1:7766", **options: Any) -> SyncClient:
    """A connected :class:`SyncClient` (options as :func:`fogline.connect`)."""
    return SyncClient(address, **options)

