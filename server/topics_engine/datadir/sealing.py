"""Sealing: writing a topic's hot records (live, ``seq > sealed_upto``, so far only in the WAL)
into a new immutable segment, when the hot part reaches the :class:`SegmentPolicy` limits
(events, bytes, age) and at every checkpoint.

A topic's hot state (``Topic.hot``, a ``topic.HotState``) is this module's: only
:func:`mark_sealed` marks records sealed — called by :meth:`Sealer.seal`, by a checkpoint's cut
and by a snapshot's restore — and only :meth:`Sealer.maybe_seal` decides from it. The topic's
apply path feeds it.

Segment and snapshot file work runs on one dedicated thread (:meth:`Sealer.run`) — never on the
WAL's sync thread, so sealing 100k records or writing a snapshot does not delay a group commit;
work runs there in submission order. An I/O error on that thread turns the WAL read-only (storage
state is unknown after it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..config import Durability
from ..storage.formats import RecordBatch
from ..storage.segments import SegmentStore
from ..storage.wal import Wal
from ..topic import Topic


@dataclass(frozen=True, slots=True)
class SegmentPolicy:
    max_events: int = 100_000
    max_bytes: int = 64 << 20
    max_age_ms: int = 600_000


class Sealer:
    def __init__(self, wal: Wal, segments: SegmentStore, policy: SegmentPolicy) -> None:
        self.wal = wal
        self.segments = segments
        self.policy = policy
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="topics-segments")

    def run(self, fn: Callable[[], None]) -> asyncio.Future[None]:
        """Run segment/snapshot file work on the segment thread; an I/O error there turns the
        WAL read-only."""

        def guarded() -> None:
            try:
                fn()
            except OSError as err:
                self.wal.fail(err)
                raise

        future = asyncio.wrap_future(self._worker.submit(guarded), loop=self.wal.loop)
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return future

    def close(self) -> None:
        self._worker.shutdown(wait=True)

    def maybe_seal(self, topic: Topic, now_ms: int) -> None:
        """Seal ``topic``'s hot records if they reached a segment limit."""
        hot = topic.hot
        if topic.config.durability is Durability.EPHEMERAL or hot.since_ms is None:
            return
        p = self.policy
        if (
            topic.head_seq - hot.sealed_upto >= p.max_events
            or hot.bytes >= p.max_bytes
            or now_ms - hot.since_ms >= p.max_age_ms
        ):
            self.seal(topic)

    def seal(self, topic: Topic) -> asyncio.Future[None] | None:
        """Seal ``topic``'s hot records now (the file work runs on the segment thread)."""
        batches, flags = hot_batches(topic)
        mark_sealed(topic)
        if not batches:
            return None
        segments, topic_id, max_events = self.segments, topic.id, self.policy.max_events

        def task() -> None:
            for group, group_flags in segment_groups(batches, flags, max_events):
                segments.seal(topic_id, group, group_flags)

        return self.run(task)


def hot_batches(topic: Topic) -> tuple[list[RecordBatch], bytes]:
    """``topic``'s stored batches not yet sealed (``seq > sealed_upto``) and their gone-flags."""
    return topic.log.export(topic.hot.sealed_upto)


def mark_sealed(topic: Topic) -> None:
    """Every record of ``topic`` up to its head is sealed, or about to be (the caller writes
    the batches :func:`hot_batches` gave it)."""
    topic.hot.mark(topic.head_seq)


def segment_groups(
    batches: list[RecordBatch], flags: bytes, max_events: int
) -> Iterator[tuple[list[RecordBatch], bytes]]:
    """Split a topic's hot batches into segments of about ``max_events`` records (whole
    batches: a batch is never split across segments), each with its records' gone-flags."""
    group: list[RecordBatch] = []
    count = pos = 0
    for batch in batches:
        group.append(batch)
        count += batch.count
        if count >= max_events:
            yield group, flags[pos : pos + count]
            pos += count
            group, count = [], 0
    if group:
        yield group, flags[pos : pos + count]
