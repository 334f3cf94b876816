"""Consumers: cursors on a stream with fetch, acknowledgements and redelivery."""

from __future__ import annotations

import asyncio
import datetime as _dt
import threading
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Tuple, Union

from ._codec import Frame, encode
from .errors import ConnectionClosedError, NotConnectedError, ProtocolError, TimeoutError
from .message import Message

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["Consumer", "start_position"]

EARLIEST, LATEST, OFFSET, TIME, RESUME = range(5)
_Stored = Tuple[int, int, int, str, bytes, bytes]


def start_position(
    start: Union[str, int, None],
    offset: Optional[int],
    since: Optional[Union[_dt.datetime, float, int]],
    ago: Optional[Union[_dt.timedelta, float, int]],
    durable: bool,
) -> Tuple[int, int]:
    """The ConsumerOpen ``(start, start_value)`` of the ``consumer()`` arguments."""
    given = [x is not None for x in (start, offset, since, ago)]
    if sum(given) > 1:
        raise ValueError("give one of start, offset, since and ago")
    if offset is not None:
        return OFFSET, int(offset)
    if since is not None:
        if isinstance(since, _dt.datetime):
            if since.tzinfo is None:
                since = since.astimezone()
            return TIME, int(since.timestamp() * 1_000_000)
        return TIME, int(since * 1_000_000)
    if ago is not None:
        seconds = ago.total_seconds() if isinstance(ago, _dt.timedelta) else float(ago)
        now = _dt.datetime.now(_dt.timezone.utc).timestamp()
        return TIME, max(0, int((now - seconds) * 1_000_000))
    if start is None:
        return (RESUME if durable else EARLIEST), 0
    if isinstance(start, int):
        return OFFSET, start
    names = {"earliest": EARLIEST, "latest": LATEST, "resume": RESUME}
    if start not in names:
        raise ValueError(f"start must be one of {sorted(names)}, got {start!r}")
    return names[start], 0


class Consumer:
    """A consumer on a stream (at least once). Pull records with :meth:`fetch`,
    acknowledge them with ``msg.ack()`` or :meth:`ack`; a record not acknowledged
    within the ack timeout comes again with a higher ``delivery_count``. After a
    reconnect the consumer is opened again: a durable one resumes from its acked
    position, an ephemeral one after the last record it received.
    """

    def __init__(
        self,
        client: "Client",
        stream: str,
        name: str,
        filter: str,
        start: int,
        start_value: int,
        ack_timeout_ms: int,
        max_inflight: int,
    ) -> None:
        self._client = client
        self.stream = stream
        self.name = name
        self.filter = filter
        self._start = start
        self._start_value = start_value
        self.ack_timeout_ms = ack_timeout_ms
        self.max_inflight = max_inflight
        self.consumer_id: Optional[int] = None
        #: The offset after the last record received.
        self.next_offset = 0
        self._fetch: Optional[asyncio.Future] = None
        self._early: List[List[_Stored]] = []
        self._closed = False
        self._failure: Optional[BaseException] = None
        self._ack_buf: List[int] = []
        self._ack_scheduled = False

    async def _open(self, reopen: bool = False) -> None:
        client = self._client
        start, value = self._start, self._start_value
        if reopen:
            if self.name:
                start, value = RESUME, 0
            elif self.consumer_id is not None or self.next_offset:
                start, value = OFFSET, self.next_offset
        rid = next(client._request_ids)
        frame = Frame(
            "ConsumerOpen",
            request_id=rid,
            stream=self.stream,
            name=self.name,
            filter=self.filter,
            start=start,
            start_value=value,
            ack_timeout_ms=self.ack_timeout_ms,
            max_inflight=self.max_inflight,
            push_credit=0,
        )
        reply = await client._call(rid, frame)
        if reply.name != "ConsumerOk":
            raise ProtocolError(f"ConsumerOpen answered by {reply.name}")
        self.consumer_id = reply.consumer_id
        if not reopen or not self.next_offset:
            self.next_offset = reply.next_offset
        client._consumers[self.consumer_id] = self  # type: ignore[index]

    # -------------------------------------------------------------- from the client

    def _records(self, records: List[_Stored]) -> None:
        if records:
            self.next_offset = max(self.next_offset, records[-1][0] + 1)
        fut = self._fetch
        if fut is not None and not fut.done():
            fut.set_result(records)
        elif records:
            # The answer to a fetch nobody waits for any more: kept for the next one,
            # since its records were handed out and would not come again unacked.
            self._early.append(records)

    def _error(self, err: BaseException) -> None:
        fut = self._fetch
        if fut is not None and not fut.done():
            fut.set_exception(err)
        else:
            self._failure = err

    def _lost(self, err: BaseException) -> None:
        fut = self._fetch
        if fut is not None and not fut.done():
            fut.set_exception(err)

    def _fail(self, err: BaseException) -> None:
        self._closed = True
        self._lost(err)
        self._failure = err

    # -------------------------------------------------------------- the user's side

    def _messages(self, records: Iterable[_Stored]) -> List[Message]:
        me = self if self.ack_timeout_ms else None
        return [
            Message(topic, payload, ts, hb, off, False, dc, me)
            for off, ts, dc, topic, hb, payload in records
        ]

    async def fetch(self, n: int = 100, timeout: float = 1.0) -> List[Message]:
        """Up to ``n`` records, waiting up to ``timeout`` seconds for the first one
        (an empty list after it). Raises the server's error for this consumer
        (``UnknownStreamError`` once its stream is deleted, ...) and
        :class:`ConnectionClosedError` when the connection is lost during the fetch.
        """
        if self._early:
            return self._messages(self._early.pop(0))
        if self._failure is not None:
            err, self._failure = self._failure, None
            if self._closed:
                self._failure = err
            raise err
        if self._closed:
            raise ConnectionClosedError("consumer closed")
        client = self._client
        if self.consumer_id is None or client._consumers.get(self.consumer_id) is not self:
            # Reconnecting: wait for the consumer to be opened again.
            try:
                await client.wait_connected(timeout)
            except asyncio.TimeoutError:
                return []
            for _ in range(100):
                if client._consumers.get(self.consumer_id) is self:  # type: ignore[arg-type]
                    break
                await asyncio.sleep(0.01)
            else:
                raise NotConnectedError("consumer not open again yet")
        self._flush_acks()
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._fetch = fut
        wait_ms = max(0, int(timeout * 1000))
        client._write(
            encode(
                Frame(
                    "Fetch",
                    consumer_id=self.consumer_id,
                    max_records=max(1, n),
                    max_wait_ms=wait_ms,
                )
            )
        )
        try:
            records = await asyncio.wait_for(fut, timeout + client.request_timeout)
        except asyncio.TimeoutError:
            raise TimeoutError("no Records frame for a Fetch") from None
        finally:
            if self._fetch is fut:
                self._fetch = None
        return self._messages(records)

    def ack(self, *offsets: Union[int, Message, Iterable[Union[int, Message]]]) -> None:
        """Acknowledges records by offset or message (any mix, or lists of them).
        Acks are sent in one frame at the end of the event loop's current iteration.
        Safe to call from another thread (the synchronous client does)."""
        flat: List[int] = []
        for o in offsets:
            if isinstance(o, int):
                flat.append(o)
            elif isinstance(o, Message):
                flat.append(o.offset)  # type: ignore[arg-type]
            else:
                for x in o:
                    flat.append(x.offset if isinstance(x, Message) else x)  # type: ignore[arg-type]
        loop = self._client._loop
        assert loop is not None
        if loop._thread_id != threading.get_ident():  # type: ignore[attr-defined]
            loop.call_soon_threadsafe(self._queue_acks, flat)
        else:
            self._queue_acks(flat)

    def _queue_acks(self, offsets: List[int]) -> None:
        self._ack_buf.extend(offsets)
        if not self._ack_scheduled:
            self._ack_scheduled = True
            self._client._loop.call_soon(self._flush_acks)  # type: ignore[union-attr]

    def _flush_acks(self) -> None:
        self._ack_scheduled = False
        if not self._ack_buf or self.consumer_id is None:
            return
        if self._client._consumers.get(self.consumer_id) is not self:
            # Reconnecting: these records come again (unacked) after the re-open.
            self._ack_buf.clear()
            return
        offsets, self._ack_buf = self._ack_buf, []
        self._client._write(encode(Frame("Ack", consumer_id=self.consumer_id, offsets=offsets)))

    def __aiter__(self) -> "Consumer":
        return self

    async def __anext__(self) -> List[Message]:
        """Batches of messages, forever (empty ones are skipped)."""
        while True:
            msgs = await self.fetch(1000, 1.0)
            if msgs:
                return msgs

    async def close(self) -> None:
        """Closes the consumer (a durable one keeps its acked position)."""
        if self._closed:
            return
        self._flush_acks()
        self._closed = True
        client = self._client
        if self in client._all_consumers:
            client._all_consumers.remove(self)
        if self.consumer_id is not None and client._consumers.get(self.consumer_id) is self:
            del client._consumers[self.consumer_id]
            if client.is_connected:
                client._write(encode(Frame("ConsumerClose", consumer_id=self.consumer_id)))

    async def __aenter__(self) -> "Consumer":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
