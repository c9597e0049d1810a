"""``topics.Worker`` against a real server: acks, retries, dead-lettering, lease extension and
loss, parallelism, push and poll, graceful shutdown (SIGTERM in a child process)."""

from __future__ import annotations

import asyncio
import doctest
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import topics
import topics.worker
from topics import Backoff, Job, Retry, Worker, WorkerStats

from tests.server.processes import ServerProcess

MODES = ["push", "poll"]


def stats(**counts: int) -> WorkerStats:
    return WorkerStats(**counts)


@pytest.fixture
def queue(client: topics.Client, name: Callable[[str], str]) -> Callable[..., str]:
    """``queue(n_jobs, **config)``: a fresh queue holding jobs ``0..n-1``."""

    def make(jobs: int = 0, **config: Any) -> str:
        q = name("wq")
        client.create_topic(q, type="queue", **config)
        if jobs:
            client.append_many(q, [{"data": i} for i in range(jobs)])
        return q

    return make


def in_thread(fn: Callable[[], WorkerStats]) -> tuple[threading.Thread, list[WorkerStats]]:
    out: list[WorkerStats] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# -- no server ---------------------------------------------------------------------------------


def test_backoff_policies_follow_the_delivery_count() -> None:
    exp = Backoff.exponential(base_ms=100, max_ms=1000, jitter=0)
    assert [exp.delay_ms(n) for n in range(1, 7)] == [100, 200, 400, 800, 1000, 1000]
    assert exp.delay_ms(10_000) == 1000 and exp.delay_ms(0) == 100
    lin = Backoff.linear(50, 200, jitter=0)
    assert [lin.delay_ms(n) for n in range(1, 6)] == [50, 100, 150, 200, 200]
    assert Backoff.linear(30, 1000, base_ms=10, jitter=0).delay_ms(3) == 70
    assert {Backoff.fixed(500, jitter=0).delay_ms(n) for n in range(1, 5)} == {500}
    # jitter only shortens, never past the cap
    jittered = [
        Backoff.exponential(1000, 4000, jitter=0.5).delay_ms(n) for n in (1, 3, 9) for _ in range(200)
    ]
    assert all(500 <= d <= 4000 for d in jittered) and len(set(jittered)) > 10
    assert Backoff.exponential() == Backoff("exponential", 1000, 60_000, 0, 0.2)
    with pytest.raises(ValueError):
        Backoff.fixed(-1)
    with pytest.raises(ValueError):
        Backoff.exponential(jitter=1.5)


def test_retry_and_stream_path() -> None:
    assert Retry(delay_ms=10).delay_ms == 10 and Retry().delay_ms is None
    assert isinstance(Retry(), Exception) and str(Retry(reason="later")) == "later"
    with pytest.raises(ValueError):
        Retry(delay_ms=-1)
    assert topics.worker.work_stream_path("a b/c:d") == "/v0/topics/a%20b%2Fc%3Ad/work"


def test_arguments_are_checked(client: topics.Client) -> None:
    with pytest.raises(TypeError):
        Worker("http://x", "q", print)
    for kwargs in ({"concurrency": 0}, {"lease_ms": 50}, {"mode": "pull"}, {"shutdown_grace_s": -1}):
        with pytest.raises(ValueError):
            Worker(client, "q", print, **kwargs)
    node = Worker(client, "q", print).node
    assert node.count("-") >= 2 and node != Worker(client, "q", print).node


# -- drain -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_drain_with_a_sync_handler_acks_every_job(
    mode: str, client: topics.Client, queue: Callable[..., str]
) -> None:
    q = queue(20)
    seen: list[int] = []
    result = Worker(client, q, lambda job: seen.append(job.data), concurrency=3, mode=mode).drain(
        timeout_s=20
    )
    assert result == stats(processed=20)
    assert sorted(seen) == list(range(20))
    state = client.topic(q)
    assert state.count == 0 and state.queue == topics.QueueCounters(0, 0, 0)


@pytest.mark.parametrize("mode", MODES)
async def test_drain_async_with_an_async_handler(
    mode: str, aclient: topics.AsyncClient, queue: Callable[..., str]
) -> None:
    q = queue(10)
    seen: list[int] = []

    async def handle(job: Job) -> None:
        await asyncio.sleep(0.01)
        seen.append(job.data)

    worker = Worker(aclient, q, handle, concurrency=4, mode=mode)
    assert await worker.drain_async(timeout_s=20) == stats(processed=10)
    assert sorted(seen) == list(range(10)) and worker.stats == stats(processed=10)
    assert (await aclient.topic(q)).count == 0


@pytest.mark.parametrize("mode", MODES)
def test_retry_nacks_with_its_delay(mode: str, client: topics.Client, queue: Callable[..., str]) -> None:
    q = queue(3)
    calls: dict[int, list[tuple[int, float]]] = {}

    def handle(job: Job) -> None:
        calls.setdefault(job.data, []).append((job.deliveries, time.monotonic()))
        if job.deliveries == 1:
            raise Retry(delay_ms=400)

    started = time.monotonic()
    result = Worker(client, q, handle, concurrency=3, mode=mode).drain(timeout_s=20)
    assert result == stats(processed=3, retried=3)
    for attempts in calls.values():
        assert [d for d, _ in attempts] == [1, 2]
        assert attempts[1][1] - attempts[0][1] >= 0.38  # came back after the delay, not before
    # push mode claims the due job itself: no wait for the stream's 15 s heartbeat
    assert time.monotonic() - started < 3
    assert client.topic(q).count == 0


@pytest.mark.parametrize("mode", MODES)
def test_failures_end_in_the_dead_letter_topic_and_redrive_brings_them_back(
    mode: str, client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    dlq = name("dlq")
    q = queue(4, max_deliveries=2, dead_letter=dlq)
    fast = Backoff.fixed(50, jitter=0)

    def broken(job: Job) -> None:
        raise ValueError(f"cannot do {job.data}")

    failing = Worker(client, q, broken, concurrency=2, mode=mode, backoff=fast)
    assert failing.drain(timeout_s=20) == stats(failed=8, retried=4, dead_lettered=4)
    state = client.topic(q)
    assert state.count == 0 and state.queue is not None and state.queue.dead_lettered == 4
    assert sorted(r.data for r in client.read(dlq)) == [0, 1, 2, 3]

    assert client.redrive(dlq) == 4
    seen: list[int] = []
    fixed = Worker(client, q, lambda job: seen.append(job.data), concurrency=2, mode=mode, backoff=fast)
    assert fixed.drain(timeout_s=20) == stats(processed=4)
    assert sorted(seen) == [0, 1, 2, 3] and client.topic(q).count == 0 and client.topic(dlq).count == 0


def test_a_retry_on_the_last_delivery_is_dead_lettered(
    client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    q = queue(1, max_deliveries=1, dead_letter=name("dlq"))

    def later(job: Job) -> None:
        raise Retry(delay_ms=60_000)  # no wait: the server moves it at the next claim

    started = time.monotonic()
    assert Worker(client, q, later, mode="poll").drain(timeout_s=10) == stats(dead_lettered=1)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("mode", MODES)
def test_a_permanent_failure_goes_to_the_dead_letter_topic_at_once(
    mode: str, client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    """``topics.Permanent`` and the ``permanent=`` exception types skip the remaining deliveries:
    the job is moved now, with the reason in its meta; other failures are retried as before."""
    dlq = name("dlq")
    q = queue(3, max_deliveries=5, dead_letter=dlq)

    def handle(job: Job) -> None:
        if job.data == 0:
            raise topics.Permanent("not a PNG")
        if job.data == 1:
            raise KeyError("width")

    worker = Worker(client, q, handle, mode=mode, permanent=(KeyError,), backoff=Backoff.fixed(50, jitter=0))
    assert worker.drain(timeout_s=20) == stats(processed=1, failed=2, dead_lettered=2)
    moved = {r.data: r.meta for r in client.read(dlq)}
    assert set(moved) == {0, 1}
    assert moved[0]["$dead_letter_reason"] == "not a PNG" and moved[0]["$dead_letter_deliveries"] == 1
    assert moved[1]["$dead_letter_reason"] == "KeyError: 'width'"
    assert client.topic(q).queue == topics.QueueCounters(0, 0, 2)


def test_a_permanent_failure_without_a_dead_letter_topic_is_retried(
    client: topics.Client, queue: Callable[..., str]
) -> None:
    q = queue(1)
    attempts: list[int] = []

    def handle(job: Job) -> None:
        attempts.append(job.deliveries)
        if len(attempts) < 2:
            raise topics.Permanent("no dead-letter topic to take it")

    worker = Worker(client, q, handle, mode="poll", backoff=Backoff.fixed(50, jitter=0))
    assert worker.drain(timeout_s=20) == stats(processed=1, failed=1, retried=1)
    assert attempts == [1, 2]


def test_permanent_must_list_exception_types(client: topics.Client) -> None:
    with pytest.raises(TypeError, match="permanent"):
        Worker(client, "q", lambda job: None, permanent=(ValueError, "oops"))  # type: ignore[arg-type]


# -- leases ------------------------------------------------------------------------------------


def test_a_lost_lease_is_never_acked(client: topics.Client, queue: Callable[..., str]) -> None:
    """No auto-extension, a handler slower than its lease: another node takes the job; the
    worker's result is discarded (its fenced ack is skipped) and the other node completes it."""
    q = queue(1)
    started, finish = threading.Event(), threading.Event()

    def slow(job: Job) -> None:
        started.set()
        finish.wait(10)

    worker = Worker(client, q, slow, mode="poll", lease_ms=300, auto_extend=False)
    thread, out = in_thread(worker.run)
    assert started.wait(10)
    time.sleep(0.45)  # the lease ran out
    stolen = client.claim(q, "thief", lease_ms=10_000)
    assert [j.deliveries for j in stolen] == [2]
    finish.set()
    wait_for(lambda: worker.stats.lost == 1)
    assert client.topic(q).queue == topics.QueueCounters(
        ready=0, in_flight=1, dead_lettered=0, holders=[topics.QueueHolder("thief", 1)]
    )
    assert client.ack(q, "thief", stolen).acked == 1  # the worker's ack did not take it
    worker.stop()
    thread.join(10)
    assert out == [stats(lost=1)]
    assert client.topic(q).count == 0


@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_extension_cancels_an_async_handler(
    mode: str, aclient: topics.AsyncClient, queue: Callable[..., str]
) -> None:
    q = queue(1)
    first = asyncio.Event()
    outcomes: list[str] = []

    async def handle(job: Job) -> None:
        if job.deliveries > 1:
            outcomes.append("redelivered")
            return
        first.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            raise

    worker = Worker(aclient, q, handle, mode=mode, lease_ms=600)
    drain = asyncio.create_task(worker.drain_async(timeout_s=15))
    await asyncio.wait_for(first.wait(), 10)
    # the lease is taken away under the worker (as an operator or a lease expiry would)
    assert (await aclient.nack(q, worker.node, [1])).nacked == 1
    result = await drain
    assert outcomes == ["cancelled", "redelivered"]
    assert result == stats(processed=1, lost=1)


@pytest.mark.parametrize("mode", MODES)
def test_leases_are_extended_while_the_handler_runs(
    mode: str, client: topics.Client, queue: Callable[..., str], server: ServerProcess
) -> None:
    q = queue(1)
    deliveries: list[int] = []
    running = threading.Event()

    def long_job(job: Job) -> None:
        deliveries.append(job.deliveries)
        running.set()
        time.sleep(1.2)  # three leases long

    stolen: list[Job] = []
    done = threading.Event()

    def thief() -> None:
        running.wait(10)
        with topics.Client(server.url) as other:
            while not done.is_set():
                stolen.extend(other.claim(q, "thief", max=5))
                time.sleep(0.05)

    spy = threading.Thread(target=thief, daemon=True)
    spy.start()
    try:
        result = Worker(client, q, long_job, mode=mode, lease_ms=400).drain(timeout_s=15)
    finally:
        done.set()
        spy.join(5)
    assert result == stats(processed=1)
    assert deliveries == [1] and stolen == []


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_concurrency_runs_handlers_in_parallel(
    kind: str, client: topics.Client, queue: Callable[..., str]
) -> None:
    q = queue(8)
    lock = threading.Lock()
    active, peak = [0], [0]

    def enter() -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])

    def leave() -> None:
        with lock:
            active[0] -= 1

    def sync_handler(job: Job) -> None:
        enter()
        time.sleep(0.4)
        leave()

    async def async_handler(job: Job) -> None:
        enter()
        await asyncio.sleep(0.4)
        leave()

    handler = sync_handler if kind == "sync" else async_handler
    started = time.monotonic()
    assert Worker(client, q, handler, concurrency=4).drain(timeout_s=20) == stats(processed=8)
    assert peak[0] == 4
    assert time.monotonic() - started < 0.4 * 8 / 2  # two rounds of four, not eight in a row


# -- run / stop --------------------------------------------------------------------------------


def test_run_serves_until_stopped_from_another_thread(
    client: topics.Client, queue: Callable[..., str]
) -> None:
    q = queue()
    seen: list[int] = []
    worker = Worker(client, q, lambda job: seen.append(job.data), concurrency=2)
    thread, out = in_thread(worker.run)
    client.append_many(q, [{"data": i} for i in range(5)])
    wait_for(lambda: worker.stats.processed == 5)
    client.append(q, 99)
    wait_for(lambda: worker.stats.processed == 6)
    worker.stop()
    thread.join(10)
    assert not thread.is_alive() and out == [stats(processed=6)]
    assert sorted(seen) == [0, 1, 2, 3, 4, 99] and client.topic(q).count == 0


def test_stop_before_run_returns_at_once_and_the_worker_can_run_again(
    client: topics.Client, queue: Callable[..., str]
) -> None:
    q = queue(2)
    worker = Worker(client, q, lambda job: None)
    worker.stop()
    assert worker.run() == stats()
    assert client.topic(q).count == 2
    assert worker.drain(timeout_s=10) == stats(processed=2)


async def test_run_async_and_stop_from_a_handler(
    aclient: topics.AsyncClient, queue: Callable[..., str]
) -> None:
    q = queue(3)

    async def handle(job: Job) -> None:
        if job.data == 1:
            worker.stop()
            await asyncio.sleep(0.1)  # finishes within the grace: still acked

    worker = Worker(aclient, q, handle, mode="poll")
    result = await asyncio.wait_for(worker.run_async(), 10)
    assert result.processed >= 2 and result.released == 0 and result.lost == 0
    assert (await aclient.topic(q)).count == 3 - result.processed
    with pytest.raises(RuntimeError):
        worker.drain()  # inside a running loop: use drain_async


async def test_a_graceful_only_stop_never_hurries(
    aclient: topics.AsyncClient, queue: Callable[..., str]
) -> None:
    """``stop(hurry=False)`` after a ``stop()`` leaves the running handlers their grace; before
    one it is not counted: the next ``stop()`` is still graceful, the one after hurries."""
    gate, both = asyncio.Event(), asyncio.Event()
    started: list[int] = []
    cancelled: list[int] = []

    async def handle(job: Job) -> None:
        started.append(job.data)
        if len(started) == 2:
            both.set()
        try:
            await gate.wait()
        except asyncio.CancelledError:
            cancelled.append(job.data)
            raise

    async def two_running(*hurries: bool) -> tuple[Worker, asyncio.Task[WorkerStats]]:
        """A run with both its jobs in the handler, then ``stop(hurry=…)`` for each of ``hurries``."""
        for reset in (started.clear, gate.clear, both.clear):
            reset()
        q = queue(2)
        worker = Worker(aclient, q, handle, concurrency=2, mode="poll", shutdown_grace_s=60)
        run = asyncio.create_task(worker.run_async())
        await asyncio.wait_for(both.wait(), 10)
        for hurry in hurries:
            worker.stop(hurry=hurry)
        await aclient.topic(q)  # a round trip to the server: a hurry would have cancelled them by now
        return worker, run

    _, run = await two_running(True, False)
    assert cancelled == []
    gate.set()
    assert await asyncio.wait_for(run, 10) == stats(processed=2)

    worker, run = await two_running(False, True)
    assert cancelled == []  # the stop() after the graceful-only one is the first
    worker.stop()  # the second: the handlers are released now
    assert await asyncio.wait_for(run, 10) == stats(released=2)
    assert sorted(cancelled) == [0, 1]

    idle = Worker(aclient, queue(1), handle)
    idle.stop(hurry=False)  # before the run: it returns at once, as after a stop()
    assert await asyncio.wait_for(idle.run_async(), 10) == stats()


@pytest.mark.parametrize("mode", MODES)
def test_a_stop_leaves_nothing_leased(mode: str, client: topics.Client, queue: Callable[..., str]) -> None:
    """The running job finishes and is acked; the jobs not started (claimed, or pushed by the
    stream after the stop) are handed back at once."""
    q = queue(6)
    started = threading.Event()

    def handle(job: Job) -> None:
        started.set()
        time.sleep(0.3)

    worker = Worker(client, q, handle, mode=mode, concurrency=2, lease_ms=30_000)
    thread, out = in_thread(worker.run)
    assert started.wait(10)
    worker.stop()
    thread.join(10)
    [result] = out
    assert result.processed in (1, 2) and result.lost == result.failed == result.retried == 0
    # the server notices a closed /work stream asynchronously: allow it a moment (not a lease)
    wait_for(lambda: _counters(client.topic(q).queue) == (6 - result.processed, 0, 0, []), timeout=2)


def test_drain_timeout_raises(client: topics.Client, queue: Callable[..., str]) -> None:
    q = queue(1)
    client.claim(q, "someone-else", lease_ms=10_000)  # in flight elsewhere: never drained here
    with pytest.raises(TimeoutError):
        Worker(client, q, lambda job: None).drain(timeout_s=0.5)


def test_a_missing_queue_or_a_log_is_an_error(client: topics.Client, name: Callable[[str], str]) -> None:
    with pytest.raises(topics.TopicNotFound):
        Worker(client, name("missing"), print).drain(timeout_s=5)
    log_topic = name("log")
    client.create_topic(log_topic)
    with pytest.raises(topics.NotAQueue):
        Worker(client, log_topic, print).drain(timeout_s=5)


class NoWorkRoute(httpx.AsyncHTTPTransport):
    """A server without ``/work`` (an older one, or a proxy refusing streams)."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__()
        self.status, self.code = status, code
        self.stream_attempts = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/work"):
            self.stream_attempts += 1
            return httpx.Response(
                self.status, json={"error": {"code": self.code, "message": "no", "detail": {}}}
            )
        return await super().handle_async_request(request)


@pytest.mark.parametrize(
    ("status", "code"), [(404, "not_found"), (405, "method_not_allowed"), (406, "not_acceptable")]
)
async def test_auto_mode_falls_back_to_polling(
    status: int, code: str, server: ServerProcess, queue: Callable[..., str]
) -> None:
    q = queue(5)
    transport = NoWorkRoute(status, code)
    async with topics.AsyncClient(server.url, transport=transport) as aclient:
        assert await Worker(aclient, q, lambda job: None).drain_async(timeout_s=10) == stats(processed=5)
        assert transport.stream_attempts == 1
        with pytest.raises(topics.TopicsError) as err:
            await Worker(aclient, q, lambda job: None, mode="push").drain_async(timeout_s=10)
        assert err.value.status == status


class DroppedWorkStream(httpx.AsyncHTTPTransport):
    """``/work`` opens (``retry: 20``) and ends at once, every time: a proxy cutting streams."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[float] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/work"):
            self.opened.append(time.monotonic())
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, content=b"retry: 20\n\n")
        return await super().handle_async_request(request)


async def test_a_stream_that_opened_resets_the_reconnect_backoff(
    server: ServerProcess, queue: Callable[..., str]
) -> None:
    """Each drop of a stream that had opened waits the server's ``retry:`` delay again; only
    reconnects that fail in a row double it (a long-lived worker is not slowed by old drops)."""
    q = queue()
    transport = DroppedWorkStream()
    async with topics.AsyncClient(server.url, transport=transport) as aclient:
        worker = Worker(aclient, q, lambda job: None, mode="push")
        run = asyncio.create_task(worker.run_async())
        deadline = time.monotonic() + 10
        while len(transport.opened) < 8:
            assert time.monotonic() < deadline and not run.done()
            await asyncio.sleep(0.01)
        worker.stop()
        assert await asyncio.wait_for(run, 10) == stats()
    gaps = [b - a for a, b in zip(transport.opened, transport.opened[1:], strict=False)]
    assert max(gaps[:7]) < 0.2, gaps  # 20 ms each, not 20 · 2^n ms


def test_a_second_run_is_refused_and_closes_its_private_client(
    client: topics.Client, queue: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[topics.AsyncClient] = []
    closed: list[topics.AsyncClient] = []

    class Tracked(topics.AsyncClient):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        async def close(self) -> None:
            closed.append(self)
            await super().close()

    monkeypatch.setattr(topics.worker, "AsyncClient", Tracked)
    worker = Worker(client, queue(), lambda job: None)
    thread, out = in_thread(worker.run)
    wait_for(lambda: worker._session is not None)
    with pytest.raises(RuntimeError, match="already running"):
        worker.drain(timeout_s=5)
    assert len(made) == 2 and closed == [made[1]]
    worker.stop()
    thread.join(10)
    assert out == [stats()] and closed == [made[1], made[0]]


def test_signal_handlers_are_restored_and_foreign_ones_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    restore = topics.worker._install_signals(lambda: None)
    assert all(signal.getsignal(sig) is not before[sig] for sig in before)
    restore()
    assert {sig: signal.getsignal(sig) for sig in before} == before
    # a handler installed outside Python reads as None and cannot be put back: not replaced
    real = signal.getsignal
    monkeypatch.setattr(signal, "getsignal", lambda sig: None if sig == signal.SIGTERM else real(sig))
    restore = topics.worker._install_signals(lambda: None)
    try:
        assert (
            real(signal.SIGTERM) is before[signal.SIGTERM]
            and real(signal.SIGINT) is not before[signal.SIGINT]
        )
    finally:
        restore()
    assert real(signal.SIGINT) is before[signal.SIGINT]


# -- SIGTERM in a child process ----------------------------------------------------------------

CHILD = """
import asyncio, sys, time, topics
queue, mode, kind, seconds, grace = sys.argv[1:6]

def sync_handler(job):
    print("started", job.seq, flush=True)
    time.sleep(float(seconds))

async def async_handler(job):
    print("started", job.seq, flush=True)
    await asyncio.sleep(float(seconds))

handler = sync_handler if kind == "sync" else async_handler
worker = topics.Worker(
    topics.Client(), queue, handler, mode=mode, lease_ms=30_000, shutdown_grace_s=float(grace)
)
s = worker.run()
print("stats", s.processed, s.released, s.lost, flush=True)
"""


def start_child(server: ServerProcess, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, TOPICS_URL=server.url)
    env.pop("TOPICS_API_KEY", None)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_line(proc: subprocess.Popen[str], timeout: float = 10.0) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the child printed nothing"
    return proc.stdout.readline().strip()


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(5)


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_finishes_the_running_job_within_the_grace(
    mode: str,
    server: ServerProcess,
    client: topics.Client,
    queue: Callable[..., str],
    children: list[subprocess.Popen[str]],
) -> None:
    q = queue(1)
    child = start_child(server, q, mode, "sync", "0.6", "10")
    children.append(child)
    assert read_line(child) == "started 1"
    child.send_signal(signal.SIGTERM)
    assert child.wait(10) == 0, child.stderr.read() if child.stderr else ""
    assert read_line(child) == "stats 1 0 0"  # processed, released, lost
    assert client.topic(q).count == 0


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_releases_a_job_still_running_after_the_grace(
    mode: str,
    server: ServerProcess,
    client: topics.Client,
    queue: Callable[..., str],
    children: list[subprocess.Popen[str]],
) -> None:
    q = queue(1)
    child = start_child(server, q, mode, "async", "30", "0.3")
    children.append(child)
    assert read_line(child) == "started 1"
    child.send_signal(signal.SIGTERM)
    assert child.wait(10) == 0, child.stderr.read() if child.stderr else ""
    assert read_line(child) == "stats 0 1 0"
    # claimable at once, not after its 30 s lease (the server notices a closed stream
    # asynchronously: allow it a moment)
    claimed: list[Job] = []

    def claim() -> bool:
        claimed.extend(client.claim(q, "next-worker"))
        return bool(claimed)

    wait_for(claim, timeout=2)
    assert [(j.seq, j.deliveries) for j in claimed] == [(1, 2)]


# -- docstrings --------------------------------------------------------------------------------


def test_docstring_examples_run(
    make_server: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server()
    monkeypatch.setenv("TOPICS_URL", server.url)
    monkeypatch.delenv("TOPICS_API_KEY", raising=False)
    with topics.Client() as client:
        finder = doctest.DocTestFinder(exclude_empty=True)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        tests = finder.find(topics.worker, extraglobs={"client": client, "topics": topics})
        assert len(tests) >= 8
        for test in tests:
            runner.run(test)
        result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed (output above)"
    for public in (Worker, Backoff, Retry, WorkerStats):
        assert public.__doc__ and ">>>" in public.__doc__


def _counters(queue: topics.QueueCounters | None) -> tuple[int, int, int, list[topics.QueueHolder]] | None:
    """A queue's §10.7 counters and who holds leases (its other health fields move with time)."""
    return None if queue is None else (queue.ready, queue.in_flight, queue.dead_lettered, queue.holders)


@pytest.mark.parametrize("mode", MODES)
def test_rate_limit_spaces_the_job_starts(
    mode: str, client: topics.Client, queue: Callable[..., str]
) -> None:
    """At most ``rate_limit`` starts a second after a burst of one second's worth: 12 jobs at
    4 a second take at least (12 - 4) / 4 = 2 s, however fast the machine."""
    q = queue(12)
    starts: list[float] = []
    worker = Worker(
        client, q, lambda job: starts.append(time.monotonic()), concurrency=4, mode=mode, rate_limit=4
    )
    assert worker.drain(timeout_s=30) == stats(processed=12)
    starts.sort()
    assert starts[-1] - starts[0] >= 2.0 - 0.2
    for i in range(len(starts)):  # k starts take at least (k - 4) / 4 s: the bucket's bound,
        for j in range(i + 5, len(starts)):  # less a margin for a thread that starts late
            assert starts[j] - starts[i] >= (j - i + 1 - 4) / 4 - 0.2, (i, j, starts)


def test_rate_limit_must_be_positive(client: topics.Client) -> None:
    with pytest.raises(ValueError, match="rate_limit"):
        Worker(client, "q", lambda job: None, rate_limit=0)


# -- the circuit breaker ---------------------------------------------------------------------------


class Flaky:
    """A handler failing its first ``fails`` calls (a downstream service that is down), then
    succeeding; it records when each call started."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.calls: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, job: Job) -> None:
        with self.lock:
            self.calls.append(time.monotonic())
            failing = len(self.calls) <= self.fails
        if failing:
            raise ConnectionError("the service is down")


@pytest.mark.parametrize("mode", MODES)
def test_the_breaker_opens_after_failures_in_a_row_and_a_probe_closes_it(
    mode: str, client: topics.Client, queue: Callable[..., str]
) -> None:
    q = queue(5)
    handler = Flaky(fails=3)
    breaker = topics.CircuitBreaker(threshold=3, cooldown_s=0.6)
    worker = Worker(
        client, q, handler, mode=mode, backoff=Backoff.fixed(20, jitter=0), circuit_breaker=breaker
    )
    result = worker.drain(timeout_s=30)
    assert (result.processed, result.failed, result.breaker, result.breaker_trips) == (5, 3, "closed", 1)
    # nothing ran while the breaker was open: the probe came a cooldown after the third failure
    assert handler.calls[3] - handler.calls[2] >= 0.6 - 0.05
    assert client.topic(q).count == 0


def test_a_failed_probe_opens_the_breaker_again(client: topics.Client, queue: Callable[..., str]) -> None:
    q = queue(2)
    handler = Flaky(fails=3)
    breaker = topics.CircuitBreaker(threshold=2, cooldown_s=0.4)
    worker = Worker(
        client, q, handler, mode="poll", backoff=Backoff.fixed(20, jitter=0), circuit_breaker=breaker
    )
    result = worker.drain(timeout_s=30)
    assert (result.processed, result.failed, result.breaker, result.breaker_trips) == (2, 3, "closed", 2)
    assert handler.calls[2] - handler.calls[1] >= 0.4 - 0.05  # the first probe, after a cooldown
    assert handler.calls[3] - handler.calls[2] >= 0.4 - 0.05  # it failed: another cooldown


def test_retries_and_permanent_failures_do_not_trip_the_breaker(
    client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    q = queue(3, dead_letter=name("dlq"))

    def handle(job: Job) -> None:
        if job.data == 0:
            raise Retry(delay_ms=10) if job.deliveries == 1 else topics.Permanent("bad input")

    breaker = topics.CircuitBreaker(threshold=1, cooldown_s=60)
    worker = Worker(client, q, handle, mode="poll", circuit_breaker=breaker)
    result = worker.drain(timeout_s=20)
    assert (result.processed, result.dead_lettered, result.breaker_trips) == (2, 1, 0)


@pytest.mark.parametrize("mode", MODES)
def test_a_retry_that_is_a_failure_keeps_its_delay_and_trips_the_breaker(
    mode: str, client: topics.Client, queue: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    """``Retry(delay_ms, failure=True)``: nacked with its own delay (not the backoff's, which
    would be an hour here), counted in ``failed`` and by the circuit breaker, logged at INFO
    with its reason."""
    q = queue(2)
    handler = Flaky(fails=0)

    def handle(job: Job) -> None:
        handler(job)
        if job.deliveries == 1:
            raise Retry(delay_ms=30, reason="http 503", failure=True)

    breaker = topics.CircuitBreaker(threshold=2, cooldown_s=0.3)
    hour = Backoff.fixed(3_600_000, jitter=0)
    worker = Worker(client, q, handle, mode=mode, backoff=hour, circuit_breaker=breaker)
    with caplog.at_level("INFO", logger="topics.worker"):
        result = worker.drain(timeout_s=30)
    counts = (result.processed, result.failed, result.retried, result.dead_lettered, result.lost)
    assert counts == (2, 2, 2, 0, 0)
    assert result.breaker_trips == 1 and result.breaker == "closed"
    failures = [r for r in caplog.records if "failed on delivery 1: http 503; retry in 30 ms" in r.message]
    assert len(failures) == 2 and {r.levelname for r in failures} == {"INFO"}
    assert all(r.exc_info is None for r in failures)
    assert Retry(5).failure is False and Retry(5, failure=True).failure is True


def test_circuit_breaker_arguments_are_checked(client: topics.Client) -> None:
    with pytest.raises(ValueError, match="threshold"):
        topics.CircuitBreaker(threshold=0)
    with pytest.raises(TypeError, match="circuit_breaker"):
        Worker(client, "q", lambda job: None, circuit_breaker=3)  # type: ignore[arg-type]


def test_a_refused_dead_letter_move_nacks_the_job_and_the_run_goes_on(
    client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    dlq = name("dlq")
    client.create_topic(dlq, cap_records=1, discard="reject")
    client.append(dlq, {"already": "full"})
    q = queue(1, dead_letter=dlq)
    calls: list[int] = []

    def handle(job: Job) -> None:
        calls.append(job.deliveries)
        if len(calls) == 1:
            raise topics.Permanent(ValueError("cannot parse"))

    worker = Worker(client, q, handle, mode="poll", backoff=Backoff.fixed(20, jitter=0))
    assert worker.drain(timeout_s=20) == stats(processed=1, failed=1, retried=1)
    assert calls == [1, 2] and client.topic(dlq).count == 1


def test_redrive_drops_the_reason_with_the_other_stamps(
    client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    dlq = name("dlq")
    q = queue(1, dead_letter=dlq)
    jobs = client.claim(q, "w")
    assert client.dead_letter(q, "w", jobs, reason="broken").moved == [jobs[0].seq]
    assert client.redrive(dlq) == 1
    [job] = client.claim(q, "w")
    assert not any(key.startswith("$dead_letter") for key in (job.meta or {}))


def test_an_open_breaker_burns_no_deliveries_of_jobs_it_never_ran(
    client: topics.Client, queue: Callable[..., str], name: Callable[[str], str]
) -> None:
    """Push mode, several slots: while the breaker is not closed only one probe runs at a time,
    and jobs handed back unstarted are not pushed again and again — none reaches the dead-letter
    topic without having failed there."""
    dlq = name("dlq")
    client.create_topic(dlq)
    q = queue(12, max_deliveries=4, dead_letter=dlq)
    handler = Flaky(fails=6)
    seen: list[tuple[int, str]] = []
    worker: Worker

    def handle(job: Job) -> None:
        seen.append((job.data, worker.stats.breaker))
        handler(job)

    breaker = topics.CircuitBreaker(threshold=3, cooldown_s=0.3)
    worker = Worker(
        client,
        q,
        handle,
        concurrency=4,
        mode="push",
        backoff=Backoff.fixed(20, jitter=0),
        circuit_breaker=breaker,
    )
    result = worker.drain(timeout_s=60)
    assert result.processed == 12 and result.breaker == "closed" and result.breaker_trips >= 1
    assert client.topic(dlq).count == 0  # six failures over twelve jobs: none failed four times
    # past the first four (started together, before any failed) no handler ran with the breaker open
    assert all(state in ("closed", "half_open") for _, state in seen[4:]), seen


# -- delayed jobs ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_gets_delayed_jobs_when_they_come_due(
    mode: str, client: topics.Client, queue: Callable[..., str]
) -> None:
    """The Worker needs nothing new: a delayed job reaches it at its due time (pushed on the
    /work stream, or found by a claim), never before; drain waits for delayed jobs too."""
    q = queue()
    client.append_many(q, [{"data": 0}, {"data": 1, "delay_ms": 400}, {"data": 2, "delay_ms": 800}])
    written = {r.seq: r.ts + r.delay_ms for r in client.read(q)}
    got: list[tuple[int, int, float]] = []
    result = Worker(
        client, q, lambda job: got.append((job.seq, job.delay_ms, time.time() * 1000)), mode=mode
    ).drain(timeout_s=30)
    assert result == stats(processed=3)
    assert [(seq, delay) for seq, delay, _ in got] == [(1, 0), (2, 400), (3, 800)]
    for seq, _, at in got:
        assert at >= written[seq] - 50  # never before its due time (this machine's clock)
