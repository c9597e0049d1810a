"""The ``/v0/ws`` data plane (docs/WEBSOCKET.md; contract §7 ``/v0/ws``) over
real sockets: the in-process native server (``topics_server.http``) on a manual clock, driven by
the ``websockets`` client and, for handshake edge cases, control frames and server pings, by a
raw-socket client. One test runs the ASGI app (``topics_server.asgi``) under uvicorn.

Every frame is parsed as JSON and checked field by field; "no frame" is a short window."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_server import http as native
from topics_server.app import build
from topics_server.context import ServerContext
from topics_server.settings import load_settings
from topics_server.websocket import PING_INTERVAL_MS
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from .processes import NO_THROTTLE

Json = dict[str, Any]
TIMEOUT = 2.0
"""Seconds to wait for a frame that must come."""
QUIET = 0.3
"""Seconds of silence that count as "no frame"."""
MAX_BODY = 65536
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
KEY = "dGhlIHNhbXBsZSBub25jZQ=="


# -- servers -------------------------------------------------------------------------------------


@dataclass
class Server:
    port: int
    ctx: ServerContext
    http: httpx.AsyncClient
    native: native.HttpServer
    raws: list[Raw] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v0/ws"

    def listeners(self) -> int:
        count: int = self.ctx.engine.hub.listener_count()
        return count

    async def put(self, topic: str, config: Json | None = None) -> None:
        response = await self.http.put(f"/v0/topics/{topic}", json=config or {})
        assert response.status_code in (200, 201), response.text

    async def append(self, topic: str, records: list[Json]) -> Json:
        response = await self.http.post(f"/v0/topics/{topic}", json={"records": records})
        assert response.status_code in (200, 201), response.text
        body: Json = response.json()
        return body

    async def topic(self, topic: str) -> httpx.Response:
        return await self.http.get(f"/v0/topics/{topic}")

    async def raw(self, sock: socket.socket | None = None) -> Raw:
        """A raw connection (on ``sock`` if given), closed when the server fixture ends."""
        if sock is None:
            streams = await asyncio.open_connection("127.0.0.1", self.port)
        else:
            streams = await asyncio.open_connection(sock=sock, limit=1 << 24)
        raw = Raw(*streams)
        self.raws.append(raw)
        return raw


@contextlib.asynccontextmanager
async def serve(
    env: dict[str, str], clock: ManualClock | None = None, limits: Limits | None = None
) -> AsyncIterator[Server]:
    """The native server on port 0: in memory on ``clock`` if given, else on a data directory
    (``TOPICS_DATA_DIR`` in ``env``) and the system clock."""
    settings = load_settings(env)
    engine = None if clock is None else Engine(clock, limits or settings.limits)
    app, ctx = build(settings, engine=engine)
    await ctx.start()
    await ctx.wait_ready()
    http_server = native.HttpServer(app)
    await http_server.start("127.0.0.1", 0)
    port: int = http_server.sockets[0].getsockname()[1]
    try:
        # verify=False: plain HTTP, and no CA bundle to load per test
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT, verify=False
        ) as client:
            server = Server(port, ctx, client, http_server)
            try:
                yield server
            finally:
                for raw in server.raws:
                    raw.writer.close()
                    with contextlib.suppress(OSError):
                        await raw.writer.wait_closed()
    finally:
        await http_server.shutdown(2.0)
        await ctx.stop()


@pytest.fixture
async def server(clock: ManualClock) -> AsyncIterator[Server]:
    """In memory, on the manual clock: ready at once, timers fire only when the test moves time."""
    async with serve({"TOPICS_MAX_BODY_BYTES": str(MAX_BODY)}, clock) as s:
        yield s


@pytest.fixture
async def durable_server(tmp_path: Path) -> AsyncIterator[Server]:
    """With a data directory (a real WAL, so an ``fsync`` topic's ack waits for its fsync) and
    the system clock — without the elastic throttle, which a loaded machine's loop lag turns on
    (it would refuse a publish to a default-priority topic ``throttled``)."""
    async with serve(
        {"TOPICS_DATA_DIR": str(tmp_path / "data"), "TOPICS_MAX_BODY_BYTES": str(MAX_BODY), **NO_THROTTLE}
    ) as s:
        yield s


# -- the websockets client -----------------------------------------------------------------------


class Client:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, command: Any) -> None:
        await self.ws.send(orjson.dumps(command).decode())

    async def recv(self) -> Json:
        message = await asyncio.wait_for(self.ws.recv(), TIMEOUT)
        assert isinstance(message, str), f"server frames are text messages, got {message!r}"
        frame = orjson.loads(message)
        assert isinstance(frame, dict) and isinstance(frame.get("op"), str), frame
        return frame

    async def call(self, command: Any) -> Json:
        await self.send(command)
        return await self.recv()

    async def recv_n(self, n: int) -> list[Json]:
        return [await self.recv() for _ in range(n)]

    async def quiet(self, window: float = QUIET) -> None:
        """No frame arrives within ``window`` seconds."""
        try:
            message = await asyncio.wait_for(self.ws.recv(), window)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected frame: {message!r}")

    async def until_caught_up(self, topic: str) -> list[Json]:
        """Frames up to and including ``topic``'s ``caught_up``."""
        frames = []
        while True:
            frame = await self.recv()
            frames.append(frame)
            if frame["op"] == "caught_up" and frame["topic"] == topic:
                return frames

    async def subscribe(self, request_id: str = "s", **fields: Any) -> Json:
        frame = await self.call({"op": "subscribe", "request_id": request_id, **fields})
        assert frame["op"] == "subscribed" and frame["request_id"] == request_id, frame
        return frame

    async def publish(self, topic: str, records: list[Json], request_id: str = "p", **fields: Any) -> Json:
        frame = await self.call(
            {"op": "publish", "request_id": request_id, "topic": topic, "records": records, **fields}
        )
        assert frame["op"] == "ack" and frame["request_id"] == request_id, frame
        return frame

    async def assert_usable(self, request_id: str = "alive") -> None:
        assert await self.call({"op": "ping", "request_id": request_id}) == {
            "op": "pong",
            "request_id": request_id,
        }


@contextlib.asynccontextmanager
async def ws_client(server: Server, **kwargs: Any) -> AsyncIterator[Client]:
    async with connect(server.url, open_timeout=TIMEOUT, close_timeout=TIMEOUT, **kwargs) as ws:
        yield Client(ws)


def assert_error(frame: Json, code: str, request_id: str | None) -> None:
    assert frame["op"] == "error", frame
    assert frame["code"] == code, frame
    assert isinstance(frame["message"], str) and frame["message"], frame
    if request_id is None:
        assert "request_id" not in frame, frame
    else:
        assert frame["request_id"] == request_id, frame


def assert_record_frame(frame: Json, topic: str, from_seq: int, seqs: list[int], head_seq: int) -> None:
    assert frame["op"] == "record", frame
    assert frame["topic"] == topic
    assert frame["from_seq"] == from_seq
    assert frame["to_seq"] == seqs[-1]
    assert frame["head_seq"] == head_seq
    assert [r["$seq"] for r in frame["records"]] == seqs


async def eventually(check: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# -- a raw client (handshakes, control frames, server pings) --------------------------------------


def handshake(headers: dict[str, str] | None = None, path: str = "/v0/ws") -> bytes:
    base = {
        "Host": "t",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": KEY,
        "Sec-WebSocket-Version": "13",
    }
    merged = {**base, **(headers or {})}
    lines = [f"GET {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in merged.items() if v is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def client_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    """One masked client frame (RFC 6455 §5.2)."""
    mask = os.urandom(4)
    size = len(payload)
    if size < 126:
        length = bytes([0x80 | size])
    elif size < 1 << 16:
        length = bytes([0x80 | 126]) + struct.pack("!H", size)
    else:
        length = bytes([0x80 | 127]) + struct.pack("!Q", size)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([(0x80 if fin else 0) | opcode]) + length + mask + masked


TEXT, CONT, CLOSE, PING, PONG = 0x1, 0x0, 0x8, 0x9, 0xA


@dataclass
class WireFrame:
    fin: bool
    rsv: int
    opcode: int
    masked: bool
    payload: bytes

    def json(self) -> Json:
        assert self.opcode == TEXT, self
        value: Json = orjson.loads(self.payload)
        return value


class Raw:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def response(self) -> tuple[int, dict[str, str], bytes]:
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        return status, headers, body

    async def upgrade(self, headers: dict[str, str] | None = None) -> dict[str, str]:
        self.writer.write(handshake(headers))
        status, response_headers, _ = await self.response()
        assert status == 101, (status, response_headers)
        return response_headers

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    def send_json(self, command: Json) -> None:
        self.send(client_frame(TEXT, orjson.dumps(command)))

    async def frame(self, timeout: float = TIMEOUT) -> WireFrame:
        async def read() -> WireFrame:
            b0, b1 = await self.reader.readexactly(2)
            size = b1 & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", await self.reader.readexactly(8))
            masked = bool(b1 & 0x80)
            mask = await self.reader.readexactly(4) if masked else b""
            payload = await self.reader.readexactly(size)
            if masked:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            return WireFrame(bool(b0 & 0x80), (b0 >> 4) & 0x7, b0 & 0x0F, masked, payload)

        return await asyncio.wait_for(read(), timeout)

    async def no_frame(self, window: float = QUIET) -> None:
        try:
            data = await asyncio.wait_for(self.reader.read(1), window)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected bytes from the server: {data!r}")

    async def closed_by_server(self) -> bool:
        return await asyncio.wait_for(self.reader.read(), TIMEOUT) == b""

    def close(self) -> None:
        self.writer.close()


def accept_for(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()  # RFC 6455 §4.2.2


def assert_envelope(status: int, body: bytes, expected_status: int, code: str) -> Json:
    assert status == expected_status, body
    envelope = orjson.loads(body)
    assert envelope["error"]["code"] == code, envelope
    assert isinstance(envelope["error"]["message"], str) and envelope["error"]["message"]
    error: Json = envelope["error"]
    return error


# -- handshake -------------------------------------------------------------------------------------


async def test_upgrade_is_101_with_the_accept_key_and_no_extension_even_when_deflate_is_offered(
    server: Server,
) -> None:
    raw = await server.raw()
    headers = await raw.upgrade(
        {"Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits", "Origin": "http://t"}
    )
    assert headers["upgrade"].lower() == "websocket"
    assert "upgrade" in headers["connection"].lower()
    assert headers["sec-websocket-accept"] == accept_for(KEY)
    assert "sec-websocket-extensions" not in headers  # never compressed
    raw.send_json({"op": "ping", "request_id": "r1"})
    frame = await raw.frame()
    # a server frame: final, unmasked, no RSV1 (no per-message compression), text
    assert (frame.fin, frame.rsv, frame.opcode, frame.masked) == (True, 0, TEXT, False)
    assert frame.json() == {"op": "pong", "request_id": "r1"}
    raw.close()


async def test_websockets_client_offering_deflate_gets_no_extension(server: Server) -> None:
    async with ws_client(server, compression="deflate") as c:
        assert c.ws.response is not None
        assert c.ws.response.status_code == 101
        assert "Sec-WebSocket-Extensions" not in c.ws.response.headers
        await c.assert_usable()


@pytest.mark.parametrize(
    "headers",
    [
        {"Connection": "keep-alive, Upgrade"},  # Firefox sends a token list
        {"Upgrade": "WebSocket", "Connection": "upgrade"},  # tokens are case-insensitive
    ],
)
async def test_upgrade_header_variants_are_accepted(server: Server, headers: dict[str, str]) -> None:
    raw = await server.raw()
    response_headers = await raw.upgrade(headers)
    assert response_headers["sec-websocket-accept"] == accept_for(KEY)
    raw.send_json({"op": "ping", "request_id": "v"})
    assert (await raw.frame()).json() == {"op": "pong", "request_id": "v"}
    raw.close()


async def test_plain_get_without_upgrade_is_400_invalid_request(server: Server) -> None:
    response = await server.http.get("/v0/ws")
    assert response.headers["content-type"].startswith("application/json")
    error = assert_envelope(response.status_code, response.content, 400, "invalid_request")
    assert error["detail"] == {"field": "upgrade"}
    # the connection still serves HTTP
    assert (await server.http.get("/v0/health")).status_code == 200


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"Connection": "keep-alive"}, "upgrade"),  # Upgrade header without Connection: Upgrade
        ({"Sec-WebSocket-Key": "c2hvcnQ="}, "sec-websocket-key"),  # 5 bytes, not 16
        ({"Sec-WebSocket-Key": "not base64!!"}, "sec-websocket-key"),
        ({"Sec-WebSocket-Key": None}, "sec-websocket-key"),
        ({"Sec-WebSocket-Version": "8"}, "sec-websocket-version"),
        ({"Sec-WebSocket-Version": None}, "sec-websocket-version"),
    ],
)
async def test_bad_upgrade_is_a_400_envelope(server: Server, headers: dict[str, Any], field: str) -> None:
    raw = await server.raw()
    raw.send(handshake(headers))
    status, response_headers, body = await raw.response()
    assert response_headers["content-type"].startswith("application/json")
    error = assert_envelope(status, body, 400, "invalid_request")
    assert error["detail"]["field"] == field
    raw.close()


async def test_a_frame_sent_right_behind_the_handshake_is_answered(server: Server) -> None:
    raw = await server.raw()
    raw.send(handshake() + client_frame(TEXT, b'{"op":"ping","request_id":"early"}'))
    status, _, _ = await raw.response()
    assert status == 101
    assert (await raw.frame(timeout=0.5)).json() == {"op": "pong", "request_id": "early"}
    raw.close()


# -- ping, unsubscribe ---------------------------------------------------------------------------


async def test_ping_op_is_answered_with_pong(server: Server) -> None:
    async with ws_client(server) as c:
        assert await c.call({"op": "ping", "request_id": "ping-1"}) == {"op": "pong", "request_id": "ping-1"}
        assert await c.call({"op": "ping", "request_id": "x" * 256}) == {
            "op": "pong",
            "request_id": "x" * 256,
        }


async def test_unsubscribe_is_answered_and_stops_delivery(server: Server) -> None:
    await server.put("u")
    async with ws_client(server) as c:
        await c.subscribe(topic="u")
        assert await c.recv() == {"op": "caught_up", "topic": "u", "head_seq": 0}
        frame = await c.call({"op": "unsubscribe", "request_id": "u1", "topic": "u"})
        assert frame == {"op": "unsubscribed", "request_id": "u1", "topic": "u"}
        await eventually(lambda: server.listeners() == 0)
        await server.append("u", [{"data": 1}])
        await c.quiet()
        bad = await c.call({"op": "unsubscribe", "request_id": "u2"})  # no topic
        assert_error(bad, "invalid_request", "u2")


# -- subscribe ------------------------------------------------------------------------------------


async def test_subscribe_from_seq_replays_the_backlog_then_goes_live(
    server: Server, clock: ManualClock
) -> None:
    await server.append("t", [{"data": {"i": 1}, "node": "n1"}, {"data": {"i": 2}}, {"data": {"i": 3}}])
    async with ws_client(server) as c:
        subscribed = await c.subscribe("s1", topic="t", from_seq=1)
        assert subscribed == {
            "op": "subscribed",
            "request_id": "s1",
            "topics": {"t": {"from_seq": 1, "head_seq": 3, "earliest_seq": 1}},
        }
        record = await c.recv()
        assert record == {
            "op": "record",
            "topic": "t",
            "from_seq": 1,
            "to_seq": 3,
            "head_seq": 3,
            "records": [
                {"$seq": 2, "$ts": clock.now_ms(), "data": {"i": 2}},
                {"$seq": 3, "$ts": clock.now_ms(), "data": {"i": 3}},
            ],
        }
        assert await c.recv() == {"op": "caught_up", "topic": "t", "head_seq": 3}
        # live: the ack, then the record (with $node, set by the batch-level default)
        clock.advance(5)
        ack = await c.publish("t", [{"data": {"i": 4}}], node="n2")
        assert ack["last_seq"] == 4 and ack["head_seq"] == 4
        live = await c.recv()
        assert live == {
            "op": "record",
            "topic": "t",
            "from_seq": 3,
            "to_seq": 4,
            "head_seq": 4,
            "records": [{"$seq": 4, "$ts": clock.now_ms(), "$node": "n2", "data": {"i": 4}}],
        }
        await server.append("t", [{"data": "http"}])  # a write by another path is pushed too
        assert_record_frame(await c.recv(), "t", 4, [5], 5)
        await c.quiet()


async def test_subscribe_from_zero_delivers_node_when_set(server: Server) -> None:
    await server.append("z", [{"data": 1, "node": "a"}, {"data": 2}])
    async with ws_client(server) as c:
        assert (await c.subscribe(topic="z"))["topics"]["z"]["from_seq"] == 0
        frame = await c.recv()
        assert_record_frame(frame, "z", 0, [1, 2], 2)
        assert frame["records"][0]["$node"] == "a"
        assert "$node" not in frame["records"][1]
        assert await c.recv() == {"op": "caught_up", "topic": "z", "head_seq": 2}


async def test_subscribe_tail_starts_at_the_head(server: Server) -> None:
    await server.append("tl", [{"data": i} for i in range(4)])
    async with ws_client(server) as c:
        subscribed = await c.subscribe(topic="tl", tail=True, from_seq=1)  # tail wins over from_seq
        assert subscribed["topics"] == {"tl": {"from_seq": 4, "head_seq": 4, "earliest_seq": 1}}
        assert await c.recv() == {"op": "caught_up", "topic": "tl", "head_seq": 4}
        await c.publish("tl", [{"data": "new"}])
        frame = await c.recv()
        assert_record_frame(frame, "tl", 4, [5], 5)
        assert frame["records"][0]["data"] == "new"


async def test_subscribe_with_a_topics_map(server: Server) -> None:
    await server.append("ma", [{"data": i} for i in range(3)])
    await server.append("mb", [{"data": i} for i in range(2)])
    async with ws_client(server) as c:
        subscribed = await c.subscribe("s2", topics={"ma": {"from_seq": 1}, "mb": {"tail": True}})
        assert subscribed["topics"] == {
            "ma": {"from_seq": 1, "head_seq": 3, "earliest_seq": 1},
            "mb": {"from_seq": 2, "head_seq": 2, "earliest_seq": 1},
        }
        frames = [await c.recv() for _ in range(3)]
        by_op = sorted((f["op"], f["topic"]) for f in frames)
        assert by_op == [("caught_up", "ma"), ("caught_up", "mb"), ("record", "ma")]
        (record,) = [f for f in frames if f["op"] == "record"]
        assert_record_frame(record, "ma", 1, [2, 3], 3)
        assert frames.index(record) < frames.index({"op": "caught_up", "topic": "ma", "head_seq": 3})
        assert {"op": "caught_up", "topic": "mb", "head_seq": 2} in frames
        await c.publish("mb", [{"data": "b"}])
        assert_record_frame(await c.recv(), "mb", 2, [3], 3)


async def test_subscribe_after_a_named_consumer(server: Server) -> None:
    """``consumer`` (an extension, issue 25): the subscription starts after the named consumer's
    committed cursor, for one ``topic`` or in a ``topics`` map; it excludes ``from_seq`` and
    ``tail``, and an unknown consumer answers ``no_such_consumer``."""
    await server.append("nc", [{"data": i} for i in range(5)])
    response = await server.http.put("/v0/topics/nc/consumers/c1", json={"from_seq": 3})
    assert response.status_code == 201, response.text
    async with ws_client(server) as c:
        subscribed = await c.subscribe(topic="nc", consumer="c1")
        assert subscribed["topics"] == {"nc": {"from_seq": 3, "head_seq": 5, "earliest_seq": 1}}
        assert_record_frame(await c.recv(), "nc", 3, [4, 5], 5)
        assert await c.recv() == {"op": "caught_up", "topic": "nc", "head_seq": 5}
    async with ws_client(server) as c:
        subscribed = await c.subscribe("s2", topics={"nc": {"consumer": "c1"}})
        assert subscribed["topics"]["nc"]["from_seq"] == 3
        await c.until_caught_up("nc")
        for i, command in enumerate(
            [
                {"topic": "nc", "consumer": "c1", "from_seq": 1},
                {"topic": "nc", "consumer": "c1", "tail": True},
                {"topics": {"nc": {"consumer": "c1", "tail": False}}},
            ]
        ):
            frame = await c.call({"op": "subscribe", "request_id": f"x{i}", **command})
            assert_error(frame, "invalid_request", f"x{i}")
        frame = await c.call({"op": "subscribe", "request_id": "ghost", "topic": "nc", "consumer": "ghost"})
        assert_error(frame, "no_such_consumer", "ghost")
        assert frame["detail"] == {"topic": "nc", "consumer": "ghost"}
        await c.assert_usable()


async def test_limit_batches_records(server: Server) -> None:
    await server.append("lim", [{"data": i} for i in range(7)])
    async with ws_client(server) as c:
        await c.subscribe(topic="lim", limit=3)
        frames = await c.until_caught_up("lim")
        assert [f["op"] for f in frames] == ["record", "record", "record", "caught_up"]
        assert_record_frame(frames[0], "lim", 0, [1, 2, 3], 7)
        assert_record_frame(frames[1], "lim", 3, [4, 5, 6], 7)
        assert_record_frame(frames[2], "lim", 6, [7], 7)
        assert [r["data"] for f in frames[:3] for r in f["records"]] == list(range(7))
        # live writes are batched by the same limit
        await c.publish("lim", [{"data": i} for i in range(5)])
        first, second = await c.recv(), await c.recv()
        assert_record_frame(first, "lim", 7, [8, 9, 10], 12)
        assert_record_frame(second, "lim", 10, [11, 12], 12)


async def test_max_batch_bytes_batches_records_and_always_delivers_one(server: Server) -> None:
    pad = "x" * 200
    await server.append("mbb", [{"data": {"i": i, "pad": pad}} for i in range(6)])
    async with ws_client(server) as c:
        await c.subscribe("one", topic="mbb", max_batch_bytes=1)  # smaller than any record
        frames = await c.until_caught_up("mbb")
        records = [f for f in frames if f["op"] == "record"]
        assert [[r["$seq"] for r in f["records"]] for f in records] == [[1], [2], [3], [4], [5], [6]]
        assert [f["from_seq"] for f in records] == [0, 1, 2, 3, 4, 5]
    async with ws_client(server) as c:
        record_size = len(orjson.dumps({"$seq": 1, "$ts": 0, "data": {"i": 0, "pad": pad}}))
        await c.subscribe("two", topic="mbb", max_batch_bytes=2 * record_size + 50)  # room for 2, not 3
        frames = await c.until_caught_up("mbb")
        records = [f for f in frames if f["op"] == "record"]
        sizes = [len(f["records"]) for f in records]
        assert sum(sizes) == 6 and 1 < len(records) < 6 and max(sizes) <= 2, sizes
        seqs = [r["$seq"] for f in records for r in f["records"]]
        assert seqs == [1, 2, 3, 4, 5, 6]
        for before, after in zip(records, records[1:], strict=False):
            assert after["from_seq"] == before["to_seq"]


async def test_include_data_tags_and_meta(server: Server) -> None:
    await server.append("inc", [{"data": {"big": 1}, "tag": "k1", "node": "n", "meta": {"h": "v"}}])
    async with ws_client(server) as c:
        await c.subscribe(topic="inc", include_data=False, include_tags=True)
        (record,) = (await c.recv())["records"]
        assert "data" not in record
        assert record["$seq"] == 1 and record["$tag"] == "k1" and record["$node"] == "n"
        assert record["meta"] == {"h": "v"}  # include_meta defaults to true
        assert (await c.recv())["op"] == "caught_up"
    async with ws_client(server) as c:
        await c.subscribe(topic="inc", include_meta=False)  # include_tags defaults to false
        (record,) = (await c.recv())["records"]
        assert record["data"] == {"big": 1}
        assert "$tag" not in record and "meta" not in record


async def test_node_filter_skips_own_records_on_a_dedupe_node_topic(server: Server) -> None:
    await server.append(
        "nd", [{"data": 1, "node": "me"}, {"data": 2, "node": "you"}, {"data": 3, "node": "me"}]
    )
    async with ws_client(server) as c:
        await c.subscribe(topic="nd", node="me")
        frame = await c.recv()
        assert frame["from_seq"] == 0
        assert frame["to_seq"] == 3  # filtered records still advance the cursor
        assert [(r["$seq"], r["$node"]) for r in frame["records"]] == [(2, "you")]
        assert await c.recv() == {"op": "caught_up", "topic": "nd", "head_seq": 3}
        await c.publish("nd", [{"data": 4}], node="me")  # own write: not echoed
        await c.quiet()
        await c.publish("nd", [{"data": 5}], node="you")
        live = await c.recv()
        assert (live["from_seq"], live["to_seq"], live["head_seq"]) == (4, 5, 5)
        assert [r["$seq"] for r in live["records"]] == [5]
    await server.put("nodedup", {"dedupe_node": False})
    await server.append("nodedup", [{"data": 1, "node": "me"}, {"data": 2, "node": "you"}])
    async with ws_client(server) as c:
        await c.subscribe(topic="nodedup", node="me")
        assert_record_frame(await c.recv(), "nodedup", 0, [1, 2], 2)  # no filtering on this topic


SUBSCRIBE_ERRORS: list[tuple[Json, str]] = [
    ({"topic": "missing"}, "topic_not_found"),
    ({"topics": {"exists": {}, "missing": {}}}, "topic_not_found"),
    ({"topic": "exists", "topics": {"exists": {}}}, "invalid_request"),  # both
    ({}, "invalid_request"),  # neither
    ({"topic": "exists", "bogus": 1}, "invalid_request"),  # unknown field
    ({"topic": "exists", "heartbeat_ms": 1000}, "invalid_request"),  # a watch field not on the socket
    ({"topics": {"exists": {}}, "from_seq": 0}, "invalid_request"),  # from_seq goes per topic
    ({"topics": {"exists": {}}, "tail": True}, "invalid_request"),
    ({"topics": {"exists": {"bogus": 1}}}, "invalid_request"),
    ({"topic": "exists", "from_seq": "zero"}, "invalid_request"),
    ({"topic": "exists", "limit": -1}, "invalid_request"),
    ({"topic": ""}, "invalid_request"),
]


async def test_subscribe_errors_answer_the_command_only(server: Server) -> None:
    await server.put("exists")
    await server.put("live")
    async with ws_client(server) as c:
        await c.subscribe("live", topic="live")
        await c.until_caught_up("live")
        for i, (command, code) in enumerate(SUBSCRIBE_ERRORS):
            frame = await c.call({"op": "subscribe", "request_id": f"bad{i}", **command})
            assert frame["op"] == "error" and frame["code"] == code, (command, frame)
            assert_error(frame, code, f"bad{i}")
            if code == "topic_not_found":
                assert frame["detail"]["topic"] == "missing", frame
            await c.assert_usable()
        # nothing was subscribed by the failed commands; the live subscription is unaffected
        assert server.ctx.engine.hub.listener_count("exists") == 0
        assert server.listeners() == 1
        await c.publish("live", [{"data": 1}])
        assert_record_frame(await c.recv(), "live", 0, [1], 1)
        await server.append("exists", [{"data": 1}])
        await c.quiet()


# -- publish ---------------------------------------------------------------------------------------


async def test_publish_ack_fields(server: Server) -> None:
    async with ws_client(server) as c:
        ack = await c.publish("pa", [{"data": 1}, {"data": 2}], request_id="p1")
        assert ack == {
            "op": "ack",
            "request_id": "p1",
            "topic": "pa",
            "last_seq": 2,
            "head_seq": 2,
            "performance": {"fsync_ms": 0.0},
        }
        ack = await c.publish(
            "pa",
            [{"data": 3, "tag": "t3", "meta": {"k": "v"}}],
            request_id="p2",
            return_seqs=False,
            disable_backpressure=True,
        )
        assert set(ack) == {"op", "request_id", "topic", "last_seq", "head_seq", "performance"}
        assert ack["last_seq"] == 3
    stored = (await server.http.post("/v0/topics/pa/diff", json={"include_tags": True})).json()
    assert [r["data"] for r in stored["records"]] == [1, 2, 3]
    assert stored["records"][2]["$tag"] == "t3" and stored["records"][2]["meta"] == {"k": "v"}


async def test_publish_return_seqs_and_idempotent_retry(server: Server) -> None:
    async with ws_client(server) as c:
        created = await c.publish("rs", [{"data": "a"}], request_id="c", return_seqs=True)
        assert created == {
            "op": "ack",
            "request_id": "c",
            "topic": "rs",
            "first_seq": 1,
            "last_seq": 1,
            "seqs": [1],
            "head_seq": 1,
            "created": True,
            "deduped": False,
            "performance": {"fsync_ms": 0.0},
        }
        command = {"return_seqs": True, "idempotency_key": "k-1"}
        first = await c.publish("rs", [{"data": "b"}, {"data": "c"}], request_id="i1", **command)
        assert (first["first_seq"], first["last_seq"], first["seqs"]) == (2, 3, [2, 3])
        assert (first["created"], first["deduped"]) == (False, False)
        retry = await c.publish("rs", [{"data": "b"}, {"data": "c"}], request_id="i2", **command)
        assert (retry["first_seq"], retry["last_seq"], retry["seqs"]) == (2, 3, [2, 3])
        assert retry["deduped"] is True and retry["head_seq"] == 3
    assert (await server.topic("rs")).json()["head_seq"] == 3  # nothing appended by the retry


async def test_publish_create_false_on_a_missing_topic_is_topic_not_found(server: Server) -> None:
    async with ws_client(server) as c:
        frame = await c.call(
            {"op": "publish", "request_id": "nf", "topic": "nope", "create": False, "records": [{"data": 1}]}
        )
        assert_error(frame, "topic_not_found", "nf")
        assert (await server.topic("nope")).status_code == 404
        ack = await c.publish("explicit", [{"data": 1}], create=True, return_seqs=True)
        assert ack["created"] is True
        await c.assert_usable()


async def test_publish_config_applies_only_when_the_write_creates_the_topic(server: Server) -> None:
    async with ws_client(server) as c:
        config = {"cap_records": 5, "dedupe_node": False}
        await c.publish("cfg", [{"data": 1}], config=config)
        info = (await server.topic("cfg")).json()
        assert info["config"]["cap_records"] == 5 and info["config"]["dedupe_node"] is False
        await c.publish("cfg", [{"data": 2}], config={"cap_records": 9})  # exists: not applied
        assert (await server.topic("cfg")).json()["config"]["cap_records"] == 5
        frame = await c.call(
            {
                "op": "publish",
                "request_id": "bc",
                "topic": "cfg2",
                "config": {"cap_recordz": 1},
                "records": [{"data": 1}],
            }
        )
        assert_error(frame, "invalid_request", "bc")
        assert (await server.topic("cfg2")).status_code == 404


INVALID_PUBLISHES: list[Json] = [
    {"topic": "inv", "records": []},
    {"topic": "inv"},
    {"records": [{"data": 1}]},
    {"topic": "inv", "records": [{"data": 1, "bogus": True}]},
    {"topic": "inv", "records": [{"nodata": 1}]},
    {"topic": "inv", "records": {"data": 1}},
    {"topic": "inv", "records": [{"data": 1}], "return_seqs": "yes"},
    {"topic": "inv", "records": [{"data": 1}], "unknown_field": 1},
    {"topic": "inv", "records": [{"data": 1}], "create": "yes"},
    {"topic": "bad name!", "records": [{"data": 1}]},
]


async def test_invalid_publishes_are_invalid_request(server: Server) -> None:
    async with ws_client(server) as c:
        for i, command in enumerate(INVALID_PUBLISHES):
            frame = await c.call({"op": "publish", "request_id": f"bad{i}", **command})
            assert frame["op"] == "error" and frame["code"] == "invalid_request", (command, frame)
            assert_error(frame, "invalid_request", f"bad{i}")
            await c.assert_usable()
    assert (await server.topic("inv")).status_code == 404  # nothing was written (or created)


async def test_publish_to_an_fsync_topic_acks_after_the_fsync(durable_server: Server) -> None:
    server = durable_server
    await server.put("fs", {"durability": "fsync"})
    async with ws_client(server) as c:
        await c.subscribe(topic="fs")
        assert (await c.recv())["op"] == "caught_up"
        await c.send(
            {
                "op": "publish",
                "request_id": "f1",
                "topic": "fs",
                "records": [{"data": 1}],
                "return_seqs": True,
            }
        )
        frames = [await c.recv(), await c.recv()]
        (ack,) = [f for f in frames if f["op"] == "ack"]
        (record,) = [f for f in frames if f["op"] == "record"]
        assert ack["request_id"] == "f1" and ack["last_seq"] == 1 and ack["seqs"] == [1]
        assert isinstance(ack["performance"]["fsync_ms"], float) and ack["performance"]["fsync_ms"] >= 0
        assert_record_frame(record, "fs", 0, [1], 1)
        await c.assert_usable()
    async with ws_client(server) as c:  # a disk topic on the same server acks at once
        ack = await c.publish("dk", [{"data": 1}])
        assert ack["performance"] == {"fsync_ms": 0.0}


async def test_publish_to_a_full_reject_topic_is_topic_full(server: Server) -> None:
    await server.put("full", {"cap_records": 2, "discard": "reject"})
    async with ws_client(server) as c:
        await c.publish("full", [{"data": 1}, {"data": 2}])
        frame = await c.call({"op": "publish", "request_id": "tf", "topic": "full", "records": [{"data": 3}]})
        assert_error(frame, "topic_full", "tf")
        await c.assert_usable()
    info = (await server.topic("full")).json()
    assert info["head_seq"] == 2 and info["count"] == 2


async def test_publish_over_the_engine_limits(clock: ManualClock) -> None:
    limits = Limits(max_batch_records=3, max_record_bytes=512)
    async with serve({}, clock, limits) as server, ws_client(server) as c:
        frame = await c.call(
            {"op": "publish", "request_id": "b", "topic": "lm", "records": [{"data": i} for i in range(4)]}
        )
        assert_error(frame, "batch_too_large", "b")
        frame = await c.call(
            {"op": "publish", "request_id": "r", "topic": "lm", "records": [{"data": "x" * 600}]}
        )
        assert_error(frame, "record_too_large", "r")
        await c.assert_usable()
        assert (await server.topic("lm")).status_code == 404  # all or nothing: not even created
        assert (await c.publish("lm", [{"data": i} for i in range(3)]))["last_seq"] == 3


async def test_a_message_over_the_body_limit_closes_with_1009(server: Server) -> None:
    async with ws_client(server, max_size=None) as c:
        big = {"op": "publish", "request_id": "big", "topic": "big", "records": [{"data": "x" * MAX_BODY}]}
        await c.send(big)
        with pytest.raises(ConnectionClosed) as closed:
            await c.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # "message too big"
    assert (await server.topic("big")).status_code == 404
    await eventually(lambda: not any(conn.websocket for conn in server.native.connections))


# -- malformed input: an error frame, never a silent drop ------------------------------------------


MALFORMED: list[tuple[str | bytes, str | None]] = [
    (b'{"op":"ping","request_id":"b"}', None),  # binary, even if it holds a command
    (b"\x00\xff", None),
    ("not json {", None),
    ("", None),
    ("[1, 2]", None),
    ('"ping"', None),
    ("null", None),
    ('{"request_id":"r"}', None),  # no op
    ('{"op":5,"request_id":"r"}', None),
    ('{"op":"ping","request_id":7}', None),
    ('{"op":"dance","request_id":"r"}', "r"),  # unknown op: request_id echoed
    ('{"op":"ping","request_id":"r","extra":1}', "r"),
    ('{"op":"subscribe","request_id":"r","topic":5}', "r"),
]


async def test_malformed_messages_are_answered_and_the_socket_stays_usable(server: Server) -> None:
    await server.put("mf")
    async with ws_client(server) as c:
        await c.subscribe(topic="mf")
        await c.until_caught_up("mf")
        for i, (message, request_id) in enumerate(MALFORMED):
            await c.ws.send(message)
            frame = await c.recv()
            assert frame["op"] == "error" and frame["code"] == "invalid_request", (message, frame)
            assert_error(frame, "invalid_request", request_id)
            await c.assert_usable(f"after-{i}")
        await server.append("mf", [{"data": 1}])  # the subscription survived all of it
        assert_record_frame(await c.recv(), "mf", 0, [1], 1)


async def test_invalid_utf8_in_a_text_message_is_answered(server: Server) -> None:
    raw = await server.raw()
    await raw.upgrade()
    raw.send(client_frame(TEXT, b'{"op":"ping","request_id":"\xff"}'))
    frame = await raw.frame()
    if frame.opcode == CLOSE:  # RFC 6455 §8.1 would allow failing the socket with 1007
        assert struct.unpack("!H", frame.payload[:2])[0] == 1007
    else:
        assert_error(frame.json(), "invalid_request", None)
    raw.close()


async def test_invalid_utf8_in_a_topic_name_is_invalid_request(server: Server) -> None:
    raw = await server.raw()
    await raw.upgrade()
    raw.send(client_frame(TEXT, b'{"op":"subscribe","request_id":"s","topic":"\xff"}'))
    assert_error((await raw.frame()).json(), "invalid_request", "s")
    raw.close()


async def test_a_record_with_invalid_utf8_is_refused_and_subscribers_survive(server: Server) -> None:
    await server.put("utf")
    async with ws_client(server) as subscriber:
        await subscriber.subscribe(topic="utf")
        await subscriber.until_caught_up("utf")
        raw = await server.raw()
        await raw.upgrade()
        raw.send(
            client_frame(TEXT, b'{"op":"publish","request_id":"p","topic":"utf","records":[{"data":"\xff"}]}')
        )
        reply = (await raw.frame()).json()
        raw.close()
        await subscriber.quiet()
        await subscriber.assert_usable()
        assert_error(reply, "invalid_request", "p")


async def test_fragmented_messages_are_reassembled(server: Server) -> None:
    async with ws_client(server) as c:
        await c.ws.send(iter(['{"op":"pi', 'ng","requ', "est_id", '":"frag"}']))
        assert await c.recv() == {"op": "pong", "request_id": "frag"}
        await c.ws.send(iter([b'{"op":"ping",', b'"request_id":"bin"}']))  # fragmented binary: refused
        assert_error(await c.recv(), "invalid_request", None)
        await c.assert_usable()


async def test_a_control_frame_between_fragments(server: Server) -> None:
    raw = await server.raw()
    await raw.upgrade()
    raw.send(client_frame(TEXT, b'{"op":"ping",', fin=False))
    raw.send(client_frame(PING, b"mid"))
    raw.send(client_frame(CONT, b'"request_id":', fin=False))
    raw.send(client_frame(CONT, b'"f2"}'))
    frames = [await raw.frame(), await raw.frame()]  # in either order (all arrived in one read)
    (control,) = [f for f in frames if f.opcode == PONG]
    (message,) = [f for f in frames if f.opcode == TEXT]
    assert control.payload == b"mid"
    assert message.json() == {"op": "pong", "request_id": "f2"}
    raw.close()


# -- many subscriptions on one socket ---------------------------------------------------------------


async def test_many_subscriptions_on_one_socket(server: Server) -> None:
    for name in ("ta", "tb", "tc"):
        await server.append(name, [{"data": f"{name}-0", "node": "me"}])
    async with ws_client(server) as c:
        # three subscribe commands, three option sets
        await c.subscribe("sa", topic="ta", limit=1)
        assert (await c.until_caught_up("ta"))[0]["records"][0]["data"] == "ta-0"
        await c.subscribe("sb", topic="tb", tail=True, include_data=False)
        assert await c.recv() == {"op": "caught_up", "topic": "tb", "head_seq": 1}
        await c.subscribe("sc", topic="tc", node="me")
        # its only record is its own node's: no record frame (a frame holds at least one record)
        assert await c.recv() == {"op": "caught_up", "topic": "tc", "head_seq": 1}

        await server.append("ta", [{"data": "ta-1"}, {"data": "ta-2"}])
        await server.append("tb", [{"data": "tb-1"}])
        await server.append("tc", [{"data": "tc-me", "node": "me"}, {"data": "tc-you", "node": "you"}])
        got: dict[str, list[Json]] = {"ta": [], "tb": [], "tc": []}
        ta_caught_up = False
        while sum(map(len, got.values())) < 4 or not ta_caught_up:  # ta: 2 frames (limit 1); tb, tc: 1
            frame = await c.recv()
            if frame["op"] == "caught_up":  # re-sent when ta's two-frame backlog drains
                assert frame == {"op": "caught_up", "topic": "ta", "head_seq": 3} and not ta_caught_up
                ta_caught_up = True
                continue
            assert frame["op"] == "record", frame
            got[frame["topic"]].append(frame)
        assert [[r["data"] for r in f["records"]] for f in got["ta"]] == [["ta-1"], ["ta-2"]]
        (tb_record,) = got["tb"][0]["records"]
        assert tb_record["$seq"] == 2 and "data" not in tb_record  # include_data false
        assert [r["data"] for r in got["tc"][0]["records"]] == ["tc-you"]  # own node filtered

        # re-subscribing a topic moves it: from_seq 1 replays ta from there, once
        moved = await c.subscribe("sa2", topic="ta", from_seq=1)
        assert moved["topics"] == {"ta": {"from_seq": 1, "head_seq": 3, "earliest_seq": 1}}
        frames = await c.until_caught_up("ta")
        assert [f["op"] for f in frames] == ["record", "caught_up"]
        assert [r["data"] for r in frames[0]["records"]] == ["ta-1", "ta-2"]  # no longer limit 1
        await server.append("ta", [{"data": "ta-3"}])
        assert [r["data"] for r in (await c.recv())["records"]] == ["ta-3"]
        await c.quiet()  # delivered once, not by the old subscription too

        # unsubscribe stops that topic only
        assert await c.call({"op": "unsubscribe", "request_id": "ub", "topic": "tb"}) == {
            "op": "unsubscribed",
            "request_id": "ub",
            "topic": "tb",
        }
        await server.append("tb", [{"data": "tb-2"}])
        await server.append("tc", [{"data": "tc-2", "node": "you"}])
        frame = await c.recv()
        assert frame["topic"] == "tc" and [r["data"] for r in frame["records"]] == ["tc-2"]
        await c.quiet()
        assert server.ctx.engine.hub.listener_count("tb") == 0
        assert server.ctx.engine.hub.listener_count("ta") == 1
        assert server.ctx.engine.hub.listener_count("tc") == 1


async def test_moving_one_topic_out_of_a_multi_topic_subscription(server: Server) -> None:
    await server.put("mx")
    await server.put("my")
    async with ws_client(server) as c:
        await c.subscribe("both", topics={"mx": {}, "my": {}})
        assert sorted(f["topic"] for f in await c.recv_n(2)) == ["mx", "my"]  # two caught_up
        await c.subscribe("moved", topic="mx", tail=True, include_data=False)
        assert await c.recv() == {"op": "caught_up", "topic": "mx", "head_seq": 0}
        assert server.listeners() == 2
        await server.append("mx", [{"data": "x"}])
        await server.append("my", [{"data": "y"}])
        frames = await c.recv_n(2)
        await c.quiet()  # each topic delivered once
        by_topic = {f["topic"]: f["records"] for f in frames}
        (mx,) = by_topic["mx"]
        assert mx["$seq"] == 1 and "data" not in mx  # the new subscription's options
        assert by_topic["my"][0]["data"] == "y"  # the rest of the old subscription continues
        await c.call({"op": "unsubscribe", "request_id": "u", "topic": "my"})
        await eventually(lambda: server.listeners() == 1)


async def test_topics_per_socket_are_capped(clock: ManualClock) -> None:
    async with serve({"TOPICS_MAX_WATCH_TOPICS": "2"}, clock) as server:
        for name in ("c1", "c2", "c3"):
            await server.put(name)
        async with ws_client(server) as c:
            await c.subscribe("a", topics={"c1": {}, "c2": {}})
            await c.recv_n(2)
            assert_error(
                await c.call({"op": "subscribe", "request_id": "b", "topic": "c3"}), "invalid_request", "b"
            )
            await c.subscribe("c", topic="c2", tail=True)  # moving a topic does not count twice
            assert (await c.recv())["op"] == "caught_up"
            await c.call({"op": "unsubscribe", "request_id": "u", "topic": "c1"})
            await c.subscribe("d", topic="c3")  # room again
            assert (await c.recv())["op"] == "caught_up"


async def test_sockets_over_the_connection_cap_are_429(clock: ManualClock) -> None:
    async with serve({"TOPICS_MAX_SSE_CONNECTIONS": "1"}, clock) as server:
        async with ws_client(server):
            raw = await server.raw()
            raw.send(handshake())
            status, headers, body = await raw.response()
            error = assert_envelope(status, body, 429, "throttled")
            assert error["detail"] == {"limit": "max_sse_connections", "max": 1}
            raw.close()
        # the first socket closed: its slot is free again
        async with ws_client(server) as c:
            assert (await c.call({"op": "ping", "request_id": "p"}))["op"] == "pong"


# -- tombstones and deletion -----------------------------------------------------------------------


async def test_subscribe_below_the_eviction_floor_starts_with_a_tombstone(server: Server) -> None:
    await server.put("cap", {"cap_records": 3})
    await server.append("cap", [{"data": i} for i in range(1, 11)])  # 1..7 evicted
    async with ws_client(server) as c:
        subscribed = await c.subscribe(topic="cap", from_seq=0)
        assert subscribed["topics"]["cap"] == {"from_seq": 0, "head_seq": 10, "earliest_seq": 8}
        tombstone = await c.recv()
        assert tombstone == {
            "op": "tombstone",
            "topic": "cap",
            "reason": "from_seq_too_old",
            "gap_from": 1,
            "gap_to": 7,
            "missed_estimate": 7,
            "earliest_seq": 8,
            "head_seq": 10,
        }
        record = await c.recv()
        assert_record_frame(record, "cap", 7, [8, 9, 10], 10)  # the cursor moved to gap_to
        assert [r["data"] for r in record["records"]] == [8, 9, 10]
        assert await c.recv() == {"op": "caught_up", "topic": "cap", "head_seq": 10}
    async with ws_client(server) as c:
        await c.subscribe(topic="cap", from_seq=4)
        tombstone = await c.recv()
        assert (tombstone["op"], tombstone["gap_from"], tombstone["gap_to"]) == ("tombstone", 5, 7)
        assert tombstone["missed_estimate"] == 3
        assert_record_frame(await c.recv(), "cap", 7, [8, 9, 10], 10)
    async with ws_client(server) as c:  # c + 1 == evict_floor: nothing was lost
        await c.subscribe(topic="cap", from_seq=7)
        assert_record_frame(await c.recv(), "cap", 7, [8, 9, 10], 10)
        assert (await c.recv())["op"] == "caught_up"


async def test_a_loss_met_while_live_is_a_cap_tombstone(server: Server) -> None:
    await server.put("live-cap", {"cap_records": 3})
    await server.append("live-cap", [{"data": i} for i in range(1, 4)])
    async with ws_client(server) as c:
        await c.subscribe(topic="live-cap")
        await c.until_caught_up("live-cap")  # cursor 3
        await server.append("live-cap", [{"data": i} for i in range(4, 11)])  # 4..7 evicted at once
        assert await c.recv() == {
            "op": "tombstone",
            "topic": "live-cap",
            "reason": "cap",
            "gap_from": 4,
            "gap_to": 7,
            "missed_estimate": 4,
            "earliest_seq": 8,
            "head_seq": 10,
        }
        record = await c.recv()
        assert_record_frame(record, "live-cap", 7, [8, 9, 10], 10)


async def test_ttl_expiry_and_deletion_on_subscribe(server: Server, clock: ManualClock) -> None:
    await server.put("ttl", {"ttl_ms": 1000})
    await server.append("ttl", [{"data": i} for i in range(3)])
    clock.advance(1500)
    await server.append("ttl", [{"data": "fresh"}])
    await server.append("del", [{"data": i} for i in range(5)])
    deleted = await server.http.post("/v0/topics/del/delete", json={"before_seq": 4})
    assert deleted.status_code == 200 and deleted.json()["earliest_seq"] == 4
    async with ws_client(server) as c:
        await c.subscribe(topic="ttl")
        tombstone = await c.recv()  # expired records are a loss too (docs/DECISIONS.md, "Tombstones")
        assert tombstone["op"] == "tombstone" and tombstone["reason"] == "from_seq_too_old"
        assert (tombstone["gap_from"], tombstone["gap_to"], tombstone["earliest_seq"]) == (1, 3, 4)
        assert_record_frame(await c.recv(), "ttl", 3, [4], 4)
        assert (await c.recv())["op"] == "caught_up"
        await c.subscribe(topic="del")  # a purely deleted gap is silent
        record = await c.recv()
        assert_record_frame(record, "del", 0, [4, 5], 5)
        assert await c.recv() == {"op": "caught_up", "topic": "del", "head_seq": 5}


async def test_deleting_a_subscribed_topic_sends_topic_deleted(server: Server) -> None:
    await server.append("gone", [{"data": 1}, {"data": 2}])
    await server.put("stays")
    async with ws_client(server) as c:
        await c.subscribe("s1", topic="gone")
        await c.until_caught_up("gone")
        await c.subscribe("s2", topic="stays")
        await c.until_caught_up("stays")
        assert (await server.http.delete("/v0/topics/gone")).status_code == 200
        assert await c.recv() == {"op": "topic_deleted", "topic": "gone", "head_seq": 2, "reason": "deleted"}
        await c.quiet(0.1)
        await eventually(lambda: server.ctx.engine.hub.listener_count("gone") == 0)
        await c.publish("stays", [{"data": "x"}])
        assert_record_frame(await c.recv(), "stays", 0, [1], 1)
        # a new topic of the same name is not followed by the old subscription
        await server.append("gone", [{"data": "again"}])
        await c.quiet()


# -- control frames, heartbeats, closing ------------------------------------------------------------


async def test_websocket_ping_gets_a_pong(server: Server) -> None:
    async with ws_client(server) as c:
        pong = await c.ws.ping(b"hello")
        latency = await asyncio.wait_for(pong, TIMEOUT)
        assert latency >= 0
        await c.assert_usable()


async def test_server_pings_after_15_s_of_silence_on_the_engine_clock(
    server: Server, clock: ManualClock
) -> None:
    assert PING_INTERVAL_MS == 15_000
    raw = await server.raw()
    await raw.upgrade()
    clock.advance(PING_INTERVAL_MS - 1)
    await raw.no_frame()
    clock.advance(1)
    ping = await raw.frame()
    assert (ping.opcode, ping.masked) == (PING, False)
    assert ping.payload == str(clock.now_ms()).encode()
    raw.send(client_frame(PONG, ping.payload))
    # a frame sent meanwhile postpones the next ping: silence is counted from the last frame
    clock.advance(10_000)
    raw.send_json({"op": "ping", "request_id": "mid"})
    assert (await raw.frame()).json() == {"op": "pong", "request_id": "mid"}
    clock.advance(PING_INTERVAL_MS - 1)
    await raw.no_frame()
    clock.advance(1)
    ping = await raw.frame()
    assert ping.opcode == PING and ping.payload == str(clock.now_ms()).encode()
    raw.close()


async def test_websockets_client_answers_server_pings_and_stays_open(
    server: Server, clock: ManualClock
) -> None:
    async with ws_client(server) as c:
        for _ in range(3):
            clock.advance(PING_INTERVAL_MS)
            await asyncio.sleep(0.05)
        await c.assert_usable()
        await c.quiet(0.1)  # pings are control frames: no message reaches the application


async def test_client_close_completes_the_handshake_and_detaches(server: Server) -> None:
    await server.put("cl1")
    await server.put("cl2")
    async with ws_client(server) as c:
        await c.subscribe("a", topic="cl1")
        await c.until_caught_up("cl1")
        await c.subscribe("b", topic="cl2")
        await c.until_caught_up("cl2")
        await eventually(lambda: server.listeners() == 2)
        ws = c.ws
    # the context manager sent a close frame and waited for the server's
    assert ws.protocol.close_rcvd is not None and ws.protocol.close_rcvd.code == 1000
    assert ws.protocol.close_rcvd_then_sent is False  # the client initiated
    await eventually(lambda: server.listeners() == 0)
    await server.append("cl1", [{"data": 1}])  # no one to deliver to: nothing breaks
    assert (await server.http.get("/v0/health")).status_code == 200


async def test_raw_close_is_echoed_then_the_server_closes_tcp(server: Server) -> None:
    await server.put("rc")
    raw = await server.raw()
    await raw.upgrade()
    raw.send_json({"op": "subscribe", "request_id": "s", "topic": "rc"})
    assert (await raw.frame()).json()["op"] == "subscribed"
    assert (await raw.frame()).json()["op"] == "caught_up"
    raw.send(client_frame(CLOSE, struct.pack("!H", 1000) + b"bye"))
    close = await raw.frame()
    assert close.opcode == CLOSE and struct.unpack("!H", close.payload[:2])[0] == 1000
    assert await raw.closed_by_server()
    await eventually(lambda: server.listeners() == 0)


async def test_an_abrupt_disconnect_detaches_subscriptions(server: Server) -> None:
    await server.put("ab")
    raw = await server.raw()
    await raw.upgrade()
    raw.send_json({"op": "subscribe", "request_id": "s", "topic": "ab"})
    assert (await raw.frame()).json()["op"] == "subscribed"
    await eventually(lambda: server.listeners() == 1)
    raw.writer.transport.abort()  # no close frame
    await eventually(lambda: server.listeners() == 0)
    await server.append("ab", [{"data": 1}])
    assert (await server.http.get("/v0/health")).status_code == 200


async def test_a_slow_consumer_gets_a_final_error_then_close_1013(server: Server, clock: ManualClock) -> None:
    """A client that reads nothing: the socket's writes back up; past the slow-consumer timeout
    (30 s on the engine clock) the server sends an ``error`` frame and closes with 1013."""
    pad = "y" * 60_000
    for _ in range(64):  # ~4 MB backlog, far more than the socket buffers hold (made small below)
        await server.append("slow", [{"data": pad}])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    raw = await server.raw(sock)
    await raw.upgrade()
    transport = raw.writer.transport
    assert isinstance(transport, asyncio.ReadTransport)
    transport.pause_reading()  # read nothing
    for conn in server.native.connections:  # and keep the server's kernel buffer small too
        if conn.websocket is not None and conn.transport is not None:
            conn.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    raw.send_json({"op": "subscribe", "request_id": "s", "topic": "slow"})  # 256 KiB frames

    def server_blocked() -> bool:
        return any(conn.websocket is not None and conn.write_paused for conn in server.native.connections)

    await eventually(server_blocked)
    clock.advance(30_000 - 1)
    await asyncio.sleep(0.05)
    assert server_blocked() and server.listeners() == 1  # still waiting for the client
    clock.advance(1)
    transport.resume_reading()
    frames = []
    while True:
        frame = await raw.frame()
        frames.append(frame)
        if frame.opcode == CLOSE:
            break
    assert frames[0].json()["op"] == "subscribed"
    records = [f.json() for f in frames[1:-2]]
    assert records and all(f["op"] == "record" for f in records)  # blocked before the backlog's end
    seqs = [r["$seq"] for f in records for r in f["records"]]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) < 64
    final = frames[-2].json()
    assert final["op"] == "error" and final["code"] == "throttled" and "request_id" not in final
    assert struct.unpack("!H", frames[-1].payload[:2])[0] == 1013
    raw.send(client_frame(CLOSE, frames[-1].payload[:2]))
    assert await raw.closed_by_server()
    await eventually(lambda: server.listeners() == 0)


# -- the ASGI path (uvicorn) ---------------------------------------------------------------------


async def test_asgi_websocket_under_uvicorn(clock: ManualClock) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from topics_server.asgi import create_app

    settings = load_settings({})
    engine = Engine(clock, settings.limits)
    app, ctx = create_app(settings, engine)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        ws="websockets-sansio",
        ws_per_message_deflate=False,  # never compressed; uvicorn would negotiate it by default
        lifespan="on",
        log_level="warning",
    )
    uv = uvicorn.Server(config)
    task = asyncio.ensure_future(uv.serve())
    try:
        await eventually(lambda: uv.started or task.done(), timeout=5)
        assert not task.done(), "uvicorn did not start"
        port = uv.servers[0].sockets[0].getsockname()[1]
        url = f"ws://127.0.0.1:{port}/v0/ws"
        async with connect(url, open_timeout=TIMEOUT, close_timeout=TIMEOUT) as ws:
            c = Client(ws)
            assert_error(
                await c.call({"op": "subscribe", "request_id": "s0", "topic": "asgi"}),
                "topic_not_found",
                "s0",
            )
            ack = await c.publish("asgi", [{"data": 1, "node": "n"}], return_seqs=True)
            assert (ack["created"], ack["seqs"]) == (True, [1])
            subscribed = await c.subscribe(topic="asgi")
            assert subscribed["topics"] == {"asgi": {"from_seq": 0, "head_seq": 1, "earliest_seq": 1}}
            assert await c.recv() == {
                "op": "record",
                "topic": "asgi",
                "from_seq": 0,
                "to_seq": 1,
                "head_seq": 1,
                "records": [{"$seq": 1, "$ts": clock.now_ms(), "$node": "n", "data": 1}],
            }
            assert await c.recv() == {"op": "caught_up", "topic": "asgi", "head_seq": 1}
            await c.publish("asgi", [{"data": 2}])
            assert_record_frame(await c.recv(), "asgi", 1, [2], 2)
            await ws.send(b"\x00binary")
            assert_error(await c.recv(), "invalid_request", None)
            assert_error(await c.call({"op": "nope", "request_id": "q"}), "invalid_request", "q")
            await c.assert_usable()
        await eventually(lambda: ctx.engine.hub.listener_count() == 0)
        # a refused socket (no such route) gets the HTTP envelope (websocket.http.response)
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"ws://127.0.0.1:{port}/v0/nowhere", open_timeout=TIMEOUT):
                pass
        assert_envelope(
            refused.value.response.status_code, bytes(refused.value.response.body or b""), 404, "not_found"
        )
    finally:
        uv.should_exit = True
        await asyncio.wait_for(task, 5)
