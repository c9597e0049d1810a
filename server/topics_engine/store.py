"""The durable store's lifecycle around an :class:`Engine`: lock the data directory, recover,
open the WAL and switch the engine to the WAL journal, close.

Layout of ``TOPICS_DATA_DIR``::

    LOCK            exclusive flock: one server per data directory
    wal/            WAL files, ``<first-lsn>.wal`` (see storage.wal / storage.frames)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

from .engine import Engine
from .journal import WalJournal
from .recovery import ReplayReport, replay_wal
from .storage.fs import FileSystem
from .storage.wal import Wal

log = logging.getLogger("topics.store")


class DataDirLocked(Exception):
    """Another process holds the data directory."""


class Store:
    def __init__(
        self, data_dir: Path, fs: FileSystem | None = None, *, wal_rotate_bytes: int = 64 << 20
    ) -> None:
        self.data_dir = data_dir
        self.fs = fs or FileSystem()
        self.wal_rotate_bytes = wal_rotate_bytes
        self.wal: Wal | None = None
        self.report = ReplayReport()
        self._lock_fd: int | None = None

    @property
    def wal_dir(self) -> Path:
        return self.data_dir / "wal"

    def lock(self) -> None:
        self.fs.makedirs(self.data_dir)
        try:
            self._lock_fd = self.fs.lock(self.data_dir / "LOCK")
        except OSError:
            raise DataDirLocked(
                f"{self.data_dir} is in use by another topics server; stop it or point "
                "TOPICS_DATA_DIR elsewhere"
            ) from None

    def recover(self, engine: Engine) -> Iterator[float]:
        """Replay storage into ``engine`` (yielding progress), then open the WAL for writes."""
        self.fs.makedirs(self.wal_dir)
        yield from replay_wal(engine, self.fs, self.wal_dir, self.report)
        log.info(
            "recovered %d frames, %d records; next LSN %d",
            self.report.frames,
            self.report.records,
            self.report.next_lsn,
        )

    def open(self, engine: Engine, loop: asyncio.AbstractEventLoop) -> None:
        self.wal = Wal(
            self.fs, self.wal_dir, loop, next_lsn=self.report.next_lsn, rotate_bytes=self.wal_rotate_bytes
        )
        engine.journal = WalJournal(self.wal)

    def close(self) -> None:
        if self.wal is not None:
            self.wal.close()
        if self._lock_fd is not None:
            self.fs.close(self._lock_fd)
            self._lock_fd = None
