"""CORS (``TOPICS_CORS_ORIGINS``): browser apps on another origin may call the API
(docs/DECISIONS.md, "CORS").

Off — the default, no origins configured — no CORS header is ever sent, and an ``OPTIONS``
request is the route table's ``405`` like any method the document does not list.

On, with a list of exact origins (``https://app.example.com``) or ``*``:

* a **preflight** — ``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method`` — from an
  allowed origin is answered ``204`` at once, on any path, before authentication (a browser
  never sends a key on a preflight; nothing runs): ``Access-Control-Allow-Origin``,
  ``-Allow-Methods`` (:data:`ALLOW_METHODS`), ``-Allow-Headers`` (:data:`ALLOW_HEADERS`: what
  the API reads — the key, the body's type and encoding, the idempotency key, an SSE resume
  id) and ``-Max-Age`` (:data:`MAX_AGE_S`). A preflight from another origin is no preflight to
  us: it goes on as a plain ``OPTIONS`` (``405``, no CORS header), and the browser refuses the
  call;
* every other response to a request whose ``Origin`` is allowed — errors and SSE streams
  included — carries ``Access-Control-Allow-Origin`` (the origin itself, ``Vary: Origin``; or
  ``*`` when any origin is allowed) and ``Access-Control-Expose-Headers``
  (:data:`EXPOSE_HEADERS`, so a page can read a 429's ``Retry-After``).

No ``Access-Control-Allow-Credentials``: keys travel in ``Authorization``, which a page sets
itself (no cookies). The WebSocket is not covered (browsers do not apply CORS to it).
``OPTIONS`` is not in the OpenAPI document: it is the transport's business, like ``HEAD``, and
the document states what a client calls (ruling 23).
"""

from __future__ import annotations

from .request import Request
from .responses import Response

ALLOW_METHODS = b"GET, HEAD, POST, PUT, DELETE"
ALLOW_HEADERS = b"authorization, content-type, content-encoding, accept, idempotency-key, last-event-id"
EXPOSE_HEADERS = b"retry-after, www-authenticate, allow, content-encoding"
MAX_AGE_S = 600
"""How long a browser may cache a preflight's answer (Chromium caps it at 7200)."""

_VARY = (b"vary", b"origin")


class Cors:
    """The allow-list and the headers it adds."""

    __slots__ = ("any", "origins")

    def __init__(self, origins: tuple[str, ...]) -> None:
        self.any = origins == ("*",)
        self.origins = frozenset(origins)

    def _allow_origin(self, request: Request) -> list[tuple[bytes, bytes]] | None:
        """``Access-Control-Allow-Origin`` (and ``Vary``) for the request's origin, or
        ``None`` when it has none or it is not allowed."""
        origin = request.header("origin")
        if origin is None:
            return None
        if self.any:
            return [(b"access-control-allow-origin", b"*")]
        if origin not in self.origins:
            return None
        return [(b"access-control-allow-origin", origin.encode("latin-1")), _VARY]

    def preflight(self, request: Request) -> Response | None:
        """The ``204`` answer to an allowed origin's preflight; ``None`` when ``request`` is
        not one (an ``OPTIONS`` without the preflight headers, or another origin)."""
        if request.header("access-control-request-method") is None:
            return None
        allow = self._allow_origin(request)
        if allow is None:
            return None
        return Response(
            204,
            [
                *allow,
                (b"access-control-allow-methods", ALLOW_METHODS),
                (b"access-control-allow-headers", ALLOW_HEADERS),
                (b"access-control-max-age", b"%d" % MAX_AGE_S),
            ],
            b"",
        )

    def headers(self, request: Request) -> list[tuple[bytes, bytes]] | None:
        """The headers an actual response to ``request`` gets (``None``: none)."""
        allow = self._allow_origin(request)
        if allow is None:
            return None
        allow.append((b"access-control-expose-headers", EXPOSE_HEADERS))
        return allow
