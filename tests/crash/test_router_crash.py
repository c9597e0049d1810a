"""Routers across kill -9 (§6; docs/DECISIONS.md, "Derived copies") against a real ``topics serve``.

An ``fsync`` source (every acked append survives) with two routers of the guarantee under test:
one into ``dest`` (auto-created: ``disk``, copies visible before they are durable) and one into
``dest.fsync`` (copies visible only once durable). Writers append batches with distinct data ids
over a few connections while a reader tails both dests; the server is SIGKILLed while forwarding
is still under way — in the same event-loop turn as an ack in the middle of the stream, as a
``GET /v0/routers/{name}`` showing a router at least one forwarding step behind, or as the last
ack — then restarted on the same data dir. Once every router reports ``lag`` 0:

- the source holds every acked batch (and only whole batches that were sent);
- each dest holds a copy of every source record, in source order, with strictly increasing dest
  seqs and the source's ``data``: ``exactly_once`` — each exactly once (and stamped with its
  source seq); ``at_least_once`` — a re-delivery at a crash point may repeat a contiguous run
  (at most one step back per crash, never a skip);
- a dest seq a reader saw before the crash holds the same copy or nothing (no seq reuse); in the
  ``fsync`` dest it still holds it (copies there were durable when visible);
- the router's ``cursor`` is the source head and its ``forwarded_total`` the copies in dest.

Several kill cycles run on one data dir, so the later ones also recover the earlier crashes.

The server runs with its elastic throttle on, as in production: on a busy machine it may answer
``429 throttled`` (nothing done), and every client here waits that out as told
(:class:`~tests.server.processes.WaitsOutThrottle`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from bench.crash_harness import ServerProcess
from tests.server.processes import WaitsOutThrottle

SOURCE = "src"
DESTS = {"dest": None, "dest.fsync": "fsync"}  # dest -> durability it is created with (None: auto)
WRITERS = 4
PAD = "x" * 40
JSON = {"Content-Type": "application/json"}
FORWARD_STEP = 1000  # topics_engine.routers.FORWARD_BATCH: most records one router copies per step
CYCLES = {  # kill mode -> (records per batch, batches): in this order, on one data dir
    "mid_stream": (40, 120),  # SIGKILL in the same turn as a random ack in the middle
    # in the same turn as a GET showing a router >= 1 step behind (the writers go on until then,
    # up to WHILE_FORWARDING_MAX times this many batches: on a loaded machine a router may keep
    # up with a few dozen batches, or the lag watch's GETs wait out the throttle meanwhile)
    "while_forwarding": (2000, 30),
    "after_last_ack": (40, 120),  # in the same turn as the last ack
}
CATCH_UP_S = 15.0
WHILE_FORWARDING_MAX = 8


def _router(dest: str) -> str:
    return f"{SOURCE}->{dest}"


def _client(base: str, timeout: float = 10.0) -> httpx.AsyncClient:
    """A client of the server that waits out a ``429 throttled`` (a busy machine) as told."""
    return httpx.AsyncClient(base_url=base, timeout=timeout, transport=WaitsOutThrottle())


@dataclass
class Load:
    """The writers' view: batches acked, and batches sent whose outcome is unknown."""

    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    acked: list[list[int]] = field(default_factory=list)
    inflight: list[list[int]] = field(default_factory=list)
    crashes: int = 0
    killed_with_lag: int = 0

    def sent_batches(self) -> list[list[int]]:
        return self.acked + self.inflight


async def _write_cycle(server: ServerProcess, load: Load, kill: str, rng: random.Random) -> None:
    """Append batches over ``WRITERS`` connections and SIGKILL the server as ``kill`` says;
    returns once it is dead (a reader tails the dests meanwhile)."""
    size, count = CYCLES[kill]
    most = count * WHILE_FORWARDING_MAX if kill == "while_forwarding" else count
    queue = ([next(load.ids) for _ in range(size)] for _ in range(most))
    kill_at = rng.randint(count // 3, 2 * count // 3) if kill == "mid_stream" else None
    state = {"acked": 0, "dead": False}

    def sigkill() -> None:
        if not state["dead"]:
            state["dead"] = True
            server.sigkill()

    async def writer(c: httpx.AsyncClient) -> None:
        for ids in queue:
            if state["dead"]:
                return
            body = orjson.dumps({"records": [{"data": {"id": i, "pad": PAD}} for i in ids]})
            try:
                r = await c.post(f"/v0/topics/{SOURCE}", content=body, headers=JSON)
            except httpx.TransportError:
                load.inflight.append(ids)  # may or may not have been applied
                return
            assert r.status_code in (200, 201), r.text
            assert len(r.json()["seqs"]) == len(ids)
            load.acked.append(ids)
            state["acked"] += 1
            if state["acked"] == kill_at or (kill == "after_last_ack" and state["acked"] == count):
                sigkill()  # in the same event-loop turn as this ack
            if state["dead"]:
                return

    async def lag_watch(c: httpx.AsyncClient) -> None:
        """``while_forwarding``: SIGKILL in the same turn as a GET showing a router with a
        backlog of at least one forwarding step, once a few batches are acked."""
        while not state["dead"]:
            if state["acked"] >= 2:
                for dest in DESTS:
                    try:
                        r = await c.get(f"/v0/routers/{_router(dest)}")
                    except httpx.TransportError:
                        return
                    if r.json()["lag"] >= FORWARD_STEP:
                        load.killed_with_lag += 1
                        sigkill()
                        return
            await asyncio.sleep(0.001)

    async with _client(server.base) as c:
        watch = asyncio.create_task(lag_watch(c)) if kill == "while_forwarding" else None
        await asyncio.gather(*(writer(c) for _ in range(WRITERS)))
        sigkill()  # the writers are done (or the server is already dead)
        if watch is not None:
            await watch
    load.crashes += 1


async def _tail(base: str, dest: str, seen: dict[int, int], stop: asyncio.Event) -> None:
    """Read ``dest`` with long-polls until ``stop`` or the server dies: ``seen`` maps dest seq ->
    data id of every copy a reader was shown."""
    cursor = max(seen, default=0)
    async with _client(base, timeout=5.0) as c:
        while not stop.is_set():
            try:
                r = await c.post(
                    f"/v0/topics/{dest}/diff", json={"from_seq": cursor, "limit": 1000, "wait_ms": 100}
                )
            except httpx.TransportError:
                return
            if r.status_code != 200:
                return
            doc = orjson.loads(r.content)
            for rec in doc["records"]:
                seen[rec["$seq"]] = rec["data"]["id"]
            cursor = doc["next_from_seq"]


async def _read_all(c: httpx.AsyncClient, topic: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = 0
    while True:
        r = await c.post(f"/v0/topics/{topic}/diff", json={"from_seq": cursor, "limit": 1000})
        assert r.status_code == 200, r.text
        doc = orjson.loads(r.content)
        assert doc["tombstone"] is None, doc["tombstone"]
        out += doc["records"]
        cursor = doc["next_from_seq"]
        if doc["caught_up"]:
            return out


async def _wait_caught_up(c: httpx.AsyncClient) -> None:
    deadline = time.monotonic() + CATCH_UP_S
    while True:
        states = []
        for dest in DESTS:
            r = await c.get(f"/v0/routers/{_router(dest)}")
            assert r.status_code == 200, r.text
            states.append(r.json())
        if all(s["lag"] == 0 for s in states):
            return
        assert time.monotonic() < deadline, f"routers still lagging after {CATCH_UP_S}s: {states}"
        await asyncio.sleep(0.02)


def _check_source(records: list[dict[str, Any]], load: Load) -> list[int]:
    """The source after recovery: every acked batch, whole sent batches only. Returns its ids
    in seq order."""
    seqs = [r["$seq"] for r in records]
    assert seqs == sorted(set(seqs)), "source seqs not strictly increasing"
    ids = [r["data"]["id"] for r in records]
    present = set(ids)
    assert len(present) == len(ids), "a source record appears twice"
    for batch in load.acked:
        assert present.issuperset(batch), f"acked source batch lost: {batch[:3]}..."
    sent = {i for batch in load.sent_batches() for i in batch}
    assert present <= sent, f"source holds ids never sent: {sorted(present - sent)[:5]}"
    for batch in load.inflight:
        n = len(present.intersection(batch))
        assert n in (0, len(batch)), f"in-flight batch applied partly ({n}/{len(batch)})"
    return ids


def _check_dest(
    dest: str,
    records: list[dict[str, Any]],
    source_ids: list[int],
    guarantee: str,
    crashes: int,
    seen: dict[int, int],
) -> dict[str, int]:
    """The oracle for one dest; returns a few numbers for the failure messages."""
    where = f"{dest} ({guarantee}, after {crashes} crashes)"
    seqs = [r["$seq"] for r in records]
    assert all(a < b for a, b in itertools.pairwise(seqs)), f"{where}: dest seqs not strictly increasing"
    index = {sid: k for k, sid in enumerate(source_ids)}
    stray = [r["data"]["id"] for r in records if r["data"]["id"] not in index]
    assert not stray, f"{where}: copies of records the source does not hold: {stray[:5]}"
    order = [index[r["data"]["id"]] for r in records]
    for r in records:
        assert r["data"]["pad"] == PAD, f"{where}: payload changed: {r}"
    if guarantee == "exactly_once":
        for r in records:
            stamp = r.get("meta", {}).get("_topics_router")
            assert isinstance(stamp, dict), f"{where}: no idempotency stamp: {r}"
            assert stamp["router"] == _router(dest) and stamp["source"] == SOURCE, f"{where}: {stamp}"
        source_seq_of = {r["data"]["id"]: r["meta"]["_topics_router"]["seq"] for r in records}
        assert len(source_seq_of) == len(records), f"{where}: a copy appears twice"
        missing = len(source_ids) - len(records)
        assert order == list(range(len(source_ids))), (
            f"{where}: not exactly once in source order ({len(records)} copies of {len(source_ids)} "
            f"records, {missing} missing)"
        )
        redelivered = 0
    else:
        # a concatenation of runs of consecutive source records, each starting at or before the
        # record after the previous run's end (no skip); a step back only at a crash point
        assert not order or order[0] == 0, f"{where}: the first copy is of source record #{order[0]}"
        steps_back = 0
        for k, (a, b) in enumerate(itertools.pairwise(order)):
            assert b <= a + 1, f"{where}: source records #{a + 1}..#{b - 1} skipped at dest #{k + 1}"
            if b <= a:
                steps_back += 1
        assert steps_back <= crashes, f"{where}: {steps_back} re-delivery points for {crashes} crashes"
        assert (max(order) if order else -1) == len(source_ids) - 1, (
            f"{where}: only {max(order, default=-1) + 1} of {len(source_ids)} source records copied"
        )
        redelivered = len(order) - len(source_ids)
    # what a reader saw before a crash: same copy or nothing at that seq (never another record);
    # in an fsync dest a visible copy was durable, so it is still there
    now = {r["$seq"]: r["data"]["id"] for r in records}
    reused = {s: (i, now[s]) for s, i in seen.items() if s in now and now[s] != i}
    assert not reused, f"{where}: dest seqs reused for other records: {dict(list(reused.items())[:5])}"
    if DESTS[dest] == "fsync":
        lost = sorted(s for s in seen if s not in now)
        assert not lost, f"{where}: copies seen before the crash are gone: {lost[:5]}"
    return {"copies": len(records), "redelivered": redelivered, "seen_before": len(seen)}


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
async def test_router_copies_survive_kill_9(tmp_path: Path, guarantee: str) -> None:
    rng = random.Random(f"router-crash-{guarantee}")
    server = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    load = Load()
    seen: dict[str, dict[int, int]] = {dest: {} for dest in DESTS}
    server.start()
    try:
        await server.wait_ready()
        async with _client(server.base) as c:
            r = await c.put(f"/v0/topics/{SOURCE}", json={"durability": "fsync"})
            assert r.status_code == 201, r.text
            for dest, durability in DESTS.items():
                if durability is not None:
                    r = await c.put(f"/v0/topics/{dest}", json={"durability": durability})
                    assert r.status_code == 201, r.text
                r = await c.put(
                    f"/v0/routers/{_router(dest)}",
                    json={"source": SOURCE, "dest": dest, "guarantee": guarantee},
                )
                assert r.status_code == 201, r.text
                assert r.json()["guarantee"] == guarantee

        for kill in CYCLES:
            stop = asyncio.Event()
            tails = [asyncio.create_task(_tail(server.base, dest, seen[dest], stop)) for dest in DESTS]
            await _write_cycle(server, load, kill, rng)
            stop.set()
            await asyncio.gather(*tails)

            server.start()
            await server.wait_ready()
            async with _client(server.base) as c:
                await _wait_caught_up(c)
                source_ids = _check_source(await _read_all(c, SOURCE), load)
                for dest in DESTS:
                    # lag 0 means every source record was examined; an fsync dest shows the
                    # last copies once their frame is durable, so re-read until they are all there
                    deadline = time.monotonic() + 5.0
                    while True:
                        records = await _read_all(c, dest)
                        have = {r["data"]["id"] for r in records}
                        if have.issuperset(source_ids) or time.monotonic() > deadline:
                            break
                        await asyncio.sleep(0.02)
                    _check_dest(dest, records, source_ids, guarantee, load.crashes, seen[dest])
                    r = await c.get(f"/v0/routers/{_router(dest)}")
                    assert r.status_code == 200, r.text
                    state = r.json()
                    assert state["guarantee"] == guarantee and state["lag"] == 0, state
                    assert state["forwarded_total"] == len(records), (state, len(records))
        assert len(load.acked) >= 120, "too few acked batches for a meaningful run"
        assert load.killed_with_lag == 1, "no kill while a router had a forwarding backlog"
    finally:
        server.kill()
