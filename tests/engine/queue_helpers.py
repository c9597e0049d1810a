"""Helpers shared by the §10 queue tests (engine level and restart level)."""

from __future__ import annotations

import re
import weakref
from typing import Any

import orjson
from topics_engine import Engine, Queues
from topics_engine.queues import Claimed, ClaimedJob

LEASE_ID_RE = re.compile(r"^lease_[0-9a-f]+$")

_QUEUES: weakref.WeakKeyDictionary[Engine, Queues] = weakref.WeakKeyDictionary()


def queues_for(engine: Engine) -> Queues:
    """The one :class:`Queues` composed over ``engine`` in a test (as the server holds one)."""
    queues = _QUEUES.get(engine)
    if queues is None:
        queues = _QUEUES[engine] = Queues(engine)
    return queues


def make_queue(engine: Engine, name: str = "q", **config: Any) -> None:
    engine.put_topic(name, {"type": "queue", **config})


def produce(engine: Engine, n: int, name: str = "q", start: int = 0, **kw: Any) -> list[int]:
    """Append ``n`` jobs whose data is their index; returns their seqs."""
    r = engine.append(name, [{"data": start + i} for i in range(n)], **kw)
    return list(range(r.first_seq, r.last_seq + 1))


def claim(
    engine: Engine, node: str = "w1", max_: Any = None, lease_ms: Any = None, name: str = "q"
) -> Claimed:
    result = queues_for(engine).claim(name, node, max_, lease_ms)
    assert not result.coalesced, "greedy queue: the claim is served at once"
    return result


def claimed_seqs(result: Claimed | list[ClaimedJob]) -> list[int]:
    jobs = result.jobs if isinstance(result, Claimed) else result
    return [j.seq for j in jobs]


def wire(job: ClaimedJob) -> dict[str, Any]:
    """The claimed[] object as it goes on the wire."""
    out: dict[str, Any] = orjson.loads(job.encode())
    return out


def qstate(engine: Engine, name: str = "q") -> dict[str, Any]:
    """The ``queue`` sub-object of GET /v0/topics/:q plus the topic's live ``count``."""
    state = engine.topic_state(name, touch=False)
    assert state.queue is not None
    q = state.queue
    return {
        "ready": q.ready,
        "in_flight": q.in_flight,
        "dead_lettered": q.dead_lettered,
        "count": state.count,
    }


def counters(engine: Engine, name: str = "q") -> tuple[int, int]:
    s = qstate(engine, name)
    return s["ready"], s["in_flight"]


def delayed(engine: Engine, name: str = "q") -> int:
    topic = engine.topic(name)
    assert topic is not None and topic.queue is not None
    return len(topic.queue.delayed)


def held_back(engine: Engine, name: str = "q") -> int:
    topic = engine.topic(name)
    assert topic is not None and topic.queue is not None
    return len(topic.queue.held_back)


def assert_consistent(engine: Engine, name: str = "q") -> None:
    """ready + in_flight == count, modulo jobs waiting out a nack delay or held back after a
    failed dead-letter move (§10.7; docs/DECISIONS.md, "Dead-letter move failures")."""
    s = qstate(engine, name)
    assert s["ready"] >= 0 and s["in_flight"] >= 0
    assert s["ready"] + s["in_flight"] + delayed(engine, name) + held_back(engine, name) == s["count"], s
