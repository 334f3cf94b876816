"""Replay a stream into a pandas DataFrame: the readings of the last N minutes, one row
each, then a per-robot summary.

    pip install pandas
    python replay_to_pandas.py --minutes 60

Without pandas installed it prints the same summary from plain Python.
"""

import argparse
import asyncio
import json
import os

import fogline


async def load(addr: str, minutes: float) -> list:
    rows = []
    async with fogline.connect(addr, name="replay") as client:
        async for msg in client.replay("default", filter="sensors/+/temp", ago=minutes * 60):
            reading = json.loads(msg.payload)
            reading.update(offset=msg.offset, time_us=msg.timestamp, topic=msg.topic)
            rows.append(reading)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default=os.environ.get("FOGLINE_ADDR", "127.0.0.1:7766"))
    ap.add_argument("--minutes", type=float, default=60)
    args = ap.parse_args()
    rows = asyncio.run(load(args.addr, args.minutes))
    print(f"{len(rows)} readings replayed")
    try:
        import pandas as pd
    except ImportError:
        by_robot: dict = {}
        for r in rows:
            by_robot.setdefault(r["id"], []).append(r["temperature"])
        for robot, temps in sorted(by_robot.items()):
            print(f"{robot}: n={len(temps)} mean={sum(temps) / len(temps):.2f} max={max(temps):.2f}")
        return
    df = pd.DataFrame(rows)
    if df.empty:
        return
    df["time"] = pd.to_datetime(df["time_us"], unit="us", utc=True)
    print(df.groupby("id")["temperature"].agg(["count", "mean", "max"]).round(2))


if __name__ == "__main__":
    main()
