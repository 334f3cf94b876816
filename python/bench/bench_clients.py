"""Python clients compared: fogline's SDK against fogline, nats-py against NATS and
paho-mqtt 2.x against Mosquitto, in one run on one machine.

Rows: records/s for batched (fire-and-forget) publishing, acknowledged publishing and
subscribing, at 64 B and 1 KiB. Every system runs in every round (rounds interleave the
systems), each server pinned to core 0 and this process to core 1 (the publisher
process of the subscribe rows runs beside the server on core 0).

- batched: publish N records one call each, then a round trip (fogline ``flush``,
  nats-py ``flush``, paho a final QoS 1 message) so the server has read them all.
- acked: every record acknowledged once stored: fogline ``publish_async`` (futures),
  nats-py JetStream ``publish_async`` into a memory stream, paho QoS 1 (1000 in flight)
  to Mosquitto (no persistence). fogline stores into a memory stream as well.
- subscribe: a second process publishes N records with the same system's Python
  client; this one receives them; rate = received / (last - first arrival).

Usage (from the repository root, after ``cargo build --release -p fogline``)::

    python3 python/bench/bench_clients.py --fogline target/release/fogline --rounds 3 \\
        --out bench/results/python-sdk-$(date +%F)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import fogline  # noqa: E402

SIZES = [64, 1024]
SYSTEMS = ["fogline", "nats", "mosquitto"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class ServerProc:
    """A peer server pinned to core 0, stopped by pid."""

    def __init__(self, system: str, fogline_bin: str) -> None:
        self.system = system
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"pybench-{system}-")
        if system == "fogline":
            cmd = [
                fogline_bin, "serve", "--storage", "memory", "--data-dir", self.dir,
                "--listen", f"127.0.0.1:{self.port}", "--mqtt", "off", "--http", "off",
            ]
        elif system == "nats":
            cmd = ["nats-server", "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", self.dir]
        else:
            conf = Path(self.dir) / "mosquitto.conf"
            conf.write_text(
                f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                "log_dest stdout\nmax_queued_messages 0\nmax_inflight_messages 0\n"
            )
            cmd = ["mosquitto", "-c", str(conf)]
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------------- fogline


async def fogline_batched(port: int, n: int, payload: bytes) -> float:
    async with fogline.connect(f"127.0.0.1:{port}") as c:
        t0 = time.perf_counter()
        for _ in range(n):
            await c.publish("bench/pub", payload)
        await c.flush()
        return n / (time.perf_counter() - t0)


async def fogline_acked(port: int, n: int, payload: bytes) -> float:
    async with fogline.connect(f"127.0.0.1:{port}") as c:
        t0 = time.perf_counter()
        futures = []
        last = None
        for _ in range(n):
            fut = await c.publish_async("bench/ack", payload)
            if fut is not last:
                futures.append(fut)
                last = fut
        await asyncio.gather(*futures)
        return n / (time.perf_counter() - t0)


async def fogline_subscribe(port: int, n: int, size: int) -> Dict[str, float]:
    async with fogline.connect(f"127.0.0.1:{port}") as c:
        sub = await c.subscribe("bench/sub")
        pub = spawn_publisher("fogline", port, n, size)
        got = 0
        first = last = 0.0
        try:
            while got < n:
                msg = await sub.next(5)
                if not got:
                    first = time.perf_counter()
                got += 1
                _ = msg.payload
            last = time.perf_counter()
        except fogline.TimeoutError:
            last = time.perf_counter() - 5
        return finish_publisher(pub, got, first, last)


# ------------------------------------------------------------------------- nats


async def nats_batched(port: int, n: int, payload: bytes) -> float:
    import nats

    nc = await nats.connect(f"nats://127.0.0.1:{port}")
    t0 = time.perf_counter()
    for _ in range(n):
        await nc.publish("bench.pub", payload)
    await nc.flush(30)
    rate = n / (time.perf_counter() - t0)
    await nc.close()
    return rate


async def nats_acked(port: int, n: int, payload: bytes) -> float:
    import nats
    from nats.js.api import StorageType

    nc = await nats.connect(f"nats://127.0.0.1:{port}")
    js = nc.jetstream()
    try:
        await js.delete_stream("BENCH")
    except Exception:
        pass
    await js.add_stream(name="BENCH", subjects=["bench.ack"], storage=StorageType.MEMORY)
    t0 = time.perf_counter()
    for _ in range(n):
        await js.publish_async("bench.ack", payload)
    await js.publish_async_completed()
    rate = n / (time.perf_counter() - t0)
    await nc.close()
    return rate


async def nats_subscribe(port: int, n: int, size: int) -> Dict[str, float]:
    import nats

    nc = await nats.connect(f"nats://127.0.0.1:{port}")
    state = {"got": 0, "first": 0.0, "last": 0.0}
    done = asyncio.Event()

    async def cb(msg: Any) -> None:
        if not state["got"]:
            state["first"] = time.perf_counter()
        state["got"] += 1
        _ = msg.data
        if state["got"] >= n:
            state["last"] = time.perf_counter()
            done.set()

    await nc.subscribe("bench.sub", cb=cb, pending_msgs_limit=n + 1, pending_bytes_limit=1 << 31)
    await nc.flush()
    pub = spawn_publisher("nats", port, n, size)
    got_before = -1
    while not done.is_set() and got_before != state["got"]:
        got_before = state["got"]
        try:
            await asyncio.wait_for(done.wait(), 5)
        except asyncio.TimeoutError:
            pass
    if not state["last"]:
        state["last"] = time.perf_counter() - 5
    await nc.close()
    return finish_publisher(pub, int(state["got"]), state["first"], state["last"])


# ------------------------------------------------------------------------- paho


def paho_client(port: int) -> Any:
    import paho.mqtt.client as mqtt

    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    c.max_inflight_messages_set(1000)
    c.max_queued_messages_set(0)
    c.connect("127.0.0.1", port)
    c.loop_start()
    return c


def paho_batched(port: int, n: int, payload: bytes) -> float:
    c = paho_client(port)
    t0 = time.perf_counter()
    for _ in range(n):
        c.publish("bench/pub", payload, qos=0)
    c.publish("bench/end", b"", qos=1).wait_for_publish(60)
    rate = n / (time.perf_counter() - t0)
    c.loop_stop()
    c.disconnect()
    return rate


def paho_acked(port: int, n: int, payload: bytes) -> float:
    c = paho_client(port)
    # MQTT packet ids are 16 bits: paho can track at most 65,535 unacknowledged messages
    # (queued ones included), so the publisher keeps at most 20,000 outstanding.
    window = threading.Semaphore(20_000)
    count = [0]
    done = threading.Event()

    def on_publish(client: Any, userdata: Any, mid: int, rc: Any, props: Any) -> None:
        count[0] += 1
        window.release()
        if count[0] >= n:
            done.set()

    c.on_publish = on_publish
    t0 = time.perf_counter()
    for _ in range(n):
        window.acquire()
        c.publish("bench/ack", payload, qos=1)
    done.wait(120)
    rate = count[0] / (time.perf_counter() - t0)
    c.loop_stop()
    c.disconnect()
    return rate


def paho_subscribe(port: int, n: int, size: int) -> Dict[str, float]:
    state = {"got": 0, "first": 0.0, "last": 0.0}
    done = threading.Event()
    subscribed = threading.Event()

    def on_message(client: Any, userdata: Any, msg: Any) -> None:
        if not state["got"]:
            state["first"] = time.perf_counter()
        state["got"] += 1
        _ = msg.payload
        if state["got"] >= n:
            state["last"] = time.perf_counter()
            done.set()

    c = paho_client(port)
    c.on_message = on_message
    c.on_subscribe = lambda *a: subscribed.set()
    c.subscribe("bench/sub", qos=0)
    subscribed.wait(10)
    pub = spawn_publisher("mosquitto", port, n, size)
    got_before = -1
    while not done.is_set() and got_before != state["got"]:
        got_before = int(state["got"])
        done.wait(5)
    if not state["last"]:
        state["last"] = time.perf_counter() - 5
    c.loop_stop()
    c.disconnect()
    return finish_publisher(pub, int(state["got"]), state["first"], state["last"])


# ------------------------------------------------------------------------- publisher process


def spawn_publisher(system: str, port: int, n: int, size: int) -> subprocess.Popen:
    return subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, __file__, "--publisher", system, str(port), str(n), str(size)],
        stdout=subprocess.PIPE,
    )


def finish_publisher(pub: subprocess.Popen, got: int, first: float, last: float) -> Dict[str, float]:
    out, _ = pub.communicate(timeout=120)
    pub_rate = float(out.decode().strip() or 0)
    rate = got / (last - first) if last > first else 0.0
    return {"rate": rate, "received": got, "publisher_rate": pub_rate}


def publisher_main(system: str, port: int, n: int, size: int) -> None:
    payload = b"x" * size
    if system == "fogline":
        rate = asyncio.run(_fogline_pub(port, n, payload))
    elif system == "nats":
        rate = asyncio.run(_nats_pub(port, n, payload))
    else:
        c = paho_client(port)
        t0 = time.perf_counter()
        for _ in range(n):
            c.publish("bench/sub", payload, qos=0)
        c.publish("bench/end", b"", qos=1).wait_for_publish(120)
        rate = n / (time.perf_counter() - t0)
        c.loop_stop()
        c.disconnect()
    print(rate)


async def _fogline_pub(port: int, n: int, payload: bytes) -> float:
    async with fogline.connect(f"127.0.0.1:{port}") as c:
        t0 = time.perf_counter()
        for _ in range(n):
            await c.publish("bench/sub", payload)
        await c.flush(120)
        return n / (time.perf_counter() - t0)


async def _nats_pub(port: int, n: int, payload: bytes) -> float:
    import nats

    nc = await nats.connect(f"nats://127.0.0.1:{port}")
    t0 = time.perf_counter()
    for _ in range(n):
        await nc.publish("bench.sub", payload)
    await nc.flush(120)
    rate = n / (time.perf_counter() - t0)
    await nc.close()
    return rate


# ------------------------------------------------------------------------- driver


def counts(size: int, scale: float) -> Dict[str, int]:
    base = {"batched": 300_000, "acked": 150_000, "subscribe": 150_000}
    if size >= 1024:
        # Fewer acked and subscribed records (paho takes 10 s for 75,000 acked ones);
        # as many batched ones, so that row lasts long enough to ride out disturbances.
        base = {"batched": 300_000, "acked": 75_000, "subscribe": 75_000}
    return {k: max(1000, int(v * scale)) for k, v in base.items()}


def run_system(system: str, fogline_bin: str, scale: float) -> List[Dict[str, Any]]:
    rows = []
    server = ServerProc(system, fogline_bin)
    try:
        for size in SIZES:
            payload = b"x" * size
            n = counts(size, scale)
            for scenario in ("batched", "acked", "subscribe"):
                t0 = time.perf_counter()
                if system == "fogline":
                    fn: Callable[..., Any] = {
                        "batched": fogline_batched, "acked": fogline_acked, "subscribe": fogline_subscribe,
                    }[scenario]
                    arg = size if scenario == "subscribe" else payload
                    result = asyncio.run(fn(server.port, n[scenario], arg))
                elif system == "nats":
                    fn = {"batched": nats_batched, "acked": nats_acked, "subscribe": nats_subscribe}[scenario]
                    arg = size if scenario == "subscribe" else payload
                    result = asyncio.run(fn(server.port, n[scenario], arg))
                else:
                    fn = {"batched": paho_batched, "acked": paho_acked, "subscribe": paho_subscribe}[scenario]
                    arg = size if scenario == "subscribe" else payload
                    result = fn(server.port, n[scenario], arg)
                row = {"system": system, "size": size, "scenario": scenario, "records": n[scenario]}
                row.update(result if isinstance(result, dict) else {"rate": result})
                row["seconds"] = round(time.perf_counter() - t0, 2)
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        server.stop()
    return rows


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def versions(fogline_bin: str) -> Dict[str, str]:
    from importlib.metadata import version

    def out(cmd: List[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
        except Exception as e:  # noqa: BLE001 - reported as it is
            return f"? ({e})"

    return {
        "fogline server": out([fogline_bin, "--version"]),
        "fogline SDK": fogline.__version__,
        "nats-server": out(["nats-server", "--version"]),
        "nats-py": version("nats-py"),
        "mosquitto": out(["mosquitto", "-h"]),
        "paho-mqtt": version("paho-mqtt"),
    }


def summarize(rows: List[Dict[str, Any]], rounds: int) -> str:
    lines = [
        "| scenario | size | fogline (median rec/s) | nats-py / NATS | paho / Mosquitto | fogline / NATS (min-max) | fogline / Mosquitto (min-max) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for scenario in ("batched", "acked", "subscribe"):
        for size in SIZES:
            per: Dict[str, List[float]] = {}
            for s in SYSTEMS:
                per[s] = [r["rate"] for r in rows if r["system"] == s and r["size"] == size and r["scenario"] == scenario]
            med = {s: statistics.median(v) if v else 0.0 for s, v in per.items()}

            def ratios(peer: str) -> str:
                rs = [f / p for f, p in zip(per["fogline"], per[peer]) if p]
                if not rs:
                    return "-"
                return f"{statistics.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"

            lines.append(
                f"| {scenario} | {size} B | {med['fogline']:,.0f} | {med['nats']:,.0f} | {med['mosquitto']:,.0f} "
                f"| {ratios('nats')} | {ratios('mosquitto')} |"
            )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--publisher":
        publisher_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fogline", default="target/release/fogline", help="the fogline binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the record counts")
    ap.add_argument("--out", help="directory for results.json and summary.md")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    rows: List[Dict[str, Any]] = []
    started = time.time()
    for r in range(args.rounds):
        # Interleaved: every system once per round, the order rotating.
        order = SYSTEMS[r % 3 :] + SYSTEMS[: r % 3]
        for system in order:
            load_before = Path("/proc/loadavg").read_text().split()[0]
            for row in run_system(system, args.fogline, args.scale):
                row["round"] = r
                row["loadavg_before"] = float(load_before)
                rows.append(row)
    summary = summarize(rows, args.rounds)
    print(summary)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "machine": machine(),
            "versions": versions(args.fogline),
            "rounds": args.rounds,
            "scale": args.scale,
            "seconds": round(time.time() - started, 1),
            "rows": rows,
        }
        (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / "summary.md").write_text(summary + "\n")


if __name__ == "__main__":
    main()
