"""Schedules across kill -9 (an extension, issue 24; docs/DECISIONS.md, "Schedules") against a
real ``topics serve``.

Three schedules run every 100 ms, each appending a batch of records to its own topic: one with
``missed: "once"`` into a ``disk`` topic, one with ``missed: "skip"`` into an ``fsync`` topic,
one with ``"once"`` into a queue. The server is SIGKILLed at random moments while they run —
several times on one data directory, so later starts recover earlier crashes — and restarted.
A run appends for the latest due time at or before the moment it runs, so each batch's due time
is its ``$ts`` rounded down to the schedule's grid. After every restart:

- every schedule is back as it was put (topic, interval, records, ``missed``);
- no due time ran twice: every due time has exactly one batch, whole (a write commits whole);
- the schedule's ``runs_total`` is the number of batches, and ``last_run_ms`` the latest due
  time (a run's append and its ``SCHEDULE_RUN`` frame are one WAL write: both or neither);
- the schedules keep running after the restart.

The server runs with its elastic throttle on, as in production: a ``429 throttled`` (a busy
machine) is waited out as told (:class:`~tests.server.processes.WaitsOutThrottle`). Nothing
here is timed: the test waits for runs to happen, however slow the machine.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.crash_harness import ServerProcess
from tests.server.processes import WaitsOutThrottle

EVERY_MS = 100
BATCH = 20
SCHEDULES = {  # name -> (topic, topic config, missed)
    "tick.once": ("ticks.disk", {"durability": "disk"}, "once"),
    "tick.skip": ("ticks.fsync", {"durability": "fsync"}, "skip"),
    "tick.queue": ("ticks.queue", {"type": "queue", "durability": "fsync"}, "once"),
}
KILLS = 4
PATIENCE_S = 60.0
"""How long to wait for runs to happen on a loaded machine before giving up."""


def _client(base: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, timeout=10.0, transport=WaitsOutThrottle())


def _records(name: str) -> list[dict[str, Any]]:
    return [{"data": {"schedule": name, "i": i}, "tag": f"{name}:{i}"} for i in range(BATCH)]


def _body(name: str) -> dict[str, Any]:
    topic, _, missed = SCHEDULES[name]
    return {"topic": topic, "every_ms": EVERY_MS, "records": _records(name), "missed": missed}


async def _read_all(c: httpx.AsyncClient, topic: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = 0
    while True:
        r = await c.post(
            f"/v0/topics/{topic}/diff", json={"from_seq": cursor, "limit": 1000, "include_tags": True}
        )
        assert r.status_code == 200, r.text
        doc = orjson.loads(r.content)
        assert doc["tombstone"] is None, doc["tombstone"]
        out += doc["records"]
        cursor = doc["next_from_seq"]
        if doc["caught_up"]:
            return out


async def _schedule(c: httpx.AsyncClient, name: str) -> dict[str, Any]:
    r = await c.get(f"/v0/schedules/{name}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def _wait_runs(c: httpx.AsyncClient, at_least: dict[str, int]) -> None:
    """Until every schedule made at least that many runs (each has to run at least once more)."""
    deadline = time.monotonic() + PATIENCE_S
    while True:
        runs = {name: (await _schedule(c, name))["runs_total"] for name in SCHEDULES}
        if all(runs[name] >= n for name, n in at_least.items()):
            return
        assert time.monotonic() < deadline, f"schedules stopped running: {runs} (wanted {at_least})"
        await asyncio.sleep(0.05)


async def _settled(
    c: httpx.AsyncClient, name: str, topic: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The schedule and its topic's records as of one moment: the schedules keep running, so a
    run may land between the two reads, and an ``fsync`` topic shows a run's records only once
    they are durable — read again until no run did (same ``runs_total`` before and after the
    records) and the last run's records are there."""
    for _ in range(50):
        before = await _schedule(c, name)
        records = await _read_all(c, topic)
        after = await _schedule(c, name)
        last = after["last_run_ms"]
        visible = last is None or (records and records[-1]["$ts"] >= last)
        if before["runs_total"] == after["runs_total"] and visible:
            return after, records
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name}: never read between two runs")


def _check(name: str, schedule: dict[str, Any], records: list[dict[str, Any]], since_ms: int) -> int:
    """The oracle for one schedule and its topic; returns its runs."""
    assert {k: schedule[k] for k in ("topic", "every_ms", "missed")} == {
        k: v for k, v in _body(name).items() if k != "records"
    }, schedule
    assert schedule["records"] == _records(name)
    seqs = [r["$seq"] for r in records]
    assert seqs == sorted(set(seqs)), f"{name}: seqs not strictly increasing"
    by_due: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in records:
        by_due[since_ms + (r["$ts"] - since_ms) // EVERY_MS * EVERY_MS].append(r)
    for due, batch in by_due.items():
        assert len(batch) == BATCH, f"{name}: due time {due} ran {len(batch) / BATCH} times"
        assert [r["data"] for r in batch] == [rec["data"] for rec in _records(name)], f"{name}: {due}"
        assert len({r["$ts"] for r in batch}) == 1, f"{name}: one run is one write"
    assert schedule["runs_total"] == len(by_due), (name, schedule["runs_total"], len(by_due))
    assert schedule["last_run_ms"] == max(by_due), (name, schedule["last_run_ms"], max(by_due))
    assert schedule["next_run_ms"] > schedule["last_run_ms"]
    return len(by_due)


async def test_schedules_survive_kill_9_and_never_run_a_due_time_twice(tmp_path: Path) -> None:
    rng = random.Random("schedule-crash")
    server = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    server.start()
    since: dict[str, int] = {}
    try:
        await server.wait_ready()
        async with _client(server.base) as c:
            for name, (topic, config, _) in SCHEDULES.items():
                assert (await c.put(f"/v0/topics/{topic}", json=config)).status_code == 201
                r = await c.put(f"/v0/schedules/{name}", json=_body(name))
                assert r.status_code == 201, r.text
                since[name] = r.json()["next_run_ms"] - EVERY_MS  # the interval's anchor: the PUT
            await _wait_runs(c, dict.fromkeys(SCHEDULES, 1))
        runs = dict.fromkeys(SCHEDULES, 0)
        for _ in range(KILLS):
            await asyncio.sleep(rng.uniform(0.05, 0.6))  # somewhere in the middle of the runs
            server.sigkill()
            server.start()
            await server.wait_ready()
            async with _client(server.base) as c:
                for name, (topic, _, _) in SCHEDULES.items():
                    runs[name] = _check(name, *await _settled(c, name, topic), since[name])
                await _wait_runs(c, {name: n + 1 for name, n in runs.items()})  # and they go on
        async with _client(server.base) as c:
            for name, (topic, _, _) in SCHEDULES.items():
                _check(name, *await _settled(c, name, topic), since[name])
    finally:
        server.kill()
