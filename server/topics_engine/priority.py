"""Effective priority (the topic config's ``priority`` / ``auto_priority``).

A manual ``priority`` (already clamped to [-1000, 1000]) always wins. Otherwise, with
``auto_priority``, priority is derived from read recency: 1000 for a topic read this instant,
halving every ``HALF_LIFE_MS`` since its last read/state/SSE call, 0 if never read. With
``auto_priority: false`` and no manual priority it is 0.
"""

from __future__ import annotations

from .config import TopicConfig

HALF_LIFE_MS = 60_000
MAX_AUTO_PRIORITY = 1000


def effective_priority(config: TopicConfig, last_read_ts: int | None, now_ms: int) -> int:
    if config.priority is not None:
        return config.priority
    if not config.auto_priority or last_read_ts is None:
        return 0
    age = max(0, now_ms - last_read_ts)
    return int(MAX_AUTO_PRIORITY * 0.5 ** (age / HALF_LIFE_MS))
