"""A durable worker: fetch records in batches, process, acknowledge. Stop it and start
it again: it resumes after the last acknowledged record. Unacknowledged records come
again after the ack timeout (here: a reading that fails to parse is left unacked once).

    python durable_worker.py --name worker-1
"""

import argparse
import asyncio
import json
import os

import fogline


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default=os.environ.get("FOGLINE_ADDR", "127.0.0.1:7766"))
    ap.add_argument("--name", default="worker-1")
    ap.add_argument("--idle", type=float, default=0, help="stop after this many idle seconds (0: never)")
    args = ap.parse_args()
    done = 0
    async with fogline.connect(args.addr, name=args.name) as client:
        consumer = await client.consumer("default", args.name, filter="sensors/#", ack_timeout=10)
        while True:
            batch = await consumer.fetch(500, timeout=args.idle or 5)
            if not batch and args.idle:
                break
            for msg in batch:
                if msg.payload:
                    json.loads(msg.payload)
                msg.ack()
                done += 1
    print(f"{done} records processed and acknowledged")


if __name__ == "__main__":
    asyncio.run(main())
