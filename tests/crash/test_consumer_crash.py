"""Named consumers across kill -9 (an extension, issue 25; docs/DECISIONS.md, "Named consumers")
against a real ``topics serve``.

Topics of each logged durability class are written continuously while readers commit their
named consumers' cursors forward (and one rewinds with ``force`` now and then); the server is
SIGKILLed at random moments, several times on one data directory, and restarted. After every
restart, for every consumer:

- it is there (a topic's consumers survive with it; the one deleted before a crash stays gone);
- its cursor is at least its last acknowledged commit and at most the highest one sent (a commit
  answered 200 is durable; one in flight at the kill is either kept or not) — so a committed
  cursor never moves back over a crash;
- its cursor is at most the topic's head (records lost with a ``disk`` topic's un-fsynced tail
  never leave a cursor past the head: the head resumes above every seq handed out);
- commits go on after the restart.

The server runs with its elastic throttle on, as in production: a ``429 throttled`` is waited
out (:class:`~tests.server.processes.WaitsOutThrottle`). Nothing is timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.crash_harness import ServerProcess
from tests.server.processes import WaitsOutThrottle

TOPICS = {
    "cons.disk": {"durability": "disk"},
    "cons.fsync": {"durability": "fsync"},
    "cons.memory": {"durability": "memory"},
}
CONSUMERS = ("a", "b")
KILLS = 4
BATCH = 10


@dataclass
class Progress:
    """What one reader knows of its consumer: the last commit acknowledged (``acked``), the lowest
    cursor the consumer may have now (``floor``: ``acked``, or a rewind in flight) and the highest
    cursor it ever asked for since the last acknowledged rewind (``sent``), answered or not."""

    topic: str
    name: str
    acked: int = 0
    floor: int = 0
    sent: int = 0
    rewind: bool = False
    """This reader rewinds (``force``) now and then: its cursor then goes down, acknowledged."""


def _client(base: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, timeout=10.0, transport=WaitsOutThrottle())


async def _writer(c: httpx.AsyncClient, rng: random.Random) -> None:
    """Appends batches to every topic until the server goes away."""
    i = 0
    while True:
        for topic in TOPICS:
            body = {"records": [{"data": {"i": i, "k": k}} for k in range(BATCH)]}
            r = await c.post(f"/v0/topics/{topic}", json=body)
            assert r.status_code in (200, 201), r.text
        i += 1
        await asyncio.sleep(rng.uniform(0, 0.01))


async def _reader(c: httpx.AsyncClient, p: Progress, rng: random.Random) -> None:
    """Commits ever further (within the head the last answer showed) until the server goes away;
    a rewinding reader goes back with ``force`` every few commits."""
    head = p.acked
    n = 0
    while True:
        n += 1
        if p.rewind and n % 7 == 0 and p.acked > 0:
            seq, force = rng.randint(0, p.acked), True
        else:
            seq, force = min(head, p.acked + rng.randint(1, 3 * BATCH)), False
        p.sent = max(p.sent, seq)
        if force:
            p.floor = min(p.floor, seq)  # may be applied without an answer
        body: dict[str, Any] = {"seq": seq, "force": True} if force else {"seq": seq}
        r = await c.post(f"/v0/topics/{p.topic}/consumers/{p.name}/commit", json=body)
        if r.status_code == 409 and r.json()["error"]["code"] == "cursor_beyond_head":
            head = r.json()["error"]["detail"]["head_seq"]
            continue
        assert r.status_code == 200, r.text
        state = r.json()
        assert state["cursor"] == seq, state
        p.acked = p.floor = seq
        head = state["head_seq"]
        if force:
            p.sent = seq  # acknowledged lower: no cursor above it may come back
        await asyncio.sleep(rng.uniform(0, 0.005))


async def _run_until_killed(server: ServerProcess, readers: list[Progress], rng: random.Random) -> None:
    """Writer and readers run; the server is SIGKILLed at a random moment among them."""
    async with _client(server.base) as c:
        tasks = [asyncio.ensure_future(_writer(c, rng))]
        tasks += [asyncio.ensure_future(_reader(c, p, rng)) for p in readers]
        await asyncio.sleep(rng.uniform(0.2, 0.8))
        assert not any(t.done() for t in tasks), [t.exception() for t in tasks if t.done()]
        server.sigkill()
        for task in tasks:
            with contextlib.suppress(httpx.TransportError, asyncio.CancelledError):
                await task


async def _check(c: httpx.AsyncClient, readers: list[Progress]) -> None:
    for topic in TOPICS:
        r = await c.get(f"/v0/topics/{topic}/consumers")
        assert r.status_code == 200, r.text
        assert [s["consumer"] for s in r.json()["consumers"]] == list(CONSUMERS), r.json()
        r = await c.get(f"/v0/topics/{topic}/consumers/deleted")
        assert r.status_code == 404 and r.json()["error"]["code"] == "consumer_not_found", r.text
    for p in readers:
        r = await c.get(f"/v0/topics/{p.topic}/consumers/{p.name}")
        assert r.status_code == 200, r.text
        state = r.json()
        assert p.floor <= state["cursor"] <= p.sent, (p, state)
        assert p.floor == p.acked or p.rewind, p
        assert state["cursor"] <= state["head_seq"] and state["lag"] == state["head_seq"] - state["cursor"]
        p.acked = p.floor = p.sent = state["cursor"]  # where the next round starts from


async def test_committed_cursors_survive_kill_9_and_never_move_back(tmp_path: Path) -> None:
    rng = random.Random("consumer-crash")
    server = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    server.start()
    readers = [
        Progress(t, name, rewind=(name == "b" and t == "cons.disk")) for t in TOPICS for name in CONSUMERS
    ]
    try:
        await server.wait_ready()
        async with _client(server.base) as c:
            for topic, config in TOPICS.items():
                assert (await c.put(f"/v0/topics/{topic}", json=config)).status_code == 201
                for name in (*CONSUMERS, "deleted"):
                    r = await c.put(f"/v0/topics/{topic}/consumers/{name}")
                    assert r.status_code == 201, r.text
                r = await c.delete(f"/v0/topics/{topic}/consumers/deleted")
                assert r.status_code == 200 and r.json()["deleted"] is True
        for _ in range(KILLS):
            await _run_until_killed(server, readers, rng)
            server.start()
            await server.wait_ready()
            async with _client(server.base) as c:
                await _check(c, readers)
        assert all(p.acked > 0 for p in readers if not p.rewind), readers  # commits went on
    finally:
        server.kill()
