"""The engine's error hierarchy: one class per wire ``error.code`` the engine can raise.

Errors carry a stable ``code``, a ``message`` that says how to fix the problem, and an optional
structured ``detail``. They carry no HTTP status: the server maps codes to statuses (and to the
contract's envelope) in exactly one place, ``topics_server.wire``. Errors that only the HTTP
layer can raise (unknown method, media type, body size, authentication) live in
``topics_server.errors``.
"""

from __future__ import annotations

from typing import Any, ClassVar


class TopicsError(Exception):
    """Base of every error that reaches a client as an envelope."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class InvalidRequest(TopicsError):
    code = "invalid_request"


class BatchTooLarge(TopicsError):
    code = "batch_too_large"


class RecordTooLarge(TopicsError):
    code = "record_too_large"


class TopicNotFound(TopicsError):
    code = "topic_not_found"

    def __init__(self, topic: str) -> None:
        super().__init__(
            f'topic "{topic}" does not exist; create it with PUT /v0/topics/{topic} '
            "or write to it with auto-create enabled",
            {"topic": topic},
        )


class RouterNotFound(TopicsError):
    code = "router_not_found"


class ScheduleNotFound(TopicsError):
    """A schedule that does not exist (an extension, issue 24)."""

    code = "schedule_not_found"


class ConsumerNotFound(TopicsError):
    """A named consumer that does not exist on its topic (an extension, issue 25)."""

    code = "consumer_not_found"


class NotFound(TopicsError):
    """A resource that is not a topic, router, schedule or consumer (an unknown route, a watch session)."""

    code = "not_found"


class RouterCycle(TopicsError):
    code = "router_cycle"


class TopicExistsIncompatible(TopicsError):
    code = "topic_exists_incompatible"


class TopicNotEmpty(TopicsError):
    code = "topic_not_empty"


class NotAQueue(TopicsError):
    code = "not_a_queue"


class NoDeadLetter(TopicsError):
    """An explicit dead-letter move on a queue without a ``dead_letter`` topic (an extension)."""

    code = "no_dead_letter"


class NoSuchConsumer(TopicsError):
    """A read on behalf of a named consumer the topic does not have (an extension, issue 25): the
    consumer is named in the request's body (a diff's or a watch entry's ``consumer``), and the
    request's target, the topic, exists — so a ``409``, not the ``404`` of a consumer named in the
    path (docs/DECISIONS.md, "Named consumers")."""

    code = "no_such_consumer"


class CursorBehind(TopicsError):
    """A consumer commit below its committed cursor without ``force`` (an extension, issue 25):
    a committed cursor only moves forward unless the caller says it means to rewind."""

    code = "cursor_behind"


class CursorBeyondHead(TopicsError):
    """A consumer cursor above the topic's head (an extension, issue 25): it would mark records
    read that were never written. A ``409``, not a ``400``: the request is schema-valid, only the
    topic's state makes it wrong (ruling 23; docs/DECISIONS.md, "Named consumers")."""

    code = "cursor_beyond_head"


class TopicFull(TopicsError):
    code = "topic_full"


class Throttled(TopicsError):
    code = "throttled"


def cap_reached(limit: str, maximum: int, message: str) -> Throttled:
    """The 429 of a resource cap: ``detail.limit`` names it, ``detail.max`` is its value
    (docs/DECISIONS.md, "Caps"); the message says what is full and how to make room."""
    return Throttled(f"{message} (the {limit} cap is {maximum})", {"limit": limit, "max": maximum})


class Internal(TopicsError):
    code = "internal"


class NotReady(TopicsError):
    """The engine cannot serve this now: recovering, or its write-ahead log turned read-only.

    ``detail.wal_read_only`` marks the second case: it does not clear until a restart, so
    clients must not retry it (no ``Retry-After``)."""

    code = "not_ready"


class ShuttingDown(TopicsError):
    code = "shutting_down"


def error_classes(base: type[TopicsError] = TopicsError) -> list[type[TopicsError]]:
    """Every concrete error class below ``base`` (recursively), for the agreement tests."""
    found: list[type[TopicsError]] = []
    for cls in base.__subclasses__():
        found.append(cls)
        found.extend(error_classes(cls))
    return found
