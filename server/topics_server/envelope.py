"""The one place where failures become the contract's error envelope (§0.5).

Every non-2xx response is ``{"error": {"code", "message", "detail"?}, "performance": {...}}``.
Engine errors carry their own code and status; framework errors (connexion problems, Starlette
HTTP exceptions, unknown routes and methods) are mapped here; anything else is a 500 ``internal``
with no stack trace in the body (it is logged server-side).
"""

from __future__ import annotations

import logging
from typing import Any

from connexion.exceptions import ProblemException
from starlette.exceptions import HTTPException
from topics_engine.errors import (
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    TopicsError,
    UnsupportedMediaType,
)

log = logging.getLogger("topics.server")

_STATUS_TO_ERROR: dict[int, type[TopicsError]] = {
    400: InvalidRequest,
    404: NotFound,
    405: MethodNotAllowed,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
}


def to_topics_error(exc: BaseException) -> TopicsError:
    """Map any exception to the engine error that describes it to a client."""
    if isinstance(exc, TopicsError):
        return exc
    if isinstance(exc, ProblemException):
        return _from_status(exc.status, str(exc.detail or exc.title or "request rejected"))
    if isinstance(exc, HTTPException):
        return _from_status(exc.status_code, exc.detail)
    log.error("unhandled error", exc_info=exc)
    return TopicsError("internal error; the server logged the details")


def _from_status(status: int, message: str) -> TopicsError:
    cls = _STATUS_TO_ERROR.get(status)
    if cls is None:
        return TopicsError(message)
    return cls(message)


def error_body(err: TopicsError) -> dict[str, Any]:
    inner: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.detail is not None:
        inner["detail"] = err.detail
    return {"error": inner}
