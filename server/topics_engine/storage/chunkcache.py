"""One bounded cache of cold record chunks, shared by every topic (``TOPICS_CACHE_BYTES``).

A segmented LRU (SLRU), so one sequential reader far behind cannot flush what everyone else
reads:

- a chunk read from disk enters the **probation** segment (its most recent end);
- a hit on a chunk in probation moves it to the **protected** segment (at most
  ``protected_share`` of the capacity; what it pushes out falls back to probation's most recent
  end, not out of the cache);
- room is made by evicting probation's least recent entry first, protected's only when
  probation is empty.

A reader that touches each chunk once (a watch replaying millions of records, a router or Spark
catching up) thus only ever churns probation, while chunks read twice stay protected.

Sizes are the bytes a chunk holds (its record blob and columns, as the caller measures them);
``capacity`` 0 caches nothing. Not thread-safe: the event loop owns it (loads happen on reader
threads, insertion back on the loop).

Invariant: ``bytes == sum of the sizes of the entries in both segments <= capacity``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


@dataclass(slots=True)
class CacheStats:
    """Counters since start (``/v0/metrics``)."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    insertions: int = 0
    freed_bytes: int = 0
    """The sizes of every entry that left the cache, evicted or discarded."""


class ChunkCache(Generic[K, V]):
    def __init__(self, capacity: int, protected_share: float = 0.8) -> None:
        self.capacity = max(0, capacity)
        self.protected_capacity = int(self.capacity * protected_share)
        self._probation: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._protected: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._protected_bytes = 0
        self.bytes = 0
        self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._probation) + len(self._protected)

    def __contains__(self, key: K) -> bool:
        return key in self._probation or key in self._protected

    def peek(self, key: K) -> V | None:
        """The cached value without counting or promoting it (a probe, not a use)."""
        entry = self._protected.get(key) or self._probation.get(key)
        return None if entry is None else entry[0]

    def get(self, key: K) -> V | None:
        """The cached value (a hit promotes it), or ``None`` (a miss)."""
        entry = self._protected.get(key)
        if entry is not None:
            self._protected.move_to_end(key)
            self.stats.hits += 1
            return entry[0]
        entry = self._probation.pop(key, None)
        if entry is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        self._protect(key, entry)
        return entry[0]

    def put(self, key: K, value: V, size: int) -> bool:
        """Cache ``value`` (``size`` bytes) in probation; whether it was. A value larger than the
        capacity, or under a key already cached, is not."""
        if key in self or size > self.capacity:
            return False
        self._make_room(size)
        self._probation[key] = (value, size)
        self.bytes += size
        self.stats.insertions += 1
        return True

    def discard(self, key: K) -> None:
        entry = self._probation.pop(key, None)
        if entry is None:
            entry = self._protected.pop(key, None)
            if entry is None:
                return
            self._protected_bytes -= entry[1]
        self.bytes -= entry[1]
        self.stats.freed_bytes += entry[1]

    def _protect(self, key: K, entry: tuple[V, int]) -> None:
        self._protected[key] = entry
        self._protected_bytes += entry[1]
        while self._protected_bytes > self.protected_capacity and len(self._protected) > 1:
            old_key, old = self._protected.popitem(last=False)
            self._protected_bytes -= old[1]
            self._probation[old_key] = old  # demoted, not dropped

    def _make_room(self, size: int) -> None:
        while self.bytes + size > self.capacity:
            if self._probation:
                _, (_, old_size) = self._probation.popitem(last=False)
            elif self._protected:
                _, (_, old_size) = self._protected.popitem(last=False)
                self._protected_bytes -= old_size
            else:
                return
            self.bytes -= old_size
            self.stats.evictions += 1
            self.stats.freed_bytes += old_size
