"""A received HTTP request, as both transports hand it to the app: the native HTTP/1.1 server
(``http``) and the ASGI adapter (``asgi``).

``body`` is the whole request body, read by the transport under ``TOPICS_MAX_BODY_BYTES``; a
body over the limit is not kept (``body_too_large``), so the 413 is answered where the handler
asks for its body — after, e.g., a queue endpoint's 404/409.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class Request:
    method: str
    path: str
    """Percent-decoded path."""
    query_string: bytes
    headers: list[tuple[bytes, bytes]]
    """Header names lower-cased, in arrival order."""
    body: bytes = b""
    body_too_large: bool = False
    started: float = field(default_factory=time.perf_counter)

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        key = name.lower().encode()
        for k, v in self.headers:
            if k == key:
                return v.decode("latin-1")
        return None

    @property
    def accepts_gzip(self) -> bool:
        """Whether ``Accept-Encoding`` allows gzip (``gzip`` or ``*`` listed without ``q=0``)."""
        for key, value in self.headers:
            if key == b"accept-encoding":
                for item in value.lower().split(b","):
                    coding, _, params = item.strip().partition(b";")
                    if coding.strip() in (b"gzip", b"*"):
                        q = params.strip()
                        if q.startswith(b"q="):
                            try:
                                return float(q[2:]) > 0
                            except ValueError:
                                return False
                        return True
        return False
