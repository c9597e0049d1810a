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
from topics_server.throttle import CUTOFF_STEP, LAG_BUDGET_MS, MIN_ALLOWANCE, PARK_MS, Throttle

from .sse_client import SseStream
from .test_watch_stream import Srv, serving, until

OVERLOAD_MS = LAG_BUDGET_MS * 4


def press(t: Throttle, ticks: int = 1) -> None:
    """Samples far over the budget: the throttle turns on and its cutoff rises."""
    for _ in range(ticks):
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
    assert t.cutoff == min(1000, (first or 0) + 4 * CUTOFF_STEP)
    press(t, 100)
    assert t.cutoff == 1000 and t.admits(1000)  # the top priority is never held
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
    assert t.admit(1000) is None  # the top priority runs
    keep = t.admit(999)  # a higher-priority request stays parked at the top of the heap...
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
