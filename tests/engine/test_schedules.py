"""Schedules at engine level (an extension, issue 24): timed appends on a :class:`ManualClock`.

Due times come from the clock: a test moves it and the pump's one timer fires (no sleeps). The
behaviour suite runs over both persistences (the ``engine`` fixture); the durable tests at the
end restart an engine over a :class:`DataDirectory` — WAL replay only, after a checkpoint, with
the last run's own frame lost — and check that no due time ever runs twice, and what ``missed``
does with the due times that passed while the engine was down.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from topics_engine import Engine, Limits, ManualClock, Queues
from topics_engine.datadir.directory import DataDirectory
from topics_engine.errors import (
    BatchTooLarge,
    InvalidRequest,
    NotAQueue,
    NotReady,
    RecordTooLarge,
    ScheduleNotFound,
    Throttled,
    TopicFull,
)
from topics_engine.persistence import InMemory
from topics_engine.schedules import MAX_SLEEP_MS, PASS_RUNS, RETRY_MS, Schedules, run_key
from topics_engine.schedules.pump import COMPACT_SLACK
from topics_engine.storage.frames import FrameType
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.wal import wal_files, wal_frames

from .conftest import T0, raises_topics, read_all, settle

SECOND, MINUTE, HOUR = 1000, 60_000, 3_600_000
PING = [{"data": {"ping": 1}, "tag": "hb", "meta": {"from": "cron"}}]


@pytest.fixture
def schedules(engine: Engine) -> Schedules:
    s = Schedules(engine)
    s.start()
    return s


def datas(engine: Engine, topic: str) -> list[Any]:
    return [r["data"] for r in read_all(engine, topic, include_tags=True, touch=False)[0]]


def records(engine: Engine, topic: str) -> list[dict[str, Any]]:
    return read_all(engine, topic, include_tags=True, touch=False)[0]


# -- timing --------------------------------------------------------------------------------------


def test_every_ms_runs_one_interval_after_the_put_and_then_each_interval(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    put = schedules.put("beat", {"topic": "health", "every_ms": 1000, "records": PING, "node": "n1"})
    assert put.created and put.schedule.next_run_ms == T0 + 1000
    assert put.schedule.last_run_ms is None and put.schedule.runs_total == 0
    assert engine.topic("health") is not None  # created by the PUT, empty
    clock.advance(999)
    assert datas(engine, "health") == []
    clock.advance(1)
    got = records(engine, "health")
    assert got == [
        {
            "$seq": 1,
            "$ts": T0 + 1000,
            "$node": "n1",
            "$tag": "hb",
            "data": {"ping": 1},
            "meta": {"from": "cron"},
        }
    ]
    clock.advance(2500)
    assert [r["$ts"] for r in records(engine, "health")] == [T0 + 1000, T0 + 2000, T0 + 3000]
    beat = schedules.get("beat")
    assert (beat.last_run_ms, beat.next_run_ms, beat.runs_total) == (T0 + 3000, T0 + 4000, 3)
    assert schedules.runs_total == 3 and schedules.failures_total == 0


def test_cron_runs_at_its_utc_minutes(engine: Engine, schedules: Schedules, clock: ManualClock) -> None:
    # T0 = 2023-11-14 22:13:20 UTC
    schedules.put("five", {"topic": "t", "cron": "*/5 * * * *", "records": [{"data": "tick"}]})
    first = schedules.get("five").next_run_ms
    assert first == T0 + 100_000  # 22:15:00
    clock.advance(HOUR)
    ts = [r["$ts"] for r in records(engine, "t")]
    assert ts == [first + i * 5 * MINUTE for i in range(12)]
    assert all(t % (5 * MINUTE) == 0 for t in ts)


def test_each_run_carries_a_key_derived_from_name_and_due_time(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    schedules.put("k", {"topic": "t", "every_ms": 500, "records": [{"data": 1}]})
    clock.advance(500)
    key = run_key("k", T0 + 500, engine.limits.max_idempotency_key_chars)
    assert key == f"schedule:k:{T0 + 500}"
    again = engine.append("t", [{"data": "again"}], idempotency_key=key)
    assert again.deduped and again.first_seq == 1
    long_name = "n" * 255
    long_key = run_key(long_name, T0, 256)
    assert (
        len(long_key) <= 256 and long_key.startswith("schedule:#") and long_key != run_key("m" * 255, T0, 256)
    )


def test_a_cron_no_day_matches_is_accepted_and_never_runs(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    put = schedules.put("never", {"topic": "t", "cron": "0 0 30 2 *", "records": [{"data": 1}]})
    assert put.schedule.next_run_ms is None
    clock.advance(400 * 24 * HOUR)
    assert datas(engine, "t") == []


class CountingTiming:
    def __init__(self, timing: Any) -> None:
        self.timing, self.calls = timing, 0

    def next_after(self, t_ms: int) -> int | None:
        self.calls += 1
        return self.timing.next_after(t_ms)  # type: ignore[no-any-return]

    def latest_at_or_before(self, t_ms: int) -> int | None:
        return self.timing.latest_at_or_before(t_ms)  # type: ignore[no-any-return]


def test_next_run_ms_is_computed_once_per_progress_and_timing(schedules: Schedules) -> None:
    s = schedules.put("s", {"topic": "t", "cron": "0 0 * * *", "records": [{"data": 1}]}).schedule
    counting = CountingTiming(s.timing)
    s.timing = counting
    first = s.next_run_ms
    assert [s.next_run_ms for _ in range(5)] == [first] * 5 and counting.calls == 1
    s.through_ms = first  # progress: recomputed
    assert s.next_run_ms == first + 24 * HOUR and counting.calls == 2
    s.timing = CountingTiming(counting.timing)  # a new timing: recomputed
    assert s.next_run_ms == first + 24 * HOUR and s.timing.calls == 1


def test_an_idle_pump_sleeps_until_the_next_due_time(
    engine: Engine, schedules: Schedules, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One timer for the earliest due time over every schedule: no pass without a due run."""
    passes: list[int] = []
    pump = schedules.pump
    original = pump.pump
    monkeypatch.setattr(pump, "pump", lambda: passes.append(clock.now_ms()) or original())
    schedules.put("a", {"topic": "t", "every_ms": 10 * MINUTE, "records": [{"data": "a"}]})
    schedules.put("b", {"topic": "t", "every_ms": 25 * MINUTE, "records": [{"data": "b"}]})
    clock.advance(HOUR)
    due = sorted({T0 + i * 10 * MINUTE for i in range(1, 7)} | {T0 + 25 * MINUTE, T0 + 50 * MINUTE})
    assert passes == due
    assert datas(engine, "t") == ["a", "a", "b", "a", "a", "b", "a", "a"]  # at 50: b was planned first


def test_the_pump_follows_a_wall_clock_stepped_forward() -> None:
    """The timer sleeps at most MAX_SLEEP_MS, so a run made due by a forward step of the wall
    clock happens within that, not after the whole (monotonic) delay it was armed with."""
    clock = ManualClock(T0)  # its wall clock steps alone; timers run on its steady clock
    engine = Engine(clock, Limits())
    schedules = Schedules(engine)
    schedules.start()
    schedules.put("s", {"topic": "t", "every_ms": HOUR, "records": [{"data": 1}]})
    clock.step_wall(HOUR)  # now due; no timer fires on a step
    assert datas(engine, "t") == []
    clock.advance(MAX_SLEEP_MS)
    assert datas(engine, "t") == [1]
    assert [r["$ts"] for r in records(engine, "t")] == [T0 + HOUR + MAX_SLEEP_MS]


def test_nothing_runs_before_start_nor_after_stop(engine: Engine, clock: ManualClock) -> None:
    s = Schedules(engine)
    s.put("s", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}]})
    clock.advance(5000)  # not started: still being recovered
    assert datas(engine, "t") == []
    s.start()  # missed: skip — the five due times passed before the start
    clock.advance(1000)
    assert datas(engine, "t") == [1]
    s.stop()  # shutting down: the final checkpoint holds every run
    clock.advance(5000)
    assert datas(engine, "t") == [1] and s.get("s").runs_total == 1


def test_an_attempt_that_finds_nothing_due_plans_a_future_one(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    """An attempt with no due time after the last one accounted for (its timing changed since it
    was planned) appends nothing and looks again after now — never at once, in a loop."""
    schedules.put("s", {"topic": "t", "cron": "0 0 * * *", "records": [{"data": 1}]})
    s = schedules.get("s")
    s.through_ms = clock.now_ms() + 5 * MINUTE  # as if accounted for beyond now
    schedules.pump.fire(s, clock.now_ms())
    assert datas(engine, "t") == [] and s.attempt_ms is not None and s.attempt_ms > clock.now_ms()


def test_a_pass_runs_at_most_its_share_and_the_rest_at_once(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    for i in range(PASS_RUNS + 5):
        schedules.put(f"s{i:03}", {"topic": "t", "every_ms": SECOND, "records": [{"data": i}]})
    clock.advance(SECOND)
    assert len(datas(engine, "t")) == PASS_RUNS + 5  # the rest ran in a second pass, due at once


# -- PUT -----------------------------------------------------------------------------------------


def test_put_is_an_idempotent_upsert(engine: Engine, schedules: Schedules, clock: ManualClock) -> None:
    body = {"topic": "t", "every_ms": 1000, "records": [{"data": 1}]}
    assert schedules.put("s", body).created
    clock.advance(1500)
    again = schedules.put("s", dict(body))
    assert not again.created and again.schedule.next_run_ms == T0 + 2000  # nothing changed
    # other records, same timing: the timing is kept
    changed = schedules.put("s", {**body, "records": [{"data": 2}], "missed": "once"})
    assert not changed.created and changed.schedule.next_run_ms == T0 + 2000
    clock.advance(500)
    assert datas(engine, "t") == [1, 2]
    # a new interval starts over from the PUT
    clock.advance(100)
    retimed = schedules.put("s", {**body, "every_ms": 700})
    assert retimed.schedule.next_run_ms == T0 + 2100 + 700
    clock.advance(700)
    assert datas(engine, "t") == [1, 2, 1]
    assert schedules.get("s").runs_total == 3


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"every_ms": 1000, "records": [{"data": 1}]}, "topic", "topic is required"),
        ({"topic": "bad name", "every_ms": 1000, "records": [{"data": 1}]}, "topic", "invalid topic name"),
        ({"topic": "t", "records": [{"data": 1}]}, "cron", "exactly one of cron"),
        (
            {"topic": "t", "cron": "* * * * *", "every_ms": 100, "records": [{"data": 1}]},
            "every_ms",
            "exactly one",
        ),
        ({"topic": "t", "every_ms": 99, "records": [{"data": 1}]}, "every_ms", "from 100 to"),
        ({"topic": "t", "every_ms": True, "records": [{"data": 1}]}, "every_ms", "whole number"),
        ({"topic": "t", "cron": "* * *", "records": [{"data": 1}]}, "cron", "has 3 fields"),
        ({"topic": "t", "every_ms": 100, "records": [{"data": 1}], "missed": "all"}, "missed", "skip"),
        ({"topic": "t", "every_ms": 100, "records": []}, "records", "non-empty"),
        ({"topic": "t", "every_ms": 100, "records": [{"dat": 1}]}, "records[0].dat", "not a record field"),
        ({"topic": "t", "every_ms": 100, "records": [{"data": 1}], "when": 1}, "when", "not a known field"),
    ],
)
def test_bad_bodies_are_400_naming_the_field(
    engine: Engine, schedules: Schedules, fields: dict[str, Any], field: str, problem: str
) -> None:
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        schedules.put("s", fields)
    assert caught[0].detail is not None and caught[0].detail["field"] == field
    assert problem in caught[0].message
    assert schedules.count == 0 and engine.topic("t") is None  # nothing left behind


def test_records_are_checked_like_a_write(engine: Engine, clock: ManualClock) -> None:
    limits = dataclasses.replace(Limits(), max_batch_records=2, max_record_bytes=20, max_node_bytes=3)
    e = Engine(clock, limits)
    s = Schedules(e)
    body = {"topic": "t", "every_ms": 100}
    cases = [
        ({**body, "records": [{"data": i} for i in range(3)]}, BatchTooLarge, "batch_too_large"),
        ({**body, "records": [{"data": "x" * 30}]}, RecordTooLarge, "record_too_large"),
        ({**body, "records": [{"data": 1}], "node": "long"}, InvalidRequest, "invalid_request"),
        ({**body, "records": [{"data": 1, "node": "long"}]}, InvalidRequest, "invalid_request"),
    ]
    for fields, cls, code in cases:
        with raises_topics(cls, code) as caught:
            s.put("s", fields)
        with raises_topics(cls, code) as appended:
            e.append("t", fields["records"], node=fields.get("node"))
        assert caught[0].message == appended[0].message
        assert caught[0].detail == appended[0].detail
    assert s.count == 0


def test_records_may_be_delayed_jobs_of_a_queue(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    """A run appends delayed jobs like any write (the records' ``delay_ms``); on a log topic
    (or one the PUT would create as a log) such a schedule is refused up front."""
    body = {"every_ms": 1000, "records": [{"data": "later", "delay_ms": 500}, {"data": "now"}]}
    with pytest.raises(NotAQueue):
        schedules.put("d", {"topic": "nowhere", **body})
    assert engine.topic("nowhere") is None
    engine.put_topic("log", {})
    with pytest.raises(NotAQueue):
        schedules.put("d", {"topic": "log", **body})
    engine.put_topic("q", {"type": "queue"})
    schedules.put("d", {"topic": "q", **body})
    clock.advance(1000)
    assert [r.get("$delay_ms") for r in records(engine, "q")] == [500, None]
    queues = Queues(engine)
    assert [j.record.data_json for j in queues.claim("q", "w", 10).jobs] == [b'"now"']
    clock.advance(500)
    assert [j.record.data_json for j in queues.claim("q", "w", 10).jobs] == [b'"later"']


def test_a_bad_name_is_400(schedules: Schedules) -> None:
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        schedules.put("no spaces", {"topic": "t", "every_ms": 100, "records": [{"data": 1}]})
    assert caught[0].detail == {"field": "schedule", "value": "no spaces"}


def test_caps_max_schedules_and_max_topics(clock: ManualClock) -> None:
    engine = Engine(clock, dataclasses.replace(Limits(), max_topics=1))
    s = Schedules(engine, max_schedules=2)
    body = {"every_ms": 100, "records": [{"data": 1}]}
    s.put("a", {**body, "topic": "t"})
    with raises_topics(Throttled, "throttled") as caught:  # a second topic
        s.put("b", {**body, "topic": "u"})
    assert caught[0].detail == {"limit": "max_topics", "max": 1}
    assert s.count == 1 and engine.topic("u") is None  # a refused schedule leaves no topic
    s.put("b", {**body, "topic": "t"})
    with raises_topics(Throttled, "throttled") as caught:
        s.put("c", {**body, "topic": "t"})
    assert caught[0].detail == {"limit": "max_schedules", "max": 2}
    assert "TOPICS_MAX_SCHEDULES" in caught[0].message
    assert not s.put("b", {**body, "topic": "t", "every_ms": 200}).created  # an update always fits


# -- GET, list, DELETE ---------------------------------------------------------------------------


def test_get_list_and_delete(engine: Engine, schedules: Schedules, clock: ManualClock) -> None:
    for name, topic in [("b.one", "x"), ("a.two", "y"), ("b.three", "x"), ("c", "y")]:
        schedules.put(name, {"topic": topic, "every_ms": 1000, "records": [{"data": name}]})
    with raises_topics(ScheduleNotFound, "schedule_not_found") as caught:
        schedules.get("nope")
    assert caught[0].detail == {"schedule": "nope"}
    assert [s.name for s in schedules.page().schedules] == ["a.two", "b.one", "b.three", "c"]
    assert [s.name for s in schedules.page(prefix="b.").schedules] == ["b.one", "b.three"]
    assert [s.name for s in schedules.page(topic="y").schedules] == ["a.two", "c"]
    assert [s.name for s in schedules.page(within=("c", "a.")).schedules] == ["a.two", "c"]
    first = schedules.page(page_size=3)
    assert len(first.schedules) == 3 and first.next_cursor is not None
    rest = schedules.page(page_size=3, cursor=first.next_cursor)
    assert [s.name for s in rest.schedules] == ["c"] and rest.next_cursor is None
    assert schedules.delete("b.one").deleted
    assert not schedules.delete("b.one").deleted  # idempotent
    clock.advance(1000)
    assert datas(engine, "x") == ["b.three"]  # a deleted schedule never runs again


def test_deleting_the_topic_removes_its_schedules(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    schedules.put("on-t", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}]})
    schedules.put("on-u", {"topic": "u", "every_ms": 1000, "records": [{"data": 1}]})
    clock.advance(1000)
    engine.delete_topic("t")
    assert schedules.topic_deleted("t") == ["on-t"]
    clock.advance(5000)
    assert engine.topic("t") is None  # not re-created by a run
    assert [s.name for s in schedules.all()] == ["on-u"]


# -- failed runs ---------------------------------------------------------------------------------


def test_a_refused_run_is_retried_and_one_append_covers_the_missed_due_times(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    engine.put_topic("full", {"cap_records": 1, "discard": "reject"})
    settle(engine)
    engine.append("full", [{"data": "first"}])
    schedules.put("s", {"topic": "full", "every_ms": 100, "records": [{"data": "tick"}]})
    clock.advance(100)
    s = schedules.get("s")
    assert s.last_error is not None and s.last_error.code == TopicFull.code
    assert s.last_error.at_ms == T0 + 100 and s.runs_total == 0
    assert s.next_run_ms == T0 + 100  # still due: nothing ran
    clock.advance(950)  # each retry comes at the next due time (sooner than the backoff)
    failures = schedules.failures_total
    assert failures == 10
    engine.delete_records("full", before_seq=2)  # room again
    clock.advance(100)
    assert datas(engine, "full") == ["tick"]  # one append for the eleven due times
    s = schedules.get("s")
    assert (s.runs_total, s.last_error, s.last_run_ms) == (1, None, T0 + 1100)
    assert s.next_run_ms == T0 + 1200
    clock.advance(100)
    assert datas(engine, "full") == ["tick"]  # full again: the next run waits


def test_retries_back_off_when_due_times_are_far_apart(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    engine.put_topic("full", {"cap_records": 1, "discard": "reject"})
    settle(engine)
    engine.append("full", [{"data": "first"}])
    schedules.put("s", {"topic": "full", "every_ms": HOUR, "records": [{"data": "tick"}]})
    clock.advance(HOUR)
    attempts = []
    for _ in range(9):
        attempts.append(schedules.get("s").attempt_ms)
        clock.set(schedules.get("s").attempt_ms or 0)
    delays = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
    assert delays[:7] == [2000, 4000, 8000, 16000, 32000, 60000, 60000]
    assert attempts[0] == T0 + HOUR + RETRY_MS[0]


def test_a_read_only_wal_does_not_stop_the_pump(clock: ManualClock) -> None:
    """A failed run (here: the storage refuses writes) is recorded and retried; other schedules
    keep running."""
    engine = Engine(clock, Limits())
    s = Schedules(engine)
    s.start()
    s.put("a", {"topic": "t", "every_ms": 1000, "records": [{"data": "a"}]})

    class ReadOnly(InMemory):
        def check_writable(self) -> None:
            raise NotReady("read-only", {"wal_read_only": True})

    engine.persistence = ReadOnly()
    clock.advance(1000)
    error = s.get("a").last_error
    assert error is not None and error.code == "not_ready"
    engine.persistence = InMemory()
    clock.advance(1000)
    assert datas(engine, "t") == ["a"] and s.get("a").last_error is None


# -- durability: restarts ------------------------------------------------------------------------


class Node:
    """A durable engine and its schedules over a data directory, restartable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = ManualClock(T0)
        self.engine: Engine
        self.schedules: Schedules
        self.store: DataDirectory | None = None

    async def open(self, start: bool = True) -> Node:
        self.engine = Engine(self.clock, Limits())
        self.schedules = Schedules(self.engine)
        self.store = DataDirectory(self.path)
        self.store.lock()
        for _ in self.store.recover(self.engine, schedules=self.schedules):
            pass
        self.store.open(self.engine, asyncio.get_running_loop())
        if start:
            self.schedules.start()
        return self

    async def flush(self) -> None:
        assert self.store is not None and self.store.wal is not None
        await self.store.wal.run_task(lambda: None)

    async def stop(self, mode: str) -> None:
        """End the run: ``crash`` (every frame written, nothing else), ``checkpoint`` (then a
        crash), ``clean`` (a clean stop without a final checkpoint)."""
        assert self.store is not None and self.store.wal is not None
        await self.flush()
        self.schedules.stop()  # the process is gone: its timers too
        if mode == "checkpoint":
            await self.store.checkpoint()
        if mode == "clean":
            self.store.close()
        else:
            assert self.store.sealer is not None
            self.store.sealer.close()
            self.store.wal.close()
            self.store.fs.close(self.store._lock_fd)  # type: ignore[arg-type]
        self.store = None

    def close(self) -> None:
        self.schedules.stop()
        if self.store is not None:
            self.store.close()
            self.store = None


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = await Node(tmp_path / "data").open()
    yield n
    n.close()


def progress(schedules: Schedules) -> dict[str, tuple[Any, ...]]:
    return {
        s.name: (s.id, s.config, s.since_ms, s.through_ms, s.last_run_ms, s.runs_total, s.next_run_ms)
        for s in schedules.all()
    }


MODES = ["crash", "checkpoint", "clean"]


@pytest.mark.parametrize("mode", MODES)
async def test_schedules_and_their_progress_survive_a_restart(node: Node, mode: str) -> None:
    s, clock = node.schedules, node.clock
    s.put("beat", {"topic": "t", "every_ms": 1000, "records": PING, "missed": "once"})
    s.put("cron", {"topic": "u", "cron": "*/5 * * * *", "records": [{"data": 1}], "node": "n"})
    s.put("gone", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}]})
    s.delete("gone")
    clock.advance(3500)
    before = progress(s)
    assert before["beat"][5] == 3
    await node.stop(mode)
    await node.open(start=False)
    assert progress(node.schedules) == before
    assert node.schedules.next_id == 4


@pytest.mark.parametrize("mode", MODES)
async def test_missed_skip_runs_nothing_for_the_downtime(node: Node, mode: str) -> None:
    node.schedules.put("s", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}]})
    node.clock.advance(2000)
    await node.stop(mode)
    node.clock.advance(10_500)  # down: due times T0+3000 .. T0+12000 pass
    await node.open()
    s = node.schedules.get("s")
    assert s.next_run_ms == T0 + 13_000 and s.runs_total == 2
    assert len(datas(node.engine, "t")) == 2
    node.clock.advance(500)
    assert [r["$ts"] for r in records(node.engine, "t")] == [T0 + 1000, T0 + 2000, T0 + 13_000]


@pytest.mark.parametrize("mode", MODES)
async def test_missed_once_runs_one_append_for_the_downtime(node: Node, mode: str) -> None:
    node.schedules.put("s", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}], "missed": "once"})
    node.clock.advance(2000)
    await node.stop(mode)
    node.clock.advance(10_500)
    await node.open()
    node.clock.advance(0)
    s = node.schedules.get("s")
    assert (s.runs_total, s.last_run_ms, s.next_run_ms) == (3, T0 + 12_000, T0 + 13_000)
    assert [r["$ts"] for r in records(node.engine, "t")] == [T0 + 1000, T0 + 2000, T0 + 12_500]
    node.clock.advance(500)
    assert len(datas(node.engine, "t")) == 4


async def test_a_due_time_never_runs_twice_when_the_run_frame_is_lost(node: Node) -> None:
    """A crash that keeps a run's append but loses its ``SCHEDULE_RUN`` frame (a power loss
    tearing the write between them) makes the due time run again at start-up: its key dedupes
    it, so the topic still holds one copy."""
    node.schedules.put("s", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}], "missed": "once"})
    node.clock.advance(1000)
    await node.stop("crash")
    last = wal_files(FileSystem(), node.path / "wal")[-1][1]
    buf = last.read_bytes()
    frames = list(wal_frames(buf, last))
    assert frames[-1].type is FrameType.SCHEDULE and frames[-2].type is FrameType.APPEND
    cut = frames[-2].end
    last.write_bytes(buf[:cut])  # the run's frame is torn away; its append survives
    node.clock.advance(100)
    await node.open()
    node.clock.advance(0)
    assert datas(node.engine, "t") == [1]  # the repeated run was deduplicated
    s = node.schedules.get("s")
    assert s.last_run_ms == T0 + 1000 and s.next_run_ms == T0 + 2000
    node.clock.advance(1000)
    assert datas(node.engine, "t") == [1, 1]


async def test_a_schedule_whose_topic_delete_survived_alone_is_dropped(node: Node) -> None:
    node.schedules.put("s", {"topic": "t", "every_ms": 1000, "records": [{"data": 1}]})
    await node.flush()
    node.engine.delete_topic("t")  # without the schedules' cascade: as if its frames were lost
    await node.stop("crash")
    await node.open()
    assert node.schedules.count == 0


# -- replay over a snapshot that already holds later frames -------------------------------------


def test_replay_of_frames_a_snapshot_already_reflects_keeps_every_index(clock: ManualClock) -> None:
    """A snapshot's LSN can stay below frames it already reflects (an ``fsync`` append still
    waiting when it was cut), so replay re-runs them on top: ``PUT a`` (id 1), ``DELETE`` 1,
    ``PUT a`` (id 2) over a snapshot holding ``a`` as id 2 ends as it started."""
    source = Schedules(Engine(clock, Limits()))
    first = source.put("a", {"topic": "t", "every_ms": MINUTE, "records": [{"data": 1}]}).schedule.payload()
    source.delete("a")
    second = source.put("a", {"topic": "t", "every_ms": MINUTE, "records": [{"data": 2}]}).schedule.payload()
    source.put("b", {"topic": "t", "every_ms": MINUTE, "records": [{"data": 3}]})
    engine = Engine(clock, Limits())
    engine.put_topic("t", {})
    replayed = Schedules(engine)
    for image in source.images():
        replayed.apply_put(image)

    def state() -> list[tuple[str, int]]:
        assert sorted(replayed._by_id) == sorted(s.id for s in replayed._by_name.values())
        assert replayed._names == sorted(replayed._by_name)
        return [(s.name, s.id) for s in replayed.all()]

    replayed.apply_put(first)
    assert state() == [("a", 1), ("b", 3)]
    replayed.apply_delete(first.id)
    assert state() == [("b", 3)]
    replayed.apply_delete(first.id)  # an id no longer present: nothing
    replayed.apply_put(second)
    replayed.finish_replay()
    assert state() == [("a", 2), ("b", 3)] and replayed.next_id == 4
    assert replayed.get("a").config == source.get("a").config


async def test_recovery_over_a_checkpoint_cut_below_a_waiting_fsync_append(node: Node) -> None:
    """The end-to-end case: the checkpoint is cut while an ``fsync`` append waits for its
    fsync, after a schedule was put, deleted and put again under the same name."""
    assert node.store is not None
    node.engine.put_topic("f", {"durability": "fsync"})
    await node.flush()
    node.engine.append("f", [{"data": 1}])  # not applied until its fsync
    s = node.schedules
    s.put("a", {"topic": "t", "every_ms": MINUTE, "records": [{"data": 1}]})
    s.delete("a")
    s.put("a", {"topic": "t", "every_ms": MINUTE, "records": [{"data": 2}]})
    await node.store.checkpoint()
    await node.stop("crash")
    await node.open()
    assert [(x.name, x.id) for x in node.schedules.all()] == [("a", 2)]
    assert node.schedules.get("a").batch == s.get("a").batch


# -- the pump's heap -----------------------------------------------------------------------------


def test_the_heap_stays_bounded_however_many_schedules_come_and_go(
    engine: Engine, schedules: Schedules, clock: ManualClock
) -> None:
    """Deleted schedules behind an earlier live one never surface: the heap is rebuilt once
    stale entries outnumber live ones, and it names schedules by id (holding none of them)."""
    schedules.put("beat", {"topic": "t", "every_ms": MINUTE, "records": [{"data": 1}]})
    for i in range(1000):
        schedules.put(f"y{i}", {"topic": "t", "cron": "@yearly", "records": [{"data": i}]})
        schedules.delete(f"y{i}")
    heap = schedules.pump._heap
    assert len(heap) <= 2 * schedules.count + COMPACT_SLACK
    assert all(isinstance(entry[2], int) for entry in heap)
    clock.advance(HOUR)
    assert datas(engine, "t") == [1] * 60
    assert len(schedules.pump._heap) <= 2 * schedules.count + COMPACT_SLACK


def test_a_re_put_for_the_same_attempt_pushes_nothing(schedules: Schedules) -> None:
    for i in range(100):  # new records, same timing: the same next due time
        schedules.put("y", {"topic": "t", "cron": "@yearly", "records": [{"data": i}]})
    assert len(schedules.pump._heap) == 1
