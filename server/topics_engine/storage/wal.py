"""The write-ahead log: one writer thread, group commit.

Callers (the engine, on the event-loop thread) :meth:`Wal.submit` encoded frames. Submission
assigns the LSN and enqueues in one step, so frames reach the file in exactly the order the
engine decided them (seq assignment happens in the same synchronous engine call).

The writer thread drains everything queued, writes it with one ``write``, ``fdatasync``s once,
and then — back on the event loop, in LSN order — runs each frame's ``on_durable`` callback and
resolves its future with the group's fsync time. That is group commit: one fsync amortized over
every frame that arrived while the previous one ran. A group nobody waits on (``disk`` and
``memory`` frames, acked on enqueue) is written at once and fsynced within ``SYNC_DELAY_S`` —
by the next waited-for group, or when the queue stays idle that long. Ordered writer-thread
*tasks* (segment and snapshot writes) run between groups, after every frame submitted before
them is durable.

Failure: if a write or fsync fails, the WAL turns read-only. Every frame of that group and every
later submission fails (futures get :class:`WalFailed`); nothing is ever acknowledged as durable
that was not fsynced. Whether bytes of the failed group reached the disk is unknown, which is
why the log must not continue after it: recovery truncates at the first torn frame, and frames
written after a hole would be lost with it.

Files: ``wal/<first-lsn:020d>.wal``, rotated after ``rotate_bytes``; :meth:`trim` removes files
whose frames all precede a checkpoint.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .frames import FrameType, encode_frame
from .fs import FileSystem

WAL_SUFFIX = ".wal"


class WalFailed(Exception):
    """The WAL could not persist; it is read-only until restart."""


def wal_file_name(first_lsn: int) -> str:
    return f"{first_lsn:020d}{WAL_SUFFIX}"


def wal_files(fs: FileSystem, directory: Path) -> list[tuple[int, Path]]:
    """(first lsn, path) of every WAL file, ascending."""
    out = []
    for name in fs.listdir(directory):
        if name.endswith(WAL_SUFFIX) and name[: -len(WAL_SUFFIX)].isdigit():
            out.append((int(name[: -len(WAL_SUFFIX)]), directory / name))
    return sorted(out)


@dataclass(slots=True)
class _Item:
    frame: bytes | None
    lsn: int
    future: asyncio.Future[float] | None = None
    on_durable: Callable[[], None] | None = None
    task: Callable[[], Any] | None = None


@dataclass
class WalStats:
    frames_total: int = 0
    batches_total: int = 0
    fsyncs_total: int = 0
    bytes_written_total: int = 0
    rotations_total: int = 0
    queue_depth_peak: int = 0
    fsync_us: list[int] = field(default_factory=list)

    def record_fsync(self, micros: int) -> None:
        self.fsyncs_total += 1
        if len(self.fsync_us) < 100_000:
            self.fsync_us.append(micros)


_STOP = object()
SYNC_DELAY_S = 0.002
"""Longest a written but unwaited-for group (disk/memory class) stays un-fsynced."""


class Wal:
    def __init__(
        self,
        fs: FileSystem,
        directory: Path,
        loop: asyncio.AbstractEventLoop,
        *,
        next_lsn: int,
        rotate_bytes: int = 64 << 20,
        error_for: Callable[[BaseException], BaseException] | None = None,
    ) -> None:
        self.fs = fs
        self.directory = directory
        self.loop = loop
        self.rotate_bytes = rotate_bytes
        self.next_lsn = next_lsn
        self.durable_lsn = next_lsn - 1
        self.failed: BaseException | None = None
        self.error_for: Callable[[BaseException], BaseException] = error_for or (
            lambda err: WalFailed(f"write-ahead log I/O error: {err}")
        )
        """What a waiting future fails with after an I/O error (the caller's own error type, so
        no per-write future has to be wrapped)."""
        self.stats = WalStats()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._depth = 0
        fs.makedirs(directory)
        existing = wal_files(fs, directory)
        self._file_first_lsn = existing[-1][0] if existing else next_lsn
        path = existing[-1][1] if existing else directory / wal_file_name(next_lsn)
        self._fd = fs.open_append(path)
        self._file_size = fs.size(path)
        self._written_lsn = next_lsn - 1
        self._dirty = False
        if not existing:
            fs.fsync_dir(directory)
        self._thread = threading.Thread(target=self._run, name="topics-wal", daemon=True)
        self._thread.start()

    # -- loop thread ------------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self.failed is not None

    @property
    def queue_depth(self) -> int:
        return self._depth

    def fail(self, error: BaseException) -> None:
        """Storage beside the log failed (a segment or snapshot write): stop accepting writes."""
        if self.failed is None:
            self.failed = error

    def submit(
        self,
        frame_type: FrameType,
        payload: bytes,
        *,
        wait: bool = False,
        on_durable: Callable[[], None] | None = None,
    ) -> tuple[int, asyncio.Future[float] | None]:
        """Assign the next LSN and enqueue the frame. With ``wait`` (or an ``on_durable``
        callback) a future resolves with the group's fsync milliseconds once it is durable."""
        if self.failed is not None:
            raise WalFailed(f"the write-ahead log is read-only after an I/O error: {self.failed}")
        lsn = self.next_lsn
        self.next_lsn += 1
        future = self.loop.create_future() if (wait or on_durable) else None
        self._put(_Item(encode_frame(frame_type, lsn, payload), lsn, future, on_durable))
        return lsn, future

    def run_task(self, task: Callable[[], Any]) -> asyncio.Future[float]:
        """Run ``task`` on the writer thread after every frame submitted so far is durable."""
        future: asyncio.Future[float] = self.loop.create_future()
        self._put(_Item(None, self.next_lsn - 1, future, None, task))
        return future

    def _put(self, item: _Item) -> None:
        self._depth += 1
        if self._depth > self.stats.queue_depth_peak:
            self.stats.queue_depth_peak = self._depth
        self._queue.put(item)

    def close(self) -> None:
        """Flush everything queued, stop the writer thread, close the file."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def _complete(self, items: list[_Item], fsync_ms: float, error: BaseException | None) -> None:
        self._depth -= len(items)
        for item in items:
            if error is None:
                if item.frame is not None:
                    self.durable_lsn = item.lsn  # written; durable within SYNC_DELAY_S
                if item.on_durable is not None:
                    item.on_durable()
            if item.future is not None and not item.future.done():
                if error is None:
                    item.future.set_result(fsync_ms)
                else:
                    item.future.set_exception(self.error_for(error))

    # -- writer thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=SYNC_DELAY_S) if self._dirty else self._queue.get()
            except queue.Empty:
                self._sync_quietly()
                continue
            batch = [first]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            items: list[_Item] = [item for item in batch if item is not _STOP]
            self._process(items)
            if stop:
                self._sync_quietly()
                self.fs.close(self._fd)
                return

    def _process(self, items: list[_Item]) -> None:
        group: list[_Item] = []
        for item in items:
            if item.task is None:
                group.append(item)
                continue
            self._flush(group)
            group = []
            self._sync_quietly()  # a task runs only after every earlier frame is durable
            self._run_task(item)
        self._flush(group)

    def _flush(self, group: list[_Item]) -> None:
        """Write a group; fdatasync now if anyone waits on it, else within ``SYNC_DELAY_S``
        (``disk``/``memory`` frames: acked on enqueue, group-committed shortly after)."""
        if not group:
            return
        if self.failed is not None:
            self.loop.call_soon_threadsafe(self._complete, group, 0.0, self.failed)
            return
        data = b"".join(item.frame for item in group if item.frame is not None)
        waited = any(item.future is not None or item.on_durable is not None for item in group)
        try:
            self.fs.write(self._fd, data)
            self._dirty = True
            fsync_ms = self._sync() if waited else 0.0
        except OSError as err:
            self.failed = err
            self.loop.call_soon_threadsafe(self._complete, group, 0.0, err)
            return
        stats = self.stats
        stats.frames_total += len(group)
        stats.batches_total += 1
        stats.bytes_written_total += len(data)
        self._file_size += len(data)
        self._written_lsn = group[-1].lsn
        self.loop.call_soon_threadsafe(self._complete, group, fsync_ms, None)
        if self._file_size >= self.rotate_bytes:
            self._sync_quietly()
            self._rotate(group[-1].lsn + 1)

    def _sync(self) -> float:
        """fdatasync the current file; returns milliseconds. Raises OSError."""
        started = time.perf_counter()
        self.fs.fdatasync(self._fd)
        elapsed = time.perf_counter() - started
        self._dirty = False
        self.stats.record_fsync(int(elapsed * 1e6))
        return round(elapsed * 1000, 3)

    def _sync_quietly(self) -> None:
        """Sync pending unacknowledged writes; an error turns the WAL read-only."""
        if not self._dirty or self.failed is not None:
            return
        try:
            self._sync()
        except OSError as err:
            self.failed = err

    def _rotate(self, first_lsn: int) -> None:
        try:
            self.fs.close(self._fd)
            path = self.directory / wal_file_name(first_lsn)
            self._fd = self.fs.open_append(path)
            self.fs.fsync_dir(self.directory)
        except OSError as err:
            self.failed = err
            return
        self._file_first_lsn = first_lsn
        self._file_size = 0
        self.stats.rotations_total += 1

    def _run_task(self, item: _Item) -> None:
        assert item.task is not None
        error: BaseException | None = self.failed
        if error is None:
            try:
                item.task()
            except OSError as err:
                # storage state is unknown after a failed segment/snapshot write: stop writing
                error = self.failed = err
        self.loop.call_soon_threadsafe(self._complete, [item], 0.0, error)

    def trim(self, checkpoint_lsn: int) -> int:
        """Writer-thread only (via :meth:`run_task`): start a new file, then delete WAL files
        whose frames are all ``<= checkpoint_lsn``. Returns how many files were removed."""
        if self._file_size > 0:
            self._rotate(self._written_lsn + 1)
            if self.failed is not None:
                raise self.failed
        files = wal_files(self.fs, self.directory)
        removed = 0
        for (first, path), (next_first, _) in zip(files, files[1:], strict=False):
            if next_first - 1 <= checkpoint_lsn and first != self._file_first_lsn:
                self.fs.remove(path)
                removed += 1
        if removed:
            self.fs.fsync_dir(self.directory)
        return removed
