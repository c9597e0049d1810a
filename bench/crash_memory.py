#!/usr/bin/env python3
"""What a crash costs in memory: many small topics, ``kill -9``, restart (docs/DECISIONS.md,
"Seqs are never reused": the skipped range must cost nothing).

    python bench/crash_memory.py [--topics 10000] [--commit REV] [--out result.json]

A server on a fresh data directory gets ``--topics`` ``disk`` topics, each created by a
one-record append (8 connections). It is ``kill -9``-ed, restarted on the same directory, and
measured once ready: RSS (``VmRSS``), how far a topic's head moved (the seqs skipped so none that
may have been acknowledged is reused), the time of a diff from 0 that crosses the skipped range,
and a diff page's ``caught_up``. The same directory is then stopped cleanly (SIGTERM) and
restarted once more for reference (no skip). ``--commit REV`` runs that commit's server
(``git archive``, C extension built), e.g. ``--commit 34ba1d7`` for the engine before sparse
skips. JSON on stdout (and ``--out``); exit 1 if a restarted topic lost its record.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.durability_bench import checkout  # noqa: E402
from bench.http_bench import Server, topics_server  # noqa: E402
from bench.output import emit  # noqa: E402

CONNECTIONS = 8


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def create_topics(base: str, n: int) -> None:
    async with aiohttp.ClientSession() as session:

        async def worker(k: int) -> None:
            for i in range(k, n, CONNECTIONS):
                body = {"records": [{"data": {"i": i}}], "config": {"durability": "disk"}}
                async with session.post(f"{base}/v0/topics/t{i}", json=body) as resp:
                    if resp.status not in (200, 201):
                        raise RuntimeError(f"append to t{i}: {resp.status} {await resp.text()}")

        await asyncio.gather(*(worker(k) for k in range(CONNECTIONS)))


async def probe(base: str, n: int) -> dict[str, Any]:
    """State after a restart: heads, the cost of a diff across the skipped range, and that
    every sampled topic still has its one record."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/v0/topics/t0") as resp:
            state = await resp.json()
        started = time.perf_counter()
        async with session.post(f"{base}/v0/topics/t0/diff", json={"from_seq": 0}) as resp:
            page = await resp.json()
        diff_ms = (time.perf_counter() - started) * 1000
        missing = 0
        for i in range(0, n, max(1, n // 100)):
            async with session.get(f"{base}/v0/topics/t{i}") as resp:
                missing += (await resp.json())["count"] != 1
    return {
        "head_seq": state["head_seq"],
        "count": state["count"],
        "diff_from_0_ms": round(diff_ms, 2),
        "diff_records": len(page["records"]),
        "diff_caught_up": page["caught_up"],
        "diff_next_from_seq": page["next_from_seq"],
        "sampled_topics_missing_their_record": missing,
    }


def restart(workdir: Path, src: Path | None) -> tuple[Server, float]:
    started = time.perf_counter()
    server = topics_server(False, workdir, src)
    server.wait_ready(timeout_s=600)
    return server, time.perf_counter() - started


def run(n: int, src: Path | None, workdir: Path) -> dict[str, Any]:
    server = topics_server(False, workdir, src)
    server.wait_ready()
    rss_empty = rss_bytes(server.pid)
    asyncio.run(create_topics(server.base, n))
    time.sleep(0.5)  # past the group-commit window: the records themselves are durable
    rss_filled = rss_bytes(server.pid)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    server.stop()

    server, ready_s = restart(workdir, src)
    after_kill = {
        "ready_s": round(ready_s, 3),
        "rss_bytes": rss_bytes(server.pid),
        **asyncio.run(probe(server.base, n)),
    }
    server.stop()  # SIGTERM: a clean stop records exact heads

    server, ready_s = restart(workdir, src)
    after_clean = {
        "ready_s": round(ready_s, 3),
        "rss_bytes": rss_bytes(server.pid),
        **asyncio.run(probe(server.base, n)),
    }
    server.stop()
    return {
        "topics": n,
        "rss_empty_bytes": rss_empty,
        "rss_filled_bytes": rss_filled,
        "after_kill9": after_kill,
        "after_clean_restart": after_clean,
        "kill9_rss_per_topic_bytes": round((after_kill["rss_bytes"] - rss_empty) / n),
        "clean_rss_per_topic_bytes": round((after_clean["rss_bytes"] - rss_empty) / n),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--commit", help="run this commit's server (git archive, extension built)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crash-memory-") as tmp:
        workdir = Path(tmp)
        src = checkout(args.commit, workdir / "src") if args.commit else None
        result = {"commit": args.commit or "working tree", **run(args.topics, src, workdir)}
    emit(result, args.out)
    lost = result["after_kill9"]["sampled_topics_missing_their_record"]
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
