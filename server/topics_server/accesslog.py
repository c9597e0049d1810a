"""The access log (``TOPICS_ACCESS_LOG=true``): one line per request on the logger
``topics.access``, written once the request is over — a plain request when its response is
ready, a stream (SSE, WebSocket) when it ends.

A line says the method, the route template (``/v0/topics/{topic}`` — never the path as sent, so
no topic name, and never the query string, so never a ``?token=``), the status, the duration,
the body bytes sent and the key's id (its position in ``TOPICS_API_KEYS``; ``-`` without one).
Never a key, never a header, never a payload. Plain::

    POST /v0/topics/{topic} 201 0.214ms 96B key=#2 op=append_records

and with ``TOPICS_LOG_FORMAT=json`` the same as fields: ``method``, ``route``, ``status``,
``duration_ms``, ``bytes``, ``key_id`` (``null`` without a key) and ``operation``.

Off by default: a line costs about a quarter of a small write's handling (docs/DECISIONS.md,
"Logs"). The record is made and handed to the logger's handlers directly (no caller lookup: the
line says where it comes from), and only when the logger is enabled for ``info`` — so an app
embedding the ASGI app keeps control through its own logging configuration.
"""

from __future__ import annotations

import logging

ACCESS_LOGGER = "topics.access"
_MESSAGE = "%s %s %d %.3fms %dB key=%s op=%s"


class AccessLog:
    """Writes the lines (made only when the access log is on)."""

    __slots__ = ("log",)

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or logging.getLogger(ACCESS_LOGGER)

    def request(
        self,
        method: str,
        route: str,
        operation: str,
        status: int,
        seconds: float,
        nbytes: int,
        key_id: int | None,
    ) -> None:
        log = self.log
        if not log.isEnabledFor(logging.INFO):
            return
        ms = round(seconds * 1000, 3)
        key = "-" if key_id is None else f"#{key_id}"
        args = (method, route, status, ms, nbytes, key, operation)
        record = log.makeRecord(
            log.name,
            logging.INFO,
            __file__,
            0,
            _MESSAGE,
            args,
            None,
            extra={
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": ms,
                "bytes": nbytes,
                "key_id": key_id,
                "operation": operation,
            },
        )
        log.handle(record)
