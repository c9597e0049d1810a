"""§7 watch sessions end to end: ``POST /v0/watch`` and its SSE stream ``GET /v0/watch/:wid``,
in process on the native HTTP transport, with an engine on a :class:`ManualClock` so heartbeats,
the slow-consumer timeouts (``streams.BUFFER_GRACE_MS`` / ``SLOW_CONSUMER_TIMEOUT_MS``), TTLs and
the session GC move only when a test advances the clock. Streams are read incrementally off raw
sockets (``sse_client``); JSON calls go through httpx.

Covered:

- ``POST /v0/watch``: response shape (wid, stream_url, session_ttl_ms, per-topic
  from_seq/head_seq/earliest_seq; ``tail`` echoes the head), 404 ``topic_not_found`` and
  ``?lenient=true``, 400s (empty topics, unknown field, bad topic name, too many topics,
  malformed cursor), ``cursor`` re-creating a session at a known position, queue topics.
- ``GET /v0/watch/:wid``: headers, ``retry: 2000`` first, 404 / 400 / 406 as JSON envelopes.
- record frames: backlog batched under ``limit`` and ``max_batch_bytes``, the data fields, every
  data frame's ``id:`` = the whole cursor map (unpadded base64url JSON), caught-up once per
  backlog -> live transition, live records after; include_data / include_tags / include_meta;
  the node filter.
- resume (docs/DECISIONS.md, "Watch ids"): session cursors, Last-Event-ID rewinding (whole and
  partial), never advancing, malformed ignored.
- tombstones (docs/DECISIONS.md, "Tombstones"): ``from_seq_too_old`` on connect (also for
  from_seq 0) and on reconnect; losses met while streaming (``cap`` for a live reader, ``cap`` /
  ``ttl`` for a reader blocked less than the buffer grace, ``from_seq_too_old`` past it); deleted
  gaps are silent.
- heartbeats on the engine clock (no id, suppressed after data), topic-deleted, takeover
  (docs/DECISIONS.md, "Takeover"), the idle-session GC, the slow-consumer 408.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from topics_engine import ManualClock
from topics_server.context import ServerContext
from topics_server.http import HttpServer

from .native import native_server, until
from .sse_client import SseFrame, SseStream, assert_event_conforms

WID = re.compile(r"^wid_[A-Za-z0-9_-]{22,}$")
QUIET_S = 0.3  # "no frame" windows: the server pushes within milliseconds
BIG = "x" * 200_000  # a record that fills socket buffers quickly


# ---------------------------------------------------------------------------------------------
# the in-process server
# ---------------------------------------------------------------------------------------------


@dataclass
class Srv:
    port: int
    ctx: ServerContext
    http: httpx.AsyncClient
    clock: ManualClock
    native: HttpServer

    async def put(self, topic: str, config: dict[str, Any] | None = None) -> None:
        r = await self.http.put(f"/v0/topics/{topic}", json=config or {})
        assert r.status_code in (200, 201), r.text

    async def append(self, topic: str, *records: dict[str, Any], **extra: Any) -> dict[str, Any]:
        r = await self.http.post(f"/v0/topics/{topic}", json={"records": list(records), **extra})
        assert r.status_code in (200, 201), r.text
        body: dict[str, Any] = r.json()
        return body

    async def fill(self, topic: str, n: int) -> None:
        await self.append(topic, *({"data": i} for i in range(n)))

    async def watch(self, body: dict[str, Any], query: str = "") -> dict[str, Any]:
        r = await self.http.post(f"/v0/watch{query}", json=body)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out

    async def open(self, wid: str, headers: dict[str, str] | None = None, **kw: Any) -> SseStream:
        """Open the stream of ``wid`` and read its ``retry: 2000``."""
        stream = await SseStream.open(self.port, f"/v0/watch/{wid}", headers, **kw)
        assert stream.status == 200, stream.body
        first = await stream.next()
        assert first is not None and first.retry == 2000, first
        return stream

    async def stream(self, body: dict[str, Any], **kw: Any) -> tuple[str, SseStream]:
        wid = (await self.watch(body))["wid"]
        return wid, await self.open(wid, **kw)

    def owner(self, wid: str) -> object | None:
        owner: object | None = self.ctx.watches._sessions[wid].owner
        return owner

    async def closed(self, stream: SseStream, wid: str) -> None:
        """Close ``stream`` from the client and wait until the server let go of the session."""
        stream.close()
        await until(lambda: self.owner(wid) is None)

    def streaming_connection(self) -> Any:
        (conn,) = [c for c in self.native.connections if c.streaming]
        return conn


@asynccontextmanager
async def serving(clock: ManualClock, env: dict[str, str] | None = None) -> AsyncIterator[Srv]:
    async with native_server(clock, env or {}) as (port, ctx, native, http):
        yield Srv(port, ctx, http, clock, native)


@pytest.fixture
async def srv(clock: ManualClock) -> AsyncIterator[Srv]:
    async with serving(clock) as s:
        yield s


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def decode_id(token: str) -> dict[str, int]:
    """An SSE ``id:``: unpadded base64url of the JSON cursor map (docs/DECISIONS.md, "Watch ids")."""
    assert "=" not in token and re.fullmatch(r"[A-Za-z0-9_-]+", token), token
    value: dict[str, int] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return value


def encode_id(cursors: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(cursors).encode()).rstrip(b"=").decode()


async def expect(stream: SseStream, event: str, timeout: float = 2.0) -> tuple[Any, dict[str, int]]:
    """The next frame, which must be ``event`` with an id: its data and decoded id."""
    frame = await stream.next(timeout)
    assert frame is not None, f"stream ended, expected {event}"
    assert frame.event == event, frame.raw
    assert frame.id is not None, frame.raw
    return frame.json(), decode_id(frame.id)


async def drain(stream: SseStream, timeout: float = 2.0) -> list[SseFrame]:
    """Every frame up to the end of the response."""
    frames = []
    while (frame := await stream.next(timeout)) is not None:
        frames.append(frame)
    return frames


async def until_caught_up(stream: SseStream, topics: set[str]) -> list[SseFrame]:
    """Frames until each of ``topics`` said caught-up (inclusive)."""
    frames, left = [], set(topics)
    while left:
        frame = await stream.next()
        assert frame is not None, "stream ended before caught-up"
        frames.append(frame)
        if frame.event == "caught-up":
            left.discard(frame.json()["topic"])
    return frames


def seqs_of(frames: list[SseFrame], topic: str | None = None) -> list[int]:
    out = []
    for f in frames:
        if f.event == "record" and (topic is None or f.json()["topic"] == topic):
            out += [r["$seq"] for r in f.json()["records"]]
    return out


def assert_envelope(status: int, body: bytes | dict[str, Any], want_status: int, code: str) -> None:
    doc = json.loads(body) if isinstance(body, bytes) else body
    assert status == want_status, doc
    assert doc["error"]["code"] == code, doc
    assert isinstance(doc["error"]["message"], str) and doc["error"]["message"]


async def stall(srv: Srv, topic: str, per_append: int = 1, bound: int = 400) -> int:
    """Append BIG records to ``topic`` (watched by the one open stream, whose client is not
    reading) until the server's transport pauses writing; returns how many were appended."""
    conn = srv.streaming_connection()
    n = 0
    while not conn.write_paused:
        assert n < bound, "the server's transport never paused"
        await srv.append(topic, *({"data": BIG} for _ in range(per_append)))
        n += per_append
        await asyncio.sleep(0.005)  # let the stream write what it read
    return n


# ---------------------------------------------------------------------------------------------
# POST /v0/watch
# ---------------------------------------------------------------------------------------------


async def test_create_watch_response_fields(srv: Srv) -> None:
    await srv.fill("a", 3)
    await srv.fill("b", 5)
    await srv.put("c")
    body = await srv.watch({"topics": {"a": {"from_seq": 1}, "b": {"tail": True}, "c": {}}})
    assert WID.match(body["wid"]) and len(body["wid"]) >= 26
    assert body["stream_url"] == f"/v0/watch/{body['wid']}"
    assert body["session_ttl_ms"] == 300_000
    assert body["topics"] == {
        "a": {"from_seq": 1, "head_seq": 3, "earliest_seq": 1},
        "b": {"from_seq": 5, "head_seq": 5, "earliest_seq": 1},  # tail echoes the head
        "c": {"from_seq": 0, "head_seq": 0, "earliest_seq": 1},
    }
    assert "performance" in body
    # wids are random capabilities, not counters
    other = await srv.watch({"topics": {"a": {}}})
    assert other["wid"] != body["wid"] and WID.match(other["wid"])


async def test_create_watch_unknown_topic_is_404_unless_lenient(srv: Srv) -> None:
    await srv.fill("known", 2)
    r = await srv.http.post("/v0/watch", json={"topics": {"known": {}, "nope": {}}})
    assert_envelope(r.status_code, r.json(), 404, "topic_not_found")
    body = await srv.watch({"topics": {"known": {}, "nope": {}}}, "?lenient=true")
    assert body["topics"] == {"known": {"from_seq": 0, "head_seq": 2, "earliest_seq": 1}}
    # the lenient session streams the known topic only
    stream = await srv.open(body["wid"])
    data, _ = await expect(stream, "record")
    assert data["topic"] == "known"
    data, cursor = await expect(stream, "caught-up")
    assert data == {"topic": "known", "head_seq": 2} and cursor == {"known": 2}
    assert await stream.quiet(QUIET_S)
    stream.close()


@pytest.mark.parametrize(
    "body",
    [
        {"topics": {}},
        {},
        {"topics": {"a": {}}, "bogus": 1},
        {"topics": {"a": {"bogus": 1}}},
        {"topics": {"a": {}}, "cursor": "%%% not base64 %%%"},
        {"topics": {"bad name!": {}}},
        {"topics": {"a": {}}, "consistency": "sometimes"},
    ],
    ids=[
        "empty-topics",
        "no-topics",
        "unknown-field",
        "unknown-topic-field",
        "cursor-not-base64",
        "bad-topic-name",
        "bad-consistency",
    ],
)
async def test_create_watch_rejects_malformed_bodies(srv: Srv, body: dict[str, Any]) -> None:
    await srv.put("a")
    r = await srv.http.post("/v0/watch", json=body)
    assert_envelope(r.status_code, r.json(), 400, "invalid_request")


@pytest.mark.parametrize(
    "cursor",
    ["0", base64.urlsafe_b64encode(b"[1,2]").decode().rstrip("="), encode_id({"a": -1})],
    ids=["short", "not-a-map", "negative"],
)
async def test_create_watch_with_a_cursor_naming_no_position_is_404(srv: Srv, cursor: str) -> None:
    """A stream id is opaque, like a wid: one of its alphabet names a position or not
    (docs/DECISIONS.md, "Opaque ids exist or not")."""
    await srv.put("a")
    r = await srv.http.post("/v0/watch", json={"topics": {"a": {}}, "cursor": cursor})
    assert_envelope(r.status_code, r.json(), 404, "not_found")


async def test_too_many_topics_is_400(clock: ManualClock) -> None:
    async with serving(clock, {"TOPICS_MAX_WATCH_TOPICS": "2"}) as srv:
        for name in "abc":
            await srv.put(name)
        r = await srv.http.post("/v0/watch", json={"topics": {"a": {}, "b": {}, "c": {}}})
        assert_envelope(r.status_code, r.json(), 400, "invalid_request")
        assert (await srv.watch({"topics": {"a": {}, "b": {}}}))["topics"].keys() == {"a", "b"}


async def test_cursor_recreates_a_session_at_a_known_position(srv: Srv) -> None:
    await srv.fill("a", 6)
    await srv.fill("b", 4)
    body = await srv.watch(
        {"topics": {"a": {"tail": True}, "b": {"from_seq": 1}}, "cursor": encode_id({"a": 2})}
    )
    # the cursor overrides the topics it names; the others start from their own options
    assert body["topics"]["a"]["from_seq"] == 2
    assert body["topics"]["b"]["from_seq"] == 1
    stream = await srv.open(body["wid"])
    frames = await until_caught_up(stream, {"a", "b"})
    assert seqs_of(frames, "a") == [3, 4, 5, 6]
    assert seqs_of(frames, "b") == [2, 3, 4]
    stream.close()
    # a stream id of one session re-creates another at the same place
    last = decode_id(frames[-1].id or "")
    assert last == {"a": 6, "b": 4}
    again = await srv.watch({"topics": {"a": {}, "b": {}}, "cursor": frames[-1].id})
    assert {k: v["from_seq"] for k, v in again["topics"].items()} == {"a": 6, "b": 4}


async def test_a_queue_topic_is_watchable(srv: Srv) -> None:
    await srv.put("jobs", {"type": "queue"})
    await srv.fill("jobs", 2)
    wid, stream = await srv.stream({"topics": {"jobs": {}}})
    data, cursor = await expect(stream, "record")
    assert [r["data"] for r in data["records"]] == [0, 1] and cursor == {"jobs": 2}
    await expect(stream, "caught-up")
    stream.close()


# ---------------------------------------------------------------------------------------------
# GET /v0/watch/:wid — establishment
# ---------------------------------------------------------------------------------------------


async def test_stream_headers_and_retry_first(srv: Srv) -> None:
    await srv.put("a")
    wid = (await srv.watch({"topics": {"a": {}}}))["wid"]
    stream = await SseStream.open(srv.port, f"/v0/watch/{wid}", {"Accept-Encoding": "gzip"})
    assert stream.status == 200
    assert stream.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert stream.headers["cache-control"] == "no-store"
    assert stream.headers["x-accel-buffering"] == "no"
    assert "content-encoding" not in stream.headers
    first = await stream.next()
    assert first is not None and first.raw == "retry: 2000"
    data, cursor = await expect(stream, "caught-up")
    assert data == {"topic": "a", "head_seq": 0} and cursor == {"a": 0}
    stream.close()


async def test_stream_establishment_errors_are_json_envelopes(srv: Srv) -> None:
    await srv.put("a")
    wid = (await srv.watch({"topics": {"a": {}}}))["wid"]
    cases = [
        ("/v0/watch/wid_AAAAAAAAAAAAAAAAAAAAAA", "text/event-stream", 404, "not_found"),
        # an opaque id names a live session or not, whatever its shape (the reference probe)
        ("/v0/watch/wid_doesnotexist", "text/event-stream", 404, "not_found"),
        ("/v0/watch/wid_short", "text/event-stream", 404, "not_found"),
        ("/v0/watch/nope_AAAAAAAAAAAAAAAAAAAAAA", "text/event-stream", 404, "not_found"),
        # only a segment that cannot be a wid at all is 400
        ("/v0/watch/wid_AAAAAAAAAA!AAAAAAAAAAAA", "text/event-stream", 400, "invalid_request"),
        ("/v0/watch/" + "A" * 257, "text/event-stream", 400, "invalid_request"),
        (f"/v0/watch/{wid}", "application/json", 406, "not_acceptable"),
    ]
    for path, accept, status, code in cases:
        s = await SseStream.open(srv.port, path, accept=accept)
        assert s.headers["content-type"].startswith("application/json"), (path, s.headers)
        assert_envelope(s.status, s.body, status, code)
        s.close()
    # the session was not disturbed by the refused GET
    stream = await srv.open(wid)
    await expect(stream, "caught-up")
    stream.close()


async def test_a_long_well_formed_unknown_wid_is_404(srv: Srv) -> None:
    s = await SseStream.open(srv.port, "/v0/watch/wid_" + "A" * 65)
    assert_envelope(s.status, s.body, 404, "not_found")
    s.close()


# ---------------------------------------------------------------------------------------------
# record frames
# ---------------------------------------------------------------------------------------------


async def test_backlog_is_batched_under_limit_then_caught_up_then_live(srv: Srv) -> None:
    await srv.fill("a", 7)
    await srv.put("b")
    wid, stream = await srv.stream({"topics": {"a": {}, "b": {}}, "limit": 3})
    frames = await until_caught_up(stream, {"a", "b"})
    records = [f for f in frames if f.event == "record"]
    assert [(f.json()["from_seq"], f.json()["to_seq"]) for f in records] == [(0, 3), (3, 6), (6, 7)]
    for f in records:
        data = f.json()
        assert list(data) == ["topic", "records", "from_seq", "to_seq", "head_seq"]
        assert data["topic"] == "a" and data["head_seq"] == 7
        assert [r["$seq"] for r in data["records"]] == list(range(data["from_seq"] + 1, data["to_seq"] + 1))
        for r in data["records"]:
            assert r["$ts"] == srv.clock.now_ms() and r["data"] == r["$seq"] - 1
            assert "$tag" not in r and "$node" not in r
        # every data frame's id is the whole cursor map, this frame's position included
        assert decode_id(f.id or "") == {"a": data["to_seq"], "b": 0}
    caught = {f.json()["topic"]: f for f in frames if f.event == "caught-up"}
    assert caught["a"].json() == {"topic": "a", "head_seq": 7}
    assert caught["b"].json() == {"topic": "b", "head_seq": 0}
    assert all(f.id for f in frames) and decode_id(frames[-1].id or "") == {"a": 7, "b": 0}
    # live: records arrive as written, with no caught-up repeated
    await srv.fill("b", 2)
    data, cursor = await expect(stream, "record")
    assert data["topic"] == "b" and [r["$seq"] for r in data["records"]] == [1, 2]
    assert (data["from_seq"], data["to_seq"], data["head_seq"]) == (0, 2, 2)
    assert cursor == {"a": 7, "b": 2}
    await srv.fill("a", 1)
    data, cursor = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [8] and cursor == {"a": 8, "b": 2}
    assert await stream.quiet(QUIET_S)
    stream.close()


@pytest.mark.parametrize(("limit", "sizes"), [(0, [256, 44]), (5000, [1000, 300])], ids=["zero", "over-max"])
async def test_limit_zero_is_the_default_and_a_large_limit_is_clamped(
    srv: Srv, limit: int, sizes: list[int]
) -> None:
    await srv.fill("a", sum(sizes))
    wid, stream = await srv.stream({"topics": {"a": {}}, "limit": limit})
    frames = await until_caught_up(stream, {"a"})
    assert [len(f.json()["records"]) for f in frames if f.event == "record"] == sizes
    stream.close()


async def test_backlog_is_batched_under_max_batch_bytes(srv: Srv) -> None:
    await srv.append("a", *({"data": "y" * 1000} for _ in range(6)))
    await srv.append("a", {"data": "z" * 5000})  # bigger than the budget: alone in its frame
    await srv.fill("a", 2)
    wid, stream = await srv.stream({"topics": {"a": {}}, "max_batch_bytes": 2500})
    frames = await until_caught_up(stream, {"a"})
    batches = [[r["$seq"] for r in f.json()["records"]] for f in frames if f.event == "record"]
    assert [s for b in batches for s in b] == list(range(1, 10))
    for batch in batches:
        assert 1 <= len(batch) <= 3  # ~1 KiB records under a 2.5 KiB budget
    assert [7] in batches  # the 5 KB record goes out alone (at least one record per frame)
    assert len(batches) >= 4
    stream.close()


async def test_record_options_shape_records(srv: Srv) -> None:
    await srv.append("a", {"data": {"k": 1}, "tag": "t:1", "meta": {"h": "v"}, "node": "n1"}, {"data": 2})
    default = await srv.watch({"topics": {"a": {}}})
    lean = await srv.watch(
        {"topics": {"a": {}}, "include_data": False, "include_tags": True, "include_meta": False}
    )
    s1, s2 = await srv.open(default["wid"]), await srv.open(lean["wid"])
    d1, _ = await expect(s1, "record")
    d2, _ = await expect(s2, "record")
    assert d1["records"][0] == {
        "$seq": 1,
        "$ts": srv.clock.now_ms(),
        "$node": "n1",
        "data": {"k": 1},
        "meta": {"h": "v"},
    }
    assert d1["records"][1] == {"$seq": 2, "$ts": srv.clock.now_ms(), "data": 2}
    assert d2["records"][0] == {"$seq": 1, "$ts": srv.clock.now_ms(), "$node": "n1", "$tag": "t:1"}
    assert d2["records"][1] == {"$seq": 2, "$ts": srv.clock.now_ms()}
    s1.close()
    s2.close()


async def test_node_filter_skips_own_records_but_advances_the_cursor(srv: Srv) -> None:
    await srv.append("a", {"data": 1, "node": "me"}, {"data": 2, "node": "other"}, {"data": 3, "node": "me"})
    wid, stream = await srv.stream({"topics": {"a": {}}, "node": "me"})
    data, cursor = await expect(stream, "record")
    assert [(r["$seq"], r["$node"]) for r in data["records"]] == [(2, "other")]
    assert data["to_seq"] == 3 and cursor == {"a": 3}  # own records still move the cursor
    await expect(stream, "caught-up")
    await srv.append("a", {"data": 4}, node="me")  # batch-level node
    assert await stream.quiet(QUIET_S)
    await srv.append("a", {"data": 5})
    data, cursor = await expect(stream, "record")
    # the silent read of seq 4 (own record, no frame) moved the session cursor past it
    assert [r["$seq"] for r in data["records"]] == [5] and data["from_seq"] == 4 and cursor == {"a": 5}
    stream.close()


# ---------------------------------------------------------------------------------------------
# resume (§7.3; docs/DECISIONS.md, "Watch ids")
# ---------------------------------------------------------------------------------------------


async def test_reconnect_continues_from_the_session_cursors(srv: Srv) -> None:
    await srv.fill("a", 4)
    wid, stream = await srv.stream({"topics": {"a": {}}})
    assert seqs_of(await until_caught_up(stream, {"a"})) == [1, 2, 3, 4]
    await srv.closed(stream, wid)
    await srv.fill("a", 2)  # written while nobody streams
    stream = await srv.open(wid)
    data, cursor = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [5, 6] and data["from_seq"] == 4 and cursor == {"a": 6}
    await expect(stream, "caught-up")  # re-announced on each backlog -> live transition
    assert await stream.quiet(QUIET_S)
    stream.close()


async def test_last_event_id_rewinds_to_an_earlier_frame(srv: Srv) -> None:
    await srv.fill("a", 6)
    wid, stream = await srv.stream({"topics": {"a": {}}, "limit": 2})
    frames = await until_caught_up(stream, {"a"})
    ids = [f.id for f in frames if f.event == "record"]
    assert [decode_id(i or "") for i in ids] == [{"a": 2}, {"a": 4}, {"a": 6}]
    await srv.closed(stream, wid)
    stream = await srv.open(wid, {"Last-Event-ID": ids[0] or ""})
    frames = await until_caught_up(stream, {"a"})
    assert seqs_of(frames) == [3, 4, 5, 6]
    assert frames[0].json()["from_seq"] == 2
    stream.close()


async def test_partial_last_event_id_rewinds_only_the_topics_it_names(srv: Srv) -> None:
    await srv.fill("a", 4)
    await srv.fill("b", 3)
    wid, stream = await srv.stream({"topics": {"a": {}, "b": {}}})
    await until_caught_up(stream, {"a", "b"})
    await srv.closed(stream, wid)
    stream = await srv.open(wid, {"Last-Event-ID": encode_id({"a": 1})})
    frames = await until_caught_up(stream, {"a", "b"})
    assert seqs_of(frames, "a") == [2, 3, 4] and seqs_of(frames, "b") == []
    assert decode_id(frames[-1].id or "") == {"a": 4, "b": 3}
    stream.close()


async def test_last_event_id_never_advances_past_the_session_cursors(srv: Srv) -> None:
    await srv.fill("a", 4)
    wid = (await srv.watch({"topics": {"a": {}}}))["wid"]
    stream = await srv.open(wid, {"Last-Event-ID": encode_id({"a": 3, "zzz": 9})})
    frames = await until_caught_up(stream, {"a"})
    assert seqs_of(frames) == [1, 2, 3, 4]
    assert decode_id(frames[-1].id or "") == {"a": 4}  # an unwatched topic does not leak in
    await srv.closed(stream, wid)
    stream = await srv.open(wid, {"Last-Event-ID": encode_id({"a": 100})})
    frames = await until_caught_up(stream, {"a"})
    assert seqs_of(frames) == [] and decode_id(frames[-1].id or "") == {"a": 4}
    stream.close()


@pytest.mark.parametrize(
    "token",
    [
        "!!!not-base64!!!",
        base64.urlsafe_b64encode(b"[1,2]").decode(),
        encode_id({"a": -1}),
        encode_id({"a": "1"}),
    ],
    ids=["garbage", "not-a-map", "negative", "string-seq"],
)
async def test_a_malformed_last_event_id_is_ignored(srv: Srv, token: str) -> None:
    await srv.fill("a", 3)
    wid, stream = await srv.stream({"topics": {"a": {}}})
    await until_caught_up(stream, {"a"})
    await srv.closed(stream, wid)
    await srv.fill("a", 1)
    stream = await srv.open(wid, {"Last-Event-ID": token})
    frames = await until_caught_up(stream, {"a"})
    assert seqs_of(frames) == [4]
    stream.close()


async def test_over_64_topics_the_id_is_an_opaque_token_the_session_resolves(srv: Srv) -> None:
    names = [f"t{i:02}" for i in range(65)]
    for name in names:
        await srv.fill(name, 2)
    wid, stream = await srv.stream({"topics": {n: {} for n in names}})
    frames = await until_caught_up(stream, set(names))
    assert seqs_of(frames) == [1, 2] * 65
    ids = [f.id or "" for f in frames]
    assert all(re.fullmatch(r"~[A-Za-z0-9_-]+", i) for i in ids)
    assert len(set(ids)) == len(names)  # a topic's record and caught-up frames: one position
    first_topic = frames[0].json()["topic"]
    await srv.closed(stream, wid)
    # the first frame's token: that topic at 2, every other one still at 0
    stream = await srv.open(wid, {"Last-Event-ID": ids[0]})
    frames = await until_caught_up(stream, set(names))
    assert seqs_of(frames, first_topic) == []
    assert sorted(f.json()["topic"] for f in frames if f.event == "record") == sorted(
        set(names) - {first_topic}
    )
    stream.close()


async def test_an_opaque_id_is_accepted_as_cursor(srv: Srv) -> None:
    names = [f"t{i:02}" for i in range(65)]
    for name in names:
        await srv.fill(name, 1)
    wid, stream = await srv.stream({"topics": {n: {} for n in names}})
    frames = await until_caught_up(stream, set(names))
    stream.close()
    token = frames[-1].id
    assert token is not None and token.startswith("~")
    r = await srv.http.post("/v0/watch", json={"topics": {n: {} for n in names}, "cursor": token})
    assert r.status_code == 200, r.text
    assert {v["from_seq"] for v in r.json()["topics"].values()} == {1}


# ---------------------------------------------------------------------------------------------
# tombstones (docs/DECISIONS.md, "Tombstones")
# ---------------------------------------------------------------------------------------------


async def test_from_seq_zero_on_a_capped_topic_opens_with_from_seq_too_old(srv: Srv) -> None:
    await srv.put("a", {"cap_records": 5})
    await srv.fill("a", 12)  # 1..7 evicted
    body = await srv.watch({"topics": {"a": {}}})
    assert body["topics"]["a"] == {"from_seq": 0, "head_seq": 12, "earliest_seq": 8}
    stream = await srv.open(body["wid"])
    data, cursor = await expect(stream, "tombstone")
    assert data == {
        "topic": "a",
        "gap_from": 1,
        "gap_to": 7,
        "reason": "from_seq_too_old",
        "missed_estimate": 7,
        "earliest_seq": 8,
        "head_seq": 12,
    }
    assert cursor == {"a": 7}  # the id moves the cursor to gap_to
    data, cursor = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [8, 9, 10, 11, 12] and data["from_seq"] == 7
    await expect(stream, "caught-up")
    stream.close()


async def test_a_cursor_inside_the_live_range_gets_no_tombstone(srv: Srv) -> None:
    await srv.put("a", {"cap_records": 5})
    await srv.fill("a", 12)
    wid, stream = await srv.stream({"topics": {"a": {"from_seq": 7}}})
    data, _ = await expect(stream, "record")  # 7 + 1 == earliest: nothing lost
    assert data["records"][0]["$seq"] == 8
    stream.close()
    wid, stream = await srv.stream({"topics": {"a": {"from_seq": 6}}})
    data, cursor = await expect(stream, "tombstone")  # 6 + 1 < 8: seq 7 was lost
    assert (data["gap_from"], data["gap_to"], data["missed_estimate"]) == (7, 7, 1) and cursor == {"a": 7}
    stream.close()


async def test_a_live_reader_meeting_a_cap_loss_gets_reason_cap(srv: Srv) -> None:
    """A caught-up reader whose next records are evicted before it reads them (one batch
    larger than the cap): the loss is met while streaming, so its reason is ``cap``."""
    await srv.put("a", {"cap_records": 5})
    await srv.fill("a", 3)
    wid, stream = await srv.stream({"topics": {"a": {}}})
    assert seqs_of(await until_caught_up(stream, {"a"})) == [1, 2, 3]
    await srv.fill("a", 10)  # seqs 4..13; 4..8 evicted by the same write
    data, cursor = await expect(stream, "tombstone")
    assert data == {
        "topic": "a",
        "gap_from": 4,
        "gap_to": 8,
        "reason": "cap",
        "missed_estimate": 5,
        "earliest_seq": 9,
        "head_seq": 13,
    }
    assert cursor == {"a": 8}
    data, cursor = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [9, 10, 11, 12, 13] and cursor == {"a": 13}
    assert await stream.quiet(QUIET_S)  # live again, and no caught-up repeated
    stream.close()


async def test_a_loss_met_on_reconnect_is_from_seq_too_old(srv: Srv) -> None:
    await srv.put("a", {"cap_records": 5})
    await srv.fill("a", 3)
    wid, stream = await srv.stream({"topics": {"a": {}}})
    await until_caught_up(stream, {"a"})
    await srv.closed(stream, wid)
    await srv.fill("a", 10)  # 4..8 lost while disconnected
    stream = await srv.open(wid)
    data, cursor = await expect(stream, "tombstone")
    assert (data["gap_from"], data["gap_to"], data["reason"]) == (4, 8, "from_seq_too_old")
    assert data["missed_estimate"] == 5 and cursor == {"a": 8}
    assert seqs_of([await stream.next() or SseFrame("")]) == [9, 10, 11, 12, 13]
    stream.close()


async def test_ttl_loss_on_connect(srv: Srv) -> None:
    await srv.put("a", {"ttl_ms": 1000})
    await srv.fill("a", 3)
    srv.clock.advance(1500)
    await srv.fill("a", 1)
    wid, stream = await srv.stream({"topics": {"a": {}}})
    data, cursor = await expect(stream, "tombstone")
    assert (data["gap_from"], data["gap_to"], data["reason"], data["missed_estimate"]) == (
        1,
        3,
        "from_seq_too_old",
        3,
    )
    assert cursor == {"a": 3}
    data, _ = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [4]
    stream.close()


async def test_a_cursor_past_a_recreated_topic_starts_it_over(srv: Srv) -> None:
    await srv.fill("a", 10)
    assert (await srv.http.delete("/v0/topics/a")).status_code == 200
    await srv.fill("a", 3)  # a new incarnation: seqs restart
    body = await srv.watch({"topics": {"a": {}}, "cursor": encode_id({"a": 10})})
    assert body["topics"]["a"] == {"from_seq": 10, "head_seq": 3, "earliest_seq": 1}
    stream = await srv.open(body["wid"])
    data, cursor = await expect(stream, "tombstone")
    assert data["reason"] == "recreated" and data["head_seq"] == 3
    assert cursor == {"a": 0}  # the reader starts the new incarnation over
    data, cursor = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [1, 2, 3] and data["from_seq"] == 0
    assert cursor == {"a": 3}
    await expect(stream, "caught-up")
    stream.close()


async def test_deleted_gaps_are_silent(srv: Srv) -> None:
    await srv.fill("a", 6)
    r = await srv.http.post("/v0/topics/a/delete", json={"before_seq": 4})
    assert r.status_code == 200 and r.json()["earliest_seq"] == 4
    wid, stream = await srv.stream({"topics": {"a": {}}})
    data, cursor = await expect(stream, "record")  # no tombstone first
    assert [r["$seq"] for r in data["records"]] == [4, 5, 6] and cursor == {"a": 6}
    await expect(stream, "caught-up")
    # deleted while disconnected: still silent
    await srv.closed(stream, wid)
    await srv.fill("a", 3)
    r = await srv.http.post("/v0/topics/a/delete", json={"before_seq": 9})
    assert r.status_code == 200
    stream = await srv.open(wid)
    data, _ = await expect(stream, "record")
    assert [r["$seq"] for r in data["records"]] == [9]
    stream.close()


@pytest.mark.parametrize(
    ("config", "advance_ms", "reason"),
    [
        ({"cap_records": 5}, 0, "cap"),
        ({"cap_records": 5}, 4_999, "cap"),
        ({"cap_records": 5}, 5_000, "from_seq_too_old"),
        ({"ttl_ms": 2_000}, 3_000, "ttl"),
    ],
    ids=["cap-not-blocked-long", "cap-just-under-grace", "past-buffer-grace", "ttl-under-grace"],
)
async def test_a_blocked_reader_meeting_a_loss(
    srv: Srv, config: dict[str, Any], advance_ms: int, reason: str
) -> None:
    """The client stops reading; the stream blocks on the paused transport with records unread
    behind it; they are lost (cap: more appended than the cap; ttl: the clock passes it). A
    stream blocked for less than BUFFER_GRACE_MS reports the loss it meets on its next read
    as ``cap``/``ttl``; blocked for the grace or longer, the stream is treated as reconnected
    and reports ``from_seq_too_old`` (streams.py / WatchStream.produce)."""
    await srv.put("a", config)
    wid, stream = await srv.stream({"topics": {"a": {}}, "max_batch_bytes": 65536}, rcvbuf=4096)
    await expect(stream, "caught-up")
    stalled = await stall(srv, "a")
    await srv.fill("a", 10)  # unread behind the blocked stream; with cap 5, half are evicted at once
    srv.clock.advance(advance_ms)
    head = stalled + 10
    frames: list[SseFrame] = []
    while not frames or decode_id(frames[-1].id or "")["a"] < head:
        frame = await stream.next()
        assert frame is not None
        frames.append(frame)
    # the position never left "live" (each read reached the head), so no caught-up is re-sent
    assert [f.event for f in frames if f.event not in ("record", "tombstone")] == []
    assert await stream.quiet(QUIET_S)
    stones = [f for f in frames if f.event == "tombstone"]
    assert len(stones) == 1, [f.raw[:120] for f in frames]
    data = stones[0].json()
    read_before = seqs_of(frames[: frames.index(stones[0])])
    assert read_before == list(range(1, len(read_before) + 1)) and len(read_before) >= 1
    assert data["reason"] == reason
    assert data["gap_from"] == read_before[-1] + 1
    assert data["gap_to"] == data["earliest_seq"] - 1 and data["head_seq"] == head
    assert decode_id(stones[0].id or "") == {"a": data["gap_to"]}
    after = seqs_of(frames[frames.index(stones[0]) :])
    assert after == list(range(data["gap_to"] + 1, head + 1))
    stream.close()


# ---------------------------------------------------------------------------------------------
# heartbeats
# ---------------------------------------------------------------------------------------------


async def test_heartbeats_run_on_the_engine_clock(srv: Srv) -> None:
    await srv.put("a")
    clock = srv.clock
    t0 = clock.now_ms()
    wid, stream = await srv.stream({"topics": {"a": {}}, "heartbeat_ms": 1000})
    await expect(stream, "caught-up")
    clock.advance(999)
    assert await stream.quiet(QUIET_S)
    clock.advance(1)
    hb = await stream.next()
    assert hb is not None and hb.comments == [f"hb {t0 + 1000}"] and hb.raw == f": hb {t0 + 1000}"
    assert hb.id is None and hb.event is None and hb.data is None
    # data within the window suppresses the next one
    clock.advance(600)
    await srv.fill("a", 1)
    await expect(stream, "record")
    clock.advance(400)  # 1000 since the last heartbeat, but only 400 since data
    assert await stream.quiet(QUIET_S)
    clock.advance(600)  # 1000 since data
    hb = await stream.next()
    assert hb is not None and hb.comments == [f"hb {t0 + 2600}"] and hb.id is None
    clock.advance(1000)
    hb = await stream.next()
    assert hb is not None and hb.comments == [f"hb {t0 + 3600}"]
    # heartbeats never moved the resume cursor
    await srv.fill("a", 1)
    _, cursor = await expect(stream, "record")
    assert cursor == {"a": 2}
    stream.close()


async def test_heartbeat_ms_is_clamped_to_at_least_1000(srv: Srv) -> None:
    await srv.put("a")
    wid, stream = await srv.stream({"topics": {"a": {}}, "heartbeat_ms": 1})
    await expect(stream, "caught-up")
    srv.clock.advance(999)
    assert await stream.quiet(QUIET_S)
    srv.clock.advance(1)
    hb = await stream.next()
    assert hb is not None and hb.comments and hb.comments[0].startswith("hb ")
    stream.close()


# ---------------------------------------------------------------------------------------------
# topic deletion, takeover, session GC, slow consumers
# ---------------------------------------------------------------------------------------------


async def test_a_deleted_topic_ends_for_this_session_only(srv: Srv) -> None:
    await srv.fill("a", 2)
    await srv.fill("b", 1)
    wid, stream = await srv.stream({"topics": {"a": {}, "b": {}}})
    await until_caught_up(stream, {"a", "b"})
    r = await srv.http.delete("/v0/topics/a")
    assert r.status_code == 200, r.text
    data, cursor = await expect(stream, "topic-deleted")
    assert data == {"topic": "a", "head_seq": 2, "reason": "deleted"}
    assert cursor == {"a": 2, "b": 1}
    # the other topic keeps streaming
    await srv.fill("b", 1)
    data, cursor = await expect(stream, "record")
    assert data["topic"] == "b" and [r["$seq"] for r in data["records"]] == [2]
    assert cursor == {"b": 2}
    # a topic recreated under the name is not followed by this session
    await srv.fill("a", 3)
    assert await stream.quiet(QUIET_S)
    stream.close()
    # not after a reconnect either
    await until(lambda: srv.owner(wid) is None)
    stream = await srv.open(wid)
    frames = await until_caught_up(stream, {"b"})
    assert seqs_of(frames) == [] and decode_id(frames[-1].id or "") == {"b": 2}
    assert await stream.quiet(QUIET_S)
    stream.close()


async def test_a_topic_deleted_while_disconnected_is_reported_on_reconnect(srv: Srv) -> None:
    await srv.fill("a", 2)
    await srv.fill("b", 1)
    wid, stream = await srv.stream({"topics": {"a": {}, "b": {}}})
    await until_caught_up(stream, {"a", "b"})
    await srv.closed(stream, wid)
    assert (await srv.http.delete("/v0/topics/a")).status_code == 200
    await srv.fill("a", 5)  # recreated under the name meanwhile: a different topic
    stream = await srv.open(wid)
    frames = [await stream.next(), await stream.next()]
    by_event = {f.event: f for f in frames if f is not None}
    assert by_event.keys() == {"topic-deleted", "caught-up"}
    assert by_event["topic-deleted"].json() == {"topic": "a", "head_seq": 2, "reason": "deleted"}
    assert by_event["caught-up"].json() == {"topic": "b", "head_seq": 1}
    assert await stream.quiet(QUIET_S)
    stream.close()


async def test_a_second_get_takes_the_session_over(srv: Srv) -> None:
    await srv.fill("a", 2)
    wid, first = await srv.stream({"topics": {"a": {}}})
    await until_caught_up(first, {"a"})
    second = await srv.open(wid)
    frame = await first.next()
    assert frame is not None and frame.event == "error" and frame.id is None
    error = frame.json()
    assert error["code"] == 409 and error["error"].startswith("superseded")
    assert await first.next() is None and first.ended  # the old stream is over
    data, cursor = await expect(second, "caught-up")  # the session's cursors carried over
    assert data == {"topic": "a", "head_seq": 2} and cursor == {"a": 2}
    await srv.fill("a", 1)
    data, cursor = await expect(second, "record")
    assert [r["$seq"] for r in data["records"]] == [3] and cursor == {"a": 3}
    assert srv.owner(wid) is not None
    first.close()
    second.close()


async def test_an_idle_session_is_reclaimed_after_its_ttl(srv: Srv) -> None:
    await srv.put("a")
    wid, stream = await srv.stream({"topics": {"a": {}}})
    await expect(stream, "caught-up")
    await srv.closed(stream, wid)
    assert len(srv.ctx.watches) == 1
    srv.clock.advance(299_999)
    await srv.watch({"topics": {"a": {}}})  # the GC runs on every POST
    assert len(srv.ctx.watches) == 2  # one ms short of the TTL: kept
    srv.clock.advance(1)
    await srv.watch({"topics": {"a": {}}})
    assert len(srv.ctx.watches) == 2  # the old one went, a new one came
    s = await SseStream.open(srv.port, f"/v0/watch/{wid}")
    assert_envelope(s.status, s.body, 404, "not_found")
    s.close()


async def test_the_session_gc_also_runs_on_stream_open(srv: Srv) -> None:
    await srv.put("a")
    idle_wid, idle = await srv.stream({"topics": {"a": {}}})
    busy_wid, busy = await srv.stream({"topics": {"a": {}}})
    await expect(idle, "caught-up")
    await expect(busy, "caught-up")
    await srv.closed(idle, idle_wid)
    srv.clock.advance(300_000)
    assert len(srv.ctx.watches) == 2  # nothing ran the GC yet
    again = await srv.open(busy_wid)  # a stream open (here a takeover) collects
    assert len(srv.ctx.watches) == 1
    s = await SseStream.open(srv.port, f"/v0/watch/{idle_wid}")
    assert_envelope(s.status, s.body, 404, "not_found")
    s.close()
    busy.close()
    again.close()


async def test_a_session_with_an_open_stream_is_never_reclaimed(srv: Srv) -> None:
    await srv.put("a")
    wid, stream = await srv.stream({"topics": {"a": {}}, "heartbeat_ms": 60_000})
    await expect(stream, "caught-up")
    srv.clock.advance(600_000)
    hb = await stream.next()  # one overdue heartbeat
    assert hb is not None and hb.comments
    await srv.watch({"topics": {"a": {}}})
    assert len(srv.ctx.watches) == 2
    await srv.fill("a", 1)
    data, _ = await expect(stream, "record")
    assert data["records"][0]["$seq"] == 1
    # once the stream closes, the TTL counts from then
    await srv.closed(stream, wid)
    srv.clock.advance(299_999)
    await srv.watch({"topics": {"a": {}}})
    stream = await srv.open(wid)
    await expect(stream, "caught-up")
    stream.close()


async def test_a_slow_consumer_gets_a_final_408_and_the_session_survives(srv: Srv) -> None:
    await srv.put("a")
    wid, stream = await srv.stream({"topics": {"a": {}}, "max_batch_bytes": 65536}, rcvbuf=4096)
    await expect(stream, "caught-up")
    stalled = await stall(srv, "a")
    await srv.fill("a", 3)  # behind the blocked stream, unread
    srv.clock.advance(29_999)
    await asyncio.sleep(0.05)
    assert srv.owner(wid) is not None  # still waiting for the client
    srv.clock.advance(1)
    await until(lambda: srv.owner(wid) is None)  # the server gave up on the stream
    frames = await drain(stream)
    final = frames[-1]
    assert final.event == "error" and final.id is None
    error = final.json()
    assert error["code"] == 408 and "slow consumer" in error["error"]
    delivered = seqs_of(frames)
    assert delivered == list(range(1, len(delivered) + 1))
    assert len(delivered) < stalled + 3
    assert stream.eof and not stream.ended  # the server closed the connection it gave up on
    stream.close()
    # the session survives: a new GET resumes after what the first stream delivered
    stream = await srv.open(wid)
    frames = await until_caught_up(stream, {"a"})
    assert seqs_of(frames) == list(range(len(delivered) + 1, stalled + 4))
    assert [f.event for f in frames if f.event == "tombstone"] == []
    stream.close()


async def test_a_client_gone_while_blocked_releases_the_session_and_last_event_id_recovers(
    srv: Srv,
) -> None:
    """Frames the server wrote but the client never processed are past the session cursors;
    the Last-Event-ID of the last frame the client did process brings them back."""
    await srv.put("a")
    wid, stream = await srv.stream({"topics": {"a": {}}, "max_batch_bytes": 65536}, rcvbuf=4096)
    caught = await stream.next()
    assert caught is not None and caught.event == "caught-up" and caught.id is not None
    stalled = await stall(srv, "a")
    await srv.closed(stream, wid)  # the server lets go of a stream blocked on its transport
    stream = await srv.open(wid)
    frames = await until_caught_up(stream, {"a"})
    resumed = seqs_of(frames)
    assert resumed == list(range(stalled - len(resumed) + 1, stalled + 1))  # after what it wrote
    await srv.closed(stream, wid)
    stream = await srv.open(wid, {"Last-Event-ID": caught.id})
    frames = await until_caught_up(stream, {"a"})
    assert seqs_of(frames) == list(range(1, stalled + 1))
    stream.close()


# ---------------------------------------------------------------------------------------------
# the frames against the served document's event schemas
# ---------------------------------------------------------------------------------------------


async def test_every_watch_frame_kind_matches_the_served_event_schemas(srv: Srv) -> None:
    await srv.put("capped", {"cap_records": 2})
    await srv.fill("capped", 5)
    wid, stream = await srv.stream({"topics": {"capped": {"from_seq": 0}}, "include_tags": True})
    seen = set()
    for _ in range(3):  # tombstone, record, caught-up
        frame = await stream.next()
        assert frame is not None
        assert_event_conforms(frame, "WatchEvent")
        seen.add(frame.event)
    assert (await srv.http.delete("/v0/topics/capped")).status_code == 200
    frame = await stream.next()
    assert frame is not None
    assert_event_conforms(frame, "WatchEvent")
    seen.add(frame.event)
    await srv.open(wid)  # takes the session over: the first stream ends with an error event
    frame = await stream.next()
    assert frame is not None
    assert_event_conforms(frame, "WatchEvent")
    seen.add(frame.event)
    assert seen == {"tombstone", "record", "caught-up", "topic-deleted", "error"}
