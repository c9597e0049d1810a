"""A watcher across kill -9 (§7.3 resume; docs/DECISIONS.md, "Watch ids") against a real ``topics serve``.

Two ``fsync`` topics are watched by one session while records are appended (each acked after its
fsync). The watcher processes some frames and remembers the ``id:`` of the last one it
processed; then the server is SIGKILLed and restarted on the same data directory. Watch sessions
live in memory, so the old stream URL answers ``404 not_found``; the documented recovery is a new
``POST /v0/watch`` with ``cursor`` = that id. The resumed stream must deliver exactly the acked
records after the cursor of each topic — no duplicate of what was processed, no silent gap, no
tombstone — and keep delivering records appended after the restart.

The server runs with its elastic throttle on, as in production: on a busy machine a request may
be answered ``429 throttled`` (nothing done; waited out as told, by
:class:`~tests.server.processes.WaitsOutThrottle`) and a stream paced, with the advisory
``event: error`` frame ``{"code": 429, ...}`` that leaves it open (§7.2) — neither is a failure.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.crash_harness import ServerProcess
from tests.server.processes import WaitsOutThrottle

TOPICS = ("ledger", "audit")
BEFORE = 60  # records per topic acked before the watch opens
DURING = 30  # records per topic acked while the watcher reads


@dataclass
class Frame:
    event: str | None = None
    id: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)


async def _frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """SSE frames off a streaming response (blank line ends a frame)."""
    frame = Frame()
    async for line in response.aiter_lines():
        if line == "":
            if frame.event or frame.data or frame.comments:
                yield frame
            frame = Frame()
        elif line.startswith(":"):
            frame.comments.append(line[1:].strip())
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                frame.event = value
            elif name == "id":
                frame.id = value
            elif name == "data":
                frame.data += value


def _client(base: str) -> httpx.AsyncClient:
    """A client of the server that waits out a ``429 throttled`` (a busy machine) as told."""
    return httpx.AsyncClient(base_url=base, timeout=10.0, transport=WaitsOutThrottle())


def _advisory(frame: Frame) -> bool:
    """The throttle's advisory frame of a paced stream (§7.2): ``code`` 429, stream open."""
    body = json.loads(frame.data)
    return isinstance(body, dict) and body.get("code") == 429 and "retry_after_ms" in body


def _cursors(event_id: str) -> dict[str, int]:
    raw = base64.urlsafe_b64decode(event_id + "=" * (-len(event_id) % 4))
    value: dict[str, int] = json.loads(raw)
    return value


async def _append(c: httpx.AsyncClient, topic: str, n: int, tag: str) -> list[int]:
    seqs: list[int] = []
    for i in range(n):
        r = await c.post(f"/v0/topics/{topic}", json={"records": [{"data": {"i": i, "phase": tag}}]})
        assert r.status_code in (200, 201), r.text
        seqs.extend(r.json()["seqs"])
    return seqs


async def _read_until(
    c: httpx.AsyncClient, url: str, seen: dict[str, list[int]], stop: Any, max_s: float = 20.0
) -> str | None:
    """Read the stream, recording delivered seqs per topic, until ``stop(seen)``; returns the
    id of the last record frame processed."""
    last_id: str | None = None
    async with asyncio.timeout(max_s):
        async with c.stream("GET", url, headers={"accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            async for frame in _frames(response):
                assert frame.event != "tombstone", f"no loss is allowed here: {frame.data}"
                if frame.event == "error" and _advisory(frame):
                    continue  # paced under CPU pressure (a busy machine): the stream goes on
                assert frame.event != "error", frame.data
                if frame.event == "record":
                    body = json.loads(frame.data)
                    seen[body["topic"]].extend(r["$seq"] for r in body["records"])
                    last_id = frame.id
                    assert last_id is not None
                    if stop(seen):
                        return last_id
    return last_id


async def test_a_watcher_resumes_after_kill_9_with_no_duplicate_and_no_gap(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    server.start()
    try:
        await server.wait_ready()
        async with _client(server.base) as c:
            acked: dict[str, list[int]] = {}
            for topic in TOPICS:
                r = await c.put(f"/v0/topics/{topic}", json={"durability": "fsync"})
                assert r.status_code in (200, 201), r.text
                acked[topic] = await _append(c, topic, BEFORE, "before")

            r = await c.post("/v0/watch", json={"topics": {t: {"from_seq": 0} for t in TOPICS}, "limit": 7})
            assert r.status_code == 200, r.text
            stream_url = r.json()["stream_url"]

            # the watcher processes about half of the backlog while writers keep appending
            seen: dict[str, list[int]] = {t: [] for t in TOPICS}
            writers = asyncio.gather(*(_append(c, t, DURING, "during") for t in TOPICS))
            last_id = await _read_until(c, stream_url, seen, lambda s: sum(map(len, s.values())) >= BEFORE)
            for topic, seqs in zip(TOPICS, await writers, strict=True):
                acked[topic].extend(seqs)
            assert last_id is not None
            processed = _cursors(last_id)
            for topic in TOPICS:  # what the id names was delivered, in order, without a gap
                assert seen[topic] == list(range(1, len(seen[topic]) + 1))
                assert processed[topic] <= len(seen[topic])

        server.sigkill()
        server.start()
        await server.wait_ready()

        async with _client(server.base) as c:
            r = await c.get(stream_url, headers={"accept": "text/event-stream"})
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text

            r = await c.post(
                "/v0/watch", json={"topics": {t: {"from_seq": 0} for t in TOPICS}, "cursor": last_id}
            )
            assert r.status_code == 200, r.text
            session = r.json()
            for topic in TOPICS:
                assert session["topics"][topic]["from_seq"] == processed[topic]
                assert session["topics"][topic]["head_seq"] == acked[topic][-1], (
                    "an acked fsync write was lost"
                )

            after: dict[str, list[int]] = {t: [] for t in TOPICS}
            later = asyncio.gather(*(_append(c, t, 5, "after") for t in TOPICS))
            want = {t: len([s for s in acked[t] if s > processed[t]]) + 5 for t in TOPICS}
            await _read_until(
                c, session["stream_url"], after, lambda s: all(len(s[t]) >= want[t] for t in TOPICS)
            )
            late = await later
            for i, topic in enumerate(TOPICS):
                expected = [s for s in acked[topic] if s > processed[topic]] + late[i]
                assert after[topic] == expected, f"{topic}: resumed delivery differs from the acked records"
    finally:
        server.kill()
