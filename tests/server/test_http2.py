"""HTTP/2 over cleartext with prior knowledge (``topics_server.http2``) on the native server's
port: real HTTP/2 clients (httpx with ``h2``; ``curl --http2-prior-knowledge``) and, for what
those do not expose, a raw ``h2`` client (``h2_client``).

Every request is answered over h2c as over HTTP/1.1 (status, headers but the framing ones,
body: health, writes, diffs, long-polls, errors, auth, 413, 415, HEAD, gzip); SSE watches run as
HTTP/2 streams, many on one connection; a stream reset cancels that stream only; a stream the
client does not read meets the slow-consumer rules on that stream alone; bodies are bounded per
connection; malformed HTTP/2 is a GOAWAY; shutdown sends GOAWAY and finishes requests in flight.
The first bytes decide the protocol (a preface split across reads, an HTTP/1.1 request starting
like it); ``Upgrade: h2c`` is answered over HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import gzip
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import httpx
import orjson
import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from topics_engine import Engine, ManualClock, SystemClock
from topics_engine.clock import Clock
from topics_server import http as native
from topics_server.app import build
from topics_server.context import ServerContext
from topics_server.http import HttpProtocol, HttpServer
from topics_server.http2 import Http2Connection
from topics_server.settings import load_settings

from .h2_client import H2Client, H2Stream
from .processes import NO_THROTTLE
from .sse_client import SseFrame, parse_frame

MAX_BODY = 65_536
BIG = "x" * 50_000  # a record (under the body limit) that fills a small stream window at once


@dataclass
class Srv:
    port: int
    url: str
    ctx: ServerContext
    native: HttpServer

    def h1(self, **kw: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=10.0, **kw)

    def h2(self, **kw: Any) -> httpx.AsyncClient:
        """httpx speaking HTTP/2 from the first byte (prior knowledge)."""
        return httpx.AsyncClient(base_url=self.url, http1=False, http2=True, timeout=10.0, **kw)

    def h2_connections(self) -> list[Http2Connection]:
        return [c for c in self.native.connections if isinstance(c, Http2Connection)]


@asynccontextmanager
async def serving(env: dict[str, str] | None = None, clock: Clock | None = None) -> AsyncIterator[Srv]:
    """An in-memory server on ``clock`` (the system's by default), without the throttle."""
    settings = load_settings({"TOPICS_MAX_BODY_BYTES": str(MAX_BODY), **NO_THROTTLE, **(env or {})})
    app, ctx = build(settings, engine=Engine(clock or SystemClock(), settings.limits))
    await ctx.start()
    native = HttpServer(app)
    await native.start("127.0.0.1", 0)
    port = native.sockets[0].getsockname()[1]
    try:
        yield Srv(port, f"http://127.0.0.1:{port}", ctx, native)
    finally:
        await native.shutdown(2.0)
        await ctx.stop()


@pytest.fixture
async def srv() -> AsyncIterator[Srv]:
    async with serving() as s:
        yield s


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


# ---------------------------------------------------------------------------------------------
# the API over h2c, and the same answers as HTTP/1.1
# ---------------------------------------------------------------------------------------------


async def test_health_a_write_and_a_diff_over_h2c(srv: Srv) -> None:
    async with srv.h2() as http:
        r = await http.get("/v0/health")
        assert r.http_version == "HTTP/2" and r.status_code == 200 and r.json()["status"] == "ok"
        r = await http.put("/v0/topics/orders", json={"durability": "disk"})
        assert r.status_code == 201
        r = await http.post("/v0/topics/orders", json={"records": [{"data": {"id": 1}}, {"data": {"id": 2}}]})
        assert r.status_code in (200, 201) and r.json()["seqs"] == [1, 2]
        r = await http.post("/v0/topics/orders/diff", json={"from_seq": 0})
        assert r.http_version == "HTTP/2"
        assert [rec["data"] for rec in r.json()["records"]] == [{"id": 1}, {"id": 2}]
        assert len(srv.h2_connections()) == 1  # one connection carried them all


_VARYING = ("performance", "$ts", "uptime_ms")


def _normal(body: bytes) -> Any:
    """A JSON body without what differs from one call to the next (timings, timestamps)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _VARYING and not k.endswith("_ts")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(orjson.loads(body)) if body else body


CASES: list[tuple[int, str, str, dict[str, Any]]] = [
    (200, "GET", "/v0/health", {}),
    (201, "PUT", "/v0/topics/T", {"json": {"cap_records": 100}}),
    (200, "PUT", "/v0/topics/T", {"json": {"cap_records": 100}}),  # exists
    (200, "POST", "/v0/topics/T", {"json": {"records": [{"data": {"n": i}} for i in range(3)]}}),
    (200, "POST", "/v0/topics/T/diff", {"json": {"from_seq": 0, "include_tags": True}}),
    (200, "POST", "/v0/topics/T/diff", {"json": {"from_seq": 3, "wait_ms": 50}}),  # a long-poll, timed out
    (200, "GET", "/v0/topics/T", {}),
    (404, "GET", "/v0/topics/T-nope", {}),
    (405, "DELETE", "/v0/health", {}),  # with Allow
    (415, "POST", "/v0/topics/T", {"content": b"{}", "headers": {"content-type": "text/plain"}}),
    (
        400,
        "POST",
        "/v0/topics/T",
        {"content": b'{"records": [', "headers": {"content-type": "application/json"}},
    ),
    (413, "POST", "/v0/topics/T", {"json": {"records": [{"data": "x" * MAX_BODY}]}}),
    (200, "POST", "/v0/topics/T", {"json": {"records": [{"data": "y" * 3000}] * 5}}),
    (200, "POST", "/v0/topics/T/diff", {"json": {"from_seq": 3}, "headers": {"accept-encoding": "gzip"}}),
    (200, "HEAD", "/v0/openapi.json", {}),  # the head alone, the GET body's length
    (405, "HEAD", "/v0/health", {}),  # its head alone
    (400, "GET", "/v0/ws", {}),  # no upgrade (and WebSocket over HTTP/2 is not served)
    (404, "GET", "/v0/watch/wid_doesnotexist", {}),
]
"""Each case's status, then the request (``T``: the topic's name)."""


async def _answers(client: httpx.AsyncClient, topic: str) -> list[tuple[int, dict[str, str], Any]]:
    """Each of :data:`CASES` on ``topic``: status, headers but ``content-length`` (checked
    against the body as sent), and the body decoded, normalized, the topic's name replaced."""
    out = []
    for _, method, path, kw in CASES:
        async with client.stream(method, path.replace("T", topic), **kw) as r:
            raw = b"".join([chunk async for chunk in r.aiter_raw()])
        headers = dict(r.headers)
        length = int(headers.pop("content-length"))
        if method == "HEAD":
            assert raw == b"" and length > 0  # the head alone, with the GET body's length
        else:
            assert length == len(raw)
        if headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        out.append((r.status_code, headers, _normal(raw.replace(topic.encode(), b"T"))))
    return out


@pytest.mark.parametrize("env", [{}, {"TOPICS_API_KEYS": "k"}], ids=["open", "with-keys"])
async def test_every_answer_is_the_http11_answer(env: dict[str, str]) -> None:
    async with serving(env) as srv:
        headers = {"authorization": "Bearer k"} if env else {}
        async with srv.h1(headers=headers) as h1, srv.h2(headers=headers) as h2:
            over_h1 = await _answers(h1, "t1x")
            over_h2 = await _answers(h2, "t2x")
    assert over_h2 == over_h1
    assert [status for status, _, _ in over_h2] == [status for status, _, _, _ in CASES]
    assert over_h2[13][1]["content-encoding"] == "gzip"


async def test_auth_over_h2c_is_the_http11_auth() -> None:
    async with serving({"TOPICS_API_KEYS": "admin,reader:r"}) as srv, srv.h2() as http:
        r = await http.put("/v0/topics/a", json={})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == 'Bearer realm="topics"'
        r = await http.put("/v0/topics/a", json={}, headers={"authorization": "Bearer reader"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        r = await http.put("/v0/topics/a", json={}, headers={"authorization": "Bearer admin"})
        assert r.status_code == 201
        r = await http.get("/v0/topics/a", headers={"authorization": "Bearer reader"})
        assert r.status_code == 200 and r.http_version == "HTTP/2"


async def test_a_body_over_the_limit_is_413_and_the_connection_goes_on(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    sid = client.request(
        "POST", "/v0/topics/big", raw=b"", headers={"content-type": "application/json"}, end=False
    )
    for _ in range(3):  # 96 KiB in all, past the 64 KiB limit: discarded as it arrives
        await client.send(sid, b" " * 32_768)
    await client.send(sid, b"", end=True)
    stream = await client.response(sid)
    assert stream.status == 413 and stream.json()["error"]["code"] == "payload_too_large"
    sid = client.request("GET", "/v0/health")
    assert (await client.response(sid)).status == 200
    assert srv.h2_connections()[0].buffered == 0
    client.close()


async def test_a_path_that_is_no_request_target_is_400_as_over_http11(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    stream = await client.call("GET", "/v0/health\x7f")
    assert stream.status == 400 and stream.json()["error"]["code"] == "invalid_request"
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    writer.write(b"GET /v0/health\x7f HTTP/1.1\r\nHost: t\r\n\r\n")
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
    writer.close()
    client.close()


async def test_expect_100_continue_gets_an_interim_response(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    body = orjson.dumps({"records": [{"data": 1}]})
    sid = client.request(
        "POST",
        "/v0/topics/e",
        raw=b"",
        headers={"content-type": "application/json", "expect": "100-continue"},
        end=False,
    )
    await client.until(lambda: client.streams[sid].interim == [100])
    await client.send(sid, body, end=True)
    stream = await client.response(sid)
    assert stream.status == 201 and stream.json()["seqs"] == [1]
    client.close()


async def test_a_long_poll_holds_up_nothing_else_on_the_connection(srv: Srv) -> None:
    async with srv.h2() as http:
        assert (await http.put("/v0/topics/lp", json={})).status_code == 201
        poll = asyncio.ensure_future(http.post("/v0/topics/lp/diff", json={"from_seq": 0, "wait_ms": 10_000}))
        await until(lambda: any(c.streams for c in srv.h2_connections()))
        # the write goes on the same connection while the long-poll waits
        r = await http.post("/v0/topics/lp", json={"records": [{"data": "hello"}]})
        assert r.status_code == 200
        answer = await poll
        assert answer.status_code == 200 and [rec["data"] for rec in answer.json()["records"]] == ["hello"]
        assert len(srv.h2_connections()) == 1


async def test_websocket_over_http2_is_not_served(srv: Srv) -> None:
    """``GET /v0/ws`` gets the 400 of a GET without an upgrade; an RFC 8441 extended CONNECT
    (never offered: no SETTINGS_ENABLE_CONNECT_PROTOCOL) a 405 at once, then the stream is
    ended (RST_STREAM NO_ERROR) although the tunnel's request never ends."""
    async with srv.h2() as http:
        r = await http.get("/v0/ws", headers={"sec-websocket-version": "13"})
        assert r.status_code == 400 and r.json()["error"]["detail"] == {"field": "upgrade"}
        assert "RFC 8441" in r.json()["error"]["message"]
    client = await H2Client.open(srv.port)
    sid = client.h2.get_next_available_stream_id()
    head = [(b":method", b"CONNECT"), (b":protocol", b"websocket"), (b":scheme", b"http")]
    client.h2.send_headers(sid, [*head, (b":path", b"/v0/ws"), (b":authority", b"t")])  # no END_STREAM
    client.streams[sid] = H2Stream()
    client.flush()
    stream = await client.response(sid)
    assert stream.status == 405 and stream.headers["allow"] == "GET"
    await client.until(lambda: stream.reset is not None)
    assert stream.reset == ErrorCodes.NO_ERROR
    assert (await client.call("GET", "/v0/health")).status == 200
    client.close()


async def test_curl_with_prior_knowledge(srv: Srv) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed (scripts/setup.sh installs it)")

    async def run(*args: str) -> tuple[str, bytes]:
        proc = await asyncio.create_subprocess_exec(
            curl,
            "-s",
            "--http2-prior-knowledge",
            "-w",
            "\n%{http_version} %{http_code}",
            *args,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        body, _, status = out.rpartition(b"\n")
        return status.decode(), body

    json_type = ("-H", "Content-Type: application/json")
    status, body = await run(f"{srv.url}/v0/health")
    assert status == "2 200" and orjson.loads(body)["status"] == "ok"
    status, _ = await run("-X", "PUT", *json_type, "-d", "{}", f"{srv.url}/v0/topics/c")
    assert status == "2 201"
    status, body = await run(
        "-X", "POST", *json_type, "-d", '{"records": [{"data": {"id": 1}}]}', f"{srv.url}/v0/topics/c"
    )
    assert status == "2 200" and orjson.loads(body)["seqs"] == [1]
    status, body = await run("-X", "POST", *json_type, "-d", '{"from_seq": 0}', f"{srv.url}/v0/topics/c/diff")
    assert status == "2 200" and orjson.loads(body)["records"][0]["data"] == {"id": 1}


async def test_upgrade_h2c_is_answered_over_http11(srv: Srv) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    writer.write(
        b"GET /v0/health HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 200 ")
    assert srv.h2_connections() == []
    writer.close()


# ---------------------------------------------------------------------------------------------
# the first bytes
# ---------------------------------------------------------------------------------------------


async def test_a_preface_split_across_reads_is_still_http2(srv: Srv) -> None:
    client = await H2Client.open(srv.port, split=5)
    assert (await client.call("GET", "/v0/health")).status == 200
    assert len(srv.h2_connections()) == 1
    client.close()


async def test_http11_starting_like_the_preface_is_parsed_whole(srv: Srv) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    request = b"PUT /v0/topics/p HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
    writer.write(request[:1])  # "P", as the preface starts
    await writer.drain()
    await asyncio.sleep(0.05)  # most likely a read of its own (the test holds either way)
    writer.write(request[1:])
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 201 ")
    assert [type(c) for c in srv.native.connections] == [HttpProtocol]
    writer.close()


# ---------------------------------------------------------------------------------------------
# SSE over h2c
# ---------------------------------------------------------------------------------------------


async def _frames(response: httpx.Response) -> AsyncIterator[SseFrame]:
    buffer = ""
    async for text in response.aiter_text():
        buffer += text
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            yield parse_frame(block)


async def _next_event(frames: AsyncIterator[SseFrame], name: str) -> SseFrame:
    async for frame in frames:
        if frame.event == name:
            return frame
    raise AssertionError(f"the stream ended before {name}")


async def test_many_watches_stream_on_one_connection(srv: Srv) -> None:
    n = 8
    async with srv.h2() as http, AsyncExitStack() as streams:
        for i in range(n):
            assert (await http.put(f"/v0/topics/w{i}", json={})).status_code == 201
        wids = [
            (await http.post("/v0/watch", json={"topics": {f"w{i}": {}}})).json()["wid"] for i in range(n)
        ]
        responses = [
            await streams.enter_async_context(http.stream("GET", f"/v0/watch/{wid}")) for wid in wids
        ]
        iters = [_frames(r) for r in responses]
        for response, frames in zip(responses, iters, strict=True):
            assert response.status_code == 200 and response.http_version == "HTTP/2"
            assert response.headers["content-type"].startswith("text/event-stream")
            assert "connection" not in response.headers and "transfer-encoding" not in response.headers
            await _next_event(frames, "caught-up")
        (conn,) = srv.h2_connections()
        assert sum(s.streaming for s in conn.streams.values()) == n
        for i in range(n):
            r = await http.post(f"/v0/topics/w{i}", json={"records": [{"data": {"i": i}}]})
            assert r.status_code == 200
        for i, frames in enumerate(iters):
            frame = await _next_event(frames, "record")
            assert frame.json()["records"][0]["data"] == {"i": i}


async def test_work_streams_push_jobs_over_h2c(srv: Srv) -> None:
    """Two workers' ``/work`` streams on one connection, beside the writes that feed them."""
    async with srv.h2() as http, AsyncExitStack() as streams:
        assert (await http.put("/v0/topics/jobs", json={"type": "queue"})).status_code == 201
        workers = [
            await streams.enter_async_context(http.stream("GET", f"/v0/topics/jobs/work?node=w{i}&max=1"))
            for i in range(2)
        ]
        assert [w.status_code for w in workers] == [200, 200]
        r = await http.post("/v0/topics/jobs", json={"records": [{"data": "a"}, {"data": "b"}]})
        assert r.status_code == 200
        jobs = [(await _next_event(_frames(w), "job")).json() for w in workers]
        assert sorted(job["data"] for job in jobs) == ["a", "b"]  # one each (max=1)
        for i, job in enumerate(jobs):
            body = {"node": f"w{i}", "seqs": [job["$seq"]], "lease_ids": [job["lease_id"]]}
            assert (await http.post("/v0/topics/jobs/ack", json=body)).json()["acked"] == 1


async def test_a_stream_reset_cancels_that_stream_only(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    assert (await client.call("PUT", "/v0/topics/r", {})).status == 201
    wid = (await client.call("POST", "/v0/watch", {"topics": {"r": {}}})).json()["wid"]
    watch = client.request("GET", f"/v0/watch/{wid}")
    other_wid = (await client.call("POST", "/v0/watch", {"topics": {"r": {}}})).json()["wid"]
    other = client.request("GET", f"/v0/watch/{other_wid}")
    poll = client.request("POST", "/v0/topics/r/diff", {"from_seq": 0, "wait_ms": 10_000})
    await client.until(
        lambda: b"caught-up" in client.streams[watch].data and b"caught-up" in client.streams[other].data
    )
    assert srv.ctx.admission.sse_connections == 2
    client.reset(watch)
    await until(lambda: srv.ctx.watches._sessions[wid].owner is None)  # the session let go of it
    assert srv.ctx.admission.sse_connections == 1  # its stream slot is back
    # the other stream and the long-poll on the same connection carry on
    assert (await client.call("POST", "/v0/topics/r", {"records": [{"data": "after"}]})).status == 200
    assert (await client.response(poll)).json()["records"][0]["data"] == "after"
    await client.until(lambda: b'"after"' in client.streams[other].data)
    assert client.streams[other].reset is None and not client.streams[other].ended
    assert (await client.call("GET", "/v0/health")).status == 200
    client.close()


def _request_and_reset(client: H2Client, method: str, path: str, body: bytes = b"") -> None:
    """A request and its RST_STREAM in one write (the "rapid reset" pattern)."""
    sid = client.h2.get_next_available_stream_id()
    head = [(b":method", method.encode()), (b":path", path.encode()), (b":scheme", b"http")]
    head += [(b":authority", b"t"), (b"authorization", b"Bearer k"), (b"content-type", b"application/json")]
    client.h2.send_headers(sid, head, end_stream=not body)
    if body:
        client.h2.send_data(sid, body, end_stream=True)
    client.h2.reset_stream(sid)
    client.flush()


async def test_a_request_reset_in_the_same_read_is_not_run_and_holds_nothing() -> None:
    async with serving({"TOPICS_API_KEYS": "k", "TOPICS_MAX_SSE_CONNECTIONS": "2"}) as srv:
        client = await H2Client.open(srv.port)
        auth = {"authorization": "Bearer k"}
        assert (await client.call("PUT", "/v0/topics/q", {}, auth)).status == 201
        for _ in range(5):
            wid = (await client.call("POST", "/v0/watch", {"topics": {"q": {}}}, auth)).json()["wid"]
            _request_and_reset(client, "GET", f"/v0/watch/{wid}")
            _request_and_reset(client, "GET", "/v0/health")
            _request_and_reset(client, "POST", "/v0/topics/q", b'{"records": [{"data": 1}]}')
        # the connection goes on; no write was applied, no stream slot is held (the cap is 2)
        answer = await client.call("POST", "/v0/topics/q/diff", {"from_seq": 0}, auth)
        assert answer.status == 200 and answer.json()["records"] == []
        assert srv.ctx.admission.sse_connections == 0
        wid = (await client.call("POST", "/v0/watch", {"topics": {"q": {}}}, auth)).json()["wid"]
        watch = client.request("GET", f"/v0/watch/{wid}", headers=auth)
        await client.until(lambda: b"caught-up" in client.streams[watch].data)
        client.close()


class _Transport(asyncio.Transport):
    """Collects what the connection writes."""

    def __init__(self) -> None:
        super().__init__()
        self.out = bytearray()
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out += data

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def can_write_eof(self) -> bool:
        return False


async def test_a_stream_reset_before_its_task_ran_releases_its_slots() -> None:
    """Two reads handled before the event loop runs the task the first one created (uvloop
    handles every socket ready in one poll before any task step): the task is cancelled only
    once it ran, so the app releases its slots (a cancel before the first step would skip every
    ``finally`` of the coroutine)."""
    async with serving({"TOPICS_API_KEYS": "k"}) as srv:
        client = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        client.initiate_connection()
        conn = Http2Connection(
            SimpleNamespace(app=srv.native.app, loop=asyncio.get_running_loop(), connections=set()),
            _Transport(),
        )
        conn.data_received(client.data_to_send())
        auth = [(b"authorization", b"Bearer k"), (b"content-type", b"application/json")]
        for sid, path, body in [
            (1, b"/v0/topics/q", b"{}"),
            (3, b"/v0/topics/q/diff", b'{"from_seq": 0, "wait_ms": 10000}'),
        ]:
            method = b"PUT" if sid == 1 else b"POST"
            client.send_headers(
                sid,
                [(b":method", method), (b":path", path), (b":scheme", b"http"), (b":authority", b"t"), *auth],
            )
            client.send_data(sid, body, end_stream=True)
        conn.data_received(client.data_to_send())  # the PUT is answered at once; the long-poll waits
        assert conn.streams[3].task is not None and srv.ctx.admission.inflight == 1
        client.reset_stream(3)
        conn.data_received(client.data_to_send())  # before the long-poll's task ever ran
        await until(lambda: srv.ctx.admission.inflight == 0)
        assert conn.streams == {}


# ---------------------------------------------------------------------------------------------
# flow control and slow consumers
# ---------------------------------------------------------------------------------------------


async def _blocked_watch(srv: Srv, client: H2Client, topic: str) -> tuple[str, int]:
    """A watch stream on ``topic`` whose client stopped reading it, its window shut with a BIG
    record pending and three more records behind it: its wid and stream id."""
    assert (await client.call("PUT", f"/v0/topics/{topic}", {})).status == 201
    body = {"topics": {topic: {}}, "max_batch_bytes": 65536}
    wid = (await client.call("POST", "/v0/watch", body)).json()["wid"]
    watch = client.request("GET", f"/v0/watch/{wid}")
    await client.until(lambda: b"caught-up" in client.streams[watch].data)
    client.unread.add(watch)  # the client stops reading this stream
    assert (await client.call("POST", f"/v0/topics/{topic}", {"records": [{"data": BIG}]})).status == 200
    (conn,) = srv.h2_connections()
    await until(lambda: bool(conn.streams[watch].pending))  # its window is shut
    for i in range(3):
        assert (await client.call("POST", f"/v0/topics/{topic}", {"records": [{"data": i}]})).status == 200
    return wid, watch


async def test_a_stream_not_read_meets_the_slow_consumer_rules_alone() -> None:
    clock = ManualClock()
    async with serving(clock=clock) as srv:
        client = await H2Client.open(srv.port, window=16_384)
        wid, watch = await _blocked_watch(srv, client, "s")
        clock.advance(29_999)
        await asyncio.sleep(0.05)
        assert srv.ctx.watches._sessions[wid].owner is not None  # still waiting for the client
        # meanwhile the connection serves everything else
        assert (await client.call("GET", "/v0/health")).status == 200
        clock.advance(1)
        await until(lambda: srv.ctx.watches._sessions[wid].owner is None)  # the server gave up
        assert srv.ctx.admission.sse_connections == 0
        client.read(watch)  # the client reads again: the rest, the final 408, END_STREAM
        stream = await client.response(watch)
        assert stream.ended and stream.reset is None
        frames = [parse_frame(block) for block in stream.data.decode().split("\n\n") if block]
        final = frames[-1]
        assert final.event == "error" and final.json()["code"] == 408
        assert "slow consumer" in final.json()["error"]
        records = [f for f in frames if f.event == "record"]
        assert [r["data"] for f in records for r in f.json()["records"]] == [
            BIG
        ]  # the rest waits in the session
        client.close()


async def test_a_stream_that_ended_unread_is_reset_after_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    from topics_server import http2

    monkeypatch.setattr(http2, "STALLED_CLOSE_S", 0.05)
    clock = ManualClock()
    async with serving(clock=clock) as srv:
        client = await H2Client.open(srv.port, window=16_384)
        _, watch = await _blocked_watch(srv, client, "g")
        clock.advance(30_000)  # the server gives up; the final frame cannot go out either
        stream = await client.response(watch)
        assert stream.reset == ErrorCodes.CANCEL and not stream.ended
        (conn,) = srv.h2_connections()
        assert conn.streams == {} and conn.buffered == 0
        assert (await client.call("GET", "/v0/health")).status == 200
        client.close()


# ---------------------------------------------------------------------------------------------
# limits, malformed HTTP/2, shutdown
# ---------------------------------------------------------------------------------------------


async def test_bodies_held_on_a_connection_are_bounded(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    json_type = {"content-type": "application/json"}
    first = client.request("POST", "/v0/topics/b", raw=b"", headers=json_type, end=False)
    second = client.request("POST", "/v0/topics/b", raw=b"", headers=json_type, end=False)
    chunk = b'{"records": [{"data": "' + b"a" * 40_000
    await client.send(first, chunk)
    await client.send(second, chunk)  # 80 KB held in all, past the 64 KiB of one connection: refused
    await client.until(lambda: client.streams[second].reset is not None)
    assert client.streams[second].reset == ErrorCodes.REFUSED_STREAM
    await client.send(first, b'"}]}', end=True)
    assert (await client.response(first)).status == 201  # the first body was whole
    third = client.request("POST", "/v0/topics/b", raw=b"", headers=json_type, end=False)
    await client.send(third, orjson.dumps({"records": [{"data": "c" * 40_000}]}), end=True)
    assert (await client.response(third)).status == 200  # the room is back
    assert srv.h2_connections()[0].buffered == 0
    client.close()


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00",  # WINDOW_UPDATE of 0 on the connection
        b"\x00\x00\x08\x07\x00\x00\x00\x00\x01" + b"\x00" * 8,  # GOAWAY on a stream
        b"\x00\x00\x05\x01\x05\x00\x00\x00\x02" + b"\xff" * 5,  # HEADERS on an even (server) stream id
    ],
    ids=["zero-window-update", "goaway-on-a-stream", "even-stream-id"],
)
async def test_malformed_http2_is_a_goaway_and_the_server_goes_on(srv: Srv, frame: bytes) -> None:
    client = await H2Client.open(srv.port)
    await client.until(lambda: client.h2.remote_settings.max_concurrent_streams == 100)
    client.writer.write(frame)
    await client.until(lambda: client.goaway is not None)
    assert client.goaway is not None and client.goaway.error_code == ErrorCodes.PROTOCOL_ERROR
    await client.closed_by_server()
    client.close()
    await until(lambda: srv.h2_connections() == [])
    async with srv.h2() as http:
        assert (await http.get("/v0/health")).status_code == 200


async def test_the_settings_the_server_sends(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    await client.until(lambda: client.h2.remote_settings.max_concurrent_streams == 100)
    settings = client.h2.remote_settings
    assert settings.max_header_list_size == 65_536
    assert settings.initial_window_size == 1 << 20
    assert settings.enable_connect_protocol == 0  # no WebSocket over HTTP/2
    client.close()


async def test_shutdown_ends_sse_sends_goaway_and_finishes_requests_in_flight(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    assert (await client.call("PUT", "/v0/topics/sd", {})).status == 201
    wid = (await client.call("POST", "/v0/watch", {"topics": {"sd": {}}})).json()["wid"]
    watch = client.request("GET", f"/v0/watch/{wid}")
    poll = client.request("POST", "/v0/topics/sd/diff", {"from_seq": 0, "wait_ms": 300})
    await client.until(lambda: b"caught-up" in client.streams[watch].data)
    (conn,) = srv.h2_connections()
    closing = asyncio.ensure_future(srv.native.shutdown(5.0))
    await until(lambda: conn.going_away)
    late = client.request("GET", "/v0/health")
    assert (await client.response(late)).reset == ErrorCodes.REFUSED_STREAM  # nothing done: retryable
    # the SSE stream ends cleanly: a final ``event: error`` 503, then END_STREAM
    await client.until(lambda: client.streams[watch].ended)
    assert client.streams[watch].reset is None
    assert b'event: error\ndata: {"code":503' in client.streams[watch].data
    stream = await client.response(poll)  # the parked long-poll is still answered
    assert stream.status == 200 and stream.json()["records"] == []
    # then the GOAWAY, naming the last stream taken (after the responses: an ``h2`` client
    # such as this one takes no frame after a GOAWAY)
    await client.until(lambda: client.goaway is not None)
    assert client.goaway is not None and client.goaway.error_code == ErrorCodes.NO_ERROR
    assert client.goaway.last_stream_id == poll
    await client.closed_by_server()
    client.close()
    await closing
    assert srv.native.connections == set() and srv.ctx.admission.sse_connections == 0


async def test_idle_h2c_connections_are_closed_with_a_goaway(srv: Srv) -> None:
    client = await H2Client.open(srv.port)
    assert (await client.call("GET", "/v0/health")).status == 200
    later = asyncio.get_running_loop().time() + native.KEEP_ALIVE_S + 1
    assert srv.native.close_idle(now=later) == 1
    await client.until(lambda: client.goaway is not None)
    assert client.goaway is not None and client.goaway.error_code == ErrorCodes.NO_ERROR
    await client.closed_by_server()
    client.close()


async def test_cors_over_h2c() -> None:
    """A preflight (a 204 without ``content-length``), an actual response and an SSE stream of
    an allowed origin carry the CORS headers over HTTP/2 as over HTTP/1.1."""
    origin = "https://app.example.com"
    async with serving({"TOPICS_CORS_ORIGINS": origin}) as srv, srv.h2() as http:
        r = await http.options(
            "/v0/topics/t", headers={"Origin": origin, "Access-Control-Request-Method": "PUT"}
        )
        assert r.http_version == "HTTP/2" and r.status_code == 204
        assert r.headers["access-control-allow-origin"] == origin and "content-length" not in r.headers
        r = await http.put("/v0/topics/t", json={}, headers={"Origin": origin})
        assert r.status_code == 201 and r.headers["access-control-allow-origin"] == origin
        wid = (await http.post("/v0/watch", json={"topics": {"t": {}}})).json()["wid"]
        async with http.stream("GET", f"/v0/watch/{wid}", headers={"Origin": origin}) as stream:
            assert stream.status_code == 200 and stream.http_version == "HTTP/2"
            assert stream.headers["access-control-allow-origin"] == origin
            assert "connection" not in stream.headers
            await _next_event(_frames(stream), "caught-up")
    statuses = srv.ctx.requests.operations["watch_stream"].statuses
    assert statuses == {200: 1}  # the stream counted once it ended, as over HTTP/1.1


# -- bounds found by review (issue 25) ------------------------------------------------------------


async def test_streams_only_waiting_for_the_client_do_not_keep_a_connection_alive(srv: Srv) -> None:
    """A request that never ends, or answers a shut window holds back, are swept with the
    connection once idle — as HTTP/1.1 sweeps a request head whose body never comes."""
    async with srv.h1() as http:
        for _ in range(3):
            await http.post("/v0/topics/w", json={"records": [{"data": "x" * 50_000}]})
    stalled = await H2Client.open(srv.port)
    stalled.request("POST", "/v0/topics/w", raw=b"", headers={"content-type": "application/json"}, end=False)
    shut = await H2Client.open(srv.port, window=0)
    answers = [shut.request("POST", "/v0/topics/w/diff", {"from_seq": 0}) for _ in range(5)]
    await shut.until(lambda: all(shut.streams[s].status is not None for s in answers))
    await until(lambda: len(srv.h2_connections()) == 2 and all(c.streams for c in srv.h2_connections()))
    later = asyncio.get_running_loop().time() + native.KEEP_ALIVE_S * 2
    try:
        assert srv.native.close_idle(now=later) == 2
    finally:
        stalled.close()
        shut.close()


async def test_a_client_that_does_not_read_is_not_read_from(srv: Srv) -> None:
    """PINGs sent without reading their ACKs: reading pauses with writing, so the server's
    buffer stays bounded (the PING-flood pattern)."""
    client = await H2Client.open(srv.port)
    await client.until(lambda: client.h2.remote_settings.max_concurrent_streams == 100)
    (conn,) = srv.h2_connections()
    ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"\x00" * 8
    try:
        for _ in range(200):
            client.writer.write(ping * 5000)  # 85 KB of PINGs, the ACKs never read
            await asyncio.wait_for(client.writer.drain(), 0.5)
    except TimeoutError:
        pass  # the server stopped reading: what this test wants
    finally:
        size = conn.transport.get_write_buffer_size()
        client.close()
    assert size < 4 << 20, size
