"""How much slower the same Python work runs right after the process slept (this machine's wake-up
penalty): what separates P5's N = 1 latency, one write every 20 ms, from the same path under
steady load.

A fixed piece of interpreter work (JSON encode and decode, dict and attribute access: the kind
of code a request runs) is timed after sleeps of 0 (back to back), 0.1, 1, 5 and 20 ms. A
server that handles one request per 20 ms pays the 20 ms row on every request; a busy one pays
the 0 row.

    python bench/wake_penalty.py [--runs 300] [--cpu 0]

Prints one JSON object: per sleep, the median and p90 of the work in µs and its ratio to the
back-to-back median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

SLEEPS_MS = (0.0, 0.1, 1.0, 5.0, 20.0)


class _Item:
    __slots__ = ("key", "seq", "tags")

    def __init__(self, key: str, seq: int, tags: list[str]) -> None:
        self.key, self.seq, self.tags = key, seq, tags


DOCS = [{"id": i, "name": f"record-{i}", "tags": ["a", "b", str(i)], "score": i * 0.5} for i in range(12)]


def work() -> int:
    """About 100 µs of typical interpreter work on a warm core of this machine."""
    total = 0
    for doc in DOCS:
        raw = json.dumps(doc)
        back = json.loads(raw)
        item = _Item(back["name"], back["id"], back["tags"])
        total += item.seq + len(item.key) + len(item.tags)
    return total


def measure(sleep_ms: float, runs: int) -> dict[str, Any]:
    times = []
    for _ in range(runs):
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        start = time.perf_counter_ns()
        work()
        times.append((time.perf_counter_ns() - start) / 1000)
    times.sort()
    return {
        "sleep_ms": sleep_ms,
        "median_us": round(statistics.median(times), 1),
        "p90_us": round(times[int(len(times) * 0.9)], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU (as peerbench pins the server)")
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    for _ in range(50):  # warm the code paths
        work()
    rows = [measure(ms, args.runs) for ms in SLEEPS_MS]
    base = rows[0]["median_us"]
    for row in rows:
        row["ratio"] = round(row["median_us"] / base, 2)
    print(json.dumps({"runs": args.runs, "cpu": args.cpu, "rows": rows}))


if __name__ == "__main__":
    main()
