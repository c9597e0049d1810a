"""Checkpointing: how records leave the WAL so it can be trimmed.

A checkpoint seals every hot record of every topic that a seal takes (``sealing.take_hot``:
not the records an ``ephemeral`` topic wrote as ephemeral), flips the delete flags of
sealed records deleted since the last checkpoint (until now their WAL ``DELETE`` frames were the
witness), writes a snapshot of all topics' metadata and the routers at a WAL position (LSN),
drops segments that no longer hold a live record, and trims the WAL files wholly below that LSN.
The routers, the schedules and the named consumers are sections of the snapshot.

Consistency: the state is captured synchronously on the event loop (a cut). The file work runs
on the segment thread (:class:`Sealer`) after every frame submitted before the cut is durable.
The WAL is trimmed last, once the snapshot is durable: its old files are removed on the WAL's
sync thread (``Wal.run_task``), after every frame submitted before the trim is durable.
The snapshot LSN is below the first fsync-class frame still waiting to be applied, so such a
frame is replayed after the snapshot; replay is idempotent, so frames the snapshot already
covers are harmless. Ephemeral topics contribute metadata, and the records they logged before
they became ephemeral.

The snapshot's record of a topic (its ``TopicImage``) is assembled here, by :func:`topic_image`,
from what ``Topic`` exposes and the seq reservation ``WalPersistence`` keeps;
``recovery.restore_topic`` reads it back.

Recovery writes a checkpoint too when a crash raised heads above the replayed records
(``DataDirectory._record_raised_heads``): the same cut and file work, run synchronously on the
recovery thread at the last replayed LSN before the WAL opens; its WAL files are trimmed by the
next checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..consumers import images as consumer_images
from ..engine import Engine
from ..routers import Routers
from ..schedules import Schedules
from ..storage.coldstore import ColdStore
from ..storage.formats import RecordBatch, SnapshotImage, TopicImage
from ..storage.segments import SegmentStore
from ..storage.snapshot import write_snapshot
from ..storage.wal import WalFailed
from ..topic import Topic
from .sealing import Sealed, Sealer, SegmentPolicy, release_sealed, seal_batches, take_hot
from .walpersistence import WalPersistence


@dataclass(slots=True)
class Cut:
    """A checkpoint's state, captured in one synchronous step: the snapshot ``image`` at its
    LSN, the hot records to seal (topic id, batches, gone-flags), the sealed records whose
    delete flags to flip (topic id -> seqs) and each topic's earliest seq (segments wholly
    below it are dropped). What the cut seals is marked sealed when it is taken
    (``sealing.take_hot``)."""

    image: SnapshotImage
    seals: list[tuple[int, list[RecordBatch], bytes]]
    flips: dict[int, list[int]]
    earliest: dict[int, int]


def take_cut(
    engine: Engine,
    routers: Routers,
    schedules: Schedules,
    lsn: int,
    flips: dict[int, list[int]],
    reserved: dict[int, int],
    final: bool = False,
) -> Cut:
    """Capture the state a snapshot at ``lsn`` holds; ``flips`` are the sealed deletes whose
    witnesses (WAL ``DELETE`` frames) are at or below ``lsn``, ``reserved`` the topics' seq
    reservations (topic id -> highest seq covered, frames at or below ``lsn``). ``final``: seq
    reservations collapse to the heads (clean shutdown)."""
    seals: list[tuple[int, list[RecordBatch], bytes]] = []
    topics: list[TopicImage] = []
    earliest: dict[int, int] = {}
    shift = engine.clock.wall_of(0)  # queue times: steady clock -> wall instants
    for topic in engine.topics():
        batches, flags = take_hot(topic)
        if batches:
            seals.append((topic.id, batches, flags))
        earliest[topic.id] = topic.earliest_seq
        topics.append(topic_image(topic, reserved.get(topic.id, 0), final, shift))
    image = SnapshotImage(
        lsn,
        engine.next_topic_id,
        engine.deleted_heads(),
        topics,
        routers.images(),
        routers.next_id,
        schedules.images(),
        schedules.next_id,
        consumer_images(engine),
    )
    return Cut(image, seals, flips, earliest)


def topic_image(topic: Topic, reserved: int, final: bool = False, shift: int = 0) -> TopicImage:
    """What ``topic`` contributes to a snapshot: everything but its records, whose segments
    :func:`write_cut` lists once they are sealed; ``reserved`` is its seq reservation (the WAL
    persistence's). ``final`` (clean shutdown): the reservation collapses to the head, so the
    next start resumes exactly here. ``shift`` turns the queue's steady-clock times into wall
    instants (``Clock.wall_of``). Read back by ``recovery.restore_topic``."""
    return TopicImage(
        id=topic.id,
        name=topic.name,
        config=topic.config.to_stored(),
        created_ms=topic.created_ms,
        previous_head=topic.previous_head,
        head_seq=topic.head_seq,
        reserved_seq=topic.reserved_seq,
        seq_reserved_durable=topic.reserved_seq if final else reserved,
        evict_floor=topic.evict_floor,
        losses=[[run.reason, run.last, run.count] for run in topic.losses],
        last_write_ts=topic.last_write_ts,
        last_read_ts=topic.last_read_ts,
        last_ts=topic.last_ts,
        idempotency=topic.idempotency.entries(),
        queue=topic.queue.image(topic.config.leases_durable, shift) if topic.queue is not None else None,
        segments=[],
        holes=[[seq, missed] for seq, missed in topic.reachable_holes()],
        skipped=[[low, high] for low, high in topic.skipped],
    )


def write_cut(
    cut: Cut, segments: SegmentStore, policy: SegmentPolicy, snapshot_dir: Path
) -> dict[int, list[Sealed]]:
    """The file work of a checkpoint, in order: seal the hot records into segments, flip the
    delete flags (each touched segment fsynced once), write the snapshot atomically, then drop
    the segments no live record needs. Once the snapshot is durable, every WAL frame at or below
    its LSN is redundant. Raises ``OSError``: nothing is trimmed then.

    A segment is dropped once its count of set flags reaches its size, so a flag must never be
    counted twice: ``SegmentStore.flip_deleted`` counts only flags it sets, and the engine
    reports only the records a delete removed (two ``fsync`` deletes of one record planned
    before either applied both name it).

    Segments of topics created after the cut (sealed on this thread between the cut and this
    work) are kept: the snapshot does not list them, so recovery drops them and replays their
    records from the WAL past the snapshot, but until then their chunks may be cold.

    Returns the segments it sealed, by topic id (their chunks can go cold:
    ``sealing.release_sealed``)."""
    sealed: dict[int, list[Sealed]] = {}
    for topic_id, batches, flags in cut.seals:
        sealed.setdefault(topic_id, []).extend(seal_batches(segments, topic_id, batches, flags, policy))
    for topic_id, seqs in cut.flips.items():
        segments.flip_deleted(topic_id, sorted(set(seqs)))
    keep = {tid: segments.live_segments(tid, floor) for tid, floor in cut.earliest.items()}
    for tid, topic_segments in segments.by_topic.items():
        if tid >= cut.image.next_topic_id:  # a topic created after the cut: not this one's to drop
            keep[tid] = list(topic_segments)
    for entry in cut.image.topics:
        entry.segments = [s.path.name for s in keep[entry.id]]
    segments.fs.makedirs(snapshot_dir)
    write_snapshot(segments.fs, snapshot_dir, cut.image)
    segments.retain(keep)
    return sealed


def release_cut(engine: Engine, cold: ColdStore, sealed: dict[int, list[Sealed]]) -> None:
    """The segments a checkpoint sealed are durable: their topics' chunks go cold."""
    for topic_id, topic_segments in sealed.items():
        topic = engine.topic_by_id(topic_id)
        if topic is not None:
            release_sealed(cold, topic, topic_segments)


class Checkpointer:
    def __init__(
        self,
        engine: Engine,
        routers: Routers,
        schedules: Schedules,
        persistence: WalPersistence,
        sealer: Sealer,
        snapshot_dir: Path,
    ) -> None:
        self.engine = engine
        self.routers = routers
        self.schedules = schedules
        self.persistence = persistence
        self.sealer = sealer
        self.wal = persistence.wal
        self.snapshot_dir = snapshot_dir
        self.last_checkpoint_bytes = 0
        self.last_checkpoint_ms = engine.clock.steady_ms()

    def wal_bytes_since_checkpoint(self) -> int:
        return self.wal.stats.bytes_written_total - self.last_checkpoint_bytes

    async def checkpoint(self, final: bool = False) -> None:
        """Cut now; returns once the snapshot is durable and the WAL trimmed.

        Raises ``WalFailed`` (nothing written) when segment work failed before this
        checkpoint's file work ran — also after its cut: a seal exports its records and marks
        them sealed when it is submitted, so a cut taken while it runs does not hold them, and
        a snapshot at the cut's LSN would then cover their WAL frames with no segment holding
        them (recovery would skip them). Until a restart they stay hot, and in the WAL.

        ``final`` (clean shutdown, nothing can be lost after it): seq reservations collapse to
        the heads, so the next start resumes exactly where this one stopped."""
        lsn = self.persistence.checkpoint_lsn()
        self.last_checkpoint_bytes = self.wal.stats.bytes_written_total
        self.last_checkpoint_ms = self.engine.clock.steady_ms()
        persistence = self.persistence
        cut = take_cut(
            self.engine,
            self.routers,
            self.schedules,
            lsn,
            persistence.take_flips(),
            persistence.reserved_seqs(),
            final,
        )
        segments, snapshot_dir = self.sealer.segments, self.snapshot_dir
        policy = self.sealer.policy
        wal = self.wal
        await wal.run_task(lambda: None)  # the frames the flips witness are durable

        def work() -> dict[int, list[Sealed]]:
            if wal.failed is not None:  # a seal before this one failed: see the docstring
                raise WalFailed(f"no checkpoint after a failed storage write ({wal.failed})")
            return write_cut(cut, segments, policy, snapshot_dir)

        sealed = await self.sealer.run(work)
        release_cut(self.engine, self.sealer.cold, sealed)
        self.sealer.released()
        await wal.trim(lsn)
