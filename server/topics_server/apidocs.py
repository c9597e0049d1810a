"""The served contract and its interactive reference, beside the ``/v0`` API (not operations of it).

What is served (``GET`` and ``HEAD``; another method is a 405 envelope with ``Allow``):

``/v0/openapi.json``
    The OpenAPI document the server loaded, validated and built its routes from
    (``spec.SPEC_PATH``, ``TOPICS_OPENAPI_PATH`` when set), with each runtime limit stated as
    configured (``spec.served_document``): it describes exactly what this server accepts.
``/v0/openapi.yaml``
    The same document as YAML.
``/docs`` (and ``/docs/``)
    A Swagger UI page that renders ``/v0/openapi.json``, with "Try it out" against this server.
``/docs/<file>``
    The page's scripts, style sheet and icons, out of the ``swagger-ui-py`` package installed
    with the server (Swagger UI 5: it renders OpenAPI 3.1, which the 4.x of ``swagger-ui-bundle``
    refuses) — no CDN, the page works offline. Only the fixed :data:`PACKAGE_FILES` are served,
    each at exactly one path: there is no path from the URL to the file system, so no traversal;
    any other ``/docs/...`` path is the route table's 404 envelope.

Why these routes are public, even with ``TOPICS_PROBE_AUTH``: the document is the published
contract (the same one the SDK is generated from), with no data and no process state in it;
``TOPICS_PROBE_AUTH`` hides operational state (health, readiness, metrics). A key would also
break the page, whose browser fetches the document without one. They are answered while the
server is still recovering, too: nothing here depends on the engine.

Not in the API document: they describe the API rather than belong to it (adding them would
change the generated SDK), so they are matched by exact path before the route table.

Bodies are built once — the contract when the app is built, a package file on its first request
(then shared by every app of the process) — and gzip-encoded once, when the client accepts it.
"""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from .errors import MethodNotAllowed
from .request import Request
from .responses import Response

CONTRACT_JSON = "/v0/openapi.json"
CONTRACT_YAML = "/v0/openapi.yaml"
PAGE = "/docs"
PACKAGE = "swagger_ui"
"""The import name of ``swagger-ui-py``: Swagger UI's distribution files in ``static/``."""
PACKAGE_FILES: dict[str, bytes] = {
    "swagger-ui.css": b"text/css; charset=utf-8",
    "swagger-ui-bundle.js": b"text/javascript; charset=utf-8",
    "favicon-32x32.png": b"image/png",
    "favicon-16x16.png": b"image/png",
}
"""Every file served from the package, with its content type (the allowlist)."""
ALLOWED = ["GET", "HEAD"]

_PAGE_HTML = f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>topics /v0 API</title>
  <link rel="stylesheet" href="{PAGE}/swagger-ui.css">
  <link rel="icon" type="image/png" href="{PAGE}/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="{PAGE}/favicon-16x16.png" sizes="16x16">
  <style>body {{ margin: 0; background: #fafafa; }}</style>
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{PAGE}/swagger-ui-bundle.js" charset="utf-8"></script>
  <script>
    window.onload = function () {{
      window.ui = SwaggerUIBundle({{
        url: "{CONTRACT_JSON}",
        dom_id: "#swagger-ui",
        deepLinking: true,
        validatorUrl: null,
        presets: [SwaggerUIBundle.presets.apis],
        layout: "BaseLayout",
      }});
    }};
  </script>
</body>
</html>
""".encode()

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's dumper when PyYAML was built with it."""

_GZIP_LEVEL = 9
"""Each body is compressed once, so the smallest encoding is worth its CPU."""
_NO_CACHE = b"no-cache"
"""The page and the contract change with the server: revalidate (they are small)."""
_PACKAGE_CACHE = b"public, max-age=3600"
"""The package's files change only when the package is upgraded."""


@dataclass(slots=True)
class Resource:
    """One served body: loaded on first use, kept with its gzip encoding for every later one."""

    content_type: bytes
    cache_control: bytes
    load: Callable[[], bytes]
    compressible: bool = True
    extra_headers: tuple[tuple[bytes, bytes], ...] = ()
    """Sent with every response (the console's Content-Security-Policy)."""
    _body: bytes | None = field(default=None, init=False)
    _gzipped: bytes | None = field(default=None, init=False)

    def bodies(self) -> tuple[bytes, bytes | None]:
        """The body, and its gzip encoding (``None`` for a body not worth compressing)."""
        if self._body is None:
            body = self.load()
            if self.compressible:
                compressor = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31)
                self._gzipped = compressor.compress(body) + compressor.flush()
            self._body = body
        return self._body, self._gzipped

    def respond(self, request: Request) -> Response:
        """200 with the body (gzip-encoded when accepted), for ``HEAD`` too: the transport
        sends a ``HEAD`` response's head only, with this body's length; 405 but for
        ``GET``/``HEAD``."""
        if request.method not in ALLOWED:
            raise MethodNotAllowed(
                f"{request.method} is not allowed on {request.path}; use {', '.join(ALLOWED)}",
                {"method": request.method, "allowed": ALLOWED},
            )
        body, gzipped = self.bodies()
        headers = [
            (b"content-type", self.content_type),
            (b"cache-control", self.cache_control),
            (b"x-content-type-options", b"nosniff"),
            *self.extra_headers,
        ]
        if gzipped is not None:
            headers.append((b"vary", b"accept-encoding"))
            if request.accepts_gzip:
                headers.append((b"content-encoding", b"gzip"))
                body = gzipped
        return Response(200, headers, body)


def package_dir() -> Path:
    """Where the package's ``static/`` files are (located without importing the package,
    whose ``__init__`` loads its web-framework adapters)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {PACKAGE} package (swagger-ui-py) is not installed; reinstall topics")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def _package_file(name: str) -> Callable[[], bytes]:
    return lambda: (package_dir() / name).read_bytes()


_PACKAGE_RESOURCES: dict[str, Resource] = {
    f"{PAGE}/{name}": Resource(
        content_type, _PACKAGE_CACHE, _package_file(name), compressible=content_type.startswith(b"text/")
    )
    for name, content_type in PACKAGE_FILES.items()
}
"""Shared by every app of the process (read once)."""
_PAGE = Resource(b"text/html; charset=utf-8", _NO_CACHE, lambda: _PAGE_HTML)


def _yaml(document: dict[str, Any]) -> bytes:
    """The document as YAML (built on the first request: ~30 ms, which most apps never pay)."""
    text: str = yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    return text.encode()


def contract_resources(document: dict[str, Any]) -> dict[str, Resource]:
    """Every path served here: the contract (``document``: JSON serialized now, YAML on first
    use), the page and the package files."""
    as_json = orjson.dumps(document)
    return {
        CONTRACT_JSON: Resource(b"application/json", _NO_CACHE, lambda: as_json),
        CONTRACT_YAML: Resource(b"application/yaml", _NO_CACHE, lambda: _yaml(document)),
        PAGE: _PAGE,
        f"{PAGE}/": _PAGE,
        **_PACKAGE_RESOURCES,
    }
