"""§6 routers over HTTP: PUT / GET / list / DELETE /v0/routers, the cascade of a topic delete,
and asynchronous forwarding (the pump runs on the event loop, off the append's ack path)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import httpx
from topics_engine import Engine, ManualClock
from topics_server.asgi import create_app
from topics_server.settings import load_settings

from .conftest import assert_error

ECHO = [
    "router",
    "created",
    "source",
    "dest",
    "preserve_node",
    "preserve_tag",
    "filter",
    "allow_cycle",
    "guarantee",
]


async def put(client: httpx.AsyncClient, name: str, **body: Any) -> httpx.Response:
    return await client.put(f"/v0/routers/{name}", json=body)


async def read(client: httpx.AsyncClient, topic: str, from_seq: int = 0) -> dict[str, Any]:
    r = await client.post(f"/v0/topics/{topic}/diff", json={"from_seq": from_seq, "include_tags": True})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def wait_records(client: httpx.AsyncClient, topic: str, n: int) -> list[dict[str, Any]]:
    """Poll ``topic`` until it holds ``n`` records, yielding to the loop (the pump) in between."""
    records: list[dict[str, Any]] = []
    for _ in range(50):
        records = (await read(client, topic))["records"]
        if len(records) >= n:
            assert len(records) == n, records
            return records
        await asyncio.sleep(0)
    raise AssertionError(f"{topic} holds {len(records)} records, expected {n}")


async def settle_loop(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


# -- PUT ---------------------------------------------------------------------------------------


async def test_put_201_then_200_identical_then_200_changed(client: httpx.AsyncClient) -> None:
    r = await put(client, "orders->audit", source="orders", dest="audit")
    assert r.status_code == 201
    body = r.json()
    assert list(body)[: len(ECHO)] == ECHO
    assert set(body) == {*ECHO, "performance"}  # no create_dest in the echo
    assert {k: body[k] for k in ECHO} == {
        "router": "orders->audit",
        "created": True,
        "source": "orders",
        "dest": "audit",
        "preserve_node": True,
        "preserve_tag": True,
        "filter": None,
        "allow_cycle": False,
        "guarantee": "at_least_once",
    }
    assert "server_total_ms" in body["performance"]

    r = await put(client, "orders->audit", source="orders", dest="audit", create_dest=False)
    assert r.status_code == 200 and r.json()["created"] is False
    assert "create_dest" not in r.json()

    r = await put(
        client,
        "orders->audit",
        source="orders",
        dest="audit",
        preserve_node=False,
        preserve_tag=False,
        filter=["tag", "Glob", "public:*"],
        guarantee="exactly_once",
    )
    assert r.status_code == 200
    changed = r.json()
    assert changed["created"] is False
    assert (changed["preserve_node"], changed["preserve_tag"]) == (False, False)
    assert changed["filter"] == ["tag", "Glob", "public:*"]
    assert changed["guarantee"] == "exactly_once"
    assert set(changed) == {*ECHO, "performance"}


async def test_put_auto_creates_source_and_dest(client: httpx.AsyncClient) -> None:
    assert (await client.get("/v0/topics/src")).status_code == 404
    assert (await put(client, "r", source="src", dest="dst")).status_code == 201
    for name in ("src", "dst"):
        r = await client.get(f"/v0/topics/{name}", params={"touch": "false"})
        assert r.status_code == 200 and r.json()["count"] == 0


async def test_create_dest_false_is_404_when_dest_is_missing(client: httpx.AsyncClient) -> None:
    error = assert_error(
        await put(client, "r", source="s", dest="d", create_dest=False), 404, "topic_not_found"
    )
    assert error["detail"] == {"topic": "d"}
    assert_error(await client.get("/v0/routers/r"), 404, "router_not_found")
    await client.put("/v0/topics/d", json={})
    assert (await put(client, "r", source="s", dest="d", create_dest=False)).status_code == 201


async def test_put_validation_errors(client: httpx.AsyncClient) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"dest": "b"}, "source"),  # a missing field is named itself
        ({"source": "a"}, "dest"),
        ({"source": "a", "dest": "a"}, "dest"),
        ({"source": "a", "dest": "b", "filter": ["tag", "Glob", "no-star"]}, "filter"),
        ({"source": "a", "dest": "b", "filter": ["tag", "Like", "x*"]}, "filter"),
        ({"source": "a", "dest": "b", "bogus": 1}, "bogus"),
    ]
    for body, field in cases:
        error = assert_error(await client.put("/v0/routers/r", json=body), 400, "invalid_request")
        assert error["detail"]["field"].split("[")[0] == field, (body, error)  # schema errors: "filter[1]"
    error = assert_error(await put(client, "r", source="a", dest="a"), 400, "invalid_request")
    assert "differ" in error["message"]
    bad_types: list[dict[str, Any]] = [
        {"source": "a", "dest": "b", "guarantee": "sometimes"},
        {"source": "a", "dest": "b", "preserve_node": "yes"},
        {"source": "-a", "dest": "b"},
        {"source": "a", "dest": 7},
    ]
    for body in bad_types:
        assert_error(await client.put("/v0/routers/r", json=body), 400, "invalid_request")
    assert_error(await client.put("/v0/routers/r"), 400, "invalid_request")  # no body
    # nothing was created by any of the rejected PUTs
    assert (await client.get("/v0/routers")).json()["routers"] == []
    assert (await client.get("/v0/topics")).json()["topics"] == []


async def test_bad_router_names_are_400(client: httpx.AsyncClient) -> None:
    for path in ["a%20b", "%3Eab", "-ab", "a%2Fb", "x" * 256]:
        error = assert_error(
            await client.put(f"/v0/routers/{path}", json={"source": "a", "dest": "b"}), 400, "invalid_request"
        )
        assert error["detail"]["field"] == "router"
        assert_error(await client.get(f"/v0/routers/{path}"), 400, "invalid_request")
        assert_error(await client.delete(f"/v0/routers/{path}"), 400, "invalid_request")
    assert (await put(client, "x" * 255, source="a", dest="b")).status_code == 201


# -- names with ">" ------------------------------------------------------------------------------


def raw_gt(app: Callable[..., Any]) -> Callable[..., Any]:
    """ASGI wrapper: the request path arrives with a raw ``>`` (httpx always percent-encodes it,
    a client like curl does not)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("raw_path"):
            raw = scope["raw_path"].replace(b"%3E", b">").replace(b"%3e", b">")
            scope = {**scope, "raw_path": raw, "path": unquote(raw.decode("latin-1"))}
        await app(scope, receive, send)

    return wrapped


async def test_router_name_with_gt_percent_encoded_and_raw(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    r = await client.put("/v0/routers/a-%3Eb", json={"source": "a", "dest": "b"})
    assert r.status_code == 201 and r.json()["router"] == "a->b"
    r = await client.get("/v0/routers/a-%3eb")  # lower-case escape: the same name
    assert r.status_code == 200 and r.json()["router"] == "a->b"

    engine = Engine(clock, load_settings({}).limits)
    app, _ = create_app(load_settings({}), engine)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=raw_gt(app)), base_url="http://topics.test"
    ) as raw:
        r = await raw.put("/v0/routers/orders-%3Eaudit", json={"source": "orders", "dest": "audit"})
        assert r.status_code == 201 and r.json()["router"] == "orders->audit"
        r = await raw.get("/v0/routers/orders-%3Eaudit")
        assert r.status_code == 200 and r.json()["router"] == "orders->audit"
        r = await raw.delete("/v0/routers/orders-%3Eaudit")
        assert r.json() == {**r.json(), "router": "orders->audit", "deleted": True}
    # the wrapper really delivered a raw ">" (the engine saw the name under it)
    assert engine.topic("orders") is not None and engine.topic("audit") is not None


# -- GET ---------------------------------------------------------------------------------------


async def test_get_reports_progress(client: httpx.AsyncClient) -> None:
    await client.post("/v0/topics/s", json={"records": [{"data": 0}]})  # before the router
    await put(client, "s->d", source="s", dest="d")
    r = await client.get("/v0/routers/s->d")
    assert r.status_code == 200
    body = r.json()
    assert {k: body[k] for k in ECHO if k != "created"} == {
        "router": "s->d",
        "source": "s",
        "dest": "d",
        "preserve_node": True,
        "preserve_tag": True,
        "filter": None,
        "allow_cycle": False,
        "guarantee": "at_least_once",
    }
    assert "created" not in body
    assert (body["forwarded_total"], body["cursor"], body["lag"]) == (0, 1, 0)
    await client.post("/v0/topics/s", json={"records": [{"data": 1}, {"data": 2}]})
    await wait_records(client, "d", 2)
    body = (await client.get("/v0/routers/s->d")).json()
    assert (body["forwarded_total"], body["cursor"], body["lag"]) == (2, 3, 0)


async def test_get_missing_router_is_404(client: httpx.AsyncClient) -> None:
    error = assert_error(await client.get("/v0/routers/nope"), 404, "router_not_found")
    assert error["detail"] == {"router": "nope"}


# -- forwarding over HTTP ------------------------------------------------------------------------


async def test_append_is_forwarded_asynchronously(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await put(client, "s->d", source="s", dest="d")
    r = await client.post(
        "/v0/topics/s",
        json={
            "node": "n1",
            "records": [{"data": {"k": 1}, "tag": "t:1", "meta": {"trace": "x"}}, {"data": 2}],
        },
    )
    assert r.status_code == 200 and r.json()["last_seq"] == 2
    copies = await wait_records(client, "d", 2)
    assert copies == [
        {
            "$seq": 1,
            "$ts": clock.now_ms(),
            "$node": "n1",
            "$tag": "t:1",
            "data": {"k": 1},
            "meta": {"trace": "x"},
        },
        {"$seq": 2, "$ts": clock.now_ms(), "$node": "n1", "data": 2},
    ]


async def test_filter_and_preserve_flags_over_http(client: httpx.AsyncClient) -> None:
    await put(client, "s->d", source="s", dest="d", filter=["tag", "Eq", "keep"], preserve_node=False)
    await client.post(
        "/v0/topics/s",
        json={"node": "n1", "records": [{"data": 1, "tag": "keep"}, {"data": 2, "tag": "drop"}, {"data": 3}]},
    )
    (copy,) = await wait_records(client, "d", 1)
    assert copy["data"] == 1 and copy["$tag"] == "keep" and "$node" not in copy
    await settle_loop()
    body = (await client.get("/v0/routers/s->d")).json()
    assert (body["cursor"], body["lag"], body["forwarded_total"]) == (3, 0, 1)


async def test_exactly_once_stamp_is_visible_over_http(client: httpx.AsyncClient) -> None:
    await put(client, "s->d", source="s", dest="d", guarantee="exactly_once")
    await client.post("/v0/topics/s", json={"records": [{"data": 1, "meta": {"m": 1}}]})
    (copy,) = await wait_records(client, "d", 1)
    assert copy["meta"] == {"m": 1, "_topics_router": {"router": "s->d", "source": "s", "seq": 1, "hops": 1}}


async def test_cycle_with_allow_cycle_stops_after_eight_hops(client: httpx.AsyncClient) -> None:
    await put(client, "a->b", source="a", dest="b")
    assert (await put(client, "b->a", source="b", dest="a", allow_cycle=True)).status_code == 201
    await client.post("/v0/topics/a", json={"records": [{"data": "ping"}]})
    b = await wait_records(client, "b", 4)
    a = await wait_records(client, "a", 5)
    await settle_loop()
    assert len((await read(client, "a"))["records"]) == 5  # and no more
    assert [r["meta"]["_topics_router"]["hops"] for r in b] == [1, 3, 5, 7]
    assert [r["meta"]["_topics_router"]["hops"] for r in a[1:]] == [2, 4, 6, 8]


async def test_delete_router_stops_forwarding(client: httpx.AsyncClient) -> None:
    await put(client, "s->d", source="s", dest="d")
    await client.post("/v0/topics/s", json={"records": [{"data": 1}]})
    await wait_records(client, "d", 1)
    r = await client.delete("/v0/routers/s->d")
    assert r.status_code == 200
    assert r.json() == {**r.json(), "router": "s->d", "deleted": True}
    assert set(r.json()) == {"router", "deleted", "performance"}
    await client.post("/v0/topics/s", json={"records": [{"data": 2}]})
    await settle_loop()
    assert [rec["data"] for rec in (await read(client, "d"))["records"]] == [1]  # copies stay, no more
    r = await client.delete("/v0/routers/s->d")
    assert r.status_code == 200 and r.json()["deleted"] is False and r.json()["router"] == "s->d"
    assert_error(await client.get("/v0/routers/s->d"), 404, "router_not_found")


# -- conflicts ---------------------------------------------------------------------------------


async def test_cycles_are_409_router_cycle(client: httpx.AsyncClient) -> None:
    await put(client, "a->b", source="a", dest="b")
    error = assert_error(await put(client, "b->a", source="b", dest="a"), 409, "router_cycle")
    assert error["detail"] == {"cycle": ["b", "a", "b"]}
    await put(client, "b->c", source="b", dest="c")
    error = assert_error(await put(client, "c->a", source="c", dest="a"), 409, "router_cycle")
    assert error["detail"] == {"cycle": ["c", "a", "b", "c"]}
    assert_error(await client.get("/v0/routers/c->a"), 404, "router_not_found")


async def test_fan_in_is_409_topic_exists_incompatible(client: httpx.AsyncClient) -> None:
    await put(client, "a->c", source="a", dest="c")
    error = assert_error(await put(client, "b->c", source="b", dest="c"), 409, "topic_exists_incompatible")
    assert error["detail"] == {"reason": "router_dest_fan_in", "dest": "c", "router": "a->c"}
    assert (await put(client, "a->c.2", source="a", dest="c")).status_code == 201  # same source: fine


# -- list --------------------------------------------------------------------------------------


async def test_list_filters_pages_and_omits_next_cursor_at_the_end(client: httpx.AsyncClient) -> None:
    await put(client, "o->audit", source="orders", dest="audit")
    await put(client, "o->mirror", source="orders", dest="mirror", guarantee="exactly_once")
    await put(client, "p->audit2", source="payments", dest="audit2")
    await put(client, "z", source="zs", dest="zd")

    async def names(**params: Any) -> tuple[list[str], dict[str, Any]]:
        r = await client.get("/v0/routers", params=params)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return [x["router"] for x in body["routers"]], body

    everything, body = await names()
    assert everything == ["o->audit", "o->mirror", "p->audit2", "z"]
    assert "next_cursor" not in body
    assert body["routers"][1] == {
        "router": "o->mirror",
        "source": "orders",
        "dest": "mirror",
        "guarantee": "exactly_once",
        "forwarded_total": 0,
    }
    assert (await names(prefix="o->"))[0] == ["o->audit", "o->mirror"]
    assert (await names(source="payments"))[0] == ["p->audit2"]
    assert (await names(dest="mirror"))[0] == ["o->mirror"]
    assert (await names(source="orders", dest="audit2"))[0] == []

    first, body = await names(page_size=3)
    assert first == ["o->audit", "o->mirror", "p->audit2"]
    second, last = await names(page_size=3, cursor=body["next_cursor"])
    assert second == ["z"] and "next_cursor" not in last
    filtered, body = await names(source="orders", page_size=1)
    assert filtered == ["o->audit"]
    rest, body = await names(source="orders", page_size=1, cursor=body["next_cursor"])
    assert rest == ["o->mirror"] and "next_cursor" not in body
    assert len((await names(page_size=5000))[0]) == 4  # clamped, not an error


async def test_list_cursor_not_issued_starts_after_it_and_empty_is_400(client: httpx.AsyncClient) -> None:
    await put(client, "m", source="a", dest="x")
    for cursor, names in (("%%%not-base64", ["m"]), ("bm90IGpzb24=", ["m"]), ("m", []), ("a", ["m"])):
        r = await client.get("/v0/routers", params={"cursor": cursor})
        assert r.status_code == 200 and [x["router"] for x in r.json()["routers"]] == names, r.text
    error = assert_error(await client.get("/v0/routers", params={"cursor": ""}), 400, "invalid_request")
    assert error["detail"]["field"] == "cursor"


# -- topic delete cascade ------------------------------------------------------------------------


async def test_delete_topic_lists_routers_removed(client: httpx.AsyncClient) -> None:
    await put(client, "a->x", source="a", dest="x")
    await put(client, "x->b", source="x", dest="b")
    await put(client, "p->q", source="p", dest="q")
    r = await client.delete("/v0/topics/x")
    assert r.status_code == 200
    assert r.json() == {**r.json(), "topic": "x", "deleted": True, "routers_removed": ["a->x", "x->b"]}
    remaining = (await client.get("/v0/routers")).json()["routers"]
    assert [x["router"] for x in remaining] == ["p->q"]
    await client.post("/v0/topics/a", json={"records": [{"data": 1}]})
    await settle_loop()
    assert (await client.get("/v0/topics/x")).status_code == 404  # not recreated by forwarding
    r = await client.delete("/v0/topics/q")
    assert r.json()["routers_removed"] == ["p->q"]
    r = await client.delete("/v0/topics/q")
    assert r.json()["deleted"] is False and r.json()["routers_removed"] == []
