"""The Python codec against the shared golden frames, the same bytes the Rust codec is
tested against (crates/fogline-wire/tests/vectors/frames.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from fogline import _codec
from fogline._codec import Frame, MalformedFrame

VECTORS = Path(__file__).resolve().parents[2] / "crates/fogline-wire/tests/vectors/frames.json"


def load() -> List[Dict[str, Any]]:
    return json.loads(VECTORS.read_text())["vectors"]  # type: ignore[no-any-return]


def from_json(v: Any) -> Any:
    """JSON values as the codec's: ``{"hex": ...}`` is bytes, header pairs are tuples."""
    if isinstance(v, dict):
        if set(v) == {"hex"}:
            return bytes.fromhex(v["hex"])
        out = {k: from_json(x) for k, x in v.items()}
        if "headers" in out:
            out["headers"] = [tuple(p) for p in out["headers"]]
        return out
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return v


CASES = load()
IDS = [c["name"] for c in CASES]


def test_every_kind_has_a_vector() -> None:
    assert sorted(c["kind"] for c in CASES) == sorted(_codec.SCHEMAS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_encode_matches_vector(case: Dict[str, Any]) -> None:
    frame = Frame(case["frame"], **from_json(case["fields"]))
    assert frame.kind == case["kind"]
    assert _codec.encode(frame).hex() == case["hex"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_decode_matches_vector(case: Dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    frame, used = _codec.decode(data)
    assert used == len(data)
    assert frame == Frame(case["frame"], **from_json(case["fields"]))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_prefix_is_incomplete(case: Dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    for cut in range(len(data)):
        assert _codec.decode(data[:cut]) == (None, 0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_truncated_body_is_malformed(case: Dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    kind, body = data[4], data[5:]
    for cut in range(len(body)):
        if kind == 0x01 and cut == 7:
            continue  # Hello without its optional credentials: complete (see below)
        with pytest.raises(MalformedFrame):
            _codec.decode_body(kind, body[:cut])


def test_trailing_bytes_are_malformed() -> None:
    for case in CASES:
        data = bytes.fromhex(case["hex"])
        with pytest.raises(MalformedFrame):
            _codec.decode_body(data[4], data[5:] + b"\x00")


def vector(name: str) -> Dict[str, Any]:
    return next(c for c in CASES if c["name"] == name)


def test_hot_publish_encoder_matches_vector() -> None:
    v = vector("publish")
    recs = from_json(v["fields"])["records"]
    parts = [
        _codec.record_part(r["payload"], _codec.encode_headers(r["headers"]), r["timestamp"])
        for r in recs
    ]
    frame = _codec.encode_publish(5, 1, b"a/b", len(parts), parts)
    assert frame.hex() == v["hex"]


def test_hot_deliver_decoder_matches_vector() -> None:
    v = vector("deliver")
    body = bytes.fromhex(v["hex"])[5:]
    sub_id, flags, bts, dropped, topic, records = _codec.decode_deliver(body)
    f = from_json(v["fields"])
    assert (sub_id, flags, bts, dropped, topic) == (7, 0, 0x1122, 3, "a/b")
    assert [(ts, _codec.decode_headers(h), p) for ts, h, p in records] == [
        (r["timestamp"], r["headers"], r["payload"]) for r in f["records"]
    ]
    for cut in range(len(body)):
        with pytest.raises(MalformedFrame):
            _codec.decode_deliver(body[:cut])


def test_hot_stored_decoder_matches_vector() -> None:
    v = vector("records")
    body = bytes.fromhex(v["hex"])[5:]
    got = _codec.decode_stored(body, 4)
    f = from_json(v["fields"])
    assert [(o, t, d, tp, _codec.decode_headers(h), p) for o, t, d, tp, h, p in got] == [
        (r["offset"], r["timestamp"], r["delivery_count"], r["topic"], r["headers"], r["payload"])
        for r in f["records"]
    ]
    for cut in range(4, len(body)):
        with pytest.raises(MalformedFrame):
            _codec.decode_stored(body[:cut], 4)


def test_hello_credentials_trail_only_when_given() -> None:
    # The coming Hello extension: `username str16, password str16` after client_name,
    # absent for an anonymous client (then the frame is the golden one).
    plain = Frame("Hello", version=1, client_name="cli")
    assert _codec.encode(plain).hex() == vector("hello")["hex"]
    creds = Frame("Hello", version=1, client_name="cli", username="u", password="pw")
    data = _codec.encode(creds)
    assert data == bytes([15, 0, 0, 0, 0x01, 1, 0, 3, 0]) + b"cli" + b"\x01\x00u\x02\x00pw"
    assert _codec.decode(data) == (creds, len(data))


def test_headers_block_layout() -> None:
    block = _codec.encode_headers({"k": "v", "n": b"\xff"})
    assert block == b"\x02\x00\x01\x00k\x01\x00\x00\x00v\x01\x00n\x01\x00\x00\x00\xff"
    assert _codec.decode_headers(block) == [("k", b"v"), ("n", b"\xff")]
    assert _codec.encode_headers(None) == b""
    with pytest.raises(MalformedFrame):
        _codec.decode_headers(b"\x01\x00")


def test_frame_length_limits() -> None:
    with pytest.raises(MalformedFrame):
        _codec.decode(b"\x00\x00\x00\x00\x03")
    with pytest.raises(MalformedFrame):
        _codec.decode(b"\xff\xff\xff\x00\x03", max_frame=1 << 20)


def test_hot_deliver_decoder_agrees_with_the_schema_on_headers() -> None:
    records = [
        {"timestamp": 1, "headers": [("k", b"v"), ("n", b"")], "payload": b"p1"},
        {"timestamp": 0, "headers": [], "payload": b""},
        {"timestamp": 2**64 - 1, "headers": [("long", b"x" * 300)], "payload": b"z" * 70000},
    ]
    frame = Frame("Deliver", sub_id=1, flags=1, batch_timestamp=9, dropped=0, topic="t", records=records)
    body = _codec.encode(frame)[5:]
    *_, got = _codec.decode_deliver(body)
    assert [(ts, _codec.decode_headers(h), p) for ts, h, p in got] == [
        (r["timestamp"], r["headers"], r["payload"]) for r in records
    ]
    for cut in list(range(0, 200)) + [len(body) - 1]:
        with pytest.raises(MalformedFrame):
            _codec.decode_deliver(body[:cut])
