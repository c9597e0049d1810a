"""§10 queues at engine level, on a ManualClock: claim, visibility timeout, ack, nack, extend,
lease fencing, validation order and the ready / in_flight counters."""

from __future__ import annotations

from typing import Any

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import BatchTooLarge, InvalidRequest, NotAQueue, TopicNotFound
from topics_engine.leases import QueueState
from topics_engine.queues import Claimed

from .conftest import T0, fields, raises_topics, seqs
from .queue_helpers import (
    LEASE_ID_RE,
    assert_consistent,
    claim,
    claimed_seqs,
    counters,
    delayed,
    make_queue,
    produce,
    qstate,
    queues_for,
    wire,
)

# -- claim: shape, order, lease fields ------------------------------------------------------------


def test_claim_returns_jobs_with_lease_fields(engine: Engine) -> None:
    make_queue(engine, lease_ms=30_000)
    engine.append(
        "q", [{"data": {"k": 1}, "tag": "clip-1", "meta": {"trace": "z9"}}, {"data": 2}], node="prod"
    )
    r = claim(engine, "w1", 5)
    assert r.topic == "q" and r.counters.ready == 0
    jobs = [wire(j) for j in r.jobs]
    assert [j["$seq"] for j in jobs] == [1, 2]
    first, second = jobs
    assert first["data"] == {"k": 1} and first["$tag"] == "clip-1" and first["meta"] == {"trace": "z9"}
    assert first["$ts"] == T0
    assert "$tag" not in second and "meta" not in second  # omitted when absent
    for j in jobs:
        assert LEASE_ID_RE.fullmatch(j["lease_id"]), j["lease_id"]
        assert j["deadline"] == T0 + 30_000
        assert j["deliveries"] == 1
    assert first["lease_id"] != second["lease_id"]


def test_lease_ids_are_fresh_per_delivery(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    ids = set()
    for _ in range(20):
        (job,) = claim(engine).jobs
        assert LEASE_ID_RE.fullmatch(job.lease.lease_id)
        ids.add(job.lease.lease_id)
        clock.advance(101)
    assert len(ids) == 20


def test_claim_hands_out_fresh_jobs_in_seq_order(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 10)
    assert claimed_seqs(claim(engine, "a", 3)) == [1, 2, 3]
    assert claimed_seqs(claim(engine, "b", 3)) == [4, 5, 6]
    assert claimed_seqs(claim(engine, "a", 10)) == [7, 8, 9, 10]
    r = claim(engine, "c", 5)
    assert r.jobs == [] and r.counters.ready == 0  # count < max: the (near-)empty signal, never an error


def test_reclaimed_jobs_are_served_before_fresh_ones(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=1000)
    produce(engine, 6)
    claim(engine, "a", 2, lease_ms=500)  # 1, 2 — expire first
    claim(engine, "b", 1)  # 3
    clock.advance(501)
    # freelist (1, 2) drained before the fresh 4, 5, 6; the result is ascending by $seq
    r = claim(engine, "c", 3)
    assert claimed_seqs(r) == [1, 2, 4]
    assert [j.lease.deliveries for j in r.jobs] == [2, 2, 1]
    assert claimed_seqs(claim(engine, "c", 10)) == [5, 6]


def test_claim_results_ascend_by_seq_when_reclaims_are_mixed_in(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=1000)
    produce(engine, 5)
    claim(engine, "a", 3)  # 1, 2, 3
    clock.advance(10)
    r = queues_for(engine).nack("q", "a", [3, 1])
    assert r.done == [3, 1]
    got = claim(engine, "b", 4)
    assert claimed_seqs(got) == [1, 3, 4, 5]
    assert [j.lease.deliveries for j in got.jobs] == [2, 2, 1, 1]


def test_reclaim_freelist_order_is_expiry_order(engine: Engine, clock: ManualClock) -> None:
    """Reclaimed seqs are drained before fresh ones, oldest expiry first."""
    make_queue(engine)
    produce(engine, 5)
    claim(engine, "a", 1, lease_ms=300)  # 1 expires last
    claim(engine, "a", 1, lease_ms=100)  # 2 expires first
    claim(engine, "a", 1, lease_ms=200)  # 3
    clock.advance(1000)
    assert claimed_seqs(claim(engine, "b", 1)) == [2]
    assert claimed_seqs(claim(engine, "b", 1)) == [3]
    assert claimed_seqs(claim(engine, "b", 1)) == [1]
    assert claimed_seqs(claim(engine, "b", 1)) == [4]


def test_records_appended_later_become_claimable(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 2)
    assert claimed_seqs(claim(engine, "a", 5)) == [1, 2]
    assert claim(engine, "a", 5).jobs == []
    produce(engine, 3, start=2)
    r = claim(engine, "a", 5)
    assert claimed_seqs(r) == [3, 4, 5]
    assert [wire(j)["data"] for j in r.jobs] == [2, 3, 4]


def test_the_cursor_skips_deleted_jobs(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 6)
    engine.delete_records("q", before_seq=3)  # 1, 2 gone before any claim
    assert claimed_seqs(claim(engine, "a", 2)) == [3, 4]
    engine.delete_records("q", before_seq=6)  # 3, 4 (leased) and 5 (fresh) gone
    assert claimed_seqs(claim(engine, "a", 5)) == [6]
    assert_consistent(engine)


# -- deadlines and lease_ms ------------------------------------------------------------------------


def test_deadline_uses_topic_default_lease_ms(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)  # default lease_ms 30000
    produce(engine, 1)
    clock.advance(1234)
    (job,) = claim(engine).jobs
    assert job.lease.deadline == T0 + 1234 + 30_000


def test_deadline_uses_configured_lease_ms(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=5000)
    produce(engine, 1)
    clock.advance(7)
    (job,) = claim(engine).jobs
    assert job.lease.deadline == T0 + 7 + 5000


def test_per_claim_lease_ms_overrides_topic_default(engine: Engine) -> None:
    make_queue(engine, lease_ms=5000)
    produce(engine, 2)
    (job,) = claim(engine, "a", 1, lease_ms=777).jobs
    assert job.lease.deadline == T0 + 777
    (job,) = claim(engine, "a", 1).jobs
    assert job.lease.deadline == T0 + 5000


@pytest.mark.parametrize(
    ("lease_ms", "effective"),
    [
        (0, 100),
        (1, 100),
        (99, 100),
        (100, 100),
        (101, 101),
        (86_400_000, 86_400_000),
        (86_400_001, 86_400_000),
        (10**15, 86_400_000),
        (-5, 100),
        (2000.0, 2000),
    ],
)
def test_per_claim_lease_ms_is_clamped(engine: Engine, lease_ms: Any, effective: int) -> None:
    make_queue(engine)
    produce(engine, 1)
    (job,) = claim(engine, "a", 1, lease_ms=lease_ms).jobs
    assert job.lease.deadline == T0 + effective


@pytest.mark.parametrize(("lease_ms", "effective"), [(5, 100), (10**12, 86_400_000)])
def test_topic_lease_ms_is_clamped(engine: Engine, lease_ms: int, effective: int) -> None:
    make_queue(engine, lease_ms=lease_ms)
    assert engine.topic_state("q").config.lease_ms == effective
    produce(engine, 1)
    (job,) = claim(engine).jobs
    assert job.lease.deadline == T0 + effective


# -- max ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_", "n"), [(None, 1), (0, 1), (1, 1), (7, 7), (1000, 1000), (1001, 1000), (10**9, 1000), (-3, 1)]
)
def test_max_default_and_clamp(engine: Engine, max_: Any, n: int) -> None:
    make_queue(engine)
    produce(engine, 1200)
    r = claim(engine, "a", max_)
    assert len(r.jobs) == n
    assert r.counters.ready == 1200 - n


# -- visibility timeout: lazy expiry ------------------------------------------------------------


def test_lease_held_exactly_at_deadline_expired_one_ms_later(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=1000)
    produce(engine, 1)
    (job,) = claim(engine, "a").jobs
    clock.set(job.lease.deadline)  # now == deadline: still held
    assert claim(engine, "b").jobs == []
    assert counters(engine) == (0, 1)
    clock.advance(1)  # now > deadline: expired
    assert counters(engine) == (1, 0)
    (again,) = claim(engine, "b").jobs
    assert again.seq == job.seq
    assert again.lease.deliveries == 2
    assert again.lease.lease_id != job.lease.lease_id


def test_expiry_is_lazy_no_timers(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 3)
    claim(engine, "a", 3)
    assert clock._timers == []  # no per-job timers (greedy queue: no cohort timers either)
    clock.advance(10_000)
    # nothing ran; the next touch of the queue sees them expired
    topic = engine.topic("q")
    assert topic is not None and topic.queue is not None
    assert len(topic.queue.leases) == 3
    assert counters(engine) == (3, 0)
    assert len(topic.queue.leases) == 0


def test_expired_holder_cannot_ack_and_job_runs_twice(engine: Engine, clock: ManualClock) -> None:
    """The at-least-once seam: a slow worker acking past its deadline is skipped."""
    make_queue(engine, lease_ms=1000)
    produce(engine, 1)
    (job,) = claim(engine, "slow").jobs
    clock.advance(1001)
    (again,) = claim(engine, "fast").jobs
    assert again.seq == job.seq
    r = queues_for(engine).ack("q", "slow", [job.seq])
    assert (r.done, r.skipped) == ([], [job.seq])
    assert queues_for(engine).ack("q", "fast", [job.seq]).done == [job.seq]
    assert qstate(engine)["count"] == 0


def test_expired_lease_not_yet_reclaimed_cannot_be_acked(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=1000)
    produce(engine, 1)
    claim(engine, "a")
    clock.advance(1001)
    r = queues_for(engine).ack("q", "a", [1])
    assert (r.done, r.skipped) == ([], [1])
    assert qstate(engine)["count"] == 1
    assert claim(engine, "b").jobs[0].lease.deliveries == 2


# -- deliveries -------------------------------------------------------------------------------


def test_deliveries_count_claims_reclaims_and_nacks(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    seen = []
    for i in range(6):
        (job,) = claim(engine, f"w{i}").jobs
        seen.append(job.lease.deliveries)
        if i % 2:
            queues_for(engine).nack("q", f"w{i}", [1])
        else:
            clock.advance(101)
    assert seen == [1, 2, 3, 4, 5, 6]


def test_extend_and_failed_acks_do_not_change_deliveries(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    claim(engine, "a")
    for _ in range(3):
        clock.advance(50)
        queues_for(engine).extend("q", "a", [1], 100)
    queues_for(engine).ack("q", "b", [1])  # not the holder: skipped
    queues_for(engine).nack("q", "b", [1])
    topic = engine.topic("q")
    assert topic is not None and topic.queue is not None
    assert topic.queue.leases[1].deliveries == 1
    queues_for(engine).nack("q", "a", [1])
    assert claim(engine, "a").jobs[0].lease.deliveries == 2


# -- ack ------------------------------------------------------------------------------------------


def test_ack_is_the_permanent_delete(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 4)
    claim(engine, "a", 3)
    r = queues_for(engine).ack("q", "a", [1, 3])
    assert (r.topic, r.done, r.skipped) == ("q", [1, 3], [])
    assert r.wait is None
    assert qstate(engine) == {"ready": 1, "in_flight": 1, "dead_lettered": 0, "count": 2}
    assert seqs(engine.diff("q")) == [2, 4]  # the jobs log no longer shows them
    clock.advance(10_000)  # never reclaimable
    assert claimed_seqs(claim(engine, "b", 10)) == [2, 4]
    assert queues_for(engine).ack("q", "b", [2, 4]).done == [2, 4]
    assert claim(engine, "b", 10).jobs == []
    assert qstate(engine) == {"ready": 0, "in_flight": 0, "dead_lettered": 0, "count": 0}


def test_ack_skips_seqs_not_held_by_node(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 5)
    claim(engine, "a", 2)  # 1, 2
    claim(engine, "b", 1)  # 3
    queues_for(engine).ack("q", "a", [2])
    r = queues_for(engine).ack("q", "a", [1, 3, 4, 2, 99, 1])
    # 3: another node's; 4: never claimed; 2: already acked; 99: no such job; 1 again: duplicate
    assert r.done == [1]
    assert r.skipped == [3, 4, 2, 99, 1]
    assert qstate(engine)["count"] == 3
    assert counters(engine) == (2, 1)


def test_ack_is_idempotent(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "a", 2)
    assert queues_for(engine).ack("q", "a", [1, 2]).done == [1, 2]
    r = queues_for(engine).ack("q", "a", [1, 2])
    assert (r.done, r.skipped) == ([], [1, 2])


def test_ack_after_nack_is_skipped(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    queues_for(engine).nack("q", "a", [1])
    r = queues_for(engine).ack("q", "a", [1])
    assert (r.done, r.skipped) == ([], [1])
    assert qstate(engine)["count"] == 1


def test_ack_of_the_same_job_by_its_re_claimer_after_expiry_and_reclaim_by_same_node(
    engine: Engine, clock: ManualClock
) -> None:
    """Without lease_ids, matching is node + seqs: the current holder's ack counts."""
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    claim(engine, "a")
    clock.advance(101)
    claim(engine, "a")
    assert queues_for(engine).ack("q", "a", [1]).done == [1]


# -- lease_ids fencing -------------------------------------------------------------------------


def test_lease_ids_fence_a_stale_token_after_reclaim_by_another_worker(
    engine: Engine, clock: ManualClock
) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 2)
    a_jobs = claim(engine, "a", 2).jobs
    a_ids = [j.lease.lease_id for j in a_jobs]
    clock.advance(101)
    b_jobs = claim(engine, "b", 2).jobs
    b_ids = [j.lease.lease_id for j in b_jobs]
    for op in ("ack", "nack", "extend"):
        r = _settle(engine, op, "b", [1, 2], a_ids)  # right node, stale tokens
        assert (r.done, r.skipped) == ([], [1, 2]), op
    r = queues_for(engine).ack("q", "b", [1, 2], [b_ids[0], a_ids[1]])
    assert (r.done, r.skipped) == ([1], [2])
    assert queues_for(engine).ack("q", "b", [2], [b_ids[1]]).done == [2]


def test_lease_ids_fence_the_same_node_holding_a_newer_lease(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    (old,) = claim(engine, "a").jobs
    clock.advance(101)
    (new,) = claim(engine, "a").jobs
    r = queues_for(engine).ack("q", "a", [1], [old.lease.lease_id])
    assert (r.done, r.skipped) == ([], [1])
    assert queues_for(engine).ack("q", "a", [1], [new.lease.lease_id]).done == [1]


def test_lease_ids_matching_current_lease_but_wrong_node_is_skipped(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 1)
    (job,) = claim(engine, "a").jobs
    r = queues_for(engine).ack("q", "b", [1], [job.lease.lease_id])
    assert (r.done, r.skipped) == ([], [1])


@pytest.mark.parametrize("op", ["ack", "nack", "extend"])
@pytest.mark.parametrize("lease_ids", ["lease_1", [1, 2]])
def test_lease_ids_not_strings_is_invalid_request(engine: Engine, op: str, lease_ids: Any) -> None:
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "a", 2)
    with raises_topics(InvalidRequest, "invalid_request"):
        _settle(engine, op, "a", [1, 2], lease_ids)
    assert counters(engine) == (0, 2)  # nothing changed


@pytest.mark.parametrize("op", ["ack", "nack", "extend"])
def test_a_seq_without_its_lease_id_is_skipped(engine: Engine, op: str) -> None:
    """lease_ids[i] fences seqs[i]: a seq past the end of lease_ids has no token and matches no
    lease (a fenced call never settles a seq unfenced); tokens past the end of seqs fence nothing
    (docs/DECISIONS.md, "Lease fences")."""
    make_queue(engine)
    produce(engine, 3)
    ids = [j.lease.lease_id for j in claim(engine, "a", 3).jobs]
    r = _settle(engine, op, "a", [1, 2], [])
    assert (r.done, r.skipped) == ([], [1, 2]), op
    r = _settle(engine, op, "a", [1, 2], ids[:1])
    assert (r.done, r.skipped) == ([1], [2]), op
    r = _settle(engine, op, "a", [3], [ids[2], "lease_unused"])
    assert (r.done, r.skipped) == ([3], []), op


def _settle(engine: Engine, op: str, node: Any, seqs_: Any, lease_ids: Any = None, name: str = "q") -> Any:
    q = queues_for(engine)
    if op == "ack":
        return q.ack(name, node, seqs_, lease_ids)
    if op == "nack":
        return q.nack(name, node, seqs_, 0, lease_ids)
    return q.extend(name, node, seqs_, 1000, lease_ids)


# -- seqs bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["ack", "nack", "extend"])
def test_more_than_1000_seqs_is_batch_too_large(engine: Engine, op: str) -> None:
    make_queue(engine)
    produce(engine, 3)
    claim(engine, "a", 3)
    with raises_topics(BatchTooLarge, "batch_too_large"):
        _settle(engine, op, "a", list(range(1, 1002)))
    assert counters(engine) == (0, 3)
    r = _settle(engine, op, "a", list(range(1, 1001)))  # exactly 1000 is fine
    assert r.done == [1, 2, 3]
    assert r.skipped == list(range(4, 1001))


@pytest.mark.parametrize("op", ["ack", "nack", "extend"])
@pytest.mark.parametrize("bad", [None, [], "1", [1, "2"], [1.5], [True], [-1], {"0": 1}])
def test_bad_seqs_are_invalid_request(engine: Engine, op: str, bad: Any) -> None:
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "a", 2)
    with raises_topics(InvalidRequest, "invalid_request"):
        _settle(engine, op, "a", bad)
    assert counters(engine) == (0, 2)


# -- validation order: 404 / 409 before field checks ---------------------------------------------


def _all_ops() -> list[tuple[str, Any]]:
    return [
        ("claim", lambda e, name: queues_for(e).claim(name, None, "bad", "bad")),
        ("ack", lambda e, name: queues_for(e).ack(name, None, None)),
        ("nack", lambda e, name: queues_for(e).nack(name, None, None, "bad")),
        ("extend", lambda e, name: queues_for(e).extend(name, None, None, None)),
        ("subscribe", lambda e, name: queues_for(e).subscribe(name, None, "bad")),
    ]


@pytest.mark.parametrize(("op", "call"), _all_ops())
def test_missing_topic_is_404_before_field_validation(engine: Engine, op: str, call: Any) -> None:
    with raises_topics(TopicNotFound, "topic_not_found"):
        call(engine, "nope")
    assert engine.topic("nope") is None  # queue endpoints never auto-create


@pytest.mark.parametrize(("op", "call"), _all_ops())
def test_log_topic_is_409_not_a_queue_before_field_validation(engine: Engine, op: str, call: Any) -> None:
    engine.append("log", [{"data": 1}])
    with raises_topics(NotAQueue, "not_a_queue"):
        call(engine, "log")
    assert engine.topic_state("log").count == 1
    assert engine.topic_state("log").queue is None


def test_claim_on_log_with_valid_fields_is_not_a_queue(engine: Engine) -> None:
    engine.put_topic("log", {})
    with raises_topics(NotAQueue, "not_a_queue"):
        queues_for(engine).claim("log", "w1", 1)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"node": None}, "node"),
        ({"node": ""}, "node"),
        ({"node": 7}, "node"),
        ({"node": "x" * 10_000}, "node"),
        ({"max_": "3"}, "max"),
        ({"max_": 2.5}, "max"),
        ({"max_": True}, "max"),
        ({"lease_ms": "1000"}, "lease_ms"),
        ({"lease_ms": 100.5}, "lease_ms"),
    ],
)
def test_claim_field_validation(engine: Engine, kwargs: dict[str, Any], field: str) -> None:
    make_queue(engine)
    produce(engine, 1)
    args = {"node": "w1", "max_": 1, "lease_ms": None, **kwargs}
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        queues_for(engine).claim("q", args["node"], args["max_"], args["lease_ms"])
    assert caught[0].detail.get("field") == field
    assert counters(engine) == (1, 0)


def test_settle_node_is_required(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    for op in ("ack", "nack", "extend"):
        with raises_topics(InvalidRequest, "invalid_request"):
            _settle(engine, op, None, [1])


def test_extend_requires_lease_ms(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    with raises_topics(InvalidRequest, "invalid_request"):
        queues_for(engine).extend("q", "a", [1], None)
    with raises_topics(InvalidRequest, "invalid_request"):
        queues_for(engine).extend("q", "a", [1], "1000")


@pytest.mark.parametrize("delay", ["10", 1.5, True, [1]])
def test_nack_bad_delay_is_invalid_request(engine: Engine, delay: Any) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    with raises_topics(InvalidRequest, "invalid_request"):
        queues_for(engine).nack("q", "a", [1], delay)
    assert counters(engine) == (0, 1)


# -- nack -------------------------------------------------------------------------------------


def test_nack_releases_for_immediate_reclaim(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 3)
    claim(engine, "a", 3)
    r = queues_for(engine).nack("q", "a", [2, 3, 7])
    assert (r.done, r.skipped) == ([2, 3], [7])
    assert counters(engine) == (2, 1)
    got = claim(engine, "b", 5)
    assert claimed_seqs(got) == [2, 3]
    assert [j.lease.deliveries for j in got.jobs] == [2, 2]


def test_nack_skips_other_nodes_and_duplicates(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "a", 1)
    claim(engine, "b", 1)
    r = queues_for(engine).nack("q", "a", [1, 2, 1])
    assert (r.done, r.skipped) == ([1], [2, 1])
    assert counters(engine) == (1, 1)


def test_nack_delay_hides_the_job_until_due(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=60_000)
    produce(engine, 2)
    claim(engine, "a", 2)
    clock.advance(100)
    queues_for(engine).nack("q", "a", [1], delay_ms=5000)
    due = T0 + 100 + 5000
    # invisible: counted in neither ready nor in_flight
    assert counters(engine) == (0, 1)
    assert delayed(engine) == 1
    assert qstate(engine)["count"] == 2
    assert_consistent(engine)
    clock.set(due - 1)
    assert claim(engine, "b").jobs == []
    assert counters(engine) == (0, 1)
    clock.set(due)  # due exactly at now + delay
    assert counters(engine) == (1, 1)
    (job,) = claim(engine, "b").jobs
    assert (job.seq, job.lease.deliveries, job.lease.node) == (1, 2, "b")
    assert_consistent(engine)


def test_delayed_job_goes_ahead_of_fresh_once_due(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    produce(engine, 3)
    claim(engine, "a")
    queues_for(engine).nack("q", "a", [1], delay_ms=1000)
    assert claimed_seqs(claim(engine, "b")) == [2]
    clock.advance(1000)
    assert claimed_seqs(claim(engine, "b")) == [1]
    assert claimed_seqs(claim(engine, "b")) == [3]


def test_delayed_job_cannot_be_acked_or_extended(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    queues_for(engine).nack("q", "a", [1], delay_ms=1000)
    assert queues_for(engine).ack("q", "a", [1]).skipped == [1]
    assert queues_for(engine).extend("q", "a", [1], 1000).skipped == [1]
    assert queues_for(engine).nack("q", "a", [1]).skipped == [1]
    assert qstate(engine)["count"] == 1


@pytest.mark.parametrize(("delay", "effective"), [(None, 0), (0, 0), (-10, 0), (10**15, 86_400_000)])
def test_nack_delay_is_clamped(engine: Engine, clock: ManualClock, delay: Any, effective: int) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    queues_for(engine).nack("q", "a", [1], delay)
    if effective == 0:
        assert counters(engine) == (1, 0)
        return
    clock.advance(effective - 1)
    assert counters(engine) == (0, 0)
    clock.advance(1)
    assert counters(engine) == (1, 0)


# -- extend ------------------------------------------------------------------------------------


def test_extend_sets_not_adds(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=10_000)
    produce(engine, 2)
    claim(engine, "a", 2)
    clock.advance(1000)
    r = queues_for(engine).extend("q", "a", [2, 1], 500)
    # shorter than what was left: the deadline is now + lease_ms, even if that is earlier
    assert (r.done, r.skipped) == ([2, 1], [])
    assert r.deadlines == {"2": T0 + 1500, "1": T0 + 1500}
    clock.set(T0 + 1500)
    assert counters(engine) == (0, 2)
    clock.advance(1)
    assert counters(engine) == (2, 0)  # the original 10 s deadline no longer applies


def test_extend_pushes_deadline_and_keeps_the_lease(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=1000)
    produce(engine, 1)
    (job,) = claim(engine, "a").jobs
    for _ in range(5):
        clock.advance(900)
        r = queues_for(engine).extend("q", "a", [1], 1000, [job.lease.lease_id])
        assert r.deadlines == {"1": clock.now_ms() + 1000}
    clock.advance(1000)
    assert claim(engine, "b").jobs == []
    # the lease_id is unchanged by extend: the original token still acks
    assert queues_for(engine).ack("q", "a", [1], [job.lease.lease_id]).done == [1]


@pytest.mark.parametrize(("lease_ms", "effective"), [(0, 100), (50, 100), (10**12, 86_400_000), (2500, 2500)])
def test_extend_lease_ms_is_clamped(engine: Engine, lease_ms: int, effective: int) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    r = queues_for(engine).extend("q", "a", [1], lease_ms)
    assert r.deadlines == {"1": T0 + effective}


def test_extend_skips_expired_reclaimed_and_unheld(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=1000)
    produce(engine, 5)
    claim(engine, "a", 1, lease_ms=100)  # 1: will expire, be reclaimed by b and acked
    claim(engine, "a", 1, lease_ms=100)  # 2: will expire and be reclaimed by b
    claim(engine, "a", 1)  # 3: held
    claim(engine, "b", 1)  # 4: someone else's
    clock.advance(101)
    # the freelist holds [1, 2]: b reclaims both and acks 1 (gone), keeps 2
    claim(engine, "b", 2)
    queues_for(engine).ack("q", "b", [1])
    r = queues_for(engine).extend("q", "a", [1, 2, 3, 4, 5, 3], 1000)
    assert r.done == [3]
    assert r.skipped == [1, 2, 4, 5, 3]
    assert r.deadlines == {"3": clock.now_ms() + 1000}


def test_expired_but_unreclaimed_lease_cannot_be_extended(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    claim(engine, "a")
    clock.advance(101)
    r = queues_for(engine).extend("q", "a", [1], 1000)
    assert (r.done, r.skipped, r.deadlines) == ([], [1], {})
    assert counters(engine) == (1, 0)


def test_extend_exactly_at_deadline_still_works(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 1)
    claim(engine, "a")
    clock.advance(100)
    assert queues_for(engine).extend("q", "a", [1], 100).done == [1]
    clock.advance(100)
    assert counters(engine) == (0, 1)


# -- counters, deletes, eviction, TTL -----------------------------------------------------------


def test_topic_state_has_queue_sub_object(engine: Engine) -> None:
    make_queue(engine)
    s = engine.topic_state("q")
    assert s.type == "queue"
    idle = {
        "delayed": 0,
        "oldest_ready_age_ms": 0,
        "holders": [],
        "holders_truncated": False,
        "holder_count": 0,
    }
    assert fields(s.queue) == {"ready": 0, "in_flight": 0, "dead_lettered": 0, **idle}
    produce(engine, 5)
    claim(engine, "a", 2)
    assert fields(engine.topic_state("q").queue) == {
        "ready": 3,
        "in_flight": 2,
        "dead_lettered": 0,
        **idle,
        "holders": [("a", 2)],
        "holder_count": 1,
    }
    engine.append("log", [{"data": 1}])
    assert engine.topic_state("log").queue is None


def test_claim_ready_is_post_claim(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 10)
    assert claim(engine, "a", 4).counters.ready == 6
    clock.advance(101)  # the 4 leases expire
    assert claim(engine, "a", 1).counters.ready == 9


def test_delete_records_drops_leases(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    produce(engine, 6)
    claim(engine, "a", 4)  # 1-4
    queues_for(engine).nack("q", "a", [4], delay_ms=10_000)
    engine.delete_records("q", before_seq=5)  # 1-4: leased, leased, leased, delayed
    assert qstate(engine) == {"ready": 2, "in_flight": 0, "dead_lettered": 0, "count": 2}
    assert delayed(engine) == 0
    assert queues_for(engine).ack("q", "a", [1, 2, 3]).skipped == [1, 2, 3]
    clock.advance(20_000)
    assert claimed_seqs(claim(engine, "b", 10)) == [5, 6]
    assert_consistent(engine)


def test_delete_by_tag_drops_leases_and_freelist_entries(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=100)
    engine.append("q", [{"data": i, "tag": "x" if i % 2 else "y"} for i in range(6)])
    claim(engine, "a", 6)
    queues_for(engine).nack("q", "a", [1, 2])  # on the freelist
    engine.delete_records("q", match="y")  # seqs 1, 3, 5
    assert_consistent(engine)
    assert claimed_seqs(claim(engine, "b", 10)) == [2]
    assert qstate(engine) == {"ready": 0, "in_flight": 3, "dead_lettered": 0, "count": 3}


def test_cap_eviction_drops_leases(engine: Engine) -> None:
    make_queue(engine, cap_records=3, discard="old")
    produce(engine, 3)
    claim(engine, "a", 3)
    produce(engine, 2)  # evicts 1 and 2 (leased)
    assert qstate(engine) == {"ready": 2, "in_flight": 1, "dead_lettered": 0, "count": 3}
    assert queues_for(engine).ack("q", "a", [1, 2, 3]).done == [3]
    assert claimed_seqs(claim(engine, "b", 10)) == [4, 5]
    assert_consistent(engine)


def test_cap_reject_queue_frees_room_on_ack(engine: Engine) -> None:
    make_queue(engine, cap_records=2, discard="reject")
    produce(engine, 2)
    claim(engine, "a", 2)
    queues_for(engine).ack("q", "a", [1])
    assert produce(engine, 1) == [3]


def test_ttl_expiry_drops_leases(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, ttl_ms=1000, lease_ms=60_000)
    produce(engine, 2)
    clock.advance(500)
    produce(engine, 2, start=2)
    claim(engine, "a", 4)
    clock.advance(501)  # 1, 2 are now older than ttl
    assert qstate(engine) == {"ready": 0, "in_flight": 2, "dead_lettered": 0, "count": 2}
    assert queues_for(engine).ack("q", "a", [1, 2, 3]).done == [3]
    clock.advance(500)  # 4 expires too
    assert qstate(engine) == {"ready": 0, "in_flight": 0, "dead_lettered": 0, "count": 0}


def test_ttl_expired_jobs_are_never_claimed(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, ttl_ms=1000)
    produce(engine, 3)
    clock.advance(1001)
    produce(engine, 1, start=3)
    assert claimed_seqs(claim(engine, "a", 10)) == [4]


def test_delete_topic_and_recreate_as_log_rejects_queue_ops(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "a")
    engine.delete_topic("q")
    engine.append("q", [{"data": 1}])
    with raises_topics(NotAQueue, "not_a_queue"):
        queues_for(engine).ack("q", "a", [1])


def test_recreated_queue_starts_with_fresh_leases(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "a", 2)
    engine.delete_topic("q")
    make_queue(engine)
    seqs_ = produce(engine, 2)
    assert counters(engine) == (2, 0)
    # the old instance's leases (same node, possibly the same seqs) are gone
    r = queues_for(engine).ack("q", "a", seqs_)
    assert (r.done, r.skipped) == ([], seqs_)
    got = claim(engine, "a", 5)
    assert claimed_seqs(got) == seqs_
    assert [j.lease.deliveries for j in got.jobs] == [1, 1]


def test_claim_on_empty_queue(engine: Engine) -> None:
    make_queue(engine)
    r = queues_for(engine).claim("q", "a", 10)
    assert isinstance(r, Claimed)
    assert (r.jobs, r.counters.ready) == ([], 0)


def test_reads_never_mutate_leases(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 3)
    claim(engine, "a", 1)
    before = counters(engine)
    for _ in range(3):
        engine.diff("q")
        engine.list_topics()
    assert counters(engine) == before
    assert seqs(engine.diff("q")) == [1, 2, 3]  # leased jobs stay readable


# -- next_change_at: when lazy expiry will free a job (the /work stream's wake-up) ----------------


def test_next_change_at_is_the_earliest_live_deadline_or_due_time() -> None:
    from topics_engine.leases import QueueState

    state = QueueState()
    assert state.next_change_at() is None
    state.claim(1, "a", "w1", 5_000, 1)
    state.claim(2, "b", "w1", 3_000, 1)
    assert state.next_change_at() == 3_001  # expired one ms past the deadline
    state.end(2, "b")  # acked: its heap entry is stale
    assert state.next_change_at() == 5_001
    state.extend(1, "a", 9_000)
    assert state.next_change_at() == 9_001
    state.release(1, "a", 4_000)  # a delayed nack, due at 4 000
    assert state.next_change_at() == 4_000
    state.expire(4_000)
    assert state.pop_reclaimable() == 1
    assert state.next_change_at() is None


def test_the_oldest_reclaimable_job_survives_any_churn_in_bounded_memory() -> None:
    """The freelist's min-heap drops stale entries as jobs are reclaimed and claimed again, so
    a worker nacking and reclaiming one job forever does not grow it."""
    q = QueueState()
    gone: set[int] = set()

    def live(seq: int) -> bool:
        return seq not in gone

    q.claim_many([1, 2, 3], ["l1", "l2", "l3"], "w", 100, [1, 1, 1])
    q.release(2, "l2", 0)
    assert q.oldest_reclaimable(live) == 2
    for k in range(10_000):
        assert q.pop_reclaimable() == 2
        q.claim(2, f"m{k}", "w", 100, 2)
        q.release(2, f"m{k}", 0)
    assert len(q._free_heap) <= 2 * len(q._free) + 65
    q.release(3, "l3", 0)
    q.release(1, "l1", 0)
    assert q.oldest_reclaimable(live) == 1
    q.discard(1)
    assert q.oldest_reclaimable(live) == 2
    gone.add(2)  # a freelist seq whose job left the log without a discard yet: skipped
    assert q.oldest_reclaimable(live) == 3


# -- max_in_flight (an extension) ---------------------------------------------------------------


def _ack(engine: Engine, node: str, seqs: list[int]) -> list[int]:
    return queues_for(engine).ack("q", node, seqs).done


def test_max_in_flight_caps_the_jobs_leased_at_once(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, max_in_flight=3, lease_ms=1000)
    jobs = produce(engine, 8)
    assert claimed_seqs(claim(engine, "a", 2)) == jobs[:2]
    assert claimed_seqs(claim(engine, "b", 5)) == jobs[2:3]  # the room left, not max
    nothing = claim(engine, "c", 1)
    assert nothing.jobs == [] and nothing.counters.ready == 5  # ready, but no room
    assert _ack(engine, "a", [jobs[0]]) == [jobs[0]]
    assert claimed_seqs(claim(engine, "c", 4)) == jobs[3:4]  # the ack made room for one
    queues_for(engine).nack("q", "b", [jobs[2]])
    assert claimed_seqs(claim(engine, "c", 4)) == jobs[2:3]  # a nack makes room too
    clock.advance(1001)  # every lease expires: room for three
    assert claimed_seqs(claim(engine, "d", 8)) == jobs[1:4]  # the three reclaimed, ascending
    assert_consistent(engine)


def test_a_lowered_cap_lets_the_jobs_in_flight_finish(engine: Engine) -> None:
    make_queue(engine)
    jobs = produce(engine, 6)
    assert claimed_seqs(claim(engine, "a", 4)) == jobs[:4]
    engine.put_topic("q", {"max_in_flight": 2})
    assert claim(engine, "b", 1).jobs == []  # 4 in flight, cap 2
    assert _ack(engine, "a", jobs[:2]) == jobs[:2]  # in flight above the cap: they finish normally
    assert claim(engine, "b", 1).jobs == []  # 2 in flight: still no room
    assert _ack(engine, "a", [jobs[2]]) == [jobs[2]]
    assert claimed_seqs(claim(engine, "b", 5)) == jobs[4:5]
    engine.put_topic("q", {"max_in_flight": 0})  # no cap
    assert claimed_seqs(claim(engine, "b", 5)) == jobs[5:6]
    assert engine.topic_state("q").config.max_in_flight == 0


def test_holders_are_ranked_and_counted_through_every_lease_change() -> None:
    q = QueueState()
    q.claim_many([1, 2], ["l1", "l2"], "b", 100, [1, 1])
    q.claim_many([3, 4], ["l3", "l4"], "a", 100, [1, 1])
    q.claim_many([5, 5], ["l5", "l5b"], "c", 100, [1, 1])  # one seq twice: one lease
    assert q.holders(10) == ([("a", 2), ("b", 2), ("c", 1)], 3)  # most first, ties by node
    assert q.holders(1) == ([("a", 2)], 3)
    q.end(3, "l3")
    q.release(1, "l1", 0)
    assert q.holders(10) == ([("a", 1), ("b", 1), ("c", 1)], 3)
    q.expire(101)  # every lease is past its deadline
    assert q.holders(10) == ([], 0) and q.leases == {}
    q.claim_many([6], ["l6"], "d", 200, [1])
    q.discard(6)  # the job left the log
    assert q.holders(10) == ([], 0)
