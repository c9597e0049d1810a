"""Sealing: writing a topic's hot records (live, ``seq > sealed_upto``, so far only in the WAL)
into a new immutable segment, when the hot part reaches the :class:`SegmentPolicy` limits
(events, bytes, age) and at every checkpoint.

A topic's hot state (``Topic.hot``, a ``topic.HotState``) is this module's: only
:func:`take_hot` (for :meth:`Sealer.seal` and a checkpoint's cut) and :func:`mark_sealed` (a
snapshot's restore) mark records sealed, and only :meth:`Sealer.maybe_seal` decides from it. The
topic's apply path feeds it.

What a seal takes follows the topic's class now, not the class each record was written under
(docs/DECISIONS.md, "Switching a topic's class"): a durable topic's every record above
``sealed_upto`` (so records written as ephemeral before a switch to a durable class go cold
too), an ``ephemeral`` topic's only the records it logged before it became ephemeral.

Segment and snapshot file work runs on one dedicated thread (:meth:`Sealer.run`) — never on the
WAL's sync thread, so sealing 100k records or writing a snapshot does not delay a group commit;
work runs there in submission order. An error on that thread — an I/O error or any other —
turns the WAL read-only (storage state is unknown after it). A failed seal's chunks stay hot —
served from memory, their records only in the WAL — until the restart replays them: they are
not retried, and no checkpoint runs after the failure (``Checkpointer.checkpoint``;
docs/STORAGE.md, "Failures").

Once a segment is durable its chunks go **cold** (:func:`release_sealed`, on the event loop): the
topic's record log drops their batches, and reads find them through ``storage.coldstore``.
So a topic's records are in memory only while unsealed (bounded per topic by the
:class:`SegmentPolicy`, and over all topics by the checkpoint policy, which seals everything).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from ..config import Durability
from ..recordlog import MERGE_MAX_BYTES, join_small
from ..storage import heap
from ..storage.coldstore import ColdStore
from ..storage.formats import RecordBatch
from ..storage.segments import Segment, SegmentStore
from ..storage.wal import Wal
from ..topic import Topic

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SegmentPolicy:
    max_events: int = 100_000
    max_bytes: int = 16 << 20
    max_age_ms: int = 600_000
    join_bytes: int = MERGE_MAX_BYTES
    """Sealed chunks are runs of small writes joined up to this size (``recordlog.join_small``;
    0: every write stays its own chunk, as servers before the join sealed them)."""


class Sealer:
    """Runs segment and snapshot file work on the segment thread, in submission order.

    ``inline`` (tests only): the work runs at once on the calling thread, and what follows it
    too — a synchronous test sees sealed chunks go cold without running an event loop."""

    def __init__(
        self, wal: Wal, segments: SegmentStore, policy: SegmentPolicy, cold: ColdStore, inline: bool = False
    ) -> None:
        self.wal = wal
        self.segments = segments
        self.policy = policy
        self.cold = cold
        self.inline = inline
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="topics-segments")
        self._trim_queued = False

    def run(self, fn: Callable[[], T], then: Callable[[T], None] | None = None) -> asyncio.Future[T]:
        """Run segment/snapshot file work on the segment thread; an error there — an I/O
        error, or any other: what the work left behind is unknown, and a seal that failed holds
        records marked sealed that no segment has — turns the WAL read-only. ``then`` runs on
        the event loop with the work's result once it is done."""

        def guarded() -> T:
            try:
                return fn()
            except Exception as err:
                self.wal.fail(err)
                raise

        if self.inline:
            future: asyncio.Future[T] = self.wal.loop.create_future()
            try:
                result = guarded()
            except Exception as err:  # noqa: BLE001 — the future carries it, as the thread's does
                future.set_exception(err)
            else:
                future.set_result(result)
                if then is not None:
                    then(result)
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            return future
        future = asyncio.wrap_future(self._worker.submit(guarded), loop=self.wal.loop)

        def done(f: asyncio.Future[T]) -> None:
            if not f.cancelled() and f.exception() is None and then is not None:
                then(f.result())

        future.add_done_callback(done)
        return future

    def close(self) -> None:
        self._worker.shutdown(wait=True)

    def released(self) -> None:
        """Sealed batches left memory: give their pages back to the system (``heap.trim``) on
        the segment thread, once for any number of releases queued meanwhile."""
        if self.inline or self._trim_queued:  # inline (tests): nothing to gain
            return
        self._trim_queued = True

        def trim() -> None:
            self._trim_queued = False  # a release from now on queues another
            heap.trim()

        try:
            self._worker.submit(trim)
        except RuntimeError:  # closed: the server stops
            self._trim_queued = False

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

    def seal(self, topic: Topic) -> asyncio.Future[list[Sealed]] | None:
        """Seal ``topic``'s hot records now (the file work runs on the segment thread); once
        the segments are durable their chunks go cold."""
        batches, flags = take_hot(topic)
        if not batches:
            return None
        segments, topic_id, policy = self.segments, topic.id, self.policy

        def task() -> list[Sealed]:
            return seal_batches(segments, topic_id, batches, flags, policy)

        def release(sealed: list[Sealed]) -> None:
            release_sealed(self.cold, topic, sealed)
            self.released()

        return self.run(task, release)


@dataclass(frozen=True, slots=True)
class Sealed:
    """A segment just written, and the batches its chunks hold (in order; small ones joined)."""

    segment: Segment
    batches: list[RecordBatch]


def seal_batches(
    segments: SegmentStore, topic_id: int, batches: list[RecordBatch], flags: bytes, policy: SegmentPolicy
) -> list[Sealed]:
    """Segment-thread work: write a topic's exported hot batches (and their gone-flags) into
    segments of about ``policy.max_events`` records, runs of small batches joined first up to
    ``policy.join_bytes`` (``recordlog.join_small``: a cold chunk's resident cost is per chunk,
    whatever its size)."""
    joined = join_small(batches, policy.join_bytes) if policy.join_bytes else batches
    return [
        Sealed(segments.seal(topic_id, group, group_flags), group)
        for group, group_flags in segment_groups(joined, flags, policy.max_events)
    ]


def release_sealed(cold: ColdStore, topic: Topic, sealed: Iterable[Sealed]) -> None:
    """``sealed`` (``topic``'s new segments) are durable: their chunks go cold — each batch
    leaves memory. It does not enter the cache: the segment was just written, so the OS page
    cache holds its bytes, which a reader a little behind gets at once (``RWF_NOWAIT``), and a
    writer filling a topic no one reads would otherwise fill the cache for nothing. A chunk
    evicted or dropped meanwhile is simply gone."""
    for done in sealed:
        segment = done.segment
        for k, batch in enumerate(done.batches):
            chunk = cold.chunk(
                segment.path, segment.chunk_offsets[k], segment.chunk_lengths[k], segment.chunk_crcs[k]
            )
            topic.make_cold(batch, chunk)


def take_hot(topic: Topic) -> tuple[list[RecordBatch], bytes]:
    """``topic``'s stored batches a seal writes now, and their gone-flags, marked sealed (the
    caller writes them): every batch above ``sealed_upto`` while the topic's class logs records
    — those written as ephemeral before it did too (docs/DECISIONS.md, "Switching a topic's
    class") —, and for an ``ephemeral`` topic only those it wrote under a durable class
    (``HotState.logged_upto``): they stay durable; the ones it wrote as ephemeral are
    resident-only."""
    hot = topic.hot
    upto = topic.head_seq
    if topic.config.durability is Durability.EPHEMERAL:
        upto = min(upto, hot.logged_upto)
    batches, flags = topic.log.export(hot.sealed_upto, upto)
    if batches:  # a chunk never straddles the bound (``Topic.switch_logging``); if it did
        upto = max(upto, batches[-1].last_seq)
    hot.mark(upto, topic.head_seq)
    return batches, flags


def mark_sealed(topic: Topic) -> None:
    """Every record of ``topic`` up to its head is sealed (a snapshot's restore: every record
    loaded is in a segment)."""
    topic.hot.mark(topic.head_seq, topic.head_seq)
    topic.log.freeze(topic.head_seq)


def holds_unlogged(topic: Topic) -> bool:
    """Whether ``topic`` holds live records it wrote as ephemeral that no seal took yet
    (``HotState.unlogged_upto``): resident-only, though its class may now log records."""
    hot = topic.hot
    if hot.unlogged_upto <= hot.sealed_upto:
        return False
    first = topic.log.live_at_or_after(hot.sealed_upto + 1)
    return first is not None and first[0] <= hot.unlogged_upto


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
