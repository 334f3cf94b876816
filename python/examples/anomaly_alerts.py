"""A live anomaly alert consumer: a running z-score per sensor over its readings;
readings far from the sensor's mean are published as high-priority alerts.

    python anomaly_alerts.py                 # runs until Ctrl-C
    python anomaly_alerts.py --seconds 30    # or for a while

Run publish_sensors.py beside it. Alerts go to alerts/<robot> (subscribe with
`fogline sub 'alerts/#'`).
"""

import argparse
import asyncio
import json
import math
import os
from dataclasses import dataclass

import fogline


@dataclass
class Stats:
    """Welford's running mean and variance."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def z(self, x: float) -> float:
        if self.n < 30:
            return 0.0
        std = math.sqrt(self.m2 / (self.n - 1))
        return (x - self.mean) / std if std > 0 else 0.0

    def add(self, x: float) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default=os.environ.get("FOGLINE_ADDR", "127.0.0.1:7766"))
    ap.add_argument("--threshold", type=float, default=4.0)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: never)")
    args = ap.parse_args()

    stats: dict = {}
    alerts = 0
    async with fogline.connect(args.addr, name="anomaly-alerts") as client:
        sub = await client.subscribe("sensors/+/temp")
        print("listening on sensors/+/temp", flush=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + args.seconds if args.seconds else None
        while deadline is None or loop.time() < deadline:
            try:
                msg = await sub.next(timeout=0.5)
            except fogline.TimeoutError:
                continue
            reading = json.loads(msg.payload)
            s = stats.setdefault(reading["id"], Stats())
            z = s.z(reading["temperature"])
            if abs(z) >= args.threshold:
                alerts += 1
                alert = {"id": reading["id"], "temperature": reading["temperature"], "z": round(z, 1)}
                print("ALERT", alert, flush=True)
                await client.publish(f"alerts/{reading['id']}", json.dumps(alert), priority=True)
            else:
                s.add(reading["temperature"])
    print(f"{alerts} alerts")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
