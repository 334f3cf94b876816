"""cProfile of the batched publish path: where a loop of `await client.publish(...)`
spends its time (the server must be running: `fogline serve --storage memory`).

    python3 python/bench/profile_publish.py --addr 127.0.0.1:7766 --count 300000 --size 64
"""

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import fogline  # noqa: E402


async def publish(addr: str, n: int, size: int) -> float:
    payload = b"x" * size
    async with fogline.connect(addr) as client:
        t0 = time.perf_counter()
        for _ in range(n):
            await client.publish("bench/profile", payload)
        await client.flush()
        return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default="127.0.0.1:7766")
    ap.add_argument("--count", type=int, default=300_000)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    print(f"without the profiler: {asyncio.run(publish(args.addr, args.count, args.size)):,.0f} records/s")
    prof = cProfile.Profile()
    prof.enable()
    rate = asyncio.run(publish(args.addr, args.count, args.size))
    prof.disable()
    print(f"under cProfile: {rate:,.0f} records/s")
    pstats.Stats(prof).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
