"""Delayed jobs (an extension, docs/DECISIONS.md "Delayed jobs"): a write to a queue may carry
``delay_ms`` per record and for the batch; the job is appended at once — it has its seq and is
readable — but is not claimable before ``$ts + delay_ms``. On a log topic ``delay_ms`` is
refused. Driven by the manual clock; every persistence (in memory, WAL, cold segments)."""

from __future__ import annotations

from typing import Any

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import InvalidRequest, NotAQueue
from topics_engine.records import MAX_DELAY_MS

from .conftest import T0, recs, seqs
from .queue_helpers import (
    assert_consistent,
    claim,
    claimed_seqs,
    delayed,
    make_queue,
    produce,
    queues_for,
    wire,
)


def _health(engine: Engine, name: str = "q") -> dict[str, Any]:
    counters = engine.queue_counters(engine.get(name))
    assert counters is not None
    return {"ready": counters.ready, "delayed": counters.delayed, "in_flight": counters.in_flight}


def test_a_delayed_job_is_readable_at_once_and_claimable_only_when_due(
    engine: Engine, clock: ManualClock
) -> None:
    make_queue(engine)
    r = engine.append("q", [{"data": "later", "delay_ms": 5_000}])
    assert seqs(engine.diff("q")) == [r.first_seq]
    (rec,) = recs(engine.diff("q"))
    assert rec["$delay_ms"] == 5_000 and rec["$ts"] == T0
    assert _health(engine) == {"ready": 0, "delayed": 1, "in_flight": 0}
    assert claim(engine).jobs == []
    clock.advance(4_999)
    assert claim(engine).jobs == []
    clock.advance(1)
    (job,) = claim(engine).jobs
    assert job.seq == r.first_seq and job.lease.deliveries == 1
    assert _health(engine) == {"ready": 0, "delayed": 0, "in_flight": 1}
    assert_consistent(engine)


def test_undelayed_jobs_behind_a_delayed_one_are_claimed_first(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    first = engine.append("q", [{"data": 0, "delay_ms": 1_000}]).first_seq
    rest = produce(engine, 3)
    assert claimed_seqs(claim(engine, max_=10)) == rest
    assert claim(engine, max_=10).jobs == []
    clock.advance(1_000)
    assert claimed_seqs(claim(engine, max_=10)) == [first]  # from the freelist: claims passed it over


def test_a_record_delay_wins_over_the_batch_default(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    r = engine.append(
        "q", [{"data": 0}, {"data": 1, "delay_ms": 0}, {"data": 2, "delay_ms": 3_000}], delay_ms=1_000
    )
    assert [x.get("$delay_ms") for x in recs(engine.diff("q"))] == [1_000, None, 3_000]
    assert claimed_seqs(claim(engine, max_=10)) == [r.first_seq + 1]
    clock.advance(1_000)
    assert claimed_seqs(claim(engine, max_=10)) == [r.first_seq]
    clock.advance(2_000)
    assert claimed_seqs(claim(engine, max_=10)) == [r.first_seq + 2]


def test_delays_are_clamped_to_a_day(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    engine.append("q", [{"data": 0, "delay_ms": 10**12}, {"data": 1, "delay_ms": -5}])
    assert [x.get("$delay_ms") for x in recs(engine.diff("q"))] == [MAX_DELAY_MS, None]
    (undelayed,) = claim(engine, max_=10).jobs
    queues_for(engine).ack("q", "w1", [undelayed.seq])
    clock.advance(MAX_DELAY_MS - 1)
    assert claim(engine, max_=10).jobs == []
    clock.advance(1)
    assert len(claim(engine, max_=10).jobs) == 1


@pytest.mark.parametrize("where", ["record", "batch"])
def test_delay_on_a_log_topic_is_refused_and_nothing_is_written(engine: Engine, where: str) -> None:
    engine.put_topic("log", {})
    rec: dict[str, Any] = {"data": 1}
    kw: dict[str, Any] = {}
    if where == "record":
        rec["delay_ms"] = 10
    else:
        kw["delay_ms"] = 10
    with pytest.raises(NotAQueue) as err:
        engine.append("log", [rec], **kw)
    assert err.value.detail["field"] == "delay_ms"
    assert engine.topic_state("log").head_seq == 0
    with pytest.raises(NotAQueue):  # a write that would create a log topic creates nothing
        engine.append("new-log", [rec], **kw)
    assert engine.topic("new-log") is None


def test_a_delay_that_is_not_an_integer_is_refused(engine: Engine) -> None:
    make_queue(engine)
    with pytest.raises(InvalidRequest) as err:
        engine.append("q", [{"data": 1}, {"data": 2, "delay_ms": "soon"}])
    assert err.value.detail["field"] == "records[1].delay_ms"
    assert engine.topic_state("q").head_seq == 0


def test_a_queue_of_only_delayed_jobs_counts_them_as_delayed(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    engine.append("q", [{"data": i} for i in range(50)], delay_ms=2_000)
    counters = engine.queue_counters(engine.get("q"))
    assert counters is not None
    assert (counters.ready, counters.delayed, counters.oldest_ready_age_ms) == (0, 50, 0)
    clock.advance(2_500)
    counters = engine.queue_counters(engine.get("q"))
    assert counters is not None
    assert (counters.ready, counters.delayed, counters.oldest_ready_age_ms) == (50, 0, 2_500)
    assert len(claim(engine, max_=100).jobs) == 50
    assert_consistent(engine)


def test_oldest_ready_age_skips_delayed_jobs_ahead_of_a_ready_one(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    engine.append("q", [{"data": i} for i in range(5)], delay_ms=60_000)
    clock.advance(1_000)
    produce(engine, 1)
    clock.advance(500)
    counters = engine.queue_counters(engine.get("q"))
    assert counters is not None
    assert (counters.ready, counters.delayed, counters.oldest_ready_age_ms) == (1, 5, 500)


def test_a_delayed_job_deleted_before_it_is_due_is_gone(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    r = engine.append("q", [{"data": 1, "tag": "t"}], delay_ms=1_000)
    engine.delete_seqs(engine.get("q"), [r.first_seq])
    assert delayed(engine) == 0
    clock.advance(1_000)
    assert claim(engine).jobs == []
    assert_consistent(engine)


def test_a_nacked_delayed_job_is_delayed_again_by_the_nack(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    r = engine.append("q", [{"data": 1}], delay_ms=1_000)
    clock.advance(1_000)
    assert claimed_seqs(claim(engine)) == [r.first_seq]
    queues_for(engine).nack("q", "w1", [r.first_seq], delay_ms=300)
    assert claim(engine).jobs == []
    clock.advance(300)
    (job,) = claim(engine).jobs
    assert job.lease.deliveries == 2


def test_the_claimed_job_carries_its_write_delay(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    engine.append("q", [{"data": {"x": 1}, "tag": "t"}], delay_ms=10)
    clock.advance(10)
    (job,) = claim(engine).jobs
    out = wire(job)
    assert out["$delay_ms"] == 10 and out["$tag"] == "t" and out["data"] == {"x": 1}


def test_a_delay_key_inside_data_is_not_a_delay(engine: Engine) -> None:
    make_queue(engine)
    engine.append("q", [{"data": {"a": 1, "$delay_ms": 5_000}, "meta": {"b": 1, "$delay_ms": 9}}])
    assert delayed(engine) == 0
    assert len(claim(engine).jobs) == 1


def test_a_delayed_write_at_the_front_is_passed_over_when_it_is_applied(
    engine: Engine, clock: ManualClock
) -> None:
    """Workers caught up: a delayed write is passed over at once (the claim cursor moves past
    it), so a claim or a health read never walks a run of delayed jobs again."""
    make_queue(engine)
    produce(engine, 2)
    claim(engine, max_=10)
    r = engine.append("q", [{"data": i} for i in range(1_000)], delay_ms=60_000)
    queue = engine.get("q").queue
    assert queue is not None and queue.cursor == r.last_seq
    late = produce(engine, 1)
    assert claimed_seqs(claim(engine, max_=1)) == late
    clock.advance(60_000)
    assert len(claim(engine, max_=1000).jobs) == 1_000  # due: from the freelist
