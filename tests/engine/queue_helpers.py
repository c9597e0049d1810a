"""Helpers shared by the §10 queue tests (engine level and restart level)."""

from __future__ import annotations

import re
from typing import Any

import orjson
from topics_engine import Engine
from topics_engine.queues import ClaimedJob, ClaimResult

LEASE_ID_RE = re.compile(r"^lease_[0-9a-f]+$")


def make_queue(engine: Engine, name: str = "q", **config: Any) -> None:
    engine.put_topic(name, {"type": "queue", **config})


def produce(engine: Engine, n: int, name: str = "q", start: int = 0, **kw: Any) -> list[int]:
    """Append ``n`` jobs whose data is their index; returns their seqs."""
    r = engine.append(name, [{"data": start + i} for i in range(n)], **kw)
    return list(range(r.first_seq, r.last_seq + 1))


def claim(
    engine: Engine, node: str = "w1", max_: Any = None, lease_ms: Any = None, name: str = "q"
) -> ClaimResult:
    result = engine.queues.claim(name, node, max_, lease_ms)
    assert isinstance(result, ClaimResult), "greedy queue: the claim is served at once"
    return result


def claimed_seqs(result: ClaimResult | list[ClaimedJob]) -> list[int]:
    jobs = result.jobs if isinstance(result, ClaimResult) else result
    return [j.record.seq for j in jobs]


def wire(job: ClaimedJob) -> dict[str, Any]:
    """The claimed[] object as it goes on the wire."""
    out: dict[str, Any] = orjson.loads(job.encode())
    return out


def qstate(engine: Engine, name: str = "q") -> dict[str, Any]:
    """The ``queue`` sub-object of GET /v0/topics/:q plus the topic's live ``count``."""
    state = engine.topic_state(name, touch=False)
    return {**state["queue"], "count": state["count"]}


def counters(engine: Engine, name: str = "q") -> tuple[int, int]:
    s = qstate(engine, name)
    return s["ready"], s["in_flight"]


def delayed(engine: Engine, name: str = "q") -> int:
    topic = engine.topic(name)
    assert topic is not None and topic.queue is not None
    return len(topic.queue.delayed)


def assert_consistent(engine: Engine, name: str = "q") -> None:
    """ready + in_flight == count, modulo jobs waiting out a nack delay (§10.7)."""
    s = qstate(engine, name)
    assert s["ready"] >= 0 and s["in_flight"] >= 0
    assert s["ready"] + s["in_flight"] + delayed(engine, name) == s["count"], s
