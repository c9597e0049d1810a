"""What a schedule is told: a ``PUT`` body parsed into a :class:`ScheduleConfig`, a stored record
read back tolerantly, and schedule names.

Invariants of a parsed config: ``topic`` is a valid topic name; exactly one of ``cron`` (an
expression :func:`cron.parse_cron` accepts) and ``every_ms`` (:data:`EVERY_MS_MIN` ..
:data:`EVERY_MS_MAX`); ``records`` decode to a non-empty write that passes an append's checks
(``write.check_write``); ``missed`` is one of :data:`MISSED`.

A stored config (a ``SCHEDULE_PUT`` frame's or a snapshot's) is read back by
:func:`stored_schedule_config`, never by the request parser — tolerantly, as routers' and
topics' are (docs/STORAGE.md, "Stored configs are tolerant records"): a missing key takes its
default, an unknown key is kept (:attr:`ScheduleConfig.extra`) and written back, values are
taken as stored (no range rule); a ``missed`` value, a ``cron`` expression or ``records`` this
server cannot read raise ``UnsupportedFormat`` (a newer server wrote them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequest
from ..limits import Limits
from ..names import TOPIC_NAME_RE, check_topic_name
from ..records import NewRecords
from ..storage.versions import UnsupportedFormat
from .cron import Cron, parse_cron
from .timing import Every, Timing
from .write import RecordsDecoder, check_write, records_text

MISSED = ("skip", "once")
"""After downtime: ``skip`` the due times that passed, or append ``once`` for all of them."""
EVERY_MS_MIN = 100
EVERY_MS_MAX = 315_360_000_000
"""Ten years of 365 days (longer periods are a cron expression's)."""


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    """A schedule as put (the body's fields; ``records`` as JSON text)."""

    topic: str
    records: bytes
    """The ``records`` array as JSON text (``write``): what each run appends."""
    cron: str | None = None
    every_ms: int | None = None
    node: str | None = None
    """The batch-level ``node`` of each run's append, as in a write body."""
    missed: str = MISSED[0]
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    """Keys of the stored record this server does not know (a newer one's): carried through a
    ``PUT`` and written back by :meth:`to_stored`, never served."""

    def same_timing(self, other: ScheduleConfig) -> bool:
        return (self.cron, self.every_ms) == (other.cron, other.every_ms)

    def to_stored(self) -> dict[str, Any]:
        """The stored record (``SCHEDULE_PUT`` frames, snapshots), read by
        :func:`stored_schedule_config`; its key order is part of their bytes."""
        return {
            "topic": self.topic,
            "cron": self.cron,
            "every_ms": self.every_ms,
            "records": self.records.decode(),
            "node": self.node,
            "missed": self.missed,
            **self.extra,
        }


@dataclass(frozen=True, slots=True)
class Parsed:
    """A config and what it was parsed into: its timing rule's cron (``None`` for an interval)
    and the decoded records each run appends."""

    config: ScheduleConfig
    cron: Cron | None
    batch: NewRecords

    def timing(self, since_ms: int) -> Timing:
        """When the schedule is due, its interval counted from ``since_ms``."""
        if self.cron is not None:
            return self.cron
        assert self.config.every_ms is not None
        return Every(self.config.every_ms, since_ms)


def parse_schedule_config(
    fields: Mapping[str, Any], decode: RecordsDecoder, limits: Limits, now_ms: int
) -> Parsed:
    """A PUT body -> :class:`Parsed`; 400 ``invalid_request`` (or the append's own errors for the
    records: ``batch_too_large``, ``record_too_large``). Fields are checked in a fixed order
    (``topic``, ``cron``/``every_ms``, ``missed``, ``node``, ``records``), so a body with several
    faults always names the same one."""
    unknown = sorted(set(fields) - {"topic", "cron", "every_ms", "records", "node", "missed"})
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: is not a known field", {"field": unknown[0]})
    topic = fields.get("topic")
    if not isinstance(topic, str):
        raise InvalidRequest("topic is required: the topic each run appends to", {"field": "topic"})
    check_topic_name(topic)
    cron_text, every_ms = fields.get("cron"), fields.get("every_ms")
    if (cron_text is None) == (every_ms is None):
        raise InvalidRequest(
            "give exactly one of cron (a five-field cron expression, UTC) and every_ms (an interval)",
            {"field": "cron" if cron_text is None else "every_ms"},
        )
    cron = parse_cron(cron_text) if cron_text is not None else None
    if every_ms is not None:
        _check_every(every_ms)
    missed = fields.get("missed", MISSED[0])
    if missed not in MISSED:
        raise InvalidRequest('missed must be "skip" or "once"', {"field": "missed"})
    node = fields.get("node")
    text = records_text(fields.get("records"))
    batch = decode(text, node)
    check_write(batch, node, limits, now_ms)
    config = ScheduleConfig(topic, text, cron_text, every_ms, node, missed)
    return Parsed(config, cron, batch)


def _check_every(every_ms: Any) -> None:
    if isinstance(every_ms, bool) or not isinstance(every_ms, int):
        raise InvalidRequest("every_ms must be a whole number of milliseconds", {"field": "every_ms"})
    if not EVERY_MS_MIN <= every_ms <= EVERY_MS_MAX:
        raise InvalidRequest(
            f"every_ms must be from {EVERY_MS_MIN} to {EVERY_MS_MAX} (use cron for longer periods)",
            {"field": "every_ms", "value": every_ms},
        )


_STORED_KEYS = frozenset(["topic", "cron", "every_ms", "records", "node", "missed"])


def stored_schedule_config(stored: Mapping[str, Any], schedule: str, decode: RecordsDecoder) -> Parsed:
    """A stored schedule record -> :class:`Parsed`, tolerantly (recovery, never requests).

    ``topic``, ``records`` and one of ``cron``/``every_ms`` are required (``ValueError`` naming
    the schedule otherwise: a schedule is nothing without them); values are taken as stored.
    A ``missed`` value this server does not know, or a ``cron`` or ``records`` it cannot read,
    raises :class:`UnsupportedFormat`: read as something else, the schedule would append what
    or when its writer never meant."""
    topic, text = stored.get("topic"), stored.get("records")
    cron_text, every_ms = stored.get("cron"), stored.get("every_ms")
    if not isinstance(topic, str) or not isinstance(text, str) or (cron_text is None) == (every_ms is None):
        raise ValueError(f"stored schedule {schedule!r} lacks its topic, records or timing: {dict(stored)!r}")
    missed = stored.get("missed", MISSED[0])
    if missed not in MISSED:
        raise _unknown(schedule, "missed", missed)
    cron = None
    if cron_text is not None:
        try:
            cron = parse_cron(cron_text)
        except InvalidRequest:
            raise _unknown(schedule, "cron", cron_text) from None
    elif isinstance(every_ms, bool) or not isinstance(every_ms, int) or every_ms <= 0:
        raise _unknown(schedule, "every_ms", every_ms)
    node = stored.get("node")
    if node is not None and not isinstance(node, str):
        raise _unknown(schedule, "node", node)
    try:
        batch = decode(text.encode(), node)
    except InvalidRequest as err:
        raise _unknown(schedule, "records", f"{text[:200]} ({err.message})") from None
    config = ScheduleConfig(
        topic,
        text.encode(),
        cron_text,
        every_ms,
        node,
        missed,
        extra={k: v for k, v in stored.items() if k not in _STORED_KEYS},
    )
    return Parsed(config, cron, batch)


def _unknown(schedule: str, field: str, value: Any) -> UnsupportedFormat:
    return UnsupportedFormat(
        f"schedule {schedule!r}: stored {field} = {value!r} is not a value this server knows; it was "
        "written by a newer topics server (or the file is damaged) — upgrade topics to open this "
        "data directory"
    )


def check_schedule_name(name: str) -> str:
    """``name`` if it is a valid schedule name (the topic-name rule), else 400 ``invalid_request``."""
    if not TOPIC_NAME_RE.fullmatch(name):
        raise InvalidRequest(
            f"invalid schedule name {name!r}: use 1-255 characters from A-Z a-z 0-9 . _ : - "
            "starting with a letter or digit",
            {"field": "schedule", "value": name},
        )
    return name
