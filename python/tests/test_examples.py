"""The examples run as a newcomer would run them, against a live server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Server

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SRC = Path(__file__).resolve().parents[1] / "src"


def run(server: Server, name: str, *args: str, timeout: float = 60) -> str:
    env = dict(os.environ, FOGLINE_ADDR=server.address)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_publish_alert_replay_and_worker(server: Server) -> None:
    alerts = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "anomaly_alerts.py"), "--seconds", "8"],
        env=dict(os.environ, FOGLINE_ADDR=server.address, PYTHONPATH=str(SRC)),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert alerts.stdout is not None
        assert alerts.stdout.readline().startswith("listening")  # subscribed first
        out = run(server, "publish_sensors.py", "--count", "2000")
        assert "published 2000 readings" in out
        alert_out, _ = alerts.communicate(timeout=30)
    finally:
        if alerts.poll() is None:
            alerts.kill()
    assert "ALERT" in alert_out and "'id': 'r3'" in alert_out
    replay = run(server, "replay_to_pandas.py", "--minutes", "10")
    assert "2000 readings replayed" in replay
    worker = run(server, "durable_worker.py", "--idle", "1")
    assert "records processed and acknowledged" in worker
    again = run(server, "durable_worker.py", "--idle", "1")
    assert again.strip() == "0 records processed and acknowledged"
