"""The engine's error hierarchy: one class per wire ``error.code``.

Every class carries its HTTP status and stable ``code``; the server maps them to the
contract's envelope (``{"error": {"code", "message", "detail"}}``) in exactly one place.
Messages say how to fix the problem; ``detail`` is structured context for programs.
"""

from __future__ import annotations

from typing import Any, ClassVar


class TopicsError(Exception):
    """Base of every error that reaches a client as an envelope."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class InvalidRequest(TopicsError):
    status, code = 400, "invalid_request"


class BatchTooLarge(TopicsError):
    status, code = 400, "batch_too_large"


class RecordTooLarge(TopicsError):
    status, code = 400, "record_too_large"


class Unauthorized(TopicsError):
    status, code = 401, "unauthorized"


class Forbidden(TopicsError):
    status, code = 403, "forbidden"


class TopicNotFound(TopicsError):
    status, code = 404, "topic_not_found"

    def __init__(self, topic: str) -> None:
        super().__init__(
            f'topic "{topic}" does not exist; create it with PUT /v0/topics/{topic} '
            "or write to it with auto-create enabled",
            {"topic": topic},
        )


class RouterNotFound(TopicsError):
    status, code = 404, "router_not_found"


class NotFound(TopicsError):
    status, code = 404, "not_found"


class MethodNotAllowed(TopicsError):
    status, code = 405, "method_not_allowed"


class NotAcceptable(TopicsError):
    status, code = 406, "not_acceptable"


class RouterCycle(TopicsError):
    status, code = 409, "router_cycle"


class TopicExistsIncompatible(TopicsError):
    status, code = 409, "topic_exists_incompatible"


class TopicNotEmpty(TopicsError):
    status, code = 409, "topic_not_empty"


class NotAQueue(TopicsError):
    status, code = 409, "not_a_queue"


class PayloadTooLarge(TopicsError):
    status, code = 413, "payload_too_large"


class UnsupportedMediaType(TopicsError):
    status, code = 415, "unsupported_media_type"


class TopicFull(TopicsError):
    status, code = 422, "topic_full"


class Throttled(TopicsError):
    status, code = 429, "throttled"


class Internal(TopicsError):
    status, code = 500, "internal"


class NotReady(TopicsError):
    status, code = 503, "not_ready"


class ShuttingDown(TopicsError):
    status, code = 503, "shutting_down"


def all_error_classes() -> list[type[TopicsError]]:
    """Every concrete wire error, for the spec/status agreement test."""
    return list(TopicsError.__subclasses__())
