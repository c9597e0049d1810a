"""Crash recovery: the newest snapshot and its segments, then the WAL tail, applied through
the live path's apply functions.

Replay reads every WAL file in LSN order and applies each frame with the same functions the
live path uses once a mutation is decided (``Topic.apply_append``, ``Topic.apply_delete``,
``Engine.apply_config`` ...), so recovered state is exactly what the live engine had made
visible. Replay is idempotent per frame: appends skip seqs at or below a topic's head, deletes
of dead seqs are no-ops.

A torn or corrupt frame ends the log: the file is truncated at the last valid frame (and any
later WAL files, which could only follow a hole, are set aside as ``*.corrupt``), and the loss is
logged. Frames must carry consecutive LSNs; a gap is treated the same way.

Ephemeral topics come back with ``head_seq`` at their durable seq reservation, so no seq
that may have been handed out before the crash is ever handed out again, holding only the
records they wrote under a durable class before they became ephemeral (docs/DECISIONS.md,
"Switching a topic's class").

Before anything is read or changed, :func:`check_versions` reads the format version of every WAL,
segment and snapshot file: one this server does not read (a newer server wrote it) raises
``UnsupportedFormat`` and the data directory is left exactly as it was. Older versions are read
as they are (``storage.versions``). Stored topic, router and schedule configs are read
tolerantly (``config.stored_config``, ``routers.stored_router_config``,
``schedules.stored_schedule_config``), never through the request rules,
so a request rule tightened since they were written cannot fail a recovery; but a value whose
meaning this server does not know (an enum value, an unknown filter operator, an out-of-range
u64), a CRC-valid frame of an unknown type or a ``ROUTER``/``SCHEDULE``/``CONSUMER`` frame of
an unknown kind raises ``UnsupportedFormat`` — from the snapshot while :func:`load_snapshot`
runs, before segments are pruned; from the WAL during replay, before any tail is cut.

What replay leaves for later, in :class:`ReplayReport`: the sealed records its ``DELETE`` frames
deleted (``flips``: their segment flags must be set before a checkpoint trims the frames, as the
live path's deletes are), and how many heads a crash made it raise above the replayed records
(``raised``: nothing durable holds those heads yet, see ``DataDirectory.recover``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from ..config import Durability, stored_config
from ..consumers import apply_frame as apply_consumer_frame
from ..consumers import restore as restore_consumers
from ..engine import Engine
from ..leases import LeaseEvent, LeaseEventKind
from ..routers import Routers
from ..schedules import Schedules
from ..storage import formats
from ..storage import segments as segment_files
from ..storage import snapshot as snapshot_files
from ..storage.coldstore import ColdStore
from ..storage.formats import TopicImage
from ..storage.frames import Frame, FrameType
from ..storage.fs import FileSystem
from ..storage.segments import CorruptSegment, SegmentStore, read_segment_index
from ..storage.snapshot import read_latest_snapshot
from ..storage.versions import SEGMENT, SNAPSHOT, WAL, FileFormat, UnsupportedFormat
from ..storage.wal import WAL_HEADER, wal_files, wal_frames, wal_layout
from ..topic import Topic
from .sealing import mark_sealed

log = logging.getLogger("topics.recovery")


@dataclass
class ReplayReport:
    snapshot_lsn: int = 0
    next_lsn: int = 1
    frames: int = 0
    records: int = 0
    truncated_bytes: int = 0
    corrupt_files: int = 0
    corrupt_segments: int = 0
    flips: dict[int, list[int]] = field(default_factory=dict)
    """Topic id -> seqs of sealed records (in a segment the snapshot lists) that replayed
    ``DELETE`` frames deleted: their on-disk delete flags are still clear, and the frames are
    their only witness until a checkpoint flips them."""
    raised: int = 0
    """How many non-ephemeral topics a crash made resume above their replayed records (their seq
    reservations); only a checkpoint records such a head."""
    reserved: dict[int, int] = field(default_factory=dict)
    """Topic id -> how far its seqs are covered by durable ``SEQ_RESERVE`` frames (the snapshot's
    value, raised by replayed frames; absent: nothing reserved). The WAL persistence, which owns
    reservations, starts from these (``WalPersistence.reservation``)."""


class Replayer:
    """Applies WAL frames to an engine."""

    def __init__(
        self, engine: Engine, routers: Routers, schedules: Schedules, reserved: dict[int, int]
    ) -> None:
        self.engine = engine
        self.routers = routers
        self.schedules = schedules
        self.reserved = reserved
        """See :attr:`ReplayReport.reserved` (updated in place)."""
        self.records = 0
        self.flips: dict[int, list[int]] = {}
        """Sealed records deleted by replayed frames (see :attr:`ReplayReport.flips`)."""
        self.raised = 0
        self.clean_stop: dict[int, int] | None = None
        """Exact ephemeral heads when the log ends with a clean shutdown (nothing acknowledged
        after it can be missing); ``None`` after a crash."""

    def apply(self, frame: Frame) -> None:
        is_stop = frame.type is FrameType.CLEAN_STOP
        self.clean_stop = formats.decode_clean_stop(frame.payload) if is_stop else None
        handler = {
            FrameType.TOPIC_PUT: self._topic_put,
            FrameType.TOPIC_DELETE: self._topic_delete,
            FrameType.APPEND: self._append,
            FrameType.DELETE: self._delete,
            FrameType.SEQ_RESERVE: self._seq_reserve,
            FrameType.LEASE: self._lease,
            FrameType.ROUTER: self._router,
            FrameType.SCHEDULE: self._schedule,
            FrameType.CONSUMER: self._consumer,
        }.get(frame.type)
        if handler is not None:
            handler(frame)

    def _topic_put(self, frame: Frame) -> None:
        p = formats.decode_topic_put(frame.payload)
        engine = self.engine
        config = stored_config(p.config, p.name)
        topic = engine.topic_by_id(p.id)
        if topic is None:
            topic = Topic(p.name, config, p.created_ms, previous_head=p.previous_head)
            topic.id = p.id
            engine.register(topic)
        elif config != topic.config:
            engine.apply_config(topic, config, p.ts)

    def _topic_delete(self, frame: Frame) -> None:
        topic_id, head = formats.decode_topic_delete(frame.payload)
        topic = self.engine.topic_by_id(topic_id)
        if topic is not None:
            topic.reserve_upto(head)
            self.engine.unregister(topic)
            self.reserved.pop(topic_id, None)

    def _append(self, frame: Frame) -> None:
        a = formats.decode_append(frame.payload)
        topic = self.engine.topic_by_id(a.topic_id)
        if topic is None:
            return
        batch = a.batch
        ts = batch.ts_runs[-1][1]
        topic.apply_append(batch, ts)
        if topic.config.durability is Durability.EPHEMERAL:
            # logged before the topic became ephemeral (an fsync write applied after the switch,
            # its frame after the snapshot's LSN): durable, as it was live (``sealing.take_hot``)
            topic.hot.stopped_logging(max(topic.hot.logged_upto, batch.last_seq))
        if a.key is not None:
            topic.idempotency.remember(a.key, ts, batch.first_seq, batch.last_seq)
        self.records += batch.count

    def _delete(self, frame: Frame) -> None:
        """Re-apply a delete; the sealed records it deletes are remembered for the next
        checkpoint, exactly as the live path hands them on (``WalPersistence.deleted``)."""
        topic_id, ranges = formats.decode_delete(frame.payload)
        topic = self.engine.topic_by_id(topic_id)
        if topic is None:
            return
        deleted = topic.apply_delete(chain.from_iterable(range(a, b + 1) for a, b in ranges))
        upto = topic.hot.sealed_upto
        sealed = [seq for seq in deleted if seq <= upto]
        if sealed:
            self.flips.setdefault(topic.id, []).extend(sealed)

    def _lease(self, frame: Frame) -> None:
        topic_id, rows = formats.decode_lease(frame.payload)
        topic = self.engine.topic_by_id(topic_id)
        if topic is not None and topic.queue is not None:
            for row in rows:
                event = LeaseEvent.from_row(row)
                if event.kind is LeaseEventKind.CLAIMED and not topic.is_live(event.seq):
                    continue  # the job was acked or deleted since
                topic.queue.apply(event)

    def _router(self, frame: Frame) -> None:
        payload = frame.payload
        kind = formats.router_frame_kind(payload)
        if kind == formats.ROUTER_PUT:
            self.routers.apply_put(formats.decode_router_put(payload))
        elif kind == formats.ROUTER_DELETE:
            self.routers.apply_delete(formats.decode_router_delete(payload))
        elif kind == formats.ROUTER_FORWARD:
            self.routers.apply_forward(formats.decode_forward(payload))
        else:
            raise UnsupportedFormat(
                f"WAL frame LSN {frame.lsn}: ROUTER frame kind {kind} is not one this server "
                "knows; it was written by a newer topics server (or the file is damaged) — "
                "upgrade topics to open this data directory"
            )

    def _schedule(self, frame: Frame) -> None:
        payload = frame.payload
        kind = formats.schedule_frame_kind(payload)
        if kind == formats.SCHEDULE_PUT:
            self.schedules.apply_put(formats.decode_schedule_put(payload))
        elif kind == formats.SCHEDULE_DELETE:
            self.schedules.apply_delete(formats.decode_schedule_delete(payload))
        elif kind == formats.SCHEDULE_RUN:
            self.schedules.apply_run(formats.decode_schedule_run(payload))
        else:
            raise UnsupportedFormat(
                f"WAL frame LSN {frame.lsn}: SCHEDULE frame kind {kind} is not one this server "
                "knows; it was written by a newer topics server (or the file is damaged) — "
                "upgrade topics to open this data directory"
            )

    def _consumer(self, frame: Frame) -> None:
        payload = frame.payload
        kind = formats.consumer_frame_kind(payload)
        if kind not in (formats.CONSUMER_SET, formats.CONSUMER_DELETE):
            raise UnsupportedFormat(
                f"WAL frame LSN {frame.lsn}: CONSUMER frame kind {kind} is not one this server "
                "knows; it was written by a newer topics server (or the file is damaged) — "
                "upgrade topics to open this data directory"
            )
        apply_consumer_frame(self.engine, kind, payload)

    def _seq_reserve(self, frame: Frame) -> None:
        topic_id, reserved = formats.decode_seq_reserve(frame.payload)
        topic = self.engine.topic_by_id(topic_id)
        if topic is not None:
            self.reserved[topic_id] = max(self.reserved.get(topic_id, 0), reserved)

    def finish(self) -> None:
        """After a crash, topics acked before durability resume above every seq they may have
        handed out (their un-fsynced tail may be lost; its seqs are never handed out again);
        :attr:`raised` counts the non-ephemeral ones that moved. After a clean stop nothing was
        lost: heads stay where they were, ephemeral ones (whose records are not logged) at the
        exact head the stop recorded. A recreated topic remembers the range a raise skipped
        (``Topic.resume_after_crash``), which the checkpoint recording the raised heads persists.
        Flips of topics deleted since are dropped (their segments go with them)."""
        self.routers.finish_replay()
        self.schedules.finish_replay()
        for topic in self.engine.topics():
            if topic.queue is not None:
                topic.queue.reconcile(topic.live_seqs())
            durability = topic.config.durability
            if durability is Durability.FSYNC:
                continue
            reserved = self.reserved.get(topic.id, 0)
            if self.clean_stop is None:
                moved = topic.resume_after_crash(max(reserved, topic.reserved_seq))
                if moved and durability is not Durability.EPHEMERAL:
                    self.raised += 1
            elif durability is Durability.EPHEMERAL:
                topic.advance_head(self.clean_stop.get(topic.id, reserved))
        live = self.engine.topic_by_id
        self.flips = {tid: seqs for tid, seqs in self.flips.items() if live(tid) is not None}


def load_snapshot(
    engine: Engine,
    routers: Routers,
    schedules: Schedules,
    fs: FileSystem,
    snapshot_dir: Path,
    segments: SegmentStore,
    cold: ColdStore,
    report: ReplayReport,
) -> Iterator[float]:
    """Load the newest snapshot and its segments into ``engine`` (and ``segments``' index, and
    its topics' named consumers), its routers into ``routers`` and its schedules into
    ``schedules``; sets
    ``report.snapshot_lsn``. Yields between segments.

    A segment is loaded from its index: the topic's record log learns where each chunk is and
    what accounts its records (``Topic.load_sealed``), and its records stay on disk (``cold``
    reads them when asked), so this costs time per segment and chunk, not per retained byte
    (except for an old version 3 segment, read whole once to check its CRC)."""
    image = read_latest_snapshot(fs, snapshot_dir)
    if image is None:
        return
    report.snapshot_lsn = image.lsn
    engine.next_topic_id = max(engine.next_topic_id, image.next_topic_id)
    engine.restore_deleted_heads(image.deleted_heads)
    for t in image.topics:
        config = stored_config(t.config, t.name)
        topic = Topic(t.name, config, t.created_ms, previous_head=t.previous_head)
        topic.id = t.id
        for name in t.segments:
            path = segments.topic_dir(topic.id) / name
            _load_segment(topic, segments, cold, path, t.evict_floor, report)
            yield 0.0
        restore_topic(topic, t)
        report.reserved[topic.id] = t.seq_reserved_durable
        engine.register(topic)
    routers.next_id = max(routers.next_id, image.next_router_id)
    for r in image.routers:
        routers.apply_put(r)
    schedules.next_id = max(schedules.next_id, image.next_schedule_id)
    for schedule in image.schedules:
        schedules.apply_put(schedule)
    restore_consumers(engine, image.consumers)


def restore_topic(topic: Topic, image: TopicImage) -> None:
    """Reinstate what a snapshot recorded of ``topic`` (``checkpoint.topic_image``) once the
    records of its segments are loaded: watermarks, tombstone history, idempotency keys and the
    queue projection (the seq reservation goes to ``ReplayReport.reserved``). Everything loaded
    is sealed."""
    topic.reinstate(
        head_seq=image.head_seq,
        reserved_seq=image.reserved_seq,
        evict_floor=image.evict_floor,
        losses=image.losses,
        holes=image.holes,
        last_write_ts=image.last_write_ts,
        last_read_ts=image.last_read_ts,
        last_ts=image.last_ts,
        skipped=image.skipped,
    )
    topic.idempotency.restore(image.idempotency)
    if topic.queue is not None and image.queue is not None:
        topic.queue.restore(image.queue, topic.is_live)
    mark_sealed(topic)


def _load_segment(
    topic: Topic, segments: SegmentStore, cold: ColdStore, path: Path, evict_floor: int, report: ReplayReport
) -> None:
    try:
        index = read_segment_index(cold.fs, path)
    except (OSError, CorruptSegment) as err:
        log.error("segment %s of topic %r is unreadable (%s); its records are lost", path, topic.name, err)
        report.corrupt_segments += 1
        return
    segments.add(topic.id, index.segment)
    pos = 0
    for chunk in index.chunks:
        gone = index.dead[pos : pos + chunk.count]
        pos += chunk.count
        if chunk.first_seq < evict_floor:  # evicted since the segment was sealed
            cut = min(chunk.count, evict_floor - chunk.first_seq)
            gone = b"\x01" * cut + gone[cut:]
        topic.load_sealed(chunk, cold.chunk(path, chunk.offset, chunk.length, chunk.crc), gone)
        report.records += gone.count(0)


def check_versions(fs: FileSystem, wal_dir: Path, segment_dir: Path, snapshot_dir: Path) -> None:
    """Refuse a data directory holding a file this server cannot read, before recovery changes
    anything: raises ``UnsupportedFormat`` for the first WAL, segment or snapshot file whose
    header names a version ``storage.versions`` does not list as readable (reading only each
    file's first bytes). Files without a recognisable header are left to the readers (a
    headerless WAL file is version 1; a segment or snapshot without its magic is corrupt)."""
    for _, path in wal_files(fs, wal_dir):
        version = wal_layout(fs.read_head(path, len(WAL_HEADER))).version
        if version is not None:
            WAL.check(path, version)
    for name in fs.listdir(snapshot_dir):
        if name.endswith(snapshot_files.SUFFIX):
            _check(
                fs,
                snapshot_dir / name,
                snapshot_files.VERSION_HEAD,
                snapshot_files.snapshot_version,
                SNAPSHOT,
            )
    for topic_dir in fs.listdir(segment_dir):
        for name in fs.listdir(segment_dir / topic_dir):
            if name.endswith(".seg"):
                path = segment_dir / topic_dir / name
                _check(fs, path, segment_files.VERSION_HEAD, segment_files.segment_version, SEGMENT)


def _check(
    fs: FileSystem, path: Path, head: int, version_of: Callable[[bytes], int | None], kind: FileFormat
) -> None:
    version = version_of(fs.read_head(path, head))
    if version is not None:
        kind.check(path, version)


def replay_wal(
    engine: Engine,
    routers: Routers,
    schedules: Schedules,
    fs: FileSystem,
    wal_dir: Path,
    report: ReplayReport,
) -> Iterator[float]:
    """Replay every WAL file into ``engine``, ``routers`` and ``schedules``; yields progress in
    [0, 1]."""
    files = wal_files(fs, wal_dir)
    total = sum(fs.size(path) for _, path in files) or 1
    done = 0
    replayer = Replayer(engine, routers, schedules, report.reserved)
    expected_lsn: int | None = None
    for index, (first_lsn, path) in enumerate(files):
        buf = fs.read_bytes(path)
        valid_end = wal_layout(buf[: len(WAL_HEADER)]).frames_at
        for frame in wal_frames(buf, path):
            if expected_lsn is not None and frame.lsn != expected_lsn:
                break
            if frame.lsn > report.snapshot_lsn:
                replayer.apply(frame)
                report.frames += 1
            expected_lsn = frame.lsn + 1
            valid_end = frame.end
            if report.frames % 256 == 0:
                yield min(1.0, (done + valid_end) / total)
        done += len(buf)
        if expected_lsn is None:
            expected_lsn = first_lsn
        if valid_end < len(buf):
            _cut_tail(fs, path, valid_end, len(buf), files[index + 1 :], report)
            break
    replayer.finish()
    report.records += replayer.records
    report.flips, report.raised = replayer.flips, replayer.raised
    report.next_lsn = max(expected_lsn or 1, report.snapshot_lsn + 1)
    yield 1.0


def _cut_tail(
    fs: FileSystem,
    path: Path,
    valid_end: int,
    size: int,
    later: list[tuple[int, Path]],
    report: ReplayReport,
) -> None:
    log.warning(
        "WAL %s: torn or corrupt frame at byte %d; truncating %d bytes",
        path.name,
        valid_end,
        size - valid_end,
    )
    fs.truncate(path, valid_end)
    report.truncated_bytes += size - valid_end
    for _, later_path in later:
        log.error("WAL %s follows a corrupt frame; set aside as %s.corrupt", later_path.name, later_path.name)
        fs.rename(later_path, later_path.with_name(later_path.name + ".corrupt"))
        report.corrupt_files += 1
    fs.fsync_dir(path.parent)
