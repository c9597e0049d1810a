"""API keys (§0.2, §12; docs/DECISIONS.md, "Authentication, caps and metrics"): authentication,
per-route scopes, the topic-name prefix allowlist, the watch-session key binding, the WebSocket's
per-command checks, dev mode, and the ``TOPICS_API_KEYS`` syntax with its hashed key store.

Plain requests go through the ASGI app (``make_client``); the SSE GETs and ``/v0/ws`` need real
sockets (httpx's ASGI transport buffers whole responses), so those run the in-process native
server on the manual clock.

The scope × route matrix is generated from ``openapi/v0.yaml``: every operation's ``security``
is read from the document, and every operation must have an example request in
:data:`EXAMPLES` — a route added to the spec without one fails here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import Engine, ManualClock
from topics_server import auth
from topics_server.app import build
from topics_server.asgi import create_app
from topics_server.auth import ADMIN, ALL_SCOPES, DELETE, READ, WRITE, KeyConfigError, KeyStore, Principal
from topics_server.http import HttpServer
from topics_server.settings import ConfigError, load_settings
from topics_server.spec import routing_document
from websockets.asyncio.client import ClientConnection, connect

from .conftest import assert_error
from .sse_client import SseStream

Json = dict[str, Any]
MakeClient = Callable[..., httpx.AsyncClient]

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
TIMEOUT = 2.0
"""Seconds to wait for a frame or response that must come."""
SSE = {"Accept": "text/event-stream"}
UNKNOWN_WID = "wid_" + "A" * 22


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_unauthorized(response: httpx.Response) -> None:
    assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"].lower().startswith("bearer")


def assert_forbidden(response: httpx.Response) -> Json:
    return assert_error(response, 403, "forbidden")


# ---------------------------------------------------------------------------------------------
# the operations of the spec, and an example request for each
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    path: str
    public: bool
    """``security: []``: a probe."""
    scopes: frozenset[str]
    token_query: bool


def spec_operations() -> list[Operation]:
    operations = []
    for path, item in routing_document()["paths"].items():  # the WebSocket upgrade included
        for method, op in item.items():
            if method not in METHODS:
                continue
            security = op["security"]  # every operation declares it (access.Requirement)
            schemes = {name: frozenset(scopes) for entry in security for name, scopes in entry.items()}
            operations.append(
                Operation(
                    op["operationId"],
                    method.upper(),
                    path,
                    public=not security,
                    scopes=schemes.get("bearerAuth", frozenset()),
                    token_query="tokenQuery" in schemes,
                )
            )
    return operations


OPERATIONS = spec_operations()
BY_ID = {op.operation_id: op for op in OPERATIONS}
PROTECTED = [op for op in OPERATIONS if not op.public]
PUBLIC = [op for op in OPERATIONS if op.public]


@dataclass(frozen=True)
class Call:
    """One request, and the status it gets once the key is admitted."""

    method: str
    path: str
    status: int
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def within(self, ns: str) -> Call:
        """This call with ``{ns}`` in its path and body replaced by ``ns``."""
        body = (
            None if self.json is None else orjson.loads(orjson.dumps(self.json).replace(b"{ns}", ns.encode()))
        )
        return Call(self.method, self.path.replace(NS, ns), self.status, body, self.headers)

    async def send(self, client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> httpx.Response:
        merged = {**self.headers, **(headers or {})}
        return await client.request(self.method, self.path, json=self.json, headers=merged)


NS = "{ns}"
"""Where :meth:`Call.within` puts a key's namespace (each key of the matrix works on its own
copy of the world, so one app serves a whole row)."""

WORLD: list[Call] = [
    Call("PUT", "/v0/topics/{ns}log", 201, {}),
    Call("POST", "/v0/topics/{ns}log", 200, {"records": [{"data": 1}, {"data": 2}]}),
    Call("PUT", "/v0/topics/{ns}q", 201, {"type": "queue"}),
    Call("POST", "/v0/topics/{ns}q", 200, {"records": [{"data": {"job": 1}}]}),
    Call("PUT", "/v0/topics/{ns}dst", 201, {}),
    Call("PUT", "/v0/routers/{ns}fwd", 201, {"source": "{ns}log", "dest": "{ns}dst"}),
    Call(
        "PUT",
        "/v0/schedules/{ns}tick",
        201,
        {"topic": "{ns}dst", "every_ms": 60_000, "records": [{"data": 1}]},
    ),
    Call("PUT", "/v0/topics/{ns}log/consumers/reader", 201, {}),
]
"""What every matrix case starts from (made with the full key): a topic with records and a
named consumer, a queue with a job, a router, a schedule."""

EXAMPLES: dict[str, Call] = {
    "list_topics": Call("GET", "/v0/topics", 200),
    "put_topic": Call("PUT", "/v0/topics/{ns}fresh", 201, {}),
    "get_topic": Call("GET", "/v0/topics/{ns}log", 200),
    "delete_topic": Call("DELETE", "/v0/topics/{ns}log", 200),
    "append_records": Call("POST", "/v0/topics/{ns}log", 200, {"records": [{"data": 3}]}),
    "diff_topic": Call("POST", "/v0/topics/{ns}log/diff", 200, {}),
    "delete_records": Call("POST", "/v0/topics/{ns}log/delete", 200, {"before_seq": 2}),
    "claim_jobs": Call("POST", "/v0/topics/{ns}q/claim", 200, {"node": "n"}),
    "ack_jobs": Call("POST", "/v0/topics/{ns}q/ack", 200, {"node": "n", "seqs": [1]}),
    "nack_jobs": Call("POST", "/v0/topics/{ns}q/nack", 200, {"node": "n", "seqs": [1]}),
    "extend_leases": Call(
        "POST", "/v0/topics/{ns}q/extend", 200, {"node": "n", "seqs": [1], "lease_ms": 1000}
    ),
    "list_leases": Call("GET", "/v0/topics/{ns}q/leases", 200),
    # the world's queue has no dead-letter topic: admitted, then refused by the handler
    "dead_letter_jobs": Call("POST", "/v0/topics/{ns}q/dead_letter", 409, {"node": "n", "seqs": [1]}),
    # the streams never end; over the ASGI transport they are admitted and then refused by
    # their handler (the streams themselves: see the watch-binding and work-stream tests)
    "work_stream": Call("GET", "/v0/topics/{ns}q/work", 406, headers={"Accept": "application/json"}),
    "watch_stream": Call("GET", f"/v0/watch/{UNKNOWN_WID}", 404, headers=SSE),
    "list_routers": Call("GET", "/v0/routers", 200),
    "put_router": Call(
        "PUT", "/v0/routers/{ns}fresh", 201, {"source": "{ns}log", "dest": "{ns}fresh", "create_dest": True}
    ),
    "get_router": Call("GET", "/v0/routers/{ns}fwd", 200),
    "delete_router": Call("DELETE", "/v0/routers/{ns}fwd", 200),
    "list_schedules": Call("GET", "/v0/schedules", 200),
    "put_schedule": Call(
        "PUT",
        "/v0/schedules/{ns}fresh",
        201,
        {"topic": "{ns}log", "cron": "0 * * * *", "records": [{"data": 1}]},
    ),
    "get_schedule": Call("GET", "/v0/schedules/{ns}tick", 200),
    "delete_schedule": Call("DELETE", "/v0/schedules/{ns}tick", 200),
    "list_consumers": Call("GET", "/v0/topics/{ns}log/consumers", 200),
    "put_consumer": Call("PUT", "/v0/topics/{ns}log/consumers/fresh", 201, {"from_seq": 1}),
    "get_consumer": Call("GET", "/v0/topics/{ns}log/consumers/reader", 200),
    "commit_consumer": Call("POST", "/v0/topics/{ns}log/consumers/reader/commit", 200, {"seq": 2}),
    "delete_consumer": Call("DELETE", "/v0/topics/{ns}log/consumers/reader", 200),
    "create_watch": Call("POST", "/v0/watch", 200, {"topics": {"{ns}log": {}}}),
    "open_websocket": Call("GET", "/v0/ws", 400),  # no Upgrade: admitted, then not a handshake
    "health": Call("GET", "/v0/health", 200),
    "ready": Call("GET", "/v0/ready", 200),
    "healthz": Call("GET", "/healthz", 200),
    "readyz": Call("GET", "/readyz", 200),
    "metrics": Call("GET", "/v0/metrics", 200),
    "whoami": Call("GET", "/v0/whoami", 200),
}


def example(op: Operation) -> Call:
    call = EXAMPLES.get(op.operation_id)
    assert call is not None, (
        f"{op.method} {op.path} ({op.operation_id}) has no example request in EXAMPLES: add one "
        "so its scopes are tested"
    )
    assert call.method == op.method, (op, call)
    template = re.sub(r"\{\w+\}", "[^/]+", op.path)  # spec paths are plain /segments
    assert re.fullmatch(template, call.within("x.").path), (op, call)
    return call


# ---------------------------------------------------------------------------------------------
# request helpers and the native server
# ---------------------------------------------------------------------------------------------


async def send_all(client: httpx.AsyncClient, calls: list[Call], key: str) -> None:
    """Send each call with ``key``; each must get its own status."""
    for call in calls:
        r = await call.send(client, bearer(key))
        assert r.status_code == call.status, (call, r.text)


async def exists(client: httpx.AsyncClient, kind: str, name: str, key: str = "k") -> bool:
    """Whether the topic or router ``name`` exists (asked with the full key, not touching it)."""
    r = await client.get(
        f"/v0/{kind}/{name}", params={"touch": "false"} if kind == "topics" else None, headers=bearer(key)
    )
    assert r.status_code in (200, 404), r.text
    return r.status_code == 200


@dataclass
class Native:
    """The native HTTP server on a loopback port (for streams and sockets)."""

    port: int
    http: httpx.AsyncClient

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v0/ws"


@contextlib.asynccontextmanager
async def native_server(clock: ManualClock, env: dict[str, str]) -> AsyncIterator[Native]:
    settings = load_settings(env)
    app, ctx = build(settings, engine=Engine(clock, settings.limits))
    await ctx.start()
    await ctx.wait_ready()
    server = HttpServer(app)
    await server.start("127.0.0.1", 0)
    port: int = server.sockets[0].getsockname()[1]
    try:
        # verify=False: plain HTTP, no CA bundle to load
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT, verify=False
        ) as http:
            yield Native(port, http)
    finally:
        await server.shutdown(1.0)
        await ctx.stop()


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def error(self) -> Json:
        envelope: Json = orjson.loads(self.body)
        error: Json = envelope["error"]
        return error


async def raw_get(port: int, path: str, headers: dict[str, str]) -> RawResponse:
    """One ``GET`` on a fresh connection; the response head and its ``content-length`` body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        lines = [f"GET {path} HTTP/1.1", "Host: t", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parsed = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                parsed[name.strip().lower()] = value.strip()
        body = await asyncio.wait_for(reader.readexactly(int(parsed.get("content-length", "0"))), TIMEOUT)
        return RawResponse(int(status_line.split()[1]), parsed, body)
    finally:
        writer.close()


def assert_raw_unauthorized(response: RawResponse) -> None:
    assert response.status == 401, response
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["www-authenticate"].lower().startswith("bearer")
    error = response.error()
    assert error["code"] == "unauthorized" and error["message"], error


# ---------------------------------------------------------------------------------------------
# 1. every scope × route pair, generated from the spec
# ---------------------------------------------------------------------------------------------

MATRIX_KEYS: dict[str, frozenset[str]] = {
    "k": ALL_SCOPES,
    "r": frozenset({READ}),
    "w": frozenset({WRITE}),
    "d": frozenset({DELETE}),
    "a": frozenset({ADMIN}),
    "rw": frozenset({READ, WRITE}),
}
MATRIX_ENV = {"TOPICS_API_KEYS": "k,r:r,w:w,d:d,a:a,rw:rw"}
BAD_CREDENTIALS: list[dict[str, str]] = [
    {},
    bearer("nope"),
    bearer("k k"),  # a known key followed by junk is another token
    {"Authorization": "Basic k"},
    {"Authorization": "Basic azpr"},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer "},
    {"Authorization": "k"},
    {"Authorization": ""},
]


def test_every_spec_operation_has_an_example_request() -> None:
    ids = {op.operation_id for op in OPERATIONS}
    assert len(ids) == len(OPERATIONS), "operationIds are unique"
    assert ids - set(EXAMPLES) == set(), "operations of the spec without an example request"
    assert set(EXAMPLES) - ids == set(), "examples for operations the spec no longer has"


def test_the_spec_gives_every_protected_route_its_scopes() -> None:
    """The §0.2 table as the document states it (the server reads its checks from there)."""
    assert {op.operation_id: set(op.scopes) for op in OPERATIONS} == {
        "list_topics": {READ},
        "get_topic": {READ},
        "diff_topic": {READ},
        "list_routers": {READ},
        "list_leases": {READ},
        "dead_letter_jobs": {WRITE},
        "get_router": {READ},
        "create_watch": {READ},
        "watch_stream": {READ},
        "metrics": {READ},
        "append_records": {WRITE},
        "ack_jobs": {WRITE},
        "nack_jobs": {WRITE},
        "extend_leases": {WRITE},
        "claim_jobs": {READ, WRITE},
        "work_stream": {READ, WRITE},
        "delete_topic": {DELETE},
        "delete_router": {DELETE},
        "delete_records": {DELETE},
        "put_topic": {ADMIN},
        "put_router": {ADMIN},
        "list_schedules": {READ},
        "get_schedule": {READ},
        "put_schedule": {ADMIN},
        "delete_schedule": {ADMIN},
        "list_consumers": {READ},
        "get_consumer": {READ},
        "commit_consumer": {WRITE},
        "put_consumer": {ADMIN},
        "delete_consumer": {ADMIN},
        "open_websocket": set(),  # checked per command
        "whoami": set(),  # any known key may ask who it is
        "health": set(),
        "ready": set(),
        "healthz": set(),
        "readyz": set(),
    }
    assert {op.operation_id for op in PUBLIC} == {"health", "ready", "healthz", "readyz"}
    assert {op.operation_id for op in OPERATIONS if op.token_query} == {"watch_stream", "work_stream"}


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.operation_id)
async def test_scope_matrix(make_client: MakeClient, op: Operation) -> None:
    """Each key of :data:`MATRIX_KEYS` on its own copy of the world: lacking a scope is 403
    ``forbidden`` naming what is missing; holding them, the example's own status."""
    async with make_client(MATRIX_ENV) as client:
        for key, scopes in MATRIX_KEYS.items():
            ns = f"{key}."
            await send_all(client, [call.within(ns) for call in WORLD], "k")
            response = await example(op).within(ns).send(client, bearer(key))
            if op.scopes <= scopes:
                assert response.status_code == example(op).status, (key, response.text)
            else:
                error = assert_forbidden(response)
                assert set(error["detail"]["missing"]) == op.scopes - scopes, (key, error)


@pytest.mark.parametrize("op", PROTECTED, ids=lambda op: op.operation_id)
async def test_no_unknown_or_malformed_key_is_401(make_client: MakeClient, op: Operation) -> None:
    call = example(op).within("")
    async with make_client(MATRIX_ENV) as client:
        await send_all(client, [c.within("") for c in WORLD], "k")
        for headers in BAD_CREDENTIALS:
            assert_unauthorized(await call.send(client, headers))
        # and nothing happened: the world is as it was
        assert await exists(client, "topics", "log")
        assert (await client.get("/v0/topics/log", headers=bearer("k"))).json()["head_seq"] == 2
        assert await exists(client, "routers", "fwd")
        assert not await exists(client, "topics", "fresh")
        assert not await exists(client, "routers", "fresh")


async def test_the_bearer_scheme_is_case_insensitive(make_client: MakeClient) -> None:
    async with make_client(MATRIX_ENV) as client:
        for scheme in ("bearer", "BEARER", "Bearer"):
            r = await client.get("/v0/topics", headers={"Authorization": f"{scheme} r"})
            assert r.status_code == 200, r.text


@pytest.mark.parametrize("op", PUBLIC, ids=lambda op: op.operation_id)
async def test_probes_are_open_without_a_key(make_client: MakeClient, op: Operation) -> None:
    call = example(op).within("")
    async with make_client(MATRIX_ENV) as client:
        for headers in BAD_CREDENTIALS:
            r = await call.send(client, headers)
            assert r.status_code == 200, (headers, r.text)


@pytest.mark.parametrize("op", PUBLIC, ids=lambda op: op.operation_id)
async def test_probe_auth_makes_the_probes_need_any_valid_key(make_client: MakeClient, op: Operation) -> None:
    call = example(op).within("")
    async with make_client({**MATRIX_ENV, "TOPICS_PROBE_AUTH": "true"}) as client:
        for headers in BAD_CREDENTIALS:
            assert_unauthorized(await call.send(client, headers))
        for key in MATRIX_KEYS:  # any scope will do
            r = await call.send(client, bearer(key))
            assert r.status_code == 200, (key, r.text)


async def test_metrics_need_read(make_client: MakeClient) -> None:
    async with make_client(MATRIX_ENV) as client:
        assert_unauthorized(await client.get("/v0/metrics"))
        for key in ("w", "d", "a"):
            assert_forbidden(await client.get("/v0/metrics", headers=bearer(key)))
        for key in ("r", "rw", "k"):
            r = await client.get("/v0/metrics", headers=bearer(key))
            assert r.status_code == 200, r.text
            assert r.headers["content-type"].startswith("text/plain")


async def test_whoami_names_the_key_its_scopes_and_prefixes(make_client: MakeClient) -> None:
    env = {"TOPICS_API_KEYS": "s3cret-1,s3cret-2:read+write,s3cret-3:r:tenant42.|shared:x,s3cret-4:a"}
    expected = {
        "s3cret-1": (1, ["admin", "delete", "read", "write"], []),
        "s3cret-2": (2, ["read", "write"], []),
        "s3cret-3": (3, ["read"], ["tenant42.", "shared:x"]),
        "s3cret-4": (4, ["admin"], []),
    }
    async with make_client(env) as client:
        for secret, (key_id, scopes, prefixes) in expected.items():
            r = await client.get("/v0/whoami", headers=bearer(secret))
            assert r.status_code == 200, r.text
            body = r.json()
            body.pop("performance")
            assert body == {
                "auth": "keys",
                "key_id": key_id,
                "key": f"key #{key_id}",
                "scopes": scopes,
                "prefixes": prefixes,
            }
            assert "s3cret" not in r.text  # never a secret


async def test_whoami_without_a_known_key_is_401(make_client: MakeClient) -> None:
    async with make_client(MATRIX_ENV) as client:
        for headers in BAD_CREDENTIALS:
            assert_unauthorized(await client.get("/v0/whoami", headers=headers))
    async with make_client({**MATRIX_ENV, "TOPICS_PROBE_AUTH": "true"}) as client:
        assert_unauthorized(await client.get("/v0/whoami"))


# ---------------------------------------------------------------------------------------------
# 2. auth before existence (docs/DECISIONS.md, "Order of the checks")
# ---------------------------------------------------------------------------------------------


async def test_auth_is_decided_before_existence(make_client: MakeClient) -> None:
    env = {"TOPICS_API_KEYS": "k,r:r,t1:r:t1:,adm1:a:t1:"}
    async with make_client(env) as client:
        # the sanity case: a key allowed the name learns that it is missing
        assert_error(await client.get("/v0/topics/t1:missing", headers=bearer("t1")), 404, "topic_not_found")
        # outside the allowlist: 403, whether or not the name exists
        assert_forbidden(await client.get("/v0/topics/t2:missing", headers=bearer("t1")))
        assert_forbidden(await client.get("/v0/routers/t2:missing", headers=bearer("t1")))
        assert_forbidden(
            await client.post("/v0/watch", json={"topics": {"t2:missing": {}}}, headers=bearer("t1"))
        )
        assert_forbidden(
            await client.put(
                "/v0/routers/t1:r",
                json={"source": "t1:missing", "dest": "t2:missing"},
                headers=bearer("adm1"),
            )
        )
        # lacking the scope: 403, not 404
        assert_forbidden(await client.delete("/v0/topics/missing", headers=bearer("r")))
        assert_forbidden(
            await client.post("/v0/topics/missing/claim", json={"node": "n"}, headers=bearer("r"))
        )
        # no key, an unknown key: 401, not 404
        assert_unauthorized(await client.get("/v0/topics/missing"))
        assert_unauthorized(await client.get("/v0/topics/missing", headers=bearer("nope")))
        assert_unauthorized(await client.get("/v0/routers/missing"))
        assert_unauthorized(await client.get(f"/v0/watch/{UNKNOWN_WID}", headers=SSE))


# ---------------------------------------------------------------------------------------------
# 3. the prefix allowlist
# ---------------------------------------------------------------------------------------------

PREFIX_ENV = {
    "TOPICS_API_KEYS": ",".join(
        [
            "k",
            "t1::t1:",  # all scopes, one prefix
            "multi:r:t1:|shared.",  # read, two prefixes
            "colon::ten:ant:",  # a prefix with ':' inside
            "t1r:r:t1:",  # read only, t1:
        ]
    )
}


@pytest.mark.parametrize(
    ("key", "allowed", "refused"),
    [
        ("t1", ["t1:a", "t1:", "t1:x:y"], ["t2:a", "t1", "t10:a", "T1:a", "xt1:a"]),
        ("multi", ["t1:a", "shared.a", "shared.x:y"], ["shared", "sharedx", "t2:a"]),
        ("colon", ["ten:ant:a", "ten:ant:"], ["ten:a", "ten:anta", "ten:an", "ten"]),
    ],
)
async def test_path_names_are_matched_as_byte_prefixes(
    make_client: MakeClient, key: str, allowed: list[str], refused: list[str]
) -> None:
    async with make_client(PREFIX_ENV) as client:
        for name in allowed:
            r = await client.get(f"/v0/topics/{name}", headers=bearer(key))
            assert_error(r, 404, "topic_not_found")  # inside: it learns the name is missing
            r = await client.get(f"/v0/routers/{name}", headers=bearer(key))
            assert_error(r, 404, "router_not_found")
        for name in refused:
            await send_all(client, [Call("PUT", f"/v0/topics/{name}", 201, {})], "k")
            error = assert_forbidden(await client.get(f"/v0/topics/{name}", headers=bearer(key)))
            assert error["detail"] == {"name": name, "field": "topic"}
            assert_forbidden(await client.get(f"/v0/routers/{name}", headers=bearer(key)))


async def test_percent_encoded_path_names_are_checked_decoded(make_client: MakeClient) -> None:
    async with make_client(PREFIX_ENV) as client:
        await send_all(client, [Call("PUT", f"/v0/topics/{n}", 201, {}) for n in ("t1:a", "t2:a")], "k")
        for path in ("/v0/topics/t1%3Aa", "/v0/topics/t%31:a", "/v0/topics/%74%31%3A%61"):
            r = await client.get(path, headers=bearer("t1"))
            assert r.status_code == 200 and r.json()["topic"] == "t1:a", (path, r.text)
        for path in ("/v0/topics/t2%3Aa", "/v0/topics/t%32:a", "/v0/routers/t%32:r"):
            error = assert_forbidden(await client.get(path, headers=bearer("t1")))
            assert error["detail"]["name"].startswith("t2:"), error


async def test_every_topic_route_checks_the_path_name(make_client: MakeClient) -> None:
    async with make_client(PREFIX_ENV) as client:
        await send_all(
            client,
            [
                Call("PUT", "/v0/topics/t2:log", 201, {}),
                Call("POST", "/v0/topics/t2:log", 200, {"records": [{"data": 1}]}),
                Call("PUT", "/v0/topics/t2:q", 201, {"type": "queue"}),
                Call("POST", "/v0/topics/t2:q", 200, {"records": [{"data": 1}]}),
            ],
            "k",
        )
        refused = [
            Call("GET", "/v0/topics/t2:log", 403),
            Call("PUT", "/v0/topics/t2:log", 403, {"ttl_ms": 1000}),
            Call("PUT", "/v0/topics/t2:new", 403, {}),
            Call("POST", "/v0/topics/t2:log", 403, {"records": [{"data": 2}]}),
            Call("POST", "/v0/topics/t2:new", 403, {"records": [{"data": 2}]}),
            Call("POST", "/v0/topics/t2:log/diff", 403, {}),
            Call("POST", "/v0/topics/t2:log/delete", 403, {"before_seq": 2}),
            Call("DELETE", "/v0/topics/t2:log", 403),
            Call("POST", "/v0/topics/t2:q/claim", 403, {"node": "n"}),
            Call("POST", "/v0/topics/t2:q/ack", 403, {"node": "n", "seqs": [1]}),
            Call("POST", "/v0/topics/t2:q/nack", 403, {"node": "n", "seqs": [1]}),
            Call("POST", "/v0/topics/t2:q/extend", 403, {"node": "n", "seqs": [1], "lease_ms": 1000}),
            Call("GET", "/v0/topics/t2:q/work", 403, headers=SSE),  # refused before the stream
        ]
        for call in refused:
            assert_forbidden(await call.send(client, bearer("t1")))
        # nothing was created, changed or deleted
        assert not await exists(client, "topics", "t2:new")
        state = (await client.get("/v0/topics/t2:log", headers=bearer("k"))).json()
        assert state["head_seq"] == 1 and state["config"]["ttl_ms"] != 1000, state
        queue = (await client.get("/v0/topics/t2:q", headers=bearer("k"))).json()["queue"]
        assert queue["ready"] == 1, queue
        # the same routes inside the allowlist
        allowed = [
            Call("PUT", "/v0/topics/t1:log", 201, {}),
            Call("POST", "/v0/topics/t1:log", 200, {"records": [{"data": 1}, {"data": 2}]}),
            Call("POST", "/v0/topics/t1:log/diff", 200, {}),
            Call("POST", "/v0/topics/t1:log/delete", 200, {"before_seq": 2}),
            Call("GET", "/v0/topics/t1:log", 200),
            Call("PUT", "/v0/topics/t1:q", 201, {"type": "queue"}),
            Call("POST", "/v0/topics/t1:q", 200, {"records": [{"data": 1}]}),
            Call("POST", "/v0/topics/t1:q/claim", 200, {"node": "n"}),
            Call("POST", "/v0/topics/t1:q/extend", 200, {"node": "n", "seqs": [1], "lease_ms": 1000}),
            Call("POST", "/v0/topics/t1:q/nack", 200, {"node": "n", "seqs": [1]}),
            Call("POST", "/v0/topics/t1:q/ack", 200, {"node": "n", "seqs": [1]}),
            Call("DELETE", "/v0/topics/t1:log", 200),
        ]
        await send_all(client, allowed, "t1")


async def test_consumer_routes_check_the_topic_not_the_consumer_name(make_client: MakeClient) -> None:
    """A named consumer is checked through its topic (the key's allowlist applies to the topic, as
    for every topic operation): any consumer name inside an allowed topic, none outside."""
    async with make_client(PREFIX_ENV) as client:
        await send_all(
            client,
            [
                Call("POST", "/v0/topics/t2:log", 201, {"records": [{"data": 1}]}),
                Call("PUT", "/v0/topics/t2:log/consumers/c", 201, {}),
            ],
            "k",
        )
        for call in [
            Call("GET", "/v0/topics/t2:log/consumers", 403),
            Call("PUT", "/v0/topics/t2:log/consumers/t1:c", 403, {}),
            Call("GET", "/v0/topics/t2:log/consumers/c", 403),
            Call("POST", "/v0/topics/t2:log/consumers/c/commit", 403, {"seq": 1}),
            Call("DELETE", "/v0/topics/t2:log/consumers/c", 403),
            Call("POST", "/v0/topics/t2:log/diff", 403, {"consumer": "c"}),
        ]:
            assert_forbidden(await call.send(client, bearer("t1")))
        state = (await client.get("/v0/topics/t2:log/consumers/c", headers=bearer("k"))).json()
        assert state["cursor"] == 0, state
        await send_all(
            client,
            [
                Call("POST", "/v0/topics/t1:log", 201, {"records": [{"data": 1}]}),
                Call("PUT", "/v0/topics/t1:log/consumers/any-name.at:all", 201, {}),
                Call("POST", "/v0/topics/t1:log/consumers/any-name.at:all/commit", 200, {"seq": 1}),
                Call("GET", "/v0/topics/t1:log/consumers", 200),
                Call("POST", "/v0/topics/t1:log/diff", 200, {"consumer": "any-name.at:all"}),
                Call("DELETE", "/v0/topics/t1:log/consumers/any-name.at:all", 200),
            ],
            "t1",
        )


async def test_router_routes_check_the_router_name(make_client: MakeClient) -> None:
    async with make_client(PREFIX_ENV) as client:
        await send_all(
            client,
            [
                Call(
                    "PUT",
                    "/v0/routers/t2:r",
                    201,
                    {"source": "t2:a", "dest": "t2:a.copy", "create_dest": True},
                )
            ],
            "k",
        )
        assert_forbidden(await client.get("/v0/routers/t2:r", headers=bearer("t1")))
        assert_forbidden(await client.delete("/v0/routers/t2:r", headers=bearer("t1")))
        # a router named outside, even between topics inside
        r = await client.put(
            "/v0/routers/t2:r2",
            json={"source": "t1:a", "dest": "t1:b", "create_dest": True},
            headers=bearer("t1"),
        )
        assert_forbidden(r)
        assert not await exists(client, "routers", "t2:r2")
        assert not await exists(client, "topics", "t1:a")
        assert not await exists(client, "topics", "t1:b")
        assert await exists(client, "routers", "t2:r")
        # inside
        await send_all(
            client,
            [
                Call("PUT", "/v0/routers/t1:r", 201, {"source": "t1:a", "dest": "t1:b", "create_dest": True}),
                Call("GET", "/v0/routers/t1:r", 200),
                Call("DELETE", "/v0/routers/t1:r", 200),
            ],
            "t1",
        )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": "t2:src", "dest": "t1:dst", "create_dest": True}, "source"),
        ({"source": "t1:src", "dest": "t2:dst", "create_dest": True}, "dest"),
        ({"source": "t2:src", "dest": "t2:dst", "create_dest": True}, "source"),
    ],
)
async def test_a_router_outside_the_allowlist_is_refused_and_creates_no_topic(
    make_client: MakeClient, body: Json, field: str
) -> None:
    async with make_client(PREFIX_ENV) as client:
        error = assert_forbidden(await client.put("/v0/routers/t1:r", json=body, headers=bearer("t1")))
        assert error["detail"] == {"name": body[field], "field": field}, error
        assert not await exists(client, "routers", "t1:r")
        for name in ("t1:src", "t1:dst", "t2:src", "t2:dst"):
            assert not await exists(client, "topics", name), name


async def test_a_schedule_outside_the_allowlist_is_refused_and_creates_no_topic(
    make_client: MakeClient,
) -> None:
    """A schedule's name is checked like a router's (the path), its ``topic`` like a router's
    ``source`` (the body): a key cannot make the server append outside its allowlist."""
    body = {"topic": "t2:jobs", "every_ms": 1000, "records": [{"data": 1}]}
    async with make_client(PREFIX_ENV) as client:
        error = assert_forbidden(await client.put("/v0/schedules/t1:s", json=body, headers=bearer("t1")))
        assert error["detail"] == {"name": "t2:jobs", "field": "topic"}
        assert not await exists(client, "schedules", "t1:s")
        assert not await exists(client, "topics", "t2:jobs")
        error = assert_forbidden(
            await client.put("/v0/schedules/t2:s", json={**body, "topic": "t1:jobs"}, headers=bearer("t1"))
        )
        assert error["detail"] == {"name": "t2:s", "field": "schedule"}
        await send_all(
            client,
            [
                Call("PUT", "/v0/schedules/t1:s", 201, {**body, "topic": "t1:jobs"}),
                Call("GET", "/v0/schedules/t1:s", 200),
            ],
            "t1",
        )
        assert await list_all(client, "schedules", "t1") == ["t1:s"]
        assert await list_all(client, "schedules", "colon") == []
        # a schedule outside the key's allowlist appending to the key's topic: the topic's
        # delete would remove it, so the delete is refused (its name is not revealed)
        await send_all(client, [Call("PUT", "/v0/schedules/t2:s", 201, {**body, "topic": "t1:jobs"})], "k")
        error = assert_forbidden(await client.delete("/v0/topics/t1:jobs", headers=bearer("t1")))
        assert "t2:s" not in str(error)
        await send_all(client, [Call("DELETE", "/v0/schedules/t2:s", 200)], "k")
        r = await client.delete("/v0/topics/t1:jobs", headers=bearer("t1"))
        assert r.status_code == 200 and r.json()["schedules_removed"] == ["t1:s"], r.text


async def test_watch_topics_are_checked(make_client: MakeClient) -> None:
    async with make_client(PREFIX_ENV) as client:
        await send_all(
            client, [Call("PUT", f"/v0/topics/{n}", 201, {}) for n in ("t1:a", "t2:a", "shared.a")], "k"
        )
        error = assert_forbidden(
            await client.post("/v0/watch", json={"topics": {"t1:a": {}, "t2:a": {}}}, headers=bearer("t1"))
        )
        assert error["detail"] == {"name": "t2:a", "field": "topics"}
        assert_forbidden(
            await client.post(
                "/v0/watch?lenient=true", json={"topics": {"t2:gone": {}}}, headers=bearer("t1")
            )
        )
        for key, topics in [("t1", ["t1:a"]), ("multi", ["t1:a", "shared.a"])]:
            r = await client.post("/v0/watch", json={"topics": {n: {} for n in topics}}, headers=bearer(key))
            assert r.status_code == 200, r.text


async def test_a_dead_letter_outside_the_allowlist_is_refused_on_put_topic(make_client: MakeClient) -> None:
    async with make_client(PREFIX_ENV) as client:
        r = await client.put(
            "/v0/topics/t1:q", json={"type": "queue", "dead_letter": "t2:dlq"}, headers=bearer("t1")
        )
        error = assert_forbidden(r)
        assert error["detail"] == {"name": "t2:dlq", "field": "dead_letter"}
        assert not await exists(client, "topics", "t1:q")
        assert not await exists(client, "topics", "t2:dlq")
        # reconfiguring an existing queue to dead-letter outside is refused too
        await send_all(client, [Call("PUT", "/v0/topics/t1:q", 201, {"type": "queue"})], "t1")
        assert_forbidden(
            await client.put("/v0/topics/t1:q", json={"dead_letter": "t2:dlq"}, headers=bearer("t1"))
        )
        config = (await client.get("/v0/topics/t1:q", headers=bearer("t1"))).json()["config"]
        assert config.get("dead_letter") in (None, ""), config
        # inside
        r = await client.put("/v0/topics/t1:q", json={"dead_letter": "t1:dlq"}, headers=bearer("t1"))
        assert r.status_code == 200, r.text
        # an unrestricted key may name any topic
        r = await client.put(
            "/v0/topics/t3:q", json={"type": "queue", "dead_letter": "t2:dlq"}, headers=bearer("k")
        )
        assert r.status_code == 201, r.text


async def test_a_dead_letter_outside_the_allowlist_is_refused_on_a_creating_append(
    make_client: MakeClient,
) -> None:
    async with make_client(PREFIX_ENV) as client:
        body: Json = {"records": [{"data": 1}], "config": {"type": "queue", "dead_letter": "t2:dlq"}}
        error = assert_forbidden(await client.post("/v0/topics/t1:new", json=body, headers=bearer("t1")))
        assert error["detail"] == {"name": "t2:dlq", "field": "config.dead_letter"}
        assert not await exists(client, "topics", "t1:new")
        assert not await exists(client, "topics", "t2:dlq")
        body["config"]["dead_letter"] = "t1:dlq"
        r = await client.post("/v0/topics/t1:new", json=body, headers=bearer("t1"))
        assert r.status_code in (200, 201), r.text
        assert await exists(client, "topics", "t1:new")


async def list_all(client: httpx.AsyncClient, kind: str, key: str, **params: Any) -> list[str]:
    """Every name ``GET /v0/{kind}`` lists for ``key``, following ``next_cursor``."""
    names: list[str] = []
    cursor = None
    for _ in range(100):
        query = {**params, **({"cursor": cursor} if cursor else {})}
        r = await client.get(f"/v0/{kind}", params=query, headers=bearer(key))
        assert r.status_code == 200, r.text
        body = r.json()
        label = kind.removesuffix("s")
        names += [item[label] for item in body[kind]]
        cursor = body.get("next_cursor")
        if cursor is None:
            return names
    raise AssertionError(f"{kind} paging did not end: {names}")


TENANT_TOPICS = ["a", "t1:a", "t1:b", "t1:c", "t10:a", "t2:a", "t2:b", "shared.a", "sharedx", "ten:ant:a"]
TENANT_ROUTERS = {  # name: (source, dest), each inside one tenant
    "t1:r1": ("t1:a", "t1:b"),
    "t1:r2": ("t1:b", "t1:c"),
    "t2:r1": ("t2:a", "t2:b"),
    "t10:r1": ("t10:a", "t10:b"),
    "shared.r": ("shared.a", "shared.b"),
}


@pytest.fixture
async def tenants(make_client: MakeClient) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(PREFIX_ENV) as client:
        await send_all(client, [Call("PUT", f"/v0/topics/{n}", 201, {}) for n in TENANT_TOPICS], "k")
        await send_all(
            client,
            [
                Call("PUT", f"/v0/routers/{name}", 201, {"source": s, "dest": d, "create_dest": True})
                for name, (s, d) in TENANT_ROUTERS.items()
            ],
            "k",
        )
        yield client


@pytest.mark.parametrize("page_size", [1, 2, 100])
async def test_list_topics_is_filtered_to_the_allowlist(tenants: httpx.AsyncClient, page_size: int) -> None:
    everything = await list_all(tenants, "topics", "k", page_size=page_size)
    assert set(TENANT_TOPICS) <= set(everything)
    expected = {
        "t1": ["t1:a", "t1:b", "t1:c"],
        "t1r": ["t1:a", "t1:b", "t1:c"],
        "multi": ["shared.a", "shared.b", "t1:a", "t1:b", "t1:c"],
        "colon": ["ten:ant:a"],
    }
    for key, names in expected.items():
        assert await list_all(tenants, "topics", key, page_size=page_size) == names, key


@pytest.mark.parametrize(
    ("prefix", "names"),
    [
        ("t", ["t1:a", "t1:b", "t1:c"]),  # the query is wider than the allowlist
        ("t1:", ["t1:a", "t1:b", "t1:c"]),
        ("t1:b", ["t1:b"]),  # narrower
        ("s", ["shared.a", "shared.b"]),
        ("shared", ["shared.a", "shared.b"]),  # sharedx is not under "shared."
        ("t2", []),  # disjoint
        ("t10", []),
        ("", ["shared.a", "shared.b", "t1:a", "t1:b", "t1:c"]),
    ],
)
async def test_list_topics_prefix_query_intersects_the_allowlist(
    tenants: httpx.AsyncClient, prefix: str, names: list[str]
) -> None:
    for page_size in (1, 100):
        listed = await list_all(tenants, "topics", "multi", prefix=prefix, page_size=page_size)
        assert listed == names, (prefix, page_size)


async def test_list_topics_paging_with_one_per_page_walks_the_allowed_names(
    tenants: httpx.AsyncClient,
) -> None:
    seen = []
    cursor = None
    for _ in range(10):
        r = await tenants.get(
            "/v0/topics",
            params={"page_size": 1, **({"cursor": cursor} if cursor else {})},
            headers=bearer("t1"),
        )
        body = r.json()
        assert len(body["topics"]) <= 1, body
        seen += [t["topic"] for t in body["topics"]]
        cursor = body.get("next_cursor")
        if cursor is None:
            break
    assert seen == ["t1:a", "t1:b", "t1:c"]


async def test_a_cursor_from_another_listing_cannot_widen_the_view(tenants: httpx.AsyncClient) -> None:
    cursors = []
    cursor = None
    while True:  # every cursor the full key's listing hands out, one name per page
        query = {"page_size": 1, **({"cursor": cursor} if cursor else {})}
        body = (await tenants.get("/v0/topics", params=query, headers=bearer("k"))).json()
        cursor = body.get("next_cursor")
        if cursor is None:
            break
        cursors.append(cursor)
    assert len(cursors) >= len(TENANT_TOPICS) - 1
    for cursor in cursors:
        r = await tenants.get("/v0/topics", params={"cursor": cursor, "page_size": 100}, headers=bearer("t1"))
        assert r.status_code == 200, r.text
        assert {t["topic"] for t in r.json()["topics"]} <= {"t1:a", "t1:b", "t1:c"}, cursor


@pytest.mark.parametrize("page_size", [1, 100])
async def test_list_routers_is_filtered_to_the_allowlist(tenants: httpx.AsyncClient, page_size: int) -> None:
    assert set(await list_all(tenants, "routers", "k", page_size=page_size)) == set(TENANT_ROUTERS)
    expected = {
        "t1": ["t1:r1", "t1:r2"],
        "multi": ["shared.r", "t1:r1", "t1:r2"],
        "colon": [],
    }
    for key, names in expected.items():
        assert await list_all(tenants, "routers", key, page_size=page_size) == names, key
    assert await list_all(tenants, "routers", "multi", prefix="t", page_size=page_size) == ["t1:r1", "t1:r2"]
    assert await list_all(tenants, "routers", "multi", prefix="t1:r2", page_size=page_size) == ["t1:r2"]
    assert await list_all(tenants, "routers", "multi", prefix="t2", page_size=page_size) == []
    assert await list_all(tenants, "routers", "t1", source="t2:a", page_size=page_size) == []


async def test_metrics_per_topic_block_is_filtered_to_the_allowlist(tenants: httpx.AsyncClient) -> None:
    """A prefix-limited key scraping /v0/metrics sees only its own topics' block."""

    async def topics_in_metrics(key: str) -> set[str]:
        r = await tenants.get("/v0/metrics", headers={**bearer(key), "Accept": "application/json"})
        assert r.status_code == 200, r.text
        return {
            sample["labels"]["topic"]
            for family in r.json()["metrics"].values()
            for sample in family["samples"]
            if "topic" in sample["labels"]
        }

    assert set(TENANT_TOPICS) <= await topics_in_metrics("k")
    assert await topics_in_metrics("t1r") == {"t1:a", "t1:b", "t1:c"}
    assert await topics_in_metrics("multi") == {"t1:a", "t1:b", "t1:c", "shared.a", "shared.b"}


# ---------------------------------------------------------------------------------------------
# 4. the watch session is bound to its creating key; ?token= on the SSE GETs only
# ---------------------------------------------------------------------------------------------

TOKEN_ENV = {"TOPICS_API_KEYS": "A,B,r-only:r,a b,x+y%z"}


async def open_stream(server: Native, path: str, headers: dict[str, str] | None = None) -> SseStream:
    """Open an SSE GET; a 200 is checked to start with ``retry: 2000`` and then closed."""
    stream = await SseStream.open(server.port, path, headers, timeout=TIMEOUT)
    if stream.status == 200:
        assert stream.headers["content-type"].startswith("text/event-stream"), stream.headers
        first = await stream.next(TIMEOUT)
        assert first is not None and first.retry == 2000, first
    stream.close()
    return stream


def assert_stream_unauthorized(stream: SseStream) -> None:
    assert stream.status == 401, (stream.status, stream.body)
    assert stream.headers["www-authenticate"].lower().startswith("bearer")
    assert stream.json()["error"]["code"] == "unauthorized"


@pytest.fixture
async def token_server(clock: ManualClock) -> AsyncIterator[Native]:
    async with native_server(clock, TOKEN_ENV) as server:
        for name, config in (("t", {}), ("q", {"type": "queue"})):
            r = await server.http.put(f"/v0/topics/{name}", json=config, headers=bearer("A"))
            assert r.status_code == 201, r.text
        yield server


async def create_watch(server: Native, key: str) -> str:
    r = await server.http.post("/v0/watch", json={"topics": {"t": {}}}, headers=bearer(key))
    assert r.status_code == 200, r.text
    wid: str = r.json()["wid"]
    return wid


async def test_the_watch_stream_needs_the_creating_key(token_server: Native) -> None:
    wid = await create_watch(token_server, "A")
    path = f"/v0/watch/{wid}"
    assert (await open_stream(token_server, path, {**SSE, **bearer("A")})).status == 200
    assert_stream_unauthorized(await open_stream(token_server, path, {**SSE, **bearer("B")}))
    assert_stream_unauthorized(await open_stream(token_server, path, SSE))  # the wid alone is no credential
    assert_stream_unauthorized(await open_stream(token_server, path, {**SSE, **bearer("nope")}))
    # the same through ?token=
    assert (await open_stream(token_server, f"{path}?token=A", SSE)).status == 200
    assert_stream_unauthorized(await open_stream(token_server, f"{path}?token=B", SSE))
    assert_stream_unauthorized(await open_stream(token_server, f"{path}?token=nope", SSE))
    # the wid is still A's and usable
    assert (await open_stream(token_server, path, {**SSE, **bearer("A")})).status == 200


async def test_a_different_key_on_a_missing_wid_is_not_told_it_is_missing(token_server: Native) -> None:
    stream = await open_stream(token_server, f"/v0/watch/{UNKNOWN_WID}", SSE)
    assert_stream_unauthorized(stream)


async def test_the_watch_stream_of_a_read_only_key(token_server: Native) -> None:
    wid = await create_watch(token_server, "r-only")
    assert (await open_stream(token_server, f"/v0/watch/{wid}?token=r-only", SSE)).status == 200
    assert_stream_unauthorized(await open_stream(token_server, f"/v0/watch/{wid}?token=A", SSE))


@pytest.mark.parametrize(
    ("key", "query", "status"),
    [
        ("a b", "token=a+b", 200),  # form-decoded: '+' is a space
        ("a b", "token=a%20b", 200),
        ("a b", "token=a", 401),
        ("x+y%z", "token=x%2By%25z", 200),
        ("x+y%z", "token=x+y%25z", 401),  # that is "x y%z"
        ("A", "token=A&token=B", 200),  # the first occurrence wins
        ("A", "token=B&token=A", 401),
        ("A", "other=1&token=A", 200),
        ("A", "token=", 401),
        ("A", "TOKEN=A", 401),
    ],
)
async def test_the_query_token_is_form_decoded_and_the_first_one_wins(
    token_server: Native, key: str, query: str, status: int
) -> None:
    wid = await create_watch(token_server, key)
    stream = await open_stream(token_server, f"/v0/watch/{wid}?{query}", SSE)
    if status == 401:
        assert_stream_unauthorized(stream)
    else:
        assert stream.status == status, stream.body


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v0/topics", None),
        ("GET", "/v0/topics/t", None),
        ("POST", "/v0/topics/t/diff", {}),
        ("POST", "/v0/topics/t", {"records": [{"data": 1}]}),
        ("POST", "/v0/watch", {"topics": {"t": {}}}),
        ("GET", "/v0/metrics", None),
        ("POST", "/v0/topics/q/claim", {"node": "n"}),
    ],
)
async def test_the_query_token_is_refused_on_routes_that_are_not_sse(
    token_server: Native, method: str, path: str, body: Json | None
) -> None:
    r = await token_server.http.request(method, path, params={"token": "A"}, json=body)
    assert_unauthorized(r)


async def test_the_work_stream_accepts_the_query_token(token_server: Native) -> None:
    assert (await open_stream(token_server, "/v0/topics/q/work?token=A&node=n", SSE)).status == 200
    assert (await open_stream(token_server, "/v0/topics/q/work?node=n", {**SSE, **bearer("B")})).status == 200
    assert (await open_stream(token_server, "/v0/topics/q/work?token=a+b&node=n", SSE)).status == 200
    assert_stream_unauthorized(await open_stream(token_server, "/v0/topics/q/work?node=n", SSE))
    assert_stream_unauthorized(await open_stream(token_server, "/v0/topics/q/work?token=nope&node=n", SSE))
    stream = await open_stream(token_server, "/v0/topics/q/work?token=r-only&node=n", SSE)  # needs write
    assert stream.status == 403 and stream.json()["error"]["code"] == "forbidden", stream.body


# ---------------------------------------------------------------------------------------------
# 5. the WebSocket: the key at upgrade, the scopes and names per command
# ---------------------------------------------------------------------------------------------

WS_ENV = {"TOPICS_API_KEYS": "k,r:r,w:w,d:d,wa:w+a,pt::t1:"}
UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}
DELIVERY = {"record", "caught_up", "tombstone", "topic_deleted"}


@pytest.fixture
async def ws_server(clock: ManualClock) -> AsyncIterator[Native]:
    async with native_server(clock, WS_ENV) as server:
        for name in ("t", "t1:a", "t2:a"):
            r = await server.http.put(f"/v0/topics/{name}", json={}, headers=bearer("k"))
            assert r.status_code == 201, r.text
        yield server


class Socket:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def call(self, command: Json) -> Json:
        """Send ``command`` and return the frame answering it (delivery frames are skipped)."""
        await self.ws.send(orjson.dumps(command).decode())
        while True:
            frame: Json = orjson.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT))
            if frame.get("request_id") == command.get("request_id") or frame["op"] not in DELIVERY:
                return frame

    async def refused(self, command: Json) -> Json:
        frame = await self.call(command)
        assert frame["op"] == "error" and frame["code"] == "forbidden", frame
        assert frame["request_id"] == command["request_id"], frame
        assert isinstance(frame["message"], str) and frame["message"], frame
        return frame

    async def answered(self, command: Json, op: str) -> Json:
        frame = await self.call(command)
        assert frame["op"] == op and frame["request_id"] == command["request_id"], frame
        return frame


@contextlib.asynccontextmanager
async def socket_for(server: Native, key: str) -> AsyncIterator[Socket]:
    async with connect(server.ws_url, additional_headers=bearer(key), open_timeout=TIMEOUT) as ws:
        yield Socket(ws)


def subscribe(topic: str = "t", request_id: str = "s") -> Json:
    return {"op": "subscribe", "request_id": request_id, "topic": topic}


def publish(topic: str = "t", request_id: str = "p", **extra: Any) -> Json:
    return {"op": "publish", "request_id": request_id, "topic": topic, "records": [{"data": 1}], **extra}


def ping(request_id: str = "ping") -> Json:
    return {"op": "ping", "request_id": request_id}


@pytest.mark.parametrize(
    ("headers", "path"),
    [
        ({}, "/v0/ws"),
        (bearer("nope"), "/v0/ws"),
        ({"Authorization": "Basic k"}, "/v0/ws"),
        ({}, "/v0/ws?token=k"),  # no ?token= on the socket (docs/WEBSOCKET.md, "Auth")
        ({}, "/v0/ws?token=r"),
    ],
)
async def test_an_upgrade_without_a_valid_key_is_an_http_401_envelope(
    ws_server: Native, headers: dict[str, str], path: str
) -> None:
    response = await raw_get(ws_server.port, path, {**UPGRADE, **headers})
    assert_raw_unauthorized(response)


async def test_an_upgrade_with_a_valid_key_is_101(ws_server: Native) -> None:
    for key in ("k", "r", "d"):
        response = await raw_get(ws_server.port, "/v0/ws", {**UPGRADE, **bearer(key)})
        assert response.status == 101, response


async def test_the_asgi_transport_refuses_the_upgrade_with_the_401_envelope(clock: ManualClock) -> None:
    settings = load_settings(WS_ENV)
    app, _ = create_app(settings, Engine(clock, settings.limits))

    async def refusal(extensions: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> list[Json]:
        sent: list[Json] = []

        async def receive() -> Json:
            return {"type": "websocket.connect"}

        async def send(message: Json) -> None:
            sent.append(message)

        scope = {
            "type": "websocket",
            "path": "/v0/ws",
            "raw_path": b"/v0/ws",
            "query_string": b"",
            "headers": [(k.lower().encode(), v.encode()) for k, v in UPGRADE.items()] + headers,
            "extensions": extensions,
        }
        await asyncio.wait_for(app(scope, receive, send), TIMEOUT)
        return sent

    start, body = await refusal({"websocket.http.response": {}}, [])
    assert start["type"] == "websocket.http.response.start" and start["status"] == 401, start
    assert dict(start["headers"])[b"www-authenticate"].lower().startswith(b"bearer")
    assert orjson.loads(body["body"])["error"]["code"] == "unauthorized"
    # a server without the extension can only close (policy violation)
    assert await refusal({}, [(b"authorization", b"Bearer nope")]) == [
        {"type": "websocket.close", "code": 1008}
    ]


async def test_a_read_key_subscribes_but_may_not_publish(ws_server: Native) -> None:
    async with socket_for(ws_server, "r") as s:
        await s.answered(subscribe(), "subscribed")
        frame = await s.refused(publish())
        assert frame["detail"]["missing"] == ["write"], frame
        await s.answered(ping(), "pong")
    r = await ws_server.http.get("/v0/topics/t", headers=bearer("k"))
    assert r.json()["head_seq"] == 0, r.text


async def test_a_write_key_publishes_but_may_not_subscribe(ws_server: Native) -> None:
    async with socket_for(ws_server, "w") as s:
        await s.answered(publish(), "ack")
        await s.refused(subscribe())
        await s.refused({"op": "subscribe", "request_id": "m", "topics": {"t": {}}})
        await s.answered(ping(), "pong")


async def test_a_publish_with_config_needs_admin(ws_server: Native) -> None:
    config = {"ttl_ms": 60_000}
    async with socket_for(ws_server, "w") as s:
        frame = await s.refused(publish("new1", config=config))
        assert frame["detail"]["missing"] == ["admin"], frame
        await s.answered(publish("new1"), "ack")  # without config: write is enough
    async with socket_for(ws_server, "wa") as s:
        await s.answered(publish("new2", config=config), "ack")
    state = (await ws_server.http.get("/v0/topics/new2", headers=bearer("k"))).json()
    assert state["config"]["ttl_ms"] == 60_000, state


async def test_names_outside_the_prefix_are_forbidden_per_command(ws_server: Native) -> None:
    async with socket_for(ws_server, "pt") as s:
        await s.refused(subscribe("t2:a"))
        await s.refused({"op": "subscribe", "request_id": "m", "topics": {"t1:a": {}, "t2:a": {}}})
        await s.refused(publish("t2:a"))
        await s.refused(publish("t2:new"))
        await s.refused(publish("t1:new", config={"type": "queue", "dead_letter": "t2:dlq"}))
        # inside
        await s.answered(subscribe("t1:a"), "subscribed")
        await s.answered({"op": "subscribe", "request_id": "m2", "topics": {"t1:a": {}}}, "subscribed")
        await s.answered(publish("t1:a"), "ack")
        await s.answered(ping(), "pong")
    for name in ("t2:new", "t1:new", "t2:dlq"):
        r = await ws_server.http.get(f"/v0/topics/{name}", headers=bearer("k"))
        assert r.status_code == 404, (name, r.text)
    assert (await ws_server.http.get("/v0/topics/t2:a", headers=bearer("k"))).json()["head_seq"] == 0


@pytest.mark.parametrize("key", ["k", "r", "w", "d", "wa", "pt"])
async def test_ping_works_for_any_key(ws_server: Native, key: str) -> None:
    async with socket_for(ws_server, key) as s:
        await s.answered(ping(), "pong")


# ---------------------------------------------------------------------------------------------
# 6. dev mode: no keys, the header is ignored
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers", [{}, bearer("garbage"), {"Authorization": "Basic x"}, {"Authorization": "Bearer"}]
)
async def test_dev_mode_ignores_any_authorization_header(
    make_client: MakeClient, headers: dict[str, str]
) -> None:
    async with make_client() as client:
        for call in [
            Call("PUT", "/v0/topics/t2:a", 201, {}),
            Call("POST", "/v0/topics/t2:a", 200, {"records": [{"data": 1}]}),
            Call("GET", "/v0/topics", 200),
            Call("GET", "/v0/topics?token=garbage", 200),
            Call("POST", "/v0/watch", 200, {"topics": {"t2:a": {}}}),
            Call("GET", "/v0/metrics", 200),
            Call("DELETE", "/v0/topics/t2:a", 200),
        ]:
            r = await call.send(client, headers)
            assert r.status_code == call.status, (call, r.text)


@pytest.mark.parametrize("headers", [{}, bearer("garbage")])
async def test_dev_mode_whoami_grants_everything(make_client: MakeClient, headers: dict[str, str]) -> None:
    async with make_client() as client:
        r = await client.get("/v0/whoami", headers=headers)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body.pop("performance")["server_total_ms"] >= 0
        assert body == {
            "auth": "dev",
            "key_id": None,
            "key": None,
            "scopes": ["admin", "delete", "read", "write"],
            "prefixes": [],
        }


async def test_dev_mode_probe_auth_has_no_key_to_ask_for(make_client: MakeClient) -> None:
    async with make_client({"TOPICS_PROBE_AUTH": "true"}) as client:
        assert (await client.get("/v0/health")).status_code == 200


async def test_dev_mode_streams_and_sockets_ignore_the_header(clock: ManualClock) -> None:
    async with native_server(clock, {}) as server:
        r = await server.http.post(
            "/v0/watch", json={"topics": {"t": {}}}, params={"lenient": "true"}, headers=bearer("garbage")
        )
        assert r.status_code == 200, r.text
        stream = await open_stream(
            server, f"/v0/watch/{r.json()['wid']}?token=garbage", {**SSE, **bearer("x")}
        )
        assert stream.status == 200, stream.body
        async with socket_for(server, "garbage") as s:
            await s.answered(ping(), "pong")


# ---------------------------------------------------------------------------------------------
# 7. the TOPICS_API_KEYS syntax and the hashed store
# ---------------------------------------------------------------------------------------------


def principal_of(entry: str) -> Principal:
    digest, principal = auth.parse_entry(entry, 1)
    assert digest == hashlib.sha256(entry.partition(":")[0].strip().encode()).digest()
    return principal


@pytest.mark.parametrize(
    ("entry", "scopes", "prefixes"),
    [
        ("key", ALL_SCOPES, ()),
        ("key:", ALL_SCOPES, ()),
        ("key::", ALL_SCOPES, ()),
        ("key:read", {READ}, ()),
        ("key:write", {WRITE}, ()),
        ("key:delete", {DELETE}, ()),
        ("key:admin", {ADMIN}, ()),
        ("key:r", {READ}, ()),
        ("key:w", {WRITE}, ()),
        ("key:d", {DELETE}, ()),
        ("key:a", {ADMIN}, ()),
        ("key:rw", {READ, WRITE}, ()),
        ("key:rw+d", {READ, WRITE, DELETE}, ()),
        ("key:read+write", {READ, WRITE}, ()),
        ("key:r+w+d+a", ALL_SCOPES, ()),
        ("key:read+r", {READ}, ()),
        ("key:READ+W", {READ, WRITE}, ()),
        ("key:read:t1:", {READ}, ("t1:",)),
        ("key:read:t1:|shared.", {READ}, ("t1:", "shared.")),
        ("key::t1:", ALL_SCOPES, ("t1:",)),
        ("key::a:b:c", ALL_SCOPES, ("a:b:c",)),  # split on ':' at most twice
        ("key:w:a::b", {WRITE}, ("a::b",)),
        ("dash:read:tenant42:", {READ}, ("tenant42:",)),
        (" key : r ", {READ}, ()),
    ],
)
def test_entry_forms(entry: str, scopes: set[str], prefixes: tuple[str, ...]) -> None:
    principal = principal_of(entry)
    assert principal.scopes == frozenset(scopes)
    assert principal.prefixes == prefixes
    assert principal.key_id == 1


@pytest.mark.parametrize(
    "value",
    ["sk-1:x", "sk-1:read+", "sk-1:r w", "sk-1:reader", "sk-1::a|", "sk-1::|a", ":r", "", "sk-1,sk-1:r"],
)
def test_malformed_entries_refuse_the_start_without_echoing_the_key(value: str) -> None:
    with pytest.raises(KeyConfigError) as info:
        KeyStore.parse(f"ok-key,{value}")
    assert "sk-1" not in str(info.value) and "ok-key" not in str(info.value)
    with pytest.raises(ConfigError):
        load_settings({"TOPICS_API_KEYS": f"ok-key,{value}"})


def test_blank_configuration_is_dev_mode() -> None:
    for value in ("", "   "):
        store = KeyStore.parse(value)
        assert not store.enabled and len(store) == 0
        assert store.authenticate("anything") is None
    assert not load_settings({}).api_keys.enabled


def test_principals_are_numbered_by_position_and_match_byte_prefixes() -> None:
    store = KeyStore.parse("one,two:r:t1:|t2:,three::ten:ant:")
    one, two, three = (store.authenticate(k) for k in ("one", "two", "three"))
    assert one is not None and two is not None and three is not None
    assert (one.key_id, two.key_id, three.key_id) == (1, 2, 3)
    assert one.allows("anything") and one.scopes == ALL_SCOPES
    assert two.allows("t1:x") and two.allows("t2:") and not two.allows("t1") and not two.allows("t3:x")
    assert three.allows("ten:ant:x") and not three.allows("ten:x")
    assert two.missing([WRITE, READ, DELETE]) == [DELETE, WRITE]
    assert store.authenticate("ONE") is None and store.authenticate("one ") is None
    assert store.authenticate("") is None and store.authenticate(None) is None


SECRETS = ["sk-alpha-5b1f", "sk-bravo-77c0", "sk-charlie-e31d", "sk-delta-90aa", "sk-echo-4c2e"]
STORE_VALUE = f"{SECRETS[0]},{SECRETS[1]}:r,{SECRETS[2]}:w:t1:,{SECRETS[3]}::t2:|t3:,{SECRETS[4]}:rw+d+a"


def reachable(value: Any, depth: int = 0) -> Iterator[Any]:
    """Every value reachable from ``value`` through slots, dataclass fields and containers."""
    assert depth < 10
    yield value
    if isinstance(value, str | bytes | int | float | bool | type(None)):
        return
    if isinstance(value, dict):
        children: list[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        children = list(value)
    elif is_dataclass(value):
        children = [getattr(value, f.name) for f in fields(value)]
    else:
        slots = [s for cls in type(value).__mro__ for s in getattr(cls, "__slots__", ())]
        children = [getattr(value, s) for s in slots if hasattr(value, s)]
        children += list(getattr(value, "__dict__", {}).values())
    for child in children:
        yield from reachable(child, depth + 1)


def test_the_key_store_keeps_digests_only() -> None:
    store = KeyStore.parse(STORE_VALUE)
    assert not hasattr(store, "__dict__")
    digests = store._digests
    assert digests == [hashlib.sha256(s.encode()).digest() for s in SECRETS]
    assert all(isinstance(d, bytes) and len(d) == 32 for d in digests)
    for value in reachable(store):
        if isinstance(value, str | bytes):
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            assert not any(secret in text for secret in SECRETS), value
    # nor do the settings that hold it (the plaintext is not kept anywhere in them)
    settings = load_settings({"TOPICS_API_KEYS": STORE_VALUE})
    for value in reachable(settings):
        if isinstance(value, str):
            assert not any(secret in value for secret in SECRETS), value
    assert not any(secret in repr(settings) for secret in SECRETS)


@pytest.mark.parametrize("token", [SECRETS[0], SECRETS[2], SECRETS[-1], "sk-nope", SECRETS[0][:-1]])
def test_authenticate_compares_against_every_digest(monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    store = KeyStore.parse(STORE_VALUE)
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    principal = store.authenticate(token)
    assert len(compared) == len(SECRETS)  # no early exit on a match, none on a miss
    presented = hashlib.sha256(token.encode()).digest()
    assert [a for a, _ in compared] == [presented] * len(SECRETS)  # the digest, never the token
    assert sorted(b for _, b in compared) == sorted(store._digests)
    if token in SECRETS:
        assert principal is not None and principal.key_id == SECRETS.index(token) + 1
    else:
        assert principal is None


def test_authenticate_without_a_token_compares_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    store = KeyStore.parse(STORE_VALUE)
    calls: list[bytes] = []

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(b)
        return False

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    assert store.authenticate(None) is None
    assert calls == []


# ---------------------------------------------------------------------------------------------
# 8. the hardened-deployment example of §12
# ---------------------------------------------------------------------------------------------

HARDENED = "dash:read:tenant42:,prod:write:tenant42:,ops::"


def test_the_section_12_example_keys_parse() -> None:
    store = KeyStore.parse(HARDENED)
    dash, prod, ops = (store.authenticate(k) for k in ("dash", "prod", "ops"))
    assert dash == Principal(1, frozenset({READ}), ("tenant42:",))
    assert prod == Principal(2, frozenset({WRITE}), ("tenant42:",))
    assert ops == Principal(3, ALL_SCOPES, ())


async def test_the_section_12_example_keys_over_http(make_client: MakeClient) -> None:
    async with make_client({"TOPICS_API_KEYS": HARDENED}) as client:
        await send_all(
            client,
            [
                Call("PUT", "/v0/topics/tenant42:orders", 201, {}),
                Call("PUT", "/v0/topics/tenant43:orders", 201, {}),
            ],
            "ops",
        )
        await send_all(
            client, [Call("POST", "/v0/topics/tenant42:orders", 200, {"records": [{"data": 1}]})], "prod"
        )
        await send_all(
            client,
            [
                Call("GET", "/v0/topics/tenant42:orders", 200),
                Call("POST", "/v0/topics/tenant42:orders/diff", 200, {}),
            ],
            "dash",
        )
        assert_forbidden(
            await client.post(
                "/v0/topics/tenant43:orders", json={"records": [{"data": 1}]}, headers=bearer("prod")
            )
        )
        assert_forbidden(await client.get("/v0/topics/tenant42:orders", headers=bearer("prod")))
        assert_forbidden(
            await client.post(
                "/v0/topics/tenant42:orders", json={"records": [{"data": 1}]}, headers=bearer("dash")
            )
        )
        assert_forbidden(await client.get("/v0/topics/tenant43:orders", headers=bearer("dash")))
        assert_forbidden(await client.put("/v0/topics/tenant42:new", json={}, headers=bearer("dash")))
        assert [
            t["topic"] for t in (await client.get("/v0/topics", headers=bearer("dash"))).json()["topics"]
        ] == ["tenant42:orders"]
        await send_all(client, [Call("DELETE", "/v0/topics/tenant43:orders", 200)], "ops")


async def test_a_topic_delete_cannot_remove_another_tenants_router(make_client: MakeClient) -> None:
    async with make_client({"TOPICS_API_KEYS": "k,a::a:"}) as c:
        r = await c.put("/v0/routers/b:secret", json={"source": "b:x", "dest": "a:y"}, headers=bearer("k"))
        assert r.status_code == 201, r.text
        r = await c.delete("/v0/topics/a:y", headers=bearer("a"))
        assert_error(r, 403, "forbidden")
        assert "b:secret" not in r.text  # the other tenant's router is not even named
        assert (await c.get("/v0/routers/b:secret", headers=bearer("k"))).status_code == 200
        assert (await c.get("/v0/topics/a:y", headers=bearer("a"))).status_code == 200
        r = await c.put("/v0/routers/a:mine", json={"source": "a:src", "dest": "a:z"}, headers=bearer("k"))
        assert r.status_code == 201, r.text
        r = await c.delete("/v0/topics/a:z", headers=bearer("a"))
        assert r.status_code == 200 and r.json()["routers_removed"] == ["a:mine"], r.text
