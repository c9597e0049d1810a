"""The data directory's lifecycle around an :class:`Engine`: lock it, recover (snapshot +
segments + WAL tail), open the WAL and switch the engine to WAL persistence, checkpoint, close.

Layout of ``TOPICS_DATA_DIR`` (files ``0600``, directories ``0700``)::

    LOCK                         exclusive flock: one server per data directory
    wal/<first-lsn>.wal          write-ahead log files (storage.wal, storage.frames)
    segments/<topic-id>/<first-seq>.seg   sealed records (storage.segments)
    snapshots/<lsn>.snap         the latest checkpoint (storage.snapshot)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from ..config import Durability
from ..engine import Engine
from ..routers import Routers
from ..schedules import Schedules
from ..storage.coldstore import ColdStore
from ..storage.fs import FileSystem
from ..storage.segments import SegmentStore
from ..storage.wal import SYNC_DELAY_S, Wal
from .cacheview import CacheView
from .checkpoint import Checkpointer, release_cut, take_cut, write_cut
from .recovery import ReplayReport, check_versions, load_snapshot, replay_wal
from .sealing import Sealer, SegmentPolicy
from .walpersistence import WalPersistence, read_only_error
from .walview import WalView

log = logging.getLogger("topics.datadir")

QUIET_INTERVALS = 10
"""On a quiet server (less than a sixteenth of ``checkpoint_wal_bytes`` written), a checkpoint
comes after this many ``checkpoint_interval_ms`` (10 minutes by default)."""

DEFAULT_CACHE_BYTES = 64 << 20
"""``TOPICS_CACHE_BYTES``' default: what a small server can spare for recently read records — a
few seconds of a fast consumer's reads, or the last ~64k records of 1 KB —
while resident memory stays far below the retained bytes (docs/STORAGE.md)."""


class DataDirLocked(Exception):
    """Another process holds the data directory."""


class DataDirectory:
    def __init__(
        self,
        path: Path,
        fs: FileSystem | None = None,
        *,
        wal_rotate_bytes: int = 64 << 20,
        wal_sync_delay_s: float = SYNC_DELAY_S,
        segment_policy: SegmentPolicy | None = None,
        checkpoint_wal_bytes: int = 64 << 20,
        checkpoint_interval_ms: int = 60_000,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        inline_segments: bool = False,
    ) -> None:
        """``cache_bytes``: the shared cache of cold record chunks (``TOPICS_CACHE_BYTES``).
        ``inline_segments`` (tests only): segment work runs on the calling thread
        (``Sealer``)."""
        self.path = path
        self.fs = fs or FileSystem()
        self.wal_rotate_bytes = wal_rotate_bytes
        self.wal_sync_delay_s = wal_sync_delay_s
        self.segment_policy = segment_policy or SegmentPolicy()
        self.checkpoint_wal_bytes = checkpoint_wal_bytes
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.inline_segments = inline_segments
        self.segments = SegmentStore(self.fs, path / "segments")
        self.cold = ColdStore(self.fs, cache_bytes)
        self.wal: Wal | None = None
        self.engine: Engine | None = None
        self.routers: Routers | None = None
        self.schedules: Schedules | None = None
        self.persistence: WalPersistence | None = None
        self.sealer: Sealer | None = None
        self.checkpointer: Checkpointer | None = None
        self.report = ReplayReport()
        self.recovery_failed: OSError | None = None
        """The error of the checkpoint recovery wrote, if it failed: the WAL opens read-only."""
        self._lock_fd: int | None = None
        self._checkpointing: asyncio.Future[None] | None = None
        """The checkpoint running now, if any (:meth:`checkpoint`)."""

    @property
    def wal_dir(self) -> Path:
        return self.path / "wal"

    @property
    def snapshot_dir(self) -> Path:
        return self.path / "snapshots"

    def lock(self) -> None:
        self.fs.makedirs(self.path)
        try:
            self._lock_fd = self.fs.lock(self.path / "LOCK")
        except OSError:
            raise DataDirLocked(
                f"{self.path} is in use by another topics server; stop it or point TOPICS_DATA_DIR elsewhere"
            ) from None

    def recover(
        self, engine: Engine, routers: Routers | None = None, schedules: Schedules | None = None
    ) -> Iterator[float]:
        """Load the snapshot and segments, replay the WAL tail (yielding progress), and record
        the heads a crash raised (:meth:`_record_raised_heads`). Routers (their definitions,
        progress and derived copies) are recovered into ``routers``, schedules (definitions and
        progress) into ``schedules``.

        Raises ``storage.versions.UnsupportedFormat``, having changed nothing, when a file is of
        a format version this server does not read (a newer server wrote it): the server must
        not start (``check_versions``)."""
        self.routers = routers = routers if routers is not None else Routers(engine, autorun=False)
        self.schedules = schedules = schedules if schedules is not None else Schedules(engine)
        for directory in (self.wal_dir, self.segments.directory, self.snapshot_dir):
            self.fs.makedirs(directory)
        check_versions(self.fs, self.wal_dir, self.segments.directory, self.snapshot_dir)
        yield from load_snapshot(
            engine, routers, schedules, self.fs, self.snapshot_dir, self.segments, self.cold, self.report
        )
        orphans = self.segments.remove_unlisted()
        if orphans:
            log.info("removed %d segment files sealed after the snapshot (the WAL replays them)", orphans)
        yield from replay_wal(engine, routers, schedules, self.fs, self.wal_dir, self.report)
        if self.report.raised:
            self._record_raised_heads(engine, routers, schedules)
        r = self.report
        log.info(
            "recovered snapshot@%d + %d WAL frames, %d records; next LSN %d",
            r.snapshot_lsn,
            r.frames,
            r.records,
            r.next_lsn,
        )

    def _record_raised_heads(self, engine: Engine, routers: Routers, schedules: Schedules) -> None:
        """Checkpoint at the last replayed LSN, before anything is served: a crash made topics
        resume above their replayed records, and nothing durable holds those heads — the WAL's
        seq reservations imply them only while the log ends as a crash left it, so a clean stop
        without a final checkpoint (``CLEAN_STOP``) would take them back at the next start and
        seqs would be handed out twice. The snapshot records them (and flips the replayed
        deletes of sealed records); the WAL files it covers are trimmed by the next checkpoint.

        Runs on the recovery thread, like the rest of recovery. An I/O error leaves the old
        snapshot in force (the WAL still holds everything) and the WAL opens read-only, as after
        any failed segment or snapshot write."""
        report = self.report
        cut = take_cut(engine, routers, schedules, report.next_lsn - 1, report.flips, report.reserved)
        report.flips = {}
        try:
            sealed = write_cut(cut, self.segments, self.segment_policy, self.snapshot_dir)
        except OSError as err:
            log.error("could not record the heads a crash raised (%s); writes are refused", err)
            self.recovery_failed = err
            return
        release_cut(engine, self.cold, sealed)
        log.info("recorded %d heads raised after a crash: snapshot@%d", report.raised, cut.image.lsn)

    def open(self, engine: Engine, loop: asyncio.AbstractEventLoop) -> None:
        """After recovery: open the WAL (with its sync thread) and start the segment thread, and
        make the engine persist through them. The seq reservations replay found go to the WAL
        persistence, which owns them from now on; sealed deletes that replay re-applied and no
        checkpoint flipped yet are handed on to the next checkpoint, as live deletes are."""
        self.engine = engine
        self.wal = Wal(
            self.fs,
            self.wal_dir,
            loop,
            next_lsn=self.report.next_lsn,
            rotate_bytes=self.wal_rotate_bytes,
            sync_delay_s=self.wal_sync_delay_s,
            error_for=read_only_error,
        )
        self.sealer = Sealer(self.wal, self.segments, self.segment_policy, self.cold, self.inline_segments)
        self.persistence = WalPersistence(
            self.wal, seal=self.sealer.maybe_seal, reserved=self.report.reserved, checkpoint=self.checkpoint
        )
        self.report.reserved = {}
        if self.recovery_failed is not None:
            self.wal.fail(self.recovery_failed)
        for topic_id, seqs in self.report.flips.items():
            topic = engine.topic_by_id(topic_id)
            if topic is not None:
                self.persistence.deleted(topic, seqs)
        self.report.flips = {}
        routers = self.routers if self.routers is not None else Routers(engine, autorun=False)
        schedules = self.schedules if self.schedules is not None else Schedules(engine)
        self.checkpointer = Checkpointer(
            engine, routers, schedules, self.persistence, self.sealer, self.snapshot_dir
        )
        engine.persistence = self.persistence

    def cache_view(self) -> CacheView:
        """The cold-record cache's fill and counters, and the cold reads'."""
        return CacheView.of(self.cold)

    def wal_view(self) -> WalView:
        """The WAL's counters and state for monitoring (zeros until :meth:`open`)."""
        return WalView.of(self.wal)

    def decay_heap(self) -> None:
        """Give free heap pages back to the system if nothing did for a while (call it every
        few seconds; ``storage.coldstore``: a trim on a reader thread, never on the caller's)."""
        self.cold.decay()

    def checkpoint_due(self, now_ms: int) -> bool:
        """(``now_ms``: the steady clock, ``Clock.steady_ms``.) A checkpoint is due every
        ``checkpoint_wal_bytes`` of WAL; every
        ``checkpoint_interval_ms`` once a sixteenth of that was written since the last one; and
        every :data:`QUIET_INTERVALS` intervals once anything was. What recovery replays (and
        what stays unsealed in memory) is bounded in bytes and in time. A quiet server's small
        tail waits longer — checkpointing it every interval would seal a tiny segment per topic
        each time (segments are never merged) — but not for ever: a checkpoint is also what
        reclaims the disk space of deleted topics and records."""
        cp = self.checkpointer
        if cp is None:
            return False
        written = cp.wal_bytes_since_checkpoint()
        if written >= self.checkpoint_wal_bytes:
            return True
        elapsed = now_ms - cp.last_checkpoint_ms
        if written >= max(1, self.checkpoint_wal_bytes // 16):
            return elapsed >= self.checkpoint_interval_ms
        return written > 0 and elapsed >= QUIET_INTERVALS * self.checkpoint_interval_ms

    async def checkpoint(self, final: bool = False) -> None:
        """Checkpoint now (unless the WAL is read-only), after any checkpoint still running:
        one runs at a time. Once begun, a checkpoint runs to its end even if its caller is
        cancelled (a shutdown cancels the periodic one): its cut marks the records it seals as
        sealed, so stopping before its file work would leave them in no segment while the next
        snapshot covers their WAL frames."""
        while self._checkpointing is not None:
            with contextlib.suppress(Exception):  # its caller sees its error
                await asyncio.shield(self._checkpointing)
        if self.checkpointer is None or self.wal is None or self.wal.read_only:
            return
        task = asyncio.ensure_future(self.checkpointer.checkpoint(final))
        self._checkpointing = task
        task.add_done_callback(self._checkpoint_done)
        await asyncio.shield(task)

    def _checkpoint_done(self, task: asyncio.Future[None]) -> None:
        if self._checkpointing is task:
            self._checkpointing = None
        if not task.cancelled():
            task.exception()  # retrieved: a cancelled caller never sees it; an I/O error was logged

    def close(self) -> None:
        """Finish segment work, then flush and close the WAL, ending it with a ``CLEAN_STOP``
        frame that records the exact heads of ephemeral topics (their records are never logged)."""
        if self.sealer is not None:
            self.sealer.close()
        self.cold.close()
        if self.wal is not None:
            if not self.wal.read_only and self.engine is not None and self.persistence is not None:
                heads = {
                    t.id: t.reserved_seq
                    for t in self.engine.topics()
                    if t.config.durability is Durability.EPHEMERAL
                }
                self.persistence.clean_stop(heads)
            self.wal.close()
        if self._lock_fd is not None:
            self.fs.close(self._lock_fd)
            self._lock_fd = None
