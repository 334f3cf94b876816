"""Publish sensor readings: JSON payloads with a data profile in the headers.

    python publish_sensors.py --count 10000 --rate 0       # as fast as possible
    python publish_sensors.py --count 600 --rate 10        # 10 readings/s per run

Every 50th reading of robot r3 is an outlier, for the anomaly example to find.
"""

import argparse
import asyncio
import json
import math
import os
import random
import time

import fogline


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default=os.environ.get("FOGLINE_ADDR", "127.0.0.1:7766"))
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--rate", type=float, default=0, help="readings per second (0: no limit)")
    ap.add_argument("--robots", type=int, default=5)
    args = ap.parse_args()

    async with fogline.connect(args.addr, name="sensor-publisher") as client:
        start = time.perf_counter()
        for i in range(args.count):
            robot = f"r{i % args.robots + 1}"
            temp = 21.0 + 2.0 * math.sin(i / 100) + random.gauss(0, 0.2)
            if robot == "r3" and i % 50 == 2 and i > 500:
                temp += 15.0  # an outlier
            reading = {"id": robot, "temperature": round(temp, 3), "seq": i}
            await client.publish(
                f"sensors/{robot}/temp",
                json.dumps(reading).encode(),
                headers={"type": "thermometer", "robot": robot},
            )
            if args.rate:
                await asyncio.sleep(max(0.0, start + (i + 1) / args.rate - time.perf_counter()))
        # One acknowledged record at the end: once it is stored, so is everything before.
        await client.publish("sensors/done", b"", ack=True)
        elapsed = time.perf_counter() - start
        print(f"published {args.count} readings in {elapsed:.2f} s ({args.count / elapsed:,.0f}/s)")


if __name__ == "__main__":
    asyncio.run(main())
