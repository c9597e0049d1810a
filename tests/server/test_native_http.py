"""The native HTTP/1.1 transport (``topics_server.http``) over real sockets: keep-alive,
pipelining in order (also behind a request that waits), ``Expect: 100-continue``, chunked request
bodies, bodies over the limit, malformed requests, ``Connection: close`` / HTTP/1.0, HEAD (no
body), record pages written in parts, idle connections and shutdown."""

from __future__ import annotations

import asyncio
import gzip
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from topics_server import http as native
from topics_server.app import build
from topics_server.settings import load_settings

from .processes import NO_THROTTLE


class Conn:
    """A raw HTTP/1.1 client connection that reads whole responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, raw: bytes) -> None:
        self.writer.write(raw)

    async def response(self, *, to_head: bool = False) -> tuple[int, dict[str, str], bytes]:
        """The next response; ``to_head``: it answers a HEAD request, so no body follows its
        head whatever its Content-Length says (RFC 9110 §9.3.2)."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 10)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        if to_head:
            return status, headers, b""
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        return status, headers, body

    async def call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """Send one request and return its answer decoded (it must be a 200 or 201)."""
        self.send(request(method, path, body))
        status, _, raw = await self.response()
        assert status in (200, 201), raw
        answer: dict[str, Any] = orjson.loads(raw)
        return answer

    async def closed_by_server(self) -> bool:
        return await asyncio.wait_for(self.reader.read(), 10) == b""

    def close(self) -> None:
        self.writer.close()


class Peek:
    """A second handle on a client connection's socket, to see what waits unread in its receive
    queue without taking it (``MSG_PEEK``): over loopback an answer is there as soon as the
    server's ``write`` returns."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.sock = socket.socket(fileno=os.dup(writer.get_extra_info("socket").fileno()))

    def unread(self) -> bytes:
        """Up to 4 KiB of what waits unread (``b""``: nothing)."""
        try:
            return self.sock.recv(4096, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        self.sock.close()


def request(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> bytes:
    payload = b"" if body is None else orjson.dumps(body)
    lines = [f"{method} {path} HTTP/1.1", "Host: t"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[native.HttpServer]:
    # a durable server on the system clock, without the elastic throttle (a loaded machine's
    # loop lag would turn it on and refuse writes to default-priority topics with a 429)
    env = {"TOPICS_DATA_DIR": str(tmp_path / "data"), "TOPICS_MAX_BODY_BYTES": "65536", **NO_THROTTLE}
    settings = load_settings(env)
    app, ctx = build(settings)
    await ctx.start()
    await ctx.wait_ready()
    http_server = native.HttpServer(app)
    await http_server.start("127.0.0.1", 0)
    try:
        yield http_server
    finally:
        await http_server.shutdown(2.0)
        await ctx.stop()


@pytest.fixture
def port(server: native.HttpServer) -> int:
    port: int = server.sockets[0].getsockname()[1]
    return port


async def test_keep_alive_serves_many_requests_on_one_connection(port: int) -> None:
    c = await Conn.open(port)
    for i in range(5):
        c.send(request("POST", "/v0/topics/k", {"records": [{"data": i}]}))
        status, headers, body = await c.response()
        assert status in (200, 201) and headers["content-type"] == "application/json"
        assert orjson.loads(body)["last_seq"] == i + 1
    c.close()


async def test_pipelined_requests_are_answered_in_order_even_behind_a_waiting_one(port: int) -> None:
    c = await Conn.open(port)
    c.send(request("PUT", "/v0/topics/f", {"durability": "fsync"}))
    assert (await c.response())[0] == 201
    # an fsync append waits for its group commit; the GETs behind it must not overtake it
    c.send(
        request("POST", "/v0/topics/f", {"records": [{"data": 1}]})
        + request("GET", "/v0/topics/f")
        + request("GET", "/v0/health")
    )
    first, second, third = [await c.response() for _ in range(3)]
    assert orjson.loads(first[2])["last_seq"] == 1 and orjson.loads(first[2])["performance"]["fsync_ms"] >= 0
    assert orjson.loads(second[2])["count"] == 1  # the write was applied before the read ran
    assert orjson.loads(third[2])["status"] == "ok"
    c.close()


async def test_a_pipelining_client_that_does_not_read_is_not_read_either(
    server: native.HttpServer, port: int
) -> None:
    """20 000 pipelined GETs from a client that reads nothing: once the client stops taking
    answers, the server stops answering and reading (flow control, as HTTP/2's): its write
    buffer holds at most the high-water mark plus one answer, its queue at most one read's
    requests. Then the client reads: every answer is there, in order."""
    n = 20_000
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 12)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw = b"".join(request("GET", f"/v0/topics/n{i}") for i in range(n))
    writer.write(raw)
    (conn,) = server.connections
    assert isinstance(conn, native.HttpProtocol) and conn.transport is not None
    for _ in range(10_000):  # until the server holds back (a condition, not a time)
        if conn.write_paused and conn.reading_paused:
            break
        await asyncio.sleep(0.005)
    assert conn.write_paused and conn.reading_paused
    _, high = conn.transport.get_write_buffer_limits()
    one_answer = len(b"HTTP/1.1 404 Not Found\r\n") + 512
    for _ in range(50):  # the server stays held back while the client does not read
        await asyncio.sleep(0.01)
        assert conn.transport.get_write_buffer_size() <= high + one_answer
        assert len(conn.pending) <= (256 << 10) // len(request("GET", "/v0/topics/n0"))
    # held back only by the client: it counts as idle for the keep-alive sweep
    assert conn.idle_for(server.loop.time() + native.KEEP_ALIVE_S) >= native.KEEP_ALIVE_S
    # now read at full speed: a 4 KiB window makes every answer wait on a delayed ACK
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    for i in range(n):
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert head.startswith(b"HTTP/1.1 404"), head
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        body = await reader.readexactly(length)
        assert b'"n%d"' % i in body or b"n%d " % i in body or b"'n%d'" % i in body, (i, body)
    writer.close()


async def test_an_idle_close_of_a_client_that_never_reads_does_not_wait_for_ever(
    server: native.HttpServer, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipelining client that stopped reading is closed by the keep-alive sweep; its unread
    answers are given ``STALLED_CLOSE_S`` without progress, then dropped: the connection (its
    descriptor, its buffers, its place under the connection limit) goes away, not only its
    ``closed`` flag."""
    monkeypatch.setattr(native, "STALLED_CLOSE_S", 0.2)
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 12)
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    writer.write(b"".join(request("GET", f"/v0/topics/n{i}") for i in range(20_000)))
    (conn,) = server.connections
    assert isinstance(conn, native.HttpProtocol)
    for _ in range(10_000):  # until the server holds back (a condition, not a time)
        if conn.write_paused and conn.reading_paused:
            break
        await asyncio.sleep(0.005)
    assert conn.write_paused
    assert server.close_idle(server.loop.time() + native.KEEP_ALIVE_S) == 1
    for _ in range(2_000):
        if conn not in server.connections:
            break
        await asyncio.sleep(0.005)
    assert conn not in server.connections
    writer.close()


async def test_expect_100_continue_gets_an_interim_response(port: int) -> None:
    c = await Conn.open(port)
    payload = orjson.dumps({"records": [{"data": "x"}]})
    c.send(
        b"POST /v0/topics/e HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(payload)
    )
    interim = await asyncio.wait_for(c.reader.readuntil(b"\r\n\r\n"), 5)
    assert interim.startswith(b"HTTP/1.1 100 Continue")
    c.send(payload)
    assert (await c.response())[0] == 201
    c.close()


async def test_chunked_request_body(port: int) -> None:
    c = await Conn.open(port)
    payload = orjson.dumps({"records": [{"data": {"n": i}} for i in range(20)]})
    chunks = [payload[:10], payload[10:100], payload[100:]]
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in chunks) + b"0\r\n\r\n"
    c.send(
        b"POST /v0/topics/ch HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + body
    )
    status, _, out = await c.response()
    assert status == 201 and orjson.loads(out)["last_seq"] == 20
    c.close()


async def test_body_over_the_limit_is_413_and_the_connection_stays_usable(port: int) -> None:
    c = await Conn.open(port)
    c.send(request("POST", "/v0/topics/big", {"records": [{"data": "x" * 70_000}]}))
    status, _, body = await c.response()
    assert status == 413 and orjson.loads(body)["error"]["code"] == "payload_too_large"
    c.send(request("GET", "/v0/health"))
    assert (await c.response())[0] == 200
    c.close()


async def test_malformed_http_is_a_400_envelope_then_close(port: int) -> None:
    c = await Conn.open(port)
    c.send(b"THIS IS NOT HTTP\r\n\r\n")
    status, headers, body = await c.response()
    assert status == 400 and orjson.loads(body)["error"]["code"] == "invalid_request"
    assert headers["connection"] == "close"
    assert await c.closed_by_server()


async def test_malformed_bytes_behind_a_waiting_request_are_answered_after_it(port: int) -> None:
    """The 400 of malformed bytes pipelined behind a request still in hand comes after that
    request's answer, never inside it; then the connection closes."""
    c = await Conn.open(port)
    c.send(request("PUT", "/v0/topics/m", {"durability": "fsync"}))
    assert (await c.response())[0] == 201
    c.send(request("POST", "/v0/topics/m", {"records": [{"data": 1}]}) + b"THIS IS NOT HTTP\r\n\r\n")
    first, second = await c.response(), await c.response()
    assert first[0] == 200 and orjson.loads(first[2])["last_seq"] == 1
    assert second[0] == 400 and orjson.loads(second[2])["error"]["code"] == "invalid_request"
    assert await c.closed_by_server()


async def test_expect_100_continue_behind_a_waiting_request_gets_no_interim_inside_it(port: int) -> None:
    """A pipelined ``Expect: 100-continue`` request behind one still in hand gets no interim
    response (it would land before or inside the first answer); its body, sent anyway, is
    answered in order."""
    c = await Conn.open(port)
    c.send(request("PUT", "/v0/topics/x", {"durability": "fsync"}))
    assert (await c.response())[0] == 201
    payload = orjson.dumps({"records": [{"data": 2}]})
    c.send(
        request("POST", "/v0/topics/x", {"records": [{"data": 1}]})
        + b"POST /v0/topics/x HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload
    )
    first, second = await c.response(), await c.response()
    assert (first[0], second[0]) == (200, 200)
    assert [orjson.loads(r[2])["last_seq"] for r in (first, second)] == [1, 2]
    c.close()


async def test_connection_close_and_http_1_0_close_after_the_response(port: int) -> None:
    c = await Conn.open(port)
    c.send(request("GET", "/v0/health", headers={"Connection": "close"}))
    status, headers, _ = await c.response()
    assert status == 200 and headers["connection"] == "close"
    assert await c.closed_by_server()
    c = await Conn.open(port)
    c.send(b"GET /v0/health HTTP/1.0\r\n\r\n")
    assert (await c.response())[0] == 200
    assert await c.closed_by_server()


async def test_head_is_answered_without_a_body_on_a_keep_alive_connection(port: int) -> None:
    """A HEAD response is its head only, with the Content-Length the GET would carry: body
    bytes after it would be read as the start of the next response on the connection."""
    c = await Conn.open(port)
    # HEAD is no operation of an API route: a 405 envelope, without the envelope
    c.send(request("HEAD", "/v0/health") + request("GET", "/v0/health"))
    status, headers, _ = await c.response(to_head=True)
    assert status == 405 and headers["content-type"] == "application/json"
    assert int(headers["content-length"]) > 0  # the envelope's length, not sent
    status, _, body = await c.response()  # parses only if no envelope bytes came before it
    assert status == 200 and orjson.loads(body)["status"] == "ok"
    # the served contract answers HEAD: the GET's headers, Content-Length included
    for encoding in ("identity", "gzip"):
        get = request("GET", "/v0/openapi.json", headers={"Accept-Encoding": encoding})
        c.send(get + get.replace(b"GET ", b"HEAD ", 1) + request("GET", "/v0/health"))
        status, got, body = await c.response()
        assert status == 200 and int(got["content-length"]) == len(body) > 0
        status, headed, _ = await c.response(to_head=True)
        assert status == 200 and headed == got
        assert (await c.response())[0] == 200
    # nothing is left on the wire after a HEAD answered last
    c.send(request("HEAD", "/v0/openapi.json", headers={"Connection": "close"}))
    status, headers, _ = await c.response(to_head=True)
    assert status == 200 and headers["connection"] == "close" and int(headers["content-length"]) > 0
    assert await c.closed_by_server()  # read() to EOF: no stray body bytes


async def test_large_record_pages_are_written_whole(port: int) -> None:
    """A page over the join threshold goes out as parts (one vectored write)."""
    c = await Conn.open(port)
    records = [{"data": {"i": i, "pad": "y" * 100}} for i in range(1000)]
    for k in range(0, 1000, 250):  # under the fixture's 64 KiB body limit
        c.send(request("POST", "/v0/topics/page", {"records": records[k : k + 250]}))
        assert (await c.response())[0] in (200, 201)
    c.send(request("POST", "/v0/topics/page/diff", {"limit": 1000}))
    status, _, body = await c.response()  # content-length framing must match the parts
    page = orjson.loads(body)
    assert status == 200 and [r["data"] for r in page["records"]] == [r["data"] for r in records]
    c.send(request("POST", "/v0/topics/page/diff", {"limit": 1000}, headers={"Accept-Encoding": "gzip"}))
    status, headers, body = await c.response()
    assert headers["content-encoding"] == "gzip"
    assert orjson.loads(gzip.decompress(body))["records"] == page["records"]
    c.close()


async def test_idle_keep_alive_connections_are_closed(server: native.HttpServer, port: int) -> None:
    idle, busy = await Conn.open(port), await Conn.open(port)
    idle.send(request("PUT", "/v0/topics/lp", {}))
    assert (await idle.response())[0] == 201
    busy.send(request("POST", "/v0/topics/lp/diff", {"wait_ms": 3000}))  # a long-poll in hand
    await asyncio.sleep(0.05)
    later = asyncio.get_running_loop().time() + native.KEEP_ALIVE_S + 1
    assert server.close_idle(now=later) == 1  # the sweep closes only the idle one
    assert await idle.closed_by_server()
    busy.send(b"")
    busy.close()


async def test_shutdown_lets_a_request_in_flight_finish(server: native.HttpServer, port: int) -> None:
    c = await Conn.open(port)
    c.send(request("POST", "/v0/topics/sd", {"records": [{"data": 1}]}))
    assert (await c.response())[0] == 201
    c.send(request("POST", "/v0/topics/sd/diff", {"from_seq": 1, "wait_ms": 300}))
    await asyncio.sleep(0.05)
    closing = asyncio.ensure_future(server.shutdown(5.0))
    status, _, body = await c.response()  # the parked long-poll is still answered
    assert status == 200 and orjson.loads(body)["records"] == []
    await closing
    assert await c.closed_by_server()
