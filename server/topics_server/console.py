"""The web console: a single-page application at ``/console``, served from files in this package.

The page is a client of ``/v0`` like any other (it sends the operator's key as
``Authorization: Bearer``, reads the served contract for each operation's scopes, and calls
only public operations); this module only serves its static files, which hold no data:

``/console`` and ``/console/``
    ``index.html``, with ``Cache-Control: no-cache`` (it names the current assets) and a strict
    Content-Security-Policy (:data:`CSP`: scripts, styles, images and connections from this
    origin only; no inline script or style; no framing, no forms posting elsewhere).
``/console/assets/<name>.<hash>.<ext>``
    Each asset of :data:`FILES` at a URL that carries the first 12 hex digits of the SHA-256 of
    its served bytes, with ``Cache-Control: public, max-age=31536000, immutable``: a new
    release changes the URL, so a browser never runs a stale script against a newer server.

Content hashes are computed once, when the first console app of the process is built, from the
package's files: an ES module that imports another (``"./lib.js"``) is served with the import
rewritten to the other's hashed name, so a module's hash covers what it imports (files are
hashed in :data:`FILES` order, each after those it imports). There is no path from the URL to
the file system: only the fixed names of :data:`FILES` are served, each at exactly one path;
any other ``/console/...`` path is the route table's 404 envelope.

Public, even with ``TOPICS_PROBE_AUTH`` and while recovering (the page itself asks for the key
and shows recovery progress), like the contract (``apidocs``): matched by exact path before the
route table, counted under the ``api_docs`` pseudo-operation.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from .apidocs import Resource

PAGE = "/console"
ASSETS = f"{PAGE}/assets"
DIRECTORY = Path(__file__).with_name("console")
"""Where the files are (package data of ``topics_server``)."""

FILES: dict[str, bytes] = {
    "lib.js": b"text/javascript; charset=utf-8",
    "api.js": b"text/javascript; charset=utf-8",
    "charts.js": b"text/javascript; charset=utf-8",
    "views.js": b"text/javascript; charset=utf-8",
    "app.js": b"text/javascript; charset=utf-8",
    "console.css": b"text/css; charset=utf-8",
    "icon.svg": b"image/svg+xml",
}
"""Every asset, in hashing order (a module after the modules it imports), with its content type."""
INDEX = "index.html"

CSP = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    b"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE_HEADERS = (
    (b"content-security-policy", CSP),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
_IMMUTABLE = b"public, max-age=31536000, immutable"
_NO_CACHE = b"no-cache"
_HASH_DIGITS = 12


def hashed_name(name: str, body: bytes) -> str:
    """``app.js`` → ``app.<12 hex digits of sha256(body)>.js``."""
    stem, _, ext = name.rpartition(".")
    return f"{stem}.{hashlib.sha256(body).hexdigest()[:_HASH_DIGITS]}.{ext}"


def _rewrite(text: bytes, names: dict[str, str]) -> bytes:
    """``text`` with every quoted reference to an asset (``"./lib.js"``, ``"/console/app.js"``)
    pointing at its hashed name."""
    for name, hashed in names.items():
        text = text.replace(f'"./{name}"'.encode(), f'"./{hashed}"'.encode())
        text = text.replace(f'"{PAGE}/{name}"'.encode(), f'"{ASSETS}/{hashed}"'.encode())
    return text


@cache
def built(directory: Path = DIRECTORY) -> tuple[bytes, dict[str, tuple[str, bytes]]]:
    """The page and every asset as served: ``(index_html, {name: (hashed_name, body)})``
    (read and hashed once per process)."""
    names: dict[str, str] = {}
    assets: dict[str, tuple[str, bytes]] = {}
    for name in FILES:
        body = _rewrite((directory / name).read_bytes(), names)
        names[name] = hashed_name(name, body)
        assets[name] = (names[name], body)
    return _rewrite((directory / INDEX).read_bytes(), names), assets


def console_resources() -> dict[str, Resource]:
    """Every path served here: the page (twice) and each asset at its hashed URL."""
    index, assets = built()
    page = Resource(b"text/html; charset=utf-8", _NO_CACHE, lambda: index, extra_headers=_PAGE_HEADERS)
    served = {PAGE: page, f"{PAGE}/": page}
    for name, (hashed, body) in assets.items():
        content_type = FILES[name]
        served[f"{ASSETS}/{hashed}"] = Resource(
            content_type,
            _IMMUTABLE,
            (lambda b: lambda: b)(body),
            compressible=content_type.startswith((b"text/", b"image/svg")),
        )
    return served
