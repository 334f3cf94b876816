"""TLS on the native listener (`[native] tls_listen`), with a certificate made here."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

import fogline
from conftest import Server, aio, free_port


@pytest.fixture
def tls_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )
    tls_port = free_port()
    config = tmp_path / "fogline.toml"
    config.write_text(
        f'[native]\ntls_listen = ["127.0.0.1:{tls_port}"]\n\n'
        f'[native.tls]\ncertfile = "{cert}"\nkeyfile = "{key}"\n'
    )
    s = Server(tmp_path / "data", ["--config", str(config)])
    s.start()
    try:
        yield s, f"127.0.0.1:{tls_port}", cert
    finally:
        s.stop()


@aio
async def test_publish_and_subscribe_over_tls(tls_server) -> None:  # type: ignore[no-untyped-def]
    _, address, cert = tls_server
    ctx = ssl.create_default_context(cafile=str(cert))
    async with fogline.connect(address, tls=ctx) as client:
        sub = await client.subscribe("tls/#")
        await client.publish("tls/a", b"secret", ack=True)
        assert (await sub.next(5)).payload == b"secret"


@aio
async def test_tls_refuses_an_untrusted_server(tls_server) -> None:  # type: ignore[no-untyped-def]
    _, address, _ = tls_server
    with pytest.raises(ssl.SSLError):
        await fogline.connect(address, tls=True, reconnect=False, connect_timeout=5)
