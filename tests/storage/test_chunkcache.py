"""The shared cache of cold record chunks (``storage/chunkcache.py``): a segmented LRU bounded
in bytes, which a one-pass scan cannot flush."""

from __future__ import annotations

from topics_engine.storage.chunkcache import ChunkCache


def test_it_never_holds_more_than_its_capacity() -> None:
    cache: ChunkCache[int, str] = ChunkCache(100)
    for k in range(50):
        cache.put(k, f"v{k}", 7)
        assert cache.bytes <= 100
    assert len(cache) == 14 and cache.bytes == 98
    assert cache.stats.insertions == 50 and cache.stats.evictions == 36
    assert cache.get(49) == "v49" and cache.get(0) is None
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)


def test_a_value_larger_than_the_capacity_or_a_zero_capacity_caches_nothing() -> None:
    cache: ChunkCache[int, str] = ChunkCache(10)
    cache.put(1, "big", 11)
    assert len(cache) == 0 and cache.bytes == 0
    none: ChunkCache[int, str] = ChunkCache(0)
    none.put(1, "x", 1)
    assert none.get(1) is None and none.bytes == 0


def test_a_sequential_scan_does_not_flush_what_is_read_again() -> None:
    """Chunks read twice move to the protected segment; a reader touching each chunk once
    only churns probation, so the hot set survives it."""
    cache: ChunkCache[str, int] = ChunkCache(100)  # protected: 80
    for k in range(4):
        cache.put(f"hot{k}", k, 10)
        assert cache.get(f"hot{k}") == k  # a second read: protected
    for k in range(1000):  # a reader far behind, each chunk once
        cache.put(f"scan{k}", k, 10)
    assert all(cache.get(f"hot{k}") == k for k in range(4))
    assert cache.bytes <= 100


def test_protected_overflow_falls_back_to_probation_not_out() -> None:
    cache: ChunkCache[int, int] = ChunkCache(100, protected_share=0.2)  # protected: 20
    for k in range(3):
        cache.put(k, k, 10)
        cache.get(k)
    assert len(cache) == 3 and cache.stats.evictions == 0  # the first demoted, still cached
    assert cache.peek(0) == 0
    hits = cache.stats.hits
    cache.peek(1)
    assert cache.stats.hits == hits  # a probe counts nothing


def test_discard_frees_its_bytes() -> None:
    cache: ChunkCache[int, int] = ChunkCache(100)
    cache.put(1, 1, 30)
    cache.get(1)
    cache.put(2, 2, 30)
    cache.discard(1)
    cache.discard(2)
    cache.discard(3)
    assert cache.bytes == 0 and len(cache) == 0
