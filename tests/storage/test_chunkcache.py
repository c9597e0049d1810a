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


def test_a_chunk_read_ahead_is_protected_only_by_a_second_hit() -> None:
    """Its first hit is the read it was loaded for: a sequential reader served ahead still only
    churns probation, and the hot set survives it."""
    cache: ChunkCache[str, int] = ChunkCache(100)  # protected: 80
    for k in range(4):
        cache.put(f"hot{k}", k, 10)
        assert cache.get(f"hot{k}") == k
    for k in range(1000):
        cache.put(f"scan{k}", k, 10, ahead=True)
        assert cache.get(f"scan{k}") == k  # used once, as a sequential reader does
    assert all(cache.get(f"hot{k}") == k for k in range(4))
    assert cache.stats.ahead == 1000 and cache.stats.ahead_unused == 0
    cache.put("twice", 1, 10, ahead=True)
    cache.get("twice")
    cache.get("twice")  # a second reader: protected now
    for k in range(10):
        cache.put(f"more{k}", k, 10)
    assert cache.peek("twice") == 1


def test_a_chunk_read_ahead_in_vain_is_counted_when_it_leaves() -> None:
    cache: ChunkCache[int, int] = ChunkCache(30)
    cache.put(1, 1, 10, ahead=True)
    cache.put(2, 2, 10, ahead=True)
    cache.used(2)  # a read took it without a lookup (it awaited the read ahead)
    cache.put(3, 3, 10)
    cache.put(4, 4, 10)  # evicts 1, never used
    assert cache.peek(1) is None and cache.stats.ahead_unused == 1
    cache.discard(2)  # used: not in vain
    assert cache.stats.ahead_unused == 1
    cache.put(5, 5, 10, ahead=True)
    cache.discard(5)
    assert cache.stats.ahead_unused == 2
