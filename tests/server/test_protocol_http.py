"""Cross-cutting HTTP behaviour: probes, envelope for framework errors, method/route errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import httpx
from topics_engine import Engine, ManualClock
from topics_server.asgi import create_app
from topics_server.settings import load_settings

from .conftest import assert_error


async def test_probes_and_aliases(client: httpx.AsyncClient) -> None:
    for path in ("/v0/health", "/healthz"):
        body = (await client.get(path)).json()
        assert body["status"] == "ok" and isinstance(body["uptime_ms"], int)
        assert body["version"] == metadata.version("topics")  # pyproject.toml's, not a copy
    for path in ("/v0/ready", "/readyz"):
        r = await client.get(path)
        assert r.status_code == 200
        assert (
            r.json()["status"] == "ready"
            and r.json()["wal_replay_complete"] is True
            and r.json()["topics"] == 0
        )


async def test_unknown_route_and_wrong_method(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v0/nothing-here"), 404, "not_found")
    assert_error(await client.get("/v1/topics"), 404, "not_found")
    r = await client.patch("/v0/topics/x", json={})
    assert_error(r, 405, "method_not_allowed")
    assert set(r.headers["allow"].split(", ")) == {"GET", "PUT", "POST", "DELETE"}


async def _asgi_exchange(
    app: Callable[..., Awaitable[None]], method: str, path: str, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[bytes, bytes], list[bytes]]:
    """One request straight through the ASGI app: status, headers, and every body chunk it
    sent (httpx's ASGI transport drops a HEAD body itself, so it cannot tell)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"topics.test"), *headers],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start, *bodies = sent
    assert start["type"] == "http.response.start"
    assert all(m["type"] == "http.response.body" for m in bodies)
    return start["status"], dict(start["headers"]), [m.get("body", b"") for m in bodies]


async def test_head_is_answered_without_a_body(clock: ManualClock) -> None:
    """The ASGI adapter sends a HEAD response's head, with the Content-Length the GET carries,
    and no body bytes (RFC 9110 §9.3.2): an ASGI server need not drop them itself."""
    settings = load_settings({})
    app, _ = create_app(settings, Engine(clock, settings.limits))
    # HEAD is no operation of an API route: the 405 envelope's head only
    status, headers, bodies = await _asgi_exchange(app, "HEAD", "/v0/health", [])
    assert status == 405 and headers[b"allow"] == b"GET" and int(headers[b"content-length"]) > 0
    assert b"".join(bodies) == b""
    # the served contract answers HEAD with the GET's headers
    for encoding in (b"identity", b"gzip"):
        accept = [(b"accept-encoding", encoding)]
        status, got, bodies = await _asgi_exchange(app, "GET", "/v0/openapi.json", accept)
        assert status == 200 and int(got[b"content-length"]) == len(b"".join(bodies)) > 0
        status, headed, bodies = await _asgi_exchange(app, "HEAD", "/v0/openapi.json", accept)
        assert status == 200 and headed == got and b"".join(bodies) == b""


async def test_every_json_response_has_performance(client: httpx.AsyncClient) -> None:
    responses = [
        await client.put("/v0/topics/perf", json={}),
        await client.get("/v0/topics/perf"),
        await client.get("/v0/topics/absent"),
        await client.get("/v0/health"),
    ]
    for r in responses:
        assert isinstance(r.json()["performance"]["server_total_ms"], float)


async def test_unexpected_exception_is_500_internal_without_trace(make_client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from topics_engine import Engine

    def boom(self: Engine, name: str, touch: bool = True) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Engine, "topic_state", boom)
    async with make_client() as c:
        r = await c.get("/v0/topics/x")
        error = assert_error(r, 500, "internal")
        assert "secret" not in r.text and "Traceback" not in r.text
        assert "detail" not in error


async def test_large_json_responses_are_gzipped_when_asked(client: httpx.AsyncClient) -> None:
    """Above a small threshold, a JSON response honours Accept-Encoding: gzip (docs/DECISIONS.md,
    "Response compression")."""
    await client.post("/v0/topics/z", json={"records": [{"data": "x" * 200} for _ in range(50)]})
    big = await client.post("/v0/topics/z/diff", json={}, headers={"Accept-Encoding": "gzip"})
    assert big.headers["content-encoding"] == "gzip"
    assert int(big.headers["content-length"]) < len(big.content)  # httpx decoded it
    assert len(big.json()["records"]) == 50
    plain = await client.post("/v0/topics/z/diff", json={}, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.json() == {
        **big.json(),
        "performance": plain.json()["performance"],
    }
    refused = await client.post("/v0/topics/z/diff", json={}, headers={"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.headers
    small = await client.get("/v0/topics/z", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # below the threshold: not worth the CPU


async def test_page_size_zero_is_the_default(client: httpx.AsyncClient) -> None:
    for i in range(3):
        await client.put(f"/v0/topics/p{i}", json={})
    r = await client.get("/v0/topics", params={"page_size": 0})
    assert r.status_code == 200 and len(r.json()["topics"]) == 3
    assert_error(await client.get("/v0/topics", params={"page_size": -1}), 400, "invalid_request")


async def test_diff_accepts_max_batch_bytes(client: httpx.AsyncClient) -> None:
    await client.post("/v0/topics/b", json={"records": [{"data": "x" * 100} for _ in range(20)]})
    r = await client.post("/v0/topics/b/diff", json={"max_batch_bytes": 1})
    assert r.status_code == 200 and len(r.json()["records"]) == 1 and r.json()["next_from_seq"] == 1
