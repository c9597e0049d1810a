"""Wall-clock steps across a restart of a durable engine (docs/DECISIONS.md, "Clock steps").

A restarted process's steady clock starts at the wall clock (a fresh :class:`ManualClock` at the
old one's wall time stands for it), so whatever a restart reads back must have been written as
wall instants: ``$ts`` (the records), a durable lease's deadline and a delayed job's due time
(journaled or in the snapshot). With the wall clock stepped back an hour before the restart:

- ``$ts`` stays at or above the topic's last ``$ts`` (recovered from the log or the snapshot);
- a durable lease keeps the time it had left, not an hour more (if it was written after the
  step, or a snapshot was taken after it);
- a delayed job waits out what was left of its delay (likewise).

Both restart modes (``wal``: replay; ``checkpoint``: the snapshot)."""

from __future__ import annotations

from typing import Any

import orjson
from topics_engine import Engine, ManualClock

from ..engine.queue_helpers import claimed_seqs, queues_for
from .harness import T0, Harness, diff_bytes

HOUR = 3_600_000


async def _done(future: Any) -> None:
    if future is not None:
        await future


async def _restart_stepped_back(h: Harness) -> Engine:
    """Step the wall clock back an hour, then restart: the new process's clocks both start at
    the (stepped) wall time."""
    h.clock.step_wall(-HOUR)
    h.clock = ManualClock(h.clock.now_ms())
    return await h.restart()


def _ts(e: Engine, topic: str = "t") -> list[int]:
    return [orjson.loads(b)["$ts"] for b in diff_bytes(e, topic)]


async def test_ts_stays_monotonic_across_a_restart_while_stepped_back(h: Harness) -> None:
    e = h.engine
    await _done(e.put_topic("t", {"durability": "fsync"}).wait)
    await _done(e.append("t", [{"data": 1}]).wait)
    h.clock.advance(100)
    await _done(e.append("t", [{"data": 2}]).wait)
    e = await _restart_stepped_back(h)
    await _done(e.append("t", [{"data": 3}]).wait)
    assert _ts(e) == [T0, T0 + 100, T0 + 100]


async def test_ts_stays_monotonic_across_a_restart_when_every_record_is_gone(h: Harness) -> None:
    """The last ``$ts`` outlives the records that carried it (deleted before the restart)."""
    e = h.engine
    await _done(e.put_topic("t", {"durability": "fsync"}).wait)
    r = e.append("t", [{"data": 1}])
    await _done(r.wait)
    plan = e.plan_records_delete("t", before_seq=r.last_seq + 1)
    await _done(e.delete_seqs(e.get("t"), plan.seqs()).wait)
    assert diff_bytes(e, "t") == []
    e = await _restart_stepped_back(h)
    await _done(e.append("t", [{"data": 2}]).wait)
    assert _ts(e) == [T0]


async def test_a_durable_lease_keeps_its_remaining_time_across_a_restart(h: Harness) -> None:
    """A lease claimed after the step keeps exactly its remaining time. One claimed before it
    was journaled as the wall instant of that time: a snapshot taken after the step (the
    ``checkpoint`` mode; a clean shutdown takes one) rewrites it at the new wall clock, but
    replaying the journal alone (``wal``: a crash) reads the old instant, an hour later now —
    the step between the write and the restart is not known to the new process."""
    e = h.engine
    await _done(e.put_topic("q", {"type": "queue", "durability": "fsync", "leases_durable": True}).wait)
    await _done(e.append("q", [{"data": 1}, {"data": 2}]).wait)
    first = queues_for(e).claim("q", "a", 1, 10_000)  # claimed before the step: until T0 + 10 s
    await _done(first.wait)
    h.clock.step_wall(-HOUR)
    second = queues_for(e).claim("q", "b", 1, 10_000)  # claimed after it: 10 s from now too
    await _done(second.wait)
    h.clock.advance(4_000)
    h.clock = ManualClock(h.clock.now_ms())  # restart: steady starts at the (stepped) wall
    e = await h.restart()
    assert queues_for(e).claim("q", "c", 10).jobs == []
    h.clock.advance(6_000)  # 6 s left, not an hour and 6 s
    assert queues_for(e).claim("q", "c", 10).jobs == []
    h.clock.advance(1)
    if h.mode == "checkpoint":
        assert claimed_seqs(queues_for(e).claim("q", "c", 10)) == [1, 2]
        return
    assert claimed_seqs(queues_for(e).claim("q", "c", 10, 2 * HOUR)) == [2]
    h.clock.advance(HOUR)
    assert claimed_seqs(queues_for(e).claim("q", "c", 10)) == [1]


async def test_a_delayed_job_waits_out_what_was_left_of_its_delay(h: Harness) -> None:
    """As a durable lease: a snapshot taken after the step holds the due time as the wall
    instant it stands for then (``checkpoint``); replaying the write alone (``wal``) makes it
    due at ``$ts + delay_ms``, a wall instant an hour away now."""
    e = h.engine
    await _done(e.put_topic("q", {"type": "queue", "durability": "fsync"}).wait)
    await _done(e.append("q", [{"data": "later", "delay_ms": 10_000}]).wait)
    h.clock.advance(4_000)
    e = await _restart_stepped_back(h)
    late = 0 if h.mode == "checkpoint" else HOUR
    h.clock.advance(late + 5_999)
    assert queues_for(e).claim("q", "c", 10).jobs == []
    h.clock.advance(1)
    assert claimed_seqs(queues_for(e).claim("q", "c", 10)) == [1]
