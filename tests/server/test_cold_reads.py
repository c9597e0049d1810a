"""The server's read paths over cold records (``storage.coldstore``, ``topics_engine.coldreads``),
in process: the app over a data directory of tiny segments (8 records, 4 KiB) sealed on the
real segment thread, with a chunk cache of 0 or 16 KiB, so almost every record a request needs
is only in its segment file. JSON calls go through httpx's ASGI transport; the SSE and
WebSocket streams through the native server on a local port (httpx's transport buffers whole
responses), over the same app.

By default the data directory's file system reports no segment bytes in the OS page cache
(:class:`NoPageCache`): a strict read that misses the chunk cache then loads on a reader thread
(the request, pump or router awaits it) — the path a server takes after a restart; one variant
keeps the real file system, whose page cache (``RWF_NOWAIT``) serves strict reads at once.

Each test checks what the reader got — every record, in order, byte for byte where the wire
allows — and, from ``/v0/metrics``, that records were read back from segments
(``topics_cold_reads_total``) and none on the event loop's calling thread
(``topics_cold_reads_blocking_total``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import Engine, ManualClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.storage.fs import FileSystem
from topics_server.app import build
from topics_server.asgi import AsgiApp
from topics_server.context import ServerContext
from topics_server.http import HttpServer
from topics_server.settings import load_settings
from websockets.asyncio.client import ClientConnection, connect

from ..engine.conftest import split_records
from .processes import NO_THROTTLE
from .sse_client import SseFrame, SseStream

T0 = 1_700_000_000_000
TINY = SegmentPolicy(max_events=8, max_bytes=4 << 10, max_age_ms=60_000)
TIMEOUT = 5.0
Json = dict[str, Any]


class NoPageCache(FileSystem):
    """Segment bytes are never in the page cache: every chunk a strict read needs that the
    chunk cache does not hold is loaded on a reader thread."""

    def pread_cached(self, path: Path, offset: int, length: int, into: bytearray) -> memoryview | None:
        return None


# -- the server -----------------------------------------------------------------------------------


@dataclass
class Cold:
    ctx: ServerContext
    engine: Engine
    datadir: DataDirectory
    clock: ManualClock
    http: httpx.AsyncClient
    port: int

    async def request(self, method: str, path: str, body: Any = None) -> httpx.Response:
        content = orjson.dumps(body) if body is not None else None
        headers = {"content-type": "application/json"} if body is not None else {}
        return await self.http.request(method, path, content=content, headers=headers)

    async def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Json:
        r = await self.request(method, path, body)
        assert r.status_code == status, r.text
        out: Json = r.json()
        return out

    async def put(self, topic: str, config: Json | None = None) -> None:
        r = await self.request("PUT", f"/v0/topics/{topic}", config or {})
        assert r.status_code in (200, 201), r.text

    async def append(self, topic: str, records: list[Json]) -> list[int]:
        """Append (the body sent as compact JSON: each ``data`` is stored as these bytes)."""
        r = await self.request("POST", f"/v0/topics/{topic}", {"records": records})
        assert r.status_code in (200, 201), r.text
        return list(r.json()["seqs"])

    async def fill(self, topic: str, n: int, *, tags: bool = True) -> list[bytes]:
        """Append ``n`` records in writes of 1 to 11 (chunks of many shapes), some tagged, some
        with ``meta``; returns each record's wire bytes (as a diff with ``include_tags`` serves
        them), then waits until all but the unsealed tail left memory."""
        expected: list[bytes] = []
        i = 0
        while i < n:
            batch = []
            for j in range(min(n - i, 1 + (i * 7) % 11)):
                k = i + j
                rec: Json = {"data": {"i": k, "pad": "é" * (k % 13) + "x" * (k % 90)}}
                if tags and k % 3 == 0:
                    rec["tag"] = f"k{k % 4}"
                if k % 5 == 0:
                    rec["meta"] = {"trace": f"t{k}"}
                batch.append(rec)
            seqs = await self.append(topic, batch)
            for seq, rec in zip(seqs, batch, strict=True):
                obj: Json = {"$seq": seq, "$ts": self.clock.now_ms()}
                if "tag" in rec:
                    obj["$tag"] = rec["tag"]
                obj["data"] = rec["data"]
                if "meta" in rec:
                    obj["meta"] = rec["meta"]
                expected.append(orjson.dumps(obj))
            i += len(batch)
        await self.sealed(topic)
        return expected

    async def sealed(self, topic: str) -> None:
        """Wait until the segment thread sealed everything but the tail (< 8 records) and the
        sealed chunks went cold."""
        log = self.engine.get(topic).log
        deadline = time.monotonic() + TIMEOUT
        while log.resident()[0] >= TINY.max_events:
            assert time.monotonic() < deadline, f"{topic}: {log.resident()} still in memory"
            await asyncio.sleep(0.01)

    async def metrics(self) -> dict[str, float]:
        r = await self.http.get("/v0/metrics")
        assert r.status_code == 200, r.text
        out: dict[str, float] = {}
        for line in r.text.splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, _, value = line.partition(" ")
                out[name] = float(value)
        return out


@contextlib.asynccontextmanager
async def cold_server(
    path: Path, *, cache_bytes: int = 0, page_cache: bool = False, policy: SegmentPolicy = TINY
) -> AsyncIterator[Cold]:
    settings = load_settings({"TOPICS_DATA_DIR": str(path), **NO_THROTTLE})
    clock = ManualClock(T0)
    engine = Engine(clock, settings.limits)
    datadir = DataDirectory(
        path,
        fs=FileSystem() if page_cache else NoPageCache(),
        segment_policy=policy,
        cache_bytes=cache_bytes,
    )
    app, ctx = build(settings, engine, datadir)
    await ctx.start()
    await ctx.wait_ready()
    native = HttpServer(app)
    await native.start("127.0.0.1", 0)
    port: int = native.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=AsgiApp(app)), base_url="http://topics.test", timeout=TIMEOUT
        ) as http:
            yield Cold(ctx, engine, datadir, clock, http, port)
    finally:
        await native.shutdown(1.0)
        await ctx.stop()


@pytest.fixture
async def cold(tmp_path: Path) -> AsyncIterator[Cold]:
    async with cold_server(tmp_path / "data") as server:
        yield server


class Reads:
    """The cold-read counters over a span of requests."""

    def __init__(self, before: dict[str, float]) -> None:
        self.before = before

    @classmethod
    async def start(cls, cold: Cold) -> Reads:
        return cls(await cold.metrics())

    async def check(self, cold: Cold, *, page_cache: bool = False) -> dict[str, float]:
        """Records were read back from segments, none on the calling thread; without the page
        cache, all on reader threads."""
        after = await cold.metrics()
        loads = after["topics_cold_reads_total"] - self.before["topics_cold_reads_total"]
        assert loads > 0, "no record was read back from a segment: nothing was cold"
        assert after["topics_cold_reads_blocking_total"] == self.before["topics_cold_reads_blocking_total"], (
            "a cold chunk was read on the event loop, waiting for the disk"
        )
        if not page_cache:
            assert after["topics_cold_reads_page_cache_total"] == 0
        return after


# -- diff -----------------------------------------------------------------------------------------


def records_of(content: bytes) -> list[bytes]:
    """The exact bytes of each record of a diff response."""
    start = content.index(b',"records":[') + len(b',"records":[')
    end = content.index(b'],"next_from_seq":')
    blob = content[start:end]
    return split_records(blob) if blob else []


async def page_through(cold: Cold, topic: str, **body: Any) -> tuple[list[bytes], int]:
    """``POST /diff`` from 0 until caught up; every record's bytes, and the pages taken."""
    out: list[bytes] = []
    cursor = 0
    for pages in range(1, 10_000):
        r = await cold.request(
            "POST", f"/v0/topics/{topic}/diff", {"from_seq": cursor, "include_tags": True, **body}
        )
        assert r.status_code == 200, r.text
        page = r.json()
        got = records_of(r.content)
        assert len(got) == len(page["records"])
        out += got
        assert page["next_from_seq"] >= cursor
        cursor = page["next_from_seq"]
        if page["caught_up"]:
            return out, pages
    raise AssertionError("never caught up")


@pytest.mark.parametrize(
    ("cache_bytes", "page_cache"),
    [(0, False), (16 << 10, False), (0, True)],
    ids=["no-cache", "16KiB-cache", "page-cache"],
)
async def test_diff_pages_through_cold_records(tmp_path: Path, cache_bytes: int, page_cache: bool) -> None:
    async with cold_server(tmp_path / "data", cache_bytes=cache_bytes, page_cache=page_cache) as cold:
        expected = await cold.fill("t", 300)
        topic = cold.engine.get("t")
        assert topic.log.resident()[0] < TINY.max_events  # the rest is only in segment files
        reads = await Reads.start(cold)
        got, pages = await page_through(cold, "t", limit=40)
        assert got == expected
        assert pages >= 300 // 40
        after = await reads.check(cold, page_cache=page_cache)
        assert after["topics_cache_bytes"] <= cache_bytes
        # the default page (256 records: more cold chunks than one read loads ahead)
        reads = await Reads.start(cold)
        got, _ = await page_through(cold, "t")
        assert got == expected
        await reads.check(cold, page_cache=page_cache)
        # a byte budget that cuts pages mid-chunk
        reads = await Reads.start(cold)
        got, pages = await page_through(cold, "t", limit=1000, max_batch_bytes=1500)
        assert got == expected and pages > 10
        await reads.check(cold, page_cache=page_cache)


async def test_diff_of_a_cold_middle_with_deletes_and_without_tags(cold: Cold) -> None:
    expected = await cold.fill("t", 200)
    deleted = await cold.call("POST", "/v0/topics/t/delete", {"match": ["tag", "Eq", "k0"]})
    assert deleted["deleted"] == len([k for k in range(200) if k % 3 == 0 and k % 4 == 0])
    live = [b for b in expected if b'"$tag":"k0"' not in b]
    reads = await Reads.start(cold)
    r = await cold.request("POST", "/v0/topics/t/diff", {"from_seq": 57, "limit": 1000})
    assert r.status_code == 200, r.text
    got = [orjson.loads(b) for b in records_of(r.content)]
    want = [orjson.loads(b) for b in live if orjson.loads(b)["$seq"] > 57]
    for rec in want:
        rec.pop("$tag", None)  # not asked for: the record is served without it
    assert got == want
    await reads.check(cold)


async def test_long_poll_at_the_head_wakes_on_an_append(cold: Cold) -> None:
    await cold.fill("t", 100)
    head = cold.engine.get("t").head_seq
    started = time.monotonic()
    poll = asyncio.ensure_future(cold.call("POST", "/v0/topics/t/diff", {"from_seq": head, "wait_ms": 4000}))
    await asyncio.sleep(0.1)
    assert not poll.done(), "the long-poll answered before anything was appended"
    [seq] = await cold.append("t", [{"data": "wake"}])
    body = await asyncio.wait_for(poll, TIMEOUT)
    assert time.monotonic() - started < 3.0, "woken by the append, not by its wait_ms"
    assert [(r["$seq"], r["data"]) for r in body["records"]] == [(seq, "wake")]
    assert body["next_from_seq"] == seq == head + 1 and body["caught_up"]
    # and a long-poll from a cold cursor answers at once with the cold records
    reads = await Reads.start(cold)
    body = await asyncio.wait_for(
        cold.call("POST", "/v0/topics/t/diff", {"from_seq": 10, "wait_ms": 4000, "limit": 1000}), 2.0
    )
    assert [r["$seq"] for r in body["records"]] == list(range(11, seq + 1))
    await reads.check(cold)


# -- watch (SSE) ------------------------------------------------------------------------------------


async def until_caught_up(stream: SseStream, topic: str) -> list[SseFrame]:
    frames = []
    while True:
        frame = await stream.next(TIMEOUT)
        assert frame is not None, "stream ended before caught-up"
        frames.append(frame)
        if frame.event == "caught-up" and frame.json()["topic"] == topic:
            return frames


def sse_records(frames: list[SseFrame]) -> list[Json]:
    out: list[Json] = []
    for frame in frames:
        if frame.event == "record":
            out += frame.json()["records"]
        else:
            assert frame.event == "caught-up", frame.raw
    return out


@pytest.mark.parametrize("cache_bytes", [0, 16 << 10], ids=["no-cache", "16KiB-cache"])
async def test_watch_replays_the_cold_backlog_then_goes_live(tmp_path: Path, cache_bytes: int) -> None:
    async with cold_server(tmp_path / "data", cache_bytes=cache_bytes) as cold:
        expected = [orjson.loads(b) for b in await cold.fill("t", 300)]
        reads = await Reads.start(cold)
        body = await cold.call("POST", "/v0/watch", {"topics": {"t": {"from_seq": 0}}, "include_tags": True})
        stream = await SseStream.open(cold.port, f"/v0/watch/{body['wid']}")
        try:
            assert stream.status == 200, stream.body
            first = await stream.next(TIMEOUT)
            assert first is not None and first.retry == 2000, first
            frames = await until_caught_up(stream, "t")
            assert sse_records(frames) == expected
            assert frames[-1].json() == {"topic": "t", "head_seq": expected[-1]["$seq"]}
            await reads.check(cold)
            [seq] = await cold.append("t", [{"data": "live", "tag": "now"}])
            frame = await stream.next(TIMEOUT)
            assert frame is not None and frame.event == "record", frame
            assert [(r["$seq"], r["data"], r["$tag"]) for r in frame.json()["records"]] == [
                (seq, "live", "now")
            ]
        finally:
            stream.close()


# -- WebSocket --------------------------------------------------------------------------------------


class Ws:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, command: Json) -> None:
        await self.ws.send(orjson.dumps(command).decode())

    async def recv(self) -> Json:
        message = await asyncio.wait_for(self.ws.recv(), TIMEOUT)
        frame: Json = orjson.loads(message)
        return frame


async def test_websocket_subscription_replays_the_cold_backlog_then_goes_live(cold: Cold) -> None:
    expected = [orjson.loads(b) for b in await cold.fill("t", 300, tags=False)]
    reads = await Reads.start(cold)
    async with connect(f"ws://127.0.0.1:{cold.port}/v0/ws", open_timeout=TIMEOUT) as conn:
        ws = Ws(conn)
        await ws.send({"op": "subscribe", "request_id": "s", "topic": "t", "from_seq": 0})
        subscribed = await ws.recv()
        assert subscribed["op"] == "subscribed", subscribed
        head = expected[-1]["$seq"]
        assert subscribed["topics"]["t"] == {"from_seq": 0, "head_seq": head, "earliest_seq": 1}
        got: list[Json] = []
        cursor = 0
        while True:
            frame = await ws.recv()
            if frame["op"] == "caught_up":
                assert frame == {"op": "caught_up", "topic": "t", "head_seq": head}
                break
            assert frame["op"] == "record" and frame["topic"] == "t", frame
            assert frame["from_seq"] == cursor
            got += frame["records"]
            cursor = frame["to_seq"]
        assert got == expected
        await reads.check(cold)
        [seq] = await cold.append("t", [{"data": "live"}])
        frame = await ws.recv()
        assert frame["op"] == "record" and frame["from_seq"] == head, frame
        assert [(r["$seq"], r["data"]) for r in frame["records"]] == [(seq, "live")]


# -- queues -----------------------------------------------------------------------------------------


async def test_claims_drain_a_cold_queue_exactly_once(cold: Cold) -> None:
    await cold.put("q", {"type": "queue"})
    expected = {orjson.loads(b)["$seq"]: orjson.loads(b)["data"] for b in await cold.fill("q", 240)}
    reads = await Reads.start(cold)
    claimed: list[int] = []
    for _ in range(100):
        body = await cold.call("POST", "/v0/topics/q/claim", {"node": "w", "max": 17})
        jobs = body["claimed"]
        if not jobs:
            break
        for job in jobs:
            assert job["data"] == expected[job["$seq"]], job
            assert job["deliveries"] == 1
        claimed += [job["$seq"] for job in jobs]
        acked = await cold.call(
            "POST",
            "/v0/topics/q/ack",
            {"node": "w", "seqs": [j["$seq"] for j in jobs], "lease_ids": [j["lease_id"] for j in jobs]},
        )
        assert acked["acked"] == len(jobs)
    assert claimed == sorted(expected)  # every job once, in order
    state = await cold.call("GET", "/v0/topics/q?touch=false")
    assert state["queue"] == {
        "ready": 0,
        "in_flight": 0,
        "dead_lettered": 0,
        "delayed": 0,
        "oldest_ready_age_ms": 0,
        "holders": [],
        "holders_truncated": False,
    }
    assert state["count"] == 0
    await reads.check(cold)


async def test_a_dead_letter_move_reads_cold_jobs_off_the_event_loop(cold: Cold) -> None:
    await cold.put("q", {"type": "queue", "dead_letter": "q.dlq"})
    records = [orjson.loads(b) for b in await cold.fill("q", 60)]
    jobs = (await cold.call("POST", "/v0/topics/q/claim", {"node": "w", "max": 60}))["claimed"]
    assert len(jobs) == 60
    reads = await Reads.start(cold)
    body = {"node": "w", "seqs": [j["$seq"] for j in jobs], "reason": "bad"}
    moved = await cold.call("POST", "/v0/topics/q/dead_letter", body)
    assert moved["moved"] == [r["$seq"] for r in records]
    await reads.check(cold)
    page = await cold.call("POST", "/v0/topics/q.dlq/diff", {"limit": 1000})
    assert [r["data"] for r in page["records"]] == [r["data"] for r in records]
    assert all(r["meta"]["$dead_letter_reason"] == "bad" for r in page["records"])


async def test_work_stream_pushes_cold_jobs(cold: Cold) -> None:
    await cold.put("q", {"type": "queue"})
    expected = {orjson.loads(b)["$seq"]: orjson.loads(b)["data"] for b in await cold.fill("q", 150)}
    reads = await Reads.start(cold)
    stream = await SseStream.open(cold.port, "/v0/topics/q/work?node=w1&max=8")
    pushed: list[int] = []
    try:
        assert stream.status == 200, stream.body
        while len(pushed) < len(expected):
            frame = await stream.next(TIMEOUT)
            assert frame is not None, "the stream ended"
            if frame.event is None:  # retry / heartbeat
                continue
            assert frame.event == "job", frame.raw
            job = frame.json()
            assert job["topic"] == "q" and job["data"] == expected[job["$seq"]], job
            pushed.append(job["$seq"])
            acked = await cold.call(
                "POST",
                "/v0/topics/q/ack",
                {"node": "w1", "seqs": [job["$seq"]], "lease_ids": [job["lease_id"]]},
            )
            assert acked["acked"] == 1
        assert pushed == sorted(expected)
        assert await stream.quiet(0.2)
    finally:
        stream.close()
    await reads.check(cold)


# -- routers ----------------------------------------------------------------------------------------


async def until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


async def test_a_router_catches_up_from_a_cold_source(cold: Cold) -> None:
    # the dest refuses writes (full, discard "reject"): the router keeps its cursor at the
    # source's start while the source fills and goes cold
    await cold.put("dst", {"cap_records": 1, "discard": "reject"})
    await cold.append("dst", [{"data": "first"}])
    r = await cold.request("PUT", "/v0/routers/src-dst", {"source": "src", "dest": "dst"})
    assert r.status_code == 201, r.text
    expected = [orjson.loads(b) for b in await cold.fill("src", 260)]
    dest = cold.engine.get("dst")
    assert dest.count == 1  # nothing forwarded yet
    reads = await Reads.start(cold)
    await cold.put("dst", {"cap_records": 0})
    cold.clock.advance(1000)  # the router's retry is due
    await until(lambda: dest.count == 1 + len(expected), f"dest holds {dest.count}")
    out: list[Json] = []
    cursor = 0
    while True:
        page = await cold.call(
            "POST", "/v0/topics/dst/diff", {"from_seq": cursor, "limit": 1000, "include_tags": True}
        )
        out += page["records"]
        cursor = page["next_from_seq"]
        if page["caught_up"]:
            break
    assert out[0]["data"] == "first"
    assert [(r["data"], r.get("$tag"), r.get("meta")) for r in out[1:]] == [
        (r["data"], r.get("$tag"), r.get("meta")) for r in expected
    ]
    await reads.check(cold)


# -- one record per write: a chunk per record -------------------------------------------------------
#
# A topic written one record at a time and sealed before its chunks merge (16 of a tier), by a
# server that does not join small writes when it seals them (``SegmentPolicy.join_bytes`` 0: as
# every server before the join did, so older data directories hold such segments), has one chunk
# per record. A read then needs a chunk per record it returns: more than one read loads ahead
# (``recordlog.READ_AHEAD_CHUNKS``), and for a diff more than ``coldreads.MAX_ATTEMPTS`` rounds of
# them. Whatever the shape, a request must not read a chunk on the event loop.

UNJOINED = SegmentPolicy(max_events=8, max_bytes=4 << 10, max_age_ms=60_000, join_bytes=0)


@pytest.fixture
async def unjoined(tmp_path: Path) -> AsyncIterator[Cold]:
    async with cold_server(tmp_path / "data", policy=UNJOINED) as server:
        yield server


async def fill_singly(cold: Cold, topic: str, n: int) -> list[Json]:
    """``n`` records, one per write; returns them as served (no tags, no meta)."""
    out: list[Json] = []
    for i in range(n):
        [seq] = await cold.append(topic, [{"data": {"i": i}}])
        out.append({"$seq": seq, "$ts": cold.clock.now_ms(), "data": {"i": i}})
    await cold.sealed(topic)
    log = cold.engine.get(topic).log
    assert len(log._chunks) == n  # a chunk per record
    return out


async def test_a_max_limit_diff_of_single_record_chunks_reads_off_the_event_loop(unjoined: Cold) -> None:
    cold = unjoined
    expected = await fill_singly(cold, "t", 300)
    reads = await Reads.start(cold)
    body = await cold.call("POST", "/v0/topics/t/diff", {"from_seq": 0, "limit": 1000})
    assert body["records"] == expected and body["caught_up"]
    await reads.check(cold)


async def test_a_large_claim_of_single_record_jobs_loads_off_the_event_loop(unjoined: Cold) -> None:
    cold = unjoined
    await cold.put("q", {"type": "queue"})
    expected = await fill_singly(cold, "q", 300)
    reads = await Reads.start(cold)
    body = await cold.call("POST", "/v0/topics/q/claim", {"node": "w", "max": 200})
    assert [(j["$seq"], j["data"]) for j in body["claimed"]] == [
        (r["$seq"], r["data"]) for r in expected[:200]
    ]
    await reads.check(cold)


async def test_a_deep_work_stream_of_single_record_jobs_loads_off_the_event_loop(unjoined: Cold) -> None:
    cold = unjoined
    await cold.put("q", {"type": "queue"})
    expected = await fill_singly(cold, "q", 300)
    reads = await Reads.start(cold)
    stream = await SseStream.open(cold.port, "/v0/topics/q/work?node=w1&max=200")
    pushed: list[tuple[int, Any]] = []
    try:
        assert stream.status == 200, stream.body
        while len(pushed) < 200:
            frame = await stream.next(TIMEOUT)
            assert frame is not None, "the stream ended"
            if frame.event == "job":
                job = frame.json()
                pushed.append((job["$seq"], job["data"]))
    finally:
        stream.close()
    assert pushed == [(r["$seq"], r["data"]) for r in expected[:200]]
    await reads.check(cold)


async def test_a_watch_of_single_record_chunks_replays_off_the_event_loop(unjoined: Cold) -> None:
    cold = unjoined
    expected = await fill_singly(cold, "t", 300)
    reads = await Reads.start(cold)
    body = await cold.call("POST", "/v0/watch", {"topics": {"t": {"from_seq": 0}}, "limit": 1000})
    stream = await SseStream.open(cold.port, f"/v0/watch/{body['wid']}")
    try:
        assert stream.status == 200, stream.body
        first = await stream.next(TIMEOUT)
        assert first is not None and first.retry == 2000, first
        assert sse_records(await until_caught_up(stream, "t")) == expected
    finally:
        stream.close()
    await reads.check(cold)


# -- deletes --------------------------------------------------------------------------------------


async def test_a_tag_delete_over_cold_records_reads_them_off_the_event_loop(cold: Cold) -> None:
    """Cold chunks keep only a summary of their tags: ``DELETE`` by tag reads the chunks whose
    summaries may match (on reader threads), deletes exactly the matching live records, and a
    tag no chunk holds reads nothing."""
    expected = await cold.fill("t", 300)
    tagged = [orjson.loads(r) for r in expected]
    k1 = [r["$seq"] for r in tagged if r.get("$tag") == "k1"]
    reads = await Reads.start(cold)
    out = await cold.call("POST", "/v0/topics/t/delete", {"match": ["tag", "Eq", "k1"]})
    assert out["deleted"] == len(k1) > 10
    await reads.check(cold)
    before = (await cold.metrics())["topics_cold_reads_total"]
    out = await cold.call("POST", "/v0/topics/t/delete", {"match": ["tag", "Eq", "nobody"]})
    assert out["deleted"] == 0
    assert (await cold.metrics())["topics_cold_reads_total"] == before
    out = await cold.call("POST", "/v0/topics/t/delete", {"match": ["tag", "Glob", "k*"], "before_seq": 150})
    gone = set(k1) | {r["$seq"] for r in tagged if "$tag" in r and r["$seq"] < 150}
    assert out["deleted"] == len(gone - set(k1))
    got, _ = await page_through(cold, "t")
    assert got == [raw for raw, r in zip(expected, tagged, strict=True) if r["$seq"] not in gone]


async def test_a_websocket_with_two_subscriptions_replays_a_cold_backlog(cold: Cold) -> None:
    """Each subscription keeps what was loaded for it until its own read goes through: another
    subscription's reads (here: nothing to read on "a") must not release it (with no cache,
    that was a livelock)."""
    await cold.put("a")
    expected = await cold.fill("t", 100, tags=False)
    reads = await Reads.start(cold)
    async with connect(f"ws://127.0.0.1:{cold.port}/v0/ws", open_timeout=TIMEOUT) as conn:
        ws = Ws(conn)
        await ws.send({"op": "subscribe", "request_id": "a", "topic": "a", "from_seq": 0})
        await ws.send({"op": "subscribe", "request_id": "s", "topic": "t", "from_seq": 0})
        got: list[Json] = []
        while True:
            frame = await asyncio.wait_for(ws.recv(), TIMEOUT)
            if frame["op"] == "caught_up" and frame["topic"] == "t":
                break
            if frame["op"] == "record" and frame["topic"] == "t":
                got += frame["records"]
    assert got == [orjson.loads(r) for r in expected]
    await reads.check(cold)


async def test_a_coalesced_claim_pass_loads_cold_jobs_off_the_event_loop(cold: Cold) -> None:
    """A coalescing queue serves its cohort in a timer's pass: the pass loads the cohort's cold
    jobs first (a task), then serves every claim, reading nothing on the event loop."""
    await cold.put("q", {"type": "queue", "claim_jitter_ms": 50})
    expected = {orjson.loads(b)["$seq"]: orjson.loads(b)["data"] for b in await cold.fill("q", 120)}
    reads = await Reads.start(cold)
    claims = [
        asyncio.ensure_future(cold.call("POST", "/v0/topics/q/claim", {"node": f"w{i}", "max": 40}))
        for i in range(3)
    ]
    await asyncio.sleep(0.05)  # the three claims joined the cohort
    cold.clock.advance(50)  # its pass is due
    bodies = await asyncio.wait_for(asyncio.gather(*claims), TIMEOUT)
    jobs = sorted((job["$seq"], job["data"]) for body in bodies for job in body["claimed"])
    assert jobs == sorted(expected.items())  # 3 × 40: every job, once
    await reads.check(cold)


async def test_a_tag_delete_whose_topic_is_recreated_while_it_loads_answers_404(cold: Cold) -> None:
    """A tag delete reads cold chunks off the event loop; a topic deleted and recreated
    meanwhile is another topic: the delete answers 404 and the new topic keeps its records."""
    await cold.fill("t", 100)
    store = cold.datadir.cold
    release = asyncio.Event()
    started = asyncio.Event()
    load = store.load

    async def held_load(chunks: Any) -> Any:
        started.set()
        await release.wait()
        return await load(chunks)

    store.load = held_load  # type: ignore[method-assign]
    delete = asyncio.ensure_future(
        cold.request("POST", "/v0/topics/t/delete", {"match": ["tag", "Eq", "k1"]})
    )
    await asyncio.wait_for(started.wait(), TIMEOUT)
    await cold.call("DELETE", "/v0/topics/t")
    await cold.append("t", [{"data": "new", "tag": "k1"}])
    release.set()
    r = await asyncio.wait_for(delete, TIMEOUT)
    assert r.status_code == 404, r.text
    assert r.json()["error"]["code"] == "topic_not_found"
    page = await cold.call("POST", "/v0/topics/t/diff", {"from_seq": 0})
    assert [rec["data"] for rec in page["records"]] == ["new"]


async def test_a_cohort_pass_that_meets_a_corrupt_chunk_fails_its_claims(tmp_path: Path) -> None:
    """The pass of a coalescing queue reads its cold jobs at once from the page cache; a chunk
    whose bytes fail their CRC fails the cohort's claims — none is left waiting — and pins
    nothing."""
    async with cold_server(tmp_path / "data", page_cache=True) as cold:
        await cold.put("q", {"type": "queue", "claim_jitter_ms": 50})
        await cold.fill("q", 40)
        first = sorted((tmp_path / "data" / "segments").glob("*/*.seg"))[0]
        body = bytearray(first.read_bytes())
        body[-2] ^= 0xFF  # a record byte of its last chunk
        first.write_bytes(bytes(body))
        claims = [
            asyncio.ensure_future(cold.request("POST", "/v0/topics/q/claim", {"node": f"w{i}", "max": 40}))
            for i in range(2)
        ]
        await asyncio.sleep(0.05)
        cold.clock.advance(50)
        answers = await asyncio.wait_for(asyncio.gather(*claims), TIMEOUT)
        assert all(r.status_code >= 500 for r in answers), [r.text for r in answers]
        assert not cold.datadir.cold._pins


async def test_chunks_evicted_by_a_cap_leave_the_cache(tmp_path: Path) -> None:
    async with cold_server(tmp_path / "data", cache_bytes=1 << 20) as cold:
        await cold.put("t", {"cap_records": 100})
        await cold.fill("t", 100, tags=False)
        got, _ = await page_through(cold, "t")  # every cold chunk read back into the cache
        assert len(got) == 100
        cached = (await cold.metrics())["topics_cache_chunks"]
        assert cached > 0
        await cold.fill("t", 200, tags=False)  # the cap evicts the first 100 (and more)
        after = await cold.metrics()
        assert after["topics_cache_chunks"] == 0, after  # none of them can be read again
        assert after["topics_cache_evictions_total"] == 0  # given back, not pushed out by the LRU
