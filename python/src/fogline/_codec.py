"""The native protocol codec (crates/fogline-wire/PROTOCOL.md): pure, no I/O.

Every frame kind is described once, as a schema: a list of ``(field, type)`` pairs read
and written in order. :func:`encode` and :func:`decode` walk the schema, so a frame
kind is added by adding one line to :data:`SCHEMAS`. The client's hot paths (a Publish
of many records, a Deliver or Records frame) have hand-written encoders and decoders
in this module as well; the shared test vectors check both against the bytes of the
Rust codec.

Decoded frames are :class:`Frame` objects: a kind name plus a dict of fields. Types:

- ``u8 u16 u32 u64``: little-endian integers; ``str16``: ``u16`` length + UTF-8;
- ``blob32``: ``u32`` length + bytes; ``headers``: a ``blob32`` holding a header block,
  decoded as a list of ``(key, value bytes)`` pairs (empty block: no headers);
- ``("list16", T)`` / ``("list32", T)``: a count then that many values of type ``T``;
- ``("struct", fields)``: fields inline, decoded as a dict;
- ``("opt", T)``: trailing optional field: written only when not ``None``, read only
  when bytes remain (the Hello credentials).
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__all__ = [
    "Frame",
    "MalformedFrame",
    "KINDS",
    "NAMES",
    "SCHEMAS",
    "encode",
    "decode",
    "decode_body",
    "encode_headers",
    "decode_headers",
    "encode_publish",
    "record_part",
]


class MalformedFrame(ValueError):
    """A frame whose body does not follow its kind's layout."""


_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_INTS = {"u8": _U8, "u16": _U16, "u32": _U32, "u64": _U64}
_FRAME_HEAD = struct.Struct("<IB")
# timestamp u64 + headers length u32: the fixed start of every record.
_REC_HEAD = struct.Struct("<QI")
_REC_EMPTY_HEAD = struct.Struct("<QII")  # timestamp, headers length 0, payload length
_STORED_HEAD = struct.Struct("<QQHH")  # offset, timestamp, delivery_count, topic length

T = Union[str, Tuple[Any, ...]]

RECORD: T = ("struct", [("timestamp", "u64"), ("headers", "headers"), ("payload", "blob32")])
STORED: T = (
    "struct",
    [
        ("offset", "u64"),
        ("timestamp", "u64"),
        ("delivery_count", "u16"),
        ("topic", "str16"),
        ("headers", "headers"),
        ("payload", "blob32"),
    ],
)
# The parts of PROTOCOL.md's stream structures: StreamInfo is head and counts, StreamSpec
# head and limits, StreamDetail head, limits, flags, counts and the time span.
_STREAM_HEAD = [
    ("name", "str16"),
    ("storage", "u8"),
    ("subjects", ("list16", "str16")),
]
_STREAM_COUNTS = [
    ("first_offset", "u64"),
    ("next_offset", "u64"),
    ("records", "u64"),
    ("bytes", "u64"),
    ("segments", "u32"),
    ("consumers", "u32"),
]
_STREAM_LIMITS = [
    ("retention_bytes", "u64"),
    ("retention_age_ms", "u64"),
    ("segment_bytes", "u64"),
]
STREAM_INFO: T = ("struct", _STREAM_HEAD + _STREAM_COUNTS)
STREAM_SPEC: T = ("struct", _STREAM_HEAD + _STREAM_LIMITS)
STREAM_DETAIL: T = (
    "struct",
    _STREAM_HEAD
    + _STREAM_LIMITS
    + [("flags", "u8")]
    + _STREAM_COUNTS
    + [("first_timestamp", "u64"), ("last_timestamp", "u64")],
)
CONSUMER_DETAIL: T = (
    "struct",
    [
        ("stream", "str16"),
        ("name", "str16"),
        ("flags", "u8"),
        ("filter", "str16"),
        ("ack_floor", "u64"),
        ("cursor", "u64"),
        ("pending_acks", "u64"),
        ("lag", "u64"),
        ("delivered", "u64"),
        ("redelivered", "u64"),
        ("opened_at", "u64"),
    ],
)

_RID = ("request_id", "u64")

#: kind number -> (name, schema)
SCHEMAS: Dict[int, Tuple[str, List[Tuple[str, T]]]] = {
    0x01: (
        "Hello",
        [
            ("version", "u16"),
            ("client_name", "str16"),
            ("username", ("opt", "str16")),
            ("password", ("opt", "str16")),
        ],
    ),
    0x02: (
        "HelloOk",
        [("version", "u16"), ("server_name", "str16"), ("max_message", "u32"), ("max_frame", "u32")],
    ),
    0x03: ("Ping", [("nonce", "u64")]),
    0x04: ("Pong", [("nonce", "u64")]),
    0x10: (
        "Publish",
        [_RID, ("flags", "u8"), ("topic", "str16"), ("records", ("list32", RECORD))],
    ),
    0x11: ("PubAck", [_RID, ("count", "u32")]),
    0x20: ("Subscribe", [("sub_id", "u32"), ("flags", "u8"), ("filter", "str16")]),
    0x21: ("SubOk", [("sub_id", "u32")]),
    0x22: ("Unsubscribe", [("sub_id", "u32")]),
    0x23: (
        "Deliver",
        [
            ("sub_id", "u32"),
            ("flags", "u8"),
            ("batch_timestamp", "u64"),
            ("dropped", "u32"),
            ("topic", "str16"),
            ("records", ("list32", RECORD)),
        ],
    ),
    0x24: (
        "SubscribeProfile",
        [("sub_id", "u32"), ("flags", "u8"), ("filter", "str16"), ("interest", "str16")],
    ),
    0x30: (
        "ConsumerOpen",
        [
            _RID,
            ("stream", "str16"),
            ("name", "str16"),
            ("filter", "str16"),
            ("start", "u8"),
            ("start_value", "u64"),
            ("ack_timeout_ms", "u32"),
            ("max_inflight", "u32"),
            ("push_credit", "u32"),
        ],
    ),
    0x31: ("ConsumerOk", [_RID, ("consumer_id", "u32"), ("next_offset", "u64")]),
    0x32: ("Fetch", [("consumer_id", "u32"), ("max_records", "u32"), ("max_wait_ms", "u32")]),
    0x33: ("Records", [("consumer_id", "u32"), ("records", ("list32", STORED))]),
    0x34: ("Credit", [("consumer_id", "u32"), ("credit", "u32")]),
    0x35: ("Ack", [("consumer_id", "u32"), ("offsets", ("list32", "u64"))]),
    0x36: ("ConsumerClose", [("consumer_id", "u32")]),
    0x40: ("StreamList", [_RID]),
    0x41: ("StreamListOk", [_RID, ("streams", ("list16", STREAM_INFO))]),
    0x42: ("StreamCreate", [_RID, ("spec", STREAM_SPEC)]),
    0x43: (
        "StreamUpdate",
        [
            _RID,
            ("name", "str16"),
            ("fields", "u8"),
            ("subjects", ("list16", "str16")),
            ("retention_bytes", "u64"),
            ("retention_age_ms", "u64"),
        ],
    ),
    0x44: ("StreamPurge", [_RID, ("name", "str16")]),
    0x45: ("StreamDelete", [_RID, ("name", "str16")]),
    0x46: ("StreamGet", [_RID, ("name", "str16")]),
    0x47: ("StreamOk", [_RID, ("stream", STREAM_DETAIL)]),
    0x48: ("ConsumerList", [_RID, ("stream", "str16"), ("name", "str16")]),
    0x49: ("ConsumerListOk", [_RID, ("consumers", ("list32", CONSUMER_DETAIL))]),
    0x4A: ("ConsumerDelete", [_RID, ("stream", "str16"), ("name", "str16")]),
    0x4B: ("Done", [_RID]),
    0x50: ("Announce", [_RID, ("topic", "str16"), ("profile", "str16")]),
    0x51: ("Notice", [_RID, ("interested", "u8")]),
    0x52: ("Withdraw", [_RID]),
    0x54: (
        "Query",
        [
            _RID,
            ("stream", "str16"),
            ("interest", "str16"),
            ("since", "u64"),
            ("until", "u64"),
            ("latest_by", "str16"),
            ("limit", "u32"),
            ("after", "u64"),
            ("flags", "u8"),
        ],
    ),
    0x55: ("QueryOk", [_RID, ("next", "u64"), ("records", ("list32", STORED))]),
    0x56: (
        "Delete",
        [_RID, ("stream", "str16"), ("interest", "str16"), ("since", "u64"), ("until", "u64")],
    ),
    0x57: ("Deleted", [_RID, ("count", "u64")]),
    0x7F: ("Error", [_RID, ("code", "u16"), ("message", "str16")]),
}

#: name -> kind number
KINDS: Dict[str, int] = {name: kind for kind, (name, _) in SCHEMAS.items()}
#: kind number -> name
NAMES: Dict[int, str] = {kind: name for kind, (name, _) in SCHEMAS.items()}


class Frame:
    """A decoded frame: its kind's name and its fields."""

    __slots__ = ("name", "fields")

    def __init__(self, kind_name: str, /, **fields: Any) -> None:
        if kind_name not in KINDS:
            raise ValueError(f"unknown frame kind {kind_name!r}")
        self.name = kind_name
        self.fields = fields

    @property
    def kind(self) -> int:
        """The kind number."""
        return KINDS[self.name]

    def __getattr__(self, field: str) -> Any:
        try:
            return self.fields[field]  # type: ignore[index]
        except KeyError:
            raise AttributeError(field) from None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Frame) and self.name == other.name and self.fields == other.fields
        )

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"Frame.{self.name}({inner})"


# ---------------------------------------------------------------------------- encoding


def _put(out: bytearray, ty: T, value: Any) -> None:
    if isinstance(ty, str):
        packer = _INTS.get(ty)
        if packer is not None:
            out += packer.pack(value)
        elif ty == "str16":
            raw = value.encode("utf-8")
            if len(raw) > 0xFFFF:
                raise ValueError("string longer than 65535 bytes")
            out += _U16.pack(len(raw))
            out += raw
        elif ty == "blob32":
            out += _U32.pack(len(value))
            out += value
        elif ty == "headers":
            block = encode_headers(value)
            out += _U32.pack(len(block))
            out += block
        else:
            raise ValueError(f"unknown type {ty}")
        return
    tag = ty[0]
    if tag in ("list16", "list32"):
        out += (_U16 if tag == "list16" else _U32).pack(len(value))
        for item in value:
            _put(out, ty[1], item)
    elif tag == "struct":
        for name, sub in ty[1]:
            _put(out, sub, value[name])
    elif tag == "opt":
        if value is not None:
            _put(out, ty[1], value)
    else:
        raise ValueError(f"unknown type {ty}")


def encode(frame: Frame) -> bytes:
    """The bytes of ``frame``, length prefix included."""
    kind = KINDS[frame.name]
    _, schema = SCHEMAS[kind]
    body = bytearray()
    present = True
    for name, ty in schema:
        value = frame.fields.get(name)
        if isinstance(ty, tuple) and ty[0] == "opt":
            # Optional fields trail: once one is absent, none after it may be present.
            if value is None:
                present = False
                continue
            if not present:
                raise ValueError(f"{frame.name}.{name} given without the fields before it")
        elif name not in frame.fields:
            raise ValueError(f"{frame.name} lacks field {name}")
        _put(body, ty, value)
    return _FRAME_HEAD.pack(len(body) + 1, kind) + bytes(body)


def encode_headers(headers: Any) -> bytes:
    """A header block from pairs or a mapping (str -> str | bytes); empty for none."""
    if not headers:
        return b""
    items = headers.items() if hasattr(headers, "items") else headers
    out = bytearray()
    n = 0
    for key, value in items:
        k = key.encode("utf-8")
        v = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
        out += _U16.pack(len(k))
        out += k
        out += _U32.pack(len(v))
        out += v
        n += 1
    if n > 0xFFFF:
        raise ValueError("more than 65535 headers")
    return _U16.pack(n) + bytes(out)


# ---------------------------------------------------------------------------- decoding


def _str(buf: Union[bytes, memoryview], pos: int, end: int) -> Tuple[str, int]:
    if pos + 2 > end:
        raise MalformedFrame("string truncated")
    (n,) = _U16.unpack_from(buf, pos)
    pos += 2
    if pos + n > end:
        raise MalformedFrame("string truncated")
    try:
        return bytes(buf[pos : pos + n]).decode("utf-8"), pos + n
    except UnicodeDecodeError:
        raise MalformedFrame("string is not UTF-8") from None


def _blob(buf: Union[bytes, memoryview], pos: int, end: int) -> Tuple[bytes, int]:
    if pos + 4 > end:
        raise MalformedFrame("blob truncated")
    (n,) = _U32.unpack_from(buf, pos)
    pos += 4
    if pos + n > end:
        raise MalformedFrame("blob truncated")
    return bytes(buf[pos : pos + n]), pos + n


def decode_headers(block: bytes) -> List[Tuple[str, bytes]]:
    """The ``(key, value)`` pairs of a header block, in order.

    Raises :class:`MalformedFrame` when the block breaks the layout.
    """
    if not block:
        return []
    end = len(block)
    if end < 2:
        raise MalformedFrame("header count truncated")
    (count,) = _U16.unpack_from(block, 0)
    pos = 2
    out = []
    for _ in range(count):
        key, pos = _str(block, pos, end)
        value, pos = _blob(block, pos, end)
        out.append((key, value))
    if pos != end:
        raise MalformedFrame("trailing bytes after headers")
    return out


def _get(buf: bytes, pos: int, end: int, ty: T) -> Tuple[Any, int]:
    if isinstance(ty, str):
        unpacker = _INTS.get(ty)
        if unpacker is not None:
            if pos + unpacker.size > end:
                raise MalformedFrame(f"{ty} truncated")
            return unpacker.unpack_from(buf, pos)[0], pos + unpacker.size
        if ty == "str16":
            return _str(buf, pos, end)
        if ty == "blob32":
            return _blob(buf, pos, end)
        if ty == "headers":
            block, pos = _blob(buf, pos, end)
            return decode_headers(block), pos
        raise ValueError(f"unknown type {ty}")
    tag = ty[0]
    if tag in ("list16", "list32"):
        count, pos = _get(buf, pos, end, "u16" if tag == "list16" else "u32")
        # A huge count over a short body fails at once, not after a long loop.
        if count > end - pos:
            raise MalformedFrame("count exceeds body")
        items = []
        for _ in range(count):
            item, pos = _get(buf, pos, end, ty[1])
            items.append(item)
        return items, pos
    if tag == "struct":
        fields = {}
        for name, sub in ty[1]:
            fields[name], pos = _get(buf, pos, end, sub)
        return fields, pos
    if tag == "opt":
        if pos == end:
            return None, pos
        return _get(buf, pos, end, ty[1])
    raise ValueError(f"unknown type {ty}")


def decode_body(kind: int, body: bytes) -> Frame:
    """The frame of kind ``kind`` whose body (after the kind byte) is ``body``.

    Raises :class:`MalformedFrame` for a malformed body and ``KeyError`` for an
    unknown kind.
    """
    name, schema = SCHEMAS[kind]
    fields: Dict[str, Any] = {}
    pos, end = 0, len(body)
    for field, ty in schema:
        fields[field], pos = _get(body, pos, end, ty)
    if pos != end:
        raise MalformedFrame(f"{name}: trailing bytes")
    if kind == 0x01:
        for opt in ("username", "password"):
            if fields[opt] is None:
                del fields[opt]
    return Frame(name, **fields)


def decode(data: bytes, max_frame: int = 1 << 30) -> Tuple[Optional[Frame], int]:
    """Decodes the first frame of ``data``: ``(frame, bytes used)``, or ``(None, 0)``
    when ``data`` does not hold a whole frame yet.

    Raises :class:`MalformedFrame` for a frame larger than ``max_frame``, a zero length
    or a malformed body, and ``KeyError`` for an unknown kind.
    """
    if len(data) < 4:
        return None, 0
    (length,) = _U32.unpack_from(data, 0)
    if length == 0:
        raise MalformedFrame("zero frame length")
    if length > max_frame:
        raise MalformedFrame(f"frame of {length} bytes exceeds {max_frame}")
    if len(data) < 4 + length:
        return None, 0
    return decode_body(data[4], bytes(data[5 : 4 + length])), 4 + length


# ---------------------------------------------------------------------------- hot paths


def record_part(payload: bytes, headers_block: bytes = b"", timestamp: int = 0) -> bytes:
    """One record of a RecordBlock, encoded."""
    if headers_block:
        return b"".join(
            (
                _REC_HEAD.pack(timestamp, len(headers_block)),
                headers_block,
                _U32.pack(len(payload)),
                payload,
            )
        )
    return _REC_EMPTY_HEAD.pack(timestamp, 0, len(payload)) + payload


_PUB_HEAD = struct.Struct("<IBQBH")  # len, kind, request_id, flags, topic length


def encode_publish(
    request_id: int, flags: int, topic_bytes: bytes, count: int, parts: Sequence[bytes]
) -> bytes:
    """A Publish frame from already encoded records (:func:`record_part`)."""
    block = b"".join(parts)
    length = 1 + 8 + 1 + 2 + len(topic_bytes) + 4 + len(block)
    return b"".join(
        (
            _PUB_HEAD.pack(length, 0x10, request_id, flags, len(topic_bytes)),
            topic_bytes,
            _U32.pack(count),
            block,
        )
    )


_DELIVER_HEAD = struct.Struct("<IBQIH")  # sub_id, flags, batch_timestamp, dropped, topic len


def decode_deliver(
    body: bytes,
) -> Tuple[int, int, int, int, str, List[Tuple[int, bytes, bytes]]]:
    """A Deliver body: ``(sub_id, flags, batch_timestamp, dropped, topic, records)`` with
    records as ``(timestamp, headers block, payload)``. Header blocks are checked lazily,
    when a message's headers are read."""
    end = len(body)
    if end < _DELIVER_HEAD.size:
        raise MalformedFrame("Deliver truncated")
    sub_id, flags, batch_ts, dropped, tlen = _DELIVER_HEAD.unpack_from(body, 0)
    pos = _DELIVER_HEAD.size
    if pos + tlen + 4 > end:
        raise MalformedFrame("Deliver truncated")
    try:
        topic = body[pos : pos + tlen].decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedFrame("topic is not UTF-8") from None
    pos += tlen
    (count,) = _U32.unpack_from(body, pos)
    pos += 4
    if count * 16 > end - pos:
        raise MalformedFrame("record count exceeds block")
    records: List[Tuple[int, bytes, bytes]] = []
    append = records.append
    head = _REC_EMPTY_HEAD.unpack_from  # timestamp, headers length, next u32
    u32 = _U32.unpack_from
    try:
        for _ in range(count):
            ts, hlen, plen = head(body, pos)
            if hlen:
                # The u32 read as plen starts the header block: read the real one after it.
                headers = body[pos + 12 : pos + 12 + hlen]
                pos += 12 + hlen
                (plen,) = u32(body, pos)
                pos += 4
            else:
                headers = b""
                pos += 16
            payload = body[pos : pos + plen]
            pos += plen
            if pos > end:
                raise MalformedFrame("record truncated")
            append((ts, headers, payload))
    except struct.error:
        raise MalformedFrame("record truncated") from None
    if pos != end:
        raise MalformedFrame("trailing bytes after records")
    return sub_id, flags, batch_ts, dropped, topic, records


def decode_stored(
    body: bytes, pos: int
) -> List[Tuple[int, int, int, str, bytes, bytes]]:
    """StoredRecords from ``pos`` (their count first) to the end of ``body``:
    ``(offset, timestamp, delivery_count, topic, headers block, payload)``."""
    end = len(body)
    if pos + 4 > end:
        raise MalformedFrame("record count truncated")
    (count,) = _U32.unpack_from(body, pos)
    pos += 4
    if count * 28 > end - pos:
        raise MalformedFrame("record count exceeds block")
    out: List[Tuple[int, int, int, str, bytes, bytes]] = []
    append = out.append
    head = _STORED_HEAD.unpack_from
    u32 = _U32.unpack_from
    try:
        for _ in range(count):
            offset, ts, dc, tlen = head(body, pos)
            pos += 20
            topic = body[pos : pos + tlen].decode("utf-8")
            pos += tlen
            (hlen,) = u32(body, pos)
            pos += 4
            headers = body[pos : pos + hlen]
            pos += hlen
            (plen,) = u32(body, pos)
            pos += 4
            payload = body[pos : pos + plen]
            pos += plen
            if pos > end:
                raise MalformedFrame("record truncated")
            append((offset, ts, dc, topic, headers, payload))
    except (struct.error, UnicodeDecodeError):
        raise MalformedFrame("record truncated") from None
    if pos != end:
        raise MalformedFrame("trailing bytes after records")
    return out
