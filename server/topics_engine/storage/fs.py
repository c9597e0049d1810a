"""The filesystem seam: every file operation the storage layer performs goes through
:class:`FileSystem`, so tests can inject faults (EIO, short writes, lost unsynced data) by
subclassing it. Nothing else in the storage package calls ``os`` file functions.

``write`` loops until every byte is written (a short write is retried, not silently
truncated); ``write_atomic`` is the crash-safe replace: temp file -> fsync -> rename -> fsync of
the directory, so a reader sees the old file or the new one, never a torn one.

Files are created ``0600`` and directories ``0700`` (docs/DECISIONS.md, "Data directory
permissions"): the data directory holds every record's payload and is the server's alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
"""Most buffers one ``writev`` takes."""


_NOWAIT_SUPPORTED = [hasattr(os, "RWF_NOWAIT")]
"""Whether ``preadv(..., RWF_NOWAIT)`` works here (turned off at the first refusal)."""


class FileSystem:
    def makedirs(self, path: Path) -> None:
        """Create ``path`` and any missing parents, each ``0700`` (``Path.mkdir(parents=True)``
        would give the parents the default mode)."""
        missing = []
        while not path.exists():
            missing.append(path)
            if path.parent == path:
                break
            path = path.parent
        for directory in reversed(missing):
            with contextlib.suppress(FileExistsError):
                directory.mkdir(mode=DIR_MODE)

    def listdir(self, path: Path) -> list[str]:
        return sorted(os.listdir(path)) if path.exists() else []

    def exists(self, path: Path) -> bool:
        return path.exists()

    def size(self, path: Path) -> int:
        return path.stat().st_size

    def open_append(self, path: Path) -> int:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)

    def open_rw(self, path: Path) -> int:
        return os.open(path, os.O_RDWR)

    def write(self, fd: int, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def writev(self, fd: int, parts: list[bytes]) -> None:
        """Write ``parts`` in order, as if joined (partial writes continue where they stopped)."""
        for i in range(0, len(parts), IOV_MAX):
            chunk = parts[i : i + IOV_MAX]
            written = os.writev(fd, chunk)
            total = sum(map(len, chunk))
            if written < total:
                self.write(fd, b"".join(chunk)[written:])

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        if os.pwrite(fd, data, offset) != len(data):
            raise OSError(f"short pwrite of {len(data)} bytes at {offset}")

    def fdatasync(self, fd: int) -> None:
        os.fdatasync(fd)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def close(self, fd: int) -> None:
        os.close(fd)

    def read_bytes(self, path: Path) -> bytes:
        return path.read_bytes()

    def read_head(self, path: Path, n: int) -> bytes:
        """The first ``n`` bytes of ``path`` (fewer if it is shorter): a file's format header."""
        with path.open("rb") as f:
            return f.read(n)

    def pread(self, path: Path, offset: int, length: int) -> bytes:
        """``length`` bytes of ``path`` from ``offset`` (fewer if the file ends first)."""
        fd = os.open(path, os.O_RDONLY)
        try:
            parts = []
            while length > 0:
                part = os.pread(fd, length, offset)
                if not part:
                    break
                parts.append(part)
                offset += len(part)
                length -= len(part)
            return parts[0] if len(parts) == 1 else b"".join(parts)
        finally:
            os.close(fd)

    def pread_cached(self, path: Path, offset: int, length: int, into: bytearray) -> memoryview | None:
        """``length`` bytes of ``path`` from ``offset``, read into ``into`` (grown as needed) if
        they are all in the page cache now (``preadv`` with ``RWF_NOWAIT``: never waits for the
        disk), else ``None`` — also where the kernel or file system cannot tell. The view is of
        ``into``: valid until its next use."""
        if not _NOWAIT_SUPPORTED[0]:
            return None
        if len(into) < length:
            into.extend(bytes(length - len(into)))
        view = memoryview(into)[:length]
        fd = os.open(path, os.O_RDONLY)
        try:
            n = os.preadv(fd, [view], offset, os.RWF_NOWAIT)
        except BlockingIOError:
            return None
        except OSError as err:
            if err.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                _NOWAIT_SUPPORTED[0] = False
                return None
            raise
        finally:
            os.close(fd)
        return view if n == length else None

    def truncate(self, path: Path, size: int) -> None:
        os.truncate(path, size)

    def remove(self, path: Path) -> None:
        os.remove(path)

    def rename(self, src: Path, dst: Path) -> None:
        os.rename(src, dst)

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_atomic(self, path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            self.write(fd, data)
            self.fsync(fd)
        finally:
            self.close(fd)
        self.rename(tmp, path)
        self.fsync_dir(path.parent)

    def lock(self, path: Path) -> int:
        """Take an exclusive, non-blocking lock on ``path`` (held until the fd is closed)."""
        import fcntl

        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        return fd

    def rmdir(self, path: Path) -> None:
        os.rmdir(path)
