"""The served contract and docs page (``topics_server.apidocs``): ``/v0/openapi.json`` and
``.yaml`` are the document the server runs on, ``/docs`` is Swagger UI from local assets only,
nothing else under ``/docs`` is reachable, no key is needed — and, in headless Chromium against
a real ``topics serve``, the page renders every operation of the document."""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml
from topics_engine import Engine, ManualClock
from topics_server import apidocs
from topics_server.app import build
from topics_server.request import Request
from topics_server.responses import Response
from topics_server.settings import load_settings
from topics_server.spec import SPEC_PATH, load_document

from .conftest import assert_error
from .processes import ServerProcess

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
ASSET_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}


def _operations() -> set[tuple[str, str, str, str]]:
    """(method, path, operationId, summary) of every operation in the document."""
    return {
        (method, path, op["operationId"], op.get("summary", ""))
        for path, item in load_document()["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS
    }


def _asset_urls(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', page)


# -- the contract ---------------------------------------------------------------------------------


async def test_openapi_json_is_the_yaml_document(client: httpx.AsyncClient) -> None:
    r = await client.get("/v0/openapi.json")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == yaml.safe_load(SPEC_PATH.read_text()) == load_document()


async def test_openapi_yaml_is_the_served_document(client: httpx.AsyncClient) -> None:
    r = await client.get("/v0/openapi.yaml")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/yaml"
    assert yaml.safe_load(r.content) == (await client.get("/v0/openapi.json")).json()


async def test_the_served_document_states_the_configured_limits(
    make_client: Callable[..., httpx.AsyncClient],
) -> None:
    """docs/DECISIONS.md, "The served spec is exact": the runtime limits appear
    as the configured values, and a request over one is refused as the document says."""
    env = {
        "TOPICS_MAX_BATCH_RECORDS": "5",
        "TOPICS_MAX_TAG_BYTES": "10",
        "TOPICS_MAX_NODE_BYTES": "7",
        "TOPICS_MAX_WATCH_TOPICS": "3",
    }
    async with make_client(env) as c:
        served = (await c.get("/v0/openapi.json")).json()
        schemas = served["components"]["schemas"]
        assert schemas["AppendRequest"]["properties"]["records"]["maxItems"] == 5
        assert schemas["RecordIn"]["properties"]["tag"]["maxLength"] == 10
        assert schemas["RecordIn"]["properties"]["node"]["maxLength"] == 7
        assert schemas["ClaimRequest"]["properties"]["node"]["maxLength"] == 7
        assert schemas["WatchRequest"]["properties"]["topics"]["maxProperties"] == 3
        assert yaml.safe_load((await c.get("/v0/openapi.yaml")).content) == served
        ok = await c.post("/v0/topics/t", json={"records": [{"data": 1, "tag": "é" * 10}] * 5})
        assert ok.status_code == 201, ok.text
        assert_error(
            await c.post("/v0/topics/t", json={"records": [{"data": 1}] * 6}), 400, "batch_too_large"
        )
        assert_error(
            await c.post("/v0/topics/t", json={"records": [{"data": 1, "tag": "é" * 11}]}),
            400,
            "invalid_request",
        )


async def test_bodies_are_gzip_encoded_only_when_accepted(client: httpx.AsyncClient) -> None:
    zipped = await client.get("/v0/openapi.json", headers={"accept-encoding": "gzip"})
    plain = await client.get("/v0/openapi.json", headers={"accept-encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert zipped.headers["vary"] == plain.headers["vary"] == "accept-encoding"
    assert int(zipped.headers["content-length"]) < int(plain.headers["content-length"]) // 2
    assert zipped.json() == plain.json()


# -- the page and its assets ----------------------------------------------------------------------


async def test_docs_page_uses_only_local_assets(client: httpx.AsyncClient) -> None:
    for path in ("/docs", "/docs/"):
        r = await client.get(path)
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        page = r.text
        assert 'url: "/v0/openapi.json"' in page and "SwaggerUIBundle(" in page
        urls = _asset_urls(page)
        assert urls and all(u.startswith("/docs/") for u in urls), urls
        assert "//" not in "".join(urls) and "http" not in "".join(urls)  # no CDN, no other host


async def test_every_asset_of_the_page_is_served_with_its_type(client: httpx.AsyncClient) -> None:
    urls = _asset_urls((await client.get("/docs")).text)
    assert {u.rsplit("/", 1)[1] for u in urls} == set(apidocs.PACKAGE_FILES)
    for url in urls:
        r = await client.get(url)
        assert r.status_code == 200, url
        assert r.headers["content-type"].split(";")[0] == ASSET_TYPES[Path(url).suffix], url
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.content == (apidocs.package_dir() / url.rsplit("/", 1)[1]).read_bytes()
    bundle = await client.get("/docs/swagger-ui-bundle.js")
    assert b"SwaggerUIBundle" in bundle.content


async def test_head_answers_the_headers_without_a_body(client: httpx.AsyncClient) -> None:
    r = await client.head("/docs")
    assert r.status_code == 200 and r.content == b""
    assert r.headers["content-type"] == "text/html; charset=utf-8"


async def test_other_methods_are_405_with_allow(client: httpx.AsyncClient) -> None:
    for method, path in [("POST", "/docs"), ("DELETE", "/v0/openapi.json"), ("PUT", "/docs/swagger-ui.css")]:
        r = await client.request(method, path)
        error = assert_error(r, 405, "method_not_allowed")
        assert error["detail"] == {"method": method, "allowed": ["GET", "HEAD"]}
        assert r.headers["allow"] == "GET, HEAD"


def _app_handle(path: str, method: str = "GET") -> Response:
    """``path`` as the transports hand it to the app: raw, not normalized by a client."""
    settings = load_settings({})
    app, _ = build(settings, Engine(ManualClock(), settings.limits))
    out = app.handle(Request(method, path, b"", []))
    assert isinstance(out, Response)
    return out


TRAVERSALS = [
    "/docs/../../etc/passwd",
    "/docs/%2e%2e/%2e%2e/etc/passwd",
    "/docs/..%2f..%2fetc%2fpasswd",
    "/docs/swagger-ui.css/../../../../etc/passwd",
    "/docs//etc/passwd",
    "/docs/%2Fetc%2Fpasswd",
    "/docs/static/swagger-ui.css",
    "/docs/swagger-editor-bundle.js",  # in the package, not in the allowlist
    "/docs/../core.py",
    "/docs/%73wagger-ui.css",
    "/docs/index.html",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_nothing_else_under_docs_is_served(path: str) -> None:
    out = _app_handle(path)
    assert out.status == 404
    assert b'"code":"not_found"' in out.joined()


def test_traversal_over_a_real_socket_is_404(tmp_path: Path) -> None:
    """The native transport hands the path to the app as sent (no client normalizes it)."""
    with ServerProcess(tmp_path / "data") as server:
        port = server.port

        async def raw(path: str) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
            data = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return data

        for path in TRAVERSALS[:4]:
            answer = asyncio.run(raw(path))
            assert answer.startswith(b"HTTP/1.1 404 "), (path, answer[:200])
            assert b"root:" not in answer


# -- who may read them ------------------------------------------------------------------------


async def test_served_without_a_key_when_auth_is_on(make_client: Callable[..., httpx.AsyncClient]) -> None:
    for env in ({"TOPICS_API_KEYS": "k"}, {"TOPICS_API_KEYS": "k", "TOPICS_PROBE_AUTH": "true"}):
        async with make_client(env) as client:
            assert_error(await client.get("/v0/topics"), 401, "unauthorized")  # auth is on
            for path in ("/v0/openapi.json", "/v0/openapi.yaml", "/docs", "/docs/swagger-ui-bundle.js"):
                r = await client.get(path)
                assert r.status_code == 200, (env, path, r.text[:200])
            wrong = await client.get("/docs", headers={"authorization": "Bearer wrong"})
            assert wrong.status_code == 200  # not looked at


def test_served_while_recovering(tmp_path: Path) -> None:
    app, ctx = build(load_settings({"TOPICS_DATA_DIR": str(tmp_path / "data")}))
    assert not ctx.ready  # a durable server not started yet: replaying its log
    out = app.handle(Request("GET", "/v0/topics", b"", []))
    assert isinstance(out, Response) and out.status == 503
    for path in ("/v0/openapi.json", "/docs"):
        out = app.handle(Request("GET", path, b"", []))
        assert isinstance(out, Response) and out.status == 200


# -- in a browser -------------------------------------------------------------------------------


def _chromium() -> str:
    """The browser, or skip — but never in CI, where ``scripts/setup.sh`` installs it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "chromium is not installed (scripts/setup.sh installs Debian's package when run as root)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the browser test")
        pytest.skip(reason)
    return found


_OPBLOCK = re.compile(
    r'<div class="opblock opblock-(\w+)[^"]*" id="operations-[^"]*?-(\w+)">.*?'
    r'data-path="([^"]*)".*?<div class="opblock-summary-description">(.*?)</div>',
    re.S,
)


def test_the_docs_page_renders_every_operation_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    # auth on: the page and the document it loads must not need a key
    with ServerProcess(tmp_path / "data", {"TOPICS_API_KEYS": "k"}) as server:
        base = server.url
        started = time.monotonic()
        done = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                f"--user-data-dir={tmp_path / 'chromium'}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                f"{base}/docs",
            ],
            capture_output=True,
            timeout=60,
        )
        elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    dom = done.stdout.decode()
    assert "Failed to load API definition" not in dom and "Unable to render" not in dom, dom[:2000]
    rendered = {
        (method, html.unescape(path), op_id, html.unescape(summary))
        for method, op_id, path, summary in _OPBLOCK.findall(dom)
    }
    expected = _operations()
    assert len(expected) > 20
    assert rendered == expected, (sorted(expected - rendered), sorted(rendered - expected))
    assert 'data-path="/v0/topics/{topic}/diff"' in dom  # the example the issue names
    assert elapsed < 30, f"the browser took {elapsed:.1f}s"


async def test_patterns_end_at_the_end_of_the_value(client: httpx.AsyncClient) -> None:
    """JSON Schema's ``$`` is the end of the input (Python's also matches before a final
    newline): a name, wid or stream id with a trailing newline is outside its pattern, 400."""
    assert_error(await client.post("/v0/topics/a%0A/diff", json={}), 400, "invalid_request")
    assert_error(await client.get("/v0/watch/wid_abc%0A"), 400, "invalid_request")
    r = await client.post("/v0/watch", json={"topics": {"a": {}}, "cursor": "eyJhIjoxfQ\n"})
    assert_error(r, 400, "invalid_request")
