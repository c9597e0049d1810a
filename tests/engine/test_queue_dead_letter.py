"""§10 dead-lettering: a job about to be delivered for the (max_deliveries + 1)-th time on a queue
with a dead_letter topic is moved there (provenance stamped in meta) instead of delivered."""

from __future__ import annotations

from typing import Any

import pytest
from topics_engine import Engine, ManualClock

from .conftest import T0, recs, seqs
from .queue_helpers import assert_consistent, claim, claimed_seqs, make_queue, produce, qstate, queues_for


def _deliver(
    engine: Engine, clock: ManualClock, times: int, how: str = "expire", node: str = "w"
) -> list[int]:
    """Claim job(s) ``times`` times, letting each lease end by expiry or nack; returns the
    deliveries counts seen."""
    seen: list[int] = []
    for _ in range(times):
        r = claim(engine, node, 10)
        seen.extend(j.lease.deliveries for j in r.jobs)
        if how == "nack":
            queues_for(engine).nack("q", node, claimed_seqs(r))
        else:
            clock.advance(engine.topic_state("q").config.lease_ms + 1)
    return seen


@pytest.mark.parametrize("how", ["expire", "nack"])
def test_dead_letter_on_the_max_plus_first_delivery(engine: Engine, clock: ManualClock, how: str) -> None:
    make_queue(engine, lease_ms=100, max_deliveries=3, dead_letter="dlq")
    engine.append("q", [{"data": {"job": 1}, "tag": "clip-1", "meta": {"trace": "z9"}}], node="producer-1")
    assert _deliver(engine, clock, 3, how) == [1, 2, 3]
    assert engine.topic("dlq") is None  # nothing moved yet
    r = claim(engine, "w", 10)
    assert r.jobs == []  # the 4th delivery is not made
    assert qstate(engine) == {"ready": 0, "in_flight": 0, "dead_lettered": 1, "count": 0}
    assert seqs(engine.diff("q")) == []
    # the DLQ was auto-created and holds the record, provenance stamped
    (moved,) = recs(engine.diff("dlq", include_tags=True))
    assert moved["data"] == {"job": 1}
    assert moved["$tag"] == "clip-1"
    assert moved["$node"] == "producer-1"
    assert moved["meta"] == {
        "trace": "z9",
        "$dead_letter_from": "q",
        "$dead_letter_deliveries": 3,
        "$dead_letter_src_seq": 1,
    }
    assert engine.topic_state("dlq").type == "log"


def test_dead_letter_record_without_meta_gets_provenance_meta(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    produce(engine, 3)
    _deliver(engine, clock, 1)
    claim(engine, "w", 10)
    moved = recs(engine.diff("dlq", include_tags=True))
    assert [m["data"] for m in moved] == [0, 1, 2]
    assert [m["meta"]["$dead_letter_src_seq"] for m in moved] == [1, 2, 3]
    assert all(m["meta"]["$dead_letter_deliveries"] == 1 for m in moved)
    assert all(m["meta"]["$dead_letter_from"] == "q" for m in moved)
    assert all("$tag" not in m and "$node" not in m for m in moved)
    assert qstate(engine)["dead_lettered"] == 3


def test_dead_lettering_is_per_job(engine: Engine, clock: ManualClock) -> None:
    """Only the job past max_deliveries moves; the others are served as usual in the same claim."""
    make_queue(engine, lease_ms=100, max_deliveries=2, dead_letter="dlq")
    produce(engine, 1)  # 1
    _deliver(engine, clock, 2)
    produce(engine, 2, start=1)  # 2, 3
    r = claim(engine, "w", 10)
    assert claimed_seqs(r) == [2, 3]
    assert [j.lease.deliveries for j in r.jobs] == [1, 1]
    assert [m["meta"]["$dead_letter_src_seq"] for m in recs(engine.diff("dlq"))] == [1]
    assert qstate(engine) == {"ready": 0, "in_flight": 2, "dead_lettered": 1, "count": 2}
    assert_consistent(engine)


def test_dead_lettering_does_not_eat_into_max(engine: Engine, clock: ManualClock) -> None:
    """A poison job moved during the pick does not take a slot: the claim fills up from the rest."""
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    produce(engine, 2)
    _deliver(engine, clock, 1)  # 1, 2 each delivered once
    produce(engine, 3, start=2)  # 3, 4, 5
    r = claim(engine, "w", 2)
    assert claimed_seqs(r) == [3, 4]
    assert qstate(engine)["dead_lettered"] == 2


def test_acked_job_never_dead_letters(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    produce(engine, 1)
    claim(engine, "w")
    queues_for(engine).ack("q", "w", [1])
    clock.advance(1000)
    assert claim(engine, "w").jobs == []
    assert engine.topic("dlq") is None
    assert qstate(engine)["dead_lettered"] == 0


@pytest.mark.parametrize(
    "config", [{"max_deliveries": 3, "dead_letter": None}, {"max_deliveries": 0, "dead_letter": "dlq"}, {}]
)
def test_without_dead_letter_jobs_are_reclaimed_forever(
    engine: Engine, clock: ManualClock, config: dict[str, Any]
) -> None:
    make_queue(engine, lease_ms=100, **config)
    produce(engine, 1)
    assert _deliver(engine, clock, 20) == list(range(1, 21))
    assert qstate(engine) == {"ready": 1, "in_flight": 0, "dead_lettered": 0, "count": 1}
    assert engine.topic("dlq") is None


def test_dlq_that_is_a_queue_serves_the_moved_jobs(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, "dlq", lease_ms=100)
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    engine.append("q", [{"data": "poison", "tag": "p"}])
    _deliver(engine, clock, 1)
    claim(engine, "w")
    r = claim(engine, "inspector", 10, name="dlq")
    (job,) = r.jobs
    assert job.lease.deliveries == 1
    assert job.record.tag == "p"
    assert qstate(engine, "dlq") == {"ready": 0, "in_flight": 1, "dead_lettered": 0, "count": 1}


def test_dlq_honours_its_own_caps(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("dlq", {"cap_records": 2, "discard": "old"})
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    produce(engine, 5)
    _deliver(engine, clock, 1)
    claim(engine, "w", 10)
    assert qstate(engine)["dead_lettered"] == 5
    assert [m["meta"]["$dead_letter_src_seq"] for m in recs(engine.diff("dlq"))] == [4, 5]


def test_dlq_that_refuses_the_move_holds_the_job_back_and_retries(engine: Engine, clock: ManualClock) -> None:
    """A full discard:reject DLQ cannot take the job. It is never dropped and never
    re-delivered: it is held back (neither ready nor in flight) and the move is retried with
    backoff (1 s, then 2 s, ...) until the DLQ takes it."""
    engine.put_topic("dlq", {"cap_records": 1, "discard": "reject"})
    engine.append("dlq", [{"data": "occupant"}])
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    produce(engine, 1)
    _deliver(engine, clock, 1)
    assert claim(engine, "w", 10).jobs == []  # poison: not delivered again
    assert qstate(engine) == {"ready": 0, "in_flight": 0, "dead_lettered": 0, "count": 1}
    assert_consistent(engine)
    topic = engine.topic("q")
    assert topic is not None and topic.queue is not None
    assert topic.queue.held_back == {1} and topic.queue.dead_letter_failures == 1
    clock.advance(1000)  # first retry: the DLQ is still full
    assert topic.queue.held_back == {1} and topic.queue.dead_letter_failures == 2
    assert claim(engine, "w", 10).jobs == []
    engine.delete_records("dlq", before_seq=10)  # make room
    clock.advance(1999)
    assert topic.queue.held_back == {1}  # the second retry waits 2 s
    clock.advance(1)
    assert qstate(engine) == {"ready": 0, "in_flight": 0, "dead_lettered": 1, "count": 0}
    moved = recs(engine.diff("dlq"))
    assert [(m["data"], m["meta"]["$dead_letter_src_seq"]) for m in moved] == [(0, 1)]


def test_held_back_job_is_released_when_the_queue_stops_dead_lettering(
    engine: Engine, clock: ManualClock
) -> None:
    engine.put_topic("dlq", {"cap_records": 1, "discard": "reject"})
    engine.append("dlq", [{"data": "occupant"}])
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    produce(engine, 1)
    _deliver(engine, clock, 1)
    assert claim(engine, "w", 10).jobs == []
    engine.put_topic("q", {"dead_letter": None})  # no dead-letter topic any more
    clock.advance(1000)
    assert qstate(engine)["ready"] == 1
    assert claimed_seqs(claim(engine, "w", 10)) == [1]
    assert_consistent(engine)


def test_dead_lettered_counter_is_cumulative_and_resets_on_recreate(
    engine: Engine, clock: ManualClock
) -> None:
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    for round_ in range(3):
        produce(engine, 2, start=round_ * 2)
        _deliver(engine, clock, 1)
        claim(engine, "w", 10)
        assert qstate(engine)["dead_lettered"] == 2 * (round_ + 1)
    engine.delete_topic("q")
    make_queue(engine, lease_ms=100, max_deliveries=1, dead_letter="dlq")
    assert qstate(engine)["dead_lettered"] == 0
    assert engine.topic_state("dlq").count == 6  # the DLQ is its own topic


def test_config_change_enables_dead_lettering_for_already_delivered_jobs(
    engine: Engine, clock: ManualClock
) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    _deliver(engine, clock, 4)
    engine.put_topic("q", {"max_deliveries": 2, "dead_letter": "dlq"})
    assert claim(engine, "w").jobs == []
    (moved,) = recs(engine.diff("dlq"))
    assert moved["meta"]["$dead_letter_deliveries"] == 4


def test_delayed_nack_counts_toward_dead_lettering(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=60_000, max_deliveries=2, dead_letter="dlq")
    produce(engine, 1)
    for _ in range(2):
        claim(engine, "w")
        queues_for(engine).nack("q", "w", [1], delay_ms=500)
        assert claim(engine, "w").jobs == []
        clock.advance(500)
    assert claim(engine, "w").jobs == []
    assert qstate(engine) == {"ready": 0, "in_flight": 0, "dead_lettered": 1, "count": 0}
    assert recs(engine.diff("dlq"))[0]["$ts"] == T0 + 1000
