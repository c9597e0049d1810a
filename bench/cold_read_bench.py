#!/usr/bin/env python3
"""What a page of a diff costs the server when its records are cold (issue 22).

    python bench/cold_read_bench.py [--records 200000] [--size 1000] [--passes 3]

In-process: an engine on a :class:`DataDirectory` in a temporary directory, filled with
``--records`` records of ``--size`` bytes in writes of 1000 (so a page of 1000 is one chunk of
~1 MiB), checkpointed (every record sealed and cold), then paged through with diffs of 1000 as
the server's handler runs them (``read_strictly``, else ``read_without_blocking``), in three ways:

- ``cold``: cache 0 — every page reads its chunk back (from the OS page cache: the segment was
  just written, so ``RWF_NOWAIT`` serves it on the event loop);
- ``cold_disk``: cache 0 and a file system that reports nothing in the page cache — every chunk
  is loaded on a reader thread while the read awaits;
- ``cached``: a cache larger than the data, after one pass — every page is a cache hit.

For each, the median over ``--passes`` of the process CPU time and the wall time per page
(``time.process_time`` covers every thread), printed as JSON on stdout::

    {"records": ..., "size": ..., "pages": ...,
     "cold": {"cpu_ms_per_page": ..., "wall_ms_per_page": ...}, "cold_disk": {...}, "cached": {...}}

No HTTP and no client: the difference between the rows is what reading cold adds to a page.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path

from topics_engine import Engine, Limits, SystemClock
from topics_engine.coldreads import ColdRead, read_strictly, read_without_blocking
from topics_engine.datadir.directory import DataDirectory
from topics_engine.storage.fs import FileSystem


class NoPageCache(FileSystem):
    """Nothing is ever in the page cache: every cold chunk goes to a reader thread."""

    def pread_cached(self, path: Path, offset: int, length: int, into: bytearray) -> memoryview | None:
        return None


async def _fill(engine: Engine, records: int, size: int) -> None:
    pad = "x" * max(0, size - 30)
    for start in range(0, records, 1000):
        engine.append("t", [{"data": {"i": i, "pad": pad}} for i in range(start, min(records, start + 1000))])
        await asyncio.sleep(0)


async def _page_through(engine: Engine) -> int:
    cursor, pages = 0, 0
    while True:
        read = functools.partial(engine.diff, "t", from_seq=cursor, limit=1000)
        try:
            page = read_strictly(read)
        except ColdRead:
            page = await read_without_blocking(read)
        pages += 1
        if page.caught_up:
            return pages
        cursor = page.next_from_seq


async def _measure(path: Path, fs: FileSystem, cache_bytes: int, warm: bool, passes: int) -> dict[str, float]:
    engine = Engine(SystemClock(), Limits())
    store = DataDirectory(path, fs, cache_bytes=cache_bytes)
    store.lock()
    for _ in store.recover(engine):
        pass
    store.open(engine, asyncio.get_running_loop())
    try:
        if warm:
            await _page_through(engine)
        cpu, wall = [], []
        for _ in range(passes):
            c0, w0 = time.process_time(), time.perf_counter()
            pages = await _page_through(engine)
            cpu.append((time.process_time() - c0) * 1000 / pages)
            wall.append((time.perf_counter() - w0) * 1000 / pages)
        return {
            "cpu_ms_per_page": round(statistics.median(cpu), 3),
            "wall_ms_per_page": round(statistics.median(wall), 3),
        }
    finally:
        store.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data"
        engine = Engine(SystemClock(), Limits())
        store = DataDirectory(path)
        store.lock()
        for _ in store.recover(engine):
            pass
        store.open(engine, asyncio.get_running_loop())
        await _fill(engine, args.records, args.size)
        await store.checkpoint(final=True)
        store.close()
        out: dict[str, object] = {
            "records": args.records,
            "size": args.size,
            "pages": -(-args.records // 1000),
        }
        out["cold"] = await _measure(path, FileSystem(), 0, False, args.passes)
        out["cold_disk"] = await _measure(path, NoPageCache(), 0, False, args.passes)
        out["cached"] = await _measure(path, FileSystem(), 4 * args.records * args.size, True, args.passes)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
