"""Live subscriptions and producer announcements."""

from __future__ import annotations

import asyncio
import collections
import inspect
from typing import TYPE_CHECKING, Any, Callable, Deque, List, Optional, Tuple

from ._codec import Frame
from .errors import TimeoutError
from .message import Message

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["Subscription", "Announcement"]

_Batch = Tuple[str, bool, int, List[Tuple[int, bytes, bytes]]]


class Subscription:
    """Live records of one filter (at most once). Iterate it::

        async for msg in sub:
            print(msg.topic, msg.payload)

    or take one with :meth:`next`. ``dropped`` counts records the server dropped for
    this subscription (drop-oldest policy); ``received`` the records handed out or
    about to be (counted per batch). The iteration ends after
    :meth:`unsubscribe` or when the client closes; it raises the server's error when
    the server ended the subscription (``SlowConsumerError``, ...).
    """

    def __init__(
        self,
        client: "Client",
        sid: int,
        filter: str,
        priority: bool,
        interest: Optional[str],
        capacity: int,
        cb: Optional[Callable[[Message], Any]],
    ) -> None:
        self._client = client
        self.sid = sid
        self.filter = filter
        self.priority = priority
        self.interest = interest
        self.capacity = capacity
        self.dropped = 0
        self.received = 0
        self._cb = cb
        self._batches: Deque[_Batch] = collections.deque()
        self._current: List[Tuple[int, bytes, bytes]] = []
        self._pos = 0
        self._topic = ""
        self._prio = False
        self._bts = 0
        self._queued = 0
        self._waiter: Optional[asyncio.Future] = None
        self._done = False
        self._error: Optional[BaseException] = None
        self._confirmed = False
        self._paused = False
        self._cb_task: Optional[asyncio.Task] = None
        if cb is not None:
            self._cb_task = asyncio.ensure_future(self._run_cb(cb))

    def _frame(self) -> Frame:
        flags = 1 if self.priority else 0
        if self.interest:
            return Frame(
                "SubscribeProfile",
                sub_id=self.sid,
                flags=flags,
                filter=self.filter,
                interest=self.interest,
            )
        return Frame("Subscribe", sub_id=self.sid, flags=flags, filter=self.filter)

    # -------------------------------------------------------------- from the client

    def _deliver(
        self,
        topic: str,
        priority: bool,
        batch_ts: int,
        dropped: int,
        records: List[Tuple[int, bytes, bytes]],
    ) -> None:
        self.dropped += dropped
        if priority:
            # High-priority records overtake what is queued.
            self._batches.appendleft((topic, priority, batch_ts, records))
        else:
            self._batches.append((topic, priority, batch_ts, records))
        self._queued += len(records)
        if self._queued > self.capacity and not self._paused:
            transport = self._client._transport
            if transport is not None:
                transport.pause_reading()
                self._paused = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _end(self, error: Optional[BaseException]) -> None:
        self._done = True
        if error is not None and self._error is None:
            self._error = error
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    # -------------------------------------------------------------- the user's side

    def _take(self) -> Optional[Message]:
        cur = self._current
        pos = self._pos
        if pos >= len(cur):
            if not self._batches:
                return None
            self._topic, self._prio, self._bts, cur = self._batches.popleft()
            self._current = cur
            pos = 0
            # Accounting per batch, not per message: the hot path stays short.
            self._queued -= len(cur)
            self.received += len(cur)
            if self._paused and self._queued <= self.capacity // 2:
                self._paused = False
                transport = self._client._transport
                if transport is not None:
                    transport.resume_reading()
        ts, hb, payload = cur[pos]
        self._pos = pos + 1
        return Message(self._topic, payload, ts or self._bts, hb, None, self._prio)

    def pending(self) -> int:
        """Messages received and not yet taken."""
        return self._queued + len(self._current) - self._pos

    async def next(self, timeout: Optional[float] = None) -> Message:
        """The next message; :class:`fogline.TimeoutError` after ``timeout`` seconds,
        ``StopAsyncIteration`` once the subscription has ended."""
        while True:
            msg = self._take()
            if msg is not None:
                return msg
            if self._done:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    await asyncio.wait_for(self._waiter, timeout)
            except asyncio.TimeoutError:
                raise TimeoutError("no message") from None
            finally:
                self._waiter = None

    async def next_batch(self, timeout: Optional[float] = None) -> List[Message]:
        """Every message already received (waits for at least one, up to ``timeout``;
        empty after it)."""
        try:
            first = await self.next(timeout)
        except TimeoutError:
            return []
        out = [first]
        while True:
            msg = self._take()
            if msg is None:
                return out
            out.append(msg)

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Message:
        msg = self._take()
        if msg is not None:
            return msg
        return await self.next()

    async def _run_cb(self, cb: Callable[[Message], Any]) -> None:
        is_coro = inspect.iscoroutinefunction(cb)
        async for msg in self:
            try:
                if is_coro:
                    await cb(msg)
                else:
                    cb(msg)
            except Exception as e:  # the callback's failure must not end the subscription
                if self._client._error_cb is not None:
                    self._client._error_cb(e)

    async def unsubscribe(self) -> None:
        """Ends the subscription; messages already received can still be taken."""
        await self._client._unsubscribe(self)
        self._end(None)
        if self._paused:
            self._paused = False
            transport = self._client._transport
            if transport is not None:
                transport.resume_reading()

    async def __aenter__(self) -> "Subscription":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.unsubscribe()


class Announcement:
    """A producer's announcement (R-Pulsar's notify_interest): ``interested`` tells
    whether some subscription wants its records right now."""

    def __init__(self, client: "Client", request_id: int, topic: str, profile: str) -> None:
        self._client = client
        self.request_id = request_id
        self.topic = topic
        self.profile = profile
        self.interested = False
        self._confirmed = False
        self._changed = asyncio.Event()

    def _frame(self) -> Frame:
        return Frame("Announce", request_id=self.request_id, topic=self.topic, profile=self.profile)

    def _set(self, interested: bool) -> None:
        if interested != self.interested:
            self.interested = interested
        self._changed.set()

    async def wait_interested(self, interested: bool = True, timeout: Optional[float] = None) -> None:
        """Waits until ``interested`` is the given state."""

        async def run() -> None:
            while self.interested != interested:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(run(), timeout)

    async def withdraw(self) -> None:
        """Ends the announcement."""
        await self._client._withdraw(self)
