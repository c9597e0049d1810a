"""Watch events (``topics_engine.watch``) as the frames streams send: SSE events for
``GET /v0/watch/:wid`` and JSON text messages for ``/v0/ws`` (docs/WEBSOCKET.md).

A ``record`` frame is the records' stored JSON bytes between a short head and tail — never
re-encoded, never joined. Frames are built **once** per batch: every consumer that read the very
same batch (same topic version, cursor and options: the event's ``share_key``) gets the same
parts from :class:`FrameCache`; only an SSE frame's ``id:`` line is its own.

Shapes (field order as the contract shows them):

- SSE ``record``: ``{"topic","records":[…],"from_seq","to_seq","head_seq"}``
- SSE ``tombstone``: ``{"topic", <the tombstone object of a read>}``; ``caught-up``:
  ``{"topic","head_seq"}``; ``topic-deleted``: ``{"topic","head_seq","reason"}``
- WebSocket: the same fields after ``"op"`` (``record``, ``tombstone``, ``caught_up``,
  ``topic_deleted``), ``records`` last in a ``record``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson
from topics_engine.watch import CaughtUpEvent, Event, RecordsEvent, TombstoneEvent, TopicDeletedEvent

from . import wire
from .sse import event_parts
from .streams import Frame

Parts = list[bytes | memoryview]


FRAME_CACHE_BYTES = 8 << 20
"""The bytes :class:`FrameCache` may keep alive (8 MiB): a memoryview part pins the *whole*
buffer it views (a record batch, often far bigger than the records a frame shows), so a frame
counts every distinct buffer its parts keep alive, in full, plus its own ``bytes`` parts."""

FRAME_CACHE_ENTRIES = 1024
"""At most this many cached frames, whatever their size."""


def pinned_bytes(parts: Parts) -> int:
    """The bytes ``parts`` keep alive: a ``bytes`` part's length, and once per distinct buffer
    the full size of what a memoryview part views (``memoryview.obj``), not just its slice."""
    total = 0
    seen: set[int] = set()
    for part in parts:
        if isinstance(part, memoryview):
            base = part.obj
            if id(base) in seen:
                continue
            seen.add(id(base))
            total += memoryview(base).nbytes if base is not None else part.nbytes
        else:
            total += len(part)
    return total


class FrameCache:
    """Record-frame payloads by (kind, share key), least recently used out first, bounded by
    ``capacity`` entries and by ``max_bytes`` of what they keep alive (:func:`pinned_bytes`).

    Invariant after every :meth:`put`: ``bytes <= max_bytes`` and ``len <= capacity``; a frame
    bigger than ``max_bytes`` on its own is returned to its caller but not kept."""

    def __init__(self, capacity: int = FRAME_CACHE_ENTRIES, max_bytes: int = FRAME_CACHE_BYTES) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._frames: OrderedDict[tuple[Any, ...], tuple[Parts, int]] = OrderedDict()
        self.bytes = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._frames)

    def get(self, key: tuple[Any, ...]) -> Parts | None:
        entry = self._frames.get(key)
        if entry is None:
            return None
        self._frames.move_to_end(key)
        self.hits += 1
        return entry[0]

    def put(self, key: tuple[Any, ...], parts: Parts) -> Parts:
        size = pinned_bytes(parts)
        frames = self._frames
        old = frames.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        if size > self.max_bytes:
            return parts
        frames[key] = (parts, size)
        self.bytes += size
        while len(frames) > self.capacity or self.bytes > self.max_bytes:
            _, (_, dropped) = frames.popitem(last=False)
            self.bytes -= dropped
        return parts


def _topic_head(name: str) -> bytes:
    return b'{"topic":' + orjson.dumps(name)


def sse_record_data(ev: RecordsEvent, cache: FrameCache) -> Parts:
    key = ("sse", ev.share_key)
    parts = cache.get(key)
    if parts is None:
        tail = b'],"from_seq":%d,"to_seq":%d,"head_seq":%d}' % (ev.from_seq, ev.to_seq, ev.head_seq)
        parts = cache.put(key, [_topic_head(ev.topic) + b',"records":[', *ev.parts, tail])
    return parts


JOIN_BELOW_BYTES = 16 << 10
"""A shared frame smaller than this is joined into one ``bytes`` once (every reader then writes
one buffer); a bigger one stays in parts (the record bytes are never copied)."""


def sse_frame(ev: Event, event_id: str, cache: FrameCache) -> Frame:
    """One SSE event for ``ev``, with ``id: event_id`` (readers with the same batch and the same
    id — e.g. many single-topic watchers at one cursor — share the very same frame)."""
    if isinstance(ev, RecordsEvent):
        key = ("sse-frame", ev.share_key, event_id)
        frame = cache.get(key)
        if frame is None:
            parts = event_parts(b"record", sse_record_data(ev, cache), event_id)
            size = sum(map(len, parts))
            frame = cache.put(key, [b"".join(parts)] if size < JOIN_BELOW_BYTES else parts)
        first = frame[0]
        return first if len(frame) == 1 and isinstance(first, bytes) else frame
    name, data = _plain(ev)
    return event_parts(name.encode(), [orjson.dumps(data)], event_id)


def ws_frame(ev: Event, cache: FrameCache) -> Frame:
    """One WebSocket message for ``ev``."""
    if isinstance(ev, RecordsEvent):
        key = ("ws", ev.share_key)
        parts = cache.get(key)
        if parts is None:
            head = b'{"op":"record","topic":%s,"from_seq":%d,"to_seq":%d,"head_seq":%d,"records":[' % (
                orjson.dumps(ev.topic),
                ev.from_seq,
                ev.to_seq,
                ev.head_seq,
            )
            parts = cache.put(key, [head, *ev.parts, b"]}"])
        return parts
    name, data = _plain(ev)
    return orjson.dumps({"op": name.replace("-", "_"), **data})


def _plain(ev: Event) -> tuple[str, dict[str, Any]]:
    """The SSE event name and payload of a non-record event."""
    if isinstance(ev, TombstoneEvent):
        return "tombstone", {"topic": ev.topic, **wire.tombstone(ev.tombstone)}
    if isinstance(ev, CaughtUpEvent):
        return "caught-up", {"topic": ev.topic, "head_seq": ev.head_seq}
    if isinstance(ev, TopicDeletedEvent):
        return "topic-deleted", {"topic": ev.topic, "head_seq": ev.head_seq, "reason": ev.reason}
    raise TypeError(f"not a watch event: {ev!r}")
