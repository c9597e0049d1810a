"""Queues across kill -9 (§10.1 durability note, §10.3, §10.4) against a real ``topics serve``.

An fsync-durable queue: jobs produced (fsync-acked), some claimed (in flight), some of those
acked (the ack is the fsync-durable delete); then SIGKILL and a restart on the same data dir.

- acked jobs never come back;
- no job is lost: every un-acked job is claimable again — at once when the leases log is not
  durable (``leases_durable: false``: a crash loses the leases, which self-heals), and only after
  its lease deadline when it is (``leases_durable: true``: the leases survive the crash, and so do
  the delivery counters);
- acks made after the recovery are durable too (a second kill -9).

The server runs with its elastic throttle on, as in production; a ``429 throttled`` (a busy
machine) is waited out as told (:class:`~tests.server.processes.WaitsOutThrottle`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.crash_harness import ServerProcess
from tests.server.processes import WaitsOutThrottle

N_JOBS = 40
N_CLAIMED = 30
N_ACKED = 12


@asynccontextmanager
async def _api(server: ServerProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base, timeout=10.0, transport=WaitsOutThrottle()) as c:
        yield c


async def _restart(server: ServerProcess) -> None:
    server.sigkill()
    server.start()
    await server.wait_ready()


async def _claim_all(c: httpx.AsyncClient, q: str, node: str) -> list[dict[str, Any]]:
    r = await c.post(f"/v0/topics/{q}/claim", json={"node": node, "max": 1000, "lease_ms": 60_000})
    assert r.status_code == 200, r.text
    return list(r.json()["claimed"])


async def _state(c: httpx.AsyncClient, q: str) -> dict[str, Any]:
    r = await c.get(f"/v0/topics/{q}", params={"touch": "false"})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def _live_seqs(c: httpx.AsyncClient, q: str) -> set[int]:
    r = await c.post(f"/v0/topics/{q}/diff", json={"limit": 1000})
    assert r.status_code == 200, r.text
    return {rec["$seq"] for rec in r.json()["records"]}


@pytest.mark.parametrize("leases_durable", [False, True], ids=["leases-volatile", "leases-durable"])
async def test_queue_survives_kill_9(tmp_path: Path, leases_durable: bool) -> None:
    q = "jobs"
    # durable: outlives the restart and the reads after it (~1 s; several on a loaded machine,
    # where the server starts slower and may answer a read 429, waited out)
    lease_ms = 10_000 if leases_durable else 60_000
    server = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    server.start()
    try:
        await server.wait_ready()
        async with _api(server) as c:
            r = await c.put(
                f"/v0/topics/{q}",
                json={"type": "queue", "durability": "fsync", "leases_durable": leases_durable},
            )
            assert r.status_code == 201, r.text
            assert r.json()["config"]["durability"] == "fsync"
            r = await c.post(f"/v0/topics/{q}", json={"records": [{"data": {"i": i}} for i in range(N_JOBS)]})
            assert r.status_code in (200, 201), r.text
            seqs: list[int] = r.json()["seqs"]
            payload = {seq: {"i": i} for i, seq in enumerate(seqs)}

            r = await c.post(
                f"/v0/topics/{q}/claim", json={"node": "w1", "max": N_CLAIMED, "lease_ms": lease_ms}
            )
            assert r.status_code == 200, r.text
            claimed = r.json()["claimed"]
            assert [j["$seq"] for j in claimed] == seqs[:N_CLAIMED]
            deadline = max(j["deadline"] for j in claimed)
            acked = [j["$seq"] for j in claimed[:N_ACKED]]
            in_flight = [j["$seq"] for j in claimed[N_ACKED:]]
            never_claimed = seqs[N_CLAIMED:]
            # ack in a few calls; each returns only once the delete is fsynced
            for i in range(0, N_ACKED, 4):
                r = await c.post(f"/v0/topics/{q}/ack", json={"node": "w1", "seqs": acked[i : i + 4]})
                assert r.status_code == 200, r.text
                assert r.json()["acked"] == 4 and r.json()["skipped"] == []
                assert r.json()["performance"]["fsync_ms"] > 0, r.json()
            before = await _state(c, q)
            assert before["count"] == N_JOBS - N_ACKED
            assert before["queue"]["in_flight"] == len(in_flight)

        await _restart(server)  # kill -9, restart on the same data dir

        async with _api(server) as c:
            state = await _state(c, q)
            assert state["type"] == "queue" and state["config"]["leases_durable"] is leases_durable
            assert state["count"] == N_JOBS - N_ACKED, state  # nothing lost, nothing resurrected
            assert await _live_seqs(c, q) == set(in_flight) | set(never_claimed)

            got = await _claim_all(c, q, "after")
            got_seqs = [j["$seq"] for j in got]
            assert set(got_seqs).isdisjoint(acked), got_seqs
            assert all(j["data"] == payload[j["$seq"]] for j in got)
            if not leases_durable:
                # the leases were lost with the crash: every un-acked job is claimable at once
                assert state["queue"]["in_flight"] == 0, state
                assert got_seqs == sorted(in_flight + never_claimed)
            else:
                assert time.time() * 1000 < deadline - 200, f"the restart outlasted the {lease_ms} ms lease"
                # the leases survived: in-flight jobs stay leased (to w1) until their deadline
                assert state["queue"]["in_flight"] == len(in_flight), state
                assert got_seqs == never_claimed, got_seqs
                r = await c.post(
                    f"/v0/topics/{q}/extend", json={"node": "w1", "seqs": in_flight[:1], "lease_ms": 100}
                )
                assert r.status_code == 200 and r.json()["extended"] == 1, r.text
                await asyncio.sleep(max(0.0, (deadline - time.time() * 1000) / 1000) + 0.2)
                late = await _claim_all(c, q, "after")
                assert [j["$seq"] for j in late] == in_flight
                assert all(j["data"] == payload[j["$seq"]] for j in late)
                assert all(j["deliveries"] == 2 for j in late), late  # the counters survived too
                got_seqs = sorted(got_seqs + in_flight)

            # ack half of what came back, then crash again: those acks hold too
            second_acked = got_seqs[::2]
            r = await c.post(f"/v0/topics/{q}/ack", json={"node": "after", "seqs": second_acked})
            assert r.status_code == 200 and r.json()["acked"] == len(second_acked), r.text
            assert r.json()["performance"]["fsync_ms"] > 0

        await _restart(server)

        async with _api(server) as c:
            left = sorted(set(in_flight + never_claimed) - set(second_acked))
            assert (await _state(c, q))["count"] == len(left)
            if leases_durable:
                # the "after" leases (60 s) survived this crash too: still held by "after"
                assert await _claim_all(c, q, "final") == []
                r = await c.post(
                    f"/v0/topics/{q}/extend", json={"node": "after", "seqs": left, "lease_ms": 100}
                )
                assert r.status_code == 200 and r.json()["extended"] == len(left), r.text
                await asyncio.sleep(0.3)
            final = await _claim_all(c, q, "final")
            assert sorted(j["$seq"] for j in final) == left
    finally:
        server.kill()


async def test_delayed_jobs_survive_kill_9_and_stay_delayed(tmp_path: Path) -> None:
    """Delayed writes (an extension: docs/DECISIONS.md, "Delayed jobs") are durable like the
    write: after kill -9 a job delayed for a day is still there and still delayed, and jobs
    whose short delay ran out meanwhile are claimable — none earlier than its due time."""
    q = "later"
    server = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    server.start()
    try:
        await server.wait_ready()
        async with _api(server) as c:
            r = await c.put(f"/v0/topics/{q}", json={"type": "queue", "durability": "fsync"})
            assert r.status_code == 201, r.text
            records = [{"data": {"i": i}, "delay_ms": 1_500} for i in range(5)]
            records.append({"data": "tomorrow", "delay_ms": 86_400_000})
            records.append({"data": "now", "delay_ms": 0})
            r = await c.post(f"/v0/topics/{q}", json={"records": records})
            assert r.status_code in (200, 201), r.text
            seqs: list[int] = r.json()["seqs"]
            written_ts = {
                rec["$seq"]: rec["$ts"]
                for rec in (await c.post(f"/v0/topics/{q}/diff", json={})).json()["records"]
            }
            got = await _claim_all(c, q, "w1")
            assert [j["$seq"] for j in got] == [seqs[-1]]  # only the undelayed job

        await _restart(server)

        async with _api(server) as c:
            state = await _state(c, q)
            assert state["count"] == 7, state
            assert state["queue"]["in_flight"] == 0
            short = set(seqs[:5])
            seen: set[int] = set()
            deadline = time.monotonic() + 60
            while seen != short | {seqs[-1]} and time.monotonic() < deadline:
                for job in await _claim_all(c, q, "after"):
                    now_ms = time.time() * 1000
                    assert job["$seq"] != seqs[5], "a job delayed for a day was claimable"
                    if job["$seq"] in short:
                        assert job["$delay_ms"] == 1_500
                        assert now_ms >= written_ts[job["$seq"]] + 1_500 - 50  # clock skew allowance
                    seen.add(job["$seq"])
                await asyncio.sleep(0.1)
            assert seen == short | {seqs[-1]}
            state = await _state(c, q)
            assert state["queue"]["delayed"] == 1 and state["queue"]["ready"] == 0, state
            r = await c.post(f"/v0/topics/{q}/diff", json={})
            kept = [rec for rec in r.json()["records"] if rec["$seq"] == seqs[5]]
            assert kept and kept[0]["data"] == "tomorrow" and kept[0]["$delay_ms"] == 86_400_000
    finally:
        server.kill()
