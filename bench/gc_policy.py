"""The cyclic collector against a large retained data set, in process: should the server still
freeze long-lived objects (``topics_server.context.Freezer``)?

    .venv/bin/python -m bench.gc_policy --records 1000000 --seconds 60   # prints JSON lines

Loads ``--records`` records of 100 B–1 KB in batches of 100 into 10 capped topics with the
collector disabled (as recovery does), then appends batches of 100 into the same topics (so
the data stays constant, old chunks leave) for ``--seconds`` under each policy, with a little
cyclic garbage per batch (what request handling leaves: 2 objects in a cycle):

* ``freeze``: ``Freezer.tick`` every 0.5 s (freeze; a sweep when due), as the server does;
* ``plain``: no freeze, the collector's default thresholds;
* ``once``: one freeze after the load, then the collector's default thresholds.

``--threshold A B C`` runs with ``gc.set_threshold(A, B, C)`` instead of the defaults.

Reports, per policy: records appended per second and CPU µs per record, collector pauses
(``gc.callbacks``: count, p99, max, total by generation), the freeze times, tracked objects and
the time of a full ``gc.collect()`` at the end (what a sweep costs). Every time is the thread's
CPU time, so a machine busy with other work does not inflate it. ``--durable``: a data
directory (``disk`` topics, sealed into segments), loaded, closed and recovered first.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir import DataDirectory
from topics_engine.records import NewRecords
from topics_server import context
from topics_server.bodies import BodyCompiler, BodyDecoder
from topics_server.spec import load_document

TOPICS = 10
BATCH = 100


class Pauses:
    """Collector pauses by generation, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.started = 0.0
        self.by_gen: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = time.thread_time()
        else:
            self.by_gen[info["generation"]].append(time.thread_time() - self.started)

    def summary(self) -> dict[str, Any]:
        every = sorted(p for ps in self.by_gen.values() for p in ps)
        p99 = every[int(len(every) * 0.99)] if every else 0.0
        return {
            "collections": {g: len(ps) for g, ps in self.by_gen.items()},
            "pause_p99_ms": round(p99 * 1000, 2),
            "pause_max_ms": round(max(every, default=0.0) * 1000, 1),
            "pause_total_ms": {g: round(sum(ps) * 1000, 1) for g, ps in self.by_gen.items()},
            "gen2_max_ms": round(max(self.by_gen[2], default=0.0) * 1000, 1),
        }


class Cycle:
    def __init__(self) -> None:
        self.other: Any = self


def batches(rng: random.Random, decoder: BodyDecoder, n: int) -> list[Any]:
    """``n`` decoded append bodies of ``BATCH`` records of 100 B–1 KB (reused round-robin)."""
    out = []
    for i in range(n):
        recs = [{"data": {"i": i, "pad": "x" * rng.randrange(80, 1000)}} for _ in range(BATCH)]
        out.append(decoder.decode(json.dumps({"records": recs}).encode()).records)
    return out


def append(engine: Engine, i: int, body: Any) -> None:
    records = NewRecords.from_objects(body, None, msgspec.UNSET, msgspec.json.encode)
    engine.append(f"t{i % TOPICS}", records)


async def load(engine: Engine, bodies: list[Any], records: int, topics: dict[str, Any]) -> None:
    for t in range(TOPICS):
        engine.put_topic(f"t{t}", {"cap_records": records // TOPICS, **topics})
    gc.disable()
    for i in range(records // BATCH):
        append(engine, i, bodies[i % len(bodies)])
        if i % 20 == 0:
            await asyncio.sleep(0)
    gc.enable()


async def durable_engine(data_dir: str, bodies: list[Any], records: int) -> tuple[Engine, DataDirectory]:
    """An engine recovered from ``data_dir`` (as the server recovers: collector disabled),
    after loading ``records`` into it and closing it cleanly."""
    clock = ManualClock(1_700_000_000_000)
    engine, store = Engine(clock, Limits()), DataDirectory(Path(data_dir))
    store.lock()
    for _ in store.recover(engine):
        pass
    store.open(engine, asyncio.get_running_loop())
    await load(engine, bodies, records, {"durability": "disk"})
    await store.checkpoint()
    store.close()
    engine, store = Engine(clock, Limits()), DataDirectory(Path(data_dir))
    store.lock()
    gc.disable()
    for _ in store.recover(engine):
        pass
    gc.enable()
    store.open(engine, asyncio.get_running_loop())
    return engine, store


async def run(policy: str, records: int, seconds: float, data_dir: str | None) -> dict[str, Any]:
    rng = random.Random(1)
    decoder = BodyDecoder(
        BodyCompiler(load_document()).compile({"$ref": "#/components/schemas/AppendRequest"})
    )
    bodies = batches(rng, decoder, 200)
    store = None
    if data_dir is None:
        engine = Engine(ManualClock(1_700_000_000_000), Limits())
        await load(engine, bodies, records, {})
    else:
        engine, store = await durable_engine(data_dir, bodies, records)
    if policy in ("freeze", "once"):
        context.freeze_long_lived()
    pauses = Pauses()
    gc.callbacks.append(pauses)
    freezer = context.Freezer(time.monotonic())
    ticks: list[float] = []
    start = next_tick = time.monotonic()
    cpu = time.thread_time()
    n = 0
    while (now := time.monotonic()) - start < seconds:
        for _ in range(20):
            append(engine, n, bodies[n % len(bodies)])
            Cycle()
            n += 1
        await asyncio.sleep(0)
        if policy == "freeze" and now >= next_tick:
            t0 = time.thread_time()
            freezer.tick(now)
            ticks.append(time.thread_time() - t0)
            next_tick = now + context.FREEZE_INTERVAL_S
    elapsed = time.monotonic() - start
    cpu = time.thread_time() - cpu
    gc.callbacks.remove(pauses)
    gc.unfreeze()
    tracked = len(gc.get_objects())
    t0 = time.thread_time()
    gc.collect()
    full_ms = (time.thread_time() - t0) * 1000
    if store is not None:
        store.close()
    ticks.sort()
    return {
        "policy": policy,
        "records": records,
        "durable": data_dir is not None,
        "threshold": gc.get_threshold(),
        "appended_per_s": round(n * BATCH / elapsed),
        "cpu_us_per_record": round(cpu / (n * BATCH) * 1e6, 3),
        "gc_cpu_share": round(sum(map(sum, pauses.by_gen.values())) / cpu, 4),
        **pauses.summary(),
        "freeze_ticks": len(ticks),
        "freeze_p99_ms": round(ticks[int(len(ticks) * 0.99)] * 1000, 1) if ticks else None,
        "freeze_max_ms": round(ticks[-1] * 1000, 1) if ticks else None,
        "sweeps": freezer.sweeps,
        "tracked_objects": tracked,
        "full_collect_ms": round(full_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--policy", choices=("freeze", "plain", "once"), action="append")
    parser.add_argument("--threshold", type=int, nargs=3, help="gc.set_threshold for the run")
    parser.add_argument("--durable", action="store_true", help="a data directory: load, close, recover")
    args = parser.parse_args()
    if args.threshold:
        gc.set_threshold(*args.threshold)
    for policy in args.policy or ("freeze", "plain", "once"):
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(run(policy, args.records, args.seconds, tmp if args.durable else None))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
