"""§10 queues across restarts of a durable engine.

- ``leases_durable: false`` (default): the leases log is not journaled, so after a restart every
  in-flight job is claimable again; acked jobs (a durable delete once the ack's future resolved)
  never come back; the ``dead_lettered`` counter and the dead-letter topic's records survive.
- ``leases_durable: true``: active leases (holder, lease_id, deadline, deliveries), delayed nacks
  and delivery counters are restored, so expiry and dead-lettering go on exactly where they were.

Every restart test runs in two modes (as ``test_restart.py``): ``wal`` — a clean close, recovery
replays the whole WAL; ``checkpoint`` — ``DataDirectory.checkpoint()`` first, recovery loads the snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from topics_engine import Engine
from topics_engine.queues import Claimed

from ..engine.queue_helpers import LEASE_ID_RE, claimed_seqs, qstate, queues_for
from .harness import T0, Harness, diff_bytes, flush


async def _done(future: Any) -> None:
    if future is not None:
        await future


async def make_queue(e: Engine, name: str = "q", **config: Any) -> None:
    await _done(e.put_topic(name, {"type": "queue", **config}).wait)


async def produce(e: Engine, n: int, name: str = "q", start: int = 0, **kw: Any) -> list[int]:
    r = e.append(name, [{"data": start + i} for i in range(n)], **kw)
    await _done(r.wait)
    return list(range(r.first_seq, r.last_seq + 1))


async def claim(e: Engine, node: str, max_: Any = None, lease_ms: Any = None, name: str = "q") -> Claimed:
    r = queues_for(e).claim(name, node, max_, lease_ms)
    assert isinstance(r, Claimed)
    await _done(r.wait)
    return r


async def ack(e: Engine, node: str, seqs: list[int], lease_ids: Any = None, name: str = "q") -> list[int]:
    r = queues_for(e).ack(name, node, seqs, lease_ids)
    await _done(r.wait)  # an ack on an fsync queue is durable once this resolves
    return r.done


def leases(e: Engine, name: str = "q") -> dict[int, tuple[str, str, int, int]]:
    topic = e.topic(name)
    assert topic is not None and topic.queue is not None
    topic.queue.expire(e.clock.now_ms())
    return {
        s: (ls.node, ls.lease_id, ls.deadline, ls.deliveries) for s, ls in sorted(topic.queue.leases.items())
    }


def health(e: Engine, name: str = "q") -> tuple[int, int, list[tuple[str, int]], bool]:
    """``(delayed, oldest_ready_age_ms, holders, holders_truncated)`` of the queue."""
    q = e.topic_state(name, touch=False).queue
    assert q is not None
    return q.delayed, q.oldest_ready_age_ms, q.holders, q.holders_truncated


def dlq_records(e: Engine, name: str = "dlq") -> list[dict[str, Any]]:
    return [orjson.loads(b) for b in diff_bytes(e, name, include_tags=True)]


# -- leases_durable: false ------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["fsync", "disk"])
async def test_non_durable_leases_make_every_in_flight_job_claimable(h: Harness, durability: str) -> None:
    e = h.engine
    await make_queue(e, durability=durability, lease_ms=60_000)
    await produce(e, 6)
    await claim(e, "a", 3)  # 1, 2, 3
    await claim(e, "b", 1)  # 4
    assert await ack(e, "a", [1]) == [1]
    queues_for(e).nack("q", "b", [4], delay_ms=50_000)
    h.clock.advance(10)
    assert health(e) == (1, 10, [("a", 2)], False)
    e = await h.restart()
    assert qstate(e) == {"ready": 5, "in_flight": 0, "dead_lettered": 0, "count": 5}
    assert leases(e) == {}
    assert health(e) == (0, 10, [], False)  # nobody holds anything; job 2 is the oldest ready
    # the old holders hold nothing any more
    assert queues_for(e).ack("q", "a", [2, 3]).done == []
    r = await claim(e, "c", 10)
    assert claimed_seqs(r) == [2, 3, 4, 5, 6]  # the delayed nack was forgotten too
    assert all(j.lease.deliveries == 1 for j in r.jobs)  # counters start afresh
    assert all(j.lease.deadline == T0 + 10 + 60_000 for j in r.jobs)


async def test_acked_jobs_never_come_back(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True)
    await produce(e, 4)
    await claim(e, "a", 4)
    assert await ack(e, "a", [2, 4]) == [2, 4]
    e = await h.restart()
    assert [orjson.loads(b)["$seq"] for b in diff_bytes(e, "q")] == [1, 3]
    assert claimed_seqs(await claim(e, "a", 10)) == [1, 3]
    assert await ack(e, "a", [1]) == [1]
    e = await h.restart()
    r = await claim(e, "b", 10)
    assert claimed_seqs(r) == [3]
    assert await ack(e, "b", [3]) == [3]
    e = await h.restart()
    assert qstate(e) == {"ready": 0, "in_flight": 0, "dead_lettered": 0, "count": 0}
    assert (await claim(e, "b", 10)).jobs == []


async def test_new_jobs_after_restart_continue_the_seq_space(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True)
    await produce(e, 2)
    await claim(e, "a", 2)
    await ack(e, "a", [1, 2])
    e = await h.restart()
    assert await produce(e, 2) == [3, 4]
    assert claimed_seqs(await claim(e, "a", 10)) == [3, 4]


async def test_dead_lettered_counter_and_dlq_records_survive(h: Harness) -> None:
    e = h.engine
    await _done(e.put_topic("dlq", {"durable": True}).wait)
    await make_queue(e, durable=True, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    e.append("q", [{"data": "poison", "tag": "p1", "meta": {"m": 1}}], node="prod")
    await flush(h.node)  # type: ignore[arg-type]
    await produce(e, 1, start=1)
    await claim(e, "a", 2)
    h.clock.advance(101)
    assert (await claim(e, "a", 2)).jobs == []
    await flush(h.node)  # type: ignore[arg-type]
    assert qstate(e)["dead_lettered"] == 2
    before = dlq_records(e)
    e = await h.restart()
    assert qstate(e) == {"ready": 0, "in_flight": 0, "dead_lettered": 2, "count": 0}
    assert dlq_records(e) == before
    assert before[0]["data"] == "poison" and before[0]["$tag"] == "p1" and before[0]["$node"] == "prod"
    assert before[0]["meta"] == {
        "m": 1,
        "$dead_letter_from": "q",
        "$dead_letter_deliveries": 1,
        "$dead_letter_src_seq": 1,
    }
    # and it keeps counting from there, across another restart
    await produce(e, 1, start=2)
    await claim(e, "a")
    h.clock.advance(101)
    await claim(e, "a")
    e = await h.restart()
    assert qstate(e)["dead_lettered"] == 3
    assert len(dlq_records(e)) == 3


async def test_dead_lettered_counter_snapshot_plus_tail(tmp_path: Path) -> None:
    """Dead-letter, checkpoint, dead-letter again, close without a checkpoint: the restart loads
    the snapshot's counter and replays the tail on top."""
    h = Harness(tmp_path, "wal")
    e = await h.start()
    try:
        await make_queue(e, durable=True, lease_ms=100, max_deliveries=1, dead_letter="dlq")
        await produce(e, 1)
        await claim(e, "a")
        h.clock.advance(101)
        await claim(e, "a")
        e = await h.restart("checkpoint")
        assert qstate(e)["dead_lettered"] == 1
        await produce(e, 2, start=1)
        await claim(e, "a", 2)
        h.clock.advance(101)
        await claim(e, "a", 2)
        e = await h.restart("wal")
        assert qstate(e)["dead_lettered"] == 3
        e = await h.restart("checkpoint")
        assert qstate(e)["dead_lettered"] == 3
        assert len(dlq_records(e)) == 3
    finally:
        h.close()


async def test_dead_lettered_counter_not_double_counted_by_a_checkpoint_behind_a_pending_fsync(
    tmp_path: Path,
) -> None:
    """A checkpoint cut while an fsync-class write is still unapplied takes its snapshot LSN
    below that write; lease frames after it are replayed on top of the snapshot. The counter
    must come back as it was (§10.7: cumulative moves), not with the tail's moves added twice."""
    h = Harness(tmp_path, "wal")
    e = await h.start()
    try:
        await _done(e.put_topic("slow", {"durable": True}).wait)
        await make_queue(e, durability="disk", lease_ms=100, max_deliveries=1, dead_letter="dlq")
        await produce(e, 1)
        await claim(e, "a")
        h.clock.advance(101)
        pending = e.append("slow", [{"data": "unapplied at the cut"}]).wait
        assert (await claim(e, "a")).jobs == []  # dead-letters seq 1 (a LEASE frame after it)
        assert qstate(e)["dead_lettered"] == 1
        assert h.node is not None
        await h.node.store.checkpoint()  # cut now: the fsync append is still unapplied
        await _done(pending)
        await flush(h.node)
        h.node.close()
        e = await h.start()
        assert len(dlq_records(e)) == 1
        assert qstate(e)["dead_lettered"] == 1
    finally:
        h.close()


async def test_ephemeral_dlq_loses_its_copies_but_the_counter_survives(h: Harness) -> None:
    """Dead-lettered copies honour the destination's durability class."""
    e = h.engine
    await _done(e.put_topic("dlq", {"durability": "ephemeral"}).wait)
    await make_queue(e, durable=True, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    await produce(e, 2)
    await claim(e, "a", 2)
    h.clock.advance(101)
    await claim(e, "a", 2)
    assert len(dlq_records(e)) == 2
    e = await h.restart()
    assert dlq_records(e) == []
    assert qstate(e) == {"ready": 0, "in_flight": 0, "dead_lettered": 2, "count": 0}


async def test_non_durable_leases_restart_delivery_counts(h: Harness) -> None:
    """Without leases_durable the delivery counters are part of the lost projection: a job
    delivered max_deliveries times before the restart is delivered again after it."""
    e = h.engine
    await make_queue(e, durable=True, lease_ms=100, max_deliveries=2, dead_letter="dlq")
    await produce(e, 1)
    for _ in range(2):
        await claim(e, "a")
        h.clock.advance(101)
    e = await h.restart()
    (job,) = (await claim(e, "a")).jobs
    assert job.lease.deliveries == 1
    assert e.topic("dlq") is None


# -- leases_durable: true -----------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["fsync", "disk"])
async def test_durable_leases_are_restored(h: Harness, durability: str) -> None:
    e = h.engine
    await make_queue(e, durability=durability, leases_durable=True, lease_ms=10_000)
    await produce(e, 6)
    await claim(e, "a", 2)  # 1, 2 until T0 + 10000
    await claim(e, "b", 1, lease_ms=500)  # 3 until T0 + 500
    h.clock.advance(100)
    await _done(queues_for(e).extend("q", "a", [1], 20_000).wait)  # 1 until T0 + 20100
    await claim(e, "c", 1)  # 4
    await ack(e, "c", [4])
    before = leases(e)
    assert set(before) == {1, 2, 3}
    assert before[1][2] == T0 + 20_100 and before[3][2] == T0 + 500
    counters_before = qstate(e)
    assert health(e) == (0, 100, [("a", 2), ("b", 1)], False)  # job 5 waits since T0
    e = await h.restart()
    assert leases(e) == before
    assert health(e) == (0, 100, [("a", 2), ("b", 1)], False)  # the holders are restored too
    assert qstate(e) == counters_before == {"ready": 2, "in_flight": 3, "dead_lettered": 0, "count": 5}
    # holders keep their leases: lease_id fencing still works against the restored tokens
    assert await ack(e, "a", [2], [before[2][1]]) == [2]
    assert queues_for(e).ack("q", "a", [1], ["lease_0"]).skipped == [1]
    # the claim cursor survived: only never-claimed jobs are fresh
    assert claimed_seqs(await claim(e, "d", 10)) == [5, 6]
    # the restored deadlines still rule: 3 expires after T0 + 500, not before
    h.clock.set(T0 + 500)
    assert (await claim(e, "d", 10)).jobs == []
    h.clock.advance(1)
    (job,) = (await claim(e, "d", 10)).jobs
    assert (job.seq, job.lease.deliveries) == (3, 2)
    assert queues_for(e).ack("q", "b", [3]).skipped == [3]


async def test_durable_leases_expired_during_downtime_are_reclaimable(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True, leases_durable=True, lease_ms=1000)
    await produce(e, 3)
    await claim(e, "a", 2)
    e = await h.restart()
    assert qstate(e)["in_flight"] == 2
    h.clock.advance(1001)
    assert qstate(e)["in_flight"] == 0
    r = await claim(e, "b", 10)
    assert claimed_seqs(r) == [1, 2, 3]
    assert [j.lease.deliveries for j in r.jobs] == [2, 2, 1]
    assert queues_for(e).ack("q", "a", [1, 2]).skipped == [1, 2]


async def test_durable_lease_nacks_and_delays_are_restored(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True, leases_durable=True, lease_ms=60_000)
    await produce(e, 4)
    await claim(e, "a", 3)
    await _done(queues_for(e).nack("q", "a", [1]).wait)  # claimable now
    await _done(queues_for(e).nack("q", "a", [2], delay_ms=5000).wait)  # due at T0 + 5000
    e = await h.restart()
    assert qstate(e) == {"ready": 2, "in_flight": 1, "dead_lettered": 0, "count": 4}
    r = await claim(e, "b", 10)
    assert claimed_seqs(r) == [1, 4]
    assert [j.lease.deliveries for j in r.jobs] == [2, 1]
    h.clock.set(T0 + 4999)
    assert (await claim(e, "b", 10)).jobs == []
    h.clock.advance(1)
    (job,) = (await claim(e, "b", 10)).jobs
    assert (job.seq, job.lease.deliveries) == (2, 2)


async def test_durable_delivery_counters_dead_letter_at_the_right_count(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True, leases_durable=True, lease_ms=100, max_deliveries=3, dead_letter="dlq")
    e.append("q", [{"data": "poison", "tag": "t", "meta": {"k": "v"}}])
    await flush(h.node)  # type: ignore[arg-type]
    seen = []
    for _ in range(3):
        (job,) = (await claim(e, "a")).jobs
        seen.append(job.lease.deliveries)
        h.clock.advance(101)
        e = await h.restart()
    assert seen == [1, 2, 3]
    assert (await claim(e, "a")).jobs == []  # the 4th delivery becomes a move
    await flush(h.node)  # type: ignore[arg-type]
    e = await h.restart()
    assert qstate(e) == {"ready": 0, "in_flight": 0, "dead_lettered": 1, "count": 0}
    (moved,) = dlq_records(e)
    assert moved["data"] == "poison" and moved["$tag"] == "t"
    assert moved["meta"] == {
        "k": "v",
        "$dead_letter_from": "q",
        "$dead_letter_deliveries": 3,
        "$dead_letter_src_seq": 1,
    }


async def test_durable_leases_snapshot_plus_tail(tmp_path: Path) -> None:
    """Leases in the snapshot and lease events in the WAL tail after it combine."""
    h = Harness(tmp_path, "wal")
    e = await h.start()
    try:
        await make_queue(e, durable=True, leases_durable=True, lease_ms=10_000)
        await produce(e, 5)
        await claim(e, "a", 3)
        e = await h.restart("checkpoint")
        await ack(e, "a", [1])
        await _done(queues_for(e).nack("q", "a", [2]).wait)
        await _done(queues_for(e).extend("q", "a", [3], 30_000).wait)
        await claim(e, "b", 2)  # 2 (reclaimed) and 4
        before = leases(e)
        e = await h.restart("wal")
        assert leases(e) == before
        assert set(before) == {2, 3, 4}
        assert before[2][3] == 2 and before[3][2] == T0 + 30_000
        assert claimed_seqs(await claim(e, "c", 10)) == [5]
        e = await h.restart("checkpoint")
        assert set(leases(e)) == {2, 3, 4, 5}
    finally:
        h.close()


async def test_durable_leases_released_by_a_work_subscription_stay_released(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True, leases_durable=True, lease_ms=60_000)
    await produce(e, 3)
    topic, sub = queues_for(e).subscribe("q", "n1", 3)
    refill = queues_for(e).claim_for(topic, sub, 3)
    assert isinstance(refill, Claimed) and len(refill.jobs) == 3
    # an fsync queue with durable leases: a /work refill waits for its lease frame like a claim
    assert refill.wait is not None and not refill.wait.done()
    await refill.wait
    assert queues_for(e).release_subscription(topic, sub) == 3
    await flush(h.node)  # type: ignore[arg-type]
    e = await h.restart()
    assert qstate(e) == {"ready": 3, "in_flight": 0, "dead_lettered": 0, "count": 3}
    r = await claim(e, "n2", 10)
    assert [j.lease.deliveries for j in r.jobs] == [2, 2, 2]


async def test_durable_leases_from_a_cohort_are_restored(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True, leases_durable=True, claim_jitter_ms=20)
    await produce(e, 6)
    claims = [queues_for(e).claim("q", f"w{i}", 3) for i in range(3)]
    h.clock.advance(20)
    # the cohort's pass ran, but a claimer gets its jobs only once the lease frame is durable
    assert all(c.wait is not None and not c.wait.done() for c in claims)
    for c in claims:
        await c.wait  # type: ignore[misc]
    assert [len(c.jobs) for c in claims] == [2, 2, 2]
    await flush(h.node)  # type: ignore[arg-type]
    before = leases(e)
    assert len(before) == 6
    assert all(LEASE_ID_RE.fullmatch(v[1]) for v in before.values())
    e = await h.restart()
    assert leases(e) == before


async def test_enabling_leases_durable_later_strands_no_job(h: Harness) -> None:
    """Jobs claimed while leases were not durable have no journaled lease. After a restart every
    live job must be held by a restored lease or be claimable ("any job without a replayed
    active lease is immediately claimable"; "work is never lost") — even though later claims,
    made after leases_durable was switched on, were journaled and moved the claim cursor."""
    e = h.engine
    await make_queue(e, durable=True, lease_ms=60_000)
    await produce(e, 4)
    await claim(e, "a", 2)  # 1, 2: claimed while leases are not journaled
    await _done(e.put_topic("q", {"leases_durable": True}).wait)
    await claim(e, "b", 1)  # 3: journaled
    e = await h.restart()
    held = set(leases(e))
    assert 3 in held  # (the checkpoint mode's snapshot may also hold 1 and 2: fine)
    got = claimed_seqs(await claim(e, "c", 10))
    assert set(got) | held == {1, 2, 3, 4}, f"stranded: {sorted({1, 2, 3, 4} - set(got) - held)}"
    h.clock.advance(60_001)  # every lease from before the restart is over
    late = claimed_seqs(await claim(e, "d", 10))
    assert set(got) | set(late) == {1, 2, 3, 4}


async def test_disabling_leases_durable_after_a_checkpoint_forgets_leases(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durable=True, leases_durable=True, lease_ms=60_000)
    await produce(e, 2)
    await claim(e, "a", 2)
    await _done(e.put_topic("q", {"leases_durable": False}).wait)
    e = await h.restart("checkpoint")
    assert leases(e) == {}
    assert claimed_seqs(await claim(e, "b", 10)) == [1, 2]


# -- delayed writes (an extension: docs/DECISIONS.md, "Delayed jobs") -----------------------------


@pytest.mark.parametrize("leases_durable", [False, True])
@pytest.mark.parametrize("durability", ["fsync", "disk"])
async def test_delayed_writes_stay_delayed_across_a_restart(
    h: Harness, durability: str, leases_durable: bool
) -> None:
    """A write's delay is durable like the write, whatever ``leases_durable`` says: after a
    restart (WAL replay, or the snapshot's ``due``) the job is still delayed until its due
    time — never claimable early, never lost."""
    e = h.engine
    await make_queue(e, durability=durability, leases_durable=leases_durable)
    r = e.append("q", [{"data": 0}, {"data": 1, "delay_ms": 5_000}, {"data": 2, "delay_ms": 20_000}])
    await _done(r.wait)
    assert claimed_seqs(await claim(e, "a", 10)) == [1]
    assert await ack(e, "a", [1]) == [1]
    h.clock.advance(1_000)
    e = await h.restart()
    assert qstate(e) == {"ready": 0, "in_flight": 0, "dead_lettered": 0, "count": 2}
    assert health(e)[0] == 2
    assert (await claim(e, "b", 10)).jobs == []
    h.clock.advance(4_000)
    assert claimed_seqs(await claim(e, "b", 10)) == [2]
    e = await h.restart()  # job 3 is still 15 s away; job 2 was only leased (non-durably: again)
    assert claimed_seqs(await claim(e, "c", 10)) == ([] if leases_durable else [2])
    h.clock.advance(14_999)
    e = await h.restart()
    assert 3 not in claimed_seqs(await claim(e, "d", 10))
    h.clock.advance(1)
    assert claimed_seqs(await claim(e, "d", 10)) == [3]


async def test_a_delay_that_came_due_while_down_is_claimable_after_restart(h: Harness) -> None:
    e = h.engine
    await make_queue(e, durability="fsync")
    await _done(e.append("q", [{"data": i} for i in range(3)], delay_ms=2_000).wait)
    e = await h.restart()
    h.clock.advance(2_000)
    e = await h.restart()
    assert claimed_seqs(await claim(e, "a", 10)) == [1, 2, 3]


@pytest.mark.parametrize("leases_durable", [False, True])
async def test_an_ephemeral_queues_delays_do_not_outlive_its_jobs(h: Harness, leases_durable: bool) -> None:
    """An ephemeral queue's jobs are gone after a restart: so are their delays (a snapshot's
    delayed jobs are restored only if still live), and the counters add up."""
    e = h.engine
    await make_queue(e, durability="ephemeral", leases_durable=leases_durable)
    e.append("q", [{"data": i} for i in range(3)], delay_ms=3_600_000)
    e = await h.restart()
    assert health(e)[0] == 0
    assert await produce(e, 2) == [4, 5]
    assert qstate(e) == {"ready": 2, "in_flight": 0, "dead_lettered": 0, "count": 2}
    assert claimed_seqs(await claim(e, "a", 10)) == [4, 5]
