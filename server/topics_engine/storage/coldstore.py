"""Cold record chunks: sealed record batches whose bytes live only in their segment file, and
the one place their bytes are read back — through the shared :class:`ChunkCache`.

A chunk of a topic's record log goes cold once its segment is durable (``datadir.sealing``):
the log then keeps only what accounts its records (seqs, sizes, ``$ts`` runs, flags) and a
:class:`ColdChunk` saying where its batch is. Reading its records needs the batch:
:meth:`ColdStore.batch` finds it pinned (by a read in progress) or cached, and otherwise

- in a **strict** read (:func:`strict`; ``topics_engine.coldreads`` runs the event loop's
  read paths so) reads it at once only if its bytes are in the OS page cache (``preadv`` with
  ``RWF_NOWAIT``: a copy, never a wait for the disk), and otherwise raises :class:`ColdRead`
  naming the chunks to load: the reader loads them on a reader thread (the request awaits; the
  event loop goes on serving), pins them, and runs the read again — a read never blocks the
  event loop on a disk;
- elsewhere (recovery, tools, the sync engine tests, rare paths such as a router's start-up
  scan) reads the chunk on the calling thread, counted in ``blocking_loads``.

Loaded batches are served as they are: their blob is already the wire encoding.

Thread model: the cache, the pins and the counters belong to the event loop; reader threads only
run :func:`segments.read_chunk` and hand the batch back — and :func:`heap.trim`.

Memory: a full cache frees a batch for every one it takes in (and a batch too big for the cache
is freed once read); every part of the server frees memory all the time. Those frees leave free
chunks in glibc's heap whose pages stay resident until someone asks for them back
(:mod:`heap`), and sealing's trims come only as often as segments fill. So the store asks too,
on a reader thread, one trim at a time:

- once the batches it let go since its last trim add up to :data:`TRIM_SHARE` of the cache's
  capacity (at most once per :data:`TRIM_INTERVAL_S`) — a cache churning under cold reads;
- and whenever :meth:`ColdStore.decay` finds no trim in the last :data:`DECAY_S` (the data
  directory calls it periodically) — free pages do not stay resident much longer than that,
  as jemalloc's ``dirty_decay_ms`` (10 s by default) gives them back.

One trim in a soak with an 8 MiB cache gave back 19 MB of a 137 MB RSS (docs/BENCHMARKS.md,
"Soak").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from . import heap
from .chunkcache import ChunkCache
from .formats import RecordBatch
from .fs import FileSystem
from .segments import read_chunk, read_chunk_cached

_STRICT: ContextVar[bool] = ContextVar("topics_strict_cold_reads", default=False)


@contextmanager
def strict() -> Iterator[None]:
    """Within this block a chunk that is not in memory raises :class:`ColdRead` instead of
    being read on the calling thread (the event loop's read paths: ``topics_engine.coldreads``)."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


@dataclass(frozen=True, slots=True, eq=False)
class ColdChunk:
    """Where one sealed record batch is: ``length`` bytes at ``offset`` of segment ``path``
    (``crc``: crc32 of those bytes; ``None`` for a segment format without per-chunk CRCs)."""

    store: ColdStore
    path: Path
    offset: int
    length: int
    crc: int | None

    @property
    def key(self) -> tuple[Path, int]:
        return self.path, self.offset


class ColdRead(Exception):
    """A strict read needs these chunks, which are neither pinned nor cached."""

    def __init__(self, chunks: Sequence[ColdChunk]) -> None:
        super().__init__(f"{len(chunks)} cold chunks to load")
        self.chunks = list(chunks)


SCRATCH_KEPT = 4 << 20
"""The largest read buffer kept between page-cache reads (a larger chunk's is let go)."""

TRIM_SHARE = 0.25
"""A trim is queued once batches of this share of the cache's capacity left it since the last."""

TRIM_INTERVAL_S = 1.0
"""At most one trim a second, however fast the cache churns (a trim takes ~3 ms of a reader
thread and holds the allocator's locks meanwhile)."""

DECAY_S = 10.0
"""Free pages stay resident for about this long at most: :meth:`ColdStore.decay` trims if no
trim ran for that long."""


TS_RUN_BYTES = 120
"""What one decoded ``$ts`` run costs: a 2-tuple (56 bytes), its ``$ts`` int (32), its ordinal
int (28, unless below 257) and a list slot (8). Measured with tracemalloc once the interpreter's
free list of 2-tuples is used up, as it is while the cache holds thousands of runs."""


def batch_size(batch: RecordBatch) -> int:
    """What a cached batch costs, about: its blob, the per-record columns, a tuple per ``$ts``
    run (a batch of joined single-record writes has one per record), and a string object per
    tag and node."""
    size = len(batch.blob) + 6 * batch.count + TS_RUN_BYTES * len(batch.ts_runs) + 200
    if batch.tags is not None:
        size += 64 * batch.count
    if batch.nodes is not None:
        size += 64 * batch.count
    if batch.meta_at is not None:
        size += 4 * batch.count
    return size


class ColdStore:
    """The cache and the reads of one data directory's cold chunks."""

    def __init__(self, fs: FileSystem, cache_bytes: int, readers: int = 2) -> None:
        self.fs = fs
        self.cache: ChunkCache[tuple[Path, int], RecordBatch] = ChunkCache(cache_bytes)
        self._pins: dict[tuple[Path, int], list[RecordBatch | int]] = {}
        self._scratch = bytearray()
        """The buffer the event loop reads page-cached chunks into (they are decoded at once)."""
        self._readers = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="topics-reads")
        self.loads = 0
        """Chunks read from segment files (on reader threads or blocking)."""
        self.blocking_loads = 0
        """Of those, read on the calling thread outside a strict read (may wait for a disk)."""
        self.page_cache_loads = 0
        """Of those, read on the calling thread in a strict read: found in the page cache
        (never waiting for a disk)."""
        self.bytes_read = 0
        self.trims = 0
        """Trims queued (``heap.trim``): after the cache churned, or when none ran for a while."""
        self.monotonic = time.monotonic
        """The clock that spaces trims (tests replace it)."""
        self._uncached_bytes = 0
        """Sizes of the batches read but not cached (too big, or a copy of a cached one: freed
        once used)."""
        self._let_go_at_trim = 0
        self._trimmed_at = float("-inf")
        self._trim: Future[None] | None = None
        """The trim queued last; another is queued only once it ran."""

    def chunk(self, path: Path, offset: int, length: int, crc: int | None) -> ColdChunk:
        return ColdChunk(self, path, offset, length, crc)

    def forget(self, chunk: ColdChunk) -> None:
        """The chunk left its log (no record in it is live: evicted, expired or deleted): its
        cached batch can never be read again, so it gives its room back now instead of
        waiting for the LRU (a capped topic would otherwise fill the cache with dead chunks)."""
        self.cache.discard(chunk.key)
        self._maybe_trim()

    def cached(self, chunk: ColdChunk) -> RecordBatch | None:
        """The batch if pinned or cached (a cache hit counts), else ``None``; never reads."""
        pin = self._pins.get(chunk.key)
        if pin is not None:
            return pin[0]  # type: ignore[return-value]
        return self.cache.get(chunk.key)

    def in_memory(self, chunk: ColdChunk) -> bool:
        """Whether the chunk's batch is pinned or cached (a probe: counts nothing, promotes
        nothing)."""
        return chunk.key in self._pins or self.cache.peek(chunk.key) is not None

    def read_now(self, chunk: ColdChunk) -> RecordBatch | None:
        """The chunk's batch if it can be had without waiting for a disk — pinned, cached, or
        in the OS page cache (then read and cached) — else ``None``."""
        batch = self.cached(chunk)
        return batch if batch is not None else self._read_cached(chunk)

    def batch(self, chunk: ColdChunk) -> RecordBatch:
        """The chunk's batch: pinned, cached, or read at once from the OS page cache; else a
        strict read raises :class:`ColdRead`, and any other reads it on the calling thread (it
        may wait for the disk: counted in ``blocking_loads``)."""
        batch = self.read_now(chunk)
        if batch is not None:
            return batch
        if _STRICT.get():
            raise ColdRead([chunk])
        batch = self._read(chunk)
        self.blocking_loads += 1
        self._cache(chunk, batch)
        return batch

    def _read_cached(self, chunk: ColdChunk) -> RecordBatch | None:
        """The chunk, read at once if its bytes are in the page cache (``RWF_NOWAIT``: no
        wait for a disk, so a strict read may do it), and cached; ``None`` otherwise."""
        try:
            batch = read_chunk_cached(
                self.fs,
                chunk.path,
                chunk.offset,
                chunk.length,
                chunk.crc,
                self._scratch,
            )
        except FileNotFoundError:
            return None
        if len(self._scratch) > SCRATCH_KEPT:
            self._scratch = bytearray()  # a rare huge chunk: do not keep its buffer
        if batch is not None:
            self.loads += 1
            self.page_cache_loads += 1
            self.bytes_read += chunk.length
            self._cache(chunk, batch)
        return batch

    def _read(self, chunk: ColdChunk) -> RecordBatch:
        batch = read_chunk(self.fs, chunk.path, chunk.offset, chunk.length, chunk.crc)
        self.loads += 1
        self.bytes_read += chunk.length
        return batch

    async def load(self, chunks: Sequence[ColdChunk]) -> list[RecordBatch | None]:
        """Read ``chunks`` on a reader thread (in file order) and cache them; ``None`` for a chunk
        whose file is gone (its segment was dropped: nothing live is left in it)."""

        def read_all() -> list[RecordBatch | None]:
            out: list[RecordBatch | None] = []
            for chunk in chunks:
                try:
                    out.append(read_chunk(self.fs, chunk.path, chunk.offset, chunk.length, chunk.crc))
                except FileNotFoundError:
                    out.append(None)
            return out

        loop = asyncio.get_running_loop()
        batches = await loop.run_in_executor(self._readers, read_all)
        for chunk, batch in zip(chunks, batches, strict=True):
            if batch is not None:
                self.loads += 1
                self.bytes_read += chunk.length
                self._cache(chunk, batch)
        return batches

    def _cache(self, chunk: ColdChunk, batch: RecordBatch) -> None:
        size = batch_size(batch)
        if not self.cache.put(chunk.key, batch, size):  # freed once its reader is done with it
            self._uncached_bytes += size
        self._maybe_trim()

    def _maybe_trim(self) -> None:
        """Queue a trim if the cache let go enough since the last (see the module's docstring)."""
        let_go = self.cache.stats.freed_bytes + self._uncached_bytes
        if let_go - self._let_go_at_trim < max(1, self.cache.capacity * TRIM_SHARE):
            return
        if self.monotonic() - self._trimmed_at >= TRIM_INTERVAL_S:
            self._queue_trim()

    def decay(self) -> None:
        """Queue a trim if none was queued in the last :data:`DECAY_S` (call it every few
        seconds: free pages then leave the resident set within about that long)."""
        if self.monotonic() - self._trimmed_at >= DECAY_S:
            self._queue_trim()

    def _queue_trim(self) -> None:
        """One ``heap.trim`` on a reader thread, unless one is queued or running."""
        if self._trim is not None and not self._trim.done():
            return
        try:
            self._trim = self._readers.submit(heap.trim)
        except RuntimeError:  # closed: the server stops
            return
        self._let_go_at_trim = self.cache.stats.freed_bytes + self._uncached_bytes
        self._trimmed_at = self.monotonic()
        self.trims += 1

    def pin(self, chunk: ColdChunk, batch: RecordBatch) -> None:
        """Keep ``batch`` available to :meth:`batch` until :meth:`unpin` (whatever the cache
        evicts meanwhile): a read in progress relies on what it loaded."""
        pin = self._pins.get(chunk.key)
        if pin is None:
            self._pins[chunk.key] = [batch, 1]
        else:
            pin[1] += 1  # type: ignore[operator]

    def unpin(self, chunk: ColdChunk) -> None:
        pin = self._pins[chunk.key]
        pin[1] -= 1  # type: ignore[operator]
        if pin[1] == 0:
            del self._pins[chunk.key]

    def close(self) -> None:
        self._readers.shutdown(wait=True)
