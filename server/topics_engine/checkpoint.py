"""Sealing and checkpointing: how records leave the WAL so it can be trimmed.

*Sealing* writes a topic's hot records (live, ``seq > sealed_upto``) into a new immutable
segment, when the hot part reaches ``SegmentPolicy`` limits (events, bytes, age) and at every
checkpoint. *Checkpointing* seals every hot record of every non-ephemeral topic, flips the
delete flags of sealed records deleted since the last checkpoint (until now their WAL ``DELETE``
frames were the witness), writes a snapshot of all topics' metadata at a WAL position (LSN),
drops segments that no longer hold a live record, and trims the WAL files wholly below that LSN.

Consistency: the state is captured synchronously on the event loop (a cut). The file work runs
on a dedicated segment thread — never on the WAL writer, so sealing 100k records or writing a
snapshot does not delay group commits — after every frame submitted before the cut is durable;
segment work runs in submission order on that one thread. The WAL is trimmed last, on the
writer thread (it owns the file), once the snapshot is durable. The snapshot LSN is below the
first fsync-class frame still waiting to be applied, so such a frame is replayed after the
snapshot; replay is idempotent, so frames the snapshot already covers are harmless. Ephemeral
topics contribute metadata only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .config import Durability
from .engine import Engine
from .journal import WalJournal
from .storage.segments import SegmentStore
from .storage.snapshot import write_snapshot
from .topic import Topic

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class SegmentPolicy:
    max_events: int = 100_000
    max_bytes: int = 64 << 20
    max_age_ms: int = 600_000


class Checkpointer:
    def __init__(
        self, engine: Engine, journal: WalJournal, segments: SegmentStore, policy: SegmentPolicy
    ) -> None:
        self.engine = engine
        self.journal = journal
        self.wal = journal.wal
        self.segments = segments
        self.policy = policy
        self.snapshot_dir = segments.directory.parent / "snapshots"
        self.last_checkpoint_bytes = 0
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="topics-segments")

    def _on_worker(self, fn: Callable[[], None]) -> asyncio.Future[None]:
        """Run segment/snapshot file work on the segment thread (never on the WAL writer, so it
        never delays a group commit); an I/O error there turns the WAL read-only."""

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

        return self._on_worker(task)

    def wal_bytes_since_checkpoint(self) -> int:
        return self.wal.stats.bytes_written_total - self.last_checkpoint_bytes

    async def checkpoint(self, final: bool = False) -> None:
        """Cut now; returns once the snapshot is durable and the WAL trimmed.

        ``final`` (clean shutdown, nothing can be lost after it): seq reservations collapse to
        the heads, so the next start resumes exactly where this one stopped."""
        lsn = self.journal.checkpoint_lsn()
        self.last_checkpoint_bytes = self.wal.stats.bytes_written_total
        engine = self.engine
        seals: list[tuple[int, list[Any]]] = []
        topics: list[dict[str, Any]] = []
        earliest: dict[int, int] = {}
        for topic in engine.topics():
            if topic.config.durability is not Durability.EPHEMERAL:
                seals.append((topic.id, topic.hot_records()))
            topic.mark_sealed()
            earliest[topic.id] = topic.earliest_seq
            entry = {
                "id": topic.id,
                "name": topic.name,
                "config": topic.config.to_wire(),
                "created_ms": topic.created_ms,
                "previous_head": topic.previous_head,
                **topic.watermarks(),
            }
            if final:
                entry["seq_reserved_durable"] = topic.reserved_seq
            topics.append(entry)
        state: dict[str, Any] = {
            "version": SNAPSHOT_VERSION,
            "lsn": lsn,
            "next_topic_id": engine.next_topic_id,
            "deleted_heads": engine.deleted_heads(),
            "topics": topics,
        }
        segments, fs, wal, directory = self.segments, self.segments.fs, self.wal, self.snapshot_dir

        chunk = self.policy.max_events

        flips = self.journal.take_flips()

        def files() -> None:
            for topic_id, records in seals:
                for start in range(0, len(records), chunk):
                    segments.seal(topic_id, records[start : start + chunk])
            for topic_id, seqs in flips.items():
                segments.flip_deleted(topic_id, sorted(seqs))
            keep = {tid: segments.live_segments(tid, floor) for tid, floor in earliest.items()}
            for entry in topics:
                entry["segments"] = [s.path.name for s in keep[entry["id"]]]
            fs.makedirs(directory)
            write_snapshot(fs, directory, lsn, state)
            segments.retain(keep)

        await wal.run_task(lambda: None)  # the frames the flips witness are durable
        await self._on_worker(files)
        await wal.run_task(lambda: wal.trim(lsn))
