"""The asyncio client: one :class:`Client` is one connection to a fogline server.

Shape (see python/README.md for the why):

- the connection is an ``asyncio.Protocol``: bytes arrive in :meth:`_Wire.data_received`
  and frames are dispatched from there, without a reader task;
- :meth:`Client.publish` appends an encoded record to the open batch of its topic and
  priority and returns; the batches are written as Publish frames at the end of the
  event loop's current iteration (so nothing waits to fill a batch), or at once when a
  batch reaches ``max_batch_bytes``. A batch that holds an acknowledged record gets a
  request id and a future that its PubAck resolves;
- request ids come from 2^32 upwards and subscription ids from 2^31 upwards, as the Rust
  client draws them, so they never collide with server-assigned consumer ids;
- after a lost connection the client reconnects with backoff, subscribes again, opens
  its consumers again (a durable one resumes from its acked position) and announces
  again; records published meanwhile are buffered (within ``max_buffered_bytes``) and
  sent after, acknowledged ones still in flight fail with ``ConnectionClosedError``.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import itertools
import logging
import ssl as _ssl
import struct
import time
from typing import (
    Any,
    AsyncGenerator,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _codec
from ._codec import Frame, MalformedFrame
from .consumer import Consumer, start_position
from .errors import (
    BadCredentialsError,
    ConnectionClosedError,
    FoglineError,
    NotConnectedError,
    ProtocolError,
    TimeoutError,
    server_error,
)
from .manage import Management
from .message import Message
from .subscription import Announcement, Subscription

__all__ = ["Client", "connect", "Headers", "Payload"]

log = logging.getLogger("fogline")

Payload = Union[bytes, bytearray, memoryview, str]
Headers = Union[Mapping[str, Union[str, bytes]], Sequence[Tuple[str, Union[str, bytes]]]]

_U32 = struct.Struct("<I")
_HEAD = struct.Struct("<IB")
_REC_EMPTY = struct.Struct("<QII")
_REC_HEAD = struct.Struct("<QI")
_PUB_HEAD = struct.Struct("<IBQBH")
_U64_MAX = 2**64 - 1

_DISCONNECTED, _CONNECTING, _CONNECTED, _CLOSED = range(4)


def _now_us() -> int:
    return time.time_ns() // 1000


def _payload_bytes(payload: Payload) -> bytes:
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return bytes(payload)


class _Batch:
    """Records of one topic and priority waiting to become one Publish frame."""

    __slots__ = ("topic", "flags", "parts", "count", "size", "limit", "future")

    def __init__(self, topic: bytes, flags: int, max_frame: int) -> None:
        self.topic = topic
        self.flags = flags
        # Most record bytes the frame may hold within the server's max_frame.
        self.limit = max_frame - len(topic) - 64
        self.parts: List[bytes] = []
        self.count = 0
        self.size = 0
        self.future: Optional[asyncio.Future] = None


class _Wire(asyncio.Protocol):
    """Bytes in and out of one connection; frames go to the client."""

    def __init__(self, client: "Client") -> None:
        self.client = client
        self.buf = bytearray()
        self.transport: Optional[asyncio.Transport] = None
        self.lost: Optional[asyncio.Future] = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.lost = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        if buf:
            buf += data
            if len(buf) < 4 or len(buf) < 4 + _U32.unpack_from(buf, 0)[0]:
                return  # the frame is not whole yet: no copy until it is
            data = bytes(buf)
            buf.clear()
        pos, end = 0, len(data)
        client = self.client
        try:
            while end - pos >= 5:
                (length,) = _U32.unpack_from(data, pos)
                if length == 0 or length > client._max_frame_in:
                    raise MalformedFrame(f"bad frame length {length}")
                if end - pos - 4 < length:
                    break
                kind = data[pos + 4]
                client._dispatch(self, kind, data[pos + 5 : pos + 4 + length])
                pos += 4 + length
        except (MalformedFrame, KeyError, struct.error) as e:
            log.error("fogline: bad frame from server: %s", e)
            client._protocol_failure = ProtocolError(f"bad frame from server: {e}")
            if self.transport is not None:
                self.transport.abort()
            return
        if pos < end:
            buf += data[pos:]

    def connection_lost(self, exc: Optional[Exception]) -> None:
        if self.lost is not None and not self.lost.done():
            self.lost.set_result(exc)
        self.client._on_lost(self, exc)

    def pause_writing(self) -> None:
        self.client._set_writable(False)

    def resume_writing(self) -> None:
        self.client._set_writable(True)


class Client(Management):
    """A connection to a fogline server. Create it with :func:`connect`.

    Use it as an async context manager (``async with fogline.connect(...) as nc``) or
    call :meth:`close` at the end. One client serves any number of tasks.
    """

    def __init__(
        self,
        address: str = "127.0.0.1:7766",
        *,
        name: str = "fogline-py",
        user: Optional[str] = None,
        password: Optional[str] = None,
        tls: Union[None, bool, _ssl.SSLContext] = None,
        tls_hostname: Optional[str] = None,
        reconnect: bool = True,
        reconnect_wait: float = 0.05,
        reconnect_max_wait: float = 2.0,
        max_reconnect_attempts: Optional[int] = None,
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        max_batch_bytes: int = 256 << 10,
        max_buffered_bytes: int = 16 << 20,
        keepalive: Optional[float] = 30.0,
        error_cb: Optional[Callable[[Exception], Any]] = None,
        reconnected_cb: Optional[Callable[[], Any]] = None,
        disconnected_cb: Optional[Callable[[Optional[Exception]], Any]] = None,
    ) -> None:
        self.address = address
        self.name = name
        self._user = user
        self._password = password
        if password is not None and user is None:
            raise ValueError("a password needs a user")
        self._tls = tls
        self._tls_hostname = tls_hostname
        self.reconnect = reconnect
        self.reconnect_wait = reconnect_wait
        self.reconnect_max_wait = reconnect_max_wait
        self.max_reconnect_attempts = max_reconnect_attempts
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.max_batch_bytes = max_batch_bytes
        self.max_buffered_bytes = max_buffered_bytes
        self.keepalive = keepalive
        self._keepalive_task: Optional[asyncio.Task] = None
        self._error_cb = error_cb
        self._reconnected_cb = reconnected_cb
        self._disconnected_cb = disconnected_cb

        self.server_name = ""
        self.max_message = 1 << 20
        self._max_frame_out = 4 << 20
        self._max_frame_in = 64 << 20
        self._state = _DISCONNECTED
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._wire: Optional[_Wire] = None
        self._transport: Optional[asyncio.Transport] = None
        self._writable = asyncio.Event()
        self._writable.set()
        # Mirrors _writable for the hot path (an attribute read, not a method call).
        self._can_write = True
        self._connected = asyncio.Event()
        # Open batches by topic (bulk) or (topic, 1) (high priority).
        self._batches: Dict[Union[str, Tuple[str, int]], _Batch] = {}
        self._flush_scheduled = False
        # Frames finished while disconnected: (bytes, acked request id or 0).
        self._pending_out: List[bytes] = []
        self._pending_bytes = 0
        self._acks: Dict[int, asyncio.Future] = {}
        self._requests: Dict[int, asyncio.Future] = {}
        self._subs: Dict[int, Subscription] = {}
        self._consumers: Dict[int, Consumer] = {}  # by server consumer id
        self._all_consumers: List[Consumer] = []
        self._announces: Dict[int, Announcement] = {}
        self._request_ids = itertools.count(1 << 32)
        self._sub_ids = itertools.count(1 << 31)
        self._async_error: Optional[Exception] = None
        self._protocol_failure: Optional[Exception] = None
        self._reconnect_task: Optional[asyncio.Task] = None
        self._handshake: Optional[asyncio.Future] = None
        self._epoch = 0

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> "Client":
        """Connects and completes the handshake. The first connection is not retried.

        Raises ``OSError`` when the server cannot be reached, :class:`TimeoutError`,
        or :class:`ServerError` when the server refuses the Hello."""
        self._loop = asyncio.get_running_loop()
        self._writable = asyncio.Event()
        self._set_writable(True)
        self._connected = asyncio.Event()
        await self._open()
        self._connected.set()
        return self

    async def __aenter__(self) -> "Client":
        if self._state != _CONNECTED:
            await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __await__(self):  # type: ignore[no-untyped-def]
        return self.__aenter__().__await__()

    @property
    def is_connected(self) -> bool:
        """Whether the connection is up right now."""
        return self._state == _CONNECTED

    async def _open(self) -> None:
        loop = self._loop
        assert loop is not None
        self._state = _CONNECTING
        wire = _Wire(self)
        address = self.address
        if address.startswith("tcp://"):
            address = address[6:]
        ssl_ctx: Optional[_ssl.SSLContext] = None
        if self._tls is True:
            ssl_ctx = _ssl.create_default_context()
        elif isinstance(self._tls, _ssl.SSLContext):
            ssl_ctx = self._tls
        try:
            if address.startswith("unix:"):
                coro = loop.create_unix_connection(lambda: wire, address[5:], ssl=ssl_ctx)
            else:
                host, _, port = address.rpartition(":")
                host = host.strip("[]")
                hostname = self._tls_hostname or host if ssl_ctx else None
                coro = loop.create_connection(
                    lambda: wire, host, int(port), ssl=ssl_ctx, server_hostname=hostname
                )
            transport, _ = await asyncio.wait_for(coro, self.connect_timeout)
            self._handshake = loop.create_future()
            hello: Dict[str, Any] = {"version": 1, "client_name": self.name}
            if self._user is not None:
                hello["username"] = self._user
                hello["password"] = self._password if self._password is not None else ""
            transport.write(_codec.encode(Frame("Hello", **hello)))
            try:
                ok = await asyncio.wait_for(self._handshake, self.connect_timeout)
            except asyncio.TimeoutError:
                transport.abort()
                raise TimeoutError("no HelloOk from the server") from None
            except BaseException:
                transport.abort()
                raise
        except BaseException:
            self._state = _DISCONNECTED
            raise
        self.server_name = ok["server_name"]
        self.max_message = ok["max_message"]
        self._max_frame_out = ok["max_frame"]
        self._max_frame_in = max(self._max_frame_in, ok["max_frame"] + 4096)
        self._wire = wire
        # The send buffer's bound is max_buffered_bytes: asyncio's default high-water
        # mark (64 KiB) would pause publishers after every 256 KiB frame.
        transport.set_write_buffer_limits(high=self.max_buffered_bytes)  # type: ignore[attr-defined]
        self._transport = transport  # type: ignore[assignment]
        self._epoch += 1
        self._state = _CONNECTED
        self._protocol_failure = None
        self._set_writable(True)
        if self.keepalive:
            self._keepalive_task = asyncio.ensure_future(self._keepalive_loop(wire))

    async def _keepalive_loop(self, wire: _Wire) -> None:
        """Pings every ``keepalive`` seconds; a Pong that does not come within as long
        means a dead link (or server): the connection is dropped and reconnecting starts."""
        assert self.keepalive
        while True:
            await asyncio.sleep(self.keepalive)
            if self._wire is not wire or self._state != _CONNECTED:
                return
            try:
                rid = next(self._request_ids)
                await self._call(rid, Frame("Ping", nonce=rid), self.keepalive)
            except TimeoutError:
                log.warning("fogline: no Pong within %.1f s: dropping the connection", self.keepalive)
                if wire.transport is not None:
                    wire.transport.abort()
                return
            except FoglineError:
                return

    async def close(self) -> None:
        """Writes what is buffered, waits for outstanding acknowledgements, then closes.
        Subscriptions end and later calls raise :class:`ConnectionClosedError`."""
        if self._state == _CLOSED:
            return
        try:
            if self._state == _CONNECTED:
                await asyncio.wait_for(self.flush(), self.request_timeout)
        except (FoglineError, asyncio.TimeoutError):
            pass
        finally:
            self._state = _CLOSED
            if self._reconnect_task is not None:
                self._reconnect_task.cancel()
            if self._keepalive_task is not None:
                self._keepalive_task.cancel()
            transport = self._transport
            if transport is not None:
                transport.close()
                wire = self._wire
                if wire is not None and wire.lost is not None:
                    try:
                        await asyncio.wait_for(asyncio.shield(wire.lost), 2.0)
                    except (asyncio.TimeoutError, Exception):
                        transport.abort()
            self._fail_all(ConnectionClosedError("client closed"))
            for sub in list(self._subs.values()):
                sub._end(None)
            for c in self._all_consumers:
                c._fail(ConnectionClosedError("client closed"))
            self._connected.set()  # wake waiters; they see the state

    # ------------------------------------------------------------------ writing

    def _write(self, data: bytes) -> None:
        if self._state == _CONNECTED and self._transport is not None:
            self._transport.write(data)
        elif self._state == _CLOSED:
            raise ConnectionClosedError("client closed")
        else:
            self._pending_out.append(data)
            self._pending_bytes += len(data)
            # Buffering while reconnecting: publishers may go on up to the bound.
            self._set_writable(self._pending_bytes < self.max_buffered_bytes)

    def _set_writable(self, writable: bool) -> None:
        self._can_write = writable
        if writable:
            self._writable.set()
        else:
            self._writable.clear()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._flush_batches)

    def _flush_batches(self) -> None:
        self._flush_scheduled = False
        batches = self._batches
        if not batches:
            return
        self._batches = {}
        for b in batches.values():
            self._finish(b)

    def _finish(self, b: _Batch) -> None:
        rid = 0
        if b.future is not None:
            rid = next(self._request_ids)
            self._acks[rid] = b.future
        length = 16 + len(b.topic) + b.size
        head = _PUB_HEAD.pack(length, 0x10, rid, b.flags, len(b.topic)) + b.topic
        self._write(b"".join((head, _U32.pack(b.count), *b.parts)))

    def _append(
        self,
        topic: str,
        payload: Payload,
        headers: Optional[Headers],
        priority: bool,
        ack: bool,
        timestamp: int,
    ) -> Optional[asyncio.Future]:
        if self._state == _CLOSED:
            raise ConnectionClosedError("client closed")
        if type(payload) is not bytes:
            payload = _payload_bytes(payload)
        flags = 1 if priority else 0
        key: Union[str, Tuple[str, int]] = (topic, 1) if priority else topic
        block = _codec.encode_headers(headers) if headers else b""
        size = 16 + len(block) + len(payload)
        b = self._batches.get(key)
        if b is not None and b.size + size > b.limit:
            # The record would make the frame too large for the server: seal it first.
            del self._batches[key]
            self._finish(b)
            b = None
        if b is None:
            b = _Batch(topic.encode("utf-8"), flags, self._max_frame_out)
            self._batches[key] = b
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self._loop.call_soon(self._flush_batches)  # type: ignore[union-attr]
        if block:
            b.parts.append(_REC_HEAD.pack(timestamp, len(block)))
            b.parts.append(block)
            b.parts.append(_U32.pack(len(payload)))
        else:
            b.parts.append(_REC_EMPTY.pack(timestamp, 0, len(payload)))
        b.parts.append(payload)  # type: ignore[arg-type]
        b.count += 1
        b.size += size
        fut = None
        if ack:
            fut = b.future
            if fut is None:
                fut = b.future = self._loop.create_future()  # type: ignore[union-attr]
        if b.size >= self.max_batch_bytes:
            del self._batches[key]
            self._finish(b)
        return fut

    # ------------------------------------------------------------------ publishing

    async def publish(
        self,
        topic: str,
        payload: Payload = b"",
        *,
        headers: Optional[Headers] = None,
        ack: bool = False,
        priority: bool = False,
        timestamp: Optional[Union[int, float, _dt.datetime]] = None,
    ) -> None:
        """Publishes one record on ``topic``.

        Records are batched under the hood: this returns as soon as the record is in
        the batch of its topic (``ack=False``), or once the server has stored it
        (``ack=True``; :class:`ServerError` if it refused, for instance
        ``InvalidTopicError``; :class:`ConnectionClosedError` if the connection was lost
        first: the record may or may not be stored). Waits while the send buffer is
        full. ``headers`` is the record's data profile (str -> str | bytes);
        ``priority`` sends it ahead of bulk traffic; ``timestamp`` (microseconds since
        the epoch, or a datetime) defaults to the server's receive time.

        Errors of records published without ``ack`` are reported to ``error_cb`` and
        raised by the next :meth:`flush`.
        """
        if headers is None and timestamp is None and not ack and not priority and type(payload) is bytes:
            # The hot path: a plain record for a topic whose batch is open.
            b = self._batches.get(topic)
            if b is not None:
                n = len(payload) + 16
                if b.size + n <= b.limit:
                    b.parts += (_REC_EMPTY.pack(0, 0, n - 16), payload)
                    b.count += 1
                    size = b.size = b.size + n
                    if size >= self.max_batch_bytes:
                        del self._batches[topic]
                        self._finish(b)
                    if not self._can_write:
                        await self._wait_writable()
                    return
        ts = 0 if timestamp is None else _timestamp_us(timestamp)
        fut = self._append(topic, payload, headers, priority, ack, ts)
        if fut is not None:
            await asyncio.shield(fut)
        elif not self._can_write:
            await self._wait_writable()

    async def publish_async(
        self,
        topic: str,
        payload: Payload = b"",
        *,
        headers: Optional[Headers] = None,
        priority: bool = False,
        timestamp: Optional[Union[int, float, _dt.datetime]] = None,
    ) -> "asyncio.Future[int]":
        """Pipelined acknowledged publishing: queues the record and returns a future that
        resolves (to the count of its batch) once the server has stored it, or raises as
        ``publish(ack=True)`` does. Records of one batch share their future. The await
        itself only waits while the send buffer is full."""
        if headers is None and timestamp is None and not priority and type(payload) is bytes:
            # The hot path: a plain record for a topic whose acked batch is open.
            b = self._batches.get(topic)
            if b is not None and b.future is not None:
                n = len(payload) + 16
                if b.size + n <= b.limit:
                    b.parts += (_REC_EMPTY.pack(0, 0, n - 16), payload)
                    b.count += 1
                    size = b.size = b.size + n
                    fut = b.future
                    if size >= self.max_batch_bytes:
                        del self._batches[topic]
                        self._finish(b)
                    if not self._can_write:
                        await self._wait_writable()
                    return fut
        ts = 0 if timestamp is None else _timestamp_us(timestamp)
        acked = self._append(topic, payload, headers, priority, True, ts)
        assert acked is not None
        if not self._can_write:
            await self._wait_writable()
        return acked

    async def publish_many(
        self,
        topic: str,
        payloads: Iterable[Payload],
        *,
        headers: Optional[Headers] = None,
        ack: bool = False,
        priority: bool = False,
    ) -> int:
        """Publishes every payload of ``payloads`` on ``topic`` (same headers); with
        ``ack`` waits until all are stored. Returns how many were published."""
        n = 0
        futures: List[asyncio.Future] = []
        for payload in payloads:
            fut = self._append(topic, payload, headers, priority, ack, 0)
            if fut is not None and (not futures or futures[-1] is not fut):
                futures.append(fut)
            n += 1
            if not self._can_write:
                await self._wait_writable()
        if futures:
            await asyncio.gather(*futures)
        return n

    async def _wait_writable(self) -> None:
        while not self._writable.is_set():
            if self._state == _CLOSED:
                raise ConnectionClosedError("client closed")
            await self._writable.wait()

    async def flush(self, timeout: Optional[float] = None) -> None:
        """Writes every buffered record and waits until every acknowledged one published
        so far is answered and the server has read everything sent before (a Ping).
        Raises the first error of records published without ``ack`` since the last
        flush, or :class:`ConnectionClosedError` when the connection was lost meanwhile.
        """

        async def run() -> None:
            self._flush_batches()
            acks = list(self._acks.values())
            if acks:
                await asyncio.gather(*acks, return_exceptions=True)
            await self.ping()
            err, self._async_error = self._async_error, None
            if err is not None:
                raise err

        await asyncio.wait_for(run(), timeout if timeout is not None else self.request_timeout)

    async def ping(self) -> float:
        """Round-trip time of a Ping, in seconds."""
        rid = next(self._request_ids)
        start = time.perf_counter()
        await self._call(rid, Frame("Ping", nonce=rid))
        return time.perf_counter() - start

    # ------------------------------------------------------------------ requests

    async def _call(self, rid: int, frame: Frame, timeout: Optional[float] = None) -> Frame:
        if self._state == _CLOSED:
            raise ConnectionClosedError("client closed")
        if self._state != _CONNECTED:
            raise NotConnectedError("reconnecting")
        self._flush_batches()  # requests see what was published before them
        fut = self._loop.create_future()  # type: ignore[union-attr]
        self._requests[rid] = fut
        try:
            self._write(_codec.encode(frame))
            return await asyncio.wait_for(
                fut, timeout if timeout is not None else self.request_timeout
            )
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer to {frame.name}") from None
        finally:
            self._requests.pop(rid, None)

    async def _request(self, kind_name: str, expect: str, /, **fields: Any) -> Frame:
        rid = next(self._request_ids)
        reply = await self._call(rid, Frame(kind_name, request_id=rid, **fields))
        if reply.name != expect:
            raise ProtocolError(f"{kind_name} answered by {reply.name}")
        return reply

    # ------------------------------------------------------------------ subscribing

    async def subscribe(
        self,
        filter: str,
        *,
        priority: bool = False,
        interest: Optional[str] = None,
        capacity: int = 65536,
        cb: Optional[Callable[[Message], Any]] = None,
    ) -> Subscription:
        """Subscribes to live records whose topic matches ``filter`` (MQTT wildcards).

        Returns a :class:`Subscription`: an async iterator of :class:`Message` (or, with
        ``cb``, every message is handed to ``cb``, a function or coroutine function).
        ``priority`` asks for the high-priority path; ``interest`` keeps only records
        whose data profile satisfies it (``"sensor=li* alt=100..500"``). Beyond
        ``capacity`` buffered messages the client stops reading the connection, so the
        server's slow-consumer policy applies. Raises ``InvalidFilterError`` & co.
        """
        sid = next(self._sub_ids)
        sub = Subscription(self, sid, filter, priority, interest, capacity, cb)
        self._subs[sid] = sub
        try:
            await self._call(sid, sub._frame())
        except BaseException:
            self._subs.pop(sid, None)
            raise
        sub._confirmed = True
        return sub

    async def _unsubscribe(self, sub: Subscription) -> None:
        if self._subs.pop(sub.sid, None) is not None and self._state == _CONNECTED:
            self._write(_codec.encode(Frame("Unsubscribe", sub_id=sub.sid)))

    # ------------------------------------------------------------------ consumers

    async def consumer(
        self,
        stream: str = "default",
        name: str = "",
        *,
        filter: str = "",
        start: Union[str, int, None] = None,
        offset: Optional[int] = None,
        since: Optional[Union[_dt.datetime, float, int]] = None,
        ago: Optional[Union[_dt.timedelta, float, int]] = None,
        ack_timeout: Optional[float] = 30.0,
        max_inflight: int = 1024,
    ) -> Consumer:
        """Opens a consumer on ``stream``: durable when ``name`` is given (the server
        keeps its acked position), ephemeral otherwise.

        Where it starts: ``start`` is ``"earliest"``, ``"latest"`` or ``"resume"`` (the
        default for a durable consumer: its acked position, else the earliest), or
        ``offset=N``, ``since=datetime | epoch seconds``, ``ago=timedelta | seconds``.
        ``ack_timeout`` (seconds; ``None``: acknowledged on delivery) is when an
        unacknowledged record is delivered again; ``max_inflight`` bounds unacked
        records. Raises ``UnknownStreamError``, ``DuplicateError`` (a durable consumer
        open elsewhere), ``InvalidError``.
        """
        code, value = start_position(start, offset, since, ago, durable=bool(name))
        c = Consumer(
            self,
            stream,
            name,
            filter,
            code,
            value,
            0 if ack_timeout is None else max(1, int(ack_timeout * 1000)),
            max_inflight,
        )
        await c._open()
        self._all_consumers.append(c)
        return c

    async def replay(
        self,
        stream: str = "default",
        *,
        filter: str = "",
        offset: Optional[int] = None,
        since: Optional[Union[_dt.datetime, float, int]] = None,
        ago: Optional[Union[_dt.timedelta, float, int]] = None,
        follow: bool = False,
        batch: int = 1000,
    ) -> AsyncGenerator[Message, None]:
        """Every record of ``stream`` from an offset, a time or a duration ago (default:
        the earliest), in order; ends at the records present when it started unless
        ``follow`` (then it goes on with new ones). An ephemeral consumer that
        acknowledges on delivery does the reading."""
        info = await self.stream(stream)
        end = info.next_offset
        c = await self.consumer(
            stream,
            filter=filter,
            start=None if (offset, since, ago) != (None, None, None) else "earliest",
            offset=offset,
            since=since,
            ago=ago,
            ack_timeout=None,
        )
        try:
            while True:
                if not follow and c.next_offset >= end:
                    return
                msgs = await c.fetch(batch, timeout=0.2 if not follow else 1.0)
                if not msgs and not follow:
                    # The server answers at once while records are ready: nothing came,
                    # so nothing (matching) is left before the end.
                    return
                for m in msgs:
                    if not follow and m.offset is not None and m.offset >= end:
                        return
                    yield m
        finally:
            await c.close()

    # ------------------------------------------------------------------ dispatch

    def _dispatch(self, wire: _Wire, kind: int, body: bytes) -> None:
        if kind == 0x23:  # Deliver: the hot path
            sid, flags, bts, dropped, topic, records = _codec.decode_deliver(body)
            sub = self._subs.get(sid)
            if sub is not None:
                sub._deliver(topic, bool(flags & 1), bts, dropped, records)
            return
        if kind == 0x11:  # PubAck
            rid, count = struct.unpack_from("<QI", body)
            fut = self._acks.pop(rid, None)
            if fut is not None and not fut.done():
                fut.set_result(count)
            return
        if kind == 0x33:  # Records
            (cid,) = _U32.unpack_from(body)
            stored = _codec.decode_stored(body, 4)
            c = self._consumers.get(cid)
            if c is not None:
                c._records(stored)
            return
        frame = _codec.decode_body(kind, body)
        name = frame.name
        if name == "HelloOk":
            if self._handshake is not None and not self._handshake.done():
                self._handshake.set_result(frame.fields)
            return
        if name == "Error":
            self._on_error(frame.request_id, frame.code, frame.message)
            return
        if name == "Notice":
            ann = self._announces.get(frame.request_id)
            if ann is not None:
                ann._set(bool(frame.interested))
                if not ann._confirmed:
                    ann._confirmed = True
                    self._resolve(frame.request_id, frame)
            else:
                self._resolve(frame.request_id, frame)
            return
        if name == "Pong":
            self._resolve(frame.nonce, frame)
            return
        if name == "Ping":
            self._write(_codec.encode(Frame("Pong", nonce=frame.nonce)))
            return
        if name == "SubOk":
            self._resolve(frame.sub_id, frame)
            return
        if "request_id" in frame.fields:
            self._resolve(frame.request_id, frame)
            return
        log.debug("fogline: ignored %s", frame)

    def _resolve(self, rid: int, frame: Frame) -> None:
        fut = self._requests.get(rid)
        if fut is not None and not fut.done():
            fut.set_result(frame)

    def _on_error(self, rid: int, code: int, message: str) -> None:
        err = server_error(code, message)
        if self._handshake is not None and not self._handshake.done():
            self._handshake.set_exception(err)
            return
        fut = self._acks.pop(rid, None) or self._requests.get(rid)
        if fut is not None:
            if not fut.done():
                fut.set_exception(err)
            return
        sub = self._subs.get(rid)
        if sub is not None:
            self._subs.pop(rid, None)
            sub._end(err)
            return
        c = self._consumers.get(rid)
        if c is not None:
            c._error(err)
            return
        # A fire-and-forget publish (request id 0) or a connection-level error.
        if self._async_error is None:
            self._async_error = err
        if self._error_cb is not None:
            self._error_cb(err)
        else:
            log.warning("fogline: %s", err)

    # ------------------------------------------------------------------ loss, reconnect

    def _fail_all(self, err: Exception) -> None:
        acks, self._acks = self._acks, {}
        for fut in acks.values():
            if not fut.done():
                fut.set_exception(err)
                fut.exception()  # retrieved: nobody may be awaiting a shared future
        for fut in list(self._requests.values()):
            if not fut.done():
                fut.set_exception(err)

    def _on_lost(self, wire: _Wire, exc: Optional[Exception]) -> None:
        handshake = self._handshake
        if handshake is not None and not handshake.done():
            handshake.set_exception(
                self._protocol_failure or ConnectionClosedError(f"connection lost: {exc}")
            )
        if wire is not self._wire:
            return
        self._wire = None
        self._transport = None
        if self._state == _CLOSED:
            return
        self._connected.clear()
        self._state = _DISCONNECTED
        err = self._protocol_failure or ConnectionClosedError(f"connection lost: {exc}")
        # Acknowledged batches not yet written become frames of the next connection;
        # those written are failed below: their records may or may not be stored.
        self._fail_all(err)
        for c in self._consumers.values():
            c._lost(err)
        self._consumers.clear()
        if self._disconnected_cb is not None:
            self._disconnected_cb(exc)
        if self.reconnect:
            self._reconnect_task = asyncio.ensure_future(self._reconnect_loop())
        else:
            self._state = _CLOSED
            for sub in list(self._subs.values()):
                sub._end(err)
            for c in self._all_consumers:
                c._fail(err)
            self._connected.set()

    async def _reconnect_loop(self) -> None:
        delay = self.reconnect_wait
        attempts = 0
        while self._state != _CLOSED:
            await asyncio.sleep(delay)
            try:
                await self._open()
            except (OSError, FoglineError, asyncio.TimeoutError) as e:
                attempts += 1
                log.debug("fogline: reconnect failed: %s", e)
                # A refused login does not change by trying again: it ends the client.
                refused = isinstance(e, BadCredentialsError)
                if refused or (
                    self.max_reconnect_attempts is not None
                    and attempts >= self.max_reconnect_attempts
                ):
                    self._state = _CLOSED
                    err = ConnectionClosedError(f"gave up reconnecting: {e}")
                    for sub in list(self._subs.values()):
                        sub._end(err)
                    for c in self._all_consumers:
                        c._fail(err)
                    self._connected.set()
                    return
                delay = min(delay * 2, self.reconnect_max_wait)
                continue
            break
        if self._state != _CONNECTED:
            return
        assert self._transport is not None
        # Subscriptions, announcements first; then what was buffered meanwhile.
        for sub in self._subs.values():
            if sub._confirmed:
                self._transport.write(_codec.encode(sub._frame()))
        for ann in self._announces.values():
            self._transport.write(_codec.encode(ann._frame()))
        pending, self._pending_out = self._pending_out, []
        self._pending_bytes = 0
        for data in pending:
            self._transport.write(data)
        self._set_writable(True)
        for c in list(self._all_consumers):
            if not c._closed:
                try:
                    await c._open(reopen=True)
                except FoglineError as e:
                    log.warning("fogline: cannot re-open consumer on %s: %s", c.stream, e)
                    c._fail(e)
        self._connected.set()
        if self._reconnected_cb is not None:
            self._reconnected_cb()

    async def wait_connected(self, timeout: Optional[float] = None) -> None:
        """Waits until the client is connected (after a reconnect)."""
        await asyncio.wait_for(self._connected.wait(), timeout)
        if self._state == _CLOSED:
            raise ConnectionClosedError("client closed")


def connect(address: str = "127.0.0.1:7766", **options: Any) -> Client:
    """A :class:`Client` for ``address`` (``host:port``, ``tcp://host:port`` or
    ``unix:/path``). Use it as ``async with fogline.connect(addr) as client:`` or
    ``client = await fogline.connect(addr)``.

    Options (keywords): ``name``, ``user``/``password`` (sent in the Hello only when
    given), ``tls`` (``True`` or an ``ssl.SSLContext``), ``reconnect`` (default on),
    ``reconnect_wait``, ``reconnect_max_wait``, ``max_reconnect_attempts``,
    ``connect_timeout``, ``request_timeout``, ``max_batch_bytes``,
    ``max_buffered_bytes``, ``keepalive`` (seconds between pings; ``None``: off),
    ``error_cb``, ``reconnected_cb``, ``disconnected_cb``.
    """
    return Client(address, **options)


def _timestamp_us(t: Union[int, float, _dt.datetime]) -> int:
    """Microseconds since the epoch from a datetime, epoch seconds (float) or
    microseconds (int)."""
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.astimezone()
        return int(t.timestamp() * 1_000_000)
    if isinstance(t, float):
        return int(t * 1_000_000)
    return int(t)
