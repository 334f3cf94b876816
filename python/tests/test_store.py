"""The node's store (`[store]`): queries by data profile and deletes."""

from __future__ import annotations

from pathlib import Path

import pytest

import fogline
from conftest import Server, aio


@pytest.fixture
def store_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    config = tmp_path / "fogline.toml"
    config.write_text('[store]\nstreams = ["default"]\n')
    s = Server(tmp_path / "data", ["--config", str(config)])
    s.start()
    try:
        yield s
    finally:
        s.stop()


@aio
async def test_query_pages_latest_by_and_delete(store_server: Server) -> None:
    async with fogline.connect(store_server.address) as client:
        for i in range(10):
            robot = f"r{i % 2}"
            await client.publish(
                "site/lidar",
                b"%d" % i,
                headers={"sensor": "lidar", "id": robot, "alt": str(100 + i)},
            )
        await client.publish("site/x/radar", b"radar", headers={"sensor": "radar"}, ack=True)

        page = await client.query("sensor=li*", limit=4)
        assert [m.payload for m in page.messages] == [b"0", b"1", b"2", b"3"]
        assert page.messages[0].headers["sensor"] == "lidar" and page.messages[0].offset == 0
        rest = await client.query("sensor=li*", after=page.next_after)
        assert [m.payload for m in rest.messages] == [b"%d" % i for i in range(4, 10)]
        assert rest.next_after is None

        latest = await client.query("sensor=lidar", latest_by="id")
        assert sorted(m.payload for m in latest.messages) == [b"8", b"9"]
        ranged = await client.query("alt=105..107")
        assert [m.payload for m in ranged.messages] == [b"5", b"6", b"7"]

        assert await client.delete_stored("sensor=radar") == 1
        assert (await client.query("sensor=radar")).messages == []
        with pytest.raises(fogline.InvalidError):
            await client.query("alt=")
