#!/usr/bin/env python3
"""How long one ``GET /v0/metrics`` holds the event loop with many topics (§8.3).

    python bench/metrics_scrape.py [--topics 100000] [--runs 5] [--profile text|json]

In-process: an in-memory :class:`Engine` with ``--topics`` topics (names ``t000000``...; the
durability cycles through ``ephemeral``/``memory``/``disk``/``fsync``; every 10th topic is a
queue with 3 jobs of which 1 is claimed, the others are logs with 2 records), served by the real app
(``app.build``): each scrape is ``TopicsApp.handle`` of a ``GET /v0/metrics`` request — routing,
the handler, rendering — exactly what the server runs on its loop, so its duration is how long a
scrape stalls writes. The topics are frozen out of the cyclic collector first, as the server
freezes long-lived objects (``context.freeze_long_lived``). Text (default ``Accept``) and JSON
(``Accept: application/json``) are each timed ``--runs`` times after one warm-up; the medians
are printed as JSON on stdout::

    {"topics": 100000, "text_ms": ..., "json_ms": ..., "bytes": <text body size>, "json_bytes": ...}

``--profile text|json`` prints a cProfile of one more scrape of that format to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

from topics_engine import Engine, ManualClock
from topics_engine.queues import Queues
from topics_server.app import TopicsApp, build
from topics_server.context import freeze_long_lived
from topics_server.request import Request
from topics_server.responses import Response
from topics_server.settings import load_settings

CLASSES = ("ephemeral", "memory", "disk", "fsync")
TEXT: list[tuple[bytes, bytes]] = []
JSON = [(b"accept", b"application/json")]


def populate(engine: Engine, topics: int) -> None:
    """``topics`` topics: logs with 2 records, every 10th a queue with 3 jobs, 1 claimed."""
    queues = Queues(engine)
    for i in range(topics):
        name = f"t{i:06d}"
        queue = i % 10 == 0
        fields = {"durability": CLASSES[i % 4], **({"type": "queue"} if queue else {})}
        engine.put_topic(name, fields)
        engine.append(name, [{"data": n} for n in range(3 if queue else 2)])
        if queue:
            queues.claim(name, "bench", 1)


def scrape(app: TopicsApp, headers: list[tuple[bytes, bytes]]) -> Response:
    out = app.handle(Request("GET", "/v0/metrics", b"", headers))
    assert isinstance(out, Response) and out.status == 200, out
    return out


def timed(app: TopicsApp, headers: list[tuple[bytes, bytes]], runs: int) -> tuple[float, int]:
    """Median milliseconds of ``runs`` scrapes (after one warm-up), and the body size."""
    size = scrape(app, headers).length
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        scrape(app, headers)
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 2), size


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", choices=["text", "json"])
    args = parser.parse_args()

    settings = load_settings({})
    engine = Engine(ManualClock(), settings.limits)
    started = time.perf_counter()
    populate(engine, args.topics)
    print(f"created {args.topics} topics in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    freeze_long_lived()  # as the server does after recovery and every 0.5 s
    app, _ = build(settings, engine)

    text_ms, text_bytes = timed(app, TEXT, args.runs)
    json_ms, json_bytes = timed(app, JSON, args.runs)
    print(
        json.dumps(
            {
                "topics": args.topics,
                "text_ms": text_ms,
                "json_ms": json_ms,
                "bytes": text_bytes,
                "json_bytes": json_bytes,
            }
        )
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(scrape, app, TEXT if args.profile == "text" else JSON)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
