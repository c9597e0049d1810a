#!/usr/bin/env python3
"""``topics serve`` under tracemalloc, for memory-growth hunts (``bench/soak.py --trace-dir``).

    python bench/traced_serve.py DIR [--every 60] [--frames 8]

Runs the server exactly as ``topics serve`` does (configured by ``TOPICS_*``), with
:mod:`tracemalloc` started first and a daemon thread that, every ``--every`` seconds, writes to
``DIR``:

* ``snap-NNNN.tracemalloc`` — a :class:`tracemalloc.Snapshot` (``Snapshot.load``), and
* ``counts-NNNN.json`` — ``{"t": seconds since start, "rss_kb", "traced_bytes", "types":
  {type name: live objects}}`` for the 80 commonest types the cyclic collector tracks (frozen
  objects included).

Compare two snapshots with ``python bench/traced_serve.py --diff A B`` (the 25 biggest growths
by line, then by traceback for the top 3). tracemalloc slows the server several times over: run
the load at a lower rate, and judge growth over time, not absolute sizes.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import sys
import threading
import time
import tracemalloc
from pathlib import Path


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _type_counts(top: int = 80) -> dict[str, int]:
    """Live objects by type, frozen ones included (the server freezes survivors every 0.5 s;
    ``gc.get_objects`` skips the frozen generation, so it is thawed for the count and frozen
    again, without a collection)."""
    gc.unfreeze()
    try:
        counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    finally:
        gc.freeze()
    return dict(counts.most_common(top))


def _snapshots(out: Path, every: float) -> None:
    started = time.monotonic()
    for n in range(1_000_000):
        time.sleep(every)
        snap = tracemalloc.take_snapshot()
        snap.dump(str(out / f"snap-{n:04d}.tracemalloc"))
        doc = {
            "t": round(time.monotonic() - started, 1),
            "rss_kb": _rss_kb(),
            "traced_bytes": tracemalloc.get_traced_memory()[0],
            "types": _type_counts(),
        }
        (out / f"counts-{n:04d}.json").write_text(json.dumps(doc))


def diff(a: Path, b: Path, top: int = 25) -> None:
    old, new = tracemalloc.Snapshot.load(str(a)), tracemalloc.Snapshot.load(str(b))
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    old, new = old.filter_traces(ignore), new.filter_traces(ignore)
    for stat in new.compare_to(old, "lineno")[:top]:
        print(stat)
    for stat in new.compare_to(old, "traceback")[:3]:
        print(f"\n{stat.size_diff / 1024:.1f} KiB in {stat.count_diff:+d} blocks:")
        for line in stat.traceback.format():
            print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, nargs="?")
    ap.add_argument("--every", type=float, default=60.0)
    ap.add_argument("--frames", type=int, default=6)
    ap.add_argument("--diff", type=Path, nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.diff:
        diff(*args.diff)
        return 0
    if args.dir is None:
        ap.error("DIR is required")
    args.dir.mkdir(parents=True, exist_ok=True)
    # import what the server runs before tracing starts: import-time allocations never grow,
    # and importing under tracemalloc takes tens of seconds
    import uvloop  # noqa: F401
    from topics_engine import datadir  # noqa: F401
    from topics_server import app, context, http  # noqa: F401
    from topics_server.cli import main as serve_main

    tracemalloc.start(args.frames)
    threading.Thread(target=_snapshots, args=(args.dir, args.every), daemon=True).start()
    return serve_main(["serve"])


if __name__ == "__main__":
    sys.exit(main())
