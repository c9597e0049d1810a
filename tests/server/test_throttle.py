"""The elastic throttle (§0.6; docs/DECISIONS.md, "The elastic throttle") on a manual clock: the
pressure signal moves the priority cutoff; below it, data-plane requests park, are admitted in
priority order as the pressure eases, or get ``429 throttled`` with ``Retry-After`` and
``detail.retry_after_ms``; ``disable_backpressure`` writes wait instead;
``performance.throttle_wait_ms`` is the time parked; probes, acks and high-priority topics are
never held; a paced watch stream gets the advisory ``event: error`` 429 frame and stays open.

The pressure is fed by hand (:meth:`Throttle.observe`), as the monitor task does from the event
loop's lag in a real server; the park deadline runs on the manual clock.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import websockets
from topics_engine import ManualClock
from topics_engine.errors import Throttled
from topics_server import throttle as throttle_module
from topics_server.throttle import (
    CUTOFF_STEP,
    DEMAND_TICKS,
    LAG_BUDGET_MS,
    MIN_ALLOWANCE,
    PARK_MS,
    TOP_MARGIN,
    Throttle,
)

from .sse_client import SseStream
from .test_watch_stream import Srv, serving, until

OVERLOAD_MS = LAG_BUDGET_MS * 4
TOP = 1000
"""The top priority (manual priorities are clamped to [-1000, 1000]; auto ones are at most it)."""


def press(t: Throttle, ticks: int = 1, competing: tuple[int, ...] = (TOP,)) -> None:
    """Samples far over the budget, with work of the ``competing`` priorities asking to run
    each tick (by default a topic at the top priority: the ceiling is its highest): the throttle
    turns on and its cutoff rises."""
    for _ in range(ticks):
        for priority in competing:
            t.admits(priority)
        t.observe(OVERLOAD_MS)


def ease(t: Throttle, ticks: int = 40) -> None:
    """Idle samples: the pressure decays, the cutoff falls and turns off."""
    for _ in range(ticks):
        t.observe(0.0)


# -- the signal and the cutoff -----------------------------------------------------------------


def test_inactive_without_pressure_and_on_at_the_budget() -> None:
    t = Throttle(ManualClock())
    t.observe(LAG_BUDGET_MS / 2)
    assert not t.active and t.admits(-1000)
    press(t, 10)
    assert t.active and t.cutoff is not None and t.cutoff > 1
    assert not t.admits(0) and t.admits(1000)


def test_the_cutoff_rises_with_sustained_pressure_and_falls_back_to_off() -> None:
    t = Throttle(ManualClock())
    press(t, 3)  # EWMA crosses 1.0 on the third sample
    first = t.cutoff
    press(t, 4)
    assert t.cutoff == (first or 0) + 4 * CUTOFF_STEP
    press(t, 100)
    assert t.cutoff == TOP - TOP_MARGIN  # the ceiling: under the top competing priority
    assert t.admits(TOP) and t.admits(TOP - TOP_MARGIN) and not t.admits(TOP - TOP_MARGIN - 1)
    ease(t, 200)
    assert not t.active


def test_the_wal_queue_depth_is_pressure_too() -> None:
    t = Throttle(ManualClock())
    for _ in range(10):
        t.observe(0.0, wal_depth=throttle_module.DEPTH_BUDGET * 3)
    assert t.active


def test_disabled_never_activates() -> None:
    t = Throttle(ManualClock(), enabled=False)
    press(t, 50)
    t.monitored, t.last_tick = True, t.last_tick - 1.0
    assert not t.active and not t.engaged() and t.admit(-1000) is None


# -- the ceiling: the top work in flight is never held --------------------------------------------


def test_under_sustained_pressure_the_only_work_is_never_held() -> None:
    # the fan-out of a read topic is all there is (its auto priority 999, or 1000 right after a
    # read): the pressure stays, yet holding that work would protect nothing above it
    t = Throttle(ManualClock())
    press(t, 200, competing=(999, TOP))
    assert t.active and t.cutoff == t.ceiling() == TOP - TOP_MARGIN
    assert t.stream_pause_ms([999]) == 0 and t.admit(999) is None
    assert t.stream_pause_ms([TOP - TOP_MARGIN]) == 0 and t.parked == 0
    t = Throttle(ManualClock())
    press(t, 200, competing=(500,))  # a manual priority alone: the same
    assert t.cutoff == 500 - TOP_MARGIN and t.admit(500) is None and t.stream_pause_ms([500]) == 0


async def test_lower_priority_work_is_still_held_below_the_top() -> None:
    t = Throttle(ManualClock())
    press(t, 200, competing=(999, 500, 0))
    assert t.cutoff == 999 - TOP_MARGIN
    assert t.admit(999) is None and t.stream_pause_ms([999]) == 0  # the top keeps going
    assert t.admit(500) is not None and t.admit(0) is not None  # what is under it waits
    assert t.stream_pause_ms([500]) == t.stream_pause_ms([0, -5]) == t.retry_after_ms() > 0


def test_background_work_alone_is_still_held() -> None:
    # the floor of the ceiling: priority < 1 is background, held so the probes get their loop
    t = Throttle(ManualClock())
    press(t, 200, competing=(0, -10))
    assert t.cutoff == 1 and not t.admits(0) and t.stream_pause_ms([0]) > 0
    assert t.admits(1)  # work above the background runs (and now competes)


async def test_when_the_top_work_leaves_the_cutoff_comes_down_to_the_next() -> None:
    t = Throttle(ManualClock())
    press(t, 100, competing=(TOP, 500))
    waiting = t.admit(500, patient=True)
    assert waiting is not None
    press(t, DEMAND_TICKS - 1, competing=(500,))  # the top was seen in the window before
    assert t.cutoff == TOP - TOP_MARGIN and not waiting.done()
    press(t, DEMAND_TICKS, competing=(500,))  # two windows without it: it no longer competes
    assert t.cutoff == 500 - TOP_MARGIN
    await asyncio.sleep(0)
    assert waiting.done() and waiting.result() >= 0  # admitted once it was the top
    assert t.admit(500) is None and t.admit(400) is not None


async def test_parked_work_that_became_the_top_is_not_held_past_a_tick() -> None:
    """Writes at 800 park under a cutoff of 950 while a reader at the top competes; once the
    reader is gone (two windows) 800 is the top: under pressure still, every 800 request is
    admitted by the next tick — the parked backlog is not drained at the allowance, where new
    arrivals would keep parking behind it and time out."""
    t = Throttle(ManualClock())
    press(t, 30)
    waiting: list[asyncio.Future[float | None]] = []
    for tick in range(2 * DEMAND_TICKS + 10):
        for _ in range(10):
            parked = t.admit(800)
            if parked is not None:
                waiting.append(parked)
        t.observe(OVERLOAD_MS)
        if tick == 0:
            assert t.parked == 10  # held while the reader at the top competes
    assert t.cutoff == 800 - TOP_MARGIN
    assert t.parked == 0 and all(w.done() and w.result() is not None for w in waiting)
    assert t.admit(800) is None and t.admit(700) is not None  # under the new top: held


# -- parking -----------------------------------------------------------------------------------


async def test_parked_requests_are_admitted_highest_priority_first() -> None:
    t = Throttle(ManualClock())
    press(t, 20)  # cutoff well above 500
    order: list[int] = []
    futures = []
    for priority in (10, 500, 200):
        future = t.admit(priority)
        assert future is not None
        future.add_done_callback(lambda f, p=priority: order.append(p))
        futures.append(future)
    assert t.parked == 3
    ease(t, 200)
    await asyncio.sleep(0)
    assert order == [500, 200, 10]
    assert all(f.result() >= 0 for f in futures)


async def test_a_parked_request_is_refused_after_the_park_deadline() -> None:
    clock = ManualClock()
    t = Throttle(clock)
    press(t, 10)
    future = t.admit(0)
    assert future is not None
    clock.advance(PARK_MS - 1)
    assert not future.done()
    clock.advance(1)
    assert future.result() is None and t.parked == 0  # refused: the caller answers 429
    refusal = t.refusal()
    detail = refusal.detail or {}
    assert 100 <= detail["retry_after_ms"] <= 5000 and detail["cutoff"] == t.cutoff


async def test_refused_requests_leave_nothing_behind() -> None:
    clock = ManualClock()
    t = Throttle(clock)
    press(t, 100)  # the cutoff at its top
    assert t.admit(TOP) is None  # the top priority runs
    keep = t.admit(900)  # a higher-priority request stays parked at the top of the heap...
    assert keep is not None
    for _ in range(20):
        futures = [t.admit(0) for _ in range(100)]
        assert all(f is not None for f in futures)
        clock.advance(PARK_MS)  # ... while the background ones under it are refused
    assert t.parked == 0 and len(t._heap) <= 200


async def test_a_backlog_is_released_a_few_at_a_time_as_the_pressure_eases() -> None:
    t = Throttle(ManualClock())
    press(t, 10)
    futures = [t.admit(0, patient=True) for _ in range(20)]
    t.cutoff, t.pressure = None, 0.0  # the pressure is gone at once
    t.observe(0.0)
    assert sum(f.done() for f in futures if f is not None) == 2 * MIN_ALLOWANCE
    t.observe(0.0)
    assert all(f is not None and f.done() for f in futures)


async def test_a_request_queues_behind_waiting_work_of_its_priority() -> None:
    t = Throttle(ManualClock())
    press(t, 10)
    assert t.admit(0, patient=True) is not None
    t.cutoff = None  # the cutoff is off but the parked request has not been admitted yet
    assert t.admit(0) is not None  # no overtaking
    assert t.admit(5) is None  # a higher priority does not wait for it


def test_a_stall_in_progress_holds_background_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # the stall is read off ``time.perf_counter``: held still here, so a descheduled test
    # process (a loaded machine) cannot make the monitor look overdue again after it ran
    now = time.perf_counter()
    monkeypatch.setattr(throttle_module, "time", SimpleNamespace(perf_counter=lambda: now))
    t = Throttle(ManualClock())
    t.last_tick -= 1.0  # the monitor's timer is a second overdue
    assert not t.engaged()  # without a monitor, there is no stall to see
    t.monitored = True
    assert t.engaged() and not t.admits(0) and t.admits(1)
    t.observe(0.0)  # the monitor ran: the stall is over
    assert not t.engaged()


async def test_a_patient_request_waits_past_the_deadline() -> None:
    clock = ManualClock()
    t = Throttle(clock)
    press(t, 10)
    future = t.admit(0, patient=True)
    assert future is not None
    clock.advance(PARK_MS * 20)
    assert not future.done()
    ease(t, 200)
    await asyncio.sleep(0)
    assert future.done() and future.result() >= 0


async def test_parking_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(throttle_module, "MAX_PARKED", 2)
    t = Throttle(ManualClock())
    press(t, 10)
    assert t.admit(0) is not None and t.admit(0) is not None
    with pytest.raises(Throttled):
        t.admit(0)
    with pytest.raises(Throttled):
        t.admit(0, patient=True)  # the bound holds for disable_backpressure writes too


async def test_a_waiter_that_goes_away_no_longer_counts() -> None:
    t = Throttle(ManualClock())
    press(t, 10)
    future = t.admit(0)
    assert future is not None and t.parked == 1
    future.cancel()  # the client disconnected
    await asyncio.sleep(0)
    assert t.parked == 0
    ease(t, 200)
    assert not t.engaged()


def test_streams_pause_only_when_every_topic_is_below_the_cutoff() -> None:
    t = Throttle(ManualClock())
    assert t.stream_pause_ms([0]) == 0
    press(t, 10)
    assert t.stream_pause_ms([0, -5]) == t.retry_after_ms() > 0
    assert t.stream_pause_ms([0, 1000]) == 0


# -- over HTTP -----------------------------------------------------------------------------------


@pytest.fixture
async def srv(clock: ManualClock) -> AsyncIterator[Srv]:
    async with serving(clock) as s:
        await s.put("bg", {"priority": -10})
        await s.put("vip", {"priority": 1000})
        yield s


async def _parked(srv: Srv, n: int = 1) -> None:
    await until(lambda: srv.ctx.throttle.parked >= n)


def _records(n: int = 1) -> dict[str, Any]:
    return {"records": [{"data": i} for i in range(n)]}


async def test_a_background_write_under_pressure_parks_then_gets_429(srv: Srv) -> None:
    press(srv.ctx.throttle, 10)
    pending = asyncio.create_task(srv.http.post("/v0/topics/bg", json=_records()))
    await _parked(srv)
    srv.clock.advance(PARK_MS)
    r = await pending
    assert r.status_code == 429, r.text
    error = r.json()["error"]
    assert error["code"] == "throttled" and error["detail"]["retry_after_ms"] >= 100
    assert int(r.headers["retry-after"]) >= 1
    head = (await srv.http.get("/v0/topics/bg")).json()["head_seq"]
    assert head == 0  # refused: nothing written


async def test_high_priority_topics_probes_and_acks_are_never_held(srv: Srv) -> None:
    press(srv.ctx.throttle, 10)
    r = await srv.http.post("/v0/topics/vip", json=_records())
    assert r.status_code == 200 and r.json()["performance"]["throttle_wait_ms"] == 0.0
    assert (await srv.http.get("/v0/health")).status_code == 200
    assert (await srv.http.get("/v0/metrics")).status_code == 200
    await srv.put("q", {"type": "queue", "priority": 1000})
    await srv.append("q", {"data": 1})
    claimed = (await srv.http.post("/v0/topics/q/claim", json={"node": "w"})).json()["claimed"]
    await srv.http.put("/v0/topics/q", json={"priority": -10})  # the queue drops to background
    r = await srv.http.post("/v0/topics/q/ack", json={"node": "w", "seqs": [claimed[0]["$seq"]]})
    assert r.status_code == 200  # acks free work: never throttled
    assert srv.ctx.throttle.parked == 0


async def test_a_parked_write_runs_when_the_pressure_eases_and_reports_its_wait(srv: Srv) -> None:
    press(srv.ctx.throttle, 10)
    pending = asyncio.create_task(srv.http.post("/v0/topics/bg", json=_records(3)))
    await _parked(srv)
    await asyncio.sleep(0.02)
    ease(srv.ctx.throttle, 200)
    r = await pending
    assert r.status_code == 200, r.text
    assert r.json()["seqs"] == [1, 2, 3]
    assert r.json()["performance"]["throttle_wait_ms"] >= 15
    # its handler ran after the transport took back Request.apply_later: applied at once
    assert (await srv.http.get("/v0/topics/bg")).json()["count"] == 3


async def test_disable_backpressure_writes_wait_instead_of_failing(srv: Srv) -> None:
    press(srv.ctx.throttle, 10)
    body = {**_records(2), "disable_backpressure": True}
    pending = asyncio.create_task(srv.http.post("/v0/topics/bg", json=body))
    await _parked(srv)
    srv.clock.advance(PARK_MS * 10)
    await asyncio.sleep(0.05)
    assert not pending.done()
    ease(srv.ctx.throttle, 200)
    r = await pending
    assert r.status_code == 200 and r.json()["seqs"] == [1, 2]
    assert r.json()["performance"]["throttle_wait_ms"] > 0


async def test_reads_are_throttled_by_the_topics_priority_too(srv: Srv) -> None:
    await srv.append("bg", {"data": 1})
    press(srv.ctx.throttle, 10)
    pending = asyncio.create_task(srv.http.post("/v0/topics/bg/diff", json={"from_seq": 0}))
    await _parked(srv)
    srv.clock.advance(PARK_MS)
    assert (await pending).status_code == 429
    assert (await srv.http.post("/v0/topics/vip/diff", json={"from_seq": 0})).status_code == 200


async def test_a_paced_watch_stream_gets_the_advisory_frame_and_stays_open(srv: Srv) -> None:
    wid, stream = await srv.stream({"topics": {"bg": {"from_seq": 0}}})
    try:
        assert (await stream.next()).event == "caught-up"  # type: ignore[union-attr]
        press(srv.ctx.throttle, 10)
        srv.ctx.engine.append("bg", [{"data": "x"}])  # (over HTTP the write itself would park)
        frame = await stream.next()
        assert frame is not None and frame.event == "error", frame
        advisory = frame.json()
        assert advisory["code"] == 429 and advisory["topics"] == ["bg"]
        assert advisory["retry_after_ms"] == srv.ctx.throttle.retry_after_ms()
        srv.clock.advance(advisory["retry_after_ms"])  # the pause ends on the engine clock
        record = await stream.next()
        assert record is not None and record.event == "record"
    finally:
        stream.close()


async def test_a_paced_work_stream_gets_the_advisory_frame_and_still_delivers(srv: Srv) -> None:
    await srv.put("jobs", {"type": "queue", "priority": -10})
    srv.ctx.engine.append("jobs", [{"data": "job"}])
    press(srv.ctx.throttle, 10)
    stream = await SseStream.open(srv.port, "/v0/topics/jobs/work?node=w&max=1")
    try:
        assert stream.status == 200
        first = await stream.next()
        assert first is not None and first.retry == 2000
        frame = await stream.next()
        while frame is not None and frame.event is None:  # the opening heartbeat comment
            frame = await stream.next()
        assert frame is not None and frame.event == "error", frame
        advisory = frame.json()
        assert advisory["code"] == 429 and advisory["retry_after_ms"] == srv.ctx.throttle.retry_after_ms()
        srv.clock.advance(advisory["retry_after_ms"])
        job = await stream.next()
        assert job is not None and job.event == "job" and job.json()["data"] == "job"
    finally:
        stream.close()


async def test_a_gzip_disable_backpressure_write_waits_too(srv: Srv) -> None:
    press(srv.ctx.throttle, 10)
    body = gzip.compress(orjson.dumps({**_records(1), "disable_backpressure": True}))
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    pending = asyncio.create_task(srv.http.post("/v0/topics/bg", content=body, headers=headers))
    await _parked(srv)
    srv.clock.advance(PARK_MS * 10)
    await asyncio.sleep(0.05)
    assert not pending.done()
    ease(srv.ctx.throttle, 200)
    assert (await pending).status_code == 200


async def test_a_websocket_publish_below_the_cutoff_is_refused_at_once(srv: Srv) -> None:
    async with websockets.connect(f"ws://127.0.0.1:{srv.port}/v0/ws") as ws:
        press(srv.ctx.throttle, 10)

        async def publish(topic: str, **extra: Any) -> Any:
            command = {"op": "publish", "request_id": topic, "topic": topic, **_records(1), **extra}
            await ws.send(orjson.dumps(command).decode())
            return orjson.loads(await ws.recv())

        refused = await publish("bg")
        assert refused["op"] == "error" and refused["code"] == "throttled", refused
        assert (await publish("vip"))["op"] == "ack"
        assert (await publish("bg", disable_backpressure=True))["op"] == "ack"


async def _no_advisory_until_a_record(stream: SseStream) -> None:
    """Read ``stream`` up to its next record frame; an advisory 429 (a paced stream) fails."""
    while True:
        frame = await stream.next()
        assert frame is not None and frame.event != "error", frame
        if frame.event == "record":
            return


async def _fan_out_round(srv: Srv, streams: list[SseStream]) -> None:
    """One tick-group of a sustained fan-out under pressure: the pressure stays over the budget
    for a few ticks, 100 ms pass (the topic's auto priority falls from 1000 to 998), one record
    is written to ``feed`` over HTTP — admitted at once, never parked — and every watcher gets
    it without an advisory (not paced)."""
    throttle = srv.ctx.throttle
    press(throttle, 4, competing=())  # the work itself competes: the write and the streams
    srv.clock.advance(100)
    pending = asyncio.create_task(srv.http.post("/v0/topics/feed", json=_records()))
    try:
        await until(lambda: pending.done() or throttle.parked > 0)
        assert throttle.parked == 0, f"the write to the top topic parked at cutoff {throttle.cutoff}"
        r = await pending
    finally:
        pending.cancel()
    assert r.status_code == 200 and r.json()["performance"]["throttle_wait_ms"] == 0.0, r.text
    for stream in streams:
        await _no_advisory_until_a_record(stream)


async def _watchers(srv: Srv, topic: str, n: int) -> list[SseStream]:
    return [(await srv.stream({"topics": {topic: {"tail": True}}}))[1] for _ in range(n)]


async def test_sustained_pressure_does_not_pace_the_fan_out_of_a_read_topic(srv: Srv) -> None:
    await srv.put("feed")  # auto priority: its watchers read it
    streams = await _watchers(srv, "feed", 3)
    try:
        for _ in range(30):  # 120 pressured ticks: the cutoff would have climbed past 1000
            await _fan_out_round(srv, streams)
        throttle = srv.ctx.throttle
        assert throttle.active and throttle.cutoff == throttle.ceiling() > 900
        assert throttle.refused == 0
    finally:
        for stream in streams:
            stream.close()


async def test_lower_priority_work_under_a_read_topics_fan_out_is_still_held(srv: Srv) -> None:
    await srv.put("feed")
    await srv.put("mid", {"priority": 500})
    streams = await _watchers(srv, "feed", 2)
    (below,) = await _watchers(srv, "mid", 1)
    try:
        for _ in range(30):
            await _fan_out_round(srv, streams)
        throttle = srv.ctx.throttle
        assert throttle.cutoff is not None and throttle.cutoff > 500
        pending = asyncio.create_task(srv.http.post("/v0/topics/mid", json=_records()))
        await _parked(srv)
        srv.clock.advance(PARK_MS)
        assert (await pending).status_code == 429  # the write under the top waits, then 429
        srv.ctx.engine.append("mid", [{"data": "x"}])
        frame = await below.next()
        while frame is not None and frame.event not in ("error", "record"):
            frame = await below.next()
        assert frame is not None and frame.event == "error", frame  # its watcher is paced
        assert frame.json()["topics"] == ["mid"]
        await _fan_out_round(srv, streams)  # while the top keeps going
    finally:
        for stream in [*streams, below]:
            stream.close()
