"""The live fan-out's broadcast path (``streams`` "Broadcast"): streams woken together at the
same position get one read and one ``broadcast.send_all`` of the shared wire bytes.

Each scenario runs twice on the native transport — with the broadcast path, and with it off
(every stream's own pump: the per-connection path) — and every client must receive the very
same bytes both times. A recorder around ``send_all`` shows the path was taken, and how each
socket fared.

Covered:

- ``send_all`` on socket pairs: a whole send, a full buffer (a partial count, then 0), a closed
  peer (``-EPIPE``), a bad descriptor (``-EBADF``), a value that is no descriptor, an fd whose
  conversion empties the caller's list (read from a copy, never from freed memory).
- SSE watch sessions and WebSockets at one position: one send per write, byte-exact.
- a subscriber that stops reading mid-broadcast: its socket takes part of the frame (a partial
  write), the rest goes through its transport, which pauses; later writes reach the others by
  the broadcast and it through its own path (a mix of fast and blocked subscribers at one
  position); once it reads again it gets every frame — the same bytes as without the path.
- a failing broadcast (never expected): before the send, every member's task takes over;
  a member's commit failing after it, only that member's task (the others keep their commit).
- a subscriber that disconnects just before a broadcast: its send fails, its own path meets the
  error and its stream ends (the session is let go); the others get their frames.
- under the throttle's cutoff: watch streams on a topic below it are paced by their tasks (no
  broadcast), on a topic at or above it they share the send as before.
- a real ``topics serve`` (uvloop's transports): SSE and WebSocket subscribers at one position
  get the same bytes, and one that stops reading mid-way gets every record once it reads.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import os
import socket
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import ManualClock
from topics_server import streams
from topics_server.broadcast import send_all
from topics_server.context import ServerContext
from topics_server.handlers.watch import WatchStream
from topics_server.http import HttpProtocol, HttpServer
from topics_server.streams import SharedStep, StreamLoop

from .native import native_server, until
from .processes import ServerProcess

TIMEOUT = 5.0
BIG = "x" * 400_000
"""A record whose frame no socket buffer takes whole (and alone in a read: over
``max_batch_bytes``)."""
N = 4
"""Subscribers per scenario."""
KEY = "dGhlIHNhbXBsZSBub25jZQ=="


# -- send_all --------------------------------------------------------------------------------------


def test_send_all_sends_to_every_socket() -> None:
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        assert send_all([a.fileno() for a, _ in pairs], b"frame") == [5, 5, 5]
        assert [b.recv(16) for _, b in pairs] == [b"frame"] * 3
        assert send_all([], b"frame") == []
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_send_all_on_a_full_buffer_sends_part_then_nothing() -> None:
    a, b = socket.socketpair()
    try:
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        data = b"x" * (4 << 20)
        (first,) = send_all([a.fileno()], data)
        assert 0 < first < len(data)
        (second,) = send_all([a.fileno()], data)
        assert second == 0  # would block: nothing taken, no error
    finally:
        a.close()
        b.close()


def test_send_all_reports_errors_per_socket() -> None:
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    d.close()
    spare = socket.socket()
    bad = spare.fileno()
    spare.close()
    try:
        # a closed peer: EPIPE, no SIGPIPE; a closed descriptor: EBADF; the others still sent
        assert send_all([a.fileno(), c.fileno(), bad], b"x") == [1, -errno.EPIPE, -errno.EBADF]
        assert b.recv(4) == b"x"
    finally:
        for s in (a, b, c):
            s.close()


def test_send_all_refuses_what_is_no_descriptor() -> None:
    with pytest.raises(ValueError):
        send_all([-1], b"x")
    with pytest.raises(TypeError):
        send_all(["3"], b"x")  # type: ignore[list-item]
    with pytest.raises(TypeError):
        send_all([1], "text")  # type: ignore[arg-type]


MUTATING_FDS = """
import socket
from topics_server.broadcast import send_all

a, b = socket.socketpair()


class Clears:
    def __index__(self) -> int:  # run by the int conversion: it empties the caller's list
        fds.clear()
        return a.fileno()


fds = [Clears(), a.fileno(), a.fileno()]
print(send_all(fds, b"x"), b.recv(8))
"""


def test_send_all_reads_fds_that_change_while_it_converts_them() -> None:
    """An fd whose ``__index__`` empties the caller's list: ``send_all`` reads the fds it was
    given, not the list's freed item array (the debug allocator overwrites freed memory, so a
    read of it crashes at once)."""
    done = subprocess.run(
        [sys.executable, "-c", MUTATING_FDS],
        env={**os.environ, "PYTHONMALLOC": "debug"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1, 1, 1] b'xxx'"


# -- clients ---------------------------------------------------------------------------------------


class Tap:
    """A raw client connection: everything the server sent, read only when a test asks."""

    def __init__(
        self, sock: socket.socket, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.sock, self.reader, self.writer = sock, reader, writer
        self.data = bytearray()

    @classmethod
    async def connect(cls, port: int, request: bytes, rcvbuf: int | None = None) -> Tap:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connect: the advertised window is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
        writer.write(request)
        return cls(sock, reader, writer)

    async def read_until(self, done: Callable[[bytes], bool]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while not done(bytes(self.data)):
            left = deadline - loop.time()
            assert left > 0, f"not received in time; have {bytes(self.data[-300:])!r}"
            chunk = await asyncio.wait_for(self.reader.read(1 << 20), left)
            assert chunk, f"the server closed the connection; have {bytes(self.data[-300:])!r}"
            self.data += chunk

    async def read_some(self, timeout: float) -> None:
        """What arrives within ``timeout`` seconds, if anything."""
        try:
            chunk = await asyncio.wait_for(self.reader.read(1 << 20), timeout)
        except TimeoutError:
            return
        self.data += chunk

    def reset(self) -> None:
        """Close with a reset (SO_LINGER 0): the server's socket fails its next send at once."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    def close(self) -> None:
        self.writer.close()


# -- what a client received --------------------------------------------------------------------


def after_head(raw: bytes | bytearray) -> bytes:
    """What follows the response head (a WebSocket handshake's carries a ``Date``)."""
    return bytes(raw).partition(b"\r\n\r\n")[2]


def sse_events(body: bytes) -> list[dict[str, str]]:
    """The complete SSE events of a chunked response body (their fields), in order."""
    text = bytearray()
    while True:
        size_line, found, rest = body.partition(b"\r\n")
        if not found:
            break
        size = int(size_line, 16)
        if size == 0 or len(rest) < size + 2:
            break
        text += rest[:size]
        body = rest[size + 2 :]
    blocks = bytes(text).decode().split("\n\n")[:-1]  # the last one is incomplete (or empty)
    return [dict(line.split(": ", 1) for line in block.split("\n") if ": " in line) for block in blocks]


def ws_messages(body: bytes) -> list[Any]:
    """The complete (unmasked, unfragmented) server text messages after the handshake."""
    out = []
    while len(body) >= 2:
        size, at = body[1] & 0x7F, 2
        if size == 126:
            (size,), at = struct.unpack("!H", body[2:4]), 4
        elif size == 127:
            (size,), at = struct.unpack("!Q", body[2:10]), 10
        if len(body) < at + size:
            break
        out.append(orjson.loads(body[at : at + size]))
        body = body[at + size :]
    return out


def record_seqs(kind: str, body: bytes) -> list[list[int]]:
    """The seqs of each complete record frame ``body`` (what followed the head) holds."""
    if kind == "sse":
        frames = [json.loads(e["data"]) for e in sse_events(body) if e.get("event") == "record"]
    else:
        frames = [m for m in ws_messages(body) if m["op"] == "record"]
    return [[r["$seq"] for r in frame["records"]] for frame in frames]


def caught_up(kind: str, raw: bytes) -> bool:
    body = after_head(raw)
    if kind == "sse":
        return any(e.get("event") == "caught-up" for e in sse_events(body))
    return any(m["op"] == "caught_up" for m in ws_messages(body))


def frames_at_least(kind: str, n: int) -> Callable[[bytes], bool]:
    return lambda raw: len(record_seqs(kind, after_head(raw))) >= n


def client_text(payload: bytes) -> bytes:
    """One masked client text frame (RFC 6455 §5.2), a fixed mask: runs compare byte for byte."""
    assert len(payload) < 126
    mask = b"\x11\x22\x33\x44"
    return bytes((0x81, 0x80 | len(payload))) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


WS_UPGRADE = (
    "GET /v0/ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    f"Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
).encode()


# -- the scenarios ---------------------------------------------------------------------------------


async def subscribe(
    http: httpx.AsyncClient,
    port: int,
    kind: str,
    start: dict[str, Any],
    rcvbuf: int | None = None,
    **options: Any,
) -> Tap:
    """One subscriber of topic ``t`` from ``start`` — a watch session's stream (``sse``, with
    the session's ``options``) or a WebSocket (``ws``) — read until it caught up."""
    if kind == "sse":
        r = await http.post("/v0/watch", json={"topics": {"t": start}, **options})
        assert r.status_code == 200, r.text
        path = r.json()["stream_url"]
        request = f"GET {path} HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n".encode()
        tap = await Tap.connect(port, request, rcvbuf)
    else:
        tap = await Tap.connect(port, WS_UPGRADE, rcvbuf)
        await tap.read_until(lambda raw: b"\r\n\r\n" in raw)
        command = {"op": "subscribe", "request_id": "s", "topic": "t", **start}
        tap.writer.write(client_text(orjson.dumps(command)))
    try:
        await tap.read_until(lambda raw: caught_up(kind, raw))
    except BaseException:
        tap.close()
        raise
    return tap


@dataclass
class Run:
    port: int
    ctx: ServerContext
    http: httpx.AsyncClient
    native: HttpServer
    kind: str
    """``sse`` (watch sessions) or ``ws`` (WebSockets)."""
    taps: list[Tap] = field(default_factory=list)

    def append(self, *datas: Any) -> None:
        """A write straight into the engine: its wake-ups are queued before this test's next
        await (so nothing of the server runs in between)."""
        self.ctx.engine.append("t", [{"data": d} for d in datas])

    async def subscribe(self, start: dict[str, Any], rcvbuf: int | None = None, **options: Any) -> Tap:
        tap = await subscribe(self.http, self.port, self.kind, start, rcvbuf, **options)
        self.taps.append(tap)
        return tap

    def connection(self, tap: Tap) -> HttpProtocol:
        """The server's side of ``tap``'s connection."""
        local = tap.sock.getsockname()
        (conn,) = [
            c
            for c in self.native.connections
            if isinstance(c, HttpProtocol)
            and c.transport is not None
            and c.transport.get_extra_info("peername") == local
        ]
        return conn

    def loops(self) -> list[StreamLoop]:
        """The stream loops serving subscribers now."""
        sessions = [s for s in self.ctx.watches._sessions.values() if s.owner is not None]
        loops = [s.owner.loop for s in sessions]  # type: ignore[attr-defined]
        for conn in self.native.connections:
            if isinstance(conn, HttpProtocol) and conn.websocket is not None:
                assert conn.websocket.session is not None
                loops.append(conn.websocket.session.loop)
        return loops

    async def parked(self, n: int) -> None:
        """Wait until ``n`` streams idle, waiting to be woken (each ready for the next write)."""
        await until(lambda: sum(loop.parked and not loop._woken.is_set() for loop in self.loops()) == n)

    def subscribers(self) -> int:
        count: int = self.ctx.engine.hub.listener_count("t")
        return count


@asynccontextmanager
async def running(monkeypatch: pytest.MonkeyPatch, kind: str, broadcast: bool) -> AsyncIterator[Run]:
    """A fresh server on a fresh manual clock (the same record timestamps every run), with the
    broadcast path or without it (every stream's own pump)."""
    with monkeypatch.context() as patch:
        if not broadcast:
            patch.setattr(StreamLoop, "share_key", lambda self: None)
        async with native_server(ManualClock(), {}) as (port, ctx, native, http):
            r = await http.put("/v0/topics/t", json={})
            assert r.status_code in (200, 201), r.text
            run = Run(port, ctx, http, native, kind)
            try:
                yield run
            finally:
                for tap in run.taps:
                    tap.close()


Send = tuple[int, int, list[int]]
"""One ``send_all`` call: how many sockets, how many bytes, and what each took."""


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> list[Send]:
    calls: list[Send] = []

    def recording(fds: list[int], data: bytes) -> list[int]:
        out = send_all(fds, data)
        calls.append((len(fds), len(data), list(out)))
        return out

    monkeypatch.setattr(streams, "send_all", recording)
    return calls


KINDS = pytest.mark.parametrize("kind", ["sse", "ws"])


async def at_one_position(run: Run) -> list[bytes]:
    """N subscribers from seq 0 (each first reads the backlog on its own), then writes of one,
    one, one and two records, each read by all."""
    run.append("old")
    taps = [await run.subscribe({"from_seq": 0}) for _ in range(N)]
    for n, datas in enumerate([[1], ["two"], [{"three": 3}], ["four", "five"]], start=2):
        await run.parked(N)
        run.append(*datas)
        for tap in taps:
            await tap.read_until(frames_at_least(run.kind, n))
    return [after_head(tap.data) for tap in taps]


@KINDS
async def test_subscribers_at_one_position_get_one_send_of_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, sends: list[Send], kind: str
) -> None:
    async with running(monkeypatch, kind, broadcast=False) as run:
        alone = await at_one_position(run)
    assert sends == []
    async with running(monkeypatch, kind, broadcast=True) as run:
        shared = await at_one_position(run)
    assert shared == alone
    assert len(set(shared)) == 1  # one topic: the same frames, ids included
    assert record_seqs(kind, shared[0]) == [[1], [2], [3], [4], [5, 6]]
    assert len(sends) == 4  # one send per write, to every subscriber
    for count, size, sent in sends:
        assert count == N and sent == [size] * N


async def test_a_failing_broadcast_leaves_the_streams_to_their_tasks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Never expected, but no stream may be left unwoken: the group's tasks pump themselves."""
    async with running(monkeypatch, "sse", broadcast=False) as run:
        alone = await at_one_position(run)

    def failing(fds: list[int], data: bytes) -> list[int]:
        raise RuntimeError("send_all failed")

    monkeypatch.setattr(streams, "send_all", failing)
    async with running(monkeypatch, "sse", broadcast=True) as run:
        assert await at_one_position(run) == alone
    assert "broadcast to 4 streams failed" in caplog.text


async def test_a_member_failing_after_the_send_costs_the_others_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Never expected either: one member's commit fails once the bytes went out. The others
    got the frames and commit them — their tasks do not read and send them a second time — and
    that member's task takes over (not left parked with its topic dirty: no wake-up would
    come)."""
    async with running(monkeypatch, "sse", broadcast=False) as run:
        alone = await at_one_position(run)
    commit = WatchStream.share_commit
    failed: list[WatchStream] = []

    def failing_once(self: WatchStream, shared: SharedStep) -> None:
        if not failed:
            failed.append(self)
            raise RuntimeError("share_commit failed")
        commit(self, shared)

    monkeypatch.setattr(WatchStream, "share_commit", failing_once)
    async with running(monkeypatch, "sse", broadcast=True) as run:
        await at_one_position(run)
        for tap in run.taps:  # a repeated frame counts as one more: each has the last one
            await tap.read_until(lambda raw: [5, 6] in record_seqs("sse", after_head(raw)))
        shared = [after_head(tap.data) for tap in run.taps]
    assert failed and "share_commit failed" in caplog.text
    differ = [i for i, raw in enumerate(shared) if raw != alone[i]]
    assert len(differ) == 1, differ  # only the member whose commit failed
    (i,) = differ  # its task read the step again: that frame twice, then on as before
    assert record_seqs("sse", shared[i]) == [[1], [2], [2], [3], [4], [5, 6]]


async def under_the_cutoff(run: Run, priority: int) -> list[bytes]:
    """N watch sessions on ``t`` (of ``priority``; heartbeats a minute apart), then the
    throttle's cutoff at 500: two writes, each read by all while the clock moves on in steps of
    the pacing pause (100 ms at no pressure) until they have it."""
    r = await run.http.put("/v0/topics/t", json={"priority": priority})
    assert r.status_code == 200, r.text
    taps = [await run.subscribe({"tail": True}, heartbeat_ms=60_000) for _ in range(N)]
    run.ctx.throttle.cutoff = 500
    clock = run.ctx.engine.clock
    assert isinstance(clock, ManualClock)
    loop = asyncio.get_running_loop()
    for n in (1, 2):
        await run.parked(N)
        run.append(n)
        deadline = loop.time() + TIMEOUT
        while not all(frames_at_least(run.kind, n)(tap.data) for tap in taps):
            assert loop.time() < deadline, "not delivered in time"
            for tap in taps:
                await tap.read_some(0.01)
            clock.advance(100)  # a paced stream's pause (none of them waits for a heartbeat)
    return [after_head(tap.data) for tap in taps]


@pytest.mark.parametrize(("priority", "shared"), [(0, False), (900, True)])
async def test_under_the_throttle_paced_streams_keep_their_own_path(
    monkeypatch: pytest.MonkeyPatch, sends: list[Send], priority: int, shared: bool
) -> None:
    async with running(monkeypatch, "sse", broadcast=False) as run:
        alone = await under_the_cutoff(run, priority)
    async with running(monkeypatch, "sse", broadcast=True) as run:
        assert await under_the_cutoff(run, priority) == alone
    paced = [e for e in sse_events(alone[0]) if e.get("event") == "error"]
    assert len(paced) == (0 if shared else 1)  # the advisory 429, once per episode
    assert [count for count, _, _ in sends] == ([N, N] if shared else [])


async def one_stops_reading(run: Run) -> list[bytes]:
    """N - 1 subscribers that read and one (the last) that stops: its socket takes part of the
    first BIG frame and its transport the rest, which pauses it; two more BIG writes reach the
    others while it is blocked. Then it reads everything."""
    *fast, slow = [await run.subscribe({"tail": True}, rcvbuf=4096 if i == N - 1 else None) for i in range(N)]
    conn = run.connection(slow)
    for n in (1, 2, 3):
        await run.parked(N if n == 1 else N - 1)
        run.append(BIG)
        for tap in fast:
            await tap.read_until(frames_at_least(run.kind, n))
        assert conn.write_paused  # backpressure: it is not read, its stream waits
    await slow.read_until(frames_at_least(run.kind, 3))
    return [after_head(tap.data) for tap in (*fast, slow)]


@KINDS
async def test_a_subscriber_that_stops_reading_mid_broadcast(
    monkeypatch: pytest.MonkeyPatch, sends: list[Send], kind: str
) -> None:
    async with running(monkeypatch, kind, broadcast=False) as run:
        alone = await one_stops_reading(run)
    async with running(monkeypatch, kind, broadcast=True) as run:
        shared = await one_stops_reading(run)
    assert shared == alone  # the one that stopped reading too: the same bytes
    assert all(record_seqs(kind, raw) == [[1], [2], [3]] for raw in shared)
    first, *later = sends
    count, size, sent = first
    assert count == N and 0 < sent[-1] < size  # a partial write; the rest went to its transport
    assert len(later) == 2 and all(count == N - 1 for count, _, _ in later)  # it was not sent to


async def fast_and_lagging(run: Run) -> list[bytes]:
    """As :func:`one_stops_reading`, but the last subscriber's transport may hold a whole BIG
    frame (a raised high-water mark): it is not paused, so its stream idles at the others'
    position with bytes still unsent — the next writes find it in their group, and only its own
    path may append to what its transport holds."""
    *fast, slow = [await run.subscribe({"tail": True}, rcvbuf=4096 if i == N - 1 else None) for i in range(N)]
    conn = run.connection(slow)
    assert conn.transport is not None
    conn.transport.set_write_buffer_limits(high=4 << 20)
    for n in (1, 2, 3):
        await run.parked(N)
        run.append(BIG)
        for tap in fast:
            await tap.read_until(frames_at_least(run.kind, n))
        assert not conn.write_paused and conn.transport.get_write_buffer_size() > 0
    await slow.read_until(frames_at_least(run.kind, 3))
    return [after_head(tap.data) for tap in (*fast, slow)]


@KINDS
async def test_fast_and_lagging_subscribers_at_one_position(
    monkeypatch: pytest.MonkeyPatch, sends: list[Send], kind: str
) -> None:
    async with running(monkeypatch, kind, broadcast=False) as run:
        alone = await fast_and_lagging(run)
    async with running(monkeypatch, kind, broadcast=True) as run:
        shared = await fast_and_lagging(run)
    assert shared == alone
    assert all(record_seqs(kind, raw) == [[1], [2], [3]] for raw in shared)
    first, *later = sends
    assert first[0] == N and 0 < first[2][-1] < first[1]
    assert len(later) == 2 and all(count == N - 1 for count, _, _ in later)


async def one_disconnects(run: Run) -> list[bytes]:
    """N subscribers; the second resets its connection just before a write, whose broadcast
    then runs before the server has seen the reset. The others read it and one more."""
    taps = [await run.subscribe({"tail": True}) for _ in range(N)]
    await run.parked(N)
    gone = taps.pop(1)
    gone.reset()
    run.append("while one went away")
    await until(lambda: run.subscribers() == N - 1)  # its stream ended, its session let go
    for tap in taps:
        await tap.read_until(frames_at_least(run.kind, 1))
    await run.parked(N - 1)
    run.append("after")
    for tap in taps:
        await tap.read_until(frames_at_least(run.kind, 2))
    return [after_head(tap.data) for tap in taps]


@KINDS
async def test_a_subscriber_that_disconnects_mid_broadcast(
    monkeypatch: pytest.MonkeyPatch, sends: list[Send], kind: str
) -> None:
    async with running(monkeypatch, kind, broadcast=False) as run:
        alone = await one_disconnects(run)
    async with running(monkeypatch, kind, broadcast=True) as run:
        shared = await one_disconnects(run)
        assert run.subscribers() == N - 1
    assert shared == alone
    assert all(record_seqs(kind, raw) == [[1], [2]] for raw in shared)
    (count, size, sent), after = sends
    assert count == N and sent[1] < 0 and sent[:1] + sent[2:] == [size] * (N - 1)
    assert after[0] == N - 1


async def test_a_real_server_on_uvloop(tmp_path: Path) -> None:
    """``topics serve`` as its own process (uvloop): N SSE and N WebSocket subscribers at one
    position, the last of each kind with a small receive buffer and not reading; writes of one
    record, a BIG one (which the slow ones cannot take), then more. The readers get the same
    bytes of their kind; the slow ones, once they read, every record in order."""
    taps: dict[str, list[Tap]] = {"sse": [], "ws": []}
    with ServerProcess(tmp_path / "data") as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT) as http:
            try:
                r = await http.put("/v0/topics/t", json={"durability": "memory"})
                assert r.status_code in (200, 201), r.text
                for kind, group in taps.items():
                    for i in range(N):
                        slow = 4096 if i == N - 1 else None
                        group.append(await subscribe(http, server.port, kind, {"tail": True}, slow))
                readers = [(kind, tap) for kind, group in taps.items() for tap in group[:-1]]
                for n, data in enumerate([0, 1, BIG, 3, 4], start=1):
                    r = await http.post("/v0/topics/t", json={"records": [{"data": data}]})
                    assert r.status_code == 200, r.text
                    for kind, tap in readers:
                        await tap.read_until(frames_at_least(kind, n))
                for kind, group in taps.items():
                    await group[-1].read_until(lambda raw, kind=kind: all_seqs(kind, raw) == [1, 2, 3, 4, 5])
                    assert len({after_head(tap.data) for tap in group[:-1]}) == 1
                    assert all(all_seqs(kind, tap.data) == [1, 2, 3, 4, 5] for tap in group)
                last = sse_events(after_head(taps["sse"][-1].data))[-1]
                assert last["event"] == "record" and json.loads(b64(last["id"])) == {"t": 5}
            finally:
                for group in taps.values():
                    for tap in group:
                        tap.close()


def all_seqs(kind: str, raw: bytes | bytearray) -> list[int]:
    return [seq for frame in record_seqs(kind, after_head(raw)) for seq in frame]


def b64(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
