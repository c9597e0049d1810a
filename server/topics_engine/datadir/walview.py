"""What the server may read of the write-ahead log: its counters, fsync latency histogram, queue
depth and whether it turned read-only — for the metrics, the readiness probe and the throttle,
without reaching into ``storage``."""

from __future__ import annotations

from dataclasses import dataclass

from ..storage.wal import FSYNC_BUCKETS_US, FsyncHistogram, Wal, WalStats


@dataclass(frozen=True, slots=True)
class WalView:
    """The WAL's state, read-only: all zeros (and writable) when there is no open WAL — in
    memory, while recovering, or before :meth:`DataDirectory.open`.

    ``stats`` are the WAL's live counters (read them, never write them); ``queue_depth`` and
    ``read_only`` are as of when the view was taken."""

    stats: WalStats
    queue_depth: int
    read_only: bool

    @classmethod
    def of(cls, wal: Wal | None) -> WalView:
        """The view of ``wal`` (``None``: zeros)."""
        if wal is None:
            return cls(WalStats(), 0, False)
        return cls(wal.stats, wal.queue_depth, wal.read_only)

    @property
    def histogram(self) -> FsyncHistogram:
        """A consistent snapshot of the fsync latency histogram (taken at each read): its
        ``counts`` are per bucket of :attr:`bucket_bounds_us`, plus ``+Inf`` last."""
        return self.stats.fsync_histogram()

    @property
    def bucket_bounds_us(self) -> tuple[int, ...]:
        """Inclusive upper bounds (µs, Prometheus ``le``) of the histogram's buckets, ascending;
        the ``+Inf`` bucket is not listed."""
        return FSYNC_BUCKETS_US
