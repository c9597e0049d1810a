"""The exceptions of the topics SDK.

Every non-2xx answer raises a :class:`TopicsError` subclass chosen by the contract's
``error.code``: branch on the class (``except topics.TopicNotFound``) or on ``err.code``.
A code this SDK does not know yet (the server may add codes within ``/v0``) raises the plain
:class:`TopicsError` with that ``code`` — never a parse error. Transport failures (refused
connection, reset, timeout) raise :class:`ConnectionError`. A tombstone met by
``Client.read(on_gap="raise")`` raises :class:`DataLoss`; that one is not a server error.

>>> import topics
>>> issubclass(topics.TopicNotFound, topics.TopicsError)
True
"""

from __future__ import annotations

import builtins
import re
from typing import Any

RECORD_FIELD = re.compile(r"records\[(\d+)\]")
"""How ``detail.field`` names a record of a write: ``records[<index>]…``."""


class TopicsError(Exception):
    """A failure answered by the server in the ``{"error": {code, message, detail}}`` envelope.

    ``status`` is the HTTP status, ``code`` the stable machine-readable ``error.code``,
    ``message`` the human text (never parse it), ``detail`` the structured context (``{}`` when
    the server sent none).

    >>> err = TopicsError(404, "topic_not_found", 'topic "jobs" does not exist', {"topic": "jobs"})
    >>> (err.status, err.code, err.detail["topic"])
    (404, 'topic_not_found', 'jobs')
    """

    code: str = ""
    """The ``error.code`` this class stands for (empty on the base class)."""

    def __init__(self, status: int, code: str, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.detail: dict[str, Any] = detail or {}

    @property
    def record_index(self) -> int | None:
        """The index (in the caller's list) of the record this error is about — ``detail.index``,
        or ``i`` of ``detail.field`` ``records[i]…`` — or ``None`` when it names none.

        >>> InvalidRequest(400, "invalid_request", "too long", {"field": "records[3].tag"}).record_index
        3
        """
        index = self.detail.get("index")
        if isinstance(index, int):
            return index
        field = self.detail.get("field")
        match = RECORD_FIELD.match(field) if isinstance(field, str) else None
        return int(match[1]) if match else None


class InvalidRequest(TopicsError):
    """400 ``invalid_request``: a malformed request (bad field, type or value; ``detail`` names it)."""

    code = "invalid_request"


class BatchTooLarge(TopicsError):
    """400 ``batch_too_large``: more records (or queue seqs) in one request than the server allows."""

    code = "batch_too_large"


class RecordTooLarge(TopicsError):
    """400 ``record_too_large``: one record's data+meta, meta, tag or node is over its limit."""

    code = "record_too_large"


class Unauthorized(TopicsError):
    """401 ``unauthorized``: the API key is missing, unknown or malformed."""

    code = "unauthorized"


class Forbidden(TopicsError):
    """403 ``forbidden``: the key lacks the scope, or the name is outside its prefix allowlist."""

    code = "forbidden"


class TopicNotFound(TopicsError):
    """404 ``topic_not_found``: the topic does not exist (and the call does not create it)."""

    code = "topic_not_found"


class RouterNotFound(TopicsError):
    """404 ``router_not_found``: the router does not exist."""

    code = "router_not_found"


class ScheduleNotFound(TopicsError):
    """404 ``schedule_not_found``: the schedule does not exist."""

    code = "schedule_not_found"


class ConsumerNotFound(TopicsError):
    """404 ``consumer_not_found``: the topic has no named consumer of that name (create it with
    ``Client.put_consumer`` — an admin key — or ``topics consumer create``)."""

    code = "consumer_not_found"


class NotFound(TopicsError):
    """404 ``not_found``: an unknown or reclaimed watch session (re-create it)."""

    code = "not_found"


class MethodNotAllowed(TopicsError):
    """405 ``method_not_allowed``."""

    code = "method_not_allowed"


class NotAcceptable(TopicsError):
    """406 ``not_acceptable``: a stream opened without ``Accept: text/event-stream``."""

    code = "not_acceptable"


class RouterCycle(TopicsError):
    """409 ``router_cycle``: the router would close a directed cycle (``detail["cycle"]``)."""

    code = "router_cycle"


class TopicExistsIncompatible(TopicsError):
    """409 ``topic_exists_incompatible``: e.g. a PUT that changes an existing topic's ``type``."""

    code = "topic_exists_incompatible"


class TopicNotEmpty(TopicsError):
    """409 ``topic_not_empty``: ``delete_topic(..., if_empty=True)`` on a topic with records."""

    code = "topic_not_empty"


class NotAQueue(TopicsError):
    """409 ``not_a_queue``: a queue operation on a ``log`` topic."""

    code = "not_a_queue"


class NoDeadLetter(TopicsError):
    """409 ``no_dead_letter``: ``dead_letter()`` on a queue without a ``dead_letter`` topic."""

    code = "no_dead_letter"


class NoSuchConsumer(TopicsError):
    """409 ``no_such_consumer``: a read on behalf of a named consumer (a watch entry's
    ``consumer``) that the topic does not have."""

    code = "no_such_consumer"


class CursorBehind(TopicsError):
    """409 ``cursor_behind``: a commit below the consumer's committed cursor without ``force``
    (another reader of the same consumer committed further)."""

    code = "cursor_behind"


class CursorBeyondHead(TopicsError):
    """409 ``cursor_beyond_head``: a consumer cursor above the topic's ``head_seq``."""

    code = "cursor_beyond_head"


class PayloadTooLarge(TopicsError):
    """413 ``payload_too_large``: the request body is over the server's hard limit."""

    code = "payload_too_large"


class UnsupportedMediaType(TopicsError):
    """415 ``unsupported_media_type``."""

    code = "unsupported_media_type"


class TopicFull(TopicsError):
    """422 ``topic_full``: a write to a full ``discard: "reject"`` topic; nothing was appended."""

    code = "topic_full"


class Throttled(TopicsError):
    """429 ``throttled``: the server is under pressure or a resource cap is reached
    (``detail["limit"]``). ``retry_after`` is the server's advice in seconds (``detail.retry_after_ms``
    preferred over the ``Retry-After`` header), ``None`` when it gave none."""

    code = "throttled"

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        detail: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, code, message, detail)
        self.retry_after = retry_after


class Internal(TopicsError):
    """500 ``internal``: a server bug."""

    code = "internal"


class NotReady(TopicsError):
    """503 ``not_ready``: the server is replaying its write-ahead log, or its WAL turned
    read-only after a write failure (``detail["wal_read_only"]``, which never clears until a
    restart and is never retried)."""

    code = "not_ready"


class ShuttingDown(TopicsError):
    """503 ``shutting_down``: the server is draining before it stops."""

    code = "shutting_down"


ERRORS_BY_CODE: dict[str, type[TopicsError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        BatchTooLarge,
        RecordTooLarge,
        Unauthorized,
        Forbidden,
        TopicNotFound,
        RouterNotFound,
        ScheduleNotFound,
        ConsumerNotFound,
        NotFound,
        MethodNotAllowed,
        NotAcceptable,
        RouterCycle,
        TopicExistsIncompatible,
        TopicNotEmpty,
        NotAQueue,
        NoDeadLetter,
        NoSuchConsumer,
        CursorBehind,
        CursorBeyondHead,
        PayloadTooLarge,
        UnsupportedMediaType,
        TopicFull,
        Throttled,
        Internal,
        NotReady,
        ShuttingDown,
    )
}
"""One class per ``error.code`` of the contract (a test checks it against the spec's enum)."""


class ConnectionError(builtins.ConnectionError):  # noqa: A001 - the SDK's name for transport failures
    """The server could not be reached or the connection broke (after the client's retries,
    for calls that are retried). ``__cause__`` is the underlying ``httpx`` exception."""


class DataLoss(Exception):
    """A read crossed a tombstone: records ``gap_from..gap_to`` (inclusive) were lost to the
    topic's cap or TTL (``reason``), or the topic was deleted and re-created (``"recreated"``),
    before this reader got to them. ``missed_estimate`` approximates how many.

    >>> err = DataLoss("events", 1, 40, "cap", 40)
    >>> str(err)
    'events: records 1..40 lost before they were read (cap, ~40 records)'
    """

    def __init__(self, topic: str, gap_from: int, gap_to: int, reason: str, missed_estimate: int) -> None:
        super().__init__(
            f"{topic}: records {gap_from}..{gap_to} lost before they were read "
            f"({reason}, ~{missed_estimate} records)"
        )
        self.topic = topic
        self.gap_from = gap_from
        self.gap_to = gap_to
        self.reason = reason
        self.missed_estimate = missed_estimate


def error_from_envelope(status: int, body: Any) -> TopicsError:
    """The exception for one error response: ``body`` is the parsed JSON (anything: a proxy may
    answer with HTML, then the code is ``http_<status>``). The transport fills in
    :attr:`Throttled.retry_after` (it has the headers)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return TopicsError(status, f"http_{status}", f"HTTP {status} without the error envelope", {})
    code = str(error.get("code") or f"http_{status}")
    message = str(error.get("message") or "")
    detail = error.get("detail") if isinstance(error.get("detail"), dict) else {}
    return ERRORS_BY_CODE.get(code, TopicsError)(status, code, message, detail)
