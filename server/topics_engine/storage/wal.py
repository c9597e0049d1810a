"""The write-ahead log: writes on the event loop, group-committed by one sync thread.

Callers (the engine, on the event-loop thread) :meth:`Wal.submit` encoded frames. Submission
assigns the LSN and queues the frame in one step, so frames reach the file in exactly the order
the engine decided them (seq assignment happens in the same synchronous engine call). Once per
event-loop iteration everything queued is written with one ``write`` — into the page cache, a
few microseconds — on the loop thread itself: no thread handoff per frame (Redis writes its AOF
the same way). Sooner when asked (:meth:`Wal.write_queued`): the server writes what a request
submitted before its answer leaves, so what is acknowledged on enqueue (``disk``) is in the page
cache first, and the frames of one request still go in one ``write``.

Durability is the sync thread's job: it ``fdatasync``s the log and then — back on the event
loop, in LSN order — runs each frame's ``on_durable`` callback and resolves its future with the
sync's milliseconds. A sync covers every frame written before it started, so one fsync is
amortized over every frame that arrived meanwhile (group commit). A written frame somebody waits
for (``fsync`` class, control-plane changes) asks for a sync at once; frames nobody waits for
(``disk`` and ``memory``, acked on enqueue) are synced within ``sync_delay_s`` (default
:data:`SYNC_DELAY_S`): the longest a power loss can take back of an acknowledged ``disk``
write. A process crash loses none of it — the bytes are in the page cache as soon as they are
written.

Failure: if a write or a sync fails, the WAL turns read-only. Every frame not yet durable and
every later submission fails (futures get ``error_for(error)``); nothing is ever acknowledged as
durable that was not fsynced. Whether bytes of a failed write reached the disk is unknown, which
is why the log must not continue after it: recovery truncates at the first torn frame, and
frames written after a hole would be lost with it.

Files: ``wal/<first-lsn:020d>.wal``, rotated after ``rotate_bytes`` (the new file's directory
entry is fsynced before any frame in it counts as durable); :meth:`trim` removes files whose
frames all precede a checkpoint. :meth:`run_task` runs file work on the sync thread once every
frame submitted before it is durable.

A file's layout (versions: ``versions.WAL``)::

    version 2:  b"TWAL" | u8 2 | frames...
    version 1:  frames...            (no header: files written by servers before version 2)

Frames (``frames``) are the same in both. The header is written with a file's first frames, in
the same write, so a file is empty, or starts with its header: a file shorter than the header
holds no frame (a torn header, truncated by recovery like any torn tail). A version 1 file is
read as is and never appended to: the WAL continues in a new version 2 file. A file naming a
newer version refuses recovery (``versions.UnsupportedFormat``) before anything is changed.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _codec
from .formats import RecordBatch
from .frames import Frame, FrameType, frame_parts, scan
from .fs import FileSystem
from .versions import WAL

log = logging.getLogger("topics.wal")

WAL_SUFFIX = ".wal"
WAL_MAGIC = b"TWAL"
WAL_VERSION = WAL.current
WAL_HEADER = WAL_MAGIC + bytes((WAL_VERSION,))
"""What a version 2 file starts with (5 bytes)."""
SYNC_DELAY_S = 0.01
"""Default longest time a written but unwaited-for frame (disk/memory class) stays un-fsynced
(``TOPICS_WAL_SYNC_MS``). 10 ms: a 1-connection stream of single appends pays a fsync per ~30
writes instead of per ~6 (docs/BENCHMARKS.md); PostgreSQL's ``wal_writer_delay`` is 200 ms,
Redis' ``everysec`` 1 s."""


class WalFailed(Exception):
    """The WAL could not persist; it is read-only until restart."""


def wal_file_name(first_lsn: int) -> str:
    return f"{first_lsn:020d}{WAL_SUFFIX}"


@dataclass(frozen=True, slots=True)
class WalLayout:
    """How a WAL file's bytes are laid out, from its first :data:`WAL_HEADER` bytes."""

    version: int | None
    """Its format version; ``None``: shorter than a header and holding no frame."""
    frames_at: int
    """Where its first frame starts (0 for version 1 and for a file holding no frame)."""


def wal_layout(head: bytes) -> WalLayout:
    """The layout a file starting with ``head`` (its first ``len(WAL_HEADER)`` bytes) has:

    - starts with the magic and a version byte: that version, frames after the header;
    - shorter than a header (empty, or a torn header or first frame): no version, no frame;
    - anything else: version 1 (headerless), frames from byte 0. A version 1 frame could start
      with the magic only with a first frame of ~1.28 GB (its ``u32`` length), which no server
      wrote."""
    if len(head) >= len(WAL_HEADER) and head[: len(WAL_MAGIC)] == WAL_MAGIC:
        return WalLayout(head[len(WAL_MAGIC)], len(WAL_HEADER))
    if len(head) < len(WAL_HEADER):
        return WalLayout(None, 0)
    return WalLayout(1, 0)


def wal_frames(buf: bytes, path: Path | None = None) -> Iterator[Frame]:
    """The valid frames of a WAL file's bytes ``buf``, whatever its (readable) version; raises
    ``versions.UnsupportedFormat`` (naming ``path``) for a version this server does not read."""
    layout = wal_layout(buf[: len(WAL_HEADER)])
    if layout.version is None:
        return iter(())
    WAL.check(path or Path("WAL file"), layout.version)
    return scan(buf, layout.frames_at, path)


def wal_files(fs: FileSystem, directory: Path) -> list[tuple[int, Path]]:
    """(first lsn, path) of every WAL file, ascending."""
    out = []
    for name in fs.listdir(directory):
        if name.endswith(WAL_SUFFIX) and name[: -len(WAL_SUFFIX)].isdigit():
            out.append((int(name[: -len(WAL_SUFFIX)]), directory / name))
    return sorted(out)


@dataclass(slots=True)
class _Waiter:
    lsn: int
    future: asyncio.Future[float] | None
    on_durable: Callable[[], None] | None


@dataclass(slots=True)
class _Task:
    lsn: int
    task: Callable[[], Any]
    future: asyncio.Future[float]


FSYNC_BUCKETS_US: tuple[int, ...] = (
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
)
"""Upper bounds (µs, inclusive: Prometheus ``le``) of the fsync latency histogram's buckets; one
more bucket, ``+Inf``, takes the rest."""


@dataclass(frozen=True, slots=True)
class FsyncHistogram:
    """A consistent snapshot of the fsync latency histogram: ``counts[i]`` fsyncs took at most
    ``FSYNC_BUCKETS_US[i]`` µs and more than the bound before it (per bucket, not cumulative);
    ``counts[-1]`` is the ``+Inf`` bucket; ``sum_us`` is their total."""

    counts: tuple[int, ...]
    sum_us: int

    @property
    def count(self) -> int:
        return sum(self.counts)


@dataclass
class WalStats:
    """The WAL's counters since it was opened (not persisted across restarts).

    Written by the loop thread (frames, batches, bytes, rotations, the queue peak) and by the
    sync thread (:meth:`record_fsync`); read by either. The fsync histogram is updated and read
    under a lock, so a snapshot's buckets, sum and count agree."""

    frames_total: int = 0
    batches_total: int = 0
    """``write`` calls: each writes every frame queued during one event-loop iteration."""
    fsyncs_total: int = 0
    bytes_written_total: int = 0
    rotations_total: int = 0
    queue_depth_peak: int = 0
    """Highest :attr:`Wal.queue_depth` seen at a submit."""
    fsync_counts: list[int] = field(default_factory=lambda: [0] * (len(FSYNC_BUCKETS_US) + 1))
    """Per-bucket (not cumulative) fsync counts, indexed like ``FSYNC_BUCKETS_US`` + ``+Inf``."""
    fsync_sum_us: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record_fsync(self, micros: int) -> None:
        """One fsync (of every file a sync covers) took ``micros`` µs (sync thread)."""
        bucket = bisect.bisect_left(FSYNC_BUCKETS_US, micros)
        with self._lock:
            self.fsyncs_total += 1
            self.fsync_counts[bucket] += 1
            self.fsync_sum_us += micros

    def fsync_histogram(self) -> FsyncHistogram:
        with self._lock:
            return FsyncHistogram(tuple(self.fsync_counts), self.fsync_sum_us)


class Wal:
    def __init__(
        self,
        fs: FileSystem,
        directory: Path,
        loop: asyncio.AbstractEventLoop,
        *,
        next_lsn: int,
        rotate_bytes: int = 64 << 20,
        sync_delay_s: float = SYNC_DELAY_S,
        error_for: Callable[[BaseException], BaseException] | None = None,
    ) -> None:
        self.fs = fs
        self.directory = directory
        self.loop = loop
        self.rotate_bytes = rotate_bytes
        self.sync_delay_s = sync_delay_s
        self.next_lsn = next_lsn
        self._durable_lsn = next_lsn - 1
        """Highest durable LSN as the loop learnt it (syncs nobody waits on are not reported)."""
        self._synced_lsn = next_lsn - 1
        """Highest LSN the sync thread made durable (written only by that thread)."""
        self.failed: BaseException | None = None
        self.error_for: Callable[[BaseException], BaseException] = error_for or (
            lambda err: WalFailed(f"write-ahead log I/O error: {err}")
        )
        """What a waiting future fails with after an I/O error (the caller's own error type, so
        no per-write future has to be wrapped)."""
        self.stats = WalStats()
        fs.makedirs(directory)
        self._file_first_lsn, path, self._file_size, self._header_due = self._continue_in(
            wal_files(fs, directory)
        )
        """``_file_size``: bytes of frames in the current file (its header not counted);
        ``_header_due``: the file is empty, its header goes with its first frames (one write)."""
        self._fd = fs.open_append(path)
        # once per open, whether the file is new or the last one reused: a new file's entry, and
        # whatever recovery did to the directory (a truncated tail, files set aside), are durable
        # before the first frame is acknowledged
        fs.fsync_dir(directory)
        # loop-thread state
        self._frames: list[bytes] = []
        """Buffers of the frames submitted and not yet written, in order."""
        self._frames_size = 0
        self._frame_count = 0
        self._frames_last_lsn = next_lsn - 1
        self._waiters: deque[_Waiter] = deque()
        self._observers: deque[tuple[int, Callable[[], None]]] = deque()
        """(lsn, callback) of :meth:`after_sync`: run when a sync covers the LSN, but they never
        ask for one (the group commit's own window decides)."""
        self._flush_scheduled = False
        self._sync_timer: asyncio.TimerHandle | None = None
        # shared with the sync thread (under _cond, except the two plain ints below)
        self._cond = threading.Condition()
        self._written_lsn = next_lsn - 1
        """Highest LSN written to the file: set by the loop after each write, read by the sync
        thread when it starts a sync (an int store is atomic; every frame at or below it was
        written before it was set)."""
        self._first_waiter_lsn = 1 << 64
        """LSN of the oldest frame somebody waits for (a sync below it resolves nothing)."""
        self._sync_requested = False
        self._rotated: list[int] = []
        """fds rotated out, still to be synced and closed by the sync thread."""
        self._dir_dirty = False
        self._tasks: deque[_Task] = deque()
        self._stop = False
        self._thread = threading.Thread(target=self._sync_loop, name="topics-wal-sync", daemon=True)
        self._thread.start()

    def _continue_in(self, existing: list[tuple[int, Path]]) -> tuple[int, Path, int, bool]:
        """``(first lsn, path, frame bytes, header due)`` of the file to append to: the last file
        if it is of the current version, or holds no frame (emptied; its header is due), else a
        new file at ``next_lsn`` (the last one is of an older version, never appended to)."""
        fresh = (self.next_lsn, self.directory / wal_file_name(self.next_lsn), 0, True)
        if not existing:
            return fresh
        first, path = existing[-1]
        layout = wal_layout(self.fs.read_head(path, len(WAL_HEADER)))
        if layout.version is None:
            if self.fs.size(path):
                self.fs.truncate(path, 0)
            return first, path, 0, True
        if layout.version != WAL_VERSION:
            assert first < self.next_lsn, f"{path.name} holds frames at or above LSN {self.next_lsn}"
            return fresh
        return first, path, self.fs.size(path) - layout.frames_at, False

    # -- loop thread ------------------------------------------------------------------------------

    @property
    def durable_lsn(self) -> int:
        return max(self._durable_lsn, self._synced_lsn)

    @property
    def read_only(self) -> bool:
        return self.failed is not None

    @property
    def queue_depth(self) -> int:
        """Frames submitted and not yet written, plus written frames somebody waits on (a
        future or ``on_durable``) that are not durable yet."""
        return self._frame_count + len(self._waiters)

    def fail(self, error: BaseException) -> None:
        """Storage beside the log failed (a segment or snapshot write): stop accepting writes."""
        if self.failed is None:
            self.failed = error
            _log_read_only(error)

    def submit(
        self,
        frame_type: FrameType,
        payload: bytes | list[bytes],
        *,
        wait: bool = False,
        on_durable: Callable[[], None] | None = None,
    ) -> tuple[int, asyncio.Future[float] | None]:
        """Assign the next LSN and queue the frame (written at the end of this event-loop
        iteration). With ``wait`` (or an ``on_durable`` callback) a future resolves with the
        sync's milliseconds once the frame is durable. ``payload`` may be a list of buffers
        (written in order without being joined)."""
        lsn = self._next_lsn()
        parts = frame_parts(frame_type, lsn, [payload] if isinstance(payload, bytes) else payload)
        return lsn, self._queue(lsn, parts, sum(map(len, parts)), wait, on_durable)

    def submit_batch(
        self,
        frame_type: FrameType,
        head: bytes,
        batch: RecordBatch,
        *,
        on_durable: Callable[[], None] | None = None,
    ) -> tuple[int, asyncio.Future[float] | None]:
        """:meth:`submit` for a payload of ``head`` followed by a record batch: the frame is
        built in one C call (``_codec.frame``), CRC included."""
        lsn = self._next_lsn()
        frame = _codec.frame(frame_type, lsn, head, batch)
        return lsn, self._queue(lsn, [frame], len(frame), False, on_durable)

    def _next_lsn(self) -> int:
        if self.failed is not None:
            raise WalFailed(f"the write-ahead log is read-only after an I/O error: {self.failed}")
        lsn = self.next_lsn
        self.next_lsn += 1
        return lsn

    def _queue(
        self, lsn: int, parts: list[bytes], size: int, wait: bool, on_durable: Callable[[], None] | None
    ) -> asyncio.Future[float] | None:
        self._frames.extend(parts)
        self._frames_size += size
        self._frame_count += 1
        self._frames_last_lsn = lsn
        future = None
        if wait or on_durable is not None:
            future = self.loop.create_future()
            if not self._waiters and not self._observers:
                self._first_waiter_lsn = lsn  # the sync thread reports back only when needed
            self._waiters.append(_Waiter(lsn, future, on_durable))
        depth = self._frame_count + len(self._waiters)
        if depth > self.stats.queue_depth_peak:
            self.stats.queue_depth_peak = depth
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)
        return future

    def after_sync(self, lsn: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the loop once frame ``lsn`` is durable — at once if it already
        is — without hastening the sync (``disk`` frames stay on the group-commit window).
        Dropped if the WAL fails: what never became durable is never reported durable."""
        if lsn <= self.durable_lsn:
            callback()
            return
        if self.failed is not None:
            return
        if not self._waiters and not self._observers:
            self._first_waiter_lsn = lsn
        else:
            self._first_waiter_lsn = min(self._first_waiter_lsn, lsn)
        self._observers.append((lsn, callback))

    def write_queued(self, since: int | None = None) -> bool:
        """Write every queued frame now rather than at the end of this event-loop iteration,
        if any was submitted at or after ``since`` (an answer that wrote nothing — a read, a
        claim of a queue that does not log its leases — leaves the iteration's frames to share
        its one write and sync); False if a frame submitted at or after LSN ``since`` (a
        :attr:`next_lsn` read before submitting it; default: the first frame queued now) is not
        written — this write or an earlier one failed, and the log is read-only from then on.
        Frames before ``since`` are someone else's: their failure is theirs to report (their
        futures fail)."""
        if since is None:
            if not self._frames:
                return True
            since = self._frames_last_lsn - self._frame_count + 1
        if self._frames and self.next_lsn > since:  # this answer's own frames are queued
            scheduled = self._flush_scheduled
            self.flush()
            # the end-of-iteration flush stays queued (it writes what is submitted after this):
            # no second one is scheduled for every request that writes
            self._flush_scheduled = scheduled
        return self.failed is None or self.next_lsn <= since or self._written_lsn >= self.next_lsn - 1

    def flush(self) -> None:
        """Write every queued frame (one ``write``); ask for a sync now if anyone waits on one
        of them, else within ``sync_delay_s``."""
        self._flush_scheduled = False
        if not self._frames:
            return
        parts, self._frames = self._frames, []
        count, self._frame_count = self._frame_count, 0
        size, self._frames_size = self._frames_size, 0
        upto = self._frames_last_lsn
        if self.failed is not None:
            self._fail_waiters(self.failed, after_lsn=upto - count)
            return
        header = self._header_due
        if header:
            parts.insert(0, WAL_HEADER)
        try:
            self.fs.writev(self._fd, parts)
            self._header_due = False
        except OSError as err:
            # frames written before this one may still be synced (and acked) by a sync already
            # asked for; these and every later one fail
            self._fail(err, after_lsn=upto - count)
            return
        stats = self.stats
        stats.frames_total += count
        stats.batches_total += 1
        stats.bytes_written_total += size + (len(WAL_HEADER) if header else 0)
        self._file_size += size
        self._written_lsn = upto  # read by the sync thread when asked to sync (GIL-atomic)
        if self._file_size >= self.rotate_bytes:
            self._rotate(upto + 1)
        waited = bool(self._waiters) and self._waiters[0].lsn <= upto
        if waited:
            self._request_sync()
        elif self._sync_timer is None:
            self._sync_timer = self.loop.call_later(self.sync_delay_s, self._request_sync)

    def _request_sync(self) -> None:
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        with self._cond:
            self._sync_requested = True
            self._cond.notify()

    def _rotate(self, first_lsn: int) -> None:
        """Continue in a new file; the old one is synced and closed by the sync thread."""
        try:
            fd = self.fs.open_append(self.directory / wal_file_name(first_lsn))
        except OSError as err:
            self._fail(err)
            return
        with self._cond:
            self._rotated.append(self._fd)
            self._fd = fd
            self._dir_dirty = True
        self._file_first_lsn = first_lsn
        self._file_size = 0
        self._header_due = True
        self.stats.rotations_total += 1

    def _fail(self, error: BaseException, after_lsn: int | None = None) -> None:
        if self.failed is None:
            self.failed = error
            _log_read_only(error)
        self._fail_waiters(error, after_lsn)

    def _fail_waiters(self, error: BaseException, after_lsn: int | None = None) -> None:
        """Fail the waiters of frames that are not durable (all, or only those after
        ``after_lsn``, whose earlier frames were written intact and may still be synced)."""
        keep: deque[_Waiter] = deque()
        for w in self._waiters:
            if after_lsn is not None and w.lsn <= after_lsn:
                keep.append(w)
            elif w.future is not None and not w.future.done():
                w.future.set_exception(self.error_for(error))
        self._waiters = keep
        self._observers = deque(o for o in self._observers if after_lsn is not None and o[0] <= after_lsn)
        with self._cond:
            tasks, self._tasks = self._tasks, deque()
        for t in tasks:
            if not t.future.done():
                t.future.set_exception(self.error_for(error))

    def _synced(self, upto: int, fsync_ms: float, error: BaseException | None) -> None:
        """Back on the loop after a sync: everything up to ``upto`` is durable, in LSN order."""
        if error is not None:
            self._fail(error)
            return
        self._durable_lsn = max(self._durable_lsn, upto)
        waiters = self._waiters
        while waiters and waiters[0].lsn <= upto:
            w = waiters.popleft()
            if w.on_durable is not None:
                w.on_durable()
            if w.future is not None and not w.future.done():
                w.future.set_result(fsync_ms)
        observers = self._observers
        while observers and observers[0][0] <= upto:
            observers.popleft()[1]()
        heads = [q[0].lsn for q in (waiters,) if q] + [q[0][0] for q in (observers,) if q]
        self._first_waiter_lsn = min(heads) if heads else 1 << 64

    def run_task(self, task: Callable[[], Any]) -> asyncio.Future[float]:
        """Run ``task`` on the sync thread once every frame submitted so far is durable (file
        work that must follow those frames: segment flag flips, removing trimmed files)."""
        future: asyncio.Future[float] = self.loop.create_future()
        if self.failed is not None:
            future.set_exception(self.error_for(self.failed))
            return future
        self.flush()
        with self._cond:
            self._tasks.append(_Task(self.next_lsn - 1, task, future))
        self._request_sync()
        return future

    async def trim(self, checkpoint_lsn: int) -> int:
        """Start a new file, then delete the files whose frames are all ``<= checkpoint_lsn``
        (once everything before is durable). Returns how many files were removed."""
        self.flush()
        if self._file_size > 0:
            self._rotate(self.next_lsn)
        current = self._file_first_lsn
        removed: list[int] = []

        def remove() -> None:
            files = wal_files(self.fs, self.directory)
            for (first, path), (next_first, _) in zip(files, files[1:], strict=False):
                if next_first - 1 <= checkpoint_lsn and first != current:
                    self.fs.remove(path)
                    removed.append(first)
            if removed:
                self.fs.fsync_dir(self.directory)

        await self.run_task(remove)
        return len(removed)

    def close(self) -> None:
        """Write and sync everything queued, stop the sync thread, close the file."""
        if not self._thread.is_alive():
            return
        self.flush()
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        with self._cond:
            self._stop = True
            self._sync_requested = True
            self._cond.notify()
        self._thread.join()
        with contextlib.suppress(OSError):
            self.fs.close(self._fd)

    # -- sync thread ------------------------------------------------------------------------------

    def _sync_loop(self) -> None:
        while True:
            with self._cond:
                while not self._sync_requested:
                    self._cond.wait()
                self._sync_requested = False
                upto = self._written_lsn
                fds = [*self._rotated, self._fd]
                rotated, self._rotated = self._rotated, []
                dir_dirty, self._dir_dirty = self._dir_dirty, False
                tasks = [t for t in self._tasks if t.lsn <= upto]
                for _ in tasks:
                    self._tasks.popleft()
                stop = self._stop
            fsync_ms, error = self._sync(fds, dir_dirty)
            for fd in rotated:
                with contextlib.suppress(OSError):
                    self.fs.close(fd)
            if error is None:
                self._synced_lsn = max(self._synced_lsn, upto)
            if error is not None or upto >= self._first_waiter_lsn:
                self._post(self._synced, upto, fsync_ms, error)
            # else nobody waits on these frames: no need to wake the event loop
            for t in tasks:
                self._run_task(t, error)
            if stop:
                return

    def _sync(self, fds: list[int], dir_dirty: bool) -> tuple[float, BaseException | None]:
        started = time.perf_counter()
        try:
            for fd in fds:
                self.fs.fdatasync(fd)
            if dir_dirty:
                self.fs.fsync_dir(self.directory)
        except OSError as err:
            return 0.0, err
        elapsed = time.perf_counter() - started
        self.stats.record_fsync(int(elapsed * 1e6))
        return round(elapsed * 1000, 3), None

    def _run_task(self, t: _Task, error: BaseException | None) -> None:
        if error is None:
            try:
                t.task()
            except OSError as err:
                # storage state is unknown after a failed file operation: stop writing
                self._post(self._task_failed, err)
                error = err
        self._post(_settle, t.future, error, self.error_for)

    def _task_failed(self, error: BaseException) -> None:
        self._fail(error)

    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop (shutdown): nobody waits any more
            self.loop.call_soon_threadsafe(callback, *args)


def _settle(
    future: asyncio.Future[float],
    error: BaseException | None,
    error_for: Callable[[BaseException], BaseException],
) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(0.0)
    else:
        future.set_exception(error_for(error))


def _log_read_only(error: BaseException) -> None:
    """The one log line of the WAL turning read-only (it stays so until a restart)."""
    log.error(
        "the write-ahead log is read-only after an I/O error (%s): writes are refused with 503 "
        "not_ready (wal_read_only) until a restart, reads still work — fix the disk and restart",
        error,
    )
