"""Sealing: writing a topic's hot records (live, ``seq > sealed_upto``, so far only in the WAL)
into a new immutable segment, when the hot part reaches the :class:`SegmentPolicy` limits
(events, bytes, age) and at every checkpoint.

Segment and snapshot file work runs on one dedicated thread (:meth:`Sealer.run`) — never on the
WAL writer, so sealing 100k records or writing a snapshot does not delay a group commit; work
runs there in submission order. An I/O error on that thread turns the WAL read-only (storage
state is unknown after it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..config import Durability
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
        if topic.config.durability is Durability.EPHEMERAL or topic.hot_since_ms is None:
            return
        p = self.policy
        if (
            topic.head_seq - topic.sealed_upto >= p.max_events
            or topic.hot_bytes >= p.max_bytes
            or now_ms - topic.hot_since_ms >= p.max_age_ms
        ):
            self.seal(topic)

    def seal(self, topic: Topic) -> asyncio.Future[None] | None:
        records = topic.hot_records()
        topic.mark_sealed()
        if not records:
            return None
        segments, topic_id, chunk = self.segments, topic.id, self.policy.max_events

        def task() -> None:
            for start in range(0, len(records), chunk):
                segments.seal(topic_id, records[start : start + chunk])

        return self.run(task)
