"""§0.10 Topic config object: defaults, validation, clamps, durable<->durability resolution."""

from __future__ import annotations

import pytest
from topics_engine import Discard, Durability, TopicConfig, TopicType
from topics_engine.config import U64_MAX, resolve_config
from topics_engine.errors import InvalidRequest, TopicExistsIncompatible

from ..contract import CONFIG_DEFAULTS
from .conftest import raises_topics


def test_empty_config_is_all_contract_defaults() -> None:
    cfg = resolve_config("t", {})
    assert cfg.to_wire() == CONFIG_DEFAULTS
    assert list(cfg.to_wire()) == list(CONFIG_DEFAULTS)  # §0.10 key order, then the extensions'
    assert cfg == TopicConfig()


def test_every_field_round_trips() -> None:
    fields = {
        "type": "queue",
        "ttl_ms": 5,
        "cap_records": 6,
        "cap_bytes": 7,
        "discard": "reject",
        "durability": "memory",
        "priority": 3,
        "auto_priority": False,
        "auto_create": False,
        "idempotency_window_ms": 9,
        "dedupe_node": False,
        "lease_ms": 1000,
        "claim_jitter_ms": 10,
        "max_deliveries": 4,
        "dead_letter": "jobs.dlq",
        "leases_durable": True,
        "max_in_flight": 5,
    }
    wire = resolve_config("jobs", fields).to_wire()
    assert wire == {**fields, "durable": False}
    cfg = resolve_config("jobs", fields)
    assert cfg.type is TopicType.QUEUE and cfg.discard is Discard.REJECT
    assert cfg.durability is Durability.MEMORY


@pytest.mark.parametrize(
    ("fields", "durability", "durable"),
    [
        ({}, "disk", False),
        ({"durable": True}, "fsync", True),
        ({"durable": False}, "disk", False),
        ({"durability": "ephemeral"}, "ephemeral", False),
        ({"durability": "memory"}, "memory", False),
        ({"durability": "disk"}, "disk", False),
        ({"durability": "fsync"}, "fsync", True),
        # an explicit durability always wins over the durable shorthand
        ({"durable": True, "durability": "memory"}, "memory", False),
        ({"durable": False, "durability": "fsync"}, "fsync", True),
        ({"durable": True, "durability": "ephemeral"}, "ephemeral", False),
    ],
)
def test_durability_resolution(fields: dict[str, object], durability: str, durable: bool) -> None:
    wire = resolve_config("t", fields).to_wire()
    assert wire["durability"] == durability
    assert wire["durable"] is durable  # durable == (durability == "fsync") on every response


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("priority", 5000, 1000),
        ("priority", -5000, -1000),
        ("priority", 1000, 1000),
        ("priority", -1000, -1000),
        ("priority", 0, 0),
        ("lease_ms", 1, 100),
        ("lease_ms", 0, 100),
        ("lease_ms", 10**12, 86_400_000),
        ("lease_ms", 100, 100),
        ("claim_jitter_ms", 10**9, 5000),
        ("claim_jitter_ms", 0, 0),
    ],
)
def test_clamped_fields(field: str, value: int, expected: int) -> None:
    assert resolve_config("t", {field: value}).to_wire()[field] == expected


def test_priority_null_means_auto() -> None:
    assert resolve_config("t", {"priority": None}).priority is None


@pytest.mark.parametrize(
    "fields",
    [
        {"ttl_ms": -1},
        {"cap_records": -5},
        {"cap_bytes": 1.5},
        {"cap_bytes": "10"},
        {"ttl_ms": True},
        {"ttl_ms": None},
        {"idempotency_window_ms": U64_MAX + 1},
        {"discard": "newest"},
        {"type": "stream"},
        {"durability": "tape"},
        {"durable": "yes"},
        {"auto_create": 1},
        {"dedupe_node": None},
        {"priority": True},
        {"priority": 1.5},
        {"priority": "high"},
        {"dead_letter": ""},
        {"dead_letter": "-bad"},
        {"dead_letter": 7},
        {"dead_letter": "t"},  # must differ from the topic itself
        {"no_such_field": 1},
    ],
)
def test_invalid_fields_are_400(fields: dict[str, object]) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        resolve_config("t", fields)


def test_u64_bounds_accepted() -> None:
    cfg = resolve_config("t", {"ttl_ms": U64_MAX, "cap_records": 0})
    assert cfg.ttl_ms == U64_MAX


def test_update_merges_over_current() -> None:
    current = resolve_config("t", {"ttl_ms": 10, "durability": "memory", "priority": 7})
    updated = resolve_config("t", {"cap_records": 3}, current)
    assert (updated.ttl_ms, updated.durability, updated.priority, updated.cap_records) == (
        10,
        Durability.MEMORY,
        7,
        3,
    )
    assert resolve_config("t", {}, current) == current


def test_update_durable_shorthand_changes_class() -> None:
    current = resolve_config("t", {"durability": "memory"})
    assert resolve_config("t", {"durable": True}, current).durability is Durability.FSYNC
    assert resolve_config("t", {"durable": False}, current).durability is Durability.DISK


@pytest.mark.parametrize(("old", "new"), [("log", "queue"), ("queue", "log")])
def test_type_is_immutable(old: str, new: str) -> None:
    current = resolve_config("t", {"type": old})
    with raises_topics(TopicExistsIncompatible, "topic_exists_incompatible"):
        resolve_config("t", {"type": new}, current)
    assert resolve_config("t", {"type": old}, current).type.value == old
