"""Records as the SDK hands them out, and the plain data types of its answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ._codec import decode_headers

if TYPE_CHECKING:  # pragma: no cover
    from .consumer import Consumer

__all__ = ["Message", "StreamInfo", "ConsumerInfo", "QueryPage", "STORAGE_NAMES"]

STORAGE_NAMES = {0: "memory", 1: "mmap", 2: "fsync"}


class Message:
    """One record: from a live subscription, a consumer, a replay or a store query.

    ``offset`` is the record's position in its stream (``None`` for live subscription
    messages, which come before any stream); ``timestamp`` is microseconds since the UNIX
    epoch (the publisher's, or the server's receive time); ``headers`` maps each key to
    its (first) value as text (bytes that are not UTF-8 survive as surrogate escapes;
    ``raw_headers`` has the exact pairs); ``delivery_count`` grows on each redelivery.
    """

    __slots__ = (
        "topic",
        "payload",
        "timestamp",
        "offset",
        "priority",
        "delivery_count",
        "_block",
        "_pairs",
        "_consumer",
    )

    def __init__(
        self,
        topic: str,
        payload: bytes,
        timestamp: int,
        header_block: bytes = b"",
        offset: Optional[int] = None,
        priority: bool = False,
        delivery_count: int = 1,
        consumer: Optional["Consumer"] = None,
    ) -> None:
        self.topic = topic
        self.payload = payload
        self.timestamp = timestamp
        self.offset = offset
        self.priority = priority
        self.delivery_count = delivery_count
        self._block = header_block
        self._pairs: Optional[List[Tuple[str, bytes]]] = None
        self._consumer = consumer

    @property
    def raw_headers(self) -> List[Tuple[str, bytes]]:
        """The header pairs in order, values as bytes (parsed on first use)."""
        if self._pairs is None:
            self._pairs = decode_headers(self._block)
        return self._pairs

    @property
    def headers(self) -> Dict[str, str]:
        """Header key -> first value, as text."""
        out: Dict[str, str] = {}
        for k, v in self.raw_headers:
            if k not in out:
                out[k] = v.decode("utf-8", "surrogateescape")
        return out

    @property
    def data(self) -> bytes:
        """The payload (nats-py's name for it)."""
        return self.payload

    @property
    def seconds(self) -> float:
        """The timestamp in seconds since the UNIX epoch."""
        return self.timestamp / 1e6

    def ack(self) -> None:
        """Acknowledges a message from a consumer (a no-op for one whose consumer
        acknowledges on delivery). Raises ``ValueError`` for a live subscription's."""
        if self._consumer is None or self.offset is None:
            raise ValueError("only messages of a consumer can be acknowledged")
        self._consumer.ack(self.offset)

    def __repr__(self) -> str:
        off = "" if self.offset is None else f" offset={self.offset}"
        return f"<Message {self.topic!r}{off} {len(self.payload)} B>"


@dataclass
class StreamInfo:
    """A stream as the server describes it (StreamListOk / StreamOk)."""

    name: str
    storage: str
    subjects: List[str]
    first_offset: int
    next_offset: int
    records: int
    bytes: int
    segments: int
    consumers: int
    retention_bytes: Optional[int] = None
    retention_age_ms: Optional[int] = None
    segment_bytes: Optional[int] = None
    first_timestamp: Optional[int] = None
    last_timestamp: Optional[int] = None

    @classmethod
    def from_fields(cls, f: Dict[str, Any]) -> "StreamInfo":
        known = {k: v for k, v in f.items() if k in cls.__dataclass_fields__}
        known["storage"] = STORAGE_NAMES.get(f["storage"], str(f["storage"]))
        return cls(**known)


@dataclass
class ConsumerInfo:
    """A consumer as ConsumerListOk describes it."""

    stream: str
    name: str
    open: bool
    filter: str
    ack_floor: int
    cursor: Optional[int]
    pending_acks: int
    lag: int
    delivered: int
    redelivered: int
    opened_at: int

    @classmethod
    def from_fields(cls, f: Dict[str, Any]) -> "ConsumerInfo":
        return cls(
            stream=f["stream"],
            name=f["name"],
            open=bool(f["flags"] & 1),
            filter=f["filter"],
            ack_floor=f["ack_floor"],
            cursor=None if f["cursor"] == 2**64 - 1 else f["cursor"],
            pending_acks=f["pending_acks"],
            lag=f["lag"],
            delivered=f["delivered"],
            redelivered=f["redelivered"],
            opened_at=f["opened_at"],
        )


@dataclass
class QueryPage:
    """One page of a store query: ``next_after`` is ``None`` after the last page."""

    messages: List[Message] = field(default_factory=list)
    next_after: Optional[int] = None
