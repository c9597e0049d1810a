"""A :class:`FileSystem` that injects disk faults, for the storage fault tests.

Knobs (all thread-safe; the WAL writes and syncs on its own thread):

- ``fail_nth_write(n)``  — the n-th ``write`` from now raises EIO, writing nothing.
- ``fail_writes()``      — every ``write`` from now raises EIO.
- ``fail_syncs()``       — every ``fsync`` / ``fdatasync`` from now raises EIO.
- ``tear_next_write(keep)`` — the next ``write`` puts only its first ``keep`` bytes in the real
  file (at most all but one), then raises EIO: a short / torn write.
- ``hold_syncs()`` / ``allow_syncs(n)`` / ``release_syncs()`` — syncs block (``sync_blocked``
  is set while one waits) until ``n`` more are allowed or all are released, so written bytes sit
  "in the page cache", unsynced, for as long as a test wants. Also a deterministic way to make
  the WAL group everything submitted meanwhile into its next write.
- ``crash(keep_unsynced=0)`` — the process dies: every later operation raises EIO (a held sync
  is released and fails), and every file this filesystem wrote is cut back to its size at its
  last successful sync plus ``keep_unsynced`` bytes (power loss: the unsynced page cache is lost,
  or only partly flushed). ``keep_unsynced=None`` keeps everything (a process kill: the page
  cache survives).

Synced sizes: a file first opened here starts with its current size as synced (it was on disk
before); a file written through an fd this class did not open (``write_atomic``'s temp file) or
created here starts at 0.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

from topics_engine.storage.fs import FileSystem


def _eio(what: str) -> OSError:
    return OSError(errno.EIO, f"injected EIO on {what}")


class FaultyFileSystem(FileSystem):
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._synced: dict[Path, int] = {}
        self._touched: set[Path] = set()
        self._write_countdown: int | None = None
        self._fail_writes = False
        self._fail_syncs = False
        self._tear_keep: int | None = None
        self._gate = threading.Condition()
        self._sync_permits: int | None = None  # None: syncs run freely
        self.sync_blocked = threading.Event()
        self.crashed = False
        self.writes = 0
        self.syncs = 0

    # -- knobs ------------------------------------------------------------------------------------

    def fail_nth_write(self, n: int) -> None:
        with self._lock:
            self._write_countdown = n

    def fail_writes(self) -> None:
        with self._lock:
            self._fail_writes = True

    def fail_syncs(self) -> None:
        with self._lock:
            self._fail_syncs = True

    def tear_next_write(self, keep: int) -> None:
        with self._lock:
            self._tear_keep = keep

    def hold_syncs(self) -> None:
        with self._gate:
            self.sync_blocked.clear()
            self._sync_permits = 0

    def allow_syncs(self, n: int) -> None:
        with self._gate:
            self.sync_blocked.clear()
            self._sync_permits = (self._sync_permits or 0) + n
            self._gate.notify_all()

    def release_syncs(self) -> None:
        with self._gate:
            self._sync_permits = None
            self._gate.notify_all()

    def crash(self, keep_unsynced: int | None = 0) -> None:
        with self._lock:
            self.crashed = True
            if keep_unsynced is not None:
                for path in self._touched:
                    if path.exists():
                        keep = self._synced.get(path, 0) + keep_unsynced
                        if path.stat().st_size > keep:
                            os.truncate(path, keep)
        self.release_syncs()

    def synced_size(self, path: Path) -> int:
        with self._lock:
            return self._synced.get(path, 0)

    # -- bookkeeping -----------------------------------------------------------------------------

    @staticmethod
    def _path(fd: int) -> Path:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))

    def _check_alive(self, what: str) -> None:
        if self.crashed:
            raise _eio(f"{what} after crash")

    def _opened(self, path: Path, fd: int) -> int:
        with self._lock:
            real = self._path(fd)
            if real not in self._touched:
                self._touched.add(real)
                self._synced.setdefault(real, os.fstat(fd).st_size)
        return fd

    # -- the seam --------------------------------------------------------------------------------

    def open_append(self, path: Path) -> int:
        self._check_alive("open")
        existed = path.exists()
        fd = super().open_append(path)
        if not existed:
            with self._lock:
                self._synced[self._path(fd)] = 0
        return self._opened(path, fd)

    def open_rw(self, path: Path) -> int:
        self._check_alive("open")
        return self._opened(path, super().open_rw(path))

    def write(self, fd: int, data: bytes | memoryview) -> None:
        with self._lock:
            self._check_alive("write")
            path = self._path(fd)
            self._touched.add(path)
            self.writes += 1
            if self._fail_writes:
                raise _eio("write")
            if self._write_countdown is not None:
                self._write_countdown -= 1
                if self._write_countdown <= 0:
                    self._write_countdown = None
                    raise _eio("write")
            if self._tear_keep is not None:
                keep = max(0, min(self._tear_keep, len(data) - 1))
                self._tear_keep = None
                super().write(fd, memoryview(data)[:keep])
                raise _eio(f"write (torn after {keep} bytes)")
            super().write(fd, data)

    def writev(self, fd: int, parts: list[bytes]) -> None:
        self.write(fd, b"".join(parts))  # one write: the faults apply to the whole group

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        with self._lock:
            self._check_alive("pwrite")
            self._touched.add(self._path(fd))
            if self._fail_writes:
                raise _eio("pwrite")
            super().pwrite(fd, data, offset)

    def _sync(self, fd: int, what: str, real_sync) -> None:  # type: ignore[no-untyped-def]
        with self._gate:
            while self._sync_permits == 0:
                self.sync_blocked.set()
                self._gate.wait()
            if self._sync_permits is not None:
                self._sync_permits -= 1
        with self._lock:
            self._check_alive(what)
            if self._fail_syncs:
                raise _eio(what)
            real_sync(fd)
            self.syncs += 1
            path = self._path(fd)
            self._touched.add(path)
            self._synced[path] = os.fstat(fd).st_size

    def fdatasync(self, fd: int) -> None:
        self._sync(fd, "fdatasync", super().fdatasync)

    def fsync(self, fd: int) -> None:
        self._sync(fd, "fsync", super().fsync)

    def fsync_dir(self, path: Path) -> None:
        self._check_alive("fsync_dir")
        super().fsync_dir(path)

    def truncate(self, path: Path, size: int) -> None:
        with self._lock:
            self._check_alive("truncate")
            super().truncate(path, size)
            real = path.resolve()
            if real in self._touched:
                self._synced[real] = min(self._synced.get(real, 0), size)

    def rename(self, src: Path, dst: Path) -> None:
        with self._lock:
            self._check_alive("rename")
            super().rename(src, dst)
            real_src, real_dst = src.resolve(), dst.resolve()
            if real_src in self._touched:
                self._touched.discard(real_src)
                self._touched.add(real_dst)
                self._synced[real_dst] = self._synced.pop(real_src, 0)

    def remove(self, path: Path) -> None:
        with self._lock:
            self._check_alive("remove")
            super().remove(path)
            real = path.resolve()
            self._touched.discard(real)
            self._synced.pop(real, None)
