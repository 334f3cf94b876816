"""Logging in to a node with users and an ACL (`[auth]`): the Hello's credentials, a
refused login as BadCredentialsError (24), and the ACL's refusals as NotAuthorizedError (25)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import fogline
from conftest import Server, aio, fogline_bin


@pytest.fixture
def auth_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    passwd = tmp_path / "passwd"
    subprocess.run(
        [fogline_bin(), "passwd", "-c", "-b", str(passwd), "alice", "a-pw"],
        check=True,
        capture_output=True,
    )
    acl = tmp_path / "acl"
    acl.write_text("user alice\ntopic readwrite alice/#\n")
    config = tmp_path / "fogline.toml"
    config.write_text(f'[auth]\npassword_file = "{passwd}"\nacl_file = "{acl}"\n')
    s = Server(tmp_path / "data", ["--config", str(config)])
    s.start()
    try:
        yield s
    finally:
        s.stop()


@aio
async def test_a_user_logs_in_and_the_acl_applies(auth_server) -> None:  # type: ignore[no-untyped-def]
    async with fogline.connect(auth_server.address, user="alice", password="a-pw") as c:
        sub = await c.subscribe("alice/#")
        await c.publish("alice/t", b"mine", ack=True)
        assert (await sub.next(5)).payload == b"mine"
        with pytest.raises(fogline.NotAuthorizedError) as e:
            await c.publish("bob/t", b"theirs", ack=True)
        assert e.value.code == fogline.ErrorCode.NOT_AUTHORIZED
        with pytest.raises(fogline.NotAuthorizedError):
            await c.subscribe("bob/#")


@aio
async def test_a_refused_login_is_bad_credentials(auth_server) -> None:  # type: ignore[no-untyped-def]
    for user, password in [("alice", "nope"), ("mallory", "x"), (None, None)]:
        with pytest.raises(fogline.BadCredentialsError) as e:
            await fogline.connect(
                auth_server.address, user=user, password=password, reconnect=False
            )
        assert e.value.code == 24
