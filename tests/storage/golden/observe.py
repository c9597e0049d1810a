"""Open a data directory the way the server does, and observe its whole state.

Shared by ``make_golden.py`` (which wrote ``v1/expected.json`` from :func:`observe` and
:func:`run_probes`) and ``tests/storage/test_golden.py`` (which compares a recovered copy of
``v1/datadir`` with it). The expected files never change; this module may be adapted to later
engine APIs, as long as it still produces the same observation for the same state.

The observation, per topic: its state (watermarks, count, bytes, config, priority, timestamps,
queue counters), every record a reader gets from the start (``$seq``, ``$ts``, ``$node``,
``$tag``, ``data``, ``meta``), the pages of that walk with their tombstones, one short read from
every cursor up to the last record (and around the head), a walk with a node filter, the
idempotency keys inside the window, and a queue's lease projection. Then the deleted topics'
heads, the routers (config, cursor, totals, lag), the schedules (config, progress, next due
time; since ``v3``), the named consumers (cursor, when it was set; since ``v4``) and the id
counters. :func:`run_probes` then mutates on purpose — replays
of known idempotency keys, claims, a forwarding pass, schedule runs, consumers reading and
committing — and reports what each returned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topics_engine import Engine, Limits, ManualClock, Queues
from topics_engine.clock import Clock
from topics_engine.consumers import Consumers
from topics_engine.datadir.directory import DataDirectory
from topics_engine.queues import Claimed
from topics_engine.results import Diff, QueueCounters, Tombstone
from topics_engine.routers import Routers
from topics_engine.schedules import Schedules

GOLDEN = Path(__file__).resolve().parent
PAGE = 5
"""Records per page of the paged walk (small, so pages and their tombstones are exercised)."""
CURSOR_LIMIT = 3
"""Records per read in the read-from-every-cursor walk."""
NODE = "n1"
"""The node of the node-filtered walk (its own records are skipped where ``dedupe_node``)."""


@dataclass
class Node:
    """One "process": an engine recovered from a data directory, its open store, its routers
    (pumped by hand: ``autorun=False``), its queue operations and its schedules (run by the
    engine's manual clock, as a test moves it)."""

    engine: Engine
    store: DataDirectory
    routers: Routers
    queues: Queues
    schedules: Schedules

    async def flush(self) -> None:
        """Wait until every frame submitted so far is durable (and applied, for ``fsync``)."""
        assert self.store.wal is not None
        await self.store.wal.run_task(lambda: None)

    async def checkpoint(self) -> None:
        await self.flush()
        await self.store.checkpoint()

    def close(self) -> None:
        """A clean stop without a final checkpoint: the WAL ends with a ``CLEAN_STOP`` frame."""
        self.schedules.stop()
        self.store.close()

    async def crash(self) -> None:
        """Stop as ``kill -9`` leaves the files once every frame reached the disk: the segment
        thread's work finished, the WAL's sync thread stopped and its file closed — no
        checkpoint, no ``CLEAN_STOP`` frame — and the lock released, as the kernel releases a
        killed process's."""
        await self.flush()
        self.schedules.stop()  # the process is gone: its timers too
        store = self.store
        assert store.sealer is not None and store.wal is not None
        store.sealer.close()
        store.wal.close()
        if store._lock_fd is not None:
            store.fs.close(store._lock_fd)
            store._lock_fd = None


LEASE_PREFIX = "lease_0b5e7e00"
"""Lease ids are ``<prefix><counter>`` with a random prefix per process: fixed here, so the
leases a probe takes are the same in every run."""


async def open_node(path: Path, clock: Clock, lease_prefix: str = LEASE_PREFIX, **store_kw: Any) -> Node:
    """Lock ``path``, recover (snapshot + segments + WAL tail), open the WAL and start the
    routers from their recovered cursors and the schedules — the server's start-up order
    (``ServerContext``)."""
    engine = Engine(clock, Limits())
    store = DataDirectory(path, **store_kw)
    store.lock()
    routers = Routers(engine, autorun=False)
    schedules = Schedules(engine)
    for _ in store.recover(engine, routers, schedules):
        pass
    store.open(engine, asyncio.get_running_loop())
    routers.start()
    schedules.start()
    queues = Queues(engine)
    queues._lease_prefix = lease_prefix
    return Node(engine, store, routers, queues, schedules)


async def done(result: Any) -> None:
    """Await a result's acknowledgement (its ``wait`` future), if it has one."""
    wait = getattr(result, "wait", result)
    if wait is not None:
        await wait


def jsonable(value: Any) -> Any:
    """``value`` as it reads back from a JSON file (tuples -> lists, int keys -> strings)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


# -- the observation -----------------------------------------------------------------------------


def _records(page: Diff) -> list[dict[str, Any]]:
    if not page.count:
        return []
    out: list[dict[str, Any]] = json.loads(b"[" + page.records_json() + b"]")
    assert len(out) == page.count
    return out


def _tomb(tombstone: Tombstone | None) -> dict[str, Any] | None:
    return dataclasses.asdict(tombstone) if tombstone is not None else None


def _walk(engine: Engine, name: str, **kw: Any) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Every record a reader gets paging from 0, and the pages: ``[from, seqs, next, tomb]``."""
    records: list[dict[str, Any]] = []
    pages: list[list[Any]] = []
    cursor = 0
    for _ in range(100_000):
        page = engine.diff(name, from_seq=cursor, limit=PAGE, include_tags=True, touch=False, **kw)
        got = _records(page)
        records.extend(got)
        pages.append([cursor, [r["$seq"] for r in got], page.next_from_seq, _tomb(page.tombstone)])
        if page.caught_up:
            return records, pages
        assert page.next_from_seq > cursor, f"{name}: a read from {cursor} did not advance"
        cursor = page.next_from_seq
    raise AssertionError(f"{name}: the reader never caught up")


def _cursor_reads(engine: Engine, name: str, head: int, last_live: int) -> dict[str, list[Any]]:
    """A short read from every cursor up to just past the last record, and around the head:
    ``{cursor: [seqs, next_from_seq, tombstone]}``."""
    top = min(head, last_live + 1)
    cursors = sorted(set(range(top + 1)) | {max(0, head - 1), head, head + 1})
    out: dict[str, list[Any]] = {}
    for c in cursors:
        page = engine.diff(name, from_seq=c, limit=CURSOR_LIMIT, include_tags=True, touch=False)
        out[str(c)] = [[r["$seq"] for r in _records(page)], page.next_from_seq, _tomb(page.tombstone)]
    return out


def _queue(engine: Engine, name: str) -> dict[str, Any] | None:
    topic = engine.get(name)
    q = topic.queue
    if q is None:
        return None
    q.expire(engine.clock.now_ms())
    image = q.image(with_leases=True)
    return {
        "leases": sorted(image.leases or []),
        "deliveries": sorted(image.deliveries or []),
        "delayed": sorted(image.delayed or []),
        "free": list(image.free or []),
        "held_back": sorted(q.held_back),
        "cursor": image.cursor,
        "dead_lettered": image.dead_lettered,
    }


def _idempotency(engine: Engine, name: str) -> list[list[Any]]:
    """``[key, ts, first_seq, last_seq]`` of the keys a retry would still be deduped by."""
    topic = engine.get(name)
    now, window = engine.clock.now_ms(), topic.config.idempotency_window_ms
    return [row for row in topic.idempotency.entries() if now - row[1] < window]  # type: ignore[operator]


CONFIG_ADDED = {"max_in_flight": 0}
"""Config fields added since the observations were made, with the value every golden topic
has (their default): the observation leaves them out."""


def _config(wire: dict[str, Any]) -> dict[str, Any]:
    for name, default in CONFIG_ADDED.items():
        assert wire.pop(name) == default, f"config.{name} is not its default"
    return wire


def _counters(queue: QueueCounters) -> dict[str, int]:
    """The §10.7 counters the observation was made of (the queue health added since, issue 24,
    is derived from the same state)."""
    return {"ready": queue.ready, "in_flight": queue.in_flight, "dead_lettered": queue.dead_lettered}


def observe_topic(engine: Engine, name: str, full: bool = True) -> dict[str, Any]:
    st = engine.topic_state(name, touch=False)
    records, pages = _walk(engine, name)
    out: dict[str, Any] = {
        "state": {
            "type": st.type.value,
            "head_seq": st.head_seq,
            "earliest_seq": st.earliest_seq,
            "next_seq": st.next_seq,
            "count": st.count,
            "bytes": st.bytes,
            "config": _config(st.config.to_wire()),
            "effective_priority": st.effective_priority,
            "last_write_ts": st.last_write_ts,
            "last_read_ts": st.last_read_ts,
            "queue": _counters(st.queue) if st.queue is not None else None,
        },
        "records": records,
        "pages": pages,
        "idempotency": _idempotency(engine, name),
        "queue": _queue(engine, name),
    }
    if full:
        last_live = records[-1]["$seq"] if records else 0
        out["cursors"] = _cursor_reads(engine, name, st.head_seq, last_live)
        out["not_" + NODE] = [r["$seq"] for r in _walk(engine, name, node=NODE)[0]]
    return out


def observe(node: Node, full: bool = True) -> dict[str, Any]:
    """The whole observable state of ``node`` (``full``: with the per-cursor and node-filtered
    reads). Reads never touch ``last_read_ts``."""
    engine, routers = node.engine, node.routers
    page = engine.list_topics(page_size=1000)
    assert page.next_cursor is None, "more than 1000 topics"
    listing = [
        {
            "topic": s.topic,
            "type": s.type.value,
            "head_seq": s.head_seq,
            "earliest_seq": s.earliest_seq,
            "count": s.count,
            "bytes": s.bytes,
            "durability": s.durability.value,
            "effective_priority": s.effective_priority,
        }
        for s in page.topics
    ]
    return jsonable(
        {
            "clock_ms": engine.clock.now_ms(),
            "listing": listing,
            "topics": {s["topic"]: observe_topic(engine, s["topic"], full) for s in listing},
            "deleted_heads": dict(sorted(engine.deleted_heads().items())),
            "next_topic_id": engine.next_topic_id,
            "routers": [
                {
                    "name": r.name,
                    "id": r.id,
                    "config": r.config.to_wire(),
                    "cursor": r.cursor,
                    "forwarded_total": r.forwarded_total,
                    "source_trimmed": r.source_trimmed,
                    "on_cycle": r.on_cycle,
                    "lag": routers.state(r.name).lag,
                }
                for r in routers.all()
            ],
            "next_router_id": routers.next_id,
            "schedules": [
                {
                    "name": s.name,
                    "id": s.id,
                    "config": s.config.to_stored(),
                    "since_ms": s.since_ms,
                    "through_ms": s.through_ms,
                    "last_run_ms": s.last_run_ms,
                    "runs_total": s.runs_total,
                    "next_run_ms": s.next_run_ms,
                }
                for s in node.schedules.all()
            ],
            "next_schedule_id": node.schedules.next_id,
            "consumers": _consumers(engine, [s["topic"] for s in listing]),
        }
    )


def _consumers(engine: Engine, topics: list[str]) -> list[list[Any]]:
    """``[topic, consumer, cursor, committed_at_ms]`` of every named consumer, by topic and name
    (the topics' heads, and so the lags, are in their states)."""
    consumers = Consumers(engine)
    return [
        [topic, c.consumer, c.cursor, c.committed_at_ms]
        for topic in topics
        for c in consumers.page(topic, page_size=1000).consumers
    ]


# -- probes: deliberate mutations and what they answer ---------------------------------------------


async def run_probe(node: Node, probe: dict[str, Any]) -> dict[str, Any]:
    """Run one probe and describe its answer:

    - ``{"kind": "append", "topic", "records", "key"}``: an append (with an idempotency key: a
      replay of a known key answers ``deduped`` with the original seqs);
    - ``{"kind": "claim", "topic", "node", "max"}``: a claim (jobs, their deliveries and
      deadlines; poison jobs are dead-lettered on the way);
    - ``{"kind": "forward"}``: one forwarding pass of every router until none is due;
    - ``{"kind": "schedules", "advance_ms"}``: the clock moved on, the schedules' runs due
      meanwhile made (each schedule's runs and last run);
    - ``{"kind": "consume", "topic", "consumer", "limit"}``: a read of up to ``limit`` records
      after the named consumer's cursor, committed (the seqs read, the tombstone met, the
      consumer after the commit).
    """
    kind = probe["kind"]
    if kind == "append":
        r = node.engine.append(probe["topic"], probe["records"], idempotency_key=probe.get("key"))
        await done(r)
        await node.flush()
        result = {
            "first_seq": r.first_seq,
            "last_seq": r.last_seq,
            "head_seq": r.head_seq,
            "created": r.created,
            "deduped": r.deduped,
        }
    elif kind == "claim":
        claimed = node.queues.claim(probe["topic"], probe["node"], probe["max"], probe.get("lease_ms"))
        assert isinstance(claimed, Claimed), "golden queues do not coalesce claims"
        await done(claimed)
        await node.flush()
        result = {
            "jobs": [
                {
                    "seq": j.seq,
                    "node": j.lease.node,
                    "deadline": j.lease.deadline,
                    "deliveries": j.lease.deliveries,
                    "record": json.loads(j.record.wire),
                }
                for j in claimed.jobs
            ],
            "ready": claimed.counters.ready,
        }
    elif kind == "forward":
        copied = node.routers.drain()
        await node.flush()
        result = {"copied": copied}
    elif kind == "schedules":
        clock = node.engine.clock
        assert isinstance(clock, ManualClock), "schedules are probed on the golden's manual clock"
        clock.advance(probe["advance_ms"])
        await node.flush()
        result = {s.name: [s.runs_total, s.last_run_ms] for s in node.schedules.all()}
    elif kind == "consume":
        consumers = Consumers(node.engine)
        topic, name = probe["topic"], probe["consumer"]
        page = node.engine.diff(topic, from_seq=consumers.cursor(topic, name), limit=probe["limit"])
        committed = consumers.commit(topic, name, page.next_from_seq)
        await done(committed)
        result = {
            "seqs": [r["$seq"] for r in _records(page)],
            "tombstone": _tomb(page.tombstone),
            "consumer": [committed.state.cursor, committed.state.head_seq, committed.state.lag],
        }
    else:
        raise ValueError(f"unknown probe kind {kind!r}")
    return jsonable(result)


async def run_probes(node: Node, probes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [await run_probe(node, probe) for probe in probes]
