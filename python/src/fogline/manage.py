"""Stream and consumer management, producer announcements and store queries: the
request/answer part of :class:`fogline.Client` (a mixin, so the connection code in
``client.py`` stays about the connection)."""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Union, cast

from . import _codec
from ._codec import Frame
from .errors import ProtocolError
from .message import ConsumerInfo, Message, QueryPage, StreamInfo
from .subscription import Announcement

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["Management"]

_U64_MAX = 2**64 - 1
_STORAGE = {"memory": 0, "mmap": 1, "fsync": 2, None: 255}


class Management:
    """Methods of :class:`fogline.Client` that ask the server and wait for its answer."""

    if TYPE_CHECKING:  # provided by Client
        _request_ids: Iterator[int]
        _announces: Dict[int, Announcement]

        async def _call(self, rid: int, frame: Frame, timeout: Optional[float] = None) -> Frame: ...

        async def _request(self, kind_name: str, expect: str, /, **fields: Any) -> Frame: ...

    # ------------------------------------------------------------------ streams

    async def streams(self) -> List[StreamInfo]:
        """Every stream of the server."""
        reply = await self._request("StreamList", "StreamListOk")
        return [StreamInfo.from_fields(s) for s in reply.streams]

    async def stream(self, name: str) -> StreamInfo:
        """One stream in detail (``UnknownStreamError`` when there is none)."""
        reply = await self._request("StreamGet", "StreamOk", name=name)
        return StreamInfo.from_fields(reply.stream)

    async def create_stream(
        self,
        name: str,
        subjects: Sequence[str] = (),
        *,
        storage: Optional[str] = None,
        retention_bytes: Optional[int] = None,
        retention_age: Optional[Union[float, _dt.timedelta]] = None,
        segment_bytes: Optional[int] = None,
    ) -> StreamInfo:
        """Creates a stream capturing ``subjects`` (filters). ``storage`` is
        ``"memory"``, ``"mmap"`` or ``"fsync"`` (``None``: the node's default); a
        retention of 0 means no limit, ``None`` the node's default;
        ``retention_age`` in seconds. ``DuplicateError`` if it exists."""
        spec = {
            "name": name,
            "storage": _STORAGE[storage],
            "subjects": list(subjects),
            "retention_bytes": _U64_MAX if retention_bytes is None else retention_bytes,
            "retention_age_ms": _U64_MAX if retention_age is None else _ms(retention_age),
            "segment_bytes": _U64_MAX if segment_bytes is None else segment_bytes,
        }
        reply = await self._request("StreamCreate", "StreamOk", spec=spec)
        return StreamInfo.from_fields(reply.stream)

    async def update_stream(
        self,
        name: str,
        *,
        subjects: Optional[Sequence[str]] = None,
        retention_bytes: Optional[int] = None,
        retention_age: Optional[Union[float, _dt.timedelta]] = None,
    ) -> StreamInfo:
        """Changes what is given (a retention of 0: no limit)."""
        fields = (
            (1 if subjects is not None else 0)
            | (2 if retention_bytes is not None else 0)
            | (4 if retention_age is not None else 0)
        )
        reply = await self._request(
            "StreamUpdate",
            "StreamOk",
            name=name,
            fields=fields,
            subjects=list(subjects or ()),
            retention_bytes=retention_bytes or 0,
            retention_age_ms=0 if retention_age is None else _ms(retention_age),
        )
        return StreamInfo.from_fields(reply.stream)

    async def purge_stream(self, name: str) -> StreamInfo:
        """Drops a stream's records (offsets go on)."""
        reply = await self._request("StreamPurge", "StreamOk", name=name)
        return StreamInfo.from_fields(reply.stream)

    async def delete_stream(self, name: str) -> None:
        """Deletes a stream; its consumers end."""
        await self._request("StreamDelete", "Done", name=name)

    async def consumers(self, stream: str = "", name: str = "") -> List[ConsumerInfo]:
        """Consumers of every stream (``stream`` empty), of one, or one durable one."""
        reply = await self._request("ConsumerList", "ConsumerListOk", stream=stream, name=name)
        return [ConsumerInfo.from_fields(c) for c in reply.consumers]

    async def delete_consumer(self, stream: str, name: str) -> None:
        """Forgets a durable consumer's position (``DuplicateError`` while it is open)."""
        await self._request("ConsumerDelete", "Done", stream=stream, name=name)

    # ------------------------------------------------------------------ profiles

    async def announce(self, topic: str, profile: str) -> Announcement:
        """Announces that this connection would publish records of data profile
        ``profile`` on ``topic`` (R-Pulsar's notify_interest): the returned
        :class:`Announcement` says whether anybody is interested, and wakes
        ``wait_interested()`` when that changes."""
        rid = next(self._request_ids)
        ann = Announcement(cast("Client", self), rid, topic, profile)
        self._announces[rid] = ann
        try:
            reply = await self._call(rid, ann._frame())
        except BaseException:
            self._announces.pop(rid, None)
            raise
        ann._set(bool(reply.interested))
        return ann

    async def _withdraw(self, ann: Announcement) -> None:
        if self._announces.pop(ann.request_id, None) is None:
            return
        await self._call(ann.request_id, Frame("Withdraw", request_id=ann.request_id))

    async def query(
        self,
        interest: str = "",
        *,
        stream: str = "",
        since: Optional[Union[_dt.datetime, float, int]] = None,
        until: Optional[Union[_dt.datetime, float, int]] = None,
        latest_by: str = "",
        limit: int = 1000,
        after: Optional[int] = None,
        newest_first: bool = False,
    ) -> QueryPage:
        """One page of the node's store (``[store]``): stored records whose profile and
        topic satisfy ``interest``, within [since, until]. ``InvalidError`` on a node
        without a store."""
        rid = next(self._request_ids)
        reply = await self._call(
            rid,
            Frame(
                "Query",
                request_id=rid,
                stream=stream,
                interest=interest,
                since=0 if since is None else _seconds_us(since),
                until=_U64_MAX if until is None else _seconds_us(until),
                latest_by=latest_by,
                limit=limit,
                after=_U64_MAX if after is None else after,
                flags=1 if newest_first else 0,
            ),
        )
        if reply.name != "QueryOk":
            raise ProtocolError(f"Query answered by {reply.name}")
        msgs = [
            Message(r["topic"], r["payload"], r["timestamp"], _codec.encode_headers(r["headers"]), r["offset"])
            for r in reply.records
        ]
        return QueryPage(msgs, None if reply.next == _U64_MAX else reply.next)


    async def delete_stored(
        self,
        interest: str = "",
        *,
        stream: str = "",
        since: Optional[Union[_dt.datetime, float, int]] = None,
        until: Optional[Union[_dt.datetime, float, int]] = None,
    ) -> int:
        """Forgets from the node's store the records a :meth:`query` with the same
        interest, stream and time range would select (R-Pulsar's delete); returns how
        many. The log keeps them until its retention."""
        reply = await self._request(
            "Delete",
            "Deleted",
            stream=stream,
            interest=interest,
            since=0 if since is None else _seconds_us(since),
            until=_U64_MAX if until is None else _seconds_us(until),
        )
        return int(reply.count)

def _seconds_us(t: Union[int, float, _dt.datetime]) -> int:
    """Microseconds since the epoch from a datetime or epoch seconds."""
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.astimezone()
        return int(t.timestamp() * 1_000_000)
    return int(t * 1_000_000)


def _ms(age: Union[float, int, _dt.timedelta]) -> int:
    if isinstance(age, _dt.timedelta):
        return int(age.total_seconds() * 1000)
    return int(age * 1000)
