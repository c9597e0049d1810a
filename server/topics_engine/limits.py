"""Hard limits the engine enforces: per request (a write's batch limits, a read's clamps) and per
instance (the resource caps: how many topics, how many retained bytes; 0 = unlimited).

The server builds one :class:`Limits` from its settings; defaults are the contract's.
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class Limits:
    max_batch_records: int = 10_000
    max_record_bytes: int = 1 * MIB
    max_meta_bytes: int = 16 * KIB
    max_meta_keys: int = 64
    max_tag_bytes: int = 256
    max_node_bytes: int = 128
    max_limit: int = 1000
    default_limit: int = 256
    max_wait_ms: int = 30_000
    max_idempotency_key_chars: int = 256
    max_scan_per_read: int = 100_000
    max_topics: int = 100_000
    """``TOPICS_MAX_TOPICS``: topics that may exist at once (0: unlimited)."""
    max_total_bytes: int = 0
    """``TOPICS_MAX_TOTAL_BYTES``: retained record bytes over all topics (0: unlimited)."""

    @property
    def record_limits(self) -> tuple[int, int, int, int]:
        """What the record codec checks: data+meta and meta bytes, tag and node characters."""
        return (self.max_record_bytes, self.max_meta_bytes, self.max_tag_bytes, self.max_node_bytes)
