#!/usr/bin/env python3
"""What sealed records keep resident: the per-chunk index a cold topic holds in memory.

    python bench/cold_index.py [--writes 20000] [--min-records 1] [--max-records 5]
                               [--min-bytes 16] [--max-bytes 2048] [--seed 1] [--out F.json]

An engine on a fresh data directory (in process, real clock and event loop) takes ``--writes``
appends to one ``disk`` topic, each of a random number of records (``--min/max-records``) with
random ``data`` strings (``--min/max-bytes``), some tagged — the soak's write shape
(``bench/soak.py``). A checkpoint then seals everything and the sealed chunks go cold, so no
record byte stays in memory and the chunk cache holds nothing. What remains is what the topic
keeps per sealed chunk: the chunk descriptor, record sizes, ``$ts`` runs, the tag summary, the
segment's chunk index and the cold-chunk handle.

Measured with ``tracemalloc`` (Python allocations, after a full collection) between the topic's
creation and the end: resident bytes per chunk, per record and per MB of record bytes, and the
chunk count. JSON on stdout (and ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topics_engine import Engine, Limits  # noqa: E402
from topics_engine.clock import SystemClock  # noqa: E402
from topics_engine.datadir.directory import DataDirectory  # noqa: E402
from topics_engine.storage.fs import FileSystem  # noqa: E402

from bench.output import emit  # noqa: E402


def records(rng: random.Random, args: argparse.Namespace) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(rng.randint(args.min_records, args.max_records)):
        record: dict[str, Any] = {"data": "x" * rng.randint(args.min_bytes, args.max_bytes)}
        if rng.random() < 0.3:
            record["tag"] = f"t{rng.randrange(1000)}"
        out.append(record)
    return out


async def measure(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    engine = Engine(SystemClock(), Limits())
    store = DataDirectory(data_dir, fs=FileSystem())
    store.lock()
    for _ in store.recover(engine):
        pass
    store.open(engine, asyncio.get_running_loop())
    rng = random.Random(args.seed)
    try:
        engine.append("t", records(rng, args), config={"durability": "disk"})
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(args.writes):
            engine.append("t", records(rng, args))
            if i % 500 == 0:
                await asyncio.sleep(0)  # let the WAL write
        await store.checkpoint()
        for _ in range(50):  # the sealed chunks go cold on the loop once their segment is durable
            await asyncio.sleep(0.01)
        topic = engine.topic("t")
        gc.collect()
        resident = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        log = topic.log
        chunks = len(log._chunks)
        hot = sum(1 for ch in log._chunks if ch.is_hot)
        count = topic.count
        size = topic.bytes
        return {
            "writes": args.writes,
            "records": count,
            "record_bytes": size,
            "chunks": chunks,
            "hot_chunks": hot,
            "resident_bytes": resident,
            "resident_per_chunk": round(resident / max(chunks, 1), 1),
            "resident_per_record": round(resident / max(count, 1), 1),
            "resident_mb_per_record_mb": round(resident / max(size, 1), 4),
        }
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--min-records", type=int, default=1)
    parser.add_argument("--max-records", type=int, default=5)
    parser.add_argument("--min-bytes", type=int, default=16)
    parser.add_argument("--max-bytes", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cold-index-") as tmp:
        result = asyncio.run(measure(args, Path(tmp)))
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
