"""§10.8 ``GET /v0/topics/:q/work`` — the PUSH-mode SSE stream, against a real ``topics serve``
subprocess (httpx's ASGI transport buffers whole responses, so it cannot read an endless
stream). Frames are read incrementally off the socket.

Covered: SSE headers, ``retry: 2000`` + ``: hb <ms>`` at open, ``event: job`` frames (``id:`` =
``$seq``, data = claimed job + ``topic``), the max in-flight bound and refill on ack/nack,
release-on-disconnect of exactly this connection's deliveries, establishment errors
(400/404/406/409 as JSON envelopes) and the terminal ``event: error`` on topic deletion.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.crash_harness import ServerProcess
from tests.server.processes import NO_THROTTLE
from tests.server.sse_client import SseFrame as Frame
from tests.server.sse_client import assert_event_conforms
from tests.server.sse_client import parse_frame as _parse

SSE = {"accept": "text/event-stream"}
QUIET_S = 0.6  # "no further frame" windows: the server pushes within milliseconds
_names = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("work-stream")
    # without the elastic throttle: a loaded machine's would pace the streams (advisory 429
    # frames, pauses) and refuse claims, which these tests of the stream itself must not meet
    proc = ServerProcess(root / "data", root / "server.log", NO_THROTTLE)
    proc.start()
    try:
        asyncio.run(proc.wait_ready())
        yield proc.base
    finally:
        proc.kill()


@pytest.fixture
async def http(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server, timeout=10.0) as c:
        yield c


def _name(prefix: str = "wq") -> str:
    return f"{prefix}{next(_names)}"


# ---------------------------------------------------------------------------------------------
# an incremental SSE reader
# ---------------------------------------------------------------------------------------------


class Frames:
    """Reads SSE frames off a streaming response as they arrive."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.aiter_raw()
        self._pending: asyncio.Future[bytes] | None = None  # never cancelled: that would close the stream
        self._buf = ""
        self.eof = False

    async def _chunk(self, timeout: float) -> bytes | None:
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._chunks.__anext__())
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if not done:
            raise TimeoutError
        pending, self._pending = self._pending, None
        try:
            return pending.result()
        except StopAsyncIteration:
            return None

    async def next(self, timeout: float = 5.0) -> Frame | None:
        """The next frame; None at end of stream. Raises TimeoutError if none arrives in time."""
        deadline = time.monotonic() + timeout
        while "\n\n" not in self._buf:
            if self.eof:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no SSE frame within {timeout}s (buffered {self._buf!r})")
            try:
                chunk = await self._chunk(remaining)
            except TimeoutError:
                raise TimeoutError(f"no SSE frame within {timeout}s (buffered {self._buf!r})") from None
            if chunk is None:
                self.eof = True
                continue
            self._buf += chunk.decode().replace("\r\n", "\n")
        block, self._buf = self._buf.split("\n\n", 1)
        return _parse(block)

    async def job(self, timeout: float = 5.0) -> Frame:
        """The next job frame (skipping heartbeats)."""
        while True:
            frame = await self.next(timeout)
            assert frame is not None, "stream ended while waiting for a job"
            if frame.event == "job":
                return frame
            assert frame.event is None and frame.comments, f"unexpected frame {frame.raw!r}"

    async def jobs(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        return [(await self.job(timeout)).json() for _ in range(n)]

    async def quiet(self, seconds: float = QUIET_S) -> None:
        """No job / error frame arrives for ``seconds`` (heartbeat comments are allowed)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                frame = await self.next(left)
            except TimeoutError:
                return
            assert frame is not None, "stream ended unexpectedly"
            assert frame.event is None and frame.comments, f"unexpected frame {frame.raw!r}"


@asynccontextmanager
async def work(
    base: str, topic: str, headers: dict[str, str] | None = None, **params: Any
) -> AsyncIterator[tuple[httpx.Response, Frames]]:
    """Open /work; leaving the block drops the connection (a clean client close)."""
    timeout = httpx.Timeout(10.0, read=None)
    async with (
        httpx.AsyncClient(base_url=base, timeout=timeout) as c,
        c.stream("GET", f"/v0/topics/{topic}/work", params=params, headers=headers or SSE) as r,
    ):
        yield r, Frames(r)


async def opened(frames: Frames) -> None:
    """Consume the ``retry: 2000`` and initial heartbeat sent at open."""
    first = await frames.next()
    assert first is not None and first.retry == 2000, first
    hb = await frames.next()
    assert hb is not None and hb.comments and hb.comments[0].startswith("hb"), hb


# ---------------------------------------------------------------------------------------------
# helpers on the POST API
# ---------------------------------------------------------------------------------------------


async def _queue(http: httpx.AsyncClient, name: str, **config: Any) -> None:
    r = await http.put(f"/v0/topics/{name}", json={"type": "queue", **config})
    assert r.status_code == 201, r.text


async def _produce(http: httpx.AsyncClient, name: str, n: int, **extra: Any) -> list[int]:
    r = await http.post(
        f"/v0/topics/{name}", json={"records": [{"data": {"i": i}, **extra} for i in range(n)]}
    )
    assert r.status_code in (200, 201), r.text
    return list(r.json()["seqs"])


async def _post(http: httpx.AsyncClient, name: str, op: str, **body: Any) -> dict[str, Any]:
    r = await http.post(f"/v0/topics/{name}/{op}", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


COUNTERS = ("ready", "in_flight", "dead_lettered")
"""The queue counters of §10.7 (the health fields are checked in ``test_queues_http``)."""


async def _queue_state(http: httpx.AsyncClient, name: str) -> dict[str, Any]:
    r = await http.get(f"/v0/topics/{name}", params={"touch": "false"})
    assert r.status_code == 200, r.text
    queue = r.json()["queue"]
    return {name: queue[name] for name in COUNTERS}


# ---------------------------------------------------------------------------------------------
# opening the stream
# ---------------------------------------------------------------------------------------------


async def test_headers_retry_and_initial_heartbeat(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    before = time.time_ns() // 1_000_000
    async with work(server, q, node="w1") as (r, frames):
        assert r.status_code == 200
        assert r.headers["content-type"].split(";")[0].strip() == "text/event-stream"
        assert r.headers["cache-control"] == "no-store"
        assert r.headers["x-accel-buffering"] == "no"
        first = await frames.next()
        assert first is not None and first.retry == 2000 and first.event is None and first.id is None
        hb = await frames.next()
        assert hb is not None and hb.id is None and hb.event is None and hb.data is None
        word, ms = hb.comments[0].split()
        assert word == "hb" and before - 1000 <= int(ms) <= time.time_ns() // 1_000_000 + 1000
        await frames.quiet()  # an empty queue pushes nothing


async def test_job_frame_is_a_claimed_job_plus_topic(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    r = await http.post(
        f"/v0/topics/{q}",
        json={"records": [{"data": {"type": "resize"}, "tag": "job-1", "meta": {"trace": "z9"}}]},
    )
    [seq] = r.json()["seqs"]
    async with work(server, q, node="w1", lease_ms=45_000) as (_, frames):
        await opened(frames)
        t0 = time.time_ns() // 1_000_000
        frame = await frames.job()
        assert frame.event == "job" and frame.id == str(seq)
        assert_event_conforms(frame, "WorkEvent")
        job = frame.json()
        assert job["topic"] == q and job["$seq"] == seq
        assert job["data"] == {"type": "resize"} and job["$tag"] == "job-1" and job["meta"] == {"trace": "z9"}
        assert job["deliveries"] == 1 and isinstance(job["$ts"], int)
        assert job["lease_id"].startswith("lease_") and len(job["lease_id"]) > len("lease_")
        assert abs(job["deadline"] - (t0 + 45_000)) < 2_000
        assert await _queue_state(http, q) == {"ready": 0, "in_flight": 1, "dead_lettered": 0}
        # the lease is the worker node's: it acks through the POST API
        ack = await _post(http, q, "ack", node="w1", seqs=[seq], lease_ids=[job["lease_id"]])
        assert ack["acked"] == 1 and ack["in_flight"] == 0


async def test_jobs_appended_later_are_pushed(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    async with work(server, q, node="w1", max=4) as (_, frames):
        await opened(frames)
        await frames.quiet(0.3)
        seqs = await _produce(http, q, 2)
        got = await frames.jobs(2, timeout=2.0)
        assert [j["$seq"] for j in got] == seqs


# ---------------------------------------------------------------------------------------------
# backpressure and refill
# ---------------------------------------------------------------------------------------------


async def test_max_in_flight_bound_and_refill_on_ack(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    seqs = await _produce(http, q, 5)
    async with work(server, q, node="w1", max=2) as (_, frames):
        await opened(frames)
        # exactly two job frames, back to back (no heartbeat between them), then nothing
        first, second = await frames.next(), await frames.next()
        assert first is not None and second is not None
        assert (first.event, second.event) == ("job", "job"), (first.raw, second.raw)
        assert [first.json()["$seq"], second.json()["$seq"]] == seqs[:2]
        await frames.quiet()
        assert await _queue_state(http, q) == {"ready": 3, "in_flight": 2, "dead_lettered": 0}
        # an ack frees one slot: exactly one refill
        await _post(http, q, "ack", node="w1", seqs=[seqs[0]])
        [third] = await frames.jobs(1, timeout=2.0)
        assert third["$seq"] == seqs[2]
        await frames.quiet()
        # two acks: two refills
        await _post(http, q, "ack", node="w1", seqs=[seqs[1], seqs[2]])
        rest = await frames.jobs(2, timeout=2.0)
        assert sorted(j["$seq"] for j in rest) == seqs[3:]
        await _post(http, q, "ack", node="w1", seqs=seqs[3:])
        await frames.quiet()  # drained
        assert await _queue_state(http, q) == {"ready": 0, "in_flight": 0, "dead_lettered": 0}


async def test_a_queue_cap_is_shared_by_claims_and_streams(server: str, http: httpx.AsyncClient) -> None:
    """``max_in_flight`` bounds the jobs leased at once over every consumer: a stream waiting for
    room gets jobs as another consumer's ack frees it, and at once when the cap is raised."""
    q = _name()
    await _queue(http, q, max_in_flight=2)
    seqs = await _produce(http, q, 5)
    claimed = await _post(http, q, "claim", node="poller", max=5)
    assert [j["$seq"] for j in claimed["claimed"]] == seqs[:2]  # the room, not max
    async with work(server, q, node="w1", max=3) as (_, frames):
        await opened(frames)
        await frames.quiet()  # no room: nothing pushed
        await _post(http, q, "ack", node="poller", seqs=[seqs[0]])
        assert (await frames.job()).json()["$seq"] == seqs[2]  # room freed by another's ack
        await frames.quiet()
        r = await http.put(f"/v0/topics/{q}", json={"max_in_flight": 4})
        assert r.status_code == 200 and r.json()["config"]["max_in_flight"] == 4
        assert [job["$seq"] for job in await frames.jobs(2)] == seqs[3:5]
        # the poller's seqs[1] and the stream's three
        assert await _queue_state(http, q) == {"ready": 0, "in_flight": 4, "dead_lettered": 0}


async def test_a_deleted_leased_job_makes_room_under_the_cap(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q, max_in_flight=1, lease_ms=3_600_000)
    seqs = await _produce(http, q, 2)
    claimed = await _post(http, q, "claim", node="poller")
    assert [j["$seq"] for j in claimed["claimed"]] == seqs[:1]
    async with work(server, q, node="w1", max=2) as (_, frames):
        await opened(frames)
        await frames.quiet()  # no room for an hour
        r = await http.post(f"/v0/topics/{q}/delete", json={"before_seq": seqs[1]})
        assert r.status_code == 200 and r.json()["deleted"] == 1, r.text
        assert (await frames.job()).json()["$seq"] == seqs[1]  # the lease went with its job


async def test_nack_refills_and_redelivers(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    [seq] = await _produce(http, q, 1)
    async with work(server, q, node="w1", max=1) as (_, frames):
        await opened(frames)
        [job] = await frames.jobs(1)
        assert job["$seq"] == seq and job["deliveries"] == 1
        nack = await _post(http, q, "nack", node="w1", seqs=[seq])
        assert nack["nacked"] == 1
        [again] = await frames.jobs(1, timeout=2.0)
        assert again["$seq"] == seq and again["deliveries"] == 2
        assert again["lease_id"] != job["lease_id"]


async def test_expired_lease_is_refilled_on_the_stream(server: str, http: httpx.AsyncClient) -> None:
    """Expiry is lazy, but the stream looks again at its earliest deadline."""
    q = _name()
    await _queue(http, q)
    [seq] = await _produce(http, q, 1)
    async with work(server, q, node="w1", max=1, lease_ms=300) as (_, frames):
        await opened(frames)
        [job] = await frames.jobs(1)
        [again] = await frames.jobs(1, timeout=2.0)
        assert again["$seq"] == seq and again["deliveries"] == job["deliveries"] + 1


async def test_delayed_nack_is_pushed_when_it_comes_due(server: str, http: httpx.AsyncClient) -> None:
    """A delayed retry is pushed at its due time, not at the next heartbeat (15 s)."""
    q = _name()
    await _queue(http, q)
    [seq] = await _produce(http, q, 1)
    async with work(server, q, node="w1", max=1) as (_, frames):
        await opened(frames)
        [job] = await frames.jobs(1)
        t0 = time.monotonic()
        await _post(http, q, "nack", node="w1", seqs=[seq], delay_ms=400)
        [again] = await frames.jobs(1, timeout=3.0)
        assert again["$seq"] == seq and again["deliveries"] == job["deliveries"] + 1
        assert 0.35 <= time.monotonic() - t0 < 3.0


async def test_delayed_write_is_pushed_when_it_comes_due(server: str, http: httpx.AsyncClient) -> None:
    """A job appended with ``delay_ms`` reaches an open stream at its due time — never before
    (the undelayed job written with it comes at once)."""
    q = _name()
    await _queue(http, q)
    async with work(server, q, node="w1", max=5) as (_, frames):
        await opened(frames)
        r = await http.post(
            f"/v0/topics/{q}", json={"records": [{"data": "later", "delay_ms": 500}, {"data": "now"}]}
        )
        assert r.status_code == 200, r.text
        later, now = r.json()["seqs"]
        diff = await http.post(f"/v0/topics/{q}/diff", json={})
        due_ms = diff.json()["records"][0]["$ts"] + 500
        [first] = await frames.jobs(1)
        assert first["$seq"] == now
        [job] = await frames.jobs(1, timeout=10.0)
        assert job["$seq"] == later and job["$delay_ms"] == 500 and job["deliveries"] == 1
        assert time.time() * 1000 >= due_ms - 50  # the server's clock is this machine's


async def test_another_nodes_expired_lease_is_pushed(server: str, http: httpx.AsyncClient) -> None:
    """A job whose lease another node let lapse reaches an idle stream at the expiry."""
    q = _name()
    await _queue(http, q)
    [seq] = await _produce(http, q, 1)
    [claimed] = (await _post(http, q, "claim", node="poller", lease_ms=400))["claimed"]
    async with work(server, q, node="w1", max=1) as (_, frames):
        await opened(frames)
        [job] = await frames.jobs(1, timeout=3.0)
        assert job["$seq"] == seq and job["deliveries"] == claimed["deliveries"] + 1


# ---------------------------------------------------------------------------------------------
# release-on-disconnect
# ---------------------------------------------------------------------------------------------


async def _claim_until(http: httpx.AsyncClient, q: str, node: str, within_s: float) -> list[dict[str, Any]]:
    end = time.monotonic() + within_s
    while True:
        body = await _post(http, q, "claim", node=node, max=10)
        if body["claimed"] or time.monotonic() > end:
            return list(body["claimed"])
        await asyncio.sleep(0.02)


async def test_disconnect_releases_the_streams_leases_at_once(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    [seq] = await _produce(http, q, 1)
    async with work(server, q, node="A", lease_ms=60_000) as (_, frames):
        await opened(frames)
        [job] = await frames.jobs(1)
        assert job["$seq"] == seq
        assert (await _post(http, q, "claim", node="B"))["count"] == 0  # held by A
    t0 = time.monotonic()
    claimed = await _claim_until(http, q, "B", within_s=1.0)
    assert [j["$seq"] for j in claimed] == [seq], "not released on disconnect (a 60 s lease)"
    assert time.monotonic() - t0 < 1.5
    assert claimed[0]["deliveries"] == 2 and claimed[0]["lease_id"] != job["lease_id"]
    # A's lease is gone: its late ack is skipped
    late = await _post(http, q, "ack", node="A", seqs=[seq])
    assert late["acked"] == 0 and late["skipped"] == [seq]


async def test_disconnect_keeps_leases_from_a_separate_claim_poll(
    server: str, http: httpx.AsyncClient
) -> None:
    q = _name()
    await _queue(http, q)
    polled_seq, pushed_seq = await _produce(http, q, 2)
    polled = await _post(http, q, "claim", node="A", lease_ms=60_000)
    assert [j["$seq"] for j in polled["claimed"]] == [polled_seq]
    async with work(server, q, node="A", lease_ms=60_000, max=5) as (_, frames):
        await opened(frames)
        [job] = await frames.jobs(1)
        assert job["$seq"] == pushed_seq
        await frames.quiet(0.3)
    claimed = await _claim_until(http, q, "B", within_s=1.0)
    assert [j["$seq"] for j in claimed] == [pushed_seq]
    await asyncio.sleep(0.2)
    assert (await _post(http, q, "claim", node="B", max=10))["count"] == 0
    assert await _queue_state(http, q) == {"ready": 0, "in_flight": 2, "dead_lettered": 0}
    # the polled lease still belongs to A
    ack = await _post(
        http, q, "ack", node="A", seqs=[polled_seq], lease_ids=[polled["claimed"][0]["lease_id"]]
    )
    assert ack["acked"] == 1 and ack["skipped"] == []


async def test_disconnect_releases_only_this_connections_deliveries(
    server: str, http: httpx.AsyncClient
) -> None:
    """Two streams of the same node: dropping one leaves the other's leases in place."""
    q = _name()
    await _queue(http, q)
    s1, s2 = await _produce(http, q, 2)
    async with work(server, q, node="A", lease_ms=60_000) as (_, keep):
        await opened(keep)
        [kept] = await keep.jobs(1)
        async with work(server, q, node="A", lease_ms=60_000) as (_, drop):
            await opened(drop)
            [dropped] = await drop.jobs(1)
        assert {kept["$seq"], dropped["$seq"]} == {s1, s2}
        claimed = await _claim_until(http, q, "B", within_s=1.0)
        assert [j["$seq"] for j in claimed] == [dropped["$seq"]]
        await asyncio.sleep(0.2)
        assert (await _post(http, q, "claim", node="B"))["count"] == 0
        await keep.quiet(0.2)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


async def _establish(
    http: httpx.AsyncClient, path: str, params: dict[str, str] | None = None, headers: dict[str, str] = SSE
) -> tuple[int, str, Any]:
    """Status, content type and (for a JSON reply) body of opening /work — never blocks on a
    stream that was opened where an error was expected."""
    async with http.stream("GET", path, params=params, headers=headers) as r:
        ctype = r.headers.get("content-type", "")
        if not ctype.startswith("application/json"):
            return r.status_code, ctype, None
        return r.status_code, ctype, json.loads(await r.aread())


async def _assert_refused(
    http: httpx.AsyncClient,
    path: str,
    status: int,
    code: str,
    params: dict[str, str] | None = None,
    headers: dict[str, str] = SSE,
) -> None:
    got, ctype, body = await _establish(http, path, params, headers)
    assert (got, ctype.split(";")[0]) == (status, "application/json"), (got, ctype, body)
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


async def test_establishment_errors_are_json_envelopes(server: str, http: httpx.AsyncClient) -> None:
    q, log = _name(), _name("log")
    await _queue(http, q)
    await http.post(f"/v0/topics/{log}", json={"records": [{"data": 1}]})
    path = f"/v0/topics/{q}/work"
    await _assert_refused(http, path, 400, "invalid_request")  # no node
    await _assert_refused(http, path, 400, "invalid_request", {"node": ""})
    await _assert_refused(http, path, 400, "invalid_request", {"node": "w", "max": "lots"})
    await _assert_refused(http, path, 400, "invalid_request", {"node": "w", "max": "-1"})
    await _assert_refused(http, path, 400, "invalid_request", {"node": "w", "lease_ms": "soon"})
    await _assert_refused(http, "/v0/topics/nowhere/work", 404, "topic_not_found", {"node": "w"})
    await _assert_refused(http, f"/v0/topics/{log}/work", 409, "not_a_queue", {"node": "w"})
    assert (await http.get("/v0/topics/nowhere")).status_code == 404  # never auto-created
    assert await _queue_state(http, q) == {"ready": 0, "in_flight": 0, "dead_lettered": 0}
    # curl's default Accept: */* admits text/event-stream
    async with work(server, q, headers={"accept": "*/*"}, node="w") as (r, frames):
        assert r.status_code == 200
        await opened(frames)


@pytest.mark.parametrize("accept", ["application/json", "text/html, application/xml;q=0.9"])
async def test_accept_without_event_stream_is_406(http: httpx.AsyncClient, accept: str) -> None:
    q = _name()
    await _queue(http, q)
    await _produce(http, q, 1)
    await _assert_refused(
        http, f"/v0/topics/{q}/work", 406, "not_acceptable", {"node": "w"}, {"accept": accept}
    )
    # nothing was leased by the refused request
    await asyncio.sleep(0.1)
    assert await _queue_state(http, q) == {"ready": 1, "in_flight": 0, "dead_lettered": 0}


async def test_topic_is_checked_before_the_streams_own_parameters(http: httpx.AsyncClient) -> None:
    """OpenAPI work_stream: 404/409 for the topic are answered before 400 and 406."""
    log = _name("log")
    await http.put(f"/v0/topics/{log}", json={})
    await _assert_refused(http, "/v0/topics/nowhere/work", 404, "topic_not_found")
    await _assert_refused(http, f"/v0/topics/{log}/work", 409, "not_a_queue")
    await _assert_refused(
        http, "/v0/topics/nowhere/work", 404, "topic_not_found", {"node": "w"}, {"accept": "application/json"}
    )
    await _assert_refused(
        http, f"/v0/topics/{log}/work", 409, "not_a_queue", {"node": "w"}, {"accept": "application/json"}
    )


async def test_topic_deleted_while_streaming_ends_with_an_error_frame(
    server: str, http: httpx.AsyncClient
) -> None:
    q = _name()
    await _queue(http, q)
    await _produce(http, q, 1)
    async with work(server, q, node="w1", max=2, lease_ms=60_000) as (_, frames):
        await opened(frames)
        await frames.jobs(1)
        assert (await http.delete(f"/v0/topics/{q}")).status_code == 200
        frame = await frames.next(timeout=3.0)
        assert frame is not None and frame.event == "error", frame
        error = frame.json()
        assert error["code"] == 404 and error["topic"] == q and isinstance(error["error"], str)
        assert await frames.next(timeout=3.0) is None  # terminal: the stream ends


async def test_topic_deleted_while_idle_ends_the_stream(server: str, http: httpx.AsyncClient) -> None:
    q = _name()
    await _queue(http, q)
    async with work(server, q, node="w1") as (_, frames):
        await opened(frames)
        assert (await http.delete(f"/v0/topics/{q}")).status_code == 200
        frame = await frames.next(timeout=3.0)
        assert frame is not None and frame.event == "error" and frame.json()["code"] in (404, 409), frame
        assert await frames.next(timeout=3.0) is None
