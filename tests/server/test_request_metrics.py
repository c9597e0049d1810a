"""The metrics of what the server did (docs/METRICS.md): requests by operation and status and their
durations, streams counted when they end, WebSocket commands, records appended, jobs claimed /
acked / nacked / dead-lettered, records pushed down streams, the throttle, the conventional twins
of the contract's names and the process collector — after real traffic over the native HTTP
transport (in process, engine on a :class:`ManualClock`), each counter moved by exactly the
requests made."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import ManualClock
from topics_server.accounting import DURATION_BUCKETS_S
from topics_server.context import VERSION, ServerContext
from topics_server.http import HttpServer
from websockets.asyncio.client import connect

from .native import native_server, until
from .sse_client import SseStream
from .test_metrics import Samples, parse_text, value

REQUESTS = "topics_http_requests_total"
DURATIONS = "topics_http_request_duration_seconds"
LIFETIMES = "topics_http_stream_duration_seconds"


@dataclass
class Srv:
    port: int
    ctx: ServerContext
    http: httpx.AsyncClient
    native: HttpServer

    async def scrape(self) -> Samples:
        r = await self.http.get("/v0/metrics")
        assert r.status_code == 200, r.text
        return parse_text(r.text)[1]


@asynccontextmanager
async def serving(clock: ManualClock, env: dict[str, str] | None = None) -> AsyncIterator[Srv]:
    async with native_server(clock, {"TOPICS_THROTTLE": "false", **(env or {})}) as (port, ctx, native, http):
        yield Srv(port, ctx, http, native)


@pytest.fixture
async def srv(clock: ManualClock) -> AsyncIterator[Srv]:
    async with serving(clock) as s:
        yield s


def requests(s: Samples) -> dict[tuple[str, str], float]:
    """``topics_http_requests_total`` as ``{(operation, status): count}``."""
    out = {}
    for (name, labels), v in s.items():
        if name == REQUESTS:
            by_name = dict(labels)
            out[(by_name["operation"], by_name["status"])] = v
    return out


def observed(s: Samples, family: str, operation: str) -> float:
    """A histogram's ``_count`` for ``operation`` (0 when it has no series yet)."""
    return s.get((f"{family}_count", (("operation", operation),)), 0)


async def test_requests_are_counted_by_operation_and_status(srv: Srv) -> None:
    http = srv.http
    assert (await http.post("/v0/topics/t", json={"records": [{"data": 1}]})).status_code == 201
    for _ in range(2):
        assert (await http.post("/v0/topics/t", json={"records": [{"data": 2}]})).status_code == 200
    assert (await http.post("/v0/topics/t/diff", json={"from_seq": 0})).status_code == 200
    for _ in range(3):
        assert (await http.get("/v0/topics/missing")).status_code == 404
    assert (await http.get("/v0/nowhere")).status_code == 404
    assert (await http.delete("/v0/health")).status_code == 405
    assert (await http.get("/v0/openapi.json")).status_code == 200
    r = await http.post("/v0/topics/t", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 400

    first = await srv.scrape()
    assert requests(first) == {
        ("append_records", "201"): 1,
        ("append_records", "200"): 2,
        ("append_records", "400"): 1,
        ("diff_topic", "200"): 1,
        ("get_topic", "404"): 3,
        ("unmatched", "404"): 1,
        ("unmatched", "405"): 1,
        ("api_docs", "200"): 1,
    }  # the scrape itself counts once it is answered: in the next scrape
    for operation, n in [("append_records", 4), ("diff_topic", 1), ("get_topic", 3), ("unmatched", 2)]:
        assert observed(first, DURATIONS, operation) == n, operation
        labels = (("operation", operation),)
        assert first[(f"{DURATIONS}_sum", labels)] > 0
        buckets = [first[(f"{DURATIONS}_bucket", (("le", le), *labels))] for le in LE]
        assert buckets == sorted(buckets) and buckets[-1] == n  # cumulative, +Inf = count
    assert observed(first, DURATIONS, "metrics") == 0

    second = await srv.scrape()
    assert requests(second)[("metrics", "200")] == 1
    assert observed(second, DURATIONS, "metrics") == 1
    assert {k: v for k, v in requests(second).items() if k[0] != "metrics"} == requests(first)


LE = [*map(repr, DURATION_BUCKETS_S), "+Inf"]


async def test_refusals_count_under_their_operation(clock: ManualClock) -> None:
    async with serving(clock, {"TOPICS_API_KEYS": "ops-key::,reader:read"}) as srv:
        ops = {"Authorization": "Bearer ops-key"}
        reader = {"Authorization": "Bearer reader"}
        assert (await srv.http.post("/v0/topics/t", json={"records": [{"data": 1}]})).status_code == 401
        r = await srv.http.post("/v0/topics/t", json={"records": [{"data": 1}]}, headers=reader)
        assert r.status_code == 403
        r = await srv.http.post("/v0/topics/t", json={"records": [{"data": 1}]}, headers=ops)
        assert r.status_code == 201
        s = (await srv.http.get("/v0/metrics", headers=ops)).text
    counted = requests(parse_text(s)[1])
    assert counted == {
        ("append_records", "401"): 1,
        ("append_records", "403"): 1,
        ("append_records", "201"): 1,
    }


async def test_records_appended_and_jobs(srv: Srv, clock: ManualClock) -> None:
    http = srv.http
    r = await http.put("/v0/topics/jobs", json={"type": "queue", "max_deliveries": 1, "dead_letter": "dead"})
    assert r.status_code == 201, r.text
    body = {"records": [{"data": i} for i in range(6)], "idempotency_key": "k1"}
    assert (await http.post("/v0/topics/jobs", json=body)).status_code == 200
    assert (await http.post("/v0/topics/jobs", json=body)).json()["deduped"] is True  # not counted again
    r = await http.post("/v0/topics/log", json={"records": [{"data": 1}, {"data": 2}]})
    assert r.status_code == 201
    r = await http.post("/v0/topics/jobs/claim", json={"node": "w", "max": 5, "lease_ms": 1000})
    claimed = r.json()
    seqs = [job["$seq"] for job in claimed["claimed"]]
    assert len(seqs) == 5
    assert (await http.post("/v0/topics/jobs/ack", json={"node": "w", "seqs": seqs[:2]})).json()["acked"] == 2
    r = await http.post("/v0/topics/jobs/nack", json={"node": "w", "seqs": seqs[2:4]})
    assert r.json()["nacked"] == 2
    r = await http.post("/v0/topics/jobs/dead_letter", json={"node": "w", "seqs": seqs[4:]})
    assert r.json()["moved"] == seqs[4:]
    # the two nacked jobs would be delivered a second time: past max_deliveries 1 they are
    # dead-lettered instead; the one never claimed is claimed
    again = (await http.post("/v0/topics/jobs/claim", json={"node": "w", "max": 5})).json()
    assert [job["$seq"] for job in again["claimed"]] == [6]

    s = await srv.scrape()
    assert value(s, "topics_records_appended_total") == 6 + 2 + 1 + 2  # + 3 dead-letter moves
    assert value(s, "topics_jobs_claimed_total") == 5 + 1
    assert value(s, "topics_jobs_acked_total") == 2
    assert value(s, "topics_jobs_nacked_total") == 2
    assert value(s, "topics_jobs_dead_lettered_total") == 1 + 2
    assert value(s, "topics_topic_records_live", topic="dead") == 3


async def test_streams_count_when_they_end_and_what_they_pushed(srv: Srv) -> None:
    http = srv.http
    assert (await http.put("/v0/topics/w", json={})).status_code == 201
    wid = (await http.post("/v0/watch", json={"topics": {"w": {"from_seq": 0}}})).json()["wid"]
    stream = await SseStream.open(srv.port, f"/v0/watch/{wid}")
    assert stream.status == 200
    r = await http.post("/v0/topics/w", json={"records": [{"data": i} for i in range(3)]})
    assert r.status_code == 200
    seen = 0
    while seen < 3:
        frame = await stream.next()
        assert frame is not None
        if frame.event == "record":
            seen += len(frame.json()["records"])
    middle = await srv.scrape()
    assert ("watch_stream", "200") not in requests(middle)  # open: not counted yet
    assert value(middle, "topics_sse_connections") == 1
    stream.close()
    await until(lambda: srv.ctx.admission.sse_connections == 0)

    async with connect(f"ws://127.0.0.1:{srv.port}/v0/ws") as ws:
        commands: list[dict[str, Any]] = [
            {"op": "subscribe", "request_id": "s", "topic": "w", "from_seq": 0},
            {"op": "publish", "request_id": "p", "topic": "w", "records": [{"data": "ws"}]},
            {"op": "publish", "request_id": "x", "topic": "w", "records": []},
            {"op": "dance"},
            {"op": "ping"},
        ]
        for command in commands:
            await ws.send(orjson.dumps(command).decode())
        records = answers = 0
        while records < 4 or answers < len(commands):
            frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
            if frame["op"] == "record":
                records += len(frame["records"])
            answers += frame["op"] in ("subscribed", "ack", "error", "pong")
    await until(lambda: srv.ctx.admission.sse_connections == 0)

    s = await srv.scrape()
    counted = requests(s)
    assert counted[("watch_stream", "200")] == 1
    assert counted[("open_websocket", "101")] == 1
    assert observed(s, LIFETIMES, "watch_stream") == 1 and observed(s, LIFETIMES, "open_websocket") == 1
    assert observed(s, DURATIONS, "watch_stream") == 0  # a stream is not a request-duration sample
    assert value(s, "topics_records_pushed_total", stream="watch") == 3
    assert value(s, "topics_records_pushed_total", stream="websocket") == 4
    assert value(s, "topics_websocket_commands_total", command="subscribe", status="200") == 1
    assert value(s, "topics_websocket_commands_total", command="publish", status="200") == 1
    assert value(s, "topics_websocket_commands_total", command="publish", status="400") == 1
    assert value(s, "topics_websocket_commands_total", command="unknown", status="400") == 1
    assert value(s, "topics_websocket_commands_total", command="ping", status="200") == 1


async def test_work_stream_pushes_jobs(srv: Srv) -> None:
    http = srv.http
    assert (await http.put("/v0/topics/q", json={"type": "queue"})).status_code == 201
    r = await http.post("/v0/topics/q", json={"records": [{"data": i} for i in range(4)]})
    assert r.status_code == 200
    stream = await SseStream.open(srv.port, "/v0/topics/q/work?node=w&max=10")
    assert stream.status == 200
    jobs = 0
    while jobs < 4:
        frame = await stream.next()
        assert frame is not None
        jobs += frame.event == "job"
    stream.close()
    await until(lambda: srv.ctx.admission.sse_connections == 0)
    s = await srv.scrape()
    assert value(s, "topics_records_pushed_total", stream="work") == 4
    assert value(s, "topics_jobs_claimed_total") == 4
    assert requests(s)[("work_stream", "200")] == 1


async def test_a_client_gone_before_the_answer_counts_as_499(srv: Srv) -> None:
    assert (await srv.http.put("/v0/topics/t", json={})).status_code == 201
    body = b'{"from_seq": 0, "wait_ms": 30000}'
    with socket.create_connection(("127.0.0.1", srv.port)) as sock:
        sock.sendall(
            b"POST /v0/topics/t/diff HTTP/1.1\r\nHost: t\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await until(lambda: any(conn.busy for conn in srv.native.connections))
    await until(lambda: srv.ctx.requests.operations["diff_topic"].statuses.get(499) == 1)
    assert requests(await srv.scrape())[("diff_topic", "499")] == 1


async def test_throttle_gauges(srv: Srv) -> None:
    throttle = srv.ctx.throttle
    s = await srv.scrape()
    assert value(s, "topics_throttle_active") == 0 and value(s, "topics_throttle_cutoff") == 0
    throttle.cutoff, throttle.pressure = 51, 1.25
    throttle.refusal()
    s = await srv.scrape()
    assert value(s, "topics_throttle_active") == 1 and value(s, "topics_throttle_cutoff") == 51
    assert value(s, "topics_throttle_pressure") == 1.25
    assert value(s, "topics_throttle_refused_total") == 1


async def test_conventional_twins_and_process_families(srv: Srv, clock: ManualClock) -> None:
    assert (await srv.http.put("/v0/topics/q", json={"type": "queue"})).status_code == 201
    assert (await srv.http.post("/v0/topics/q", json={"records": [{"data": 1}]})).status_code == 200
    clock.advance(2500)
    s = await srv.scrape()
    assert value(s, "topics_topic_queue_oldest_ready_age_ms", topic="q") == 2500
    assert value(s, "topics_topic_queue_oldest_ready_age_seconds", topic="q") == 2.5
    assert value(s, "process_cpu_seconds_total") > 0
    assert value(s, "process_resident_memory_bytes") > 1 << 20
    assert value(s, "process_open_fds") >= 3  # at least the listening socket and this connection
    assert value(s, "process_max_fds") >= value(s, "process_open_fds")
    assert time.time() - 3600 < value(s, "process_start_time_seconds") <= time.time()
    assert value(s, "topics_build_info", version=VERSION) == 1
