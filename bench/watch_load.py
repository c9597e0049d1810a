"""Load side of ``bench/watch_bench.py``: raw-socket SSE and WebSocket watchers on asyncio.

Each watcher is an :class:`asyncio.Protocol` on its own TCP connection — no HTTP client library:
the chunked SSE body (``GET /v0/watch/:wid``) and the WebSocket frames (``/v0/ws``) are parsed
here, which costs far less per frame than aiohttp or ``websockets``. Every watcher keeps a
:class:`Tally`: it checks that the seqs it receives are contiguous (a duplicate or a gap is
counted, never hidden) and, for each record whose ``data`` carries the writer's send time ``t``
(``time.time_ns()``), keeps ``receive time - t`` in nanoseconds. The receive time is taken once
per ``data_received`` call, i.e. when the bytes reached this process (before they are parsed).

:func:`worker_main` is the entry point of one load process (``multiprocessing``, spawn context).
The conversation with the parent over its pipe:

1. the worker opens its watchers (SSE: the stream URLs it was given; WS: N sockets that each
   ``subscribe`` with ``tail: true``) and sends ``{"msg": "ready", ...}`` once every stream is
   live (its first ``caught-up``);
2. the parent sends ``{"msg": "finish", "last_seq": S, "timeout_s": T}`` after the writer has
   stopped; the worker sends ``{"msg": "done"}`` as soon as every watcher has seen seq ``S`` (or
   at the timeout) — the parent closes its CPU window there;
3. the parent sends ``{"msg": "report"}``; the worker answers with its counts, its latencies
   and the first/last receive time of each record over its watchers (:class:`Spread`), all as
   ``array('q')`` bytes, and exits. ``{"msg": "stop"}`` at any point ends the worker.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import resource
import time
from array import array
from collections.abc import Callable
from typing import Any

import orjson

MAX_ERRORS = 5
OPEN_CONCURRENCY = 64
OPEN_ATTEMPTS = 5
READY_TIMEOUT_S = 30.0


def raise_nofile() -> int:
    """Raise the soft open-file limit to the hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


# --------------------------------------------------------------------------------------------
# per-watcher bookkeeping


class Spread:
    """Per writer index ``k``: the first and the last time any watcher of this process received
    record ``k`` (ns; 0 = not yet). The parent merges the processes' arrays: last - first is how
    long the fan-out of one record took across all watchers."""

    __slots__ = ("first", "last")

    def __init__(self, records: int) -> None:
        self.first = array("q", bytes(8 * records))
        self.last = array("q", bytes(8 * records))

    def see(self, k: int, now: int) -> None:
        if k >= len(self.first):
            return
        first = self.first[k]
        if first == 0 or now < first:
            self.first[k] = now
        if now > self.last[k]:
            self.last[k] = now


class Tally:
    """What one watcher received: contiguity of seqs, counts, latencies of measured records."""

    __slots__ = (
        "expect",
        "records",
        "frames",
        "dups",
        "lost",
        "lat",
        "warmup",
        "spread",
        "caught_up",
        "errors",
    )

    def __init__(self, from_seq: int, warmup: int, spread: Spread | None = None) -> None:
        self.expect = from_seq + 1
        """The next seq this watcher should get (``from_seq`` + 1 at the start)."""
        self.records = 0
        self.frames = 0
        self.dups = 0
        self.lost = 0
        self.lat = array("q")
        self.warmup = warmup
        """Records whose writer index ``k`` is below this are not measured (still checked)."""
        self.spread = spread
        self.caught_up = 0
        self.errors: list[str] = []

    def add(self, records: list[dict[str, Any]], now: int) -> None:
        self.frames += 1
        expect, warmup, lat, spread = self.expect, self.warmup, self.lat, self.spread
        for r in records:
            seq = r["$seq"]
            if seq != expect:
                if seq < expect:
                    self.dups += 1
                    continue
                self.lost += seq - expect
            expect = seq + 1
            self.records += 1
            d = r.get("data")
            if d.__class__ is dict:
                t = d.get("t")
                k = d.get("k", 0)
                if t is not None and k >= warmup:
                    lat.append(now - t)
                    if spread is not None:
                        spread.see(k, now)
        self.expect = expect

    def add_span(self, from_seq: int, to_seq: int, count: int) -> None:
        """The light check of a frame (no per-record parse): it must continue where the last one
        ended and hold ``to_seq - from_seq`` records (true on an unfiltered topic)."""
        self.frames += 1
        if from_seq + 1 != self.expect:
            if from_seq + 1 < self.expect:
                self.dups += min(count, self.expect - from_seq - 1)
            else:
                self.lost += from_seq + 1 - self.expect
        if count != to_seq - from_seq:
            self.lost += max(0, to_seq - from_seq - count)
            self.dups += max(0, count - (to_seq - from_seq))
        self.records += count
        self.expect = max(self.expect, to_seq + 1)

    def error(self, text: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(text[:300])


def _settle(fut: asyncio.Future[None], exc: BaseException) -> None:
    """Fail ``fut`` if still pending, without an "exception never retrieved" warning when
    nobody awaits it (e.g. the ``ready`` of a publishing socket)."""
    if not fut.done():
        fut.set_exception(exc)
        fut.exception()


# --------------------------------------------------------------------------------------------
# SSE


class SSEWatcher(asyncio.Protocol):
    """One ``GET <stream_url>`` with ``Accept: text/event-stream``, read as raw bytes: the HTTP
    head, then the chunked body, de-chunked into SSE blocks (``\\n\\n``-separated)."""

    def __init__(
        self,
        host: str,
        port: int,
        path: str,
        tally: Tally,
        on_caught_up: Callable[[dict[str, Any]], None] | None = None,
        light: bool = False,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.light = light
        """Check ``record`` frames by their ``from_seq``/``to_seq`` and a count of ``"$seq"``
        instead of decoding them (a reader that keeps up with a backlog replay)."""
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
            "Accept-Encoding: identity\r\n\r\n"
        ).encode()
        self.tally = tally
        self.on_caught_up = on_caught_up
        self.ready: asyncio.Future[None] = loop.create_future()
        self.gone = False
        self.closing = False
        self.transport: asyncio.Transport | None = None
        self.head_done = False
        self.raw = bytearray()
        self.body = bytearray()
        self.need = 0  # payload bytes still to come in the current chunk
        self.skip = 0  # bytes of the chunk's trailing CRLF still to skip
        self.bytes_in = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no asyncio.Transport
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        self.bytes_in += len(data)
        raw = self.raw
        raw += data
        if not self.head_done:
            i = raw.find(b"\r\n\r\n")
            if i < 0:
                return
            head = bytes(raw[:i])
            del raw[: i + 4]
            status = head.split(b"\r\n", 1)[0].split()
            if len(status) < 2 or status[1] != b"200" or b"chunked" not in head.lower():
                self._fail(f"stream open failed: {head[:200]!r} {bytes(raw[:300])!r}")
                return
            self.head_done = True
        self._dechunk()
        body = self.body
        end = body.rfind(b"\n\n")
        if end < 0:
            return
        blocks = bytes(body[:end]).split(b"\n\n")
        del body[: end + 2]
        for block in blocks:
            self._event(block, now)

    def _dechunk(self) -> None:
        raw, body = self.raw, self.body
        pos, n = 0, len(raw)
        while pos < n:
            if self.need:
                take = min(self.need, n - pos)
                body += raw[pos : pos + take]
                pos += take
                self.need -= take
                if self.need:
                    break
                self.skip = 2
            if self.skip:
                take = min(self.skip, n - pos)
                pos += take
                self.skip -= take
                if self.skip:
                    break
                continue
            i = raw.find(b"\r\n", pos)
            if i < 0:
                break
            size = int(bytes(raw[pos:i]).split(b";", 1)[0], 16)
            pos = i + 2
            if size == 0:  # the last chunk: the server ended the stream
                self.tally.error("stream ended by the server (last chunk)")
                break
            self.need = size
        del raw[:pos]

    def _event(self, block: bytes, now: int) -> None:
        name = data = None
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                data = line[6:]
            elif line.startswith(b"event: "):
                name = line[7:]
        if name is None:
            return  # retry: / heartbeat comment
        if name == b"record" and data is not None:
            if self.light:
                i = data.rfind(b',"from_seq":')
                tail = orjson.loads(b"{" + data[i + 1 :])
                self.tally.add_span(tail["from_seq"], tail["to_seq"], data.count(b'{"$seq":'))
            else:
                self.tally.add(orjson.loads(data)["records"], now)
        elif name == b"caught-up":
            self.tally.caught_up += 1
            if not self.ready.done():
                self.ready.set_result(None)
            if self.on_caught_up is not None and data is not None:
                self.on_caught_up(orjson.loads(data))
        else:  # tombstone, topic-deleted, error: none is expected in this benchmark
            self.tally.error(f"event {name.decode()}: {(data or b'').decode(errors='replace')}")

    def _fail(self, text: str) -> None:
        self.tally.error(text)
        _settle(self.ready, ConnectionError(text))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True
        if not self.closing:
            self.tally.error(f"connection lost: {exc!r}")
        _settle(self.ready, ConnectionError(f"connection lost before the stream was live: {exc!r}"))

    def close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.close()


# --------------------------------------------------------------------------------------------
# WebSocket


def ws_frame(payload: bytes, opcode: int = 1) -> bytes:
    """A client frame (FIN set, masked as RFC 6455 requires of a client)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 1 << 16:
        head = bytes((0x80 | opcode, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + n.to_bytes(8, "big")
    key = os.urandom(4)
    mask = (key * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "little") ^ int.from_bytes(mask, "little")).to_bytes(n, "little")
    return head + key + masked


class WSClient(asyncio.Protocol):
    """A ``/v0/ws`` socket. With a :class:`Tally` it is a subscriber (``record`` frames are
    tallied; ``ready`` resolves on the first ``caught_up``); ``on_message`` sees every other
    decoded frame (the publisher's ``ack``)."""

    def __init__(
        self,
        host: str,
        port: int,
        tally: Tally | None = None,
        on_message: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        key = base64.b64encode(os.urandom(16)).decode()
        self.request = (
            f"GET /v0/ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        self.tally = tally
        self.on_message = on_message
        self.upgraded: asyncio.Future[None] = loop.create_future()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.gone = False
        self.closing = False
        self.transport: asyncio.Transport | None = None
        self.head_done = False
        self.buf = bytearray()
        self.fragments: list[bytes] = []
        self.bytes_in = 0
        self.errors: list[str] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no asyncio.Transport
        transport.write(self.request)  # type: ignore[attr-defined]

    def send(self, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.write(ws_frame(payload))

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        self.bytes_in += len(data)
        buf = self.buf
        buf += data
        if not self.head_done:
            i = buf.find(b"\r\n\r\n")
            if i < 0:
                return
            head = bytes(buf[:i])
            del buf[: i + 4]
            status = head.split(b"\r\n", 1)[0].split()
            if len(status) < 2 or status[1] != b"101":
                self._fail(f"upgrade failed: {head[:200]!r} {bytes(buf[:300])!r}")
                return
            self.head_done = True
            self.upgraded.set_result(None)
        pos, n = 0, len(buf)
        while n - pos >= 2:
            b0, b1 = buf[pos], buf[pos + 1]
            length, hdr = b1 & 0x7F, 2
            if length == 126:
                if n - pos < 4:
                    break
                length, hdr = int.from_bytes(buf[pos + 2 : pos + 4], "big"), 4
            elif length == 127:
                if n - pos < 10:
                    break
                length, hdr = int.from_bytes(buf[pos + 2 : pos + 10], "big"), 10
            masked = b1 & 0x80
            if masked:
                hdr += 4
            if n - pos < hdr + length:
                break
            payload = bytes(buf[pos + hdr : pos + hdr + length])
            if masked:  # servers do not mask; unmask anyway
                key = bytes(buf[pos + hdr - 4 : pos + hdr])
                mask = (key * (length // 4 + 1))[:length]
                payload = (int.from_bytes(payload, "little") ^ int.from_bytes(mask, "little")).to_bytes(
                    length, "little"
                )
            pos += hdr + length
            opcode, fin = b0 & 0x0F, b0 & 0x80
            if opcode in (0, 1):
                if not fin:
                    self.fragments.append(payload)
                    continue
                if self.fragments:
                    payload = b"".join([*self.fragments, payload])
                    self.fragments = []
                self._message(payload, now)
            elif opcode == 9:  # ping -> pong
                assert self.transport is not None
                self.transport.write(ws_frame(payload, 10))
            elif opcode == 8:  # close
                if not self.closing:
                    self._error(f"closed by the server: {payload[:200]!r}")
                    self.closing = True
                    assert self.transport is not None
                    self.transport.write(ws_frame(payload[:2], 8))
                    self.transport.close()
                break
            elif opcode == 2:
                self._error("unexpected binary message")
        del buf[:pos]

    def _message(self, payload: bytes, now: int) -> None:
        doc = orjson.loads(payload)
        op = doc.get("op")
        tally = self.tally
        if op == "record" and tally is not None:
            tally.add(doc["records"], now)
        elif op == "subscribed" and tally is not None:
            (position,) = doc["topics"].values()
            tally.expect = position["from_seq"] + 1
        elif op == "caught_up" and tally is not None:
            tally.caught_up += 1
            if not self.ready.done():
                self.ready.set_result(None)
        elif op in ("error", "tombstone", "topic_deleted"):
            self._error(f"frame {op}: {payload[:250]!r}")
            if op == "error" and tally is not None:
                _settle(self.ready, ConnectionError(f"subscribe failed: {payload[:250]!r}"))
            if self.on_message is not None:
                self.on_message(doc)
        elif self.on_message is not None:
            self.on_message(doc)

    def _error(self, text: str) -> None:
        if self.tally is not None:
            self.tally.error(text)
        elif len(self.errors) < MAX_ERRORS:
            self.errors.append(text[:300])

    def _fail(self, text: str) -> None:
        self._error(text)
        for fut in (self.upgraded, self.ready):
            _settle(fut, ConnectionError(text))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True
        if not self.closing:
            self._error(f"connection lost: {exc!r}")
        for fut in (self.upgraded, self.ready):
            _settle(fut, ConnectionError(f"connection lost: {exc!r}"))

    def close(self) -> None:
        if self.transport is not None and not self.closing:
            self.closing = True
            with contextlib.suppress(Exception):
                self.transport.write(ws_frame((1000).to_bytes(2, "big"), 8))
            self.transport.close()


# --------------------------------------------------------------------------------------------
# opening watchers


async def open_sse(host: str, port: int, path: str, tally: Tally) -> SSEWatcher:
    loop = asyncio.get_running_loop()
    _, proto = await loop.create_connection(lambda: SSEWatcher(host, port, path, tally), host, port)
    try:
        await asyncio.wait_for(proto.ready, READY_TIMEOUT_S)
    except BaseException:
        proto.close()
        raise
    return proto


async def open_ws_subscriber(host: str, port: int, topic: str, tally: Tally) -> WSClient:
    loop = asyncio.get_running_loop()
    _, proto = await loop.create_connection(lambda: WSClient(host, port, tally), host, port)
    try:
        await asyncio.wait_for(proto.upgraded, READY_TIMEOUT_S)
        proto.send(
            orjson.dumps(
                {"op": "subscribe", "request_id": "s1", "topic": topic, "tail": True, "include_meta": False}
            )
        )
        await asyncio.wait_for(proto.ready, READY_TIMEOUT_S)
    except BaseException:
        proto.close()
        raise
    return proto


# --------------------------------------------------------------------------------------------
# the load process


def worker_main(conn: Any, spec: dict[str, Any]) -> None:
    """Entry point of one load process (see the module docstring for the conversation)."""
    raise_nofile()
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_worker(conn, spec))


async def _recv(conn: Any) -> dict[str, Any]:
    msg: dict[str, Any] = await asyncio.get_running_loop().run_in_executor(None, conn.recv)
    return msg


async def _worker(conn: Any, spec: dict[str, Any]) -> None:
    host, port, kind, warmup = spec["host"], spec["port"], spec["kind"], spec["warmup"]
    sem = asyncio.Semaphore(OPEN_CONCURRENCY)
    spread = Spread(spec["records"])
    if kind == "sse":
        starts: list[tuple[str, int]] = spec["streams"]
    else:
        starts = [(spec["topic"], 0)] * spec["count"]

    async def open_one(target: str, from_seq: int) -> SSEWatcher | WSClient:
        last: BaseException | None = None
        for attempt in range(OPEN_ATTEMPTS):
            tally = Tally(from_seq, warmup, spread)
            async with sem:
                try:
                    if kind == "sse":
                        return await open_sse(host, port, target, tally)
                    return await open_ws_subscriber(host, port, target, tally)
                except (OSError, TimeoutError) as exc:  # ConnectionError is an OSError
                    last = exc
            await asyncio.sleep(0.1 * (attempt + 1))
        assert last is not None
        raise last

    opened = await asyncio.gather(*(open_one(t, s) for t, s in starts), return_exceptions=True)
    watchers = [w for w in opened if isinstance(w, SSEWatcher | WSClient)]
    failures = [repr(w) for w in opened if not isinstance(w, SSEWatcher | WSClient)]
    conn.send(
        {"msg": "ready", "open": len(watchers), "failed": len(failures), "errors": failures[:MAX_ERRORS]}
    )
    try:
        cmd = await _recv(conn)
        if cmd["msg"] != "finish":
            return
        last_seq, deadline = cmd["last_seq"], time.monotonic() + cmd["timeout_s"]
        pending = list(watchers)
        while time.monotonic() < deadline:
            pending = [
                w for w in pending if w.tally is not None and w.tally.expect <= last_seq and not w.gone
            ]
            if not pending:
                break
            await asyncio.sleep(0.005)
        conn.send({"msg": "done", "timed_out": bool(pending)})
        cmd = await _recv(conn)
        if cmd["msg"] != "report":
            return
        conn.send(_report(watchers, failures, last_seq, spread))
    finally:
        for w in watchers:
            w.close()
        await asyncio.sleep(0.05)


def _report(
    watchers: list[SSEWatcher | WSClient], failures: list[str], last_seq: int, spread: Spread
) -> dict[str, Any]:
    lat = array("q")
    per_watcher_p99: list[int] = []
    records: list[int] = []
    errors: list[str] = []
    error_count = frames = dups = lost = missing = incomplete = bytes_in = 0
    for w in watchers:
        t = w.tally
        assert t is not None
        lat.extend(t.lat)
        if t.lat:
            s = sorted(t.lat)
            per_watcher_p99.append(s[max(0, -(-len(s) * 99 // 100) - 1)])
        records.append(t.records)
        frames += t.frames
        dups += t.dups
        lost += t.lost
        short = max(0, last_seq + 1 - t.expect)
        missing += short
        incomplete += short > 0
        bytes_in += w.bytes_in
        error_count += len(t.errors)
        errors += t.errors[: max(0, MAX_ERRORS - len(errors))]
    return {
        "msg": "report",
        "pid": os.getpid(),
        "watchers": len(watchers),
        "failed_to_open": len(failures),
        "records": sum(records),
        "records_min": min(records, default=0),
        "records_max": max(records, default=0),
        "frames": frames,
        "duplicates": dups,
        "gaps": lost,
        "missing_at_end": missing,
        "incomplete_watchers": incomplete,
        "bytes_in": bytes_in,
        "errors": errors,
        "error_count": error_count,
        "latencies_ns": lat.tobytes(),
        "per_watcher_p99_ns": per_watcher_p99,
        "spread_first_ns": spread.first.tobytes(),
        "spread_last_ns": spread.last.tobytes(),
    }
