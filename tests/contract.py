"""Values the /v0 contract states (mirrored by openapi/v0.yaml), written down once for every test suite."""

from __future__ import annotations

# §0.10: the Topic config object with every documented default, in the contract's key order.
CONTRACT_DEFAULTS = {
    "type": "log",
    "ttl_ms": 0,
    "cap_records": 0,
    "cap_bytes": 0,
    "discard": "old",
    "durable": False,
    "durability": "disk",
    "priority": None,
    "auto_priority": True,
    "auto_create": True,
    "idempotency_window_ms": 120000,
    "dedupe_node": True,
    "lease_ms": 30000,
    "claim_jitter_ms": 0,
    "max_deliveries": 0,
    "dead_letter": None,
    "leases_durable": False,
}
CONFIG_DEFAULTS = {**CONTRACT_DEFAULTS, "max_in_flight": 0}
"""A resolved config's defaults as this server echoes them: the contract's (§0.10, in its order),
then the extensions' (docs/DECISIONS.md)."""
