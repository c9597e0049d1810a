"""Wall-clock steps at engine level (docs/DECISIONS.md, "Clock steps"): the :class:`ManualClock`'s
``step_wall`` moves the wall clock alone — back an hour, forward a day — as NTP, an operator or a
resumed VM would, while ``advance`` moves both clocks (elapsed time).

- ``$ts`` never goes backwards within a topic; TTL expiry follows ``$ts`` (the topic's clock is
  ``max(wall, last $ts)``);
- lease deadlines, nack delays and write delays measure elapsed time: a forward step neither
  expires a lease nor makes a delayed job due, a backward step does not make either last longer;
  a lease's reported ``deadline`` is the wall instant it stands for now;
- watch sessions are reclaimed after their TTL of elapsed idleness;
- idempotency entries stay ordered (the window follows the write clock);
- a schedule runs no due time twice after a backward step, and once for the due times a
  forward step passed.

Every persistence (in memory, WAL, cold segments)."""

from __future__ import annotations

from typing import Any

from topics_engine import Engine, ManualClock, SystemClock
from topics_engine.errors import NotFound
from topics_engine.schedules import MAX_SLEEP_MS, Schedules
from topics_engine.watch import TopicStart, Watches, WatchOptions

from .conftest import T0, raises_topics, recs
from .queue_helpers import assert_consistent, claim, claimed_seqs, make_queue, produce, queues_for, wire

MINUTE = 60_000
HOUR = 3_600_000
DAY = 24 * HOUR


def _ts(engine: Engine, topic: str = "t") -> list[int]:
    return [r["$ts"] for r in recs(engine.diff(topic, limit=1000))]


def _ready(engine: Engine, name: str = "q") -> tuple[int, int, int]:
    counters = engine.queue_counters(engine.get(name))
    assert counters is not None
    return counters.ready, counters.in_flight, counters.delayed


def test_the_system_clocks_stand_for_the_same_instants_until_the_wall_clock_steps() -> None:
    """Without a step, a steady instant is reported as itself (no jitter of a millisecond from
    reading the two clocks apart: a deadline is ``now + lease_ms`` exactly)."""
    clock = SystemClock()
    base = clock.steady_ms()
    assert all(clock.wall_of(base + i) == base + i for i in range(2000))


# -- $ts and TTL ---------------------------------------------------------------------------------


def test_ts_never_goes_backwards_when_the_wall_clock_steps_back(engine: Engine, clock: ManualClock) -> None:
    engine.append("t", [{"data": 1}])
    clock.advance(10)
    engine.append("t", [{"data": 2}])
    clock.step_wall(-HOUR)
    engine.append("t", [{"data": 3}])
    clock.advance(5)
    engine.append("t", [{"data": 4}])
    assert _ts(engine) == [T0, T0 + 10, T0 + 10, T0 + 10]  # held at the last $ts
    clock.advance(HOUR)  # the wall clock catches up: $ts follows it again
    engine.append("t", [{"data": 5}])
    assert _ts(engine)[-1] == T0 + 15
    clock.step_wall(DAY)
    engine.append("t", [{"data": 6}])
    assert _ts(engine)[-1] == T0 + 15 + DAY  # forward: the new wall time
    ts = _ts(engine)
    assert ts == sorted(ts)
    other = engine.append("u", [{"data": 1}])  # each topic's clock is its own
    assert other.first_seq == 1 and _ts(engine, "u") == [T0 + 15 + DAY]


def test_ttl_follows_ts_across_a_backward_step(engine: Engine, clock: ManualClock) -> None:
    """Records expire once the topic's clock (``max(wall, last $ts)``) passes ``$ts + ttl``: a
    backward step does not keep records an hour longer than their ``$ts`` says."""
    engine.put_topic("t", {"ttl_ms": 1000})
    engine.append("t", [{"data": "old"}])
    clock.advance(1500)
    engine.append("t", [{"data": "new"}])  # $ts T0 + 1500: "old" is 1500 ms older
    clock.step_wall(-HOUR)
    assert [r["data"] for r in recs(engine.diff("t"))] == ["new"]
    clock.advance(1001)  # wall still an hour behind: "new" is 0 ms old by the topic's clock
    assert [r["data"] for r in recs(engine.diff("t"))] == ["new"]
    clock.advance(HOUR)  # the wall passed $ts + ttl
    assert recs(engine.diff("t")) == []


def test_ttl_after_a_forward_step_measures_ts_against_the_new_wall_time(
    engine: Engine, clock: ManualClock
) -> None:
    """A forward step of a day ages every record by a day: those older than the TTL at the new
    wall time expire; records written after the step have the new wall time."""
    engine.put_topic("t", {"ttl_ms": 2 * DAY})
    engine.append("t", [{"data": "a"}])
    clock.step_wall(DAY)
    engine.append("t", [{"data": "b"}])
    assert [r["data"] for r in recs(engine.diff("t"))] == ["a", "b"]
    assert _ts(engine) == [T0, T0 + DAY]
    clock.step_wall(DAY)  # "a" is now two days old (+1 ms below), "b" one
    clock.advance(1)
    assert [r["data"] for r in recs(engine.diff("t"))] == ["b"]


def test_idempotency_entries_stay_ordered_across_a_backward_step(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"idempotency_window_ms": 10_000})
    first = engine.append("t", [{"data": 1}], idempotency_key="k1")
    clock.step_wall(-HOUR)
    second = engine.append("t", [{"data": 2}], idempotency_key="k2")
    clock.advance(9_999)
    assert engine.append("t", [{"data": 1}], idempotency_key="k1").deduped
    assert engine.append("t", [{"data": 2}], idempotency_key="k2").deduped
    clock.advance(1)  # the window is over for both (k2 was stamped at the write clock, $ts)
    clock.advance(HOUR)
    again1 = engine.append("t", [{"data": 1}], idempotency_key="k1")
    again2 = engine.append("t", [{"data": 2}], idempotency_key="k2")
    assert not again1.deduped and not again2.deduped
    assert again1.first_seq > second.first_seq > first.first_seq


# -- leases, nack delays, write delays -----------------------------------------------------------


def test_a_forward_step_does_not_expire_a_lease(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    produce(engine, 2)
    (job,) = claim(engine, "w1", 1, lease_ms=30_000).jobs
    assert wire(job)["deadline"] == T0 + 30_000
    clock.step_wall(DAY)
    assert _ready(engine) == (1, 1, 0)
    assert claimed_seqs(claim(engine, "w2", 10, lease_ms=HOUR)) == [2]  # not job 1: its lease holds
    (info,) = queues_for(engine).leases("q", "w1", 10, 0).leases
    assert info.deadline == T0 + 30_000 + DAY  # reported as the wall instant it stands for now
    clock.advance(30_000)
    assert _ready(engine) == (0, 2, 0)
    clock.advance(1)  # 30 s elapsed since the claim: it expires
    assert claimed_seqs(claim(engine, "w2", 10)) == [1]
    assert queues_for(engine).ack("q", "w1", [1]).skipped == [1]
    assert_consistent(engine)


def test_a_backward_step_does_not_prolong_a_lease(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "w1", 1, lease_ms=30_000)
    clock.step_wall(-HOUR)
    (info,) = queues_for(engine).leases("q", None, 10, 0).leases
    assert info.deadline == T0 + 30_000 - HOUR
    clock.advance(30_001)
    (job,) = claim(engine, "w2", 1, lease_ms=1000).jobs
    assert job.seq == 1 and job.lease.deliveries == 2
    assert wire(job)["deadline"] == T0 + 30_001 - HOUR + 1000  # wall now + lease_ms


def test_extend_sets_the_deadline_from_now_on_the_steady_clock(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    produce(engine, 1)
    claim(engine, "w1", 1, lease_ms=1000)
    clock.step_wall(-HOUR)
    change = queues_for(engine).extend("q", "w1", [1], 5000)
    assert change.deadlines == {"1": T0 - HOUR + 5000}
    clock.step_wall(DAY)
    clock.advance(5000)
    assert claim(engine, "w2", 1).jobs == []
    clock.advance(1)
    assert claimed_seqs(claim(engine, "w2", 1)) == [1]


def test_nack_delays_measure_elapsed_time(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    produce(engine, 2)
    claim(engine, "w1", 2)
    queues_for(engine).nack("q", "w1", [1], delay_ms=10_000)
    clock.step_wall(DAY)  # forward: not due early
    assert claim(engine, "w2", 10).jobs == []
    queues_for(engine).nack("q", "w1", [2], delay_ms=10_000)
    clock.step_wall(-DAY - HOUR)  # back: not due an hour late
    clock.advance(9_999)
    assert claim(engine, "w2", 10).jobs == []
    clock.advance(1)
    assert claimed_seqs(claim(engine, "w2", 10)) == [1, 2]
    assert_consistent(engine)


def test_write_delays_measure_elapsed_time(engine: Engine, clock: ManualClock) -> None:
    make_queue(engine)
    engine.append("q", [{"data": "a", "delay_ms": 5_000}])
    clock.step_wall(DAY)
    assert _ready(engine) == (0, 0, 1)
    assert claim(engine).jobs == []
    clock.step_wall(-DAY - HOUR)
    engine.append("q", [{"data": "b", "delay_ms": 5_000}])  # $ts held at T0: written "at" T0
    clock.advance(4_999)
    assert claim(engine).jobs == []
    clock.advance(1)
    assert claimed_seqs(claim(engine, max_=10)) == [1, 2]
    assert_consistent(engine)


# -- watch sessions ------------------------------------------------------------------------------


def _create(watches: Watches) -> Any:
    return watches.create({"t": TopicStart()}, WatchOptions())


def test_watch_sessions_are_reclaimed_after_elapsed_idleness(engine: Engine, clock: ManualClock) -> None:
    watches = Watches(engine, session_ttl_ms=1000)
    engine.append("t", [{"data": 1}])
    session = _create(watches)
    clock.step_wall(DAY)  # forward: not reclaimed at once
    assert watches.collect() == 0
    assert watches.session(session.wid) is session
    clock.step_wall(-DAY - HOUR)  # back: not kept an hour longer
    clock.advance(999)
    assert watches.collect() == 0
    clock.advance(1)
    assert watches.collect() == 1
    with raises_topics(NotFound, "not_found"):
        watches.session(session.wid)


# -- schedules -----------------------------------------------------------------------------------


def _runs(engine: Engine, schedules: Schedules) -> tuple[int, list[int]]:
    """``(runs_total, [$ts of each record appended])`` of schedule ``s`` on topic ``t``."""
    info = schedules.get("s")
    return info.runs_total, [r["$ts"] for r in recs(engine.diff("t", limit=1000))]


def test_a_schedule_runs_no_due_time_twice_after_a_backward_step(engine: Engine, clock: ManualClock) -> None:
    schedules = Schedules(engine)
    schedules.start()
    schedules.put("s", {"topic": "t", "every_ms": 10 * MINUTE, "records": [{"data": 1}]})
    clock.advance(20 * MINUTE)  # due T0 + 10 min and T0 + 20 min: two runs
    assert _runs(engine, schedules) == (2, [T0 + 10 * MINUTE, T0 + 20 * MINUTE])
    clock.step_wall(-HOUR)
    clock.advance(HOUR)  # the wall clock is back at T0 + 20 min: nothing ran again
    assert _runs(engine, schedules)[0] == 2
    assert schedules.get("s").last_run_ms == T0 + 20 * MINUTE
    clock.advance(10 * MINUTE + MAX_SLEEP_MS)  # T0 + 30 min (on the wall) passed: its run
    total, ts = _runs(engine, schedules)
    assert total == 3 and schedules.get("s").last_run_ms == T0 + 30 * MINUTE
    assert ts == sorted(ts)
    schedules.stop()


def test_a_forward_step_runs_a_schedule_once_for_the_due_times_it_passed(
    engine: Engine, clock: ManualClock
) -> None:
    schedules = Schedules(engine)
    schedules.start()
    schedules.put("s", {"topic": "t", "every_ms": 10 * MINUTE, "records": [{"data": 1}]})
    clock.advance(10 * MINUTE)
    clock.step_wall(DAY)  # 144 due times passed at once
    clock.advance(MAX_SLEEP_MS)
    assert _runs(engine, schedules)[0] == 2  # one run covers them (none lost, none twice)
    assert schedules.get("s").last_run_ms == T0 + 10 * MINUTE + DAY
    clock.advance(10 * MINUTE)
    assert _runs(engine, schedules)[0] == 3
    schedules.stop()


def test_a_schedule_put_after_a_forward_step_runs_on_time(engine: Engine, clock: ManualClock) -> None:
    """The pump's armed timer is kept for a new schedule only if it fires first in elapsed
    time: a timer armed before a forward step (the capped look) fires MAX_SLEEP_MS of elapsed
    time later, however far the step moved the wall instant it was armed for."""
    schedules = Schedules(engine)
    schedules.start()
    schedules.put("daily", {"topic": "other", "every_ms": DAY, "records": [{"data": 1}]})
    clock.step_wall(HOUR)  # the timer armed for the daily's capped sleep: MAX_SLEEP_MS from now
    every = MAX_SLEEP_MS // 2  # due before that timer fires
    schedules.put("s", {"topic": "t", "every_ms": every, "records": [{"data": 1}]})
    clock.advance(every)  # its first due time, on the stepped wall clock
    assert _runs(engine, schedules) == (1, [T0 + HOUR + every])
    schedules.stop()
