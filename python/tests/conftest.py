"""The harness: a real fogline server on 127.0.0.1 with free ports, per test.

The binary is ``$FOGLINE_BIN``, else ``target/debug/fogline`` of this repository (what
the workspace tests build), else the one under ``$CARGO_TARGET_DIR``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Coroutine, Iterator, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "src"))  # the source tree, installed or not


def fogline_bin() -> str:
    env = os.environ.get("FOGLINE_BIN")
    if env:
        return env
    candidates = [ROOT / "target" / "debug" / "fogline"]
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        candidates += [Path(target) / "debug" / "fogline", Path(target) / "release" / "fogline"]
    candidates.append(ROOT / "target" / "release" / "fogline")
    for c in candidates:
        if c.exists():
            return str(c)
    raise RuntimeError("no fogline binary: build it (cargo build -p fogline) or set FOGLINE_BIN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One fogline process; ``restart`` keeps its ports and data directory."""

    def __init__(self, data_dir: Path, extra: Optional[List[str]] = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.http_port = free_port()
        self.extra = extra or []
        self.proc: Optional[subprocess.Popen] = None
        self.log = data_dir.parent / f"fogline-{self.port}.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self) -> None:
        cmd = [
            fogline_bin(),
            "serve",
            "--data-dir",
            str(self.data_dir),
            "--listen",
            self.address,
            "--mqtt",
            "off",
            "--http",
            f"127.0.0.1:{self.http_port}",
            *self.extra,
        ]
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"fogline exited: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.http_port), 0.2):
                    pass
                with socket.create_connection(("127.0.0.1", self.port), 0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("fogline did not start listening")

    def stop(self) -> None:
        """Graceful stop (SIGTERM), by pid."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def aio(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Runs an async test function on a fresh event loop (no plugin needed)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 120))

    return run
