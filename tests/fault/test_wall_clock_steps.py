"""Wall-clock steps under a real ``topics serve`` (docs/DECISIONS.md, "Clock steps").

The server runs under libfaketime (Debian's ``faketime`` package; ``scripts/setup.sh``
installs it): ``LD_PRELOAD`` of ``libfaketime.so.1`` with ``FAKETIME_TIMESTAMP_FILE`` and
``FAKETIME_NO_CACHE=1``, so the test steps the process's wall clock (``CLOCK_REALTIME``:
Python's ``time.time_ns``) by rewriting a file while the server runs; ``DONT_FAKE_MONOTONIC=1``
leaves ``CLOCK_MONOTONIC`` (the event loop's timers, the engine's steady clock) alone, as a real
step (NTP, an operator, a resumed VM) does. The steps: back an hour, forward a day, and back.

- ``$ts`` never goes backwards within a topic, also across a ``kill -9`` and restart while the
  clock is stepped back;
- a lease neither expires on a forward step nor lives an hour longer on a backward one; nor
  does a nack's delay or a write's delay;
- a watch session outlives a forward step of a day (its TTL is elapsed idleness);
- TTL expiry follows ``$ts``: a forward step ages every record by the step;
- a schedule keeps one run per due time: a forward step makes the next due time run once
  (the due times skipped over are covered by that one run), a backward step runs nothing
  again.

Nothing here asserts how long anything took: the tests poll for conditions. A property of the
form "X does not happen before an hour has passed" is checked right after the step — well
inside the hour (and inside the lease, delay or session TTL the test chose) — or, for the
schedule, over an observation window of a few of its intervals.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from topics_engine.schedules.pump import MAX_SLEEP_MS

from tests.server.processes import ServerProcess

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
HOUR_S = 3600
DAY_S = 24 * HOUR_S
HOUR = HOUR_S * 1000
DAY = DAY_S * 1000
PATIENCE_S = 60.0
"""How long a poll waits for a condition (far less than the hour a broken step would add)."""


def _libfaketime() -> Path:
    """The library, or skip — but never in CI, where ``scripts/setup.sh`` installs it."""
    if not LIBFAKETIME.exists() or shutil.which("faketime") is None:
        reason = "libfaketime is not installed (scripts/setup.sh installs Debian's faketime when run as root)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the clock-step tests")
        pytest.skip(reason)
    return LIBFAKETIME


class WallClock:
    """The server's wall-clock offset, in a file libfaketime reads on every clock call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset_s = 0
        self.set(0)

    def set(self, offset_s: int) -> None:
        """Step the server's wall clock to real time + ``offset_s`` (atomically: a reader
        never sees half a file)."""
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"{offset_s:+d}\n")
        os.replace(tmp, self.path)
        self.offset_s = offset_s

    def step(self, by_s: int) -> None:
        self.set(self.offset_s + by_s)

    def now_ms(self) -> int:
        """The server's wall clock as the test sees it now (real time + offset)."""
        return time.time_ns() // 1_000_000 + self.offset_s * 1000

    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(_libfaketime()),
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "DONT_FAKE_MONOTONIC": "1",
            "NO_FAKE_STAT": "1",
        }


@pytest.fixture
def wall(tmp_path: Path) -> WallClock:
    _libfaketime()
    return WallClock(tmp_path / "faketime.rc")


@pytest.fixture
def server(tmp_path: Path, wall: WallClock) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data", env=wall.env()) as proc:
        yield proc


@pytest.fixture
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10.0) as client:
        yield client


def _ok(response: httpx.Response, status: int | None = None) -> dict[str, Any]:
    assert response.status_code in ((200, 201) if status is None else (status,)), response.text
    body: dict[str, Any] = response.json()
    return body


def _put(api: httpx.Client, topic: str, **config: Any) -> None:
    r = api.put(f"/v0/topics/{topic}", json=config)
    assert r.status_code in (200, 201), r.text


def _append(api: httpx.Client, topic: str, *records: dict[str, Any]) -> dict[str, Any]:
    return _ok(api.post(f"/v0/topics/{topic}", json={"records": list(records)}))


def _records(api: httpx.Client, topic: str) -> list[dict[str, Any]]:
    body = _ok(api.post(f"/v0/topics/{topic}/diff", json={"from_seq": 0, "limit": 1000}))
    out: list[dict[str, Any]] = body["records"]
    return out


def _claim(api: httpx.Client, node: str, lease_ms: int = 60_000, q: str = "q") -> list[dict[str, Any]]:
    body = _ok(api.post(f"/v0/topics/{q}/claim", json={"node": node, "max": 100, "lease_ms": lease_ms}))
    claimed: list[dict[str, Any]] = body["claimed"]
    return claimed


def _poll(condition: Callable[[], Any], what: str, patience_s: float = PATIENCE_S) -> Any:
    """Poll until ``condition()`` is truthy (returns it); fail after ``patience_s``."""
    give_up = time.monotonic() + patience_s
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > give_up:
            raise AssertionError(f"not within {patience_s} s: {what}")
        time.sleep(0.05)


def test_libfaketime_steps_the_servers_wall_clock(api: httpx.Client, wall: WallClock) -> None:
    """The mechanism itself: the server's ``$ts`` follows the file while it runs."""
    before = wall.now_ms()
    _append(api, "probe", {"data": 0})
    wall.step(DAY_S)
    before_step = wall.now_ms()
    _append(api, "probe", {"data": 1})
    after = wall.now_ms()
    ts = [r["$ts"] for r in _records(api, "probe")]
    assert before <= ts[0] < before_step - DAY + 1000
    assert before_step <= ts[1] <= after


def test_ts_never_goes_backwards_across_steps_and_a_restart(
    api: httpx.Client, wall: WallClock, server: ServerProcess
) -> None:
    _put(api, "t", durability="fsync")
    n = 0

    def write(k: int) -> None:
        nonlocal n
        for _ in range(k):
            _append(api, "t", {"data": n})
            n += 1

    write(5)
    last_real = _records(api, "t")[-1]["$ts"]
    wall.step(-HOUR_S)
    write(5)  # stepped back: held at the last $ts
    assert all(ts >= last_real for ts in [r["$ts"] for r in _records(api, "t")][-5:])
    server.kill()  # kill -9 while stepped back; restart still stepped back
    server.start()
    write(5)
    wall.step(DAY_S + HOUR_S)  # forward a day
    before = wall.now_ms()
    write(5)
    wall.set(0)  # and back a day
    write(5)
    ts = [r["$ts"] for r in _records(api, "t")]
    assert len(ts) == 25
    assert ts == sorted(ts), ts
    assert all(t >= last_real for t in ts[5:15])  # after the backward step and the restart
    assert all(t >= before for t in ts[15:])  # the day ahead, and held there after the step back


def test_a_lease_neither_expires_on_a_forward_step_nor_outlives_a_backward_one(
    api: httpx.Client, wall: WallClock
) -> None:
    _put(api, "q", type="queue")
    _append(api, "q", {"data": "a"}, {"data": "b"})
    (a,) = _ok(api.post("/v0/topics/q/claim", json={"node": "w1", "max": 1, "lease_ms": 60_000}))["claimed"]
    wall.step(DAY_S)
    assert [j["$seq"] for j in _claim(api, "w2", lease_ms=2_000)] == [2]  # a's lease holds
    leases = _ok(api.get("/v0/topics/q/leases", params={"node": "w1"}))["leases"]
    assert [(x["seq"], x["lease_id"]) for x in leases] == [(a["$seq"], a["lease_id"])]
    assert leases[0]["deadline"] >= a["deadline"] + DAY - 1000  # reported on the stepped clock
    wall.step(-DAY_S - HOUR_S)  # back: b's 2 s lease must not last an hour more
    again = _poll(lambda: _claim(api, "w3"), "b reclaimable after its 2 s lease")
    assert [(j["$seq"], j["deliveries"]) for j in again] == [(2, 2)]
    assert _ok(api.post("/v0/topics/q/ack", json={"node": "w1", "seqs": [1]}))["acked"] == 1


def test_nack_delays_are_elapsed_time(api: httpx.Client, wall: WallClock) -> None:
    _put(api, "q", type="queue")
    _append(api, "q", {"data": "a"}, {"data": "b"})
    _claim(api, "w1")
    _ok(api.post("/v0/topics/q/nack", json={"node": "w1", "seqs": [1], "delay_ms": 60_000}))
    _ok(api.post("/v0/topics/q/nack", json={"node": "w1", "seqs": [2], "delay_ms": 1_000}))
    wall.step(DAY_S)
    got = _poll(lambda: _claim(api, "w2"), "job 2 claimable after its 1 s delay")
    assert [j["$seq"] for j in got] == [2]  # job 1's minute is not over: the step does not count
    wall.step(-DAY_S - HOUR_S)
    _ok(api.post("/v0/topics/q/nack", json={"node": "w2", "seqs": [2], "delay_ms": 1_000}))
    got = _poll(lambda: _claim(api, "w3"), "job 2 claimable after its 1 s delay, stepped back")
    assert [j["$seq"] for j in got] == [2]


def test_write_delays_are_elapsed_time(api: httpx.Client, wall: WallClock) -> None:
    _put(api, "q", type="queue")
    _append(api, "q", {"data": "a", "delay_ms": 60_000}, {"data": "b", "delay_ms": 1_000})
    wall.step(DAY_S)
    got = _poll(lambda: _claim(api, "w1"), "b claimable after its 1 s delay")
    assert [j["$seq"] for j in got] == [2]
    state = _ok(api.get("/v0/topics/q", params={"touch": "false"}))
    assert state["queue"]["delayed"] == 1  # a: a day on the wall clock is not its minute
    wall.step(-DAY_S - HOUR_S)
    _append(api, "q", {"data": "c", "delay_ms": 1_000})
    got = _poll(lambda: _claim(api, "w1"), "c claimable after its 1 s delay, stepped back")
    assert [j["$seq"] for j in got] == [3]


def test_a_watch_session_outlives_a_forward_step(api: httpx.Client, wall: WallClock) -> None:
    _append(api, "t", {"data": 1})
    session = _ok(api.post("/v0/watch", json={"topics": {"t": {}}}))
    assert session["session_ttl_ms"] < DAY
    wall.step(DAY_S)
    _append(api, "t", {"data": 2})  # a request: the server's idle-session GC runs on each create
    _ok(api.post("/v0/watch", json={"topics": {"t": {}}}))
    with api.stream("GET", session["stream_url"], headers={"accept": "text/event-stream"}) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data:") and '"$seq"' in line:
                break


def test_ttl_follows_ts_across_steps(api: httpx.Client, wall: WallClock) -> None:
    _put(api, "t", ttl_ms=36 * HOUR)
    _append(api, "t", {"data": "a"})
    wall.step(DAY_S)
    _append(api, "t", {"data": "b"})
    assert [r["data"] for r in _records(api, "t")] == ["a", "b"]  # a is a day old: within 36 h
    wall.step(DAY_S)
    assert [r["data"] for r in _records(api, "t")] == ["b"]  # a is two days old by $ts
    wall.set(-HOUR_S)  # back two days and an hour: b stays, nothing new expires
    _append(api, "t", {"data": "c"})
    got = _records(api, "t")
    assert [r["data"] for r in got] == ["b", "c"]
    assert got[1]["$ts"] >= got[0]["$ts"]


def _schedule(api: httpx.Client) -> dict[str, Any]:
    return _ok(api.get("/v0/schedules/tick"))


def test_a_schedule_runs_once_per_due_time_across_steps(
    api: httpx.Client, wall: WallClock, server: ServerProcess
) -> None:
    _put(api, "ticks", durability="fsync")
    r = api.put("/v0/schedules/tick", json={"topic": "ticks", "every_ms": 1000, "records": [{"data": 1}]})
    assert r.status_code == 201, r.text
    seen: list[int] = []

    def runs(at_least: int) -> dict[str, Any] | None:
        s = _schedule(api)
        if s["last_run_ms"] is not None and (not seen or s["last_run_ms"] != seen[-1]):
            seen.append(s["last_run_ms"])
        return s if s["runs_total"] >= at_least else None

    _poll(lambda: runs(2), "two runs")
    wall.step(DAY_S)
    stepped = wall.now_ms() - 1000
    _poll(lambda: (s := runs(0)) and s["last_run_ms"] >= stepped and s, "a run after the forward step")
    wall.step(-HOUR_S)
    ahead = _schedule(api)  # read after the step: a run due a second on may not slip in between
    # an observation window of a few intervals: due times an hour ahead, nothing runs again
    window = time.monotonic() + 3.0
    while time.monotonic() < window:
        s = _schedule(api)
        assert s["runs_total"] == ahead["runs_total"] and s["last_run_ms"] == ahead["last_run_ms"], s
        time.sleep(0.2)
    server.stop()  # and a restart while stepped back changes nothing of that
    server.start()
    s = _schedule(api)
    assert s["runs_total"] == ahead["runs_total"] and s["last_run_ms"] == ahead["last_run_ms"]
    assert s["next_run_ms"] > wall.now_ms()
    # the wall clock back where it was: the schedule goes on once the pump looks at the wall
    # clock again (its timer was armed at the start for at most MAX_SLEEP_MS)
    wall.step(HOUR_S)
    _poll(lambda: runs(ahead["runs_total"] + 2), "runs resumed", MAX_SLEEP_MS / 1000 + PATIENCE_S)

    def settled() -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """The schedule and the topic's records, read with no run in between, once every run's
        record is readable (``fsync``: visible once durable, a little after the run counts)."""
        before, records, after = _schedule(api), _records(api, "ticks"), _schedule(api)
        if before["runs_total"] == after["runs_total"] == len(records):
            return before, records
        return None

    # one run per due time: none deduplicated (a run fired twice for one due time would count
    # twice and leave one record, for ever)
    final, records = _poll(settled, "a record for every run")
    runs(0)
    assert seen == sorted(set(seen)), seen  # the due times seen run: strictly increasing
    ts = [r["$ts"] for r in records]
    assert ts == sorted(ts)
