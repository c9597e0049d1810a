"""How the console's files are served (``topics_server.console``): the page with a strict CSP and
``no-cache``, each asset at a content-hashed URL with immutable caching, module imports rewritten
to hashed names, only the allowlisted files, public even with keys and ``TOPICS_PROBE_AUTH``."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from topics_server import console

from tests.server.processes import NO_THROTTLE, TOPICS, ServerProcess, free_port


def _assets(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="(/console/assets/[^"]+)"', page)


def test_the_page_has_a_strict_csp_and_is_revalidated(server: ServerProcess) -> None:
    for path in ("/console", "/console/"):
        r = httpx.get(f"{server.url}{path}")
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        assert r.headers["cache-control"] == "no-cache"
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        # nothing inline for the CSP to refuse: no inline script, style element or attribute
        assert not re.search(r"<script(?![^>]*\bsrc=)", r.text)
        assert "<style" not in r.text and "style=" not in r.text
        assert "http://" not in r.text.replace("http://www.w3.org", "") and "https://" not in r.text


def test_assets_are_served_by_content_hash_with_immutable_caching(server: ServerProcess) -> None:
    page = httpx.get(f"{server.url}/console").text
    assets = _assets(page)
    assert {re.sub(r"\.[0-9a-f]{12}\.", ".", a.rsplit("/", 1)[1]) for a in assets} == {
        "app.js",
        "console.css",
        "icon.svg",
    }
    for asset in assets:
        r = httpx.get(f"{server.url}{asset}", headers={"accept-encoding": "identity"})
        assert r.status_code == 200, asset
        assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
        digest = re.search(r"\.([0-9a-f]{12})\.\w+$", asset)
        assert digest is not None and hashlib.sha256(r.content).hexdigest()[:12] == digest.group(1)


def test_module_imports_point_at_hashed_modules_that_are_served(server: ServerProcess) -> None:
    (app,) = [a for a in _assets(httpx.get(f"{server.url}/console").text) if a.endswith(".js")]
    seen: set[str] = set()
    todo = [app]
    while todo:
        path = todo.pop()
        seen.add(path)
        text = httpx.get(f"{server.url}{path}").text
        for imported in re.findall(r'from "\./([^"]+)"', text):
            assert re.fullmatch(r"[a-z]+\.[0-9a-f]{12}\.js", imported), imported
            target = f"/console/assets/{imported}"
            if target not in seen:
                todo.append(target)
    assert len(seen) == len([f for f in console.FILES if f.endswith(".js")])


@pytest.mark.parametrize(
    "path",
    [
        "/console/app.js",
        "/console/assets/app.js",
        "/console/assets/app.000000000000.js",
        "/console/assets/../console.py",
        "/console/index.html",
        "/console/package.json",
        "/console/assets/package.json",
    ],
)
def test_nothing_else_under_console_is_served(server: ServerProcess, path: str) -> None:
    r = httpx.get(f"{server.url}{path}")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_only_get_and_head(server: ServerProcess) -> None:
    assert httpx.head(f"{server.url}/console").status_code == 200
    r = httpx.post(f"{server.url}/console")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"


def _ready(url: str) -> bool:
    try:
        return httpx.get(url, headers={"Authorization": "Bearer k"}, timeout=0.5).status_code == 200
    except httpx.TransportError:
        return False


def test_the_files_are_public_with_keys_and_probe_auth(tmp_path: Path) -> None:
    """A real server whose probes need a key too: the console's files still need none (the
    page asks for the key before it reads anything), the data and the probes do."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOPICS_")}
    env.update(
        TOPICS_PORT=str(port),
        TOPICS_DATA_DIR=str(tmp_path / "data"),
        TOPICS_API_KEYS="k:read",
        TOPICS_PROBE_AUTH="true",
        **NO_THROTTLE,
    )
    base = f"http://127.0.0.1:{port}"
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen([str(TOPICS), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not _ready(f"{base}/readyz"):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.05)
        page = httpx.get(f"{base}/console")
        assert page.status_code == 200
        for asset in _assets(page.text):
            assert httpx.get(f"{base}{asset}").status_code == 200
        assert httpx.get(f"{base}/v0/topics").status_code == 401  # the data needs the key
        assert httpx.get(f"{base}/v0/health").status_code == 401  # and so do the probes
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_hashed_names_follow_the_bytes() -> None:
    assert console.hashed_name("app.js", b"x") == f"app.{hashlib.sha256(b'x').hexdigest()[:12]}.js"
    index, assets = console.built()
    for name, (hashed, body) in assets.items():
        assert hashed == console.hashed_name(name, body)
        assert f'"./{name}"' not in body.decode()  # every import rewritten
    assert b'"/console/app.js"' not in index
