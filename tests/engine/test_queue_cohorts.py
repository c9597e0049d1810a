"""§10 coalescing windows (claim_jitter_ms > 0) and /work subscriptions at engine level.

With a coalescing window a claim's jobs come with its ``wait`` future; the ManualClock fires the
cohort's pass when a test advances it past the window."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import InvalidRequest, NotAQueue
from topics_engine.queues import Claimed, ClaimedJob, WorkSubscription

from .conftest import T0, raises_topics
from .queue_helpers import (
    assert_consistent,
    claim,
    claimed_seqs,
    counters,
    make_queue,
    produce,
    qstate,
    queues_for,
)


def _future(engine: Engine, node: str, max_: Any = None, lease_ms: Any = None, name: str = "q") -> Claimed:
    claimed = queues_for(engine).claim(name, node, max_, lease_ms)
    assert claimed.coalesced and claimed.wait is not None, "coalescing queue: the claim waits for its cohort"
    return claimed


def _done(claimed: Claimed) -> bool:
    assert claimed.wait is not None
    return claimed.wait.done()


def _jobs(claimed: Claimed) -> list[ClaimedJob]:
    """A served claim's jobs (raises what its ``wait`` failed with)."""
    assert claimed.wait is not None and claimed.wait.done(), "the cohort's pass has not run"
    claimed.wait.result()
    return claimed.jobs


def _seqs(jobs: list[ClaimedJob]) -> list[int]:
    return [j.seq for j in jobs]


def _all_distinct(results: list[list[ClaimedJob]]) -> list[int]:
    flat = [s for jobs in results for s in _seqs(jobs)]
    assert len(flat) == len(set(flat)), "a job was handed to two claimers"
    return flat


async def test_greedy_queue_serves_at_once(engine: Engine) -> None:
    make_queue(engine, claim_jitter_ms=0)
    produce(engine, 3)
    r = queues_for(engine).claim("q", "w", 2)
    assert isinstance(r, Claimed)
    assert claimed_seqs(r) == [1, 2]


async def test_cohort_resolves_when_the_window_passes(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=50, lease_ms=1000)
    produce(engine, 4)
    f1 = _future(engine, "a", 2)
    clock.advance(30)
    f2 = _future(engine, "b", 2)  # inside the window: same cohort
    clock.advance(19)
    assert not _done(f1) and not _done(f2)
    assert counters(engine) == (4, 0)  # nothing leased before the pass
    clock.advance(1)  # T0 + 50: the window (opened by the first claim) closes
    assert _done(f1) and _done(f2)
    r1, r2 = _jobs(f1), _jobs(f2)
    assert len(r1) == 2 and len(r2) == 2
    assert sorted(_all_distinct([r1, r2])) == [1, 2, 3, 4]
    for jobs in (r1, r2):
        assert _seqs(jobs) == sorted(_seqs(jobs))  # ascending by $seq
        for j in jobs:
            assert j.lease.deadline == T0 + 50 + 1000  # served at the pass
            assert j.lease.deliveries == 1
    assert {j.lease.node for j in r1} == {"a"} and {j.lease.node for j in r2} == {"b"}
    assert counters(engine) == (0, 4)


async def test_claim_after_the_pass_opens_a_new_cohort(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=50)
    produce(engine, 4)
    f1 = _future(engine, "a", 1)
    clock.advance(50)
    assert _done(f1)
    f2 = _future(engine, "b", 1)
    clock.advance(49)
    assert not _done(f2)
    clock.advance(1)
    assert _seqs(_jobs(f1)) == [1] and _seqs(_jobs(f2)) == [2]
    assert (f1.counters.ready, f2.counters.ready) == (3, 2)  # counted at each pass


async def test_ten_workers_max_ten_over_fifty_jobs_get_five_each(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=20)
    produce(engine, 50)
    futures = []
    for i in range(10):
        futures.append(_future(engine, f"w{i}", 10))
        clock.advance(1)
    clock.advance(20)
    results = [_jobs(f) for f in futures]
    assert [len(r) for r in results] == [5] * 10  # not 10/10/10/10/10/0/0/0/0/0
    assert sorted(_all_distinct(results)) == list(range(1, 51))
    assert qstate(engine) == {"ready": 0, "in_flight": 50, "dead_lettered": 0, "count": 50}


@pytest.mark.parametrize(
    ("maxes", "jobs", "shares"),
    [
        ([10, 30], 20, [5, 15]),
        ([1, 2, 3, 4], 5, [0.5, 1, 1.5, 2]),  # halves may round either way
        ([5, 5], 100, [5, 5]),  # enough for everyone: each gets its max
        ([1, 3], 4, [1, 3]),
        ([100, 1], 50, [49.5, 0.5]),
    ],
)
async def test_shares_are_proportional_to_max(
    engine: Engine, clock: ManualClock, maxes: list[int], jobs: int, shares: list[float]
) -> None:
    make_queue(engine, claim_jitter_ms=10)
    produce(engine, jobs)
    futures = [_future(engine, f"w{i}", m) for i, m in enumerate(maxes)]
    clock.advance(10)
    results = [_jobs(f) for f in futures]
    got = [len(r) for r in results]
    assert sum(got) == min(jobs, sum(maxes))
    for n, share, m in zip(got, shares, maxes, strict=True):
        assert n <= m
        assert abs(n - share) < 1, (got, shares)
    _all_distinct(results)


async def test_fewer_jobs_than_claimers(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10)
    produce(engine, 3)
    futures = [_future(engine, f"w{i}", 4) for i in range(5)]
    clock.advance(10)
    results = [_jobs(f) for f in futures]
    assert sorted(len(r) for r in results) == [0, 0, 1, 1, 1]
    assert sorted(_all_distinct(results)) == [1, 2, 3]
    assert_consistent(engine)


async def test_empty_cohort_resolves_with_nothing(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10)
    futures = [_future(engine, f"w{i}", 4) for i in range(3)]
    clock.advance(10)
    assert [_jobs(f) for f in futures] == [[], [], []]


async def test_cohort_serves_reclaimed_jobs_first(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10, lease_ms=100)
    produce(engine, 2)
    f = _future(engine, "a", 2)
    clock.advance(10)
    assert _seqs(_jobs(f)) == [1, 2]
    produce(engine, 4, start=2)  # 3-6 fresh
    clock.advance(101)  # 1, 2 expired
    futures = [_future(engine, "b", 1), _future(engine, "c", 1)]
    clock.advance(10)
    results = [_jobs(fut) for fut in futures]
    assert sorted(_all_distinct(results)) == [1, 2]
    assert all(j.lease.deliveries == 2 for r in results for j in r)


async def test_cohort_per_claim_lease_ms(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10, lease_ms=1000)
    produce(engine, 2)
    fa = _future(engine, "a", 1, lease_ms=5)  # clamped to 100
    fb = _future(engine, "b", 1)
    clock.advance(10)
    assert [j.lease.deadline for j in _jobs(fa)] == [T0 + 10 + 100]
    assert [j.lease.deadline for j in _jobs(fb)] == [T0 + 10 + 1000]


async def test_jitter_is_clamped_to_5000(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=999_999)
    assert engine.topic_state("q").config.claim_jitter_ms == 5000
    produce(engine, 1)
    f = _future(engine, "a")
    clock.advance(4999)
    assert not _done(f)
    clock.advance(1)
    assert _seqs(_jobs(f)) == [1]


async def test_cohort_claims_validate_synchronously(engine: Engine) -> None:
    make_queue(engine, claim_jitter_ms=10)
    with raises_topics(InvalidRequest, "invalid_request"):
        queues_for(engine).claim("q", None, 1)
    with raises_topics(InvalidRequest, "invalid_request"):
        queues_for(engine).claim("q", "w", "x")


async def test_cohort_fails_if_the_topic_stops_being_a_queue(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10)
    produce(engine, 2)
    f = _future(engine, "a", 2)
    engine.delete_topic("q")
    engine.append("q", [{"data": 1}])  # now a log
    clock.advance(10)
    with raises_topics(NotAQueue, "not_a_queue"):
        _jobs(f)


async def test_awaited_claim_resolves(engine: Engine, clock: ManualClock) -> None:
    """The future is a real awaitable: a task awaiting it wakes once the pass ran."""
    make_queue(engine, claim_jitter_ms=25)
    produce(engine, 3)

    async def worker() -> list[int]:
        claimed = _future(engine, "a", 3)
        assert claimed.wait is not None
        await claimed.wait
        return _seqs(claimed.jobs)

    task = asyncio.ensure_future(worker())
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(25)
    assert await asyncio.wait_for(task, 1) == [1, 2, 3]


async def test_cancelled_claimer_is_left_out_of_the_pass(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10)
    produce(engine, 4)
    gone = _future(engine, "gone", 4)
    stay = _future(engine, "stay", 4)
    assert gone.wait is not None
    gone.wait.cancel()
    clock.advance(10)
    assert _seqs(_jobs(stay)) == [1, 2, 3, 4]
    assert counters(engine) == (0, 4)


# -- /work subscriptions ---------------------------------------------------------------------


async def test_work_subscription_joins_the_cohort(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10, lease_ms=1000)
    produce(engine, 30)
    topic, sub = queues_for(engine).subscribe("q", "pushed", 10)
    assert (sub.node, sub.max, sub.lease_ms) == ("pushed", 10, 1000)
    polled = [_future(engine, "p1", 10), _future(engine, "p2", 10)]
    pushed = queues_for(engine).claim_for(topic, sub, 10)
    assert pushed.coalesced
    assert not _done(pushed)
    clock.advance(10)
    results = [_jobs(polled[0]), _jobs(polled[1]), _jobs(pushed)]
    assert [len(r) for r in results] == [10, 10, 10]
    assert sorted(_all_distinct(results)) == list(range(1, 31))
    assert sub.held == set(_seqs(results[2]))
    assert all(j.lease.node == "pushed" and j.lease.holder is sub for j in results[2])


async def test_work_subscription_balanced_with_pollers(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, claim_jitter_ms=10)
    produce(engine, 12)
    topic, sub = queues_for(engine).subscribe("q", "pushed", 8)
    pushed = queues_for(engine).claim_for(topic, sub, 8)
    polled = _future(engine, "p", 8)
    clock.advance(10)
    assert pushed.coalesced
    assert len(_jobs(pushed)) == 6 and len(_jobs(polled)) == 6


async def test_subscribe_defaults_and_clamps(engine: Engine) -> None:
    make_queue(engine, lease_ms=2000)
    _, sub = queues_for(engine).subscribe("q", "w")
    assert (sub.max, sub.lease_ms) == (1, 2000)
    _, sub = queues_for(engine).subscribe("q", "w", 5000, 10)
    assert (sub.max, sub.lease_ms) == (1000, 100)
    _, sub = queues_for(engine).subscribe("q", "w", 0)
    assert sub.max == 1


def _greedy_sub(engine: Engine, node: str, max_: int) -> tuple[Any, WorkSubscription, list[ClaimedJob]]:
    topic, sub = queues_for(engine).subscribe("q", node, max_)
    claimed = queues_for(engine).claim_for(topic, sub, max_)
    assert isinstance(claimed, Claimed) and claimed.wait is None
    return topic, sub, claimed.jobs


def test_release_subscription_releases_exactly_its_leases(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine, lease_ms=60_000)
    produce(engine, 10)
    plain = claim(engine, "n1", 2)  # 1, 2: a plain claim by the same node
    topic, sub, jobs = _greedy_sub(engine, "n1", 3)  # 3, 4, 5
    other_topic, other, other_jobs = _greedy_sub(engine, "n1", 2)  # 6, 7: another stream, same node
    assert _seqs(jobs) == [3, 4, 5] and _seqs(other_jobs) == [6, 7]
    queues_for(engine).ack("q", "n1", [4])  # no longer held by the stream
    assert sub.held == {3, 5}
    released = queues_for(engine).release_subscription(topic, sub)
    assert released == 2
    assert sub.held == set()
    assert counters(engine) == (5, 4)  # 3, 5 + fresh 8, 9, 10 ready; 1, 2, 6, 7 held
    # the plain claim and the other stream are unaffected
    assert queues_for(engine).ack("q", "n1", claimed_seqs(plain)).done == [1, 2]
    assert other.held == {6, 7}
    # released jobs are claimable at once (reclaim freelist first), deliveries counted
    got = claim(engine, "n2", 2)
    assert claimed_seqs(got) == [3, 5]
    assert [j.lease.deliveries for j in got.jobs] == [2, 2]
    assert queues_for(engine).release_subscription(topic, sub) == 0  # idempotent
    assert queues_for(engine).release_subscription(other_topic, other) == 2


def test_release_subscription_skips_leases_it_lost(engine: Engine, clock: ManualClock) -> None:
    """A stream's lease that expired and was re-claimed by a plain claim (even by the same
    node) is not released by the stream's disconnect."""
    make_queue(engine, lease_ms=100)
    produce(engine, 2)
    topic, sub, jobs = _greedy_sub(engine, "n1", 2)
    clock.advance(101)
    again = claim(engine, "n1", 1)  # expiry noticed; 1 re-leased to a plain claim
    assert claimed_seqs(again) == [1]
    assert sub.held == set()
    assert queues_for(engine).release_subscription(topic, sub) == 0
    assert counters(engine) == (1, 1)
    assert queues_for(engine).ack("q", "n1", [1]).done == [1]


def test_subscription_held_tracks_acks_nacks_and_wakes(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 3)
    topic, sub, _ = _greedy_sub(engine, "n1", 3)
    wakes: list[int] = []
    sub.wake = lambda: wakes.append(1)
    queues_for(engine).ack("q", "n1", [1])
    queues_for(engine).nack("q", "n1", [2])
    assert sub.held == {3}
    assert len(wakes) == 2
    engine.delete_records("q", before_seq=4)
    assert sub.held == set()
    assert len(wakes) == 3


def test_release_subscription_after_topic_recreated_is_a_no_op(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 2)
    topic, sub, _ = _greedy_sub(engine, "n1", 2)
    engine.delete_topic("q")
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "n1", 2)
    assert queues_for(engine).release_subscription(topic, sub) == 0
    assert counters(engine) == (0, 2)


def test_claim_for_greedy_respects_want(engine: Engine) -> None:
    make_queue(engine)
    produce(engine, 5)
    topic, sub = queues_for(engine).subscribe("q", "n1", 4)
    first = queues_for(engine).claim_for(topic, sub, 4)
    assert isinstance(first, Claimed) and _seqs(first.jobs) == [1, 2, 3, 4]
    queues_for(engine).ack("q", "n1", [2])
    refill = queues_for(engine).claim_for(topic, sub, sub.max - len(sub.held))
    assert isinstance(refill, Claimed) and _seqs(refill.jobs) == [5]
    assert sub.held == {1, 3, 4, 5}


def test_next_push_at_free_depth_or_the_earliest_held_deadline(engine: Engine) -> None:
    """With free depth a stream looks again when any job of the queue frees; when full, just
    after the earliest lease it holds expires; seqs it no longer holds are dropped first."""
    make_queue(engine, lease_ms=1_000)
    produce(engine, 3)
    queues = queues_for(engine)
    claim(engine, "n2", 1, lease_ms=500)  # seq 1 until T0 + 500: the queue's first expiry
    topic, sub, _ = _greedy_sub(engine, "n1", 2)  # 2, 3 until T0 + 1000: full
    assert queues.next_push_at(topic, sub) == T0 + 1_000 + 1
    queues.ack("q", "n1", [2])  # free depth
    assert queues.next_push_at(topic, sub) == T0 + 500 + 1
    sub.held.add(99)  # never leased: not counted
    assert queues.next_push_at(topic, sub) == T0 + 500 + 1 and sub.held == {3}
    queues.ack("q", "n2", [1])
    queues.ack("q", "n1", [3])
    assert queues.next_push_at(topic, sub) is None  # nothing leased or delayed
