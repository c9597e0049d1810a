"""Schedules over HTTP (an extension, issue 24): PUT / GET / list / DELETE /v0/schedules, their
runs on the server's clock (a manual one: the test moves it), the cascade of a topic delete,
the cap, and the errors in the contract's envelope."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from topics_engine import Engine, ManualClock
from topics_server.asgi import create_app
from topics_server.context import ServerContext
from topics_server.settings import load_settings

from .conftest import assert_error

Open = Callable[..., Any]


@pytest.fixture
def open_server(clock: ManualClock) -> Open:
    """A started server (its schedules' pump runs on ``clock``) and a client of it."""

    @asynccontextmanager
    async def open_(
        env: dict[str, str] | None = None,
    ) -> AsyncIterator[tuple[httpx.AsyncClient, ServerContext]]:
        settings = load_settings(env or {})
        app, ctx = create_app(settings, Engine(clock, settings.limits))
        await ctx.start()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://topics.test") as client:
            yield client, ctx
        await ctx.stop()

    return open_


@pytest.fixture
async def client(open_server: Open) -> AsyncIterator[httpx.AsyncClient]:
    async with open_server() as (c, _):
        yield c


async def datas(client: httpx.AsyncClient, topic: str) -> list[Any]:
    r = await client.post(f"/v0/topics/{topic}/diff", json={})
    assert r.status_code == 200, r.text
    return [rec["data"] for rec in r.json()["records"]]


BEAT = {"topic": "health", "every_ms": 1000, "records": [{"data": "ping", "tag": "hb"}]}


async def test_put_get_and_runs(client: httpx.AsyncClient, clock: ManualClock) -> None:
    t0 = clock.now_ms()
    r = await client.put("/v0/schedules/beat", json=BEAT)
    assert r.status_code == 201, r.text
    body = r.json()
    assert list(body) == [
        "schedule",
        "created",
        "topic",
        "every_ms",
        "records",
        "missed",
        "next_run_ms",
        "last_run_ms",
        "runs_total",
        "last_error",
        "performance",
    ]
    assert body["created"] is True and body["next_run_ms"] == t0 + 1000 and body["last_run_ms"] is None
    assert (await client.get("/v0/topics/health")).status_code == 200  # created by the PUT
    again = await client.put("/v0/schedules/beat", json=BEAT)
    assert again.status_code == 200 and again.json()["created"] is False
    clock.advance(3000)
    assert await datas(client, "health") == ["ping", "ping", "ping"]
    got = (await client.get("/v0/schedules/beat")).json()
    assert {k: got[k] for k in ("last_run_ms", "next_run_ms", "runs_total", "last_error", "missed")} == {
        "last_run_ms": t0 + 3000,
        "next_run_ms": t0 + 4000,
        "runs_total": 3,
        "last_error": None,
        "missed": "skip",
    }
    metrics = (await client.get("/v0/metrics", headers={"accept": "application/json"})).json()["metrics"]
    assert metrics["topics_schedules"]["samples"][0]["value"] == 1
    assert metrics["topics_schedule_runs_total"]["samples"][0]["value"] == 3


async def test_records_are_kept_and_appended_verbatim(client: httpx.AsyncClient, clock: ManualClock) -> None:
    data = b'{"n": 1.50, "big": 123456789012345678901234567890, "s": "\\u00e9"}'
    body = (
        b'{"topic": "t", "cron": "* * * * *", "node": "n1", "records": [{"data": %s, "meta": {"k": [1 ]}}]}'
        % data
    )
    r = await client.put("/v0/schedules/v", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 201, r.text
    assert b'"records":[{"data":' + data + b',"meta":{"k":[1 ]}}]' in r.content
    assert r.json()["node"] == "n1" and r.json()["cron"] == "* * * * *"
    clock.advance(60_000)
    diff = await client.post("/v0/topics/t/diff", json={})
    assert b'"$node":"n1","data":' + data + b',"meta":{"k":[1 ]}}' in diff.content


async def test_list_and_delete(client: httpx.AsyncClient) -> None:
    for name, topic in [("b", "x"), ("a", "y"), ("c", "x")]:
        r = await client.put(f"/v0/schedules/{name}", json={**BEAT, "topic": topic})
        assert r.status_code == 201
    r = await client.get("/v0/schedules", params={"page_size": 2})
    page = r.json()
    assert [s["schedule"] for s in page["schedules"]] == ["a", "b"] and "next_cursor" in page
    assert set(page["schedules"][0]) == {
        "schedule",
        "topic",
        "every_ms",
        "missed",
        "next_run_ms",
        "last_run_ms",
        "runs_total",
    }
    rest = (await client.get("/v0/schedules", params={"cursor": page["next_cursor"]})).json()
    assert [s["schedule"] for s in rest["schedules"]] == ["c"] and "next_cursor" not in rest
    by_topic = (await client.get("/v0/schedules", params={"topic": "x"})).json()
    assert [s["schedule"] for s in by_topic["schedules"]] == ["b", "c"]
    r = await client.delete("/v0/schedules/b")
    assert r.status_code == 200 and r.json()["deleted"] is True
    r = await client.delete("/v0/schedules/b")
    assert r.status_code == 200 and r.json() | {"performance": None} == {
        "schedule": "b",
        "deleted": False,
        "performance": None,
    }
    error = assert_error(await client.get("/v0/schedules/b"), 404, "schedule_not_found")
    assert error["detail"] == {"schedule": "b"}


async def test_a_topic_delete_removes_its_schedules(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await client.put("/v0/schedules/s", json=BEAT)
    r = await client.delete("/v0/topics/health")
    assert r.status_code == 200
    assert r.json()["schedules_removed"] == ["s"] and r.json()["routers_removed"] == []
    assert_error(await client.get("/v0/schedules/s"), 404, "schedule_not_found")
    clock.advance(5000)
    assert_error(await client.get("/v0/topics/health"), 404, "topic_not_found")


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"topic": "t", "records": [{"data": 1}]}, "every_ms", "Give the timing"),
        ({**BEAT, "cron": "* * * * *"}, "every_ms", "exclude each other"),
        ({**BEAT, "every_ms": 99}, "every_ms", "at least 100"),
        ({**BEAT, "every_ms": None, "cron": "*/0 * * * *"}, "cron", "step '0'"),
        ({"topic": "t", "cron": "0 25 * * *", "records": [{"data": 1}]}, "cron", "hour field '25'"),
        ({"topic": "t", "cron": "0 0 * * * *", "records": [{"data": 1}]}, "cron", "has 6 fields"),
        ({**BEAT, "missed": "all"}, "missed", ""),
        ({**BEAT, "records": []}, "records", ""),
        ({**BEAT, "records": [{"data": 1, "delay": 5}]}, "records[0].delay", "not a known field"),
        ({**BEAT, "interval": 5}, "interval", "not a known field"),
        ({**BEAT, "topic": "no spaces"}, "topic", ""),
    ],
)
async def test_bad_bodies_are_400_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], field: str, words: str
) -> None:
    body = {k: v for k, v in body.items() if v is not None}
    error = assert_error(await client.put("/v0/schedules/s", json=body), 400, "invalid_request")
    assert error["detail"]["field"] == field, error
    assert words in error["message"]
    assert_error(await client.get("/v0/schedules/s"), 404, "schedule_not_found")


async def test_records_get_the_errors_of_a_write(open_server: Open) -> None:
    env = {"TOPICS_MAX_BATCH_RECORDS": "2", "TOPICS_MAX_RECORD_BYTES": "16", "TOPICS_MAX_META_BYTES": "8"}
    async with open_server(env) as (client, _):
        cases = [
            ([{"data": 1}, {"data": 2}, {"data": 3}], 400, "batch_too_large"),
            ([{"data": "x" * 20}], 400, "record_too_large"),
        ]
        for records, status, code in cases:
            schedule = assert_error(
                await client.put("/v0/schedules/s", json={**BEAT, "records": records}), status, code
            )
            write = assert_error(await client.post("/v0/topics/w", json={"records": records}), status, code)
            assert schedule["detail"] == write["detail"]


async def test_the_schedule_cap(open_server: Open) -> None:
    async with open_server({"TOPICS_MAX_SCHEDULES": "1"}) as (client, _):
        assert (await client.put("/v0/schedules/a", json=BEAT)).status_code == 201
        r = await client.put("/v0/schedules/b", json=BEAT)
        error = assert_error(r, 429, "throttled")
        assert error["detail"] == {"limit": "max_schedules", "max": 1}
        assert r.headers["retry-after"] == "1"
        assert (await client.put("/v0/schedules/a", json={**BEAT, "every_ms": 2000})).status_code == 200


async def test_a_failed_run_shows_in_the_schedule(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await client.put("/v0/topics/full", json={"cap_records": 1, "discard": "reject"})
    await client.post("/v0/topics/full", json={"records": [{"data": 0}]})
    await client.put("/v0/schedules/s", json={**BEAT, "topic": "full"})
    clock.advance(1000)
    got = (await client.get("/v0/schedules/s")).json()
    assert got["runs_total"] == 0 and got["last_error"]["code"] == "topic_full"
    assert got["last_error"]["at_ms"] == clock.now_ms()
    assert got["next_run_ms"] <= clock.now_ms()  # overdue: it is being retried
    metrics = (await client.get("/v0/metrics", headers={"accept": "application/json"})).json()["metrics"]
    assert metrics["topics_schedule_failures_total"]["samples"][0]["value"] == 1


async def test_delayed_records_need_a_queue_and_any_delay_is_clamped(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    """A schedule's records may be delayed jobs: with any ``delay_ms`` the schema allows (a
    float with an integral value, an integer far beyond 24 h: clamped, never a 500), into a
    queue; on a log topic the PUT is ``409 not_a_queue``."""
    records = [{"data": 1, "delay_ms": 2**80}, {"data": 2, "delay_ms": 1500.0}]
    body = {"every_ms": 1000, "records": records}
    r = await client.put("/v0/schedules/d", json={"topic": "plain-log", **body})
    assert_error(r, 409, "not_a_queue")
    assert (await client.get("/v0/topics/plain-log")).status_code == 404  # nothing created
    assert (await client.put("/v0/topics/q", json={"type": "queue"})).status_code == 201
    r = await client.put("/v0/schedules/d", json={"topic": "q", **body})
    assert r.status_code == 201, r.text
    clock.advance(1000)
    got = (await client.post("/v0/topics/q/diff", json={})).json()["records"]
    assert [rec["$delay_ms"] for rec in got] == [86_400_000, 1500]
