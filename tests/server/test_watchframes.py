"""``FrameCache``: record frames shared by every watcher of the same batch, bounded by the bytes
they keep alive (a memoryview part pins the whole batch buffer it views), least recently used
out first."""

from __future__ import annotations

from topics_engine.watch import RecordsEvent
from topics_server.watchframes import FrameCache, pinned_bytes, sse_frame, sse_record_data, ws_frame

MIB = 1 << 20


def batch_event(n: int, batch_bytes: int = MIB) -> RecordsEvent:
    """A one-record event whose record is a 20-byte slice of a ``batch_bytes`` batch buffer."""
    batch = bytes(b'{"n":%d}' % n).ljust(batch_bytes, b" ")
    part = memoryview(batch)[:20]
    return RecordsEvent("t", [part], 1, n, n + 1, n + 1, ("t", n))


def test_pinned_bytes_counts_whole_viewed_buffers_once() -> None:
    buf = bytes(MIB)
    view = memoryview(buf)
    assert pinned_bytes([b"head", view[:10], b",", view[10:30], b"tail"]) == MIB + 9


def test_big_frames_stay_within_the_byte_budget() -> None:
    cache = FrameCache(max_bytes=8 * MIB)
    events = [batch_event(n) for n in range(64)]
    for ev in events:
        sse_record_data(ev, cache)
        ws_frame(ev, cache)
        assert cache.bytes <= 8 * MIB
    kept = [ev for ev in events if cache.get(("ws", ev.share_key)) is not None]
    assert 0 < len(kept) < 8
    assert kept[-1] is events[-1]
    assert cache.get(("ws", events[0].share_key)) is None


def test_a_frame_bigger_than_the_budget_is_built_but_not_kept() -> None:
    cache = FrameCache(max_bytes=MIB // 2)
    ev = batch_event(1)
    parts = ws_frame(ev, cache)
    assert bytes(parts[1]) == bytes(ev.parts[0])
    assert len(cache) == 0 and cache.bytes == 0


def test_many_watchers_share_one_frame_and_it_stays_while_in_use() -> None:
    cache = FrameCache(max_bytes=4 * MIB)
    shared = batch_event(0)
    first = ws_frame(shared, cache)
    for n in range(1, 40):
        assert ws_frame(shared, cache) is first  # a use refreshes it: others go first
        ws_frame(batch_event(n), cache)
    assert cache.hits == 39
    assert cache.bytes <= 4 * MIB
    sse = sse_frame(shared, "0-1", cache)
    assert sse_frame(shared, "0-1", cache) is sse
