"""CORS (``TOPICS_CORS_ORIGINS``; docs/DECISIONS.md, "CORS"): off by default (no CORS header
at all), preflights of allowed origins answered ``204`` without a key, actual responses —
errors and SSE streams included — carrying ``Access-Control-Allow-Origin``, other origins
getting nothing; ``*``; the served contract staying as it is."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from topics_engine import ManualClock
from topics_server.cors import ALLOW_HEADERS, MAX_AGE_S

from .native import native_server
from .sse_client import SseStream

APP = "https://app.example.com"
OTHER = "https://evil.example.com"
KEYS = {"TOPICS_API_KEYS": "ops-key"}
AUTH = {"Authorization": "Bearer ops-key"}


def preflight(
    origin: str, method: str = "POST", headers: str = "authorization, content-type"
) -> dict[str, str]:
    """A browser's preflight of a ``method`` request with ``headers`` from ``origin``."""
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


@pytest.fixture
def cors_client(make_client: Callable[..., httpx.AsyncClient]) -> Callable[[str], httpx.AsyncClient]:
    def make(origins: str) -> httpx.AsyncClient:
        client: httpx.AsyncClient = make_client({**KEYS, "TOPICS_CORS_ORIGINS": origins})
        return client

    return make


async def test_off_by_default_no_header_and_options_is_405(
    make_client: Callable[..., httpx.AsyncClient],
) -> None:
    async with make_client(KEYS) as client:
        r = await client.options("/v0/topics/t", headers=preflight(APP))
        assert r.status_code == 405 and not cors_headers(r)
        r = await client.put("/v0/topics/t", json={}, headers={**AUTH, "Origin": APP})
        assert r.status_code == 201 and not cors_headers(r)
        assert "vary" not in r.headers


async def test_preflight_of_an_allowed_origin_needs_no_key(
    cors_client: Callable[[str], httpx.AsyncClient],
) -> None:
    async with cors_client(f"{APP},http://localhost:5173") as client:
        for path in ("/v0/topics/t", "/v0/topics/t/diff", "/v0/watch/wid_x", "/v0/metrics", "/anything"):
            r = await client.options(path, headers=preflight(APP))
            assert r.status_code == 204, (path, r.text)
            assert r.content == b""
            assert cors_headers(r) == {
                "access-control-allow-origin": APP,
                "access-control-allow-methods": "GET, HEAD, POST, PUT, DELETE",
                "access-control-allow-headers": ALLOW_HEADERS.decode(),
                "access-control-max-age": str(MAX_AGE_S),
            }
            assert r.headers["vary"] == "origin"
        local = "http://localhost:5173"
        r = await client.options("/v0/topics/t", headers=preflight(local, "GET", "last-event-id"))
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == local
        for name in ("authorization", "content-type", "content-encoding", "idempotency-key", "last-event-id"):
            assert name in ALLOW_HEADERS.decode()


async def test_other_origins_and_plain_options_get_no_cors(
    cors_client: Callable[[str], httpx.AsyncClient],
) -> None:
    async with cors_client(APP) as client:
        for headers in (preflight(OTHER), preflight(APP.upper()), {}):
            r = await client.options("/v0/topics/t", headers=headers)
            assert r.status_code == 405, headers
            assert not cors_headers(r), headers
        # an OPTIONS that is no preflight is a plain request: its 405 is readable by the page
        r = await client.options("/v0/topics/t", headers={"Origin": APP})
        assert r.status_code == 405 and r.headers["access-control-allow-origin"] == APP
        assert "access-control-allow-methods" not in r.headers
        r = await client.get("/v0/topics", headers={**AUTH, "Origin": OTHER})
        assert r.status_code == 200 and not cors_headers(r)
        r = await client.get("/v0/topics", headers=AUTH)  # not a browser: no Origin, no CORS
        assert r.status_code == 200 and not cors_headers(r)


async def test_actual_responses_of_an_allowed_origin(cors_client: Callable[[str], httpx.AsyncClient]) -> None:
    async with cors_client(APP) as client:
        origin = {"Origin": APP}
        responses = [
            await client.post("/v0/topics/t", json={"records": [{"data": 1}]}, headers={**AUTH, **origin}),
            await client.get("/v0/topics", headers=origin),  # 401: a page can read why
            await client.get("/v0/topics/missing", headers={**AUTH, **origin}),
            await client.get("/v0/metrics", headers={**AUTH, **origin}),
            await client.get("/v0/openapi.json", headers=origin),
            await client.get("/v0/health", headers={**origin, "Accept-Encoding": "gzip"}),
        ]
        assert [r.status_code for r in responses] == [201, 401, 404, 200, 200, 200]
        for r in responses:
            assert r.headers["access-control-allow-origin"] == APP, r.request.url
            assert "origin" in r.headers.get_list("vary"), r.request.url
            exposed = r.headers["access-control-expose-headers"]
            assert "retry-after" in exposed and "www-authenticate" in exposed
            assert "access-control-allow-methods" not in r.headers
        assert responses[0].json()["count"] == 1
        # a shared response (the served contract) is not changed for the next caller
        r = await client.get("/v0/openapi.json")
        assert not cors_headers(r)


async def test_any_origin(cors_client: Callable[[str], httpx.AsyncClient]) -> None:
    async with cors_client("*") as client:
        r = await client.options("/v0/topics/t", headers=preflight(OTHER, "DELETE"))
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "*"
        assert "vary" not in r.headers
        r = await client.get("/v0/topics", headers={**AUTH, "Origin": OTHER})
        assert r.headers["access-control-allow-origin"] == "*"
        assert "vary" not in r.headers


async def test_preflights_are_counted_apart(cors_client: Callable[[str], httpx.AsyncClient]) -> None:
    async with cors_client(APP) as client:
        await client.options("/v0/topics/t", headers=preflight(APP))
        await client.options("/v0/topics/t", headers=preflight(OTHER))
        text = (await client.get("/v0/metrics", headers=AUTH)).text
    assert 'topics_http_requests_total{operation="cors_preflight",status="204"} 1.0' in text
    assert 'topics_http_requests_total{operation="unmatched",status="405"} 1.0' in text


async def test_sse_stream_of_an_allowed_origin_over_the_native_transport() -> None:
    """An ``EventSource`` on another origin: the stream's head carries the CORS headers; a
    preflight on the wire is a 204 without ``Content-Length``."""
    async with native_server(ManualClock(), {"TOPICS_CORS_ORIGINS": APP}) as (port, _, _, http):
        await http.put("/v0/topics/t", json={})
        wid = (await http.post("/v0/watch", json={"topics": {"t": {"from_seq": 0}}})).json()["wid"]
        r = await http.options(f"/v0/watch/{wid}", headers=preflight(APP, "GET", "last-event-id"))
        assert r.status_code == 204 and "content-length" not in r.headers
        stream = await SseStream.open(port, f"/v0/watch/{wid}", {"Origin": APP})
        assert stream.status == 200
        assert stream.headers["access-control-allow-origin"] == APP
        assert stream.headers["content-type"].startswith("text/event-stream")
        stream.close()
        plain = await SseStream.open(port, f"/v0/watch/{wid}", {"Origin": OTHER})
        assert plain.status == 200 and "access-control-allow-origin" not in plain.headers
        plain.close()


async def test_served_document_has_no_options(client: httpx.AsyncClient) -> None:
    """``OPTIONS`` is the transport's business, like ``HEAD``: the contract lists none."""
    paths = (await client.get("/v0/openapi.json")).json()["paths"]
    assert not [p for p, item in paths.items() if "options" in item]
