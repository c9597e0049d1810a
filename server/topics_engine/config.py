"""The topic config object: defaults, validation, clamps and durability resolution.

A :class:`TopicConfig` is always fully resolved: every field has a value and ``durability`` is
one of the four classes. ``durable`` is not stored; on the wire it is derived as
``durability == "fsync"``.

Update semantics (a documented decision): a ``PUT`` on an existing topic merges the supplied
fields over the topic's *current* config, so omitted fields keep their values and ``PUT {}`` is an
identical (no-op) update. ``type`` is immutable. When ``durability`` is absent but ``durable`` is
given, the class is derived from ``durable`` (true -> fsync, false -> disk).

Two ways in, on purpose:

- :func:`resolve_config` — a request (``PUT`` of a topic): every rule of today is enforced.
- :func:`stored_config` — a stored config record (a ``TOPIC_PUT`` frame's or a snapshot's
  ``config``), possibly written by an older or newer server: tolerant, so that tightening a
  request rule never makes an existing data directory fail recovery. Missing keys take their
  defaults, unknown keys are kept (:attr:`TopicConfig.extra`, written back by
  :meth:`TopicConfig.to_stored`), values are taken as stored — except a value whose meaning
  this server does not know (an unknown ``type``/``durability``/``discard``, a u64 field out of
  range), which is refused with ``UnsupportedFormat`` like a newer file version.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .errors import InvalidRequest, TopicExistsIncompatible
from .jsonvalues import U64_MAX, to_int
from .names import TOPIC_NAME_RE
from .storage.versions import UnsupportedFormat

log = logging.getLogger("topics.config")


class TopicType(StrEnum):
    LOG = "log"
    QUEUE = "queue"


class Discard(StrEnum):
    OLD = "old"
    REJECT = "reject"


class Durability(StrEnum):
    EPHEMERAL = "ephemeral"
    MEMORY = "memory"
    DISK = "disk"
    FSYNC = "fsync"


PRIORITY_RANGE = (-1000, 1000)
LEASE_MS_RANGE = (100, 86_400_000)
CLAIM_JITTER_RANGE = (0, 5000)


@dataclass(frozen=True, slots=True)
class TopicConfig:
    type: TopicType = TopicType.LOG
    ttl_ms: int = 0
    cap_records: int = 0
    cap_bytes: int = 0
    discard: Discard = Discard.OLD
    durability: Durability = Durability.DISK
    priority: int | None = None
    auto_priority: bool = True
    auto_create: bool = True
    idempotency_window_ms: int = 120_000
    dedupe_node: bool = True
    lease_ms: int = 30_000
    claim_jitter_ms: int = 0
    max_deliveries: int = 0
    dead_letter: str | None = None
    leases_durable: bool = False
    max_in_flight: int = 0
    """Queue only (an extension): the most jobs leased at once over all consumers; 0 = no cap."""
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    """Keys of the stored config record this server does not know (written by a newer one):
    carried through reconfigurations and written back by :meth:`to_stored`, never served."""

    @property
    def durable(self) -> bool:
        return self.durability is Durability.FSYNC

    def to_wire(self) -> dict[str, Any]:
        """The full config object as the contract echoes it (in the contract's key order)."""
        return {
            "type": self.type.value,
            "ttl_ms": self.ttl_ms,
            "cap_records": self.cap_records,
            "cap_bytes": self.cap_bytes,
            "discard": self.discard.value,
            "durable": self.durable,
            "durability": self.durability.value,
            "priority": self.priority,
            "auto_priority": self.auto_priority,
            "auto_create": self.auto_create,
            "idempotency_window_ms": self.idempotency_window_ms,
            "dedupe_node": self.dedupe_node,
            "lease_ms": self.lease_ms,
            "claim_jitter_ms": self.claim_jitter_ms,
            "max_deliveries": self.max_deliveries,
            "dead_letter": self.dead_letter,
            "leases_durable": self.leases_durable,
            "max_in_flight": self.max_in_flight,
        }

    def to_stored(self) -> dict[str, Any]:
        """The stored config record (``TOPIC_PUT`` frames, snapshots): :meth:`to_wire` followed
        by the unknown keys a stored record brought (:attr:`extra`). Read back by
        :func:`stored_config`."""
        return {**self.to_wire(), **self.extra}


DEFAULT_CONFIG = TopicConfig()

_U64_FIELDS = (
    "ttl_ms",
    "cap_records",
    "cap_bytes",
    "idempotency_window_ms",
    "lease_ms",
    "claim_jitter_ms",
    "max_deliveries",
    "max_in_flight",
)
_BOOL_FIELDS = ("auto_priority", "auto_create", "dedupe_node", "leases_durable", "durable")
_ENUM_FIELDS: dict[str, type[StrEnum]] = {
    "type": TopicType,
    "discard": Discard,
    "durability": Durability,
}
_KNOWN_FIELDS = frozenset([*_U64_FIELDS, *_BOOL_FIELDS, *_ENUM_FIELDS, "priority", "dead_letter"])


def _bad(field: str, message: str, value: Any) -> InvalidRequest:
    return InvalidRequest(f"config.{field}: {message}", {"field": f"config.{field}", "value": value})


_CLAMPS = {"lease_ms": LEASE_MS_RANGE, "claim_jitter_ms": CLAIM_JITTER_RANGE}


def _int_field(name: str, value: Any, low: int, high: int, clamp: bool) -> int:
    try:
        return to_int(value, f"config.{name}", low=low, high=high, clamp=clamp)
    except InvalidRequest as err:
        raise _bad(name, err.message.removeprefix(f"config.{name} "), value) from None


def _check_fields(fields: dict[str, Any]) -> None:
    unknown = sorted(set(fields) - _KNOWN_FIELDS)
    if unknown:
        raise _bad(unknown[0], f"unknown config field; known fields are {sorted(_KNOWN_FIELDS)}", None)
    for name in _U64_FIELDS:
        if name in fields:
            clamp = _CLAMPS.get(name)
            low, high = clamp or (0, U64_MAX)
            fields[name] = _int_field(name, fields[name], low, high, clamp is not None)
    for name in _BOOL_FIELDS:
        if name in fields and not isinstance(fields[name], bool):
            raise _bad(name, "must be true or false", fields[name])
    for name, enum in _ENUM_FIELDS.items():
        if name in fields and fields[name] not in {m.value for m in enum}:
            raise _bad(name, f"must be one of {[m.value for m in enum]}", fields[name])
    if fields.get("priority") is not None:
        fields["priority"] = _int_field("priority", fields["priority"], *PRIORITY_RANGE, True)
    if "dead_letter" in fields:
        value = fields["dead_letter"]
        if value is not None and (not isinstance(value, str) or not TOPIC_NAME_RE.fullmatch(value)):
            raise _bad("dead_letter", "must be null or a valid topic name", value)


def resolve_config(topic: str, fields: dict[str, Any], current: TopicConfig | None = None) -> TopicConfig:
    """Merge ``fields`` over ``current`` (or the defaults) into a resolved, clamped config.

    Raises :class:`InvalidRequest` for a bad field and :class:`TopicExistsIncompatible` when
    ``fields`` would change the ``type`` of an existing topic.
    """
    fields = dict(fields)
    _check_fields(fields)
    base = current or DEFAULT_CONFIG
    changes: dict[str, Any] = {k: v for k, v in fields.items() if k != "durable"}
    for name, enum in _ENUM_FIELDS.items():
        if name in changes:
            changes[name] = enum(changes[name])
    if "durability" not in fields and "durable" in fields:
        changes["durability"] = Durability.FSYNC if fields["durable"] else Durability.DISK
    resolved = dataclasses.replace(base, **changes)
    if current is not None and resolved.type is not current.type:
        raise TopicExistsIncompatible(
            f'topic "{topic}" is a {current.type.value} topic; type is immutable — delete it '
            f"first or use another name",
            {
                "topic": topic,
                "field": "type",
                "current": current.type.value,
                "requested": resolved.type.value,
            },
        )
    if resolved.dead_letter == topic:
        raise _bad("dead_letter", "must name a different topic than the queue itself", topic)
    return resolved


_STORED_INTS = (*_U64_FIELDS, "priority")
_STORED_BOOLS = ("auto_priority", "auto_create", "dedupe_node", "leases_durable")


def unknown_stored_value(owner: str, field: str, value: Any) -> UnsupportedFormat:
    """The refusal of a stored config value this server cannot hold without changing its
    meaning (an enum value it does not know, an out-of-range integer): as for a newer file
    version, the data directory is refused rather than read with a default."""
    return UnsupportedFormat(
        f"{owner}: stored config.{field} = {value!r} is not a value this server knows; it was "
        "written by a newer topics server (or the file is damaged) — upgrade topics to open this "
        "data directory"
    )


def _stored_value(topic: str, name: str, value: Any) -> Any:
    """A known field of a stored record as the config holds it: enums by value, the rest as
    stored if its type fits (no range, clamp or name rule). Raises ``ValueError`` when it
    cannot be used (the caller keeps the default) and :class:`UnsupportedFormat` for an enum
    value this server does not know or a u64 field outside ``[0, 2**64)``."""
    if name in _ENUM_FIELDS:
        try:
            return _ENUM_FIELDS[name](value)
        except ValueError:
            raise unknown_stored_value(f"topic {topic!r}", name, value) from None
    if name in _STORED_INTS:
        if isinstance(value, int) and not isinstance(value, bool):
            if name in _U64_FIELDS and not 0 <= value <= U64_MAX:
                raise unknown_stored_value(f"topic {topic!r}", name, value)
            return value
        if name == "priority" and value is None:
            return None
    elif name in _STORED_BOOLS:
        if isinstance(value, bool):
            return value
    elif name == "dead_letter" and (value is None or isinstance(value, str)):
        return value
    raise ValueError(f"not a {name} value")


def stored_config(stored: Mapping[str, Any], topic: str = "") -> TopicConfig:
    """A stored config record -> a :class:`TopicConfig`, tolerantly (recovery, never requests).

    - a missing key takes its default; ``durability`` missing but ``durable`` given derives it
      as a request would;
    - an unknown key is kept in :attr:`TopicConfig.extra` (and written back by ``to_stored``);
    - a value is taken as stored: no range, clamp or name rule of :func:`resolve_config`
      applies (a ``lease_ms`` below today's minimum, a ``dead_letter`` today's names refuse,
      recover as they were);
    - a value of the wrong type for a non-enum field falls back to the default, with a warning
      naming ``topic`` and the field;
    - a ``type``, ``durability`` or ``discard`` this server does not know, or a u64 field below
      0 or above 2**64 - 1, raises :class:`UnsupportedFormat` (naming ``topic``, the field and
      the value): a default would change what the topic keeps or evicts, and would be written
      back.
    """
    changes: dict[str, Any] = {}
    for name, value in stored.items():
        if name == "durable" or name not in _KNOWN_FIELDS:
            continue
        try:
            changes[name] = _stored_value(topic, name, value)
        except ValueError:
            log.warning("topic %r: stored config.%s = %r is unusable; using the default", topic, name, value)
    if "durability" not in stored and isinstance(stored.get("durable"), bool):
        changes["durability"] = Durability.FSYNC if stored["durable"] else Durability.DISK
    extra = {k: v for k, v in stored.items() if k not in _KNOWN_FIELDS}
    return dataclasses.replace(DEFAULT_CONFIG, **changes, extra=extra)
