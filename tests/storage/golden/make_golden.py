"""Write a golden data directory ONCE, with the engine as it is (issue 22): ``v1/`` with the
formats before issue 22 changed them, ``v2/`` with segment format 4 (chunk indexes), ``v3/``
with snapshot version 3 and ``SCHEDULE`` frames (schedules and delayed jobs, issue 24), ``v4/``
with snapshot version 4 and ``CONSUMER`` frames (named consumers, issue 25).

    .venv/bin/python -m tests.storage.golden.make_golden --out tests/storage/golden/vN
    .venv/bin/python -m tests.storage.golden.make_golden --out DIR  # a scratch set elsewhere

It checks that the engine it imports is exactly ``server/topics_engine`` of ``--commit``
(default ``HEAD``). With other work in the tree, run it on an export of the commit::

    git archive REV server | tar -x -C /tmp/src   # plus the built _codec module, copied in
    PYTHONPATH=/tmp/src/server .venv/bin/python -m tests.storage.golden.make_golden --commit REV

Golden files are never regenerated (it refuses an existing ``--out``): a new on-disk format gets
a new set next to the others, and every later version must still open each ``vN/datadir`` with
exactly its ``vN/expected.json``.

What it writes: a real engine with WAL persistence (``DataDirectory``: WAL, sealed segments,
snapshots), driven only through the public engine API (``Engine``, ``Queues``, ``Routers``, ``Schedules``,
``Consumers``) on
an injected :class:`ManualClock` (which also fires the schedules' runs), in four phases:

- **A1** every kind of topic and operation, then checkpoint 1;
- **A2** deletes of sealed records (flag flips), a segment left with no live record, more
  queue and router work, then checkpoint 2 — the snapshot recovery loads (the WAL before it is
  trimmed; segments from both checkpoints);
- **B** the WAL tail: every frame type again after the snapshot, then a clean close (a
  ``CLEAN_STOP`` frame, no final checkpoint);
- **C** reopen (recovery replays B), more of everything — live leases, a router with lag — and
  then stop as ``kill -9`` would: every frame written and fsynced, no checkpoint, no
  ``CLEAN_STOP``, the segments sealed after the snapshot left in place.

So recovery needs snapshot + segments + WAL tail. ``expected.json`` is then read back through
:mod:`observe` from a *copy* of the directory opened with a fresh engine at the final clock —
exactly what the test does — and the records are checked against what the live engine showed
before the crash.

Determinism: the clock is a :class:`ManualClock`; the queues' lease-id prefix is fixed (it is
random per process; distinct per phase, as processes' are); the seq-reservation sizing reads a
stepping monotonic clock instead of ``time.monotonic`` (so every reservation block is the
minimum, 1024) — the frames are still built by the engine's own code. Running this twice gives
byte-identical files.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path
from typing import Any

import topics_engine
from topics_engine import ManualClock, TopicsError
from topics_engine.consumers import Consumers
from topics_engine.datadir import walpersistence
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.storage import formats, segments, snapshot
from topics_engine.storage.frames import FrameType
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.wal import wal_files, wal_frames

from .observe import GOLDEN, Node, done, observe, open_node, run_probes

T0 = 1_700_000_000_000
SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000
STORE_KW: dict[str, Any] = {
    "wal_rotate_bytes": 4096,  # several WAL files in the tail
    "segment_policy": SegmentPolicy(max_events=8, max_bytes=64 << 20, max_age_ms=30 * DAY),
}
"""Small files, so several segments are sealed and the WAL rotates (recovery needs neither)."""

RECORDS: list[dict[str, Any]] = [
    {"data": {"k": "v", "n": 1}, "tag": "a:1", "node": "n1", "meta": {"trace": "x"}},
    {"data": "héllo wörld ✓ 𝄞", "tag": "ünï:2"},
    {"data": None},
    {"data": [1, 2.5, True, None, {"deep": ["x"]}], "node": "n2", "meta": {}},
    {"data": 12345678901234567890, "tag": ""},
    {"data": "", "node": ""},
]
"""Every shape a record takes: tags (empty, non-ASCII), nodes, meta (empty too), JSON types."""


class _SteppingMonotonic:
    """Stands in for ``time`` in the persistence module: each reading is a second later, so a
    reservation is sized as for a quiet topic (the minimum block) however fast this runs."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


async def _append(n: Node, topic: str, records: list[dict[str, Any]], **kw: Any) -> Any:
    r = n.engine.append(topic, records, **kw)
    await done(r)
    return r


async def _put(node: Node, topic: str, config: dict[str, Any]) -> None:
    await done(node.engine.put_topic(topic, config))


async def _delete(node: Node, topic: str, **kw: Any) -> int:
    r = node.engine.delete_records(topic, **kw)
    await done(r)
    return r.deleted


async def _claim(node: Node, queue: str, worker: str, n: int, lease_ms: int | None = None) -> list[int]:
    claimed = node.queues.claim(queue, worker, n, lease_ms)
    await done(claimed)
    return [j.seq for j in claimed.jobs]  # type: ignore[union-attr]


async def _schedule(node: Node, name: str, fields: dict[str, Any]) -> None:
    await done(node.schedules.put(name, fields))


async def _consumer(node: Node, topic: str, name: str, **kw: Any) -> int:
    """Create (or, with ``force``, reposition) a named consumer; returns its cursor."""
    put = Consumers(node.engine).put(topic, name, **kw)
    await done(put)
    return put.state.cursor


async def _commit(node: Node, topic: str, name: str, seq: int, force: bool = False) -> None:
    await done(Consumers(node.engine).commit(topic, name, seq, force=force))


async def _forward(node: Node) -> int:
    copied = node.routers.drain()
    await node.flush()
    return copied


def _jobs(n: int, start: int) -> list[dict[str, Any]]:
    return [{"data": {"job": start + i}, "tag": f"job:{start + i}"} for i in range(n)]


# -- the phases ------------------------------------------------------------------------------------


async def phase_a1(n: Node, clock: ManualClock) -> None:
    e, q, routers = n.engine, n.queues, n.routers
    # TTL: a batch that expires before the rest of the history starts (a ttl tombstone), and one
    # that outlives the golden clock (ttl 1 day; everything below happens within ~3 hours)
    await _put(n, "ttl", {"ttl_ms": DAY})
    await _append(n, "ttl", [{"data": "expired-0"}, {"data": "expired-1", "tag": "t"}])
    clock.advance(DAY + HOUR)
    await _append(n, "ttl", [{"data": "kept-0"}, {"data": "kept-1", "tag": "t"}])
    e.diff("ttl")  # expires the first batch; a read that touches last_read_ts

    # one topic per durability class, plus every config field and a config change
    await _put(n, "log.disk", {"durability": "disk", "idempotency_window_ms": 30 * DAY})
    await _put(n, "log.fsync", {"durability": "fsync", "idempotency_window_ms": 30 * DAY})
    await _put(n, "log.memory", {"durability": "memory"})
    await _put(n, "log.ephemeral", {"durability": "ephemeral", "priority": 4, "cap_records": 50_000})
    await _put(
        n,
        "full.config",
        {
            "type": "queue",
            "ttl_ms": 30 * DAY,
            "cap_records": 1000,
            "cap_bytes": 10_000_000,
            "discard": "reject",
            "durability": "fsync",
            "priority": 7,
            "auto_priority": False,
            "auto_create": False,
            "idempotency_window_ms": 5000,
            "dedupe_node": False,
            "lease_ms": 1234,
            "claim_jitter_ms": 0,
            "max_deliveries": 3,
            "dead_letter": "full.dlq",
            "leases_durable": True,
        },
    )
    await _put(n, "updated", {"cap_records": 10})
    await _put(n, "updated", {"priority": -3, "durability": "memory", "ttl_ms": 30 * DAY})
    await _put(n, "alias.durable", {"durable": True})
    for i in range(5):
        await _append(n, "log.disk", RECORDS, node="batch-node" if i % 2 else None)
        await _append(n, "log.fsync", RECORDS, node="batch-node" if i % 2 else None)
        clock.advance(7)
    for _ in range(3):
        await _append(n, "log.memory", RECORDS)
    for size in (10, 1500, 1):  # crosses seq-reservation blocks
        await _append(n, "log.ephemeral", [{"data": i} for i in range(size)])
    await _append(n, "updated", [{"data": i} for i in range(12)])  # cap 10: two evicted
    await _append(n, "lazy.created", [{"data": "first", "tag": "lazy"}])  # created by the write
    await _delete(n, "log.disk", before_seq=3)
    await _delete(n, "log.disk", match="a:1")
    await _delete(n, "log.fsync", match=["tag", "Glob", "ünï:*"])

    # caps: evictions (cap tombstones) and a rejected write
    await _put(n, "capped", {"cap_records": 5})
    assert await _consumer(n, "capped", "slow") == 0  # falls behind the cap: a tombstone awaits it
    for i in range(12):
        await _append(n, "capped", [{"data": i}])
    await _put(n, "capped.bytes", {"cap_bytes": 200})
    for i in range(20):
        await _append(n, "capped.bytes", [{"data": "x" * (i % 9)}])
    await _put(n, "reject", {"cap_records": 4, "discard": "reject"})
    await _append(n, "reject", [{"data": i} for i in range(4)])
    try:
        e.append("reject", [{"data": "refused"}])
        raise AssertionError("the full reject topic took a write")
    except TopicsError:
        pass

    # topic deletes: one for good, one recreated (a recreated tombstone), one with segments that
    # is deleted in the tail, one recreated in the tail
    await _append(n, "deleted.forever", [{"data": i} for i in range(3)])
    await _consumer(n, "deleted.forever", "gone-with-it", from_seq=2)
    await done(e.delete_topic("deleted.forever"))
    await _append(n, "recreated", [{"data": i} for i in range(5)])
    await _consumer(n, "recreated", "old-incarnation", from_seq=4)
    await done(e.delete_topic("recreated"))
    await _append(n, "recreated", [{"data": "new"}])
    await _append(n, "doomed.topic", [{"data": i, "tag": f"d:{i}"} for i in range(10)])
    await _append(n, "recreated.tail", [{"data": i} for i in range(4)])

    # idempotency windows
    await _put(n, "idem", {"idempotency_window_ms": 30 * DAY})
    await _append(n, "idem", [{"data": 1}, {"data": 2}], idempotency_key="k1")
    clock.advance(SECOND)
    await _append(n, "idem", [{"data": 3}], idempotency_key="k2")
    again = await _append(n, "idem", [{"data": 1}, {"data": 2}], idempotency_key="k1")
    assert again.deduped
    await _append(n, "log.fsync", [{"data": "keyed"}], idempotency_key="fsync-k1")
    await _put(n, "idem.short", {"idempotency_window_ms": HOUR})
    await _append(n, "idem.short", [{"data": "short-old"}], idempotency_key="short-old")

    # named consumers (issue 25): nothing read yet, from a seq, from a time, commits, a forced
    # rewind, a delete; on topics of every class (an ephemeral one's cursor outlives its records)
    first_live = e.topic_state("log.disk", touch=False).earliest_seq
    assert await _consumer(n, "log.disk", "reader") == first_live - 1  # nothing read yet
    assert await _consumer(n, "log.fsync", "audit", from_seq=3) == 3
    await _commit(n, "log.fsync", "audit", 20)
    await _commit(n, "log.fsync", "audit", 12, force=True)
    # the kept batch, seqs 3-4: the cursor before it (2 when v4 was written; 0 — from the earliest
    # — since a seek by time to the oldest live record starts there)
    assert await _consumer(n, "ttl", "since", from_ts=T0 + DAY) in (0, 2)
    assert await _consumer(n, "log.ephemeral", "eph", from_seq=1000) == 1000
    await _commit(n, "log.ephemeral", "eph", 1500)
    await _consumer(n, "log.memory", "mem")
    await _consumer(n, "idem", "dropped")
    await done(Consumers(e).delete("idem", "dropped"))

    # queues: durable leases (fsync) with a dead-letter topic, and self-healing leases (disk)
    await _put(
        n,
        "jobs.durable",
        {
            "type": "queue",
            "durability": "fsync",
            "leases_durable": True,
            "lease_ms": 6 * HOUR,
            "max_deliveries": 2,
            "dead_letter": "jobs.dlq",
        },
    )
    await _put(n, "jobs.dlq", {"durability": "fsync"})
    await _append(n, "jobs.durable", _jobs(10, 1))
    assert await _claim(n, "jobs.durable", "w1", 3) == [1, 2, 3]
    assert await _claim(n, "jobs.durable", "w2", 2) == [4, 5]
    await done(q.ack("jobs.durable", "w1", [1]))
    await done(q.nack("jobs.durable", "w1", [2]))
    await done(q.extend("jobs.durable", "w2", [4], 8 * HOUR))
    await _put(
        n,
        "jobs.plain",
        {"type": "queue", "durability": "disk", "max_deliveries": 1, "dead_letter": "plain.dlq"},
    )
    await _append(n, "jobs.plain", _jobs(6, 1))
    assert await _claim(n, "jobs.plain", "w1", 2) == [1, 2]
    await done(q.nack("jobs.plain", "w1", [1]))
    assert await _claim(n, "jobs.plain", "w1", 1) == [3]  # job 1 is poison: to plain.dlq (created)
    await done(q.ack("jobs.plain", "w1", [2]))
    # delayed writes (issue 24): in a queue whose leases are not durable (the snapshot's ``due``)
    # and in one whose are (its ``delayed``); some due before the end, some not
    await _put(n, "jobs.later", {"type": "queue", "durability": "disk"})
    later = [
        {"data": "now"},
        {"data": "soon", "delay_ms": 30 * MINUTE},
        {"data": "tomorrow", "delay_ms": DAY, "tag": "t:1"},
    ]
    await _append(n, "jobs.later", later)
    assert await _claim(n, "jobs.later", "w1", 5) == [1]  # the delayed ones are passed over
    await _put(n, "jobs.later.durable", {"type": "queue", "durability": "fsync", "leases_durable": True})
    await _append(n, "jobs.later.durable", _jobs(3, 1), delay_ms=HOUR)
    await _append(n, "jobs.later.durable", [{"data": "late", "delay_ms": 20 * HOUR}])

    # routers: at-least-once, exactly-once (into an fsync dest), filtered (a step that copies
    # nothing), into an ephemeral dest, over a capped source (a source_trim hole), on a cycle
    # (hop-stamped), moved, reconfigured, deleted, and removed with their dest topic
    await _append(n, "r.src", [{"data": "before-routers", "tag": "keep:0"}])
    await _put(n, "r.eo", {"durability": "fsync"})
    await _put(n, "r.eph", {"durability": "ephemeral"})
    for name, fields in [
        ("r.src->r.dst", {"source": "r.src", "dest": "r.dst"}),
        ("r.src->r.eo", {"source": "r.src", "dest": "r.eo", "guarantee": "exactly_once"}),
        (
            "r.src->r.filtered",
            {
                "source": "r.src",
                "dest": "r.filtered",
                "filter": ["tag", "Glob", "keep:*"],
                "preserve_node": False,
            },
        ),
        ("r.src->r.eph", {"source": "r.src", "dest": "r.eph"}),
        ("mover", {"source": "r.src", "dest": "m.one"}),
        ("t.src->t.dst", {"source": "t.src", "dest": "t.dst"}),
        ("cyc.a->cyc.b", {"source": "cyc.a", "dest": "cyc.b", "allow_cycle": True}),
        ("cyc.b->cyc.a", {"source": "cyc.b", "dest": "cyc.a", "allow_cycle": True}),
        ("doomed", {"source": "r.src", "dest": "doomed.dst"}),
        ("to-gone", {"source": "r.src", "dest": "gone.dst"}),
    ]:
        await done(routers.put(name, fields))
    await _put(n, "t.src", {"cap_records": 3})
    await _append(
        n,
        "r.src",
        [
            {"data": {"i": 1}, "tag": "keep:1", "node": "n1", "meta": {"m": 1}},
            {"data": {"i": 2}, "tag": "drop:1"},
            {"data": {"i": 3}, "tag": "keep:2", "node": "n2"},
            {"data": {"i": 4}},
        ],
    )
    await _append(n, "cyc.a", [{"data": "ping", "meta": {"from": "a"}}])
    await _forward(n)
    await _append(n, "r.src", [{"data": {"i": 5}, "tag": "drop:2"}, {"data": {"i": 6}, "tag": "drop:3"}])
    await _forward(n)
    for i in range(8):  # cap 3, router not pumped: 5 evicted before it gets there
        await _append(n, "t.src", [{"data": {"t": i}}])
    await _forward(n)
    await done(routers.put("mover", {"source": "r.src", "dest": "m.two"}))  # moved: from the head
    await done(routers.put("r.src->r.dst", {"source": "r.src", "dest": "r.dst", "preserve_tag": False}))
    await done(routers.delete("doomed"))
    await done(routers.delete_topic("gone.dst"))
    await _append(n, "r.src", [{"data": {"i": 7}, "tag": "keep:3", "node": "n1"}])
    await _forward(n)

    # schedules: an interval (missed once, a batch node) into a disk topic it creates, a cron
    # (missed skip) into an fsync topic, a cron of jobs into a queue; one changed, one deleted,
    # one removed with its topic
    await _put(n, "sched.fsync", {"durability": "fsync"})
    await _put(n, "sched.queue", {"type": "queue", "durability": "fsync", "leases_durable": True})
    every = {"topic": "sched.log", "every_ms": 10 * MINUTE, "node": "cron-node", "missed": "once"}
    await _schedule(
        n, "sched.every", {**every, "records": [{"data": {"beat": 1}, "tag": "hb", "meta": {"m": 1}}]}
    )
    await _schedule(n, "sched.cron", {"topic": "sched.fsync", "cron": "30 * * * *", "records": RECORDS[:2]})
    jobs = {"topic": "sched.queue", "cron": "*/20 * * * mon-fri", "missed": "once"}
    await _schedule(n, "sched.jobs", {**jobs, "records": _jobs(2, 1)})
    await _schedule(n, "sched.gone", {"topic": "sched.log", "every_ms": HOUR, "records": [{"data": "gone"}]})
    await _schedule(
        n, "sched.doomed", {"topic": "sched.doomed.t", "every_ms": 5 * MINUTE, "records": [{"data": 0}]}
    )
    await _schedule(n, "sched.every", {**every, "records": [{"data": {"beat": 2}, "tag": "hb"}]})  # changed
    await done(n.schedules.delete("sched.gone"))


async def phase_a2(n: Node, clock: ManualClock) -> None:
    e, q = n.engine, n.queues
    clock.advance(10 * MINUTE)
    # deletes of sealed records: flipped in their segments by the next checkpoint
    await _delete(n, "log.disk", match=["tag", "Glob", "ünï:*"])
    await _delete(n, "log.fsync", before_seq=5)
    await _delete(n, "log.memory", before_seq=13)  # its first segment holds nothing live any more
    await _delete(n, "doomed.topic", match="d:3")
    await _append(n, "log.disk", RECORDS[:3])
    await _append(n, "log.memory", RECORDS[3:])
    await _append(n, "log.ephemeral", [{"data": "a2"}])
    # consumers: a commit of sealed history
    await _commit(n, "log.disk", "reader", 20)
    # queues
    assert await _claim(n, "jobs.durable", "w3", 1) == [2]  # reclaimed: its 2nd delivery
    await done(q.nack("jobs.durable", "w3", [2]))
    assert await _claim(n, "jobs.durable", "w3", 1) == [6]  # job 2 is poison: to jobs.dlq
    await done(q.nack("jobs.durable", "w2", [5], delay_ms=5 * MINUTE))  # due before the tail
    # routers
    await _append(n, "r.src", [{"data": {"i": 8}, "tag": "keep:4"}])
    await _append(n, "cyc.b", [{"data": "pong"}])
    await _forward(n)
    assert e.topic_state("t.dst", touch=False).count == 3
    # schedules: the ten minutes ran the interval once, the doomed one twice
    assert n.schedules.get("sched.every").runs_total == 1
    assert n.schedules.get("sched.doomed").runs_total == 2


async def phase_b(n: Node, clock: ManualClock) -> None:
    """The WAL tail: every frame type after the snapshot."""
    e, q, routers = n.engine, n.queues, n.routers
    clock.advance(10 * MINUTE)
    # TOPIC_PUT: a create, a tightened cap (evicts), a priority change; a lazy create
    await _put(n, "tail.new", {"durability": "fsync", "priority": 2})
    await _put(n, "capped", {"cap_records": 3})
    await _put(n, "log.disk", {"priority": 9})
    await _append(n, "tail.lazy", [{"data": "lazy-in-tail", "node": "n1"}])
    # APPEND for each class (and SEQ_RESERVE), keyed appends
    await _append(n, "tail.new", RECORDS)
    await _append(n, "log.disk", RECORDS, node="tail-node")
    await _append(n, "log.fsync", RECORDS)
    await _append(n, "log.memory", RECORDS)
    await _append(n, "log.ephemeral", [{"data": "tail"}])
    await _append(n, "idem", [{"data": 4}], idempotency_key="k3")
    await _append(n, "log.fsync", [{"data": "keyed-2"}], idempotency_key="fsync-k2")
    for i in range(4):
        await _append(n, "capped", [{"data": 100 + i}])
    # DELETE: sealed records (the WAL frame is their only witness: no checkpoint follows), by tag
    # and by seq
    await _delete(n, "log.disk", match=["tag", "Eq", ""])
    await _delete(n, "log.fsync", before_seq=9)
    await _delete(n, "log.memory", match="a:1")
    # CONSUMER: a create on a topic made in the tail, commits, a forced rewind and a repositioning,
    # a delete, and consumers whose topics are deleted (one recreated) next
    await _consumer(n, "tail.new", "tail-reader")
    await _commit(n, "tail.new", "tail-reader", 4)
    await _commit(n, "log.disk", "reader", 30)
    await _commit(n, "log.fsync", "audit", 5, force=True)
    assert await _consumer(n, "log.memory", "mem", from_seq=2, force=True) == 2
    await _consumer(n, "log.memory", "short-lived")
    await done(Consumers(e).delete("log.memory", "short-lived"))
    await _consumer(n, "doomed.topic", "with-its-topic", from_seq=5)
    await _consumer(n, "recreated.tail", "before-recreation", from_seq=3)
    # TOPIC_DELETE of a topic with sealed segments; delete + recreate
    await done(e.delete_topic("doomed.topic"))
    await done(e.delete_topic("recreated.tail"))
    await _append(n, "recreated.tail", [{"data": "again"}])
    # LEASE: claimed (a reclaim too), acked, released (now and delayed), extended, dead-lettered
    assert await _claim(n, "jobs.durable", "w4", 2, lease_ms=MINUTE) == [5, 7]
    await done(q.ack("jobs.durable", "w4", [7]))
    await done(q.nack("jobs.durable", "w4", [5]))
    assert await _claim(n, "jobs.durable", "w5", 1) == [8]  # job 5 is poison: to jobs.dlq
    await done(q.nack("jobs.durable", "w1", [3], delay_ms=20 * HOUR))  # still delayed at the end
    await done(q.extend("jobs.durable", "w2", [4], 12 * HOUR))
    assert await _claim(n, "jobs.durable", "w7", 1, lease_ms=MINUTE) == [9]  # expires before the end
    await _append(n, "jobs.durable", _jobs(2, 11))
    await _append(n, "jobs.plain", _jobs(2, 7))
    assert await _claim(n, "jobs.plain", "w2", 2) == [4, 5]
    # APPEND of delayed writes (replay registers them from the records' bytes)
    await _append(
        n, "jobs.later", [{"data": "tail", "delay_ms": 2 * HOUR}, {"data": "tail-long", "delay_ms": DAY}]
    )
    await _append(n, "jobs.later.durable", [{"data": "tail", "delay_ms": 3 * HOUR}])
    # ROUTER: put, reconfigure, forward (copies, nothing copied, a trim), delete
    await done(routers.put("tail.router", {"source": "r.src", "dest": "tail.dst", "preserve_node": False}))
    await _append(n, "r.src", [{"data": {"i": 9}, "tag": "keep:5", "node": "n2", "meta": {"tail": True}}])
    await _forward(n)
    await _append(n, "r.src", [{"data": {"i": 10}, "tag": "drop:4"}])
    await _forward(n)
    for i in range(5):
        await _append(n, "t.src", [{"data": {"t": 100 + i}}])
    await _forward(n)
    await done(routers.put("tail.router", {"source": "r.src", "dest": "tail.dst", "filter": "keep:6"}))
    await done(routers.delete("mover"))
    await _append(n, "cyc.a", [{"data": "ping-tail"}])
    await _forward(n)
    # SCHEDULE: puts (a new one, a new timing), runs (the ten minutes above), a delete, a
    # removal with its topic
    await _schedule(n, "sched.tail", {"topic": "tail.new", "every_ms": 7 * MINUTE, "records": RECORDS[2:4]})
    await _schedule(n, "sched.cron", {"topic": "sched.fsync", "cron": "45 */2 * * *", "records": RECORDS[:2]})
    await done(e.delete_topic("sched.doomed.t"))
    assert n.schedules.topic_deleted("sched.doomed.t") == ["sched.doomed"]
    clock.advance(8 * MINUTE)
    await done(n.schedules.delete("sched.tail"))


async def phase_c(n: Node, clock: ManualClock) -> None:
    """After a clean restart: more of everything, live leases and a router with lag at the end."""
    e, q = n.engine, n.queues
    clock.advance(2 * HOUR)
    await _forward(n)  # the routers catch up from their recovered cursors (nothing to do)
    await _put(n, "late.new", {"durability": "disk"})
    await _put(n, "log.memory", {"durability": "disk"})  # a class change
    await _append(n, "late.new", [{"data": "late", "tag": "late:1"}])
    await _append(n, "log.disk", [{"data": "c", "tag": "c:1"}, {"data": "c2"}])
    await _append(n, "log.fsync", [{"data": "c"}])
    await _append(n, "log.ephemeral", [{"data": "after-restart"}])
    await _append(n, "idem", [{"data": 5}], idempotency_key="k4")
    await _append(n, "idem.short", [{"data": "short-fresh"}], idempotency_key="short-fresh")
    await _delete(n, "log.disk", match="c:1")
    await _commit(n, "log.disk", "reader", e.topic_state("log.disk", touch=False).head_seq - 1)
    await _consumer(n, "late.new", "late")
    await _consumer(n, "recreated.tail", "after-recreation")
    assert await _claim(n, "jobs.durable", "w6", 2) == [9, 10]  # 9: reclaimed (w7's lease expired)
    await done(q.extend("jobs.durable", "w6", [10], 7 * HOUR))
    # leases were not durable: job 3 was dead-lettered in the tail (its lease expired, its 2nd
    # delivery was one too many), 4 and 5 are claimable again
    assert await _claim(n, "jobs.plain", "w3", 1) == [4]
    await _append(n, "r.src", [{"data": {"i": 11}, "tag": "keep:6"}])
    await _forward(n)
    await _append(n, "r.src", [{"data": {"i": 12}, "tag": "keep:7"}, {"data": {"i": 13}}])  # lag
    await n.flush()


PROBES: list[dict[str, Any]] = [
    *(
        {"kind": "append", "topic": topic, "records": [{"data": "retry"}], "key": key}
        for topic, key in [
            ("idem", "k1"),
            ("idem", "k2"),
            ("idem", "k3"),
            ("idem", "k4"),
            ("log.fsync", "fsync-k1"),
            ("log.fsync", "fsync-k2"),
            ("idem.short", "short-fresh"),
        ]
    ),
    {"kind": "claim", "topic": "jobs.durable", "node": "probe", "max": 10},
    {"kind": "claim", "topic": "jobs.plain", "node": "probe", "max": 10},
    {"kind": "claim", "topic": "jobs.later", "node": "probe", "max": 10},
    {"kind": "claim", "topic": "jobs.later.durable", "node": "probe", "max": 10},
    {"kind": "forward"},
    {"kind": "consume", "topic": "capped", "consumer": "slow", "limit": 2},
    {"kind": "consume", "topic": "log.disk", "consumer": "reader", "limit": 3},
    {"kind": "consume", "topic": "log.fsync", "consumer": "audit", "limit": 4},
    {"kind": "consume", "topic": "ttl", "consumer": "since", "limit": 10},
    {"kind": "consume", "topic": "log.ephemeral", "consumer": "eph", "limit": 10},
    {"kind": "append", "topic": "idem.short", "records": [{"data": "retry"}], "key": "short-old"},
    {"kind": "append", "topic": "log.disk", "records": [{"data": "after-golden"}]},
    {"kind": "append", "topic": "log.fsync", "records": [{"data": "after-golden"}]},
    {"kind": "append", "topic": "log.ephemeral", "records": [{"data": "after-golden"}]},
    {"kind": "schedules", "advance_ms": 3 * HOUR},
]
"""What the golden state answers: replays of known idempotency keys (deduped), claims (what is
claimable, in which order, with which delivery counts; a poison job dead-lettered), a
forwarding pass (the router lag), consumers reading after their cursors and committing (one
behind a cap: a tombstone), an expired key (appends), appends continuing each class, and three
hours of schedule runs."""


# -- writing ---------------------------------------------------------------------------------------


async def write_datadir(datadir: Path) -> tuple[int, dict[str, Any]]:
    """Build the data directory; returns the final clock and what the live engine showed just
    before the simulated crash."""
    walpersistence.time = types.SimpleNamespace(monotonic=_SteppingMonotonic().monotonic)  # type: ignore[attr-defined]
    clock = ManualClock(T0)
    n = await open_node(datadir, clock, lease_prefix="lease_aaaaaaaa", **STORE_KW)
    await phase_a1(n, clock)
    await n.checkpoint()
    await phase_a2(n, clock)
    await n.checkpoint()
    await phase_b(n, clock)
    await n.flush()
    n.close()
    n = await open_node(datadir, clock, lease_prefix="lease_cccccccc", **STORE_KW)
    await phase_c(n, clock)
    live = observe(n, full=False)
    await n.crash()
    return clock.now_ms(), live


def _compare_with_live(live: dict[str, Any], recovered: dict[str, Any]) -> list[str]:
    """What a crash may change: heads of topics acknowledged before durability jump past their
    seq reservation (and routers' lag with them), ephemeral records are gone, leases not
    journaled are released. Everything else must come back as the live engine had it."""
    problems = []
    assert live["listing"] and [t["topic"] for t in live["listing"]] == list(recovered["topics"])
    for name, before in live["topics"].items():
        after = recovered["topics"][name]
        config = before["state"]["config"]
        if config["durability"] != "ephemeral" and before["records"] != after["records"]:
            problems.append(f"{name}: records differ after recovery")
        if before["idempotency"] != after["idempotency"]:
            problems.append(f"{name}: idempotency keys differ after recovery")
        if config["leases_durable"] and before["queue"] != after["queue"]:
            problems.append(f"{name}: the lease projection differs after recovery")
        for key in ("count", "bytes", "config", "earliest_seq", "last_write_ts"):
            if config["durability"] != "ephemeral" and before["state"][key] != after["state"][key]:
                problems.append(f"{name}: {key} differs after recovery")
    for key in (
        "deleted_heads",
        "next_topic_id",
        "next_router_id",
        "schedules",
        "next_schedule_id",
        "consumers",
    ):
        if live[key] != recovered[key]:
            problems.append(f"{key} differ after recovery")
    # a router's lag counts the seqs its source skipped after the crash: only the rest must match
    progress = [[{k: v for k, v in r.items() if k != "lag"} for r in s["routers"]] for s in (live, recovered)]
    if progress[0] != progress[1]:
        problems.append("routers differ after recovery")
    return problems


async def observe_copy(datadir: Path, clock_ms: int) -> dict[str, Any]:
    """Open a copy of ``datadir`` at ``clock_ms`` (as the test does): the state, the probes' answers
    and the state after them."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "datadir"
        shutil.copytree(datadir, copy)
        n = await open_node(copy, ManualClock(clock_ms))
        try:
            state = observe(n)
            results = await run_probes(n, PROBES)
            after = observe(n, full=False)
        finally:
            n.close()
    return {
        "clock_ms": clock_ms,
        "state": state,
        "probes": [{"probe": p, "result": r} for p, r in zip(PROBES, results, strict=True)],
        "after_probes": after,
    }


def inventory(datadir: Path) -> dict[str, Any]:
    """What the directory holds: files, the WAL tail's frames by type (with what is inside the
    ``APPEND``, ``LEASE``, ``ROUTER``, ``SCHEDULE`` and ``CONSUMER`` ones), the snapshot LSN,
    segments with their delete flags."""
    fs = FileSystem()
    frames: Counter[str] = Counter()
    kinds: dict[str, Counter[str]] = {t.name: Counter() for t in FrameType}
    for _, path in wal_files(fs, datadir / "wal"):
        for frame in wal_frames(path.read_bytes(), path):
            frames[frame.type.name] += 1
            inside = kinds[frame.type.name]
            if frame.type is FrameType.APPEND:
                if formats.decode_append(frame.payload).key is not None:
                    inside["with an idempotency key"] += 1
            elif frame.type is FrameType.LEASE:
                for row in formats.decode_lease(frame.payload)[1]:
                    inside[f"{row[0]} event"] += 1
            elif frame.type is FrameType.CONSUMER:
                kind = formats.consumer_frame_kind(frame.payload)
                inside["set" if kind == formats.CONSUMER_SET else "delete"] += 1
            elif frame.type is FrameType.SCHEDULE:
                kind = formats.schedule_frame_kind(frame.payload)
                inside[{formats.SCHEDULE_PUT: "put", formats.SCHEDULE_DELETE: "delete"}.get(kind, "run")] += 1
            elif frame.type is FrameType.ROUTER:
                kind = formats.router_frame_kind(frame.payload)
                if kind == formats.ROUTER_FORWARD:
                    p = formats.decode_forward(frame.payload)
                    what = "copies" if p.copied else "source_trim" if p.trimmed else "nothing copied"
                    inside[f"forward ({what}{', stamped' if p.stamped else ''})"] += 1
                else:
                    inside["put" if kind == formats.ROUTER_PUT else "delete"] += 1
    snap = snapshot.read_latest_snapshot(fs, datadir / "snapshots")
    assert snap is not None
    listed = {(t.id, name) for t in snap.topics for name in t.segments}
    segs = []
    for path in sorted((datadir / "segments").rglob("*.seg"), key=lambda p: (int(p.parent.name), p.name)):
        loaded = segments.decode_segment(path.read_bytes())
        segs.append(
            {
                "path": str(path.relative_to(datadir)),
                "records": len(loaded.dead),
                "deleted_flags": loaded.dead.count(1),
                "in_snapshot": (loaded.topic_id, path.name) in listed,
            }
        )
    files = sorted(p for p in datadir.rglob("*") if p.is_file())
    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "wal_files": [p.name for _, p in wal_files(fs, datadir / "wal")],
        "frames": {
            name: [frames[name], ", ".join(f"{k}: {v}" for k, v in sorted(kinds[name].items()))]
            for name in (t.name for t in FrameType)
        },
        "snapshot_lsn": snap.lsn,
        "segments": segs,
    }


def _readme(name: str, commit: str, inv: dict[str, Any], digest: str) -> str:
    frames = "\n".join(f"| `{k}` | {n} | {inside} |" for k, (n, inside) in inv["frames"].items())
    segs = "\n".join(
        f"| `{s['path']}` | {s['records']} | {s['deleted_flags']} | "
        f"{'yes' if s['in_snapshot'] else 'no: sealed after it (recovery removes it)'} |"
        for s in inv["segments"]
    )
    types = ", ".join(f"`{t.name}`={t.value}" for t in FrameType)
    return f"""# Golden data directory {name}

Written by `make_golden.py` with the engine of commit
`{commit}`
(its on-disk formats as they were then). **Never regenerate these files.** Every later version
must open `datadir/` — a copy of it: recovery may write — with exactly the state in
`expected.json` (`tests/storage/test_golden.py`). A new on-disk format gets a new golden set
next to this one; this one stays. Should a deliberate change of *behaviour* (not of the
format) alter an observation, the test names that exception explicitly; `expected.json` is
not edited.

Formats:

- WAL frame types {types};
- snapshot file version {snapshot.VERSION}, snapshot schema version {formats.SNAPSHOT_VERSION};
- segment file version {segments.VERSION}.

`datadir/`: {inv["files"]} files, {inv["bytes"]} bytes (sha256 over the sorted files' names and
contents: `{digest}`).

The snapshot is at LSN {inv["snapshot_lsn"]}: recovery loads it with its segments and replays
the WAL tail after it ({len(inv["wal_files"])} files), which holds every frame type:

| frame | count | inside |
|---|---|---|
{frames}

The tail ends as a crash leaves it: no final checkpoint and no `CLEAN_STOP` after the last
frames (the `CLEAN_STOP` in it is a clean restart in the middle of the tail), and segments
sealed after the snapshot still on disk. Segments (`segments/<topic id>/<first seq>.seg`):

| segment | records | delete flags set | listed in the snapshot |
|---|---|---|---|
{segs}

The history, phase by phase, is in `make_golden.py`. `expected.json` holds the state read back
through `observe.py` from a copy opened at `clock_ms`, the answers of the probes (replays of
idempotency keys, claims, a forwarding pass, consumers reading and committing, appends,
schedule runs) and the state after them.
"""


def _digest(datadir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in datadir.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(datadir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _git(*args: str, stdin: str | None = None) -> str:
    root = GOLDEN.parents[2]
    return subprocess.run(
        ["git", *args], cwd=root, input=stdin, capture_output=True, text=True, check=True
    ).stdout


def _engine_commit(rev: str) -> str:
    """The commit ``rev``, whose ``server/topics_engine`` must be exactly the engine imported
    here (the work tree's, or an export put first on ``PYTHONPATH``); exits if the code differs."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}").strip()
    server = Path(topics_engine.__file__).resolve().parent
    tracked = {}
    for line in _git("ls-tree", "-r", commit, "--", "server/topics_engine").splitlines():
        meta, path = line.split("\t", 1)
        tracked[path.removeprefix("server/topics_engine/")] = meta.split()[2]
    ours = sorted(
        str(p.relative_to(server))
        for p in server.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".c", ".pyi")
    )
    hashes = _git(
        "hash-object", "--no-filters", "--stdin-paths", stdin="".join(f"{server / p}\n" for p in ours)
    )
    differ = [p for p, h in zip(ours, hashes.split(), strict=True) if tracked.get(p) != h]
    missing = [p for p in tracked if p.endswith((".py", ".c", ".pyi")) and p not in ours]
    if differ or missing:
        sys.exit(
            f"the engine in {server} is not {commit}'s (differ: {differ}, missing: {missing}); "
            f"run it on an export of the commit: `git archive {commit[:12]} server | tar -x -C DIR`, "
            "the built _codec module copied in, PYTHONPATH=DIR/server"
        )
    return commit


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="the golden set's directory (vN)")
    parser.add_argument("--commit", default="HEAD", help="the commit whose engine is imported")
    args = parser.parse_args()
    out: Path = args.out
    if out.exists():
        sys.exit(f"{out} exists: golden files are never regenerated (a new format gets a new set)")
    commit = _engine_commit(args.commit)
    datadir = out / "datadir"
    clock_ms, live = asyncio.run(write_datadir(datadir))
    expected = asyncio.run(observe_copy(datadir, clock_ms))
    problems = _compare_with_live(live, expected["state"])
    if problems:
        sys.exit("recovery does not give back what the live engine had:\n" + "\n".join(problems))
    (out / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    inv = inventory(datadir)
    (out / "README.md").write_text(_readme(out.name, commit, inv, _digest(datadir)))
    print(json.dumps(inv, indent=1))


if __name__ == "__main__":
    main()
