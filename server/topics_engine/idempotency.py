"""Write deduplication (``idempotency_key``): ``(topic, idempotency_key) -> assigned seqs`` for a window.

Entries are kept in insertion order; insertion times never decrease (an insertion is stamped
no earlier than the newest entry, as ``$ts`` is: a wall clock stepped back does not reorder
them), so expiry only ever pops from the front. A batch's seqs are contiguous,
so ``(first_seq, last_seq)`` identifies them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


class IdempotencyWindow:
    def __init__(self) -> None:
        self._entries: OrderedDict[str, tuple[int, int, int]] = OrderedDict()

    def lookup(self, key: str, now_ms: int, window_ms: int) -> tuple[int, int] | None:
        self.expire(now_ms, window_ms)
        entry = self._entries.get(key)
        return None if entry is None else (entry[1], entry[2])

    def remember(self, key: str, now_ms: int, first_seq: int, last_seq: int) -> None:
        entries = self._entries
        if entries:  # never before the newest entry (a wall clock stepped back)
            now_ms = max(now_ms, next(reversed(entries.values()))[0])
        entries[key] = (now_ms, first_seq, last_seq)
        self._entries.move_to_end(key)

    def forget(self, key: str) -> None:
        """Drop a key whose write failed, so a retry appends instead of being deduped."""
        self._entries.pop(key, None)

    def expire(self, now_ms: int, window_ms: int) -> None:
        entries = self._entries
        while entries:
            key, (ts, _, _) = next(iter(entries.items()))
            if now_ms - ts < window_ms:
                break
            del entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[list[object]]:
        """``[key, ts, first_seq, last_seq]`` rows, oldest first (for snapshots)."""
        return [[key, ts, first, last] for key, (ts, first, last) in self._entries.items()]

    def restore(self, rows: list[list[Any]]) -> None:
        for key, ts, first, last in rows:
            self._entries[key] = (ts, first, last)
