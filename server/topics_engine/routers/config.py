"""What a router is told: a ``PUT`` body parsed into a :class:`RouterConfig`, and router names.

Invariants of a parsed config: ``source`` and ``dest`` are valid topic names and differ,
``guarantee`` is one of :data:`GUARANTEES`, and ``filter`` parsed as a §5 match. The config keeps
the filter as the client wrote it (what ``GET`` returns and what the WAL and snapshots store);
its parsed :class:`TagMatch` travels beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidRequest
from ..matching import TagMatch, parse_match
from ..names import ROUTER_NAME_RE, check_topic_name

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

    def to_wire(self) -> dict[str, Any]:
        """The stored fields, in a fixed order: this dict is what ``ROUTER_PUT`` frames and
        snapshots hold (its key order is part of their bytes)."""
        return {
            "source": self.source,
            "dest": self.dest,
            "preserve_node": self.preserve_node,
            "preserve_tag": self.preserve_tag,
            "filter": self.filter,
            "allow_cycle": self.allow_cycle,
            "guarantee": self.guarantee,
        }


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
