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


class FrameCache:
    """Record-frame payloads by (kind, share key); bounded, oldest out first."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._frames: OrderedDict[tuple[Any, ...], Parts] = OrderedDict()
        self.hits = 0

    def get(self, key: tuple[Any, ...]) -> Parts | None:
        parts = self._frames.get(key)
        if parts is not None:
            self.hits += 1
        return parts

    def put(self, key: tuple[Any, ...], parts: Parts) -> Parts:
        frames = self._frames
        frames[key] = parts
        if len(frames) > self.capacity:
            frames.popitem(last=False)
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
