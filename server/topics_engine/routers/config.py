"""What a router is told: a ``PUT`` body parsed into a :class:`RouterConfig`, and router names.

Invariants of a parsed config: ``source`` and ``dest`` are valid topic names and differ,
``guarantee`` is one of :data:`GUARANTEES`, and ``filter`` parsed as a tag match. The config keeps
the filter as the client wrote it (what ``GET`` returns and what the WAL and snapshots store);
its parsed :class:`TagMatch` travels beside it.

A stored config (a ``ROUTER_PUT`` frame's or a snapshot's) is read back by
:func:`stored_router_config`, not by the request parser: tolerantly, so that tightening a request
rule never makes an existing data directory fail recovery (see ``config.stored_config``, the
same rule for topics). A ``guarantee`` or ``filter`` this server does not know (other than a
malformed ``Glob`` operand) is refused with ``UnsupportedFormat``, like a newer file version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequest
from ..matching import TagMatch, parse_match
from ..names import ROUTER_NAME_RE, check_topic_name
from ..storage.versions import UnsupportedFormat

log = logging.getLogger("topics.routers")

GUARANTEES = ("at_least_once", "exactly_once")


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """What a ``PUT`` defines (``create_dest`` is an action of the PUT, not stored)."""

    source: str
    dest: str
    preserve_node: bool = True
    preserve_tag: bool = True
    filter: Any = None
    allow_cycle: bool = False
    guarantee: str = "at_least_once"
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    """Keys of the stored record this server does not know (written by a newer one): carried
    through a ``PUT`` of the router and written back by :meth:`to_stored`, never served."""

    def to_wire(self) -> dict[str, Any]:
        """The defined fields, in a fixed order, as ``GET`` serves them; :meth:`to_stored`
        (what ``ROUTER_PUT`` frames and snapshots hold) starts with them."""
        return {
            "source": self.source,
            "dest": self.dest,
            "preserve_node": self.preserve_node,
            "preserve_tag": self.preserve_tag,
            "filter": self.filter,
            "allow_cycle": self.allow_cycle,
            "guarantee": self.guarantee,
        }

    def to_stored(self) -> dict[str, Any]:
        """The stored record: :meth:`to_wire` then the unknown keys (:attr:`extra`); its key
        order is part of the frames' and snapshots' bytes. Read by :func:`stored_router_config`."""
        return {**self.to_wire(), **self.extra}


def parse_router_config(fields: dict[str, Any]) -> tuple[RouterConfig, TagMatch | None, bool]:
    """A PUT body -> ``(config, filter, create_dest)``; 400 ``invalid_request`` on bad fields.

    Fields are checked in a fixed order (``source``, ``dest``, their difference, ``guarantee``,
    ``filter``, then the booleans), so a body with several faults always names the same one."""
    source = _topic_field(fields, "source")
    dest = _topic_field(fields, "dest")
    if source == dest:
        raise InvalidRequest(
            "source and dest must differ (a router into its own source would loop)", {"field": "dest"}
        )
    guarantee = _guarantee(fields)
    raw_filter, match = _filter(fields)
    config = RouterConfig(
        source=source,
        dest=dest,
        preserve_node=_bool(fields, "preserve_node", True),
        preserve_tag=_bool(fields, "preserve_tag", True),
        filter=raw_filter,
        allow_cycle=_bool(fields, "allow_cycle", False),
        guarantee=guarantee,
    )
    return config, match, _bool(fields, "create_dest", True)


_STORED_BOOLS = {"preserve_node": True, "preserve_tag": True, "allow_cycle": False}
_STORED_KEYS = frozenset(["source", "dest", "filter", "guarantee", *_STORED_BOOLS])


def stored_router_config(stored: Mapping[str, Any], router: str = "") -> tuple[RouterConfig, TagMatch | None]:
    """A stored router record -> ``(config, filter)``, tolerantly (recovery, never requests).

    ``source`` and ``dest`` are required (a router is nothing without them; ``ValueError``
    naming ``router`` otherwise) and taken as stored — no topic-name rule, no "must differ". A
    missing key takes its default; an unknown key is kept in :attr:`RouterConfig.extra`; a
    flag of the wrong type falls back to the default with a warning. A ``guarantee`` this server
    does not know raises :class:`UnsupportedFormat` (a newer server wrote it; a default would
    weaken the delivery it promised). A ``filter`` today's tag-match parser refuses is read leniently
    only when it is a ``Glob`` with a malformed operand; any other raises
    :class:`UnsupportedFormat` (:func:`_stored_match`)."""
    for key in ("source", "dest"):
        if not isinstance(stored.get(key), str):
            raise ValueError(f"stored router {router!r} has no {key} topic name: {stored.get(key)!r}")
    flags = {
        key: _stored_choice(router, stored, key, default, lambda v: isinstance(v, bool))
        for key, default in _STORED_BOOLS.items()
    }
    guarantee = stored.get("guarantee", GUARANTEES[0])
    if guarantee not in GUARANTEES:
        raise _unknown(router, "guarantee", guarantee)
    raw_filter = stored.get("filter")
    config = RouterConfig(
        source=stored["source"],
        dest=stored["dest"],
        preserve_node=flags["preserve_node"],
        preserve_tag=flags["preserve_tag"],
        filter=raw_filter,
        allow_cycle=flags["allow_cycle"],
        guarantee=guarantee,
        extra={k: v for k, v in stored.items() if k not in _STORED_KEYS},
    )
    return config, _stored_match(router, raw_filter)


def _stored_choice(
    router: str, stored: Mapping[str, Any], key: str, default: Any, fits: Callable[[Any], bool]
) -> Any:
    """``stored[key]`` if present and ``fits`` it, else ``default`` (warned when present)."""
    if key not in stored:
        return default
    value = stored[key]
    if fits(value):
        return value
    log.warning("router %r: stored %s = %r is unusable; using the default %r", router, key, value, default)
    return default


def _unknown(router: str, field: str, value: Any) -> UnsupportedFormat:
    return UnsupportedFormat(
        f"router {router!r}: stored {field} = {value!r} is not a value this server knows; it was "
        "written by a newer topics server (or the file is damaged) — upgrade topics to open this "
        "data directory"
    )


def _stored_match(router: str, raw: Any) -> TagMatch | None:
    """The parsed stored ``filter``: as a request would parse it, or — if today's rules refuse
    it — leniently only for ``["tag", "Glob", s]`` (an operand today's glob rules refuse):
    it matches the prefix of ``s`` before its first ``*``. Any other filter today's parser
    refuses (another operator, another field) raises :class:`UnsupportedFormat`: read as
    something else, it would route records its writer never meant to."""
    if raw is None:
        return None
    try:
        return parse_match(raw, "filter")
    except InvalidRequest:
        pass
    glob = isinstance(raw, list | tuple) and len(raw) == 3 and list(raw[:2]) == ["tag", "Glob"]
    if glob and isinstance(raw[2], str):
        log.warning("router %r: stored filter %r is read leniently", router, raw)
        return TagMatch(exact=None, prefix=raw[2].split("*", 1)[0])
    raise _unknown(router, "filter", raw)


def check_router_name(name: str) -> str:
    """``name`` if it is a valid router name, else 400 ``invalid_request``."""
    if not ROUTER_NAME_RE.fullmatch(name):
        raise InvalidRequest(
            f"invalid router name {name!r}: use 1-255 characters from A-Z a-z 0-9 . _ : - > "
            'starting with a letter or digit (by convention "<source>-><dest>")',
            {"field": "router", "value": name},
        )
    return name


def _topic_field(fields: dict[str, Any], name: str) -> str:
    """The required topic-name field ``name`` (``source`` or ``dest``)."""
    value = fields.get(name)
    if value is None:
        raise InvalidRequest(f"{name} is required", {"field": name})
    if not isinstance(value, str):
        raise InvalidRequest(f"{name} must be a topic name", {"field": name})
    return check_topic_name(value, name)


def _guarantee(fields: dict[str, Any]) -> str:
    guarantee = fields.get("guarantee", "at_least_once")
    if guarantee not in GUARANTEES:
        raise InvalidRequest('guarantee must be "at_least_once" or "exactly_once"', {"field": "guarantee"})
    return str(guarantee)


def _filter(fields: dict[str, Any]) -> tuple[Any, TagMatch | None]:
    """The ``filter`` as stored (a tuple becomes a list, as JSON would give it) and parsed."""
    raw_filter = fields.get("filter")
    if isinstance(raw_filter, tuple):
        raw_filter = list(raw_filter)
    match = parse_match(raw_filter, "filter") if raw_filter is not None else None
    return raw_filter, match


def _bool(fields: dict[str, Any], name: str, default: bool) -> bool:
    value = fields.get(name, default)
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be a boolean", {"field": name})
    return value
