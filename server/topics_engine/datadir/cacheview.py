"""What the server may read of the cold-record cache and reads: capacity, fill and counters —
for ``/v0/metrics``, without reaching into ``storage``."""

from __future__ import annotations

from dataclasses import dataclass

from ..storage.coldstore import ColdStore


@dataclass(frozen=True, slots=True)
class CacheView:
    """The shared cache of cold record chunks (``TOPICS_CACHE_BYTES``) and the cold reads, as of
    when the view was taken; all zeros without a data directory."""

    capacity_bytes: int = 0
    bytes: int = 0
    chunks: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    loads: int = 0
    """Chunks read from segment files."""
    load_bytes: int = 0
    blocking_loads: int = 0
    """Of :attr:`loads`, those read on the calling thread outside the event loop's read paths
    (recovery, a router's start-up scan, a dead-letter retry): they may wait for a disk."""
    page_cache_loads: int = 0
    """Of :attr:`loads`, those read on the event loop because the OS page cache held them (never
    waiting for a disk); the rest were read on reader threads."""
    trims: int = 0
    """Heap trims the cold store queued: after the cache churned, or when none ran for 10 s
    (``storage.coldstore``)."""

    @classmethod
    def of(cls, cold: ColdStore | None) -> CacheView:
        if cold is None:
            return cls()
        cache, stats = cold.cache, cold.cache.stats
        return cls(
            cache.capacity,
            cache.bytes,
            len(cache),
            stats.hits,
            stats.misses,
            stats.evictions,
            cold.loads,
            cold.bytes_read,
            cold.blocking_loads,
            cold.page_cache_loads,
            cold.trims,
        )
