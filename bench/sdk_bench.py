"""What the SDK costs over raw HTTP: the same work through ``topics.Client`` and through bare
``httpx`` + ``orjson`` requests, in one process, against one server.

- **append**: ``N`` small records (``bench/payloads.py`` events, ~100 B) — ``append_many`` (its
  own chunking and idempotency keys) vs ``POST /v0/topics/{t}`` bodies of 10 000 records.
- **read**: the same ``N`` records back — iterating ``client.read`` (``Record`` objects) vs
  paging ``diff`` (limit 1000) by ``next_from_seq`` and decoding each page with orjson.
- **worker** (``--worker-jobs``): draining a queue of jobs with ``topics.Worker`` (concurrency
  16, push over ``/work``, a no-op handler) vs 16 raw asyncio loops of claim(max=16) → ack the
  batch (peerbench P3's loop, on ``httpx``): what a hand-written drain does at its best.

The server runs with the elastic throttle off (``TOPICS_THROTTLE=false``): a back-to-back bulk
load trips it, and the SDK would retry the 429s while the raw loop has no retries. Rounds
alternate SDK and raw so drift hits both; the medians and the SDK ÷ raw ratios are
printed as JSON (``--out`` also writes them). The server runs as a subprocess on CPU 0, this
process on CPU 1 (``--no-pin`` to not pin).

    .venv/bin/python bench/sdk_bench.py --records 1000000 --rounds 3 --out bench/results/sdk-<commit>.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import topics  # noqa: E402

from bench.http_bench import CLIENT_CPU, can_pin, git, topics_server  # noqa: E402
from bench.output import emit  # noqa: E402
from bench.payloads import make_data  # noqa: E402

RAW_BATCH = 10_000
RAW_PAGE = 1000
RAW_CLAIM = 16
HEADERS = {"content-type": "application/json", "accept-encoding": "identity"}


def records(n: int) -> list[dict[str, Any]]:
    return [{"data": make_data(i)} for i in range(n)]


def sdk_append(base: str, topic: str, recs: list[dict[str, Any]]) -> None:
    with topics.Client(base) as client:
        result = client.append_many(topic, recs)
    assert result.count == len(recs)


def raw_append(base: str, topic: str, recs: list[dict[str, Any]]) -> None:
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as http:
        for i in range(0, len(recs), RAW_BATCH):
            body = orjson.dumps({"records": recs[i : i + RAW_BATCH]})
            r = http.post(f"/v0/topics/{topic}", content=body)
            assert r.status_code in (200, 201), r.text


def sdk_read(base: str, topic: str, n: int) -> None:
    with topics.Client(base) as client:
        count = sum(1 for _ in client.read(topic))
    assert count == n, count


def raw_read(base: str, topic: str, n: int) -> None:
    count, cursor = 0, 0
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as http:
        while True:
            body = orjson.dumps({"from_seq": cursor, "limit": RAW_PAGE, "include_tags": True})
            page = orjson.loads(http.post(f"/v0/topics/{topic}/diff", content=body).content)
            count += len(page["records"])
            cursor = page["next_from_seq"]
            if page["caught_up"]:
                break
    assert count == n, count


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fill_queue(base: str, queue: str, jobs: int) -> None:
    with topics.Client(base) as client:
        client.create_topic(queue, type="queue")
        client.append_many(queue, [{"data": {"job": i}} for i in range(jobs)])


def sdk_drain(base: str, queue: str, jobs: int) -> None:
    with topics.Client(base) as client:
        stats = topics.Worker(client, queue, lambda job: None, concurrency=16).drain()
    assert stats.processed == jobs, stats


def raw_drain(base: str, queue: str, jobs: int) -> None:
    async def main() -> int:
        done = 0
        async with httpx.AsyncClient(base_url=base, headers=HEADERS, timeout=60) as http:

            async def loop(node: str) -> None:
                nonlocal done
                while True:
                    body = orjson.dumps({"node": node, "max": RAW_CLAIM})
                    answer = await http.post(f"/v0/topics/{queue}/claim", content=body)
                    claimed = orjson.loads(answer.content)
                    if not claimed["claimed"]:
                        return
                    seqs = [j["$seq"] for j in claimed["claimed"]]
                    ack = orjson.dumps({"node": node, "seqs": seqs})
                    await http.post(f"/v0/topics/{queue}/ack", content=ack)
                    done += len(seqs)

            await asyncio.gather(*(loop(f"raw-{i}") for i in range(16)))
        return done

    assert asyncio.run(main()) == jobs


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = args.records
    recs = records(n)
    times: dict[str, list[float]] = {k: [] for k in ("sdk_append", "raw_append", "sdk_read", "raw_read")}
    worker: dict[str, list[float]] = {"sdk_drain": [], "raw_drain": []}
    os.environ["TOPICS_THROTTLE"] = "false"  # inherited by the server
    with tempfile.TemporaryDirectory() as tmp:
        server = topics_server(args.pin, Path(tmp))
        try:
            server.wait_ready()
            for rnd in range(args.rounds):
                for kind in ("sdk", "raw") if rnd % 2 == 0 else ("raw", "sdk"):
                    topic = f"bench-{kind}-{uuid.uuid4().hex[:6]}"
                    append = sdk_append if kind == "sdk" else raw_append
                    read = sdk_read if kind == "sdk" else raw_read
                    times[f"{kind}_append"].append(timed(lambda: append(server.base, topic, recs)))  # noqa: B023
                    times[f"{kind}_read"].append(timed(lambda: read(server.base, topic, n)))  # noqa: B023
                    if args.worker_jobs:
                        queue = f"q-{kind}-{uuid.uuid4().hex[:6]}"
                        fill_queue(server.base, queue, args.worker_jobs)
                        drain = sdk_drain if kind == "sdk" else raw_drain
                        jobs = args.worker_jobs
                        worker[f"{kind}_drain"].append(timed(lambda: drain(server.base, queue, jobs)))  # noqa: B023
                    print(f"round {rnd} {kind} done", file=sys.stderr)
        finally:
            server.stop()

    def rate(count: int, seconds: list[float]) -> float:
        return round(count / statistics.median(seconds))

    out: dict[str, Any] = {
        "commit": git("rev-parse", "--short", "HEAD"),
        "records": n,
        "rounds": args.rounds,
        "pinned": args.pin,
        "seconds": times,
        "records_per_s": {k: rate(n, v) for k, v in times.items()},
    }
    rps = out["records_per_s"]
    out["sdk_over_raw_cost"] = {
        "append": round(rps["raw_append"] / rps["sdk_append"] - 1, 3),
        "read": round(rps["raw_read"] / rps["sdk_read"] - 1, 3),
    }
    if args.worker_jobs:
        out["worker_jobs"] = args.worker_jobs
        out["worker_seconds"] = worker
        jobs_s = {k: rate(args.worker_jobs, v) for k, v in worker.items()}
        out["jobs_per_s"] = jobs_s
        out["sdk_over_raw_cost"]["worker"] = round(jobs_s["raw_drain"] / jobs_s["sdk_drain"] - 1, 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker-jobs", type=int, default=0, help="also drain a queue of this many jobs")
    parser.add_argument("--no-pin", dest="pin", action="store_false")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.pin = args.pin and can_pin()
    if args.pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    result = run(args)
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
