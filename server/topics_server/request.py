"""A received HTTP request, as both transports hand it to the app: the native HTTP/1.1 server
(``http``) and the ASGI adapter (``asgi``).

``body`` is the whole request body, read by the transport under ``TOPICS_MAX_BODY_BYTES``; a
body over the limit is not kept (``body_too_large``), so the 413 is answered where the handler
asks for its body — after, e.g., a queue endpoint's 404/409.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("topics.server")


@dataclass(slots=True)
class Request:
    method: str
    path: str
    """The path of the request target as sent: percent-encoding kept, no query, each byte one
    character (latin-1). Not decoded, because the route table splits it on ``/`` first and
    then decodes each parameter segment (``/v0/topics/a%2Fb`` names the topic ``a/b``; decoded
    first, ``x%2Fwork`` would become topic ``x``'s work stream). Literal segments and the
    served docs' paths are matched as sent, so ``/v0/%74opics`` is a 404."""
    query_string: bytes
    headers: list[tuple[bytes, bytes]]
    """As received, in arrival order (names in any case)."""
    body: bytes = b""
    body_too_large: bool = False
    started: float = field(default_factory=time.perf_counter)
    apply_later: list[Callable[[], None]] | None = None
    """Set by a transport that writes the answer itself (HTTP/1.1) for as long as the app
    handles this request: work that may wait until the answer is written (an append's apply
    step, behind its WAL write) is left here, and the transport runs it right after writing
    the answer, before it handles anything else. ``None`` (the other transports, and after):
    such work runs at once."""
    _by_name: dict[str, str] | None = None

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = {}
            for k, v in reversed(self.headers):
                by_name[k.decode("latin-1").lower()] = v.decode("latin-1")
        return by_name.get(name.lower())

    @property
    def accepts_gzip(self) -> bool:
        """Whether ``Accept-Encoding`` allows gzip (``gzip`` or ``*`` listed without ``q=0``)."""
        value = self.header("accept-encoding")
        if not value:
            return False
        for item in value.lower().split(","):
            coding, _, params = item.strip().partition(";")
            if coding.strip() in ("gzip", "*"):
                q = params.strip()
                if q.startswith("q="):
                    try:
                        return float(q[2:]) > 0
                    except ValueError:
                        return False
                return True
        return False


def run_after_answer(work: list[Callable[[], None]]) -> None:
    """Run what a request left in :attr:`Request.apply_later`, in order: right after its answer
    is written — or, when the answer waits (an awaited reply), right after the handler handed
    back that wait. Either way the outcome is settled, so a failure is logged (with its
    traceback) and the rest still runs."""
    for step in work:
        try:
            step()
        except Exception:  # noqa: BLE001 — the answer is settled; the next step must still run
            log.exception("work a request left for after its answer failed")
